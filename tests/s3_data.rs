//! Issue 18 with issue 21's data: what S3 PUTs carry (unique and incompressible by default,
//! or as compressible and dedupable as asked, read back with curl and measured with real
//! compressors), `--verify` over such data, and S3 jobs beside file jobs in one job file run
//! by `stormark run`; `--curve`, `--repeat` and `stormark compare` on S3 runs; a client clock
//! an hour off. Against a real MinIO started by the test.

use std::process::Command;

use stormark_testkit::{compression_ratio, read_json, temp_dir, text, unique_blocks, Bin, Minio};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// Runs `stormark s3` against `m`'s `bucket`, keeping what it wrote, and reads every object
/// back with curl, concatenated in key order (each a whole number of 4 KiB blocks).
fn kept_objects(m: &Minio, bucket: &str, extra: &[&str]) -> Vec<u8> {
    let dir = temp_dir(TMP);
    let mut args = vec![
        "--op-mix",
        "put",
        "--obj-size",
        "64k",
        "--ops",
        "64",
        "--concurrency",
        "2",
        "--keep",
    ];
    args.extend_from_slice(extra);
    let (code, out) = s3_run(m, bucket, &dir.path().join("r.json"), &args);
    assert_eq!(code, 0, "{out}");
    let keys = m.objects(bucket, "stormark/");
    assert_eq!(keys.len(), 64, "{keys:?}");
    keys.iter().flat_map(|k| m.get(bucket, k)).collect()
}

const COMPRESSORS: [&str; 3] = ["zstd", "lz4", "gzip"];

#[test]
fn put_bodies_are_unique_and_incompressible_or_shaped_as_asked() {
    let m = Minio::start(TMP);
    // By default every 4 KiB block of every object differs (before, every PUT sent the same
    // bytes: a deduplicating or compressing store stored one object's worth) and no
    // compressor gains more than the stamps.
    let plain = kept_objects(&m, "plain", &[]);
    assert_eq!(plain.len(), 64 << 16);
    assert_eq!(unique_blocks(&plain), plain.len() / 4096);
    for c in COMPRESSORS {
        let ratio = compression_ratio(c, &plain);
        eprintln!("default: {c} {ratio:.3}x");
        assert!((1.0..1.05).contains(&ratio), "{c} {ratio:.3}x");
    }
    // --compress-ratio 4: what real compressors find, within 15%.
    let squeezable = kept_objects(&m, "squeeze", &["--compress-ratio", "4"]);
    assert_eq!(unique_blocks(&squeezable), squeezable.len() / 4096);
    for c in COMPRESSORS {
        let ratio = compression_ratio(c, &squeezable);
        eprintln!("--compress-ratio 4: {c} {ratio:.3}x");
        assert!((ratio / 4.0 - 1.0).abs() <= 0.15, "{c} {ratio:.3}x");
    }
    // --dedup-ratio 2: written blocks over distinct blocks, within 5%.
    let dup = kept_objects(&m, "dedup", &["--dedup-ratio", "2"]);
    let ratio = (dup.len() / 4096) as f64 / unique_blocks(&dup) as f64;
    eprintln!("--dedup-ratio 2: {ratio:.3}");
    assert!((ratio / 2.0 - 1.0).abs() <= 0.05, "dedup {ratio:.3}");
}

#[test]
fn verify_reads_back_shaped_data_without_a_false_mismatch() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let json = dir.path().join("r.json");
    let (code, out) = s3_run(
        &m,
        "shaped",
        &json,
        &[
            "--op-mix",
            "put=30,get=70",
            "--obj-size",
            "1k-200k",
            "--objects",
            "30",
            "--get-range",
            "10k",
            "--compress-ratio",
            "2",
            "--dedup-ratio",
            "1.5",
            "--verify",
            "--ops",
            "300",
            "--concurrency",
            "3",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let doc = read_json(&json);
    let run = doc["phases"].as_array().unwrap().last().unwrap();
    assert!(run["by_op"]["get"]["ops"].as_u64().unwrap() > 100, "{run}");
    assert_eq!(run["errors"].as_array().map_or(0, Vec::len), 0, "{run}");
    assert_eq!(m.objects("shaped", "stormark/"), Vec::<String>::new());
}

#[test]
fn run_takes_a_job_file_with_file_and_s3_jobs_in_one_stage() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    // The bucket made beforehand: `stormark run` has no --create-bucket.
    let made = Command::new("curl")
        .args([
            "-sf",
            "-X",
            "PUT",
            "--aws-sigv4",
            "aws:amz:us-east-1:s3",
            "--user",
        ])
        .arg(format!("{}:{}", m.access_key, m.secret_key))
        .arg(format!("{}/beside", m.endpoint))
        .status()
        .unwrap();
    assert!(made.success());
    let job = dir.path().join("both.toml");
    std::fs::write(
        &job,
        format!(
            "time = \"2s\"\n\n\
             [[job]]\nname = \"disk\"\ngroup = \"together\"\nrw = \"randrw\"\nbs = \"4k\"\nsize = \"8m\"\n\n\
             [[job]]\nname = \"objects\"\ngroup = \"together\"\nkind = \"s3\"\nendpoint = \"{}\"\n\
             bucket = \"beside\"\nop_mix = \"put=50,get=50\"\nobj_size = \"8k\"\nobjects = 10\njobs = 2\n",
            m.endpoint
        ),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let run = |env: &[(&str, &str)]| {
        let mut c = Command::new(BIN);
        c.args([
            "run",
            "--job",
            job.to_str().unwrap(),
            target.to_str().unwrap(),
        ])
        .args(["-q", "--json", json.to_str().unwrap()])
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_PROFILE")
        .env("HOME", dir.path());
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    // Without keys: one line naming where they come from, before any load.
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("AWS_ACCESS_KEY_ID"), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    // With the keys in the environment, both jobs run at once.
    let out = run(&[
        ("AWS_ACCESS_KEY_ID", &m.access_key),
        ("AWS_SECRET_ACCESS_KEY", &m.secret_key),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&json);
    let phase = doc["phases"].as_array().unwrap().last().unwrap();
    let ops = |job: &str, op: &str| {
        phase["by_job"][job]["by_op"][op]["ops"]
            .as_u64()
            .unwrap_or(0)
    };
    for (job, op) in [
        ("disk", "read"),
        ("disk", "write"),
        ("objects", "put"),
        ("objects", "get"),
    ] {
        assert!(ops(job, op) > 0, "{job} {op}: {phase}");
    }
    assert_eq!((ops("disk", "get"), ops("objects", "read")), (0, 0));
    // Everything it made is gone: the run directory and every object.
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    assert_eq!(m.objects("beside", "stormark/"), Vec::<String>::new());
    assert!(!std::fs::read_to_string(&json)
        .unwrap()
        .contains(&m.secret_key));
}

/// `stormark s3` against `m`'s `bucket` with `extra`, results in `json`: exit code and output.
fn s3_run(m: &Minio, bucket: &str, json: &std::path::Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec![
        "s3",
        "--endpoint",
        &m.endpoint,
        "--bucket",
        bucket,
        "--access-key",
        &m.access_key,
        "--secret-key",
        &m.secret_key,
        "--create-bucket",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = Bin(BIN).run(&args);
    (out.status.code().unwrap_or(-1), text(&out))
}

#[test]
fn curve_repetitions_and_compare_run_s3_workloads_as_file_runs() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let small = [
        "--op-mix",
        "get",
        "--obj-size",
        "4k",
        "--objects",
        "20",
        "--concurrency",
        "2",
    ];
    // --curve: the closed-loop maximum, then open-loop points at shares of it, every object
    // removed after.
    let curve = dir.path().join("curve.json");
    let mut args = small.to_vec();
    args.extend(["--time", "2s", "--curve", "25,50"]);
    let (code, out) = s3_run(&m, "curve", &curve, &args);
    assert_eq!(code, 0, "{out}");
    let doc = read_json(&curve);
    let points = doc["curve"]["points"].as_array().unwrap();
    let max = doc["curve"]["max_iops"].as_f64().unwrap();
    assert_eq!(points.len(), 3, "{}", doc["curve"]);
    for (p, share) in points[1..].iter().zip([0.25, 0.5]) {
        let asked = p["rate_iops"].as_f64().unwrap();
        assert!((asked / (max * share) - 1.0).abs() < 0.01, "{p}");
        // An open loop below the maximum does what it was asked.
        let got = p["iops"].as_f64().unwrap();
        assert!((got / asked - 1.0).abs() < 0.1, "asked {asked}, got {got}");
    }
    assert_eq!(m.objects("curve", "stormark/"), Vec::<String>::new());
    // --repeat 3 twice, then compare: one row per figure of the GETs, each with a verdict.
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    for j in [&a, &b] {
        let mut args = small.to_vec();
        args.extend(["--time", "1s", "--repeat", "3"]);
        let (code, out) = s3_run(&m, "reps", j, &args);
        assert_eq!(code, 0, "{out}");
        let doc = read_json(j);
        let runs = doc["phases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["kind"] == "run")
            .count();
        assert_eq!(runs, 3, "three repetitions");
    }
    let rows = dir.path().join("rows.json");
    let out = Bin(BIN).run(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--json",
        rows.to_str().unwrap(),
    ]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let rows = read_json(&rows);
    let rows = rows[0]["rows"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|r| r["op"] == "get" && r["verdict"].as_str().is_some()),
        "{rows:?}"
    );
    assert_eq!(m.objects("reps", "stormark/"), Vec::<String>::new());
}

#[test]
fn a_client_clock_an_hour_off_is_named_before_any_load() {
    // stormark's clock moved an hour ahead (libfaketime), the real MinIO's not: S3 refuses
    // such signatures as if the keys were wrong; the preflight says what is wrong instead.
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let json = dir.path().join("r.json");
    let out = Command::new("faketime")
        .args([
            "-f",
            "+1h",
            BIN,
            "s3",
            "--endpoint",
            &m.endpoint,
            "--bucket",
            "skew",
        ])
        .args(["--access-key", &m.access_key, "--secret-key", &m.secret_key])
        .args([
            "--create-bucket",
            "--op-mix",
            "put",
            "--ops",
            "5",
            "-q",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("faketime (Debian's faketime) runs");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(
        said.contains("clock differs from the service's by 3600 s")
            || said.contains("clock differs from the service's by 3599 s"),
        "{said}"
    );
    assert!(said.contains("NTP"), "{said}");
    // Nothing was written: the bucket was never made.
    assert!(!m.data.path().join("skew").exists());
}
