//! arca-fixity's tests: audits, repairs, checkpoints and reports on real OCFL objects (the
//! official fixtures' good objects, copied into a root and damaged on purpose).

mod audit;
mod files;
mod support;
