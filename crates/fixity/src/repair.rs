//! Repairs: a damaged or missing file replaced from a copy whose digest is the one the
//! inventory records. Never the other way round (no copy without a good digest), never
//! over a file whose digest is right, atomically (a temporary key renamed, or an S3 PUT),
//! verified again after.

use arca_ocfl::ObjectStorage;

use crate::report::Finding;
use crate::Result;

/// A copy a repair may take files from.
pub struct Source<'a> {
    /// Its name, for the report (`primary`, a replica's name).
    pub name: &'a str,
    /// Its store.
    pub store: &'a dyn ObjectStorage,
}

/// What a repair did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepairOutcome {
    /// Replaced from the named copy, and verified again.
    Repaired {
        /// The copy the good bytes came from.
        from: String,
    },
    /// No copy holds bytes with the recorded digest; nothing was changed.
    NoGoodCopy(String),
    /// A finding a repair cannot address (a catalog mismatch); nothing was changed.
    NotRepairable(String),
}

/// Repairs `finding` about the object whose root is `object_prefix` in `target`, from the
/// first of `sources` that holds a good copy. The caller holds the object's lock when a
/// server runs.
pub fn repair(
    target: &dyn ObjectStorage,
    object_prefix: &str,
    finding: &Finding,
    sources: &[Source<'_>],
) -> Result<RepairOutcome> {
    let _ = sources.len();
    todo!("H1: {target:?} {object_prefix} {finding:?}")
}
