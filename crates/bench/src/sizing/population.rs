//! The population of the sizing run: what object number `i` is, where it lives and the
//! requests that create it. Everything follows from `i` and the seed, so that a GET of an old
//! object needs no list of what was created.

use hyper::Method;

use crate::driver::mix;
use crate::http::{Target, NON_RDF_SOURCE};
use crate::payload::{Payload, PayloadBody};
use crate::recorder::{Code, TxOutcome};

/// Objects per parent container (`sizing/p<k>`).
pub const PER_PARENT: u64 = 1_000;
/// Every tenth object goes into the wide container until it holds this many children.
pub const WIDE_MAX: u64 = 100_000;
/// Bytes of each binary.
pub const BINARY_SIZE: u64 = 20 << 10;
/// The container everything is created under.
pub const TOP: &str = "sizing";
/// The wide container.
pub const WIDE: &str = "sizing/wide";
/// arca's longest id in characters (`info:fedora/` and the path; `arca_model::MAX_ID_CHARS`,
/// not linked: the bench runs against any Fedora).
pub const MAX_ID_CHARS: usize = 503;
/// The resource given many versions for the TimeMap row.
pub const VERSIONED: &str = "sizing/versioned";

/// What one object of the population is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A child of the wide container: a small container.
    Wide,
    /// A container with two triples.
    Container,
    /// A 20 KiB binary.
    Binary,
    /// A container given a second version and a memento.
    Versioned,
    /// A direct container (membership on its parent) and one member inside it.
    Direct,
    /// A container and its ACL.
    WithAcl,
    /// A container at a deep path, close to the id limit.
    Deep,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 7] = [
        Kind::Wide,
        Kind::Container,
        Kind::Binary,
        Kind::Versioned,
        Kind::Direct,
        Kind::WithAcl,
        Kind::Deep,
    ];

    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Wide => "wide-child",
            Kind::Container => "container",
            Kind::Binary => "binary-20KiB",
            Kind::Versioned => "versioned",
            Kind::Direct => "direct-container",
            Kind::WithAcl => "acl",
            Kind::Deep => "deep-path",
        }
    }
}

/// The population's rule for `seed`.
#[derive(Clone, Copy, Debug)]
pub struct Population {
    /// Seed of the kind of each object.
    pub seed: u64,
    /// Objects in the wide container at most (the run's total ÷ 10, at most [`WIDE_MAX`]).
    pub wide_max: u64,
}

impl Population {
    /// The population of a run of `total` objects.
    pub fn new(seed: u64, total: u64) -> Self {
        Population {
            seed,
            wide_max: (total / 10).min(WIDE_MAX),
        }
    }

    /// What object `i` is: 10 % children of the wide container (until it is full), then of
    /// the rest 60 % containers, 33 % binaries, 3 % versioned, 1.5 % direct containers,
    /// 1.5 % with an ACL, 1 % deep paths.
    pub fn kind(&self, i: u64) -> Kind {
        if i % 10 == 9 && i / 10 < self.wide_max {
            return Kind::Wide;
        }
        match mix(self.seed ^ i.wrapping_mul(0x9e37_79b9)) % 1000 {
            0..600 => Kind::Container,
            600..930 => Kind::Binary,
            930..960 => Kind::Versioned,
            960..975 => Kind::Direct,
            975..990 => Kind::WithAcl,
            _ => Kind::Deep,
        }
    }

    /// The path (below the base URL) of object `i`'s parent container.
    pub fn parent(&self, i: u64) -> String {
        format!("{TOP}/p{}", i / PER_PARENT)
    }

    /// The path of object `i`'s main resource (what a GET of it reads).
    pub fn path(&self, i: u64) -> String {
        let parent = self.parent(i);
        match self.kind(i) {
            Kind::Wide => format!("{WIDE}/w{i}"),
            Kind::Container => format!("{parent}/c{i}"),
            Kind::Binary => format!("{parent}/b{i}"),
            Kind::Versioned => format!("{parent}/v{i}"),
            Kind::Direct => format!("{parent}/d{i}"),
            Kind::WithAcl => format!("{parent}/a{i}"),
            Kind::Deep => deep_path(&parent, i),
        }
    }
}

/// A path of 20-character segments below `parent` that ends close to arca's id limit
/// (`info:fedora/` and the path: 503 characters), as the deepest ids a repository takes.
pub fn deep_path(parent: &str, i: u64) -> String {
    let leaf = format!("x{i}");
    let budget = MAX_ID_CHARS - "info:fedora/".len() - parent.len() - leaf.len() - 1;
    let mut path = parent.to_string();
    for n in 0..budget / 21 {
        path.push_str(&format!("/{:0>20}", n));
    }
    path.push('/');
    path.push_str(&leaf);
    path
}

/// A request's answer: its status, as counted.
async fn send(
    target: &Target,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: PayloadBody,
    codes: &mut Vec<Code>,
) -> Result<(), String> {
    match target.fetch(method.clone(), url, headers, body).await {
        Ok((status, _)) => {
            codes.push(Code::Status(status));
            if (200..300).contains(&status) {
                Ok(())
            } else {
                Err(format!("{method} {url}: {status}"))
            }
        }
        Err(f) => {
            codes.push(f.code);
            Err(f.message)
        }
    }
}

fn turtle(text: String) -> PayloadBody {
    PayloadBody::fixed(text)
}

const TURTLE: (&str, &str) = ("Content-Type", "text/turtle");

/// Creates a container at `path` (PUT) with a title.
pub async fn put_container(
    target: &Target,
    path: &str,
    title: &str,
    codes: &mut Vec<Code>,
) -> Result<(), String> {
    let url = format!("{}{path}", target.base());
    let body = format!("<> <http://purl.org/dc/terms/title> \"{title}\" .\n");
    send(target, Method::PUT, &url, &[TURTLE], turtle(body), codes).await
}

/// Creates object `i` with all its requests; one transaction of the run.
pub async fn create(
    target: &Target,
    payload: &Payload,
    population: &Population,
    i: u64,
) -> TxOutcome {
    let mut codes = Vec::with_capacity(3);
    let result = create_inner(target, payload, population, i, &mut codes).await;
    match result {
        Ok(bytes) => TxOutcome {
            codes,
            ok: true,
            bytes,
            error: None,
        },
        Err(message) => TxOutcome {
            codes,
            ok: false,
            bytes: 0,
            error: Some(message),
        },
    }
}

async fn create_inner(
    target: &Target,
    payload: &Payload,
    population: &Population,
    i: u64,
    codes: &mut Vec<Code>,
) -> Result<u64, String> {
    let base = target.base();
    let path = population.path(i);
    let url = format!("{base}{path}");
    let title = format!("object {i}");
    match population.kind(i) {
        Kind::Wide | Kind::Container | Kind::Deep => {
            put_container(target, &path, &title, codes).await?;
        }
        Kind::Binary => {
            let headers = [
                ("Content-Type", "application/octet-stream"),
                ("Link", NON_RDF_SOURCE),
            ];
            send(
                target,
                Method::PUT,
                &url,
                &headers,
                payload.body(i, BINARY_SIZE),
                codes,
            )
            .await?;
            return Ok(BINARY_SIZE);
        }
        Kind::Versioned => {
            put_container(target, &path, &title, codes).await?;
            let update = format!(
                "DELETE {{ <> <http://purl.org/dc/terms/title> \"{title}\" }} \
                 INSERT {{ <> <http://purl.org/dc/terms/title> \"{title}, revised\" }} WHERE {{}}"
            );
            let sparql = ("Content-Type", "application/sparql-update");
            send(
                target,
                Method::PATCH,
                &url,
                &[sparql],
                turtle(update),
                codes,
            )
            .await?;
            let versions = format!("{url}/fcr:versions");
            send(
                target,
                Method::POST,
                &versions,
                &[],
                PayloadBody::empty(),
                codes,
            )
            .await?;
        }
        Kind::Direct => {
            let parent = format!("{base}{}", population.parent(i));
            let body = format!(
                "<> <http://www.w3.org/ns/ldp#membershipResource> <{parent}> ;\n\
                 <http://www.w3.org/ns/ldp#hasMemberRelation> <http://pcdm.org/models#hasMember> .\n"
            );
            let link = (
                "Link",
                "<http://www.w3.org/ns/ldp#DirectContainer>;rel=\"type\"",
            );
            send(
                target,
                Method::PUT,
                &url,
                &[TURTLE, link],
                turtle(body),
                codes,
            )
            .await?;
            put_container(target, &format!("{path}/m"), &title, codes).await?;
        }
        Kind::WithAcl => {
            put_container(target, &path, &title, codes).await?;
            let acl = format!(
                "@prefix acl: <http://www.w3.org/ns/auth/acl#> .\n\
                 <#read> a acl:Authorization ; acl:agent \"fedoraUser\" ; acl:mode acl:Read ;\n\
                 acl:accessTo <{url}> .\n"
            );
            send(
                target,
                Method::PUT,
                &format!("{url}/fcr:acl"),
                &[TURTLE],
                turtle(acl),
                codes,
            )
            .await?;
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_occurs_in_its_share() {
        let p = Population::new(1, 1_000_000);
        let mut counts = std::collections::HashMap::new();
        for i in 0..100_000 {
            *counts.entry(p.kind(i)).or_insert(0u64) += 1;
        }
        assert_eq!(counts[&Kind::Wide], 10_000);
        // Of the other 90,000: 60 % containers, 33 % binaries (within 1 % of the count).
        let near = |n: u64, share: f64| (n as f64 - 90_000.0 * share).abs() < 900.0;
        assert!(near(counts[&Kind::Container], 0.60), "{counts:?}");
        assert!(near(counts[&Kind::Binary], 0.33), "{counts:?}");
        for k in Kind::ALL {
            assert!(counts[&k] > 0, "{k:?} missing: {counts:?}");
        }
    }

    #[test]
    fn the_wide_container_stops_at_its_share() {
        let p = Population::new(1, 200);
        assert_eq!(p.wide_max, 20);
        assert_eq!(p.kind(9), Kind::Wide);
        assert_ne!(p.kind(209), Kind::Wide);
        assert_eq!(p.path(9), "sizing/wide/w9");
        assert_eq!(p.parent(1_999), "sizing/p1");
    }

    #[test]
    fn deep_paths_fit_the_id_limit() {
        let path = deep_path("sizing/p999", 999_999);
        let id = format!("info:fedora/{path}");
        assert!(id.len() <= MAX_ID_CHARS, "{}", id.len());
        assert!(id.len() > MAX_ID_CHARS - 25, "{}", id.len());
        assert!(path.split('/').all(|s| !s.is_empty() && s.len() < 255));
    }
}
