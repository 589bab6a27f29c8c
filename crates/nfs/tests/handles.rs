//! Issue 52: the share's namespace by file handle against a real server (nfs-ganesha): each
//! call one RPC relative to a directory's handle, GUARDED creates and MKDIRs refusing a name
//! that exists, links never followed, READDIR's names, and removal of exactly what was made.

use stormark_nfs::{Client, Kind, Url};
use stormark_testkit::Ganesha;

const TMP: &str = env!("CARGO_TARGET_TMPDIR");

#[test]
fn a_tree_is_made_looked_up_renamed_and_removed_by_handle() {
    let Some(g) = Ganesha::for_test(
        TMP,
        "a_tree_is_made_looked_up_renamed_and_removed_by_handle",
    ) else {
        return;
    };
    std::fs::create_dir(g.export.join("bench")).unwrap();
    std::fs::write(g.export.join("bench/theirs"), b"not ours").unwrap();
    let url = Url::parse(&g.url("/bench")).unwrap();
    let mut c = Client::connect(&url, 1).unwrap_or_else(|e| panic!("{e}\n{}", g.log()));
    let top = c.dir_handle().unwrap();
    let made = c.mkdir_at(&top, "run").unwrap();
    let run = c.lookup_at(&top, "run").unwrap();
    assert_eq!(run.kind, Kind::Dir);
    if let Some(m) = made {
        assert_eq!(m.handle, run.handle, "MKDIR's handle is LOOKUP's");
    }
    assert_eq!(
        c.mkdir_at(&top, "run").unwrap_err().raw_os_error(),
        Some(libc::EEXIST)
    );
    c.create_at(&run.handle, "f0", 0).unwrap();
    assert_eq!(
        c.create_at(&run.handle, "f0", 0)
            .unwrap_err()
            .raw_os_error(),
        Some(libc::EEXIST),
        "GUARDED"
    );
    let f = c.lookup_at(&run.handle, "f0").unwrap();
    assert_eq!(f.kind, Kind::File);
    let id = f.id.unwrap();
    let st = std::fs::metadata(g.export.join("bench/run/f0")).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(id.ino, st.ino());
    assert_eq!(st.mode() & 0o777, 0o644);
    // A link planted under a name is looked up as a link, never followed.
    std::os::unix::fs::symlink("../theirs", g.export.join("bench/run/l")).unwrap();
    assert_eq!(c.lookup_at(&run.handle, "l").unwrap().kind, Kind::Link);
    c.rename_at(&run.handle, "f0", "r0").unwrap();
    let mut names = c.names_at(&run.handle).unwrap();
    names.sort();
    assert_eq!(names, ["l", "r0"]);
    assert_eq!(
        c.remove_at(&run.handle, "f0").unwrap_err().raw_os_error(),
        Some(libc::ENOENT)
    );
    c.remove_at(&run.handle, "r0").unwrap();
    c.remove_at(&run.handle, "l").unwrap();
    assert_eq!(
        std::fs::read(g.export.join("bench/theirs")).unwrap(),
        b"not ours"
    );
    assert!(c.lookup_at(&top, "../etc").is_err(), "a single name only");
    c.rmdir_at(&top, "run").unwrap();
    assert!(!g.export.join("bench/run").exists());
}
