//! Bounds on the work one request body can make the parsers do.
//!
//! Every body is checked in two steps. Before a parser sees it, a cheap lexical scan
//! ([`scan`](crate::scan)) measures how deeply it nests and, for SPARQL, how many operators it
//! chains — the two things that make recursive parsers and evaluators use stack — and, for
//! RDF/XML, a well-formedness pass refuses truncated documents and entity bombs. While the
//! parser runs, the triple count, the length of every literal and IRI and the elapsed time are
//! checked. A body that exceeds a bound is refused with [`RdfError::Limit`](crate::RdfError),
//! whose message names the bound and its value.

use std::time::{Duration, Instant};

use oxrdf::{NamedOrBlankNode, Term, Triple};

use crate::{RdfError, Result};

/// The bounds applied to one RDF body or SPARQL update. The defaults suit repository
/// metadata generously (Fedora descriptions rarely have more than a few hundred triples).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseLimits {
    /// Deepest nesting of brackets (`(`, `[`, `{`) in Turtle, N-Triples, JSON-LD and SPARQL,
    /// or of elements in RDF/XML.
    pub max_nesting: usize,
    /// Most triples one body (or the result of one SPARQL update) may hold.
    pub max_triples: usize,
    /// Longest literal value, in bytes.
    pub max_literal_bytes: usize,
    /// Longest IRI, in bytes.
    pub max_iri_bytes: usize,
    /// Most operators (`&& || + - * / | ^ ! = < >` and the `UNION`, `OPTIONAL`, `MINUS`
    /// keywords) one SPARQL update may chain; each one is a level of the parsed tree.
    pub max_update_operators: usize,
    /// Most bytes that RDF/XML entity references may expand to, in total.
    pub max_entity_expansion: usize,
    /// Longest time one parse or SPARQL update may run.
    pub max_parse_time: Duration,
}

impl Default for ParseLimits {
    fn default() -> Self {
        Self {
            max_nesting: 64,
            max_triples: 100_000,
            max_literal_bytes: 4 << 20,
            max_iri_bytes: 8 << 10,
            max_update_operators: 5_000,
            max_entity_expansion: 1 << 20,
            max_parse_time: Duration::from_secs(10),
        }
    }
}

impl ParseLimits {
    /// The error for bound `name` (the setting's name) with value `value`.
    pub(crate) fn exceeded(what: &str, name: &str, value: impl std::fmt::Display) -> RdfError {
        RdfError::Limit(format!("{what}: the limit {name} is {value}"))
    }

    /// Checks one triple's terms against the length bounds.
    pub(crate) fn check_triple(&self, t: &Triple) -> Result<()> {
        if let NamedOrBlankNode::NamedNode(n) = &t.subject {
            self.check_iri(n.as_str())?;
        }
        self.check_iri(t.predicate.as_str())?;
        match &t.object {
            Term::NamedNode(n) => self.check_iri(n.as_str()),
            Term::Literal(l) => {
                if l.value().len() > self.max_literal_bytes {
                    return Err(Self::exceeded(
                        &format!("a literal is {} bytes long", l.value().len()),
                        "max_literal_bytes",
                        self.max_literal_bytes,
                    ));
                }
                self.check_iri(l.datatype().as_str())
            }
            _ => Ok(()),
        }
    }

    fn check_iri(&self, iri: &str) -> Result<()> {
        if iri.len() > self.max_iri_bytes {
            return Err(Self::exceeded(
                &format!("an IRI is {} bytes long", iri.len()),
                "max_iri_bytes",
                self.max_iri_bytes,
            ));
        }
        Ok(())
    }
}

/// Counts triples and time while a parser runs.
pub(crate) struct Budget<'a> {
    limits: &'a ParseLimits,
    started: Instant,
    triples: usize,
}

impl<'a> Budget<'a> {
    pub(crate) fn new(limits: &'a ParseLimits) -> Self {
        Self {
            limits,
            started: Instant::now(),
            triples: 0,
        }
    }

    /// Accounts for one more triple.
    pub(crate) fn take(&mut self, t: &Triple) -> Result<()> {
        self.triples += 1;
        if self.triples > self.limits.max_triples {
            return Err(ParseLimits::exceeded(
                "the body has too many triples",
                "max_triples",
                self.limits.max_triples,
            ));
        }
        self.limits.check_triple(t)?;
        if self.triples.is_multiple_of(256) {
            self.check_time()?;
        }
        Ok(())
    }

    /// Fails once the parse has run longer than allowed.
    pub(crate) fn check_time(&self) -> Result<()> {
        if self.started.elapsed() > self.limits.max_parse_time {
            return Err(ParseLimits::exceeded(
                "parsing took too long",
                "max_parse_time",
                format!("{} s", self.limits.max_parse_time.as_secs_f64()),
            ));
        }
        Ok(())
    }
}
