//! Transactions over HTTP, as Fedora 6 answers them: `POST /fcr:tx` begins one (201,
//! `Location`, `Expires`); on `/fcr:tx/<id>` GET/HEAD tell its state (204 with
//! `Atomic-Expires`), POST refreshes it, PUT commits and DELETE rolls back; unknown ids are
//! 404 and finished ones 410. Any other request carrying `Atomic-ID: <transaction URL or
//! id>` works inside the transaction (409 when it is unknown or finished). A transaction
//! belongs to the user who began it: anyone else but an admin is refused (403).

use std::time::SystemTime;

use arca_repository::{Error, TxInfo};
use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderMap, StatusCode};

use crate::context::Ctx;
use crate::error::ApiError;
use crate::response::{add_link, set};

/// `Allow` of the transaction endpoint.
pub(crate) const ENDPOINT_ALLOW: &str = "POST";
/// `Allow` of one transaction.
pub(crate) const TX_ALLOW: &str = "GET, HEAD, POST, PUT, DELETE";
/// The header naming the transaction a request works in.
pub(crate) const ATOMIC_ID: &str = "atomic-id";
const COMMIT_ENDPOINT: &str = "http://fedora.info/definitions/v4/transaction#commitEndpoint";

/// The URL of a transaction.
pub(crate) fn url(ctx: &Ctx, id: &str) -> String {
    format!("{}/fcr:tx/{id}", ctx.base_url)
}

fn http_date(t: SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

/// The transaction id an `Atomic-ID` header names (a transaction URL or a bare id), if any.
pub(crate) fn atomic_id(ctx: &Ctx, h: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = h.get(ATOMIC_ID) else {
        return Ok(None);
    };
    let value = value.to_str().unwrap_or_default().trim();
    let id = value
        .strip_prefix(&format!("{}/fcr:tx/", ctx.base_url))
        .unwrap_or(value);
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("invalid transaction id {value:?} in Atomic-ID"),
        ));
    }
    Ok(Some(id.to_string()))
}

/// Maps the failure to enter a transaction named by `Atomic-ID`: 409 for an unknown or
/// finished one (Fedora 6), the usual mapping otherwise.
pub(crate) fn entry_error(base_url: &str, e: Error) -> ApiError {
    let not_open = matches!(
        e,
        Error::TransactionNotFound(_) | Error::TransactionEnded(_)
    );
    let mut e = ApiError::from_kernel(e, base_url);
    if not_open {
        e.status = StatusCode::CONFLICT;
    }
    e
}

/// Refuses a caller who did not begin transaction `id` (401 anonymous, 403 known users);
/// admins may use any transaction.
pub(crate) async fn check_user(ctx: &Ctx, id: &str) -> Result<(), ApiError> {
    if ctx.caller.is_admin() {
        return Ok(());
    }
    let began_by = ctx
        .repo
        .transaction_user(id)
        .await
        .map_err(|e| ctx.err(e))?;
    match began_by {
        Some(user) if ctx.caller.name() != Some(user.as_str()) => Err(ctx.access.refuse(
            &ctx.caller,
            format!("transaction {} belongs to another user", url(ctx, id)),
        )),
        _ => Ok(()),
    }
}

/// `POST /fcr:tx`: a transaction only its user (and admins) may use.
pub(crate) async fn begin(ctx: &Ctx) -> Result<Response, ApiError> {
    let TxInfo { id, expires } = ctx
        .repo
        .begin_transaction(ctx.caller.name())
        .await
        .map_err(|e| ctx.err(e))?;
    let url = url(ctx, &id);
    let mut out = crate::response::response(StatusCode::CREATED, Body::empty());
    let h = out.headers_mut();
    set(h, header::LOCATION, &url);
    set(h, header::EXPIRES, &http_date(expires));
    add_link(h, &url, &format!("; rel=\"{COMMIT_ENDPOINT}\""));
    Ok(out)
}

fn state_response(info: TxInfo) -> Response {
    let mut out = crate::response::response(StatusCode::NO_CONTENT, Body::empty());
    set(
        out.headers_mut(),
        header::HeaderName::from_static("atomic-expires"),
        &http_date(info.expires),
    );
    out
}

/// GET or HEAD on a transaction.
pub(crate) async fn status(ctx: &Ctx, id: &str) -> Result<Response, ApiError> {
    Ok(state_response(
        ctx.repo.transaction(id).await.map_err(|e| ctx.err(e))?,
    ))
}

/// POST on a transaction: keeps it alive.
pub(crate) async fn refresh(ctx: &Ctx, id: &str) -> Result<Response, ApiError> {
    Ok(state_response(
        ctx.repo
            .refresh_transaction(id)
            .await
            .map_err(|e| ctx.err(e))?,
    ))
}

/// PUT on a transaction: commits it (409 with the conflict when it cannot). The commit
/// runs on a task of its own: a client that goes away does not stop it halfway (it would
/// complete anyway, but only when sent again or at the next start), and it runs outside
/// any transaction the request names.
pub(crate) async fn commit(ctx: &Ctx, id: &str) -> Result<Response, ApiError> {
    let repo = ctx.repo.clone();
    let tx = id.to_string();
    let committed = tokio::spawn(async move { repo.commit_transaction(&tx).await })
        .await
        .unwrap_or_else(|e| {
            Err(Error::Internal(format!(
                "the commit of transaction {id} stopped: {e}"
            )))
        });
    committed.map_err(|e| match e {
        e @ (Error::TransactionNotFound(_) | Error::TransactionEnded(_)) => ctx.err(e),
        e => {
            let mut api = ctx.err(e);
            if api.status.is_server_error() || api.status == StatusCode::CONFLICT {
                return api;
            }
            api.status = StatusCode::CONFLICT;
            api
        }
    })?;
    Ok(crate::response::response(
        StatusCode::NO_CONTENT,
        Body::empty(),
    ))
}

/// DELETE on a transaction: rolls it back.
pub(crate) async fn rollback(ctx: &Ctx, id: &str) -> Result<Response, ApiError> {
    ctx.repo
        .rollback_transaction(id)
        .await
        .map_err(|e| ctx.err(e))?;
    Ok(crate::response::response(
        StatusCode::NO_CONTENT,
        Body::empty(),
    ))
}
