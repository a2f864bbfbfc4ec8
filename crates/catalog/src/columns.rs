//! How values are kept in catalog columns, the same in every backend: ids in their internal
//! form, the change log's rdf:types as one space-separated text, and which children were
//! alive at an instant (decided from their headers).

use arca_model::{FedoraId, ResourceHeaders};

use crate::{Error, Result};

/// An id as stored.
pub(crate) fn parse_id(id: &str) -> Result<FedoraId> {
    FedoraId::from_internal(id).map_err(|e| Error::Corrupt {
        id: id.to_string(),
        message: e.to_string(),
    })
}

/// The change log's `types` column: IRIs separated by spaces (NULL when there are none).
pub(crate) fn join_types(types: &[String]) -> Option<String> {
    (!types.is_empty()).then(|| types.join(" "))
}

/// The IRIs of a `types` column.
pub(crate) fn split_types(types: Option<&str>) -> Vec<String> {
    types
        .map(|t| t.split(' ').map(str::to_string).collect())
        .unwrap_or_default()
}

/// Of `(id, headers JSON)` rows, in order, the ids of the resources alive at `at`
/// (nanoseconds): created at or before it and not deleted by then.
pub(crate) fn alive_at(rows: Vec<(String, Vec<u8>)>, at: i64) -> Result<Vec<FedoraId>> {
    let nanos = |d: Option<&str>| {
        d.and_then(arca_model::parse_instant)
            .map(|t| t.unix_timestamp_nanos() as i64)
    };
    let mut out = Vec::new();
    for (id, headers) in rows {
        let headers = ResourceHeaders::from_json(&headers).map_err(|e| Error::Corrupt {
            id: id.clone(),
            message: e.to_string(),
        })?;
        let born = nanos(headers.created_date.as_deref()).unwrap_or(i64::MIN);
        let ended = headers
            .deleted
            .then(|| nanos(headers.last_modified_date.as_deref()))
            .flatten()
            .unwrap_or(i64::MAX);
        if born <= at && at < ended {
            out.push(parse_id(&id)?);
        }
    }
    Ok(out)
}
