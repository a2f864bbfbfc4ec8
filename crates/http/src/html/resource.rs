//! The page of an RDF source: a container (its properties, one page of its children, its
//! membership and inbound references) or a binary's description (the binary's size, type,
//! digests, download, preview and fixity), a memento of either read-only, and the actions the
//! caller may take on it.

use arca_catalog::ResourceRecord;
use arca_model::{FedoraId, InteractionModel};
use arca_repository::Error;
use axum::response::Response;
use http::StatusCode;
use oxrdf::{NamedOrBlankNode, Term};
use serde::Serialize;

use super::terms::{self, Row};
use super::Frame;
use crate::context::Ctx;
use crate::error::ApiError;
use crate::handlers::{model_of, server_managed_triples};
use crate::listing;
use crate::Operation;

/// Children on one page unless the link asks for another `limit`.
pub(crate) const PAGE_SIZE: usize = 100;
/// Text binaries up to this size are shown on their page.
const TEXT_PREVIEW: u64 = 64 << 10;

#[derive(Serialize)]
pub(crate) struct Crumb {
    name: String,
    href: String,
}

#[derive(Serialize)]
struct Child {
    name: String,
    href: String,
    kind: &'static str,
    size: Option<String>,
}

#[derive(Serialize)]
struct Link {
    label: String,
    href: String,
}

#[derive(Serialize)]
struct BinaryInfo {
    download: String,
    size: Option<String>,
    media_type: Option<String>,
    filename: Option<String>,
    digests: Vec<String>,
    external: Option<String>,
    text: Option<String>,
    image: bool,
    fixity: String,
    /// What a fixity audit found wrong with the stored content, while it is not repaired
    /// (the content is then neither previewed nor served).
    damage: Option<String>,
}

/// What the caller may do here, and the URLs the requests go to.
#[derive(Serialize, Default)]
pub(crate) struct Actions {
    /// POST a child (container or binary) to this URL.
    pub create: Option<String>,
    /// PATCH (SPARQL Update) this URL.
    pub edit: Option<String>,
    /// POST to this TimeMap.
    pub version: Option<String>,
    /// DELETE this URL, then go to `after_delete`.
    pub delete: Option<String>,
    /// Where the page goes once the resource is deleted.
    pub after_delete: Option<String>,
}

impl Actions {
    fn any(&self) -> bool {
        self.create.is_some()
            || self.edit.is_some()
            || self.version.is_some()
            || self.delete.is_some()
    }
}

#[derive(Serialize)]
struct Page {
    page: Frame,
    title: String,
    kind: &'static str,
    url: String,
    path: String,
    crumbs: Vec<Crumb>,
    memento: Option<String>,
    properties: Vec<Row>,
    managed: Vec<Row>,
    binary: Option<BinaryInfo>,
    container: bool,
    children: Vec<Child>,
    next: Option<String>,
    first: Option<String>,
    listed: Vec<Row>,
    links: Vec<Link>,
    formats: Vec<Link>,
    actions: Actions,
    has_actions: bool,
    sparql: String,
}

/// A readable name of an interaction model.
pub(crate) fn kind_of(record: &ResourceRecord) -> &'static str {
    match model_of(record) {
        _ if record.id.is_root() => "Repository root",
        _ if record.headers.archival_group => "Archival group",
        InteractionModel::BasicContainer => "Container",
        InteractionModel::DirectContainer => "Direct container",
        InteractionModel::IndirectContainer => "Indirect container",
        InteractionModel::NonRdfSource => "Binary",
        InteractionModel::NonRdfSourceDescription => "Binary",
        InteractionModel::Acl => "Access control list",
    }
}

/// The path from the root to `id`, each ancestor a link.
pub(crate) fn crumbs(ctx: &Ctx, id: &FedoraId) -> Vec<Crumb> {
    let mut out = vec![Crumb {
        name: "root".into(),
        href: ctx.url(&FedoraId::root()),
    }];
    let path = id.base().path().to_string();
    let mut at = FedoraId::root();
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        let Ok(next) = at.child(segment) else {
            break;
        };
        out.push(Crumb {
            name: segment.to_string(),
            href: ctx.url(&next),
        });
        at = next;
    }
    out
}

/// The title a person gave the resource (`dcterms:title`, `dc:title`, `rdfs:label`), else
/// its last path segment.
fn title_of(record: &ResourceRecord, triples: &[oxrdf::Triple], about: &str) -> String {
    const TITLES: [&str; 3] = [
        "http://purl.org/dc/terms/title",
        "http://purl.org/dc/elements/1.1/title",
        "http://www.w3.org/2000/01/rdf-schema#label",
    ];
    let given = TITLES.iter().find_map(|p| {
        triples.iter().find_map(|t| match (&t.subject, &t.object) {
            (NamedOrBlankNode::NamedNode(s), Term::Literal(l))
                if s.as_str() == about && t.predicate.as_str() == *p =>
            {
                Some(l.value().to_string())
            }
            _ => None,
        })
    });
    given.unwrap_or_else(|| match record.id.base().last_segment() {
        "" => "Repository root".into(),
        s => s.to_string(),
    })
}

/// Whether `caller` may do `op` (the same check the request itself will pass).
pub(crate) async fn may(ctx: &Ctx, op: Operation) -> bool {
    let url = |id: &FedoraId| ctx.url(id);
    ctx.access
        .authorize(&ctx.repo, &ctx.caller, &op, url)
        .await
        .is_ok()
}

/// The page of RDF source `record` (a container, a description, their mementos).
pub(crate) async fn page(
    ctx: &Ctx,
    record: &ResourceRecord,
    head: bool,
    query: Option<&str>,
) -> Result<Response, ApiError> {
    if record.id.is_acl() {
        let triples = ctx.repo.triples(record).map_err(|e| ctx.err(e))?;
        return super::acl::page(ctx, &record.id.base(), &triples, head);
    }
    let model = model_of(record);
    let description = model == InteractionModel::NonRdfSourceDescription;
    let container = model.is_container();
    let resource = record.id.base();
    // A description's statements are about its binary.
    let about = resource.iri();
    let mapper = ctx.mapper();
    let triples = ctx.repo.triples(record).map_err(|e| ctx.err(e))?;
    let mut managed = Vec::new();
    server_managed_triples(ctx, record, &mut managed)
        .await
        .map_err(|e| ctx.err(e))?;
    let paging =
        listing::Paging::from_query(query, Some(PAGE_SIZE)).map_err(ApiError::bad_request)?;
    let wanted = listing::Wanted {
        children: container,
        contains: false,
        membership: ctx.memento.is_none(),
        references: ctx.memento.is_none(),
    };
    let listed = match ctx.memento {
        Some(datetime) => listing::children_at(ctx, record, &wanted, datetime).await,
        None => listing::list(ctx, record, &wanted, &paging).await,
    }
    .map_err(|e| ctx.err(e))?;
    let url = ctx.url(&record.id);
    let resource_url = ctx.url(&resource);
    let mut children = Vec::with_capacity(listed.children.len());
    for child in &listed.children {
        let child_record = match ctx.record(child).await {
            Ok(r) => r,
            // Deleted meanwhile, or (in a memento) not recorded at that time.
            Err(Error::NotFound(_) | Error::Gone(_) | Error::NoMemento(..)) => continue,
            Err(e) => return Err(ctx.err(e)),
        };
        let binary = model_of(&child_record).is_binary();
        let href = match (binary, ctx.memento) {
            (true, None) => ctx.url(&child.description()),
            _ => ctx.url(child),
        };
        children.push(Child {
            name: child.last_segment().to_string(),
            href,
            kind: kind_of(&child_record),
            size: binary
                .then(|| {
                    child_record
                        .headers
                        .content_size
                        .map(|s| terms::size(s.max(0) as u64))
                })
                .flatten(),
        });
    }
    let limit = paging.limit.unwrap_or(PAGE_SIZE);
    let next = listed.next.as_ref().map(|after| {
        let cursor =
            percent_encoding::utf8_percent_encode(after, percent_encoding::NON_ALPHANUMERIC);
        format!("{url}?limit={limit}&after={cursor}")
    });
    let first = query
        .is_some_and(|q| q.contains("after="))
        .then(|| url.clone());
    let binary = if description {
        Some(binary_info(ctx, &resource).await?)
    } else {
        None
    };
    let memento = ctx.memento.map(|d| {
        time::OffsetDateTime::from_unix_timestamp(d)
            .map(arca_model::format_instant)
            .unwrap_or_else(|_| d.to_string())
    });
    let mut links = Vec::new();
    if let Some(parent) = resource.path_parent() {
        links.push(Link {
            label: "Parent".into(),
            href: ctx.url(&parent),
        });
    }
    if ctx.memento.is_some() {
        links.push(Link {
            label: "Current version".into(),
            href: url.clone(),
        });
    }
    links.push(Link {
        label: "Versions (TimeMap)".into(),
        href: crate::versions::timemap_url(ctx, &resource),
    });
    links.push(Link {
        label: "Access control (ACL)".into(),
        href: ctx.url(&resource.acl()),
    });
    let here = match ctx.memento {
        Some(d) => crate::versions::memento_url(ctx, &record.id, d),
        None => url.clone(),
    };
    let formats = [
        ("Turtle", "text/turtle"),
        ("JSON-LD", "application/ld+json"),
        ("N-Triples", "application/n-triples"),
        ("RDF/XML", "application/rdf+xml"),
    ]
    .into_iter()
    .map(|(label, mt)| Link {
        label: label.into(),
        href: format!("{here}?format={}", mt.replace('+', "%2B")),
    })
    .collect();
    let actions = if ctx.memento.is_some() {
        Actions::default()
    } else {
        actions(ctx, record, &resource, container).await
    };
    let page = Page {
        page: Frame::of(ctx),
        title: title_of(record, &triples, &about),
        kind: kind_of(record),
        url: if description { resource_url } else { url.clone() },
        path: format!("/{}", resource.path()),
        crumbs: crumbs(ctx, &resource),
        memento,
        properties: terms::rows(&triples, &about, &mapper),
        managed: terms::rows(&managed, &about, &mapper),
        binary,
        container,
        children,
        next,
        first,
        listed: terms::rows(&listed.triples, &about, &mapper),
        links,
        formats,
        has_actions: actions.any(),
        actions,
        sparql: format!(
            "PREFIX dcterms: <http://purl.org/dc/terms/>\nDELETE {{ <> dcterms:title ?old }}\nINSERT {{ <> dcterms:title \"{}\" }}\nWHERE {{ OPTIONAL {{ <> dcterms:title ?old }} }}",
            "A new title"
        ),
    };
    super::render(StatusCode::OK, "resource.html", &page, head)
}

/// The actions the caller may take on `record`.
async fn actions(
    ctx: &Ctx,
    record: &ResourceRecord,
    resource: &FedoraId,
    container: bool,
) -> Actions {
    let mut a = Actions::default();
    if container && may(ctx, Operation::Create(record.id.clone())).await {
        a.create = Some(ctx.url(&record.id));
    }
    if may(ctx, Operation::Patch(record.id.clone())).await {
        a.edit = Some(ctx.url(&record.id));
    }
    if may(ctx, Operation::CreateVersion(resource.clone())).await {
        a.version = Some(crate::versions::timemap_url(ctx, resource));
    }
    if !resource.is_root() && may(ctx, Operation::Delete(resource.clone())).await {
        a.delete = Some(ctx.url(resource));
        a.after_delete = Some(ctx.url(&resource.path_parent().unwrap_or_else(FedoraId::root)));
    }
    a
}

/// What a binary's page shows about its content.
async fn binary_info(ctx: &Ctx, id: &FedoraId) -> Result<BinaryInfo, ApiError> {
    let record = match ctx.memento {
        Some(d) => ctx.repo.memento_in_force(id, d).await,
        None => ctx.repo.get(id).await,
    }
    .map_err(|e| ctx.err(e))?;
    let h = &record.headers;
    let size = h.content_size.map(|s| s.max(0) as u64);
    let media_type = h.mime_type.clone();
    let essence = media_type
        .as_deref()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let textual = essence.starts_with("text/")
        || matches!(
            essence.as_str(),
            "application/json" | "application/xml" | "application/ld+json"
        );
    let external = h.external_url.clone();
    let damage = ctx.repo.damage().check(&record).err().map(|e| match e {
        arca_repository::Error::Damaged { file, .. } => file.describe(),
        e => e.to_string(),
    });
    let text = if damage.is_none()
        && textual
        && external.is_none()
        && size.is_some_and(|s| s <= TEXT_PREVIEW)
    {
        preview(ctx, &record).await
    } else {
        None
    };
    let download = match ctx.memento {
        Some(d) => crate::versions::memento_url(ctx, id, d),
        None => ctx.url(id),
    };
    Ok(BinaryInfo {
        fixity: format!("{}/fcr:fixity", ctx.url(id)),
        download,
        size: size.map(terms::size),
        media_type,
        filename: h.filename.clone(),
        digests: h.digests.clone().unwrap_or_default(),
        external,
        text,
        image: damage.is_none() && essence.starts_with("image/") && !essence.contains("svg"),
        damage,
    })
}

/// The text of a small text binary (invalid UTF-8 replaced); `None` when it cannot be read.
async fn preview(ctx: &Ctx, record: &ResourceRecord) -> Option<String> {
    let content = ctx.repo.content(record).await.ok()??;
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut bytes = Vec::new();
        content
            .open(0..TEXT_PREVIEW)
            .ok()?
            .take(TEXT_PREVIEW)
            .read_to_end(&mut bytes)
            .ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    })
    .await
    .ok()?
}
