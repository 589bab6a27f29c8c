//! Issue 34: the client against a real server (nfs-ganesha, started here in a namespace of
//! its own): the export found under a longer path, files made, written and read at depth by
//! their handles, COMMIT, removal, and what a missing export or directory says.

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
    // Issue 52: a file is read and written by its handle (a GUARDED CREATE's, its length
    // set), nothing looked up by name: renamed, and another file put under its name, the I/O
    // still goes to it.
    let top = c.dir_handle().unwrap();
    let run = c.lookup_at(&top, "run").unwrap();
    let h = c.create_at(&run.handle, "h", 3 << 20).unwrap().unwrap();
    assert_eq!(c.stat("run/h").unwrap().size, 3 << 20);
    let other = c.create("run/g", 4096).unwrap();
    assert_ne!(Some(other), h.id);
    c.rename("run/h", "run/moved").unwrap();
    c.rename("run/g", "run/h").unwrap();
    let held = c.hold(h.handle);
    // Larger than the server takes in one call (libnfs's 1 MiB at most): several RPCs in
    // flight, completed as one.
    let big: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 251) as u8).collect();
    assert_eq!(c.write_at(held, 4096, &big).unwrap(), Ok(3 << 20));
    let mut back = vec![0u8; 3 << 20];
    assert_eq!(c.read_at(held, 4096, &mut back).unwrap(), Ok(3 << 20));
    assert!(back == big, "read back as written");
    assert_eq!(c.commit(held).unwrap(), Ok(0));
    let on_disk = std::fs::read(g.export.join("bench/run/moved")).unwrap();
    assert!(on_disk[4096..] == big[..], "in the file made");
    assert_eq!(
        std::fs::read(g.export.join("bench/run/h")).unwrap(),
        vec![0u8; 4096]
    );
    c.unlink("run/moved").unwrap();
    c.unlink("run/h").unwrap();
    let f = c.lookup_at(&run.handle, "f").unwrap();
    assert_eq!(f.id, Some(made));
    let f = c.hold(f.handle);
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
