use oxigraph::model::{GraphNameRef, Quad};
use oxigraph::sparql::{CancellationToken, SparqlEvaluator};
use oxigraph::store::Store;
use oxrdf::{GraphName, Triple};
use spargebra::algebra::{Expression, GraphPattern};
use spargebra::term::{GraphName as GroundGraphName, GraphNamePattern};
use spargebra::{GraphUpdateOperation, SparqlParser, Update};

use crate::limits::ParseLimits;
use crate::{scan, IdMapper, RdfError, Result};

/// Stack of the thread that parses and evaluates an update. The lexical scan bounds the
/// depth of every tree the update can build to `max_nesting + max_update_operators` levels,
/// which fits in this with a wide margin even in unoptimized builds.
const UPDATE_STACK_BYTES: usize = 256 << 20;

/// Applies a SPARQL 1.1 Update (`application/sparql-update`) to the triples of one resource.
///
/// `current` holds the resource's triples with internal ids; `resource_url` is the external URL
/// of the resource and the base IRI of the update (so `<>` is the resource). The triples are
/// loaded with external URLs into an in-memory store, so the update's IRIs match them; the
/// update runs there (INSERT DATA, DELETE DATA, DELETE/INSERT … WHERE, DELETE WHERE, several
/// operations separated by `;`), and the resulting triples come back with internal ids.
///
/// The update is bounded by `limits`: its nesting and chained operators are measured before it
/// is parsed, it is parsed and evaluated on a thread of its own whose stack holds every tree
/// those bounds allow, evaluation is cancelled after `max_parse_time`, and the result may hold
/// at most `max_triples` triples with terms no longer than the length bounds. At most
/// eight updates run at once. The calling thread blocks meanwhile: call it where blocking is
/// allowed.
///
/// # Errors
/// - [`RdfError::Syntax`]: the update does not parse (spargebra's message).
/// - [`RdfError::Limit`]: the update exceeds a bound of `limits`.
/// - [`RdfError::Busy`]: too many updates are running.
/// - [`RdfError::Unsupported`]: it touches named graphs (`GRAPH`, `WITH`, `USING`), or uses
///   LOAD, CLEAR, CREATE, DROP, COPY/MOVE/ADD or SERVICE.
/// - [`RdfError::BaseIri`]: `resource_url` is not an absolute IRI.
/// - [`RdfError::Update`], [`RdfError::Store`]: evaluation failed.
pub fn apply_sparql_update(
    current: &[Triple],
    update: &str,
    resource_url: &str,
    mapper: &IdMapper,
    limits: &ParseLimits,
) -> Result<Vec<Triple>> {
    apply_sparql_update_as(
        current,
        update,
        resource_url,
        mapper,
        limits,
        UpdateScope::Any,
    )
}

/// What a SPARQL Update may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateScope {
    /// Anything [`apply_sparql_update`] accepts.
    Any,
    /// Inserts only: an operation that names a triple to delete (`DELETE DATA { … }`,
    /// `DELETE { … } … WHERE`, `DELETE WHERE { … }`) is refused before the update runs,
    /// whether or not it would match; an empty `DELETE { }` or `DELETE DATA { }` names none
    /// and passes, as in Fedora 6. The PATCH of a caller with `acl:Append` but not
    /// `acl:Write` (Fedora API §5.7.1).
    InsertOnly,
}

/// [`apply_sparql_update`] for an update limited to `scope`.
///
/// # Errors
/// As [`apply_sparql_update`], and [`RdfError::NotInsertOnly`] for an update that deletes
/// where `scope` is [`UpdateScope::InsertOnly`].
pub fn apply_sparql_update_as(
    current: &[Triple],
    update: &str,
    resource_url: &str,
    mapper: &IdMapper,
    limits: &ParseLimits,
    scope: UpdateScope,
) -> Result<Vec<Triple>> {
    scan::turtle_like(update.as_bytes(), limits, true)?;
    let Some(slot) = UpdateSlot::take() else {
        return Err(RdfError::Busy(format!(
            "{MAX_RUNNING_UPDATES} SPARQL updates are running already; retry later"
        )));
    };
    let cancel = CancellationToken::new();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let work = {
        let (current, update, url) = (
            current.to_vec(),
            update.to_string(),
            resource_url.to_string(),
        );
        let (mapper, limits, cancel) = (mapper.clone(), limits.clone(), cancel.clone());
        move || {
            let result = run_update(&current, &update, &url, &mapper, &limits, scope, cancel);
            drop(slot);
            let _ = done_tx.send(result);
        }
    };
    std::thread::Builder::new()
        .name("sparql-update".into())
        .stack_size(UPDATE_STACK_BYTES)
        .spawn(work)
        .map_err(|e| RdfError::Store(e.into()))?;
    match done_rx.recv_timeout(limits.max_parse_time) {
        Ok(result) => result,
        // Evaluation notices the cancellation only when it next reads the store, which a
        // large join may take a while to do: the caller gets its answer now, and the thread
        // (counted against MAX_RUNNING_UPDATES until it ends) stops on its own.
        Err(_) => {
            cancel.cancel();
            Err(ParseLimits::exceeded(
                "the SPARQL update ran too long",
                "max_parse_time",
                format!("{} s", limits.max_parse_time.as_secs_f64()),
            ))
        }
    }
}

/// Most SPARQL updates evaluated at once, including cancelled ones still winding down.
const MAX_RUNNING_UPDATES: usize = 8;

/// A place among the [`MAX_RUNNING_UPDATES`], given back when dropped.
struct UpdateSlot;

static RUNNING_UPDATES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl UpdateSlot {
    fn take() -> Option<Self> {
        use std::sync::atomic::Ordering;
        RUNNING_UPDATES
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_RUNNING_UPDATES).then_some(n + 1)
            })
            .ok()
            .map(|_| UpdateSlot)
    }
}

impl Drop for UpdateSlot {
    fn drop(&mut self) {
        RUNNING_UPDATES.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

fn run_update(
    current: &[Triple],
    update: &str,
    resource_url: &str,
    mapper: &IdMapper,
    limits: &ParseLimits,
    scope: UpdateScope,
    cancel: CancellationToken,
) -> Result<Vec<Triple>> {
    let update = SparqlParser::new()
        .with_base_iri(resource_url)
        .map_err(|source| RdfError::BaseIri {
            iri: resource_url.to_string(),
            source,
        })?
        .parse_update(update)
        .map_err(|e| RdfError::Syntax(e.to_string()))?;
    if scope == UpdateScope::InsertOnly {
        check_insert_only(&update)?;
    }
    check_supported(&update)?;

    let store = Store::new()?;
    store.extend(current.iter().map(|t| {
        let t = mapper.triple_to_external(t.clone());
        Quad::new(t.subject, t.predicate, t.object, GraphName::DefaultGraph)
    }))?;
    SparqlEvaluator::new()
        .with_cancellation_token(cancel)
        .for_update(update)
        .on_store(&store)
        .execute()?;
    if store.len()? > limits.max_triples {
        return Err(ParseLimits::exceeded(
            "the update leaves the resource with too many triples",
            "max_triples",
            limits.max_triples,
        ));
    }
    store
        .quads_for_pattern(None, None, None, Some(GraphNameRef::DefaultGraph))
        .map(|quad| {
            let triple: Triple = quad?.into();
            limits.check_triple(&triple)?;
            Ok(mapper.triple_to_internal(triple))
        })
        .collect()
}

/// Refuses every operation that reaches beyond the default graph of this one resource.
fn check_supported(update: &Update) -> Result<()> {
    let unsupported = |what: &str| {
        Err(RdfError::Unsupported(format!(
            "{what} is not supported: a PATCH updates the default graph of one resource"
        )))
    };
    for operation in &update.operations {
        match operation {
            GraphUpdateOperation::InsertData { data } => {
                if data
                    .iter()
                    .any(|q| q.graph_name != GroundGraphName::DefaultGraph)
                {
                    return unsupported("GRAPH");
                }
            }
            GraphUpdateOperation::DeleteData { data } => {
                if data
                    .iter()
                    .any(|q| q.graph_name != GroundGraphName::DefaultGraph)
                {
                    return unsupported("GRAPH");
                }
                for q in data {
                    let object = match &q.object {
                        spargebra::term::GroundTerm::NamedNode(n) => Some(n.as_str()),
                        _ => None,
                    };
                    refuse_managed(q.predicate.as_str(), object)?;
                }
            }
            GraphUpdateOperation::DeleteInsert {
                delete,
                insert,
                using,
                pattern,
            } => {
                let default = |g: &GraphNamePattern| *g == GraphNamePattern::DefaultGraph;
                if !delete.iter().all(|q| default(&q.graph_name))
                    || !insert.iter().all(|q| default(&q.graph_name))
                {
                    return unsupported("GRAPH (or WITH)");
                }
                if using.is_some() {
                    return unsupported("USING (or WITH)");
                }
                for q in delete {
                    if let spargebra::term::NamedNodePattern::NamedNode(p) = &q.predicate {
                        let object = match &q.object {
                            spargebra::term::GroundTermPattern::NamedNode(n) => Some(n.as_str()),
                            _ => None,
                        };
                        refuse_managed(p.as_str(), object)?;
                    }
                }
                if let Some(what) = forbidden_in_pattern(pattern) {
                    return unsupported(what);
                }
            }
            // COPY, MOVE and ADD are parsed into DROP and INSERT operations on graphs.
            GraphUpdateOperation::Load { .. } => return unsupported("LOAD"),
            GraphUpdateOperation::Clear { .. } => return unsupported("CLEAR"),
            GraphUpdateOperation::Create { .. } => return unsupported("CREATE"),
            GraphUpdateOperation::Drop { .. } => return unsupported("DROP (or COPY/MOVE/ADD)"),
        }
    }
    Ok(())
}

/// Refuses an update with an operation that names a triple to delete.
fn check_insert_only(update: &Update) -> Result<()> {
    let deletes = update.operations.iter().any(|operation| match operation {
        GraphUpdateOperation::DeleteData { data } => !data.is_empty(),
        // DELETE WHERE is parsed as a DELETE whose template is its pattern.
        GraphUpdateOperation::DeleteInsert { delete, .. } => !delete.is_empty(),
        _ => false,
    });
    if deletes {
        return Err(RdfError::NotInsertOnly(
            "only insertions are allowed here, and this update has a DELETE operation that names triples to remove (whether or not they exist)".into(),
        ));
    }
    Ok(())
}

/// Refuses deleting a server-managed statement: the server keeps those, so a request to
/// remove one must fail rather than be silently ignored (Fedora API §3.7).
fn refuse_managed(predicate: &str, object: Option<&str>) -> Result<()> {
    use crate::vocab::{FEDORA_NS, LDP_CONTAINS, LDP_NS, MEMENTO_NS, RDF_TYPE};
    let managed = predicate.starts_with(FEDORA_NS)
        || predicate == LDP_CONTAINS
        || (predicate == RDF_TYPE
            && object.is_some_and(|o| {
                [LDP_NS, FEDORA_NS, MEMENTO_NS]
                    .iter()
                    .any(|ns| o.starts_with(ns))
            }));
    if managed {
        return Err(RdfError::ServerManaged(format!(
            "the update deletes the server-managed statement(s) with predicate <{predicate}>{}; the server keeps those and cannot remove them on request",
            object.map(|o| format!(" and object <{o}>")).unwrap_or_default()
        )));
    }
    Ok(())
}

/// `GRAPH` or `SERVICE` if the pattern (or an `EXISTS` inside it) uses one.
fn forbidden_in_pattern(pattern: &GraphPattern) -> Option<&'static str> {
    match pattern {
        GraphPattern::Graph { .. } => Some("GRAPH"),
        GraphPattern::Service { .. } => Some("SERVICE"),
        GraphPattern::Bgp { .. } | GraphPattern::Path { .. } | GraphPattern::Values { .. } => None,
        GraphPattern::Join { left, right }
        | GraphPattern::Lateral { left, right }
        | GraphPattern::Union { left, right }
        | GraphPattern::Minus { left, right } => {
            forbidden_in_pattern(left).or_else(|| forbidden_in_pattern(right))
        }
        GraphPattern::LeftJoin {
            left,
            right,
            expression,
        } => forbidden_in_pattern(left)
            .or_else(|| forbidden_in_pattern(right))
            .or_else(|| expression.as_ref().and_then(forbidden_in_expression)),
        GraphPattern::Filter { expr, inner } => {
            forbidden_in_expression(expr).or_else(|| forbidden_in_pattern(inner))
        }
        GraphPattern::Extend {
            inner, expression, ..
        } => forbidden_in_expression(expression).or_else(|| forbidden_in_pattern(inner)),
        // Sub-selects: ORDER BY and aggregate expressions cannot reasonably hold EXISTS.
        GraphPattern::OrderBy { inner, .. }
        | GraphPattern::Project { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner }
        | GraphPattern::Slice { inner, .. }
        | GraphPattern::Group { inner, .. } => forbidden_in_pattern(inner),
    }
}

fn forbidden_in_expression(expression: &Expression) -> Option<&'static str> {
    let any = |es: &[&Expression]| es.iter().find_map(|e| forbidden_in_expression(e));
    match expression {
        Expression::Exists(pattern) => forbidden_in_pattern(pattern),
        Expression::NamedNode(_)
        | Expression::Literal(_)
        | Expression::Variable(_)
        | Expression::Bound(_) => None,
        Expression::UnaryPlus(e) | Expression::UnaryMinus(e) | Expression::Not(e) => {
            forbidden_in_expression(e)
        }
        Expression::Or(a, b)
        | Expression::And(a, b)
        | Expression::Equal(a, b)
        | Expression::SameTerm(a, b)
        | Expression::Greater(a, b)
        | Expression::GreaterOrEqual(a, b)
        | Expression::Less(a, b)
        | Expression::LessOrEqual(a, b)
        | Expression::Add(a, b)
        | Expression::Subtract(a, b)
        | Expression::Multiply(a, b)
        | Expression::Divide(a, b) => any(&[a, b]),
        Expression::If(a, b, c) => any(&[a, b, c]),
        Expression::In(e, list) => {
            forbidden_in_expression(e).or_else(|| list.iter().find_map(forbidden_in_expression))
        }
        Expression::Coalesce(list) | Expression::FunctionCall(_, list) => {
            list.iter().find_map(forbidden_in_expression)
        }
    }
}
