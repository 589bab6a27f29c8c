//! Issue 34: the initiator against a real target (tgt's `tgtd`, started here on a loopback
//! portal of its own): a login and the LUN's size, writes and reads at depth landing where
//! asked, a read past the end answered with its sense key, a wrong IQN and CHAP refused.

use stormark_iscsi::{Chap, Completion, Dir, Failure, Session, Url};
use stormark_testkit::Tgt;

const TMP: &str = env!("CARGO_TARGET_TMPDIR");

fn target(test: &str, chap: Option<(&str, &str)>) -> Option<Tgt> {
    Tgt::for_test(TMP, test, 64 << 20, chap)
}

/// Runs every submitted command to its completion.
fn drain(s: &mut Session) -> Vec<Completion> {
    let mut out = Vec::new();
    while s.inflight() > 0 {
        s.wait(1000, &mut out).unwrap();
    }
    out
}

#[test]
fn commands_at_depth_land_where_asked() {
    let Some(t) = target("commands_at_depth_land_where_asked", None) else {
        return;
    };
    let url = Url::parse(&t.url(1)).unwrap();
    let mut s = Session::connect(&url, None).unwrap();
    assert_eq!((s.capacity(), s.block_size()), (64 << 20, 512));
    // Eight 4 KiB writes in flight at once, each block its own byte.
    let mut bufs: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i + 1; 4096]).collect();
    for (i, b) in bufs.iter_mut().enumerate() {
        // SAFETY: each buffer outlives its command (drained below).
        unsafe {
            s.submit(
                Dir::Write,
                (1 << 20) + i as u64 * 8192,
                b.as_mut_ptr(),
                4096,
                i as u64,
            )
        }
        .unwrap();
    }
    assert_eq!(s.inflight(), 8);
    let mut done = drain(&mut s);
    done.sort_by_key(|c| c.tag);
    assert!(
        done.iter()
            .enumerate()
            .all(|(i, c)| c.tag == i as u64 && c.status.is_ok()),
        "{done:?}"
    );
    // Read back at depth, into zeroed buffers.
    let mut back: Vec<Vec<u8>> = (0..8).map(|_| vec![0u8; 4096]).collect();
    for (i, b) in back.iter_mut().enumerate() {
        // SAFETY: as above.
        unsafe {
            s.submit(
                Dir::Read,
                (1 << 20) + i as u64 * 8192,
                b.as_mut_ptr(),
                4096,
                100 + i as u64,
            )
        }
        .unwrap();
    }
    assert!(drain(&mut s).iter().all(|c| c.status.is_ok()));
    assert_eq!(back, bufs);
    drop(s);
    // On the target's own file: each block where it was sent, the gaps still zeros.
    let data = std::fs::read(&t.backing).unwrap();
    for i in 0..8usize {
        let at = (1 << 20) + i * 8192;
        assert!(
            data[at..at + 4096].iter().all(|&b| b == i as u8 + 1),
            "block {i}"
        );
        assert!(
            data[at + 4096..at + 8192].iter().all(|&b| b == 0),
            "gap {i}"
        );
    }
}

#[test]
fn a_read_past_the_end_is_an_illegal_request() {
    let Some(t) = target("a_read_past_the_end_is_an_illegal_request", None) else {
        return;
    };
    let mut s = Session::connect(&Url::parse(&t.url(1)).unwrap(), None).unwrap();
    let mut b = vec![0u8; 4096];
    // SAFETY: the buffer outlives the command.
    unsafe { s.submit(Dir::Read, 64 << 20, b.as_mut_ptr(), 4096, 7) }.unwrap();
    let done = drain(&mut s);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, Err(Failure::Sense(5)), "{done:?}");
    // The same, one command waited for; the session goes on after it.
    assert_eq!(s.read_at(64 << 20, &mut b).unwrap(), Err(Failure::Sense(5)));
    assert_eq!(s.write_at(4096, &[9u8; 4096]).unwrap(), Ok(()));
    assert_eq!(s.read_at(4096, &mut b).unwrap(), Ok(()));
    assert!(b.iter().all(|&x| x == 9));
}

#[test]
fn a_wrong_target_or_secret_is_refused_at_login() {
    let Some(t) = target(
        "a_wrong_target_or_secret_is_refused_at_login",
        Some(("bench", "s3cret-chap-1")),
    ) else {
        return;
    };
    let wrong = Url::parse(&format!("iscsi://{}/iqn.2026-11.org.nowhere:x/1", t.portal)).unwrap();
    let e = Session::connect(&wrong, None).unwrap_err().to_string();
    assert!(e.contains("iqn.2026-11.org.nowhere:x"), "{e}");
    let url = Url::parse(&t.url(1)).unwrap();
    assert!(Session::connect(&url, None).is_err(), "CHAP demanded");
    let bad = Chap {
        user: "bench".into(),
        secret: "not-the-secret".into(),
    };
    let e = Session::connect(&url, Some(&bad)).unwrap_err().to_string();
    assert!(!e.contains("not-the-secret"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    let good = Chap {
        user: "bench".into(),
        secret: "s3cret-chap-1".into(),
    };
    let s = Session::connect(&url, Some(&good)).unwrap();
    assert_eq!(s.capacity(), 64 << 20);
}
