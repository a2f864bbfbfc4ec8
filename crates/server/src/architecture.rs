//! Checks that ARCHITECTURE.md's list of the dependencies between the crates is the one the
//! Cargo files declare, so that the map stays true as the code changes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The graph ARCHITECTURE.md states between its `crate-graph` markers.
fn documented(text: &str) -> Graph {
    let start = text
        .find("<!-- crate-graph -->")
        .expect("the crate-graph marker");
    let end = text
        .find("<!-- /crate-graph -->")
        .expect("the closing marker");
    let mut graph = Graph::new();
    for line in text[start..end].lines().filter(|l| l.starts_with("- ")) {
        let (crates, deps) = line[2..].split_once(':').expect("`crates`: deps");
        let deps: BTreeSet<String> = match deps.trim() {
            "none" => BTreeSet::new(),
            d => d.split(',').map(|d| d.trim().to_string()).collect(),
        };
        for c in crates.split(',') {
            let name = c.trim().trim_matches('`').to_string();
            assert!(
                graph.insert(name.clone(), deps.clone()).is_none(),
                "{name} listed twice"
            );
        }
    }
    graph
}

/// The graph the crates' Cargo files declare (normal dependencies on `arca-*` crates).
fn declared(crates_dir: &Path) -> Graph {
    let mut graph = Graph::new();
    for entry in std::fs::read_dir(crates_dir).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let manifest: toml::Table = text.parse().unwrap();
        let deps = manifest
            .get("dependencies")
            .and_then(|d| d.as_table())
            .map(|t| {
                t.keys()
                    .filter_map(|k| k.strip_prefix("arca-").map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        graph.insert(name, deps);
    }
    graph
}

#[test]
fn the_documented_crate_graph_is_the_declared_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let (documented, declared) = (documented(&text), declared(&root.join("crates")));
    assert!(declared.len() >= 16, "{declared:?}");
    for (name, deps) in &declared {
        assert_eq!(
            documented.get(name),
            Some(deps),
            "ARCHITECTURE.md's crate graph is out of date for `{name}`"
        );
    }
    assert_eq!(
        documented.keys().collect::<Vec<_>>(),
        declared.keys().collect::<Vec<_>>()
    );
}
