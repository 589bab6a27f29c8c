//! A real iSCSI target for the tests: Linux's user-space tgt (`tgtd`, Debian's `tgt`) on a
//! loopback portal of its own, with one file-backed LUN, stopped when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::{run, temp_dir, wait_listening, TempDir};

/// How long tgtd may take to answer its control socket once it listens.
const ADM_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);

/// One `tgtd` serving one target with LUN 1 over a sparse file.
pub struct Tgt {
    /// `IP:PORT` of its portal.
    pub portal: String,
    /// The target's IQN.
    pub iqn: String,
    /// The file behind LUN 1.
    pub backing: PathBuf,
    control: u16,
    child: Child,
    _dir: TempDir,
}

impl Tgt {
    /// For test `test`: a target as [`Tgt::start`] makes it, or `None` (the skip recorded)
    /// where the tests are not root or tgt or libiscsi (`libiscsi-bin` brings it) is missing.
    pub fn for_test(base: &str, test: &str, size: u64, chap: Option<(&str, &str)>) -> Option<Tgt> {
        if !crate::require_root(test)
            || !crate::require_tool(test, "tgtd")
            || !crate::require_tool(test, "iscsi-inq")
        {
            return None;
        }
        Some(Tgt::start(base, size, chap).expect("tgtd starts"))
    }

    /// Starts `tgtd` with LUN 1 of `size` bytes (zeros), open to every initiator; `chap`:
    /// the initiators' user and secret it demands. Says why not where it cannot.
    pub fn start(base: &str, size: u64, chap: Option<(&str, &str)>) -> Result<Tgt, String> {
        Tgt::start_on(base, size, chap, "127.0.0.1")
    }

    /// As [`Tgt::start`], its portal on `ip` (a bridge's address, where hosts in network
    /// namespaces reach it).
    pub fn start_on(
        base: &str,
        size: u64,
        chap: Option<(&str, &str)>,
        ip: &str,
    ) -> Result<Tgt, String> {
        let dir = temp_dir(base);
        let backing = dir.path().join("lun1.img");
        std::fs::File::create(&backing)
            .and_then(|f| f.set_len(size))
            .map_err(|e| format!("backing file: {e}"))?;
        let portal = format!("{ip}:{}", crate::minio::free_port(ip));
        // Each tgtd its own control socket (/var/run/tgtd/socket.N, N at most 32767): tests
        // run side by side, in several test processes.
        static N: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let control = ((std::process::id() as u16).wrapping_mul(64).wrapping_add(n)) % 32000 + 700;
        let child = Command::new("tgtd")
            .args(["-f", "-C", &control.to_string(), "--iscsi"])
            .arg(format!("portal={portal}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("tgtd: {e}"))?;
        let iqn = format!("iqn.2026-11.org.stormark.test:lun{control}");
        let mut t = Tgt {
            portal,
            iqn,
            backing,
            control,
            child,
            _dir: dir,
        };
        wait_listening(&t.portal, "tgtd");
        t.adm(&[
            "--op",
            "new",
            "--mode",
            "target",
            "--tid",
            "1",
            "-T",
            &t.iqn.clone(),
        ])?;
        let b = t.backing.display().to_string();
        t.adm(&[
            "--op",
            "new",
            "--mode",
            "logicalunit",
            "--tid",
            "1",
            "--lun",
            "1",
            "-b",
            &b,
        ])?;
        t.adm(&[
            "--op", "bind", "--mode", "target", "--tid", "1", "-I", "ALL",
        ])?;
        if let Some((user, secret)) = chap {
            t.adm(&[
                "--op",
                "new",
                "--mode",
                "account",
                "--user",
                user,
                "--password",
                secret,
            ])?;
            t.adm(&[
                "--op", "bind", "--mode", "account", "--tid", "1", "--user", user,
            ])?;
        }
        Ok(t)
    }

    /// The process id of `tgtd` (to stop, resume or kill it as a failing target would).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `iscsi://PORTAL/IQN/LUN` of LUN `lun`.
    pub fn url(&self, lun: u16) -> String {
        format!("iscsi://{}/{}/{lun}", self.portal, self.iqn)
    }

    /// Sets LUN 1's parameters, as `tgtadm --params` takes them: `readonly=1` (its writes
    /// then fail with DATA PROTECT), `thin_provisioning=1` (it answers UNMAP).
    pub fn set_lun_params(&mut self, params: &str) -> Result<(), String> {
        self.adm(&[
            "--op",
            "update",
            "--mode",
            "logicalunit",
            "--tid",
            "1",
            "--lun",
            "1",
            "--params",
            params,
        ])
    }

    fn adm(&mut self, args: &[&str]) -> Result<(), String> {
        let control = self.control.to_string();
        // tgtd answers its control socket a moment after it listens, seconds later on a
        // loaded machine: tried for as long as that may take, not a number of times. Once the
        // target is bound its portal serves logins (each tgtadm call returns when done).
        let started = std::time::Instant::now();
        loop {
            let last = match run(Command::new("tgtadm")
                .args(["-C", &control, "--lld", "iscsi"])
                .args(args))
            {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "tgtadm {}: tgtd exited ({status}); the last try: {last}",
                    args.join(" ")
                ));
            }
            if started.elapsed() > ADM_WITHIN {
                return Err(format!(
                    "tgtadm {}: not answered within {} s; the last try: {last}",
                    args.join(" "),
                    ADM_WITHIN.as_secs()
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

impl Drop for Tgt {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(format!("/var/run/tgtd/socket.{}", self.control));
        let _ = std::fs::remove_file(format!("/var/run/tgtd/socket.{}.lock", self.control));
    }
}
