//! `GET <binary>/fcr:fixity`: the binary's digests recomputed from the stored bytes,
//! answered with the PREMIS triples Fedora 6 returns.

use arca_model::FedoraId;
use arca_rdf::{vocab, RdfFormat};
use arca_repository::{Error, FixityReport};
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{header, StatusCode};
use oxrdf::{Literal, NamedNode, Triple};

use crate::context::Ctx;
use crate::error::ApiError;
use crate::handlers::model_of;
use crate::response::{add_link, response, set};

/// Methods `fcr:fixity` answers, as Fedora 6 lists them.
pub(crate) const ALLOW: &str = "OPTIONS, GET";

/// Runs a fixity check of binary `id` and answers with its outcome: 200 whether the check
/// passed (`SUCCESS`) or not (`BAD_CHECKSUM`, also when the content is missing); 404 for a
/// resource that is not a binary.
pub(crate) async fn get(ctx: &Ctx, id: FedoraId, req: Request) -> Result<Response, ApiError> {
    let format = RdfFormat::negotiate(
        req.headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    )
    .ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_ACCEPTABLE,
            "fixity reports are available as text/turtle, application/ld+json, application/n-triples or application/rdf+xml",
        )
    })?;
    let record = ctx.repo.get(&id).await.map_err(|e| ctx.err(e))?;
    if !model_of(&record).is_binary() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "{} is not a binary; fixity applies to binaries",
                ctx.url(&id)
            ),
        ));
    }
    let report = ctx
        .repo
        .check_fixity(&record)
        .await
        .map_err(|e| ctx.err(e))?;
    if !report.ok() {
        tracing::warn!(id = %id, report = ?report, "fixity check failed");
    }
    let triples = report_triples(&id, &report);
    let body =
        arca_rdf::serialize(&triples, format, &ctx.mapper()).map_err(|e| ctx.err(Error::Rdf(e)))?;
    let mut out = response(StatusCode::OK, Body::from(body));
    let h = out.headers_mut();
    add_link(h, "<http://www.w3.org/ns/ldp#Resource>;rel=\"type\"".into());
    add_link(
        h,
        "<http://www.w3.org/ns/ldp#RDFSource>;rel=\"type\"".into(),
    );
    set(
        h,
        header::CONTENT_TYPE,
        &crate::response::rdf_content_type(format),
    );
    Ok(out)
}

/// `OPTIONS <binary>/fcr:fixity`.
pub(crate) fn options() -> Response {
    let mut out = response(StatusCode::OK, Body::empty());
    set(out.headers_mut(), header::ALLOW, ALLOW);
    out
}

/// The report as Fedora 6 writes it: `<binary> premis:hasFixity <binary/#uuid>`, and on that
/// node its types, the outcome, the digests of the bytes as stored now and the recorded size.
fn report_triples(id: &FedoraId, report: &FixityReport) -> Vec<Triple> {
    let binary = NamedNode::new_unchecked(id.iri());
    let node = NamedNode::new_unchecked(format!("{}/#{}", id.iri(), uuid::Uuid::new_v4()));
    let iri = NamedNode::new_unchecked;
    let outcome = if report.ok() {
        "SUCCESS"
    } else {
        "BAD_CHECKSUM"
    };
    let mut triples = vec![
        Triple::new(binary, iri(vocab::PREMIS_HAS_FIXITY), node.clone()),
        Triple::new(
            node.clone(),
            iri(vocab::RDF_TYPE),
            iri(vocab::PREMIS_FIXITY),
        ),
        Triple::new(
            node.clone(),
            iri(vocab::RDF_TYPE),
            iri(vocab::PREMIS_EVENT_OUTCOME_DETAIL),
        ),
        Triple::new(
            node.clone(),
            iri(vocab::PREMIS_HAS_EVENT_OUTCOME),
            Literal::new_simple_literal(outcome),
        ),
    ];
    for check in &report.checks {
        triples.push(Triple::new(
            node.clone(),
            iri(vocab::PREMIS_HAS_MESSAGE_DIGEST),
            NamedNode::new_unchecked(check.computed.urn()),
        ));
    }
    if let Some(size) = report.expected_size {
        triples.push(Triple::new(
            node,
            iri(vocab::PREMIS_HAS_SIZE),
            Literal::new_typed_literal(size.to_string(), iri(vocab::XSD_LONG)),
        ));
    }
    triples
}
