//! The Fedora API client: keep-alive HTTP/1.1 connections, the requests the scenarios need
//! (create a container, put a binary, get; for search any request with its answer's body),
//! each answer reduced to a [`Code`].

use std::time::Duration;

use anyhow::{bail, Context as _};
use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::payload::PayloadBody;
use crate::recorder::Code;

/// The `Link` header that makes a PUT create a binary (LDP-NR).
pub const NON_RDF_SOURCE: &str = "<http://www.w3.org/ns/ldp#NonRDFSource>; rel=\"type\"";

/// A failed request: its code for counting and a message for the report.
#[derive(Clone, Debug)]
pub struct Failure {
    /// How it failed.
    pub code: Code,
    /// What happened, with the URL.
    pub message: String,
}

/// A Fedora API server at a base URL.
#[derive(Clone, Debug)]
pub struct Target {
    client: Client<HttpConnector, PayloadBody>,
    base: String,
    origin: String,
    auth: Option<HeaderValue>,
    timeout: Duration,
}

impl Target {
    /// A client for `base` (an `http://` URL; a trailing `/` is added when missing) keeping up
    /// to `pool` idle connections, with Basic auth when `user` is given and `timeout` per
    /// request (sending, answer and body).
    pub fn new(
        base: &str,
        user: Option<&str>,
        password: Option<&str>,
        timeout: Duration,
        pool: usize,
    ) -> anyhow::Result<Target> {
        let mut base = base.trim().to_string();
        if !base.ends_with('/') {
            base.push('/');
        }
        let uri: Uri = base
            .parse()
            .with_context(|| format!("not a valid URL: {base}"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => bail!(
                "https is not supported by arca bench ({base}); benchmark the server over http, \
                 or put a TLS-terminating proxy in front and measure it separately"
            ),
            _ => bail!("the URL must start with http:// ({base})"),
        }
        let authority = uri
            .authority()
            .with_context(|| format!("the URL has no host: {base}"))?;
        let origin = format!("http://{authority}");
        let auth = match (user, password) {
            (Some(u), p) => {
                let token = base64::engine::general_purpose::STANDARD
                    .encode(format!("{u}:{}", p.unwrap_or_default()));
                Some(
                    HeaderValue::from_str(&format!("Basic {token}"))
                        .context("user name or password cannot go into a header")?,
                )
            }
            (None, Some(_)) => bail!("--password needs --user"),
            (None, None) => None,
        };
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(Duration::from_secs(10)));
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(pool.max(1))
            .pool_idle_timeout(Duration::from_secs(60))
            .build(connector);
        Ok(Target {
            client,
            base,
            origin,
            auth,
            timeout,
        })
    }

    /// The base URL, ending in `/`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Turns a `Location` header into an absolute URL.
    pub fn resolve(&self, location: &str) -> String {
        if location.starts_with("http://") || location.starts_with("https://") {
            location.to_string()
        } else if location.starts_with('/') {
            format!("{}{location}", self.origin)
        } else {
            format!("{}{location}", self.base)
        }
    }

    fn request(&self, method: Method, url: &str) -> Result<hyper::http::request::Builder, Failure> {
        let uri: Uri = url.parse().map_err(|e| Failure {
            code: Code::Io,
            message: format!("{method} {url}: invalid URL: {e}"),
        })?;
        let mut b = Request::builder().method(method).uri(uri);
        if let Some(auth) = &self.auth {
            b = b.header(header::AUTHORIZATION, auth.clone());
        }
        Ok(b)
    }

    /// Sends a request and reads the whole answer body (so the connection can be reused),
    /// all within the timeout. Returns the answer's status, headers and body length.
    async fn send(&self, req: Request<PayloadBody>) -> Result<(Response<()>, u64), Failure> {
        let (resp, n, _) = self.exchange(req, false).await?;
        Ok((resp, n))
    }

    /// [`send`](Self::send), also returning the body when `keep` is set (else it is counted
    /// and dropped).
    async fn exchange(
        &self,
        req: Request<PayloadBody>,
        keep: bool,
    ) -> Result<(Response<()>, u64, Bytes), Failure> {
        let what = format!("{} {}", req.method(), req.uri());
        let work = async {
            let resp: Response<Incoming> = self.client.request(req).await.map_err(|e| {
                let code = if e.is_connect() {
                    Code::Connect
                } else {
                    Code::Io
                };
                Failure {
                    code,
                    message: format!("{what}: {}", chain(&e)),
                }
            })?;
            let (parts, mut body) = resp.into_parts();
            let mut n = 0u64;
            let mut kept = BytesMut::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| Failure {
                    code: Code::Io,
                    message: format!("{what}: reading the answer: {}", chain(&e)),
                })?;
                if let Some(d) = frame.data_ref() {
                    n += d.len() as u64;
                    if keep {
                        kept.extend_from_slice(d);
                    }
                }
            }
            Ok((Response::from_parts(parts, ()), n, kept.freeze()))
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok(r) => r,
            Err(_) => Err(Failure {
                code: Code::Timeout,
                message: format!("{what}: no complete answer within {:?}", self.timeout),
            }),
        }
    }

    fn check(what: &str, resp: &Response<()>) -> Result<Code, Failure> {
        let code = Code::Status(resp.status().as_u16());
        if code.is_success() {
            Ok(code)
        } else {
            Err(Failure {
                code,
                message: format!("{what}: {}", resp.status()),
            })
        }
    }

    /// `POST {base}` with an empty Turtle body: creates a container, returns the answer's code
    /// (201) and the container's URL. A 2xx answer without `Location` fails with
    /// [`Code::NoLocation`].
    pub async fn create_container(&self) -> Result<(Code, String), Failure> {
        let req = self
            .request(Method::POST, &self.base)?
            .header(header::CONTENT_TYPE, "text/turtle")
            .body(PayloadBody::empty())
            .expect("valid request");
        let what = format!("POST {}", self.base);
        let (resp, _) = self.send(req).await?;
        let code = Self::check(&what, &resp)?;
        match resp
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
        {
            Some(loc) if !loc.is_empty() => Ok((code, self.resolve(loc))),
            _ => Err(Failure {
                code: Code::NoLocation,
                message: format!("{what}: {} without a Location header", resp.status()),
            }),
        }
    }

    /// `PUT {url}` of a binary (LDP-NR) with the given body.
    pub async fn put_binary(&self, url: &str, body: PayloadBody) -> Result<Code, Failure> {
        let req = self
            .request(Method::PUT, url)?
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .header(header::LINK, NON_RDF_SOURCE)
            .body(body)
            .expect("valid request");
        let (resp, _) = self.send(req).await?;
        Self::check(&format!("PUT {url}"), &resp)
    }

    /// `GET {url}` (with `Accept` when given); returns the code and the body length.
    pub async fn get(&self, url: &str, accept: Option<&str>) -> Result<(Code, u64), Failure> {
        let mut b = self.request(Method::GET, url)?;
        if let Some(a) = accept {
            b = b.header(header::ACCEPT, a);
        }
        let req = b.body(PayloadBody::empty()).expect("valid request");
        let (resp, n) = self.send(req).await?;
        Ok((Self::check(&format!("GET {url}"), &resp)?, n))
    }

    /// Sends a Turtle body with `method` to `url` with extra `headers`; returns the answer's
    /// code and its `Location`, if any, as an absolute URL.
    pub async fn send_turtle(
        &self,
        method: Method,
        url: &str,
        turtle: &str,
        headers: &[(&str, &str)],
    ) -> Result<(Code, Option<String>), Failure> {
        let mut b = self
            .request(method.clone(), url)?
            .header(header::CONTENT_TYPE, "text/turtle");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let req = b
            .body(PayloadBody::fixed(turtle.to_string()))
            .map_err(|e| Failure {
                code: Code::Io,
                message: format!("{method} {url}: {e}"),
            })?;
        let (resp, _) = self.send(req).await?;
        let code = Self::check(&format!("{method} {url}"), &resp)?;
        let location = resp
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(|l| self.resolve(l));
        Ok((code, location))
    }

    /// `GET {url}` with extra `headers` (e.g. `Prefer`); returns the code and the body length.
    pub async fn get_with(
        &self,
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<(Code, u64), Failure> {
        let mut b = self.request(Method::GET, url)?;
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let req = b.body(PayloadBody::empty()).map_err(|e| Failure {
            code: Code::Io,
            message: format!("GET {url}: {e}"),
        })?;
        let (resp, n) = self.send(req).await?;
        Ok((Self::check(&format!("GET {url}"), &resp)?, n))
    }

    /// Sends `method {url}` with `headers` and `body`; returns the answer's status and body
    /// whatever the status (only a failure below HTTP is an `Err`).
    pub async fn fetch(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: PayloadBody,
    ) -> Result<(u16, Bytes), Failure> {
        let mut b = self.request(method.clone(), url)?;
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let req = b.body(body).map_err(|e| Failure {
            code: Code::Io,
            message: format!("{method} {url}: {e}"),
        })?;
        let (resp, _, body) = self.exchange(req, true).await?;
        Ok((resp.status().as_u16(), body))
    }

    /// `GET {base}` as Turtle: the status and the `Server` header, or the failure.
    pub async fn probe(&self) -> Result<(u16, Option<String>), Failure> {
        let req = self
            .request(Method::GET, &self.base)?
            .header(header::ACCEPT, "text/turtle")
            .body(PayloadBody::empty())
            .expect("valid request");
        let (resp, _) = self.send(req).await?;
        let server = resp
            .headers()
            .get(header::SERVER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        Ok((resp.status().as_u16(), server))
    }
}

/// The URL of the binary created inside the container at `container`.
pub fn binary_url(container: &str) -> String {
    format!("{}/file", container.trim_end_matches('/'))
}

/// An error and its sources on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(base: &str) -> Target {
        Target::new(base, None, None, Duration::from_secs(1), 1).unwrap()
    }

    #[tokio::test]
    async fn resolves_locations() {
        let t = t("http://h:8080/rest");
        assert_eq!(t.base(), "http://h:8080/rest/");
        assert_eq!(t.resolve("http://h:8080/rest/a"), "http://h:8080/rest/a");
        assert_eq!(t.resolve("/rest/b"), "http://h:8080/rest/b");
        assert_eq!(t.resolve("c"), "http://h:8080/rest/c");
        assert_eq!(binary_url("http://h/rest/a/"), "http://h/rest/a/file");
        assert_eq!(binary_url("http://h/rest/a"), "http://h/rest/a/file");
    }

    #[tokio::test]
    async fn rejects_bad_urls() {
        let d = Duration::from_secs(1);
        assert!(Target::new("https://h/rest/", None, None, d, 1).is_err());
        assert!(Target::new("ftp://h/", None, None, d, 1).is_err());
        assert!(Target::new("not a url", None, None, d, 1).is_err());
        assert!(Target::new("http://h/", None, Some("pw"), d, 1).is_err());
        let t = Target::new("http://h/", Some("fedoraAdmin"), Some("secret"), d, 1).unwrap();
        assert_eq!(
            t.auth.unwrap().to_str().unwrap(),
            "Basic ZmVkb3JhQWRtaW46c2VjcmV0"
        );
    }

    #[tokio::test]
    async fn unreachable_is_a_connect_error() {
        let t = t("http://127.0.0.1:1/rest/");
        let f = t.create_container().await.unwrap_err();
        assert_eq!(f.code, Code::Connect);
        assert!(
            f.message.contains("POST http://127.0.0.1:1/rest/"),
            "{}",
            f.message
        );
        assert_eq!(t.probe().await.unwrap_err().code, Code::Connect);
    }
}
