//! The pages' CSS and script, embedded in the binary and served under
//! [`ASSETS_PATH`](super::ASSETS_PATH) (`/static/ui/ui.css`, `/static/ui/ui.js`).

use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use http::{header, StatusCode};

const CSS: &str = include_str!("assets/ui.css");
const JS: &str = include_str!("assets/ui.js");

/// `GET /static/ui/{name}`.
pub(crate) async fn serve(Path(name): Path<String>) -> Response {
    let (body, media_type) = match name.as_str() {
        "ui.css" => (CSS, "text/css; charset=utf-8"),
        "ui.js" => (JS, "text/javascript; charset=utf-8"),
        _ => {
            return (
                StatusCode::NOT_FOUND,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                format!("no asset {name}"),
            )
                .into_response()
        }
    };
    (
        [
            (header::CONTENT_TYPE, media_type),
            (header::CACHE_CONTROL, "public, max-age=3600"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}
