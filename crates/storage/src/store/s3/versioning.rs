//! Whether the bucket keeps the versions of replaced and deleted objects (S3's
//! `GetBucketVersioning`), which `object_store` does not ask: one SigV4-signed request of
//! arca's own, with `object_store`'s signer and HTTP client.

use object_store::aws::AwsAuthorizer;
use object_store::client::{HttpConnector, HttpRequest, ReqwestConnector};
use object_store::ClientOptions;

use super::{S3Storage, CONNECT_TIMEOUT, REQUEST_TIMEOUT};
use crate::store::{StoreError, StoreResult};

/// A bucket's versioning state, as `GetBucketVersioning` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketVersioning {
    /// Every replaced or deleted object keeps its earlier versions.
    Enabled,
    /// Versioning was enabled once and is suspended: new writes keep no earlier version.
    Suspended,
    /// Versioning was never enabled.
    Never,
}

impl S3Storage {
    /// The bucket's versioning state.
    ///
    /// # Errors
    /// As [`open_with_credentials`](Self::open_with_credentials) classifies them; an
    /// answer that is no `VersioningConfiguration` is [`StoreError::Service`].
    pub fn versioning(&self) -> StoreResult<BucketVersioning> {
        let url = format!(
            "{}/{}?versioning",
            self.settings
                .endpoint
                .clone()
                .unwrap_or_else(|| format!("https://s3.{}.amazonaws.com", self.settings.region))
                .trim_end_matches('/'),
            self.settings.bucket
        );
        let store = std::sync::Arc::clone(&self.store);
        let region = self.settings.region.clone();
        let allow_http = self.settings.allow_http;
        let answer = self.runtime.block_on(async move {
            let credential = store.credentials().get_credential().await?;
            let mut request: HttpRequest = http::Request::builder()
                .method(http::Method::GET)
                .uri(&url)
                .body(Vec::new().into())
                .map_err(generic)?;
            AwsAuthorizer::new(&credential, "s3", &region)
                .try_authorize(&mut request, None)
                .map_err(generic)?;
            let client = ReqwestConnector::default().connect(
                &ClientOptions::new()
                    .with_allow_http(allow_http)
                    .with_connect_timeout(CONNECT_TIMEOUT)
                    .with_timeout(REQUEST_TIMEOUT),
            )?;
            let response = client.execute(request).await.map_err(generic)?;
            let status = response.status();
            let body = response.into_body().bytes().await.map_err(generic)?;
            let text = String::from_utf8_lossy(&body).into_owned();
            if !status.is_success() {
                return Err(generic(format!("GetBucketVersioning: {status}: {text}")));
            }
            Ok(text)
        });
        let text = answer.map_err(|e| self.classify(e, "versioning", ""))?;
        parse(&text).ok_or_else(|| StoreError::Service {
            operation: "versioning",
            key: String::new(),
            cause: generic(format!("not a VersioningConfiguration: {text}")).into(),
        })
    }
}

/// The state in a `VersioningConfiguration` document (`None`: not one).
fn parse(xml: &str) -> Option<BucketVersioning> {
    if !xml.contains("VersioningConfiguration") {
        return None;
    }
    let status = xml
        .split_once("<Status>")
        .and_then(|(_, rest)| rest.split_once("</Status>"))
        .map(|(status, _)| status.trim());
    Some(match status {
        Some("Enabled") => BucketVersioning::Enabled,
        Some("Suspended") => BucketVersioning::Suspended,
        _ => BucketVersioning::Never,
    })
}

fn generic(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> object_store::Error {
    object_store::Error::Generic {
        store: "S3",
        source: e.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_states_and_a_stranger_are_told_apart() {
        let doc = |inner: &str| {
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<VersioningConfiguration \
                 xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{inner}</VersioningConfiguration>"
            )
        };
        assert_eq!(
            parse(&doc("<Status>Enabled</Status>")),
            Some(BucketVersioning::Enabled)
        );
        assert_eq!(
            parse(&doc("<Status>Suspended</Status>")),
            Some(BucketVersioning::Suspended)
        );
        assert_eq!(parse(&doc("")), Some(BucketVersioning::Never));
        assert_eq!(parse("<Error><Code>NoSuchBucket</Code></Error>"), None);
    }
}
