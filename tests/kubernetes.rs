//! Issue 57: the Kubernetes manifests (deploy/kubernetes: the kustomize base and its examples)
//! pass a validation against the Kubernetes API's own types, offline: deploy/kubernetes/validate
//! (Go, k8s.io/api, apimachinery's validation and kustomize's library, built here) builds each
//! kustomization and decodes every resource strictly. They use the image the repository's
//! Containerfile builds, at the workspace's version, and TLS from a Secret; manifests broken
//! in the ways a hand edit breaks them are refused, each named.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use stormark_testkit::{require_tool, skip, temp_dir, text};

const TMP: &str = env!("CARGO_TARGET_TMPDIR");
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The kustomizations a user applies, and the manifest applied alone.
const KUSTOMIZATIONS: &[&str] = &[
    "deploy/kubernetes/base",
    "deploy/kubernetes/examples/hostpath",
    "deploy/kubernetes/examples/s3",
    "deploy/kubernetes/examples/acceptance",
    // Not a kustomization: the pod that copies the results out.
    "deploy/kubernetes/reader.yaml",
];

/// The validator, built once per test process (Go's build cache keeps it across runs).
fn validator(test: &str) -> Option<PathBuf> {
    if !require_tool(test, "go") {
        return None;
    }
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let out = Path::new(TMP).join("k8s-validate");
        let t0 = std::time::Instant::now();
        let o = Command::new("go")
            .args(["build", "-o"])
            .arg(&out)
            .arg(".")
            .current_dir(format!("{REPO}/deploy/kubernetes/validate"))
            .output()
            .map_err(|e| e.to_string())?;
        eprintln!("validator built in {:?}", t0.elapsed());
        if o.status.success() {
            Ok(out)
        } else {
            Err(text(&o))
        }
    });
    match built {
        Ok(p) => Some(p.clone()),
        // The Go module proxy unreachable and the modules not in Go's cache: nothing to
        // validate with.
        Err(e) if e.contains("dial tcp") || e.contains("no such host") => {
            skip(
                test,
                &format!("the validator's Go modules cannot be fetched: {e}"),
            );
            None
        }
        Err(e) => panic!("building deploy/kubernetes/validate: {e}"),
    }
}

fn validate(bin: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(REPO)
        .output()
        .unwrap()
}

#[test]
fn the_kubernetes_manifests_pass_the_api_validation_and_use_the_image_and_tls() {
    let test = "the_kubernetes_manifests_pass_the_api_validation_and_use_the_image_and_tls";
    let Some(bin) = validator(test) else { return };
    let mut args = vec!["-print"];
    args.extend(KUSTOMIZATIONS);
    let out = validate(&bin, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains(&format!("valid: {}", KUSTOMIZATIONS.join(" "))),
        "{printed}"
    );
    // Every container runs the image the Containerfile builds, tagged with this version.
    let cargo = std::fs::read_to_string(format!("{REPO}/Cargo.toml")).unwrap();
    let version = cargo
        .lines()
        .find_map(|l| l.strip_prefix("version = "))
        .unwrap()
        .trim_matches('"');
    let images: Vec<&str> = printed
        .lines()
        .filter_map(|l| l.trim().strip_prefix("image: "))
        .collect();
    // Four containers a kustomization (the agent and its init, the coordinator and its
    // wait), the hostpath example's chown, the reader.
    assert_eq!(images.len(), 4 * 4 + 1 + 1, "{images:?}");
    let wanted = format!("localhost/stormark:{version}");
    assert!(images.iter().all(|i| *i == wanted), "{images:?}");
    // TLS in each kustomization: agents serve their certificate, the coordinator trusts the
    // CA of the Secret.
    for (what, n) in [
        ("--tls-cert=/tls/agent.pem", 4),
        ("--tls-ca=/etc/stormark-ca/ca.pem", 4),
        ("secretName: stormark-ca", 8),
        ("secretName: stormark-token", 8),
    ] {
        assert_eq!(printed.matches(what).count(), n, "{what}");
    }
}

#[test]
fn the_kubernetes_validator_refuses_broken_manifests() {
    let test = "the_kubernetes_validator_refuses_broken_manifests";
    let Some(bin) = validator(test) else { return };
    let dir = temp_dir(TMP);
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: stormark-agent\nspec:\n  completionMode: Indexed\n  completions: 2\n  parallelism: 2\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: agent\n          image: stormark\n";
    // The valid one passes: what the broken ones fail on is their own defect.
    let cases: &[(&str, String, &str)] = &[
        ("valid.yaml", job.to_string(), ""),
        (
            "unknown-field.yaml",
            job.replace("parallelism", "paralelism"),
            "unknown field \"paralelism\"",
        ),
        (
            "wrong-type.yaml",
            job.replace("completions: 2", "completions: two"),
            "cannot unmarshal string into Go struct field JobSpec.spec.completions of type int32",
        ),
        (
            "restart-policy.yaml",
            job.replace("Never", "Always"),
            "spec.template.spec.restartPolicy: Unsupported value: \"Always\"",
        ),
        (
            "two-sources.yaml",
            job.to_string()
                + "      volumes:\n        - name: bench\n          emptyDir: {}\n          hostPath:\n            path: /srv\n",
            "2 volume sources given: exactly one is allowed",
        ),
        (
            "bad-name.yaml",
            job.replace("name: stormark-agent", "name: Stormark_Agent"),
            "metadata.name: Invalid value: \"Stormark_Agent\"",
        ),
        (
            "unknown-kind.yaml",
            job.replace("kind: Job", "kind: Jobs"),
            "batch/v1 \"Jobs\": not a kind this validator knows",
        ),
    ];
    for (name, body, refused) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let out = validate(&bin, &[path.to_str().unwrap()]);
        if refused.is_empty() {
            assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
        } else {
            assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
            assert!(
                text(&out).contains(refused),
                "{name}: expected {refused:?} in {}",
                text(&out)
            );
        }
    }
    // An overlay whose agents outnumber what the coordinator waits for.
    let overlay = dir.path().join("overlay");
    std::fs::create_dir(&overlay).unwrap();
    // kustomize takes a base by a relative path only.
    let base = std::fs::canonicalize(format!("{REPO}/deploy/kubernetes/base")).unwrap();
    let up = "../".repeat(
        std::fs::canonicalize(&overlay)
            .unwrap()
            .components()
            .count()
            - 1,
    );
    let base = format!("{up}{}", base.strip_prefix("/").unwrap().display());
    std::fs::write(
        overlay.join("kustomization.yaml"),
        format!(
            "resources:\n  - {}\npatches:\n  - target:\n      kind: Job\n      name: stormark-agent\n    patch: |\n      - op: replace\n        path: /spec/completions\n        value: 5\n      - op: replace\n        path: /spec/parallelism\n        value: 5\n",
            base
        ),
    )
    .unwrap();
    let out = validate(&bin, &[overlay.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("waits for AGENTS=\"2\" agents, Job stormark-agent runs 5"),
        "{}",
        text(&out)
    );
}
