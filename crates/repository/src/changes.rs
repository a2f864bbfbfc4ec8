//! What the change log records of each write, so that events can be told from it alone:
//! the resource, the kind of change, when, by whom, through which software (the request's
//! `User-Agent`, bound to the request's task by [`with_agent`]) and the resource's
//! rdf:types at that moment (filled in by [`fill_types`] from the rows the write puts).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use arca_catalog::{CatalogOp, Change, ChangeKind, ResourceRecord};
use arca_model::{format_instant, FedoraId, InteractionModel, Timestamp};

const RDF_TYPE: &str = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>";
const FEDORA: &str = "http://fedora.info/definitions/v4/repository#";
const MEMENTO_TYPES: [&str; 2] = [
    "http://mementoweb.org/ns#OriginalResource",
    "http://mementoweb.org/ns#TimeGate",
];

/// A change-log entry for `id` made now by `user`, with the agent of the current request
/// and no types yet ([`fill_types`] adds them).
pub(crate) fn log(id: &FedoraId, kind: ChangeKind, at: Timestamp, user: &str) -> CatalogOp {
    log_at(id, kind, format_instant(at), user)
}

/// [`log`] of the resource of `record`, with its types as `record` holds them (the record
/// is not looked up again).
pub(crate) fn log_of(
    record: &ResourceRecord,
    kind: ChangeKind,
    at: Timestamp,
    user: &str,
) -> CatalogOp {
    let mut op = log(&record.id, kind, at, user);
    if let CatalogOp::Log(c) = &mut op {
        c.types = types_of(record);
    }
    op
}

/// [`log`] at an instant already formatted (RFC 3339).
pub(crate) fn log_at(id: &FedoraId, kind: ChangeKind, at: String, user: &str) -> CatalogOp {
    CatalogOp::Log(Change {
        id: id.clone(),
        kind,
        at,
        user: user.to_string(),
        agent: None,
        types: Vec::new(),
    })
}

/// Names `agent` (the software behind the request, see [`Repository::with_agent`]) in
/// every change-log entry of `ops` that names none.
///
/// [`Repository::with_agent`]: crate::Repository::with_agent
pub(crate) fn fill_agent(ops: &mut [CatalogOp], agent: Option<&Arc<str>>) {
    let Some(agent) = agent else { return };
    for op in ops {
        if let CatalogOp::Log(c) = op {
            c.agent.get_or_insert_with(|| agent.to_string());
        }
    }
}

/// Gives every logged create or update in `ops` the rdf:types of the resource as the same
/// list of operations writes it (`CatalogOp::Put`), or as `lookup` finds it (a parent
/// whose containment changed is not rewritten). Deletes and purges carry no types, as in
/// Fedora's events.
pub(crate) async fn fill_types<F, Fut>(ops: &mut [CatalogOp], lookup: F)
where
    F: Fn(FedoraId) -> Fut,
    Fut: Future<Output = Option<ResourceRecord>>,
{
    let wanted = |op: &CatalogOp| {
        matches!(op, CatalogOp::Log(c)
            if matches!(c.kind, ChangeKind::Create | ChangeKind::Update | ChangeKind::Follow)
                && c.types.is_empty())
    };
    if !ops.iter().any(wanted) {
        return;
    }
    let written: HashMap<&FedoraId, usize> = ops
        .iter()
        .enumerate()
        .filter_map(|(i, op)| match op {
            CatalogOp::Put(r) => Some((&r.id, i)),
            _ => None,
        })
        .collect();
    let mut found: Vec<(usize, Vec<String>)> = Vec::new();
    let mut missing: Vec<(usize, FedoraId)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let CatalogOp::Log(c) = op else { continue };
        if !wanted(op) {
            continue;
        }
        match written.get(&c.id) {
            Some(&at) => {
                if let CatalogOp::Put(r) = &ops[at] {
                    found.push((i, types_of(r)));
                }
            }
            None => missing.push((i, c.id.clone())),
        }
    }
    for (i, id) in missing {
        if let Some(r) = lookup(id).await {
            found.push((i, types_of(&r)));
        }
    }
    for (i, types) in found {
        if let CatalogOp::Log(c) = &mut ops[i] {
            c.types = types;
        }
    }
}

/// The rdf:types of a resource as Fedora 6 reports them in events: those its interaction
/// model gives it, Fedora's own (`fedora:Resource`, `fedora:Container`/`Binary`, Archival
/// Group, repository root), the Memento ones, and the ones its own triples state.
pub fn types_of(record: &ResourceRecord) -> Vec<String> {
    let mut types: Vec<String> = Vec::new();
    let mut add = |t: &str| {
        if !types.iter().any(|have| have == t) {
            types.push(t.to_string());
        }
    };
    let Some(model) = record.headers.model() else {
        return types;
    };
    for t in model.rdf_types() {
        add(t);
    }
    add(model.iri());
    if model.is_typed_container() {
        add(&format!("{FEDORA}Container"));
    } else if model == InteractionModel::NonRdfSource {
        add(&format!("{FEDORA}Binary"));
    }
    add(&format!("{FEDORA}Resource"));
    if record.headers.archival_group {
        add(&format!("{FEDORA}ArchivalGroup"));
    }
    if record.id.is_root() {
        add(&format!("{FEDORA}RepositoryRoot"));
    }
    for t in MEMENTO_TYPES {
        add(t);
    }
    if let Some(rdf) = &record.rdf {
        // Its own types and those of its hash URIs, as Fedora reports them.
        let iri = record.id.iri();
        let (subject, fragment) = (format!("<{iri}>"), format!("<{iri}#"));
        for line in String::from_utf8_lossy(rdf).lines() {
            let mut terms = line.splitn(3, ' ');
            let Some(s) = terms.next() else { continue };
            if !(s == subject || s.starts_with(&fragment)) || terms.next() != Some(RDF_TYPE) {
                continue;
            }
            let object = terms.next().unwrap_or_default().trim_end_matches(" .");
            if let Some(iri) = object.strip_prefix('<').and_then(|o| o.strip_suffix('>')) {
                add(iri);
            }
        }
    }
    types
}
