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

/// A target is told apart once, where the request is made (`spec::Target::parse`): no other
/// crate tests a string for an `iscsi://` or `nfs://` scheme, and the planner links neither
/// service client.
#[test]
fn only_spec_tells_a_target_by_its_scheme() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tests_for = [
        "starts_with(",
        "strip_prefix(",
        "eq_ignore_ascii_case(",
        "==",
        "contains(",
        "find(",
    ];
    let mut seen = 0;
    for entry in std::fs::read_dir(&crates).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "spec" || !entry.path().join("src").is_dir() {
            continue;
        }
        for f in sources(&entry.path().join("src")) {
            seen += 1;
            let text = std::fs::read_to_string(&f).unwrap();
            for (no, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                let scheme = line.contains("\"iscsi://") || line.contains("\"nfs://");
                assert!(
                    !(scheme && tests_for.iter().any(|t| line.contains(t))),
                    "{}:{}: a scheme tested outside spec: {line}",
                    f.display(),
                    no + 1
                );
                assert!(
                    !line.contains("is_iscsi(") && !line.contains("is_nfs("),
                    "{}:{}: {line}",
                    f.display(),
                    no + 1
                );
            }
        }
    }
    assert!(seen > 100, "{seen} sources read");
    let plan = std::fs::read_to_string(crates.join("plan/Cargo.toml")).unwrap();
    assert!(
        !plan.contains("stormark-iscsi") && !plan.contains("stormark-nfs"),
        "crates/plan/Cargo.toml links a service client"
    );
}
