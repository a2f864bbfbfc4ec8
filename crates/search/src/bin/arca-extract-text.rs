//! Extracts the text of one PDF within resource limits; see `arca_search::extract::run_child`.

/// The allocator of the `arca` binary, whose hidden `extract-text` command the server runs
/// as its extraction workers: this program stands in for it in tests and measurements, so it
/// allocates the same way.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(arca_search::extract::run_child(
        std::env::args_os().skip(1).collect(),
    ));
}
