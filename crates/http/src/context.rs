//! The context every request handler works in: the repository, who asks, the limits,
//! and the memento a request reads.

use std::sync::Arc;

use arca_catalog::ResourceRecord;
use arca_model::FedoraId;
use arca_rdf::IdMapper;
use arca_repository::{Error, Repository};

use crate::error::ApiError;
use crate::limits::BodyBudget;
use crate::response::url_of;

/// Per-request context.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub repo: Repository,
    pub base_url: String,
    pub user: String,
    pub config: Arc<crate::HttpConfig>,
    pub budget: BodyBudget,
    /// The memento (datetime, seconds since the epoch) this request reads, if any.
    pub memento: Option<i64>,
    /// Access control, for listings and ACL writes.
    pub access: Arc<crate::access::Access>,
    /// Who sent the request.
    pub caller: Arc<crate::access::Caller>,
    /// What the caller's access allows a PATCH to do.
    pub grant: crate::access::Grant,
    /// The Fedora 3 facade's cache of datastream descriptions (when the facade is on).
    pub fedora3: Option<Arc<arca_fedora3::view::DescriptionCache>>,
}

impl Ctx {
    pub(crate) fn err(&self, e: Error) -> ApiError {
        ApiError::from_kernel(e, &self.base_url)
    }

    /// The resource this request reads: the current state, or the memento it names.
    pub(crate) async fn record(&self, id: &FedoraId) -> Result<ResourceRecord, Error> {
        match self.memento {
            Some(datetime) => self.repo.memento(id, datetime).await,
            None => self.repo.get(id).await,
        }
    }

    pub(crate) fn url(&self, id: &FedoraId) -> String {
        url_of(&self.base_url, id)
    }

    /// Whether the caller may read `id` (listings show nothing else).
    pub(crate) async fn can_read(&self, id: &FedoraId) -> bool {
        self.access.can_read(&self.repo, &self.caller, id).await
    }

    pub(crate) fn mapper(&self) -> IdMapper {
        IdMapper::new(&self.base_url)
    }
}
