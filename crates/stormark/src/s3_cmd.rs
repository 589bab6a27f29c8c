//! `stormark s3`: an S3 workload run by the same machinery as `stormark run` (search, curves,
//! repetitions, results), with the keys resolved here and kept out of the workload.

use anyhow::Result;
use stormark_cluster::S3Access;
use stormark_s3::Credentials;

use crate::cli::{RunArgs, S3Args, WorkloadFlags};
use crate::{usage, Ending};

pub fn main(args: S3Args) -> Result<Ending> {
    let mut flags = vec![("kind", "s3".to_string())];
    let mut notes = Vec::new();
    // Declared before the run so that it outlives it: dropping it stops the server and
    // removes its directory.
    let _server;
    let credentials = if args.embedded {
        let (server, credentials) = embedded(&args, &mut flags, &mut notes)?;
        _server = server;
        credentials
    } else {
        keys(
            args.access_key.clone(),
            args.secret_key.clone(),
            args.aws_profile.clone(),
        )?
    };
    flags.extend(
        args.workload
            .0
            .iter()
            .filter(|(k, _)| !(args.embedded && *k == "bucket"))
            .cloned(),
    );
    let access = S3Access {
        credentials,
        create_bucket: args.create_bucket,
        insecure: args.insecure,
        endpoint: None,
    };
    if let Some(id) = &args.remove_run {
        return remove_run(flags, &access, id);
    }
    let run = RunArgs {
        workload: WorkloadFlags::from_pairs(flags),
        keep: args.keep,
        job: args.job,
        shape: args.shape,
        output: args.output,
        distributed: args.distributed,
        host_endpoints: args.host_endpoint,
        notes,
        s3: Some(access),
        ..RunArgs::default()
    };
    crate::run::main(run)
}

/// `--remove-run ID`: the objects of run ID, every host's, removed; no load.
fn remove_run(flags: Vec<(&'static str, String)>, access: &S3Access, id: &str) -> Result<Ending> {
    let request = stormark_plan::request(&stormark_plan::RequestOptions {
        flags,
        current_dir: std::env::current_dir()?,
        ..Default::default()
    })
    .map_err(usage)?;
    let (removed, shown, notes) =
        stormark_cluster::remove_run_objects(&request.workload, access, id)
            .map_err(|e| usage(e.to_string()))?;
    outln!("removed {removed} objects under {shown}");
    for note in &notes {
        eprintln!("{note}");
    }
    Ok(if notes.is_empty() {
        Ending::Success
    } else {
        Ending::Failed
    })
}

/// `--embedded`: the server started, its endpoint and bucket among the flags, its keys.
#[cfg(feature = "embedded-s3")]
fn embedded(
    args: &S3Args,
    flags: &mut Vec<(&'static str, String)>,
    notes: &mut Vec<String>,
) -> Result<(stormark_s3::EmbeddedServer, Credentials)> {
    let given = |key: &str| args.workload.0.iter().find(|(k, _)| *k == key);
    if given("endpoint").is_some() || !args.host_endpoint.is_empty() {
        return Err(usage(
            "--embedded serves its own endpoint: leave out --endpoint and --host-endpoint",
        ));
    }
    if args.access_key.is_some() || args.secret_key.is_some() || args.aws_profile.is_some() {
        return Err(usage(
            "--embedded makes its own keys: leave out --access-key, --secret-key and --aws-profile",
        ));
    }
    let bucket = given("bucket").map_or_else(|| EMBEDDED_BUCKET.to_string(), |(_, b)| b.clone());
    let listen = args
        .embedded_listen
        .unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    if listen.ip().is_unspecified() {
        return Err(usage(format!(
            "--embedded-listen {listen}: give an address the clients can connect to, such as 127.0.0.1:9000 or this host's address"
        )));
    }
    let server = stormark_s3::EmbeddedServer::start(listen, &std::env::temp_dir(), &bucket)
        .map_err(|e| usage(e.to_string()))?;
    if !args.output.quiet {
        eprintln!(
            "embedded S3 server at {} on {}",
            server.endpoint(),
            server.dir().display()
        );
    }
    notes.push(format!(
        "the figures are of stormark's embedded S3 server (s3s-fs on {}, in the client's own process and CPUs), not of a storage service",
        server.dir().display()
    ));
    flags.push(("endpoint", server.endpoint().to_string()));
    flags.push(("bucket", bucket));
    let credentials = server.credentials().clone();
    Ok((server, credentials))
}

/// `--embedded` in a stormark built without the server.
#[cfg(not(feature = "embedded-s3"))]
fn embedded(
    _: &S3Args,
    _: &mut Vec<(&'static str, String)>,
    _: &mut Vec<String>,
) -> Result<((), Credentials)> {
    Err(usage(
        "--embedded: this stormark was built without its embedded S3 server; build it with `cargo build --release --locked --features embedded-s3`, or give --endpoint of a service",
    ))
}

/// The bucket of `--embedded` unless `--bucket` names one.
#[cfg(feature = "embedded-s3")]
const EMBEDDED_BUCKET: &str = "stormark";

/// The keys: flags, else the environment, else a profile of the shared credentials file.
fn keys(
    access_key: Option<String>,
    secret_key: Option<String>,
    aws_profile: Option<String>,
) -> Result<Credentials> {
    stormark_s3::find_credentials(access_key, secret_key, aws_profile).map_err(usage)
}
