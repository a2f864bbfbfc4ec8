//! arca-http's integration tests, one binary: one module per area of the API. The tests of two
//! nodes sharing a PostgreSQL catalog are in `tests/postgres`.

mod common;

mod archival_groups;
mod audit;
mod bad_input;
mod binaries;
mod conditional;
mod containers;
mod delete;
mod digest_algorithm;
mod events;
mod external_content;
mod fedora3_contract;
mod fedora7;
mod fedora7_root;
mod fixity;
mod fuzz_regressions;
mod hostile;
mod html;
mod jsonld;
mod membership;
mod mutable_head;
mod paging;
mod patch;
mod prefer;
mod premis3;
mod rdf_formats;
mod reads;
mod references;
mod search;
mod search_fedora7;
mod server_managed;
mod smoke;
mod transactions;
mod versions;
mod webac;
