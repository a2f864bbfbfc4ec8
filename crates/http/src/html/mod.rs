//! HTML pages for people in a browser, over the same resources and endpoints as the API.
//!
//! A request whose `Accept` prefers `text/html` to every RDF format (a browser's,
//! [`RdfFormat::prefers_html`]) gets a page instead of RDF: a container or a binary's
//! description ([`resource`]), an ACL ([`acl`]), a TimeMap ([`versions`]), search hits
//! ([`search`]), the admin status page ([`status`]) and error answers ([`error`]). Pages are
//! rendered on the server from minijinja templates (embedded, HTML escaping on by default)
//! and work without JavaScript; the one small script ([`assets`]) sends the same
//! POST/PUT/PATCH/DELETE requests an API client would, so access control, transactions and
//! events apply unchanged.

pub(crate) mod acl;
pub(crate) mod assets;
pub(crate) mod error;
pub(crate) mod resource;
pub(crate) mod search;
pub(crate) mod status;
mod terms;
pub(crate) mod versions;

use std::sync::OnceLock;

use arca_rdf::RdfFormat;
use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderMap, StatusCode};
use minijinja::value::Serde;
use minijinja::Environment;
use serde::Serialize;

use crate::context::Ctx;
use crate::error::ApiError;
use crate::response::{response, set};

/// Where the CSS and the script are served, below the server's root.
pub(crate) const ASSETS_PATH: &str = "/static/ui";

/// Whether a request's `Accept` asks for a page.
pub(crate) fn wanted(h: &HeaderMap) -> bool {
    RdfFormat::prefers_html(h.get(header::ACCEPT).and_then(|v| v.to_str().ok()))
}

/// The `Accept` a link on a page stands for with `?format=<media type>` (the page's
/// "raw RDF" links: a browser cannot set `Accept` on a link); `None` without one.
pub(crate) fn format_override(query: Option<&str>) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == "format")
        .map(|(_, v)| v.into_owned())
        .filter(|v| RdfFormat::from_media_type(v).is_some())
}

/// The templates, parsed once.
fn templates() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        let all = [
            ("base.html", include_str!("templates/base.html")),
            ("macros.html", include_str!("templates/macros.html")),
            ("resource.html", include_str!("templates/resource.html")),
            ("acl.html", include_str!("templates/acl.html")),
            ("timemap.html", include_str!("templates/timemap.html")),
            ("search.html", include_str!("templates/search.html")),
            ("status.html", include_str!("templates/status.html")),
            ("error.html", include_str!("templates/error.html")),
        ];
        for (name, source) in all {
            env.add_template(name, source)
                .expect("the embedded templates parse");
        }
        env
    })
}

/// What every page's frame shows: where the API and the assets are, and who is signed in.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Frame {
    /// The REST root's URL, without trailing slash.
    pub root: String,
    /// The URL prefix of the CSS and the script.
    pub assets: String,
    /// The status page's URL.
    pub status: String,
    /// The signed-in user, if any.
    pub user: Option<String>,
    /// Whether the caller is an admin (the status page link).
    pub admin: bool,
    /// arca's version.
    pub version: &'static str,
}

impl Frame {
    /// The frame of a page answering `ctx`'s request.
    pub(crate) fn of(ctx: &Ctx) -> Self {
        Self::new(&ctx.base_url, ctx.caller.name(), ctx.caller.is_admin())
    }

    /// The frame for the REST root `base_url`.
    pub(crate) fn new(base_url: &str, user: Option<&str>, admin: bool) -> Self {
        let server = server_root(base_url);
        Self {
            root: base_url.trim_end_matches('/').to_string(),
            assets: format!("{server}{ASSETS_PATH}"),
            status: format!("{server}/status"),
            user: user.map(str::to_string),
            admin,
            version: env!("CARGO_PKG_VERSION"),
        }
    }
}

/// `scheme://host[:port]` of a URL (the URL itself when it has no path).
pub(crate) fn server_root(url: &str) -> &str {
    url.find("://")
        .and_then(|i| url[i + 3..].find('/').map(|j| &url[..i + 3 + j]))
        .unwrap_or(url)
}

/// Renders template `name` with `data` into an answer with `status`; HEAD answers carry
/// the headers (Content-Length included) and no body.
pub(crate) fn render<T: Serialize>(
    status: StatusCode,
    name: &str,
    data: &T,
    head: bool,
) -> Result<Response, ApiError> {
    let page = templates()
        .get_template(name)
        .and_then(|t| t.render(Serde(data)))
        .map_err(|e| {
            tracing::error!(error = %e, template = name, "a page failed to render");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the page {name} failed to render: {e}"),
            )
        })?;
    let mut out = response(status, Body::empty());
    let h = out.headers_mut();
    set(h, header::CONTENT_TYPE, "text/html; charset=utf-8");
    set(h, header::CONTENT_LENGTH, &page.len().to_string());
    set(h, header::VARY, "Accept");
    // The page holds what the caller may see and do: no shared caches.
    set(h, header::CACHE_CONTROL, "private, no-cache");
    if !head {
        *out.body_mut() = Body::from(page);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_templates_parse() {
        let env = super::templates();
        assert!(env.get_template("resource.html").is_ok());
    }
}
