//! The requests of the search scenario: `fcr:search` queries, the index status, a reindex,
//! the records' and PDFs' PUTs and the title updates, each answer checked and reduced to what
//! the scenario needs.

use std::sync::Arc;

use bytes::Bytes;
use hyper::Method;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Deserialize;

use crate::http::{Failure, Target, NON_RDF_SOURCE};
use crate::payload::PayloadBody;
use crate::recorder::Code;

/// Characters percent-encoded in a query parameter: all but the unreserved ones.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Characters percent-encoded in the path of a `file://` URL.
const FILE_PATH: &AsciiSet = &QUERY_VALUE.remove(b'/');

/// The `Link` relation of external content.
const EXTERNAL_CONTENT: &str = "http://fedora.info/definitions/fcrepo#ExternalContent";

/// What a query answered: `totalResults` and the ids of the items on the page.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct Hits {
    /// The answer's `pagination`.
    pub pagination: Pagination,
    /// The page.
    #[serde(default)]
    pub items: Vec<Item>,
}

/// The `pagination` object of a search answer.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct Pagination {
    /// Documents matching.
    #[serde(rename = "totalResults")]
    pub total_results: u64,
}

/// One search result.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct Item {
    /// The resource's URL.
    pub fedora_id: String,
}

/// `GET fcr:search/status`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct IndexStatus {
    /// Documents in the index.
    pub documents: u64,
    /// Changes not yet indexed.
    pub lag: u64,
    /// The last or running reindex.
    #[serde(default)]
    pub reindex: Option<ReindexStatus>,
    /// Text extraction counters.
    #[serde(default)]
    pub extraction: Option<Extraction>,
}

/// The `reindex` object of the index status.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ReindexStatus {
    /// Whether it is running.
    pub running: bool,
    /// Documents done.
    #[serde(default)]
    pub done: u64,
    /// Documents to do.
    #[serde(default)]
    pub total: u64,
    /// Seconds so far (or in all).
    #[serde(default)]
    pub seconds: f64,
    /// The server's rate.
    #[serde(default)]
    pub objects_per_second: f64,
}

/// The `extraction` object of the index status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Extraction {
    /// Binaries whose text was extracted.
    #[serde(default)]
    pub extracted: u64,
    /// Binaries whose extraction failed.
    #[serde(default)]
    pub failed: u64,
    /// Binaries whose text came from the cache.
    #[serde(default)]
    pub cached: u64,
}

impl Extraction {
    /// Binaries dealt with, however.
    pub fn total(&self) -> u64 {
        self.extracted + self.failed + self.cached
    }
}

/// The search API of a server.
#[derive(Clone, Debug)]
pub struct Api {
    /// The server.
    pub target: Arc<Target>,
}

/// The first 300 characters of an answer body, for messages.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut s: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        s.push('…');
    }
    s.trim().to_string()
}

fn failure(what: &str, status: u16, body: &[u8]) -> Failure {
    let mut message = format!("{what}: {status}");
    let e = excerpt(body);
    if !e.is_empty() {
        message.push_str(&format!(" ({e})"));
    }
    Failure {
        code: Code::Status(status),
        message,
    }
}

impl Api {
    /// `{base}fcr:search?q=…&limit=…&offset=0`.
    pub fn query_url(&self, q: &str, limit: usize) -> String {
        format!(
            "{}fcr:search?q={}&limit={limit}&offset=0",
            self.target.base(),
            utf8_percent_encode(q, QUERY_VALUE)
        )
    }

    fn status_url(&self) -> String {
        format!("{}fcr:search/status", self.target.base())
    }

    /// GETs a query URL: the answer's code, results and length. A non-2xx answer or a body
    /// that is not a search answer is a failure.
    pub async fn query(&self, url: &str) -> Result<(Code, Hits, u64), Failure> {
        let (status, body) = self
            .target
            .fetch(
                Method::GET,
                url,
                &[("accept", "application/json")],
                PayloadBody::empty(),
            )
            .await?;
        if !(200..300).contains(&status) {
            return Err(failure(&format!("GET {url}"), status, &body));
        }
        match serde_json::from_slice::<Hits>(&body) {
            Ok(h) => Ok((Code::Status(status), h, body.len() as u64)),
            Err(e) => Err(Failure {
                code: Code::BadAnswer,
                message: format!("GET {url}: not a search answer ({e}): {}", excerpt(&body)),
            }),
        }
    }

    /// The index status.
    pub async fn status(&self) -> Result<IndexStatus, Failure> {
        let url = self.status_url();
        let (status, body) = self
            .target
            .fetch(
                Method::GET,
                &url,
                &[("accept", "application/json")],
                PayloadBody::empty(),
            )
            .await?;
        if !(200..300).contains(&status) {
            return Err(failure(&format!("GET {url}"), status, &body));
        }
        serde_json::from_slice(&body).map_err(|e| Failure {
            code: Code::BadAnswer,
            message: format!("GET {url}: not an index status ({e}): {}", excerpt(&body)),
        })
    }

    /// Whether the server has arca's search: `Err` with the reason when it has not (an
    /// answer of `fcr:search/status` or of a query that [`refuses_search`], a status without
    /// `documents` and `lag` — Fedora 6's own `fcr:search` has neither —, or a refused Lucene
    /// query). A transport failure or another status (401, 500...) is returned as a
    /// [`Failure`] in `Ok(Err(..))`.
    pub async fn probe(&self) -> Result<Result<(), Failure>, String> {
        let absent = refuses_search;
        let url = self.status_url();
        match self
            .target
            .fetch(
                Method::GET,
                &url,
                &[("accept", "application/json")],
                PayloadBody::empty(),
            )
            .await
        {
            Err(f) => return Ok(Err(f)),
            Ok((s, body)) if absent(s) => {
                return Err(format!(
                    "GET {url} answered {s}: this server has no arca search index{}",
                    if excerpt(&body).is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", excerpt(&body))
                    }
                ))
            }
            Ok((s, body)) if !(200..300).contains(&s) => {
                return Ok(Err(failure(&format!("GET {url}"), s, &body)))
            }
            Ok((_, body)) => {
                if let Err(e) = serde_json::from_slice::<IndexStatus>(&body) {
                    return Err(format!(
                        "GET {url} is not arca's index status ({e}): {}",
                        excerpt(&body)
                    ));
                }
            }
        }
        let url = self.query_url(super::QUERIES[0], 1);
        match self
            .target
            .fetch(
                Method::GET,
                &url,
                &[("accept", "application/json")],
                PayloadBody::empty(),
            )
            .await
        {
            Err(f) => Ok(Err(f)),
            Ok((s, body)) if absent(s) => Err(format!(
                "GET {url} answered {s}: the server takes no Lucene queries ({})",
                excerpt(&body)
            )),
            Ok((s, body)) if !(200..300).contains(&s) => {
                Ok(Err(failure(&format!("GET {url}"), s, &body)))
            }
            Ok((_, body)) => match serde_json::from_slice::<Hits>(&body) {
                Ok(_) => Ok(Ok(())),
                Err(e) => Err(format!(
                    "GET {url} is not a search answer ({e}): {}",
                    excerpt(&body)
                )),
            },
        }
    }

    /// `POST fcr:search/reindex`: the answer's status (202 started, 409 already running).
    pub async fn reindex(&self) -> Result<u16, Failure> {
        let url = format!("{}fcr:search/reindex", self.target.base());
        let (status, body) = self
            .target
            .fetch(Method::POST, &url, &[], PayloadBody::empty())
            .await?;
        if (200..300).contains(&status) || status == 409 {
            Ok(status)
        } else {
            Err(failure(&format!("POST {url}"), status, &body))
        }
    }

    /// Whether `url` exists (`GET` answered 2xx; 404 and 410 mean no, anything else fails).
    pub async fn exists(&self, url: &str) -> Result<bool, Failure> {
        let (status, body) = self
            .target
            .fetch(
                Method::GET,
                url,
                &[("accept", "text/turtle")],
                PayloadBody::empty(),
            )
            .await?;
        match status {
            200..=299 => Ok(true),
            404 | 410 => Ok(false),
            s => Err(failure(&format!("GET {url}"), s, &body)),
        }
    }

    /// `PUT {url}` of a Turtle document (creates or replaces the container).
    pub async fn put_turtle(&self, url: &str, turtle: String) -> Result<Code, Failure> {
        self.expect_2xx(
            Method::PUT,
            url,
            &[("content-type", "text/turtle")],
            PayloadBody::fixed(turtle),
        )
        .await
    }

    /// Creates the container at `url` unless it exists.
    pub async fn ensure_container(&self, url: &str) -> Result<(), Failure> {
        if !self.exists(url).await? {
            self.put_turtle(url, String::new()).await?;
        }
        Ok(())
    }

    /// `PUT {url}` of a PDF: its bytes, or (`proxy`) an empty body linking to the file.
    pub async fn put_pdf(
        &self,
        url: &str,
        pdf: &crate::corpus::Pdf,
        proxy: bool,
    ) -> Result<Code, Failure> {
        let disposition = format!(
            "attachment; filename=\"{}\"",
            pdf.name.replace(['"', '\\'], "_")
        );
        if proxy {
            let link = format!(
                "<{}>; rel=\"{EXTERNAL_CONTENT}\"; handling=\"proxy\"; type=\"application/pdf\"",
                file_url(&pdf.path)
            );
            self.expect_2xx(
                Method::PUT,
                url,
                &[
                    ("content-type", "application/pdf"),
                    ("content-disposition", &disposition),
                    ("link", &link),
                ],
                PayloadBody::empty(),
            )
            .await
        } else {
            self.expect_2xx(
                Method::PUT,
                url,
                &[
                    ("content-type", "application/pdf"),
                    ("content-disposition", &disposition),
                    ("link", NON_RDF_SOURCE),
                ],
                PayloadBody::fixed(pdf.bytes.clone()),
            )
            .await
        }
    }

    /// `PATCH {url}` with a SPARQL Update.
    pub async fn patch(&self, url: &str, update: String) -> Result<Code, Failure> {
        self.expect_2xx(
            Method::PATCH,
            url,
            &[("content-type", "application/sparql-update")],
            PayloadBody::fixed(Bytes::from(update)),
        )
        .await
    }

    async fn expect_2xx(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: PayloadBody,
    ) -> Result<Code, Failure> {
        let (status, answer) = self
            .target
            .fetch(method.clone(), url, headers, body)
            .await?;
        if (200..300).contains(&status) {
            Ok(Code::Status(status))
        } else {
            Err(failure(&format!("{method} {url}"), status, &answer))
        }
    }
}

/// Whether an answer to a `fcr:search` request says the server has no such thing: 400 (an
/// unknown `fcr:` path), 404, 405, 409 (arca before its search: a constraint, "unsupported"),
/// 410 or 501. Authentication failures and other server errors are not that.
pub fn refuses_search(status: u16) -> bool {
    matches!(status, 400 | 404 | 405 | 409 | 410 | 501)
}

/// The `file://` URL of an absolute path (percent-encoded but for `/`).
pub fn file_url(path: &std::path::Path) -> String {
    format!(
        "file://{}",
        utf8_percent_encode(&path.to_string_lossy(), FILE_PATH)
    )
}

/// The path segment naming the record a search result belongs to: the last of its URL, or
/// the one before when the result is the record's `pdf` child.
pub fn record_segment(fedora_id: &str) -> &str {
    let mut parts = fedora_id.trim_end_matches('/').rsplit('/');
    match (parts.next(), parts.next()) {
        (Some("pdf"), Some(parent)) => parent,
        (Some(last), _) => last,
        (None, _) => "",
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn urls_are_encoded() {
        let api = Api {
            target: Arc::new(
                Target::new("http://h:1/rest", None, None, Duration::from_secs(1), 1).unwrap(),
            ),
        };
        assert_eq!(
            api.query_url(r#"(ABSTRACT:"fish" OR FIRSTNAME:"james") AND ALL:"university""#, 10),
            "http://h:1/rest/fcr:search?q=%28ABSTRACT%3A%22fish%22%20OR%20FIRSTNAME%3A%22james%22%29%20AND%20ALL%3A%22university%22&limit=10&offset=0"
        );
        assert_eq!(
            file_url(std::path::Path::new("/a b/c.pdf")),
            "file:///a%20b/c.pdf"
        );
    }

    #[test]
    fn refusals_mean_no_search() {
        for s in [400, 404, 405, 409, 410, 501] {
            assert!(refuses_search(s), "{s}");
        }
        for s in [200, 401, 403, 500, 502, 503] {
            assert!(!refuses_search(s), "{s}");
        }
    }

    #[test]
    fn answers_parse() {
        let h: Hits = serde_json::from_str(
            r#"{"pagination":{"totalResults":42,"offset":0,"maxResults":10},"items":[{"fedora_id":"http://h/rest/search-bench/s1-copy/2503.1","title":"x"}]}"#,
        )
        .unwrap();
        assert_eq!(h.pagination.total_results, 42);
        assert_eq!(record_segment(&h.items[0].fedora_id), "2503.1");
        assert_eq!(record_segment("http://h/rest/a/2503.1-r2/pdf"), "2503.1-r2");
        assert_eq!(record_segment("http://h/rest/a/b/"), "b");
        let s: IndexStatus = serde_json::from_str(
            r#"{"documents":5,"indexed":9,"last_change":9,"lag":0,"reindex":null,"extraction":{"extracted":2,"failed":1,"cached":3}}"#,
        )
        .unwrap();
        assert_eq!((s.documents, s.lag, s.reindex), (5, 0, None));
        assert_eq!(s.extraction.unwrap().total(), 6);
        let s: IndexStatus = serde_json::from_str(
            r#"{"documents":5,"lag":0,"reindex":{"running":false,"done":5,"total":5,"seconds":0.5,"objects_per_second":10.0}}"#,
        )
        .unwrap();
        assert!(!s.reindex.unwrap().running);
        // Fedora 6's search answers have no status of this shape.
        assert!(serde_json::from_str::<IndexStatus>(r#"{"pagination":{}}"#).is_err());
    }
}
