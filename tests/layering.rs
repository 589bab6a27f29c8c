//! Issue 52: the crates' layering as docs/architecture.md draws it, checked on the sources:
//! the coordinator (`cluster`) runs the steps the planner (`plan`) chooses without importing
//! it (both take `Step`, `PhaseKind` and `Host` from `spec`, below them).

use std::path::{Path, PathBuf};

/// Every `.rs` file below `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn the_coordinator_does_not_import_the_planner() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cluster");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        !manifest.contains("stormark-plan"),
        "crates/cluster/Cargo.toml depends on stormark-plan"
    );
    let files = sources(&root.join("src"));
    assert!(files.len() > 20, "{} sources", files.len());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains("stormark_plan"),
            "{} imports stormark_plan",
            f.display()
        );
    }
}
