//! The listed part of an RDF source's answer: containment (`ldp:contains`), the membership
//! triples direct and indirect containers generate, and inbound references, all served from
//! catalog rows in this order and paged with one cursor (an arca extension:
//! `?limit=N&after=<cursor>`, `Link: <…>; rel="next"` while more follow). Without a limit
//! every triple is listed, as Fedora does.

use arca_catalog::ResourceRecord;
use arca_model::FedoraId;
use arca_rdf::vocab;
use arca_repository::Error;
use oxrdf::{NamedNode, Triple};

use crate::context::Ctx;

/// Largest page a client may ask for.
pub(crate) const MAX_PAGE: usize = 10_000;
/// Rows read per catalog query when listing without a limit.
const BATCH: usize = 5_000;
/// Cursor prefix of a position in the membership triples (`fcr:` cannot start a path).
const MEMBERSHIP_CURSOR: &str = "fcr:membership;";
/// Cursor prefix of a position in the inbound references.
const REFERENCES_CURSOR: &str = "fcr:references;";

/// The three listed categories, in answer order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Category {
    Containment,
    Membership,
    References,
}

/// Where a page starts: after this child, membership pair or reference pair (`None`: at the
/// beginning of the category).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cursor {
    Containment(Option<FedoraId>),
    Membership(Option<(String, String)>),
    References(Option<(String, String)>),
}

impl Cursor {
    fn category(&self) -> Category {
        match self {
            Cursor::Containment(_) => Category::Containment,
            Cursor::Membership(_) => Category::Membership,
            Cursor::References(_) => Category::References,
        }
    }

    fn parse(value: &str) -> Result<Cursor, String> {
        let pair = |rest: &str| -> Result<Option<(String, String)>, String> {
            if rest.is_empty() {
                return Ok(None);
            }
            rest.split_once(' ')
                .map(|(a, b)| Some((a.to_string(), b.to_string())))
                .ok_or_else(|| format!("bad after cursor {value:?}"))
        };
        if let Some(rest) = value.strip_prefix(MEMBERSHIP_CURSOR) {
            return Ok(Cursor::Membership(pair(rest)?));
        }
        if let Some(rest) = value.strip_prefix(REFERENCES_CURSOR) {
            return Ok(Cursor::References(pair(rest)?));
        }
        FedoraId::from_path(value)
            .map(|id| Cursor::Containment(Some(id)))
            .map_err(|e| format!("bad after cursor: {e}"))
    }

    fn render(&self) -> String {
        let pair = |p: &Option<(String, String)>| match p {
            Some((a, b)) => format!("{a} {b}"),
            None => String::new(),
        };
        match self {
            Cursor::Containment(id) => id.as_ref().map_or("", |id| id.path()).to_string(),
            Cursor::Membership(p) => format!("{MEMBERSHIP_CURSOR}{}", pair(p)),
            Cursor::References(p) => format!("{REFERENCES_CURSOR}{}", pair(p)),
        }
    }
}

/// The requested page.
pub(crate) struct Paging {
    /// At most this many listed triples (`None`: all).
    pub limit: Option<usize>,
    after: Option<Cursor>,
}

impl Paging {
    /// Reads `limit` and `after` from the query string; `max_member_count` comes from
    /// `Prefer` and is overridden by `limit`.
    pub(crate) fn from_query(
        query: Option<&str>,
        max_member_count: Option<usize>,
    ) -> Result<Self, String> {
        let mut p = Paging {
            limit: max_member_count.map(|n| n.clamp(1, MAX_PAGE)),
            after: None,
        };
        for pair in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = percent_encoding::percent_decode_str(v)
                .decode_utf8()
                .map_err(|_| "query parameter is not UTF-8".to_string())?;
            match k {
                "limit" => {
                    p.limit = Some(
                        v.parse::<usize>()
                            .map_err(|_| format!("limit must be a positive number, not {v:?}"))?
                            .clamp(1, MAX_PAGE),
                    )
                }
                "after" => p.after = Some(Cursor::parse(&v)?),
                _ => {}
            }
        }
        if p.after.is_some() && p.limit.is_none() {
            p.limit = Some(MAX_PAGE);
        }
        Ok(p)
    }
}

/// Which categories the answer lists.
pub(crate) struct Wanted {
    /// Children: as `ldp:contains` triples when `contains`, or only to embed their
    /// descriptions.
    pub children: bool,
    /// Emit `ldp:contains` triples for the children listed.
    pub contains: bool,
    /// Generated membership triples.
    pub membership: bool,
    /// Inbound references.
    pub references: bool,
}

/// Which parts of a resource's listing can find anything ([`arca_repository::ReadView`]):
/// the others need no query.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Listable {
    /// It may have live children.
    pub children: bool,
    /// It may be the membership resource of a direct or indirect container.
    pub membership: bool,
}

impl Listable {
    /// Nothing known: every part is read.
    pub(crate) const ALL: Listable = Listable {
        children: true,
        membership: true,
    };
}

/// One page of the listing.
pub(crate) struct Listing {
    /// The listed triples, in category order.
    pub triples: Vec<Triple>,
    /// The children listed (for embedded descriptions).
    pub children: Vec<FedoraId>,
    /// The `after` value of the next page, if the page was cut.
    pub next: Option<String>,
    /// Where the last fetch stopped: its last item, shown or hidden from the caller.
    last: Option<Cursor>,
}

/// Lists one page of `record`'s listed triples. For a binary's description the membership
/// and references are those of the binary; an ACL lists nothing (its resource's children,
/// membership and referrers are the resource's, and Fedora shows none of them on the ACL).
pub(crate) async fn list(
    ctx: &Ctx,
    record: &ResourceRecord,
    wanted: &Wanted,
    paging: &Paging,
) -> Result<Listing, Error> {
    if record.id.is_acl() {
        return Ok(Listing::empty());
    }
    let subject = record.id.base();
    let subject_node = NamedNode::new_unchecked(subject.iri());
    let mut out = Listing::empty();
    let mut remaining = paging.limit;
    let start = paging.after.as_ref().map(Cursor::category);
    let categories = [
        (Category::Containment, wanted.children),
        (Category::Membership, wanted.membership),
        (Category::References, wanted.references),
    ];
    let active: Vec<Category> = categories
        .iter()
        .filter(|(c, on)| *on && start.is_none_or(|s| *c >= s))
        .map(|(c, _)| *c)
        .collect();
    for (i, category) in active.iter().enumerate() {
        let mut cursor = match &paging.after {
            Some(c) if c.category() == *category => Some(c.clone()),
            _ => None,
        };
        loop {
            let want = remaining.map_or(BATCH, |r| r.min(BATCH));
            if want == 0 {
                // The page is full: is there more, here or in a later category?
                let mut probe = Listing::empty();
                if fetch(
                    ctx,
                    &subject,
                    &subject_node,
                    *category,
                    &cursor,
                    1,
                    &mut probe,
                    wanted,
                )
                .await?
                    > 0
                {
                    out.next = cursor.map(|c| c.render());
                    return Ok(out);
                }
                for later in &active[i + 1..] {
                    let start = start_of(*later);
                    if fetch(
                        ctx,
                        &subject,
                        &subject_node,
                        *later,
                        &Some(start.clone()),
                        1,
                        &mut probe,
                        wanted,
                    )
                    .await?
                        > 0
                    {
                        out.next = Some(start.render());
                        break;
                    }
                }
                return Ok(out);
            }
            let got = fetch(
                ctx,
                &subject,
                &subject_node,
                *category,
                &cursor,
                want,
                &mut out,
                wanted,
            )
            .await?;
            if let Some(r) = &mut remaining {
                *r -= got.min(*r);
            }
            if got < want {
                break;
            }
            cursor = out.last.clone();
        }
    }
    Ok(out)
}

impl Listing {
    fn empty() -> Self {
        Listing {
            triples: Vec::new(),
            children: Vec::new(),
            next: None,
            last: None,
        }
    }
}

/// The cursor at the start of a category.
fn start_of(category: Category) -> Cursor {
    match category {
        Category::Containment => Cursor::Containment(None),
        Category::Membership => Cursor::Membership(None),
        Category::References => Cursor::References(None),
    }
}

/// Reads up to `limit` items of `category` after `cursor` and adds those the caller may
/// read to `out`; returns how many were read (shown or not), and leaves `out.last` at the
/// last one, so that paging goes on behind hidden items.
#[allow(clippy::too_many_arguments)]
async fn fetch(
    ctx: &Ctx,
    subject: &FedoraId,
    subject_node: &NamedNode,
    category: Category,
    cursor: &Option<Cursor>,
    limit: usize,
    out: &mut Listing,
    wanted: &Wanted,
) -> Result<usize, Error> {
    let pair = |c: &Option<Cursor>| -> Option<(String, String)> {
        match c {
            Some(Cursor::Membership(p) | Cursor::References(p)) => p.clone(),
            _ => None,
        }
    };
    match category {
        Category::Containment => {
            let after = match cursor {
                Some(Cursor::Containment(id)) => id.as_ref(),
                _ => None,
            };
            let children = ctx.repo.children(subject, after, limit).await?;
            let n = children.len();
            out.last = Some(Cursor::Containment(children.last().cloned()));
            let contains = NamedNode::new_unchecked(vocab::LDP_CONTAINS);
            for child in children {
                if !ctx.can_read(&child).await {
                    continue;
                }
                if wanted.contains {
                    out.triples.push(Triple::new(
                        subject_node.clone(),
                        contains.clone(),
                        NamedNode::new_unchecked(child.iri()),
                    ));
                }
                out.children.push(child);
            }
            Ok(n)
        }
        Category::Membership => {
            let after = pair(cursor);
            let rows = ctx
                .repo
                .membership(
                    subject,
                    after.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
                    limit,
                )
                .await?;
            let n = rows.len();
            out.last = Some(Cursor::Membership(rows.last().cloned()));
            for (p, o) in rows {
                if !readable_iri(ctx, &o).await {
                    continue;
                }
                out.triples.push(Triple::new(
                    subject_node.clone(),
                    NamedNode::new_unchecked(p),
                    NamedNode::new_unchecked(o),
                ));
            }
            Ok(n)
        }
        Category::References => {
            let after = pair(cursor);
            // As Fedora 7 (fcrepo #2106): the containing resource's `ldp:contains` comes
            // first, a position of its own (the empty pair, before every statement).
            let mut n = 0;
            let mut last = None;
            if after.is_none() {
                if let Some(parent) = ctx.repo.get(subject).await?.parent {
                    n = 1;
                    last = Some((String::new(), String::new()));
                    if readable_iri(ctx, &parent.iri()).await {
                        out.triples.push(Triple::new(
                            NamedNode::new_unchecked(parent.iri()),
                            NamedNode::new_unchecked(vocab::LDP_CONTAINS),
                            subject_node.clone(),
                        ));
                    }
                }
            }
            let rows = if n < limit {
                ctx.repo
                    .references_to(
                        subject,
                        after.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
                        limit - n,
                    )
                    .await?
            } else {
                Vec::new()
            };
            n += rows.len();
            out.last = Some(Cursor::References(rows.last().cloned().or(last)));
            for (s, p) in rows {
                if !readable_iri(ctx, &s).await {
                    continue;
                }
                out.triples.push(Triple::new(
                    NamedNode::new_unchecked(s),
                    NamedNode::new_unchecked(p),
                    subject_node.clone(),
                ));
            }
            Ok(n)
        }
    }
}

/// Whether the caller may read what an IRI of a listed triple names: always for IRIs
/// outside the repository, else the resource (a hash URI's document).
async fn readable_iri(ctx: &Ctx, iri: &str) -> bool {
    let document = iri.split_once('#').map_or(iri, |(doc, _)| doc);
    match FedoraId::from_iri(document) {
        Some(id) => ctx.can_read(&id).await,
        None => true,
    }
}

/// The containment of a container's memento: the children it had at `datetime` (seconds
/// since the epoch), unpaged.
pub(crate) async fn children_at(
    ctx: &Ctx,
    record: &ResourceRecord,
    wanted: &Wanted,
    datetime: i64,
) -> Result<Listing, Error> {
    let mut out = Listing::empty();
    if !wanted.children || !crate::handlers::model_of(record).is_container() {
        return Ok(out);
    }
    for child in ctx.repo.children_at(&record.id, datetime).await? {
        if ctx.can_read(&child).await {
            out.children.push(child);
        }
    }
    if wanted.contains {
        let subject = NamedNode::new_unchecked(record.id.iri());
        let contains = NamedNode::new_unchecked(vocab::LDP_CONTAINS);
        out.triples = out
            .children
            .iter()
            .map(|c| {
                Triple::new(
                    subject.clone(),
                    contains.clone(),
                    NamedNode::new_unchecked(c.iri()),
                )
            })
            .collect();
    }
    Ok(out)
}
