//! Issue 31: fio's error handling in a job file (`ignore_error`, `continue_on_error`): errors of
//! an ignored kind are counted, marked in the document and do not fail the run, on a real
//! filesystem that runs out of space under the load.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use stormark_testkit::{read_json, require_root, require_tool, temp_dir, text, Bin};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// fio's `enospc-pressure` on a small tmpfs: one job writes at random into a file another job
/// punches holes in, while a filler takes every page freed, so that writes into holes fail
/// with ENOSPC. With `ignore_error=,ENOSPC` the run goes on past them (no give-up after 100
/// in a row), counts them, marks them ignored and exits 0; without it, it exits 1.
#[test]
fn ignored_enospc_is_counted_and_does_not_fail_the_run() {
    let test = "ignored_enospc_is_counted_and_does_not_fail_the_run";
    if !require_root(test) || !require_tool(test, "mount") {
        return;
    }
    let dir = temp_dir(TMP);
    let run = |ignore: bool| {
        let mnt = dir.path().join(format!("small-{ignore}"));
        std::fs::create_dir(&mnt).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
            .arg(&mnt)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            stormark_testkit::skip(test, "cannot mount a tmpfs");
            return None;
        }
        let _guard = Unmount(mnt.clone());
        let fio = dir.path().join("enospc.fio");
        let ignore = if ignore { "ignore_error=,ENOSPC\n" } else { "" };
        std::fs::write(
            &fio,
            format!(
                "[global]\ndirectory={}\nsize=4m\nbs=4k\nfilename=f\ntime_based\nruntime=4\n{ignore}\
                 [w]\nrw=randwrite\n[t]\nrw=randtrim\n",
                mnt.display()
            ),
        )
        .unwrap();
        // Once the file is laid out, a filler takes the rest of the space and every page
        // the trims free, until the run is over.
        let done = Arc::new(AtomicBool::new(false));
        let filler = {
            let (done, mnt) = (done.clone(), mnt.clone());
            std::thread::spawn(move || {
                let started = std::time::Instant::now();
                while !done.load(Ordering::Relaxed) && started.elapsed().as_secs() < 60 {
                    let laid_out = std::fs::read_dir(&mnt)
                        .unwrap()
                        .filter_map(Result::ok)
                        .any(|e| e.metadata().is_ok_and(|m| m.len() >= 4 << 20));
                    if laid_out {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                let mut f = std::fs::File::create(mnt.join("filler")).unwrap();
                let page = vec![7u8; 4096];
                while !done.load(Ordering::Relaxed) {
                    let _ = std::io::Write::write_all(&mut f, &page);
                }
            })
        };
        let json = dir.path().join("r.json");
        let out = Bin(BIN).run(&[
            "run",
            "--job",
            fio.to_str().unwrap(),
            "--allow-overwrite",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ]);
        done.store(true, Ordering::Relaxed);
        filler.join().unwrap();
        Some((out, read_json(&json)))
    };
    let Some((out, r)) = run(true) else { return };
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(r["status"], "ok");
    let errors: Vec<&serde_json::Value> = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["errors"].as_array().unwrap())
        .collect();
    assert!(
        !errors.is_empty(),
        "the writes into holes met a full filesystem"
    );
    for e in &errors {
        assert_eq!(
            (&e["kind"], &e["ignored"]),
            (&"enospc".into(), &true.into()),
            "{e}"
        );
    }
    assert!(
        r["notes"].to_string().contains("enospc of job w"),
        "{}",
        r["notes"]
    );
    let Some((out, r)) = run(false) else { return };
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_ne!(r["status"], "ok");
}

/// Issue 55: a device path the host lacks is refused in one line, exit 2, before any load:
/// fio would make it a regular file in devtmpfs and report RAM's figures as the disk's.
#[test]
fn a_device_the_host_lacks_is_refused_not_made_in_ram() {
    let dir = temp_dir(TMP);
    let missing = format!("/dev/stormark-missing-{}", std::process::id());
    let job = dir.path().join("dev.fio");
    std::fs::write(
        &job,
        format!("[j]\nfilename={missing}\nrw=read\nsize=1m\nruntime=1\n"),
    )
    .unwrap();
    let out = Bin(BIN).run(&["run", "--job", job.to_str().unwrap(), "-q"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(
        said.contains(&missing) && said.contains("no such device"),
        "{said}"
    );
    assert!(
        !std::path::Path::new(&missing).exists(),
        "{missing} was made"
    );
    // As the TARGET: refused too, naming what to give.
    let out = Bin(BIN).run(&["run", &missing, "--rw", "read", "--time", "1s", "-q"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!std::path::Path::new(&missing).exists());
}
