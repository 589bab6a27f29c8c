//! Issue 32: the Debian package (deploy/deb/build.sh) holds the binary, the agent's systemd
//! unit and its settings; installed with dpkg (into a root of its own, so that the machine
//! running the tests is left as it was), its binary serves as an agent with the options its
//! unit would give it, and a coordinator runs a stage through it.

use std::process::{Command, Stdio};

use stormark_testkit::{free_addr, read_json, require_tool, temp_dir, text, wait_listening, Bin};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Kills the agent when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_package_installs_with_dpkg_and_its_agent_serves_a_run() {
    let test = "the_package_installs_with_dpkg_and_its_agent_serves_a_run";
    if !require_tool(test, "dpkg-deb") {
        return;
    }
    let dir = temp_dir(TMP);
    let out = Command::new("bash")
        .arg(format!("{REPO}/deploy/deb/build.sh"))
        .arg(BIN)
        .arg(dir.path())
        // The debug binary is large; xz would take most of the test's time.
        .env("DEB_COMPRESSION", "none")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let deb = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(deb.ends_with(".deb"), "{deb}");

    // Installed with dpkg into a root of its own (with libc6 unrecorded there, hence
    // --force-depends; the host has it).
    let root = dir.path().join("root");
    for d in ["var/lib/dpkg/info", "var/lib/dpkg/updates"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    let dpkg = |args: &[&str]| {
        let out = Command::new("dpkg")
            .arg(format!("--root={}", root.display()))
            .args(["--log=/dev/null", "--force-depends", "--force-not-root"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "dpkg {args:?}: {}", text(&out));
    };
    dpkg(&["-i", &deb]);
    let installed = root.join("usr/bin/stormark");
    assert!(installed.is_file());
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &str| {
        std::fs::metadata(root.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("usr/bin/stormark"), 0o755);
    // The token's directory is the administrator's alone.
    assert_eq!(mode("etc/stormark"), 0o700);
    let unit =
        std::fs::read_to_string(root.join("lib/systemd/system/stormark-agent.service")).unwrap();
    assert!(
        unit.contains("ExecStart=/usr/bin/stormark agent $STORMARK_AGENT_ARGS"),
        "{unit}"
    );
    assert!(
        unit.contains("EnvironmentFile=/etc/default/stormark-agent"),
        "{unit}"
    );
    let defaults = std::fs::read_to_string(root.join("etc/default/stormark-agent")).unwrap();
    let agent_args: Vec<String> = defaults
        .lines()
        .find_map(|l| l.strip_prefix("STORMARK_AGENT_ARGS="))
        .expect("the unit's options")
        .trim_matches('"')
        .split_whitespace()
        .map(str::to_string)
        .collect();

    // The installed binary, started with the unit's options (its token, allowed path and
    // state directory moved into this test's directory, a free port), serves a run.
    let token = dir.path().join("token");
    std::fs::write(&token, "package-test-token-0123456789\n").unwrap();
    let allowed = dir.path().join("bench");
    std::fs::create_dir(&allowed).unwrap();
    let listen = free_addr();
    let mut args = vec!["agent".to_string()];
    let mut it = agent_args.iter();
    while let Some(a) = it.next() {
        let value = it.next().expect("each option has a value");
        args.push(a.clone());
        args.push(match a.as_str() {
            "--listen" => listen.clone(),
            "--token-file" => token.display().to_string(),
            "--allow-path" => allowed.display().to_string(),
            _ => value.clone(),
        });
    }
    args.push("--state-dir".into());
    args.push(dir.path().join("state").display().to_string());
    let agent = Killed(
        Command::new(&installed)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening(&listen, "the packaged agent");
    let json = dir.path().join("r.json");
    let out = Bin(BIN).run(&[
        "run",
        allowed.to_str().unwrap(),
        "--agents",
        &listen,
        "--token-file",
        token.to_str().unwrap(),
        "--size",
        "4m",
        "--time",
        "1s",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&json);
    assert_eq!(doc["status"], "ok", "{doc}");
    assert!(
        doc["phases"].as_array().is_some_and(|p| !p.is_empty()),
        "{doc}"
    );
    drop(agent);

    // Removed, it leaves only the host's own settings (a conffile), as dpkg -r does.
    dpkg(&["-r", "stormark"]);
    assert!(!installed.exists());
    assert!(root.join("etc/default/stormark-agent").exists());
}

/// Issue 54: the package's root entry (`./`) is drwxr-xr-x, so that `dpkg-deb -x` (or
/// `dpkg -i`) leaves the directory it unpacks into, `/` itself, readable by every user; and
/// the directory the agent is allowed by default (`--allow-path` in its settings) is in the
/// package, so that the packaged agent starts instead of exiting 2 and being restarted for ever.
#[test]
fn the_packages_root_is_0755_and_it_holds_the_default_allowed_directory() {
    let test = "the_packages_root_is_0755_and_it_holds_the_default_allowed_directory";
    if !require_tool(test, "dpkg-deb") {
        return;
    }
    let dir = temp_dir(TMP);
    // Any executable will do for the package's layout.
    let out = Command::new("bash")
        .arg(format!("{REPO}/deploy/deb/build.sh"))
        .arg("/bin/true")
        .arg(dir.path())
        .env("DEB_COMPRESSION", "none")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let deb = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let out = Command::new("dpkg-deb")
        .args(["-c", &deb])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let listing = String::from_utf8_lossy(&out.stdout).to_string();
    // `drwxr-xr-x root/root 0 2026-11-29 07:00 ./`: mode, owner, size, date, time, name.
    let entry = |name: &str| {
        listing
            .lines()
            .find(|l| l.split_whitespace().nth(5) == Some(name))
            .unwrap_or_else(|| panic!("no {name} in the package:\n{listing}"))
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(entry("./"), "drwxr-xr-x", "{listing}");
    let defaults =
        std::fs::read_to_string(format!("{REPO}/deploy/deb/stormark-agent.default")).unwrap();
    let args: Vec<&str> = defaults
        .lines()
        .find_map(|l| l.strip_prefix("STORMARK_AGENT_ARGS="))
        .expect("the unit's options")
        .trim_matches('"')
        .split_whitespace()
        .collect();
    let allowed = args
        .iter()
        .position(|a| *a == "--allow-path")
        .map(|i| args[i + 1])
        .expect("a default --allow-path");
    assert_eq!(entry(&format!(".{allowed}/")), "drwxr-xr-x", "{listing}");

    // Unpacked, the directory it goes into stays readable by others.
    let into = dir.path().join("x");
    std::fs::create_dir(&into).unwrap();
    let out = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&into)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&into).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755, "{mode:o}");
}
