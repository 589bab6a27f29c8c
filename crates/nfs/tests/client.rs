//! Issue 34: the client against a real server (nfs-ganesha, started here in a namespace of
//! its own): the export found under a longer path, files made, written and read at depth,
//! COMMIT, removal, and what a missing export or directory says.

use stormark_nfs::{Client, Completion, Dir, Url};
use stormark_testkit::Ganesha;

const TMP: &str = env!("CARGO_TARGET_TMPDIR");

fn drain(c: &mut Client) -> Vec<Completion> {
    let mut out = Vec::new();
    while c.inflight() > 0 {
        c.wait(1000, &mut out).unwrap();
    }
    out
}

#[test]
fn files_are_made_written_read_and_removed_at_depth() {
    let Some(g) = Ganesha::for_test(TMP, "files_are_made_written_read_and_removed_at_depth") else {
        return;
    };
    std::fs::create_dir(g.export.join("bench")).unwrap();
    let url = Url::parse(&g.url("/bench")).unwrap();
    let mut c = Client::connect(&url, 8).unwrap_or_else(|e| panic!("{e}\n{}", g.log()));
    // ganesha mounts a directory inside an export too.
    assert!(c.export().starts_with("/export"), "{}", c.export());
    assert!(c.stat("").unwrap().dir);
    c.mkdir("run").unwrap();
    let made = c.create("run/f", 1 << 20).unwrap();
    assert_eq!(c.stat("run/f").unwrap().size, 1 << 20);
    assert_eq!(c.lstat("run/f").unwrap().id, made);
    // Issue 52: opened only when it is the object made, never through a link at its name.
    std::os::unix::fs::symlink("f", g.export.join("bench/run/l")).unwrap();
    assert!(c.lstat("run/l").unwrap().link);
    assert!(
        c.open("run/l", true, None).is_err(),
        "opened through a link"
    );
    let other = c.create("run/g", 4096).unwrap();
    assert_ne!(other, made);
    let e = c.open("run/g", true, Some(made)).unwrap_err().to_string();
    assert!(e.contains("no longer the file stormark created"), "{e}");
    c.unlink("run/g").unwrap();
    c.unlink("run/l").unwrap();
    let f = c.open("run/f", true, Some(made)).unwrap();
    let mut bufs: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i + 1; 4096]).collect();
    for (i, b) in bufs.iter_mut().enumerate() {
        // SAFETY: each buffer outlives its RPC (drained below).
        unsafe {
            c.submit(
                Dir::Write,
                f,
                i as u64 * 8192,
                b.as_mut_ptr(),
                4096,
                i as u64,
            )
        }
        .unwrap();
    }
    assert_eq!(c.inflight(), 8);
    let done = drain(&mut c);
    assert!(done.iter().all(|d| d.status == Ok(4096)), "{done:?}");
    assert_eq!(c.commit(f).unwrap(), Ok(0));
    let mut back: Vec<Vec<u8>> = (0..8).map(|_| vec![0u8; 4096]).collect();
    for (i, b) in back.iter_mut().enumerate() {
        // SAFETY: as above.
        unsafe {
            c.submit(
                Dir::Read,
                f,
                i as u64 * 8192,
                b.as_mut_ptr(),
                4096,
                i as u64,
            )
        }
        .unwrap();
    }
    assert!(drain(&mut c).iter().all(|d| d.status == Ok(4096)));
    assert_eq!(back, bufs);
    let on_disk = std::fs::read(g.export.join("bench/run/f")).unwrap();
    assert_eq!(&on_disk[8192..8192 + 4096], &bufs[1][..]);
    let mut one = vec![0u8; 4096];
    assert_eq!(c.read_at(f, 0, &mut one).unwrap(), Ok(4096));
    assert_eq!(one, bufs[0]);
    drop(c);
    let mut c = Client::connect(&url, 1).unwrap();
    c.unlink("run/f").unwrap();
    c.rmdir("run").unwrap();
    assert!(std::fs::read_dir(g.export.join("bench"))
        .unwrap()
        .next()
        .is_none());

    // The export mounts, the directory beneath it does not exist: said at its first stat.
    let mut c = Client::connect(&Url::parse(&g.url("/nowhere")).unwrap(), 1).unwrap();
    assert_eq!(c.export(), "/export");
    let e = c.stat("").unwrap_err().to_string();
    assert!(e.contains("/nowhere") || e.contains("No such file"), "{e}");
    let e = Client::connect(
        &Url::parse(&format!("nfs://{}/elsewhere", g.host)).unwrap(),
        1,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("cannot mount"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}
