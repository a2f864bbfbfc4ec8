//! Reads of resources, all from the catalog: records, children, types and triples.

use std::sync::Arc;

use arca_catalog::{ReadRecord, ResourceRecord};
use arca_model::{FedoraId, InteractionModel};
use oxrdf::Triple;

use crate::{Error, Repository, Result};

impl Repository {
    /// A live resource; [`Error::Gone`] for a tombstone, [`Error::NotFound`] otherwise.
    pub async fn get(&self, id: &FedoraId) -> Result<ResourceRecord> {
        match self.record(id).await? {
            Some(r) if r.is_deleted() => Err(Error::Gone(id.clone())),
            Some(r) => Ok(r),
            None => Err(Error::NotFound(id.clone())),
        }
    }

    /// A live resource for a read of its current state, with what that read needs beside
    /// it, in one catalog round outside a transaction: its [stated types](Self::stated_types)
    /// and whether listing its children or membership can find anything. Errors as
    /// [`get`](Self::get).
    pub async fn get_for_read(&self, id: &FedoraId) -> Result<ReadView> {
        if self.current_transaction().is_some() {
            // The transaction's own rows overlay the catalog's: read them as any read does.
            let record = self.get(id).await?;
            let stated_types = self.stated_types(&record).await?;
            let read = ReadRecord {
                record,
                description_rdf: None,
                may_have_children: true,
                may_have_membership: true,
                derived: Default::default(),
            };
            return Ok(ReadView {
                read: Arc::new(read),
                stated_types,
            });
        }
        let read = match self.catalog.get_for_read(id).await? {
            Some(r) if r.record.is_deleted() => return Err(Error::Gone(id.clone())),
            Some(r) => r,
            None => return Err(Error::NotFound(id.clone())),
        };
        let stated_types = match read.record.headers.model() {
            Some(InteractionModel::NonRdfSource) => match &read.description_rdf {
                Some(rdf) => types_in(rdf, &[&id.iri(), &id.description().iri()])?,
                None => Vec::new(),
            },
            _ => own_types(&read.record)?,
        };
        Ok(ReadView { read, stated_types })
    }

    /// A resource, live or tombstone.
    pub async fn lookup(&self, id: &FedoraId) -> Result<Option<ResourceRecord>> {
        self.record(id).await
    }

    /// Whether a new resource cannot take path `id`: a resource (or its tombstone) is there,
    /// or resources exist below it (a "ghost node").
    pub async fn is_taken(&self, id: &FedoraId) -> Result<bool> {
        Ok(self.record(id).await?.is_some() || self.catalog.has_descendants(id).await?)
    }

    /// Live children of a container, in id order, paged by key (inside a transaction, as
    /// the transaction sees them).
    pub async fn children(
        &self,
        id: &FedoraId,
        after: Option<&FedoraId>,
        limit: usize,
    ) -> Result<Vec<FedoraId>> {
        Ok(match self.current_transaction() {
            Some(tx) => self.catalog.tx_children(&tx, id, after, limit).await?,
            None => self.catalog.children(id, after, limit).await?,
        })
    }

    /// The `rdf:type`s a resource's own triples state of it (named classes, not the ones
    /// its interaction model gives it); a binary's are those of its description, and a
    /// description's those it states of its binary, as in Fedora 6, where they show in
    /// `Link: rel="type"` and count for `acl:accessToClass`.
    pub async fn stated_types(&self, record: &ResourceRecord) -> Result<Vec<String>> {
        if record.headers.model() != Some(InteractionModel::NonRdfSource) {
            return own_types(record);
        }
        match self.lookup(&record.id.description()).await? {
            Some(d) if !d.is_deleted() => own_types(&d),
            _ => Ok(Vec::new()),
        }
    }

    /// The stored triples (internal ids) of an RDF source.
    ///
    /// A description's statements are about its binary: Fedora 6 stores `<>` of a
    /// description as the description's own id and names the binary instead when it reads
    /// them, and so does this.
    pub fn triples(&self, record: &ResourceRecord) -> Result<Vec<Triple>> {
        let mut triples = match &record.rdf {
            Some(nt) => arca_rdf::parse_ntriples(nt)?,
            None => Vec::new(),
        };
        if record.id.is_description() {
            let own = record.id.iri();
            let binary = oxrdf::NamedNode::new_unchecked(record.id.base().iri());
            for t in &mut triples {
                if matches!(&t.subject, oxrdf::NamedOrBlankNode::NamedNode(n) if n.as_str() == own)
                {
                    t.subject = binary.clone().into();
                }
            }
        }
        Ok(triples)
    }
}

/// What a read of a resource's current state needs ([`Repository::get_for_read`]).
#[derive(Debug, Clone)]
pub struct ReadView {
    /// The resource and whether its listing can find anything
    /// ([`ReadRecord::may_have_children`], [`ReadRecord::may_have_membership`]), as the
    /// catalog shares it (a description's triples are read into `stated_types`).
    pub read: Arc<ReadRecord>,
    /// The `rdf:type`s its triples state ([`Repository::stated_types`]).
    pub stated_types: Vec<String>,
}

impl ReadView {
    /// The resource.
    pub fn record(&self) -> &ResourceRecord {
        &self.read.record
    }
}

/// The classes an RDF source's (or a description's) own triples state of the resource they
/// are about (a description's, of its binary).
fn own_types(record: &ResourceRecord) -> Result<Vec<String>> {
    let Some(rdf) = &record.rdf else {
        return Ok(Vec::new());
    };
    let about = record.id.base().iri();
    if record.id.is_description() {
        // A description's statements about itself are about its binary (see `triples`).
        types_in(rdf, &[&about, &record.id.iri()])
    } else {
        types_in(rdf, &[&about])
    }
}

/// The named classes `rdf:type` gives any of `subjects` in stored N-Triples `rdf`, in order,
/// once each. Triples without the `rdf:type` IRI written out (and without an escape that
/// could spell it) are not parsed at all: most resources state no type.
fn types_in(rdf: &[u8], subjects: &[&str]) -> Result<Vec<String>> {
    let spelled = |needle: &[u8]| rdf.windows(needle.len()).any(|w| w == needle);
    if !spelled(arca_rdf::vocab::RDF_TYPE.as_bytes()) && !rdf.contains(&b'\\') {
        return Ok(Vec::new());
    }
    let mut types: Vec<String> = Vec::new();
    for t in arca_rdf::parse_ntriples(rdf)? {
        let about = matches!(&t.subject, oxrdf::NamedOrBlankNode::NamedNode(n) if subjects.contains(&n.as_str()));
        if about && t.predicate.as_str() == arca_rdf::vocab::RDF_TYPE {
            if let oxrdf::Term::NamedNode(n) = t.object {
                if !types.iter().any(|known| known == n.as_str()) {
                    types.push(n.into_string());
                }
            }
        }
    }
    Ok(types)
}
