//! A real container runtime for the tests: Debian's podman, with stormark's image built from
//! the repository's Containerfile (its `prebuilt` target, holding the test's binary) on the base
//! that `deploy/container/base.sh` makes from Debian packages.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

use crate::{run, skip, temp_dir, text};

/// podman and the image of the binary under test.
#[derive(Debug, Clone)]
pub struct Podman {
    /// The image's name (`localhost/stormark-test:KEY`, KEY a digest of the binary).
    pub image: String,
    /// Options this host's podman needs before its command (`--runtime runc`), and on each
    /// `run` and `build` (`--ulimit`): found by [`Podman::probe`].
    global: Vec<String>,
    limits: Vec<String>,
}

/// The image, built once per test process (tests run side by side): what it is, or why not.
static IMAGE: Mutex<Option<Result<Podman, String>>> = Mutex::new(None);

impl Podman {
    /// For test `test`: podman with the image of `bin` built from the repository at `repo`,
    /// or `None` with the skip recorded where podman is missing or can run no container here.
    /// A base or image that fails to build fails the test: that is the recipe's defect.
    pub fn for_test(test: &str, repo: &Path, bin: &Path, tmp: &str) -> Option<Podman> {
        if !crate::require_root(test)
            || !crate::require_tool(test, "podman")
            || !crate::require_tool(test, "mmdebstrap")
        {
            return None;
        }
        let mut held = IMAGE.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_none() {
            *held = Some(Podman::build(repo, bin, tmp));
        }
        match held.as_ref().expect("set above") {
            Ok(p) => Some(p.clone()),
            Err(why) if why.starts_with("no container runs here") => {
                skip(test, why);
                None
            }
            Err(why) => panic!("{why}"),
        }
    }

    fn build(repo: &Path, bin: &Path, tmp: &str) -> Result<Podman, String> {
        let t0 = std::time::Instant::now();
        let out = Command::new("bash")
            .arg(repo.join("deploy/container/base.sh"))
            .output()
            .map_err(|e| format!("deploy/container/base.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!("deploy/container/base.sh failed: {}", text(&out)));
        }
        let base = String::from_utf8_lossy(&out.stdout).trim().to_string();
        eprintln!("container base {base} ready in {:?}", t0.elapsed());
        let mut podman = Podman::probe(&base)?;
        // The build context: a directory holding the binary alone (the Containerfile's
        // `prebuilt` target), its debug information left out where strip is installed.
        let ctx = temp_dir(tmp);
        let copy = ctx.path().join("stormark");
        let stripped = Command::new("strip")
            .args(["--strip-debug", "-o"])
            .arg(&copy)
            .arg(bin)
            .status()
            .is_ok_and(|s| s.success());
        if !stripped {
            std::fs::copy(bin, &copy).map_err(|e| format!("copying {}: {e}", bin.display()))?;
        }
        let key = Command::new("sha256sum")
            .arg(&copy)
            .output()
            .map_err(|e| format!("sha256sum: {e}"))?;
        let key: String = String::from_utf8_lossy(&key.stdout)
            .chars()
            .take(12)
            .collect();
        podman.image = format!("localhost/stormark-test:{key}");
        let t0 = std::time::Instant::now();
        let mut build = podman.command("build");
        build
            .args(["--quiet", "--target", "prebuilt", "-f"])
            .arg(repo.join("Containerfile"))
            .args(["--build-arg", &format!("BASE={base}"), "-t", &podman.image])
            .arg(ctx.path());
        run(&mut build).map_err(|e| format!("podman build: {e}"))?;
        eprintln!("image {} built in {:?}", podman.image, t0.elapsed());
        // Earlier test runs' images, of other binaries: removed unless a container uses one
        // (another test process's; no --force).
        if let Ok(o) = podman
            .command("images")
            .args(["--noheading", "--format", "{{.Repository}}:{{.Tag}}"])
            .arg("localhost/stormark-test")
            .output()
        {
            for old in String::from_utf8_lossy(&o.stdout).lines() {
                if old != podman.image {
                    let _ = podman.command("rmi").arg(old).output();
                }
            }
        }
        Ok(podman)
    }

    /// How podman runs a container here: as installed, or with each `run` kept within this
    /// process's own limits (podman raises the open files and processes of a root container,
    /// which a host without CAP_SYS_RESOURCE refuses), or with runc as well (crun refuses
    /// cgroups v1 and v2 mounted side by side). The first that runs `true` in `base` is used.
    fn probe(base: &str) -> Result<Podman, String> {
        let nofile = hard_open_files().min(65536);
        let limits: Vec<String> = [
            "--ulimit",
            &format!("nofile={nofile}:{nofile}"),
            "--ulimit",
            "nproc=4096:4096",
        ]
        .map(String::from)
        .to_vec();
        let runc = vec!["--runtime".to_string(), "runc".to_string()];
        let mut tried = Vec::new();
        for (global, limits) in [
            (vec![], vec![]),
            (vec![], limits.clone()),
            (runc.clone(), limits.clone()),
        ] {
            let p = Podman {
                image: String::new(),
                global,
                limits,
            };
            let out = p
                .command("run")
                .args(["--rm", base, "true"])
                .output()
                .map_err(|e| format!("no container runs here: podman: {e}"))?;
            if out.status.success() {
                return Ok(p);
            }
            tried.push(format!(
                "podman {} run {}: {}",
                p.global.join(" "),
                p.limits.join(" "),
                text(&out).trim()
            ));
        }
        Err(format!("no container runs here: {}", tried.join("; ")))
    }

    /// `podman SUB`, with what this host needs (`run` and `build` kept within its limits).
    pub fn command(&self, sub: &str) -> Command {
        let mut c = Command::new("podman");
        c.args(&self.global).arg(sub);
        if matches!(sub, "run" | "build") {
            c.args(&self.limits);
        }
        c
    }

    /// `podman run --rm ARGS` (ARGS: podman's options, the image, stormark's arguments).
    pub fn run(&self, args: &[&str]) -> Output {
        self.command("run")
            .arg("--rm")
            .args(args)
            .output()
            .expect("podman runs")
    }
}

/// This process's hard limit on open files (what a container may be given without
/// CAP_SYS_RESOURCE).
fn hard_open_files() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(4).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(1024)
}

/// A container removed (with `podman rm --force`) when dropped, however the test ends.
pub struct Container {
    podman: Podman,
    /// Its name.
    pub name: String,
}

impl Container {
    /// Starts `podman run --detach --name NAME ARGS`.
    pub fn start(podman: &Podman, name: &str, args: &[&str]) -> Result<Container, String> {
        let mut c = podman.command("run");
        c.args(["--detach", "--name", name]).args(args);
        run(&mut c)?;
        Ok(Container {
            podman: podman.clone(),
            name: name.to_string(),
        })
    }

    /// What it printed so far (`podman logs`).
    pub fn logs(&self) -> String {
        self.podman
            .command("logs")
            .arg(&self.name)
            .output()
            .map(|o| text(&o))
            .unwrap_or_default()
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self
            .podman
            .command("rm")
            .args(["--force", "--time", "5", &self.name])
            .output();
    }
}
