//! Reads of resources, all from the catalog: records, children, types and triples.

use arca_catalog::ResourceRecord;
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
        let described;
        let (record, subject) = if record.headers.model() == Some(InteractionModel::NonRdfSource) {
            match self.lookup(&record.id.description()).await? {
                Some(d) if !d.is_deleted() => {
                    described = d;
                    (&described, record.id.iri())
                }
                _ => return Ok(Vec::new()),
            }
        } else {
            // A description's statements are about its binary.
            (record, record.id.base().iri())
        };
        let mut types = Vec::new();
        for t in self.triples(record)? {
            let about = matches!(&t.subject, oxrdf::NamedOrBlankNode::NamedNode(n) if n.as_str() == subject);
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
