//! Extracts the text of one PDF within resource limits; see `arca_search::extract::run_child`.
fn main() {
    std::process::exit(arca_search::extract::run_child(
        std::env::args_os().skip(1).collect(),
    ));
}
