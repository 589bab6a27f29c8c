//! Issue 57: stormark's container image (the repository's Containerfile), built with podman
//! from the test's binary on a base made from Debian packages (deploy/container/base.sh), runs
//! a job into a mounted directory as its non-root user, and serves as an agent to a
//! coordinator in another container over TLS, as the Kubernetes manifests run it: the agent's
//! certificate made by the manifest's init container script, the coordinator started once the
//! manifest's wait for the agents ends, every container with a read-only root.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use stormark_testkit::{
    entries, free_addr, phase, read_json, temp_dir, text, wait_listening, Bin, Container, Podman,
};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The image's user: what a volume must let write (docs/kubernetes.md, fsGroup).
const UID: u32 = 10001;

fn podman(test: &str) -> Option<Podman> {
    Podman::for_test(test, Path::new(REPO), Path::new(BIN), TMP)
}

/// A directory the image's user may write, as a volume of a pod with fsGroup would be.
fn volume(root: &Path, name: &str) -> String {
    let dir = root.join(name);
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(UID), Some(UID)).unwrap();
    dir.display().to_string()
}

#[test]
fn the_containerfile_builds_with_the_workspace_rust_version() {
    let cargo = std::fs::read_to_string(format!("{REPO}/Cargo.toml")).unwrap();
    let version = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("rust-version in Cargo.toml")
        .trim_matches('"');
    let containerfile = std::fs::read_to_string(format!("{REPO}/Containerfile")).unwrap();
    let wanted = format!("ARG RUST=docker.io/library/rust:{version}-slim-bookworm");
    assert!(
        containerfile.lines().any(|l| l == wanted),
        "the Containerfile's build stage must use the workspace's rust-version: {wanted}"
    );
}

#[test]
fn the_image_runs_a_job_into_a_mounted_directory_as_its_own_user() {
    let test = "the_image_runs_a_job_into_a_mounted_directory_as_its_own_user";
    let Some(podman) = podman(test) else { return };
    let inspect = podman
        .command("image")
        .args([
            "inspect",
            "--format",
            "{{json .Config.Entrypoint}} {{.Config.User}}",
            &podman.image,
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&inspect.stdout).trim(),
        format!("[\"stormark\"] {UID}:{UID}"),
        "{}",
        text(&inspect)
    );
    let dir = temp_dir(TMP);
    let bench = volume(dir.path(), "bench");
    let out_dir = volume(dir.path(), "out");
    let t0 = std::time::Instant::now();
    let out = podman.run(&[
        "-v",
        &format!("{bench}:/bench"),
        "-v",
        &format!("{out_dir}:/out"),
        &podman.image,
        "run",
        "/bench",
        "--size",
        "16m",
        "--time",
        "5s",
        "--json",
        "/out/r.json",
    ]);
    eprintln!("podman run of a 5 s job: {:?}", t0.elapsed());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json = Path::new(&out_dir).join("r.json");
    let doc = read_json(&json);
    let run = phase(&doc, "run");
    assert!(run["total"]["ops"].as_u64().unwrap() > 0, "{run}");
    assert_eq!(doc["status"], "ok", "{}", doc["status"]);
    // Written by the image's user, not root; its run directory removed again.
    assert_eq!(std::fs::metadata(&json).unwrap().uid(), UID);
    assert_eq!(entries(Path::new(&bench)), Vec::<String>::new());
}

#[test]
fn an_agent_container_serves_a_coordinator_container_over_tls() {
    let test = "an_agent_container_serves_a_coordinator_container_over_tls";
    let Some(podman) = podman(test) else { return };
    let dir = temp_dir(TMP);
    let root = dir.path();
    // The CA, made once outside (as for the Kubernetes Secret).
    let ca = root.join("ca");
    let out = Bin(BIN).run(&["cert", "ca", ca.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // The agent's certificate made by the Kubernetes manifest's own init container script
    // (deploy/kubernetes/base/agents.yaml), for the address it is reached at, from the CA
    // mounted as the stormark-ca Secret is; the CA's key is gone again afterwards.
    let secret_ca = volume(root, "secret-ca");
    for f in ["ca.pem", "ca.key"] {
        let to = Path::new(&secret_ca).join(f);
        std::fs::copy(ca.join(f), &to).unwrap();
        std::os::unix::fs::chown(&to, Some(UID), Some(UID)).unwrap();
    }
    let tls = volume(root, "tls");
    let agents =
        std::fs::read_to_string(format!("{REPO}/deploy/kubernetes/base/agents.yaml")).unwrap();
    let out = podman.run(&[
        "--read-only",
        "-e",
        "POD_IP=127.0.0.1",
        "--hostname",
        "stormark-agent-0",
        "-v",
        &format!("{secret_ca}:/etc/stormark-ca:ro"),
        "-v",
        &format!("{tls}:/tls"),
        "--entrypoint",
        "sh",
        &podman.image,
        "-c",
        &manifest_script(&agents, "cert"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        entries(Path::new(&tls)),
        ["agent.key", "agent.pem", "ca.pem"]
    );
    // The token as a Secret volume lays it out: a link into a hidden directory.
    let secret = root.join("secret");
    std::fs::create_dir_all(secret.join("..data")).unwrap();
    std::fs::write(
        secret.join("..data/token"),
        "container-test-token-0123456789\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("..data/token", secret.join("token")).unwrap();
    let secret = secret.display().to_string();
    let bench = volume(root, "bench");
    let out_dir = volume(root, "out");
    // The coordinator gets the CA's certificate alone (the Secret's ca.pem item).
    let trust = volume(root, "trust");
    std::fs::copy(ca.join("ca.pem"), Path::new(&trust).join("ca.pem")).unwrap();

    let listen = free_addr();
    let name = format!("stormark-test-agent-{}", std::process::id());
    let agent = Container::start(
        &podman,
        &name,
        &[
            "--network",
            "host",
            "-v",
            &format!("{secret}:/etc/stormark:ro"),
            "-v",
            &format!("{tls}:/etc/stormark-tls:ro"),
            "-v",
            &format!("{bench}:/bench"),
            &podman.image,
            "agent",
            "--listen",
            &listen,
            "--token-file",
            "/etc/stormark/token",
            "--allow-path",
            "/bench",
            "--tls-cert",
            "/etc/stormark-tls/agent.pem",
            "--tls-key",
            "/etc/stormark-tls/agent.key",
        ],
    )
    .unwrap_or_else(|e| panic!("the agent's container: {e}"));
    wait_listening(&listen, "the agent's container");

    // The coordinator's init container waits until the agents' name resolves to AGENTS
    // addresses (here localhost, and one agent).
    let coordinator =
        std::fs::read_to_string(format!("{REPO}/deploy/kubernetes/base/coordinator.yaml")).unwrap();
    let out = podman.run(&[
        "--read-only",
        "--network",
        "host",
        "-e",
        "SERVICE=localhost",
        "-e",
        "AGENTS=1",
        "--entrypoint",
        "sh",
        &podman.image,
        "-c",
        &manifest_script(&coordinator, "wait-for-agents"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let t0 = std::time::Instant::now();
    let out = podman.run(&[
        "--read-only",
        "--network",
        "host",
        "-v",
        &format!("{secret}:/etc/stormark:ro"),
        "-v",
        &format!("{trust}:/etc/stormark-ca:ro"),
        "-v",
        &format!("{out_dir}:/results"),
        &podman.image,
        "run",
        "/bench",
        "--agents",
        &listen,
        "--token-file",
        "/etc/stormark/token",
        "--tls-ca",
        "/etc/stormark-ca/ca.pem",
        "--size",
        "8m",
        "--time",
        "3s",
        "--json",
        "/results/r.json",
    ]);
    eprintln!("coordinator container's 3 s run: {:?}", t0.elapsed());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\nagent: {}",
        text(&out),
        agent.logs()
    );
    let doc = read_json(&Path::new(&out_dir).join("r.json"));
    let run = phase(&doc, "run");
    let hosts = run["by_host"].as_object().expect("by_host");
    assert_eq!(hosts.len(), 1, "{run}");
    let (_, host) = hosts.iter().next().unwrap();
    assert!(host["total"]["ops"].as_u64().unwrap() > 0, "{host}");
    assert_eq!(host["total"]["ops"], run["total"]["ops"]);
    // The agent removed its run directory at the run's end.
    assert_eq!(entries(Path::new(&bench)), Vec::<String>::new());
    drop(agent);
}

/// The shell script of the container `name` of a manifest (its `args: - |` block).
fn manifest_script(manifest: &str, name: &str) -> String {
    let mut lines = manifest
        .lines()
        .skip_while(|l| l.trim() != format!("- name: {name}"))
        .skip_while(|l| l.trim() != "- |")
        .skip(1);
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("no script for {name}"));
    let indent = first.len() - first.trim_start().len();
    let mut script = vec![first.trim_start().to_string()];
    script.extend(
        lines
            .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
            .map(|l| l.get(indent..).unwrap_or("").to_string()),
    );
    script.join("\n")
}
