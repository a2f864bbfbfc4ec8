//! `POST /rest/fcr:import/fedora3` (admins): one Fedora 3 object, as a self-contained FOXML
//! document (managed content inline as base64, the archive-export form), imported into the
//! running repository whole or not at all — what `arca import fedora3 --url` sends.

use std::sync::Arc;

use arca_fedora3::import::{import_document, ImportOptions, Outcome};
use arca_repository::BinaryData;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::context::Ctx;
use crate::error::ApiError;
use crate::Request;

/// The answer: 201 with `Location` when imported, 200 when `?resume=true` found it imported
/// from the same document, 409 when the id is taken, 400 when the document cannot be
/// imported; always the object's report as JSON (what was imported, checksums compared, or
/// why not).
pub(crate) async fn fedora3(ctx: &Ctx, req: Request) -> Result<Response, ApiError> {
    let resume = req
        .uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .any(|p| p == "resume=true");
    let received = ctx
        .repo
        .receive_document(req.into_body().into_data_stream(), ctx.budget.memory_gate())
        .await
        .map_err(|e| ApiError::from_kernel(e, &ctx.base_url))?;
    let foxml = match received.data {
        BinaryData::Memory(bytes) => bytes.to_vec(),
        BinaryData::File(upload) => std::fs::read(upload.path()).map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the received body: {e}"),
            )
        })?,
        BinaryData::External(_) => unreachable!("a request body is never external"),
    };
    let options = ImportOptions {
        user: ctx.user.clone(),
        resume,
        ..ImportOptions::default()
    };
    let report = import_document(Arc::new(ctx.repo.clone()), foxml, options)
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    if report.outcome == Outcome::Imported && ctx.config.fedora3_facade_auto {
        ctx.config
            .fedora3_facade
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let status = match report.outcome {
        Outcome::Imported => StatusCode::CREATED,
        Outcome::Skipped => StatusCode::OK,
        Outcome::Failed
            if report
                .reason
                .as_deref()
                .is_some_and(|r| r.starts_with("already in the repository")) =>
        {
            StatusCode::CONFLICT
        }
        Outcome::Failed => StatusCode::BAD_REQUEST,
    };
    let body = serde_json::to_vec_pretty(&report).expect("reports serialize");
    let mut response = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let (Outcome::Imported, Some(pid)) = (report.outcome, &report.pid) {
        let id = arca_model::FedoraId::from_internal(&arca_fedora3::mapping::object_id(pid));
        if let Some(value) = id
            .ok()
            .and_then(|id| crate::response::url_of(&ctx.base_url, &id).parse().ok())
        {
            response.headers_mut().insert(header::LOCATION, value);
        }
    }
    Ok(response)
}
