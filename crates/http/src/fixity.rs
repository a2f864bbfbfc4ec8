//! `GET <binary>/fcr:fixity`: the binary's digests recomputed from the stored bytes,
//! answered with the PREMIS 1 triples Fedora 6 returns and the PREMIS 3 event Fedora 7 adds.

use arca_model::{DigestAlgorithm, DigestValue, FedoraId};
use arca_rdf::vocab;
use arca_repository::{Error, FixityReport};
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{header, StatusCode};
use oxrdf::{Literal, NamedNode, Triple};

use crate::context::Ctx;
use crate::error::ApiError;
use crate::handlers::model_of;
use crate::response::{add_type_link, response, set};

/// Methods `fcr:fixity` answers, as Fedora 6 lists them.
pub(crate) const ALLOW: &str = "OPTIONS, GET";

/// Runs a fixity check of binary `id` and answers with its outcome: 200 whether the check
/// passed (`SUCCESS`) or not (`BAD_CHECKSUM`, also when the content is missing); 404 for a
/// resource that is not a binary.
pub(crate) async fn get(ctx: &Ctx, id: FedoraId, req: Request) -> Result<Response, ApiError> {
    let output = arca_rdf::RdfOutput::negotiate(
        req.headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    )
    .ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_ACCEPTABLE,
            "fixity reports are available as text/turtle, application/ld+json, application/n-triples or application/rdf+xml",
        )
    })?;
    // The current content, or a memento's (`ctx.memento`).
    let record = ctx.record(&id).await.map_err(|e| ctx.err(e))?;
    if !model_of(&record).is_binary() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "{} is not a binary; fixity applies to binaries",
                ctx.url(&id)
            ),
        ));
    }
    let report = ctx
        .repo
        .check_fixity(&record)
        .await
        .map_err(|e| ctx.err(e))?;
    if !report.ok() {
        tracing::warn!(id = %id, report = ?report, "fixity check failed");
    }
    let triples = report_triples(&id, &report);
    let body = arca_rdf::serialize_as(&triples, output, &ctx.mapper())
        .map_err(|e| ctx.err(Error::Rdf(e)))?;
    let mut out = response(StatusCode::OK, Body::from(body));
    let h = out.headers_mut();
    add_type_link(h, "", "http://www.w3.org/ns/ldp#Resource");
    add_type_link(h, "", "http://www.w3.org/ns/ldp#RDFSource");
    set(
        h,
        header::CONTENT_TYPE,
        &crate::response::rdf_output_content_type(output),
    );
    Ok(out)
}

/// `OPTIONS <binary>/fcr:fixity`.
pub(crate) fn options() -> Response {
    let mut out = response(StatusCode::OK, Body::empty());
    set(out.headers_mut(), header::ALLOW, ALLOW);
    out
}

/// The report as Fedora 7 writes it. PREMIS 1 (Fedora 6's): `<binary> premis:hasFixity
/// <binary/#uuid>`, and on that node its types, the outcome, the digests of the bytes as
/// stored now and the recorded size. PREMIS 3: the binary `a premis3:File` with its
/// `premis3:size`; an event `<binary/#uuid> a premis3:Event, evType:fix` with its
/// `premis3:outcome` (`evOutcome:suc` or `evOutcome:fai`) that `prov:generated` a fixity node
/// (`prov:wasGeneratedBy` the event), which is `<binary> premis3:fixity`'s object and holds
/// the digest computed now (`a premis3:Fixity, hashFunc:sha512`, `rdf:value` the hex digits).
/// Fedora 7 gives that digest for SHA-512 only; for an object kept with another algorithm
/// arca names that algorithm's hash function instead (`hashFunc:sha256`, …).
fn report_triples(id: &FedoraId, report: &FixityReport) -> Vec<Triple> {
    let binary = NamedNode::new_unchecked(id.iri());
    let hash_node = || NamedNode::new_unchecked(format!("{}/#{}", id.iri(), uuid::Uuid::new_v4()));
    let node = hash_node();
    let iri = NamedNode::new_unchecked;
    let outcome = if report.ok() {
        "SUCCESS"
    } else {
        "BAD_CHECKSUM"
    };
    let mut triples = vec![
        Triple::new(binary.clone(), iri(vocab::PREMIS_HAS_FIXITY), node.clone()),
        Triple::new(
            node.clone(),
            iri(vocab::RDF_TYPE),
            iri(vocab::PREMIS_FIXITY),
        ),
        Triple::new(
            node.clone(),
            iri(vocab::RDF_TYPE),
            iri(vocab::PREMIS_EVENT_OUTCOME_DETAIL),
        ),
        Triple::new(
            node.clone(),
            iri(vocab::PREMIS_HAS_EVENT_OUTCOME),
            Literal::new_simple_literal(outcome),
        ),
    ];
    for check in &report.checks {
        triples.push(Triple::new(
            node.clone(),
            iri(vocab::PREMIS_HAS_MESSAGE_DIGEST),
            NamedNode::new_unchecked(check.computed.urn()),
        ));
    }
    if let Some(size) = report.expected_size {
        triples.push(Triple::new(
            node,
            iri(vocab::PREMIS_HAS_SIZE),
            Literal::new_typed_literal(size.to_string(), iri(vocab::XSD_LONG)),
        ));
    }
    triples.extend(premis3_triples(&binary, report, hash_node(), hash_node()));
    triples
}

/// The PREMIS 3 half of [`report_triples`], with `fixity` and `event` the nodes to use.
fn premis3_triples(
    binary: &NamedNode,
    report: &FixityReport,
    fixity: NamedNode,
    event: NamedNode,
) -> Vec<Triple> {
    let iri = NamedNode::new_unchecked;
    let outcome = if report.ok() {
        vocab::EVENT_OUTCOME_SUCCESS
    } else {
        vocab::EVENT_OUTCOME_FAILURE
    };
    let mut triples = vec![
        Triple::new(
            binary.clone(),
            iri(vocab::RDF_TYPE),
            iri(vocab::PREMIS3_FILE),
        ),
        Triple::new(
            event.clone(),
            iri(vocab::RDF_TYPE),
            iri(vocab::PREMIS3_EVENT),
        ),
        Triple::new(
            event.clone(),
            iri(vocab::RDF_TYPE),
            iri(vocab::EVENT_TYPE_FIXITY_CHECK),
        ),
        Triple::new(event.clone(), iri(vocab::PREMIS3_OUTCOME), iri(outcome)),
        Triple::new(event.clone(), iri(vocab::PROV_GENERATED), fixity.clone()),
        Triple::new(fixity.clone(), iri(vocab::PROV_WAS_GENERATED_BY), event),
    ];
    if let Some(size) = report.expected_size {
        triples.push(Triple::new(
            binary.clone(),
            iri(vocab::PREMIS3_SIZE),
            Literal::new_typed_literal(size.to_string(), iri(vocab::XSD_NON_NEGATIVE_INTEGER)),
        ));
    }
    // The SHA-512 digest when there is one (Fedora 7's), else the first recorded digest whose
    // algorithm the hash-function vocabulary names.
    let named = |d: &&DigestValue| hash_function(d.algorithm).is_some();
    let digests = || report.checks.iter().map(|c| &c.computed);
    let computed = digests()
        .find(|d| d.algorithm == DigestAlgorithm::Sha512)
        .or_else(|| digests().find(named));
    if let Some(digest) = computed.filter(|_| report.unreadable.is_none()) {
        triples.extend([
            Triple::new(binary.clone(), iri(vocab::PREMIS3_FIXITY), fixity.clone()),
            Triple::new(
                fixity.clone(),
                iri(vocab::RDF_TYPE),
                iri(vocab::PREMIS3_FIXITY_CLASS),
            ),
            Triple::new(
                fixity.clone(),
                iri(vocab::RDF_TYPE),
                NamedNode::new_unchecked(format!(
                    "{}{}",
                    vocab::HASHFUNC_NS,
                    hash_function(digest.algorithm).unwrap_or_default()
                )),
            ),
            Triple::new(
                fixity,
                iri(vocab::RDF_VALUE),
                Literal::new_simple_literal(&digest.hex),
            ),
        ]);
    }
    triples
}

/// The name of `algorithm` in the Library of Congress's vocabulary of cryptographic hash
/// functions, which has no SHA-512/256.
fn hash_function(algorithm: DigestAlgorithm) -> Option<&'static str> {
    match algorithm {
        DigestAlgorithm::Sha512 => Some("sha512"),
        DigestAlgorithm::Sha256 => Some("sha256"),
        DigestAlgorithm::Sha1 => Some("sha1"),
        DigestAlgorithm::Md5 => Some("md5"),
        DigestAlgorithm::Sha512_256 => None,
    }
}
