//! Builders shared by the catalog's tests.

use arca_catalog::ResourceRecord;
use arca_model::{FedoraId, InteractionModel, ResourceHeaders};

/// A basic container at `path` below `parent` (paths as `FedoraId::from_path` takes them),
/// live or a tombstone, with one stored triple.
pub fn record(path: &str, parent: Option<&str>, deleted: bool) -> ResourceRecord {
    let id = FedoraId::from_path(path).unwrap();
    ResourceRecord {
        headers: ResourceHeaders {
            id: id.to_string(),
            parent: parent.map(|p| FedoraId::from_path(p).unwrap().to_string()),
            archival_group_id: None,
            state_token: None,
            interaction_model: InteractionModel::BasicContainer.iri().into(),
            mime_type: None,
            filename: None,
            content_size: None,
            digests: None,
            external_url: None,
            external_handling: None,
            created_date: None,
            created_by: None,
            last_modified_date: None,
            last_modified_by: None,
            memento_created_date: None,
            archival_group: false,
            object_root: true,
            deleted,
            content_path: None,
            headers_version: Some("1.0".into()),
        },
        ocfl_id: id.to_string(),
        parent: parent.map(|p| FedoraId::from_path(p).unwrap()),
        id,
        content_file: None,
        rdf: Some(b"<a> <b> <c> .\n".to_vec()),
        children_changed: None,
    }
}
