//! The agents of a distributed run: named (`--agents`, `--agents-file`) or launched for the
//! run (`--launch`), with the token, TLS and each host's target. Every mistake is a user
//! error, before any load.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Result;
use stormark_cluster::{read_regular, read_token, Fleet, LaunchError, LaunchOptions, Launched};
use stormark_plan::{hosts, HostsOptions};

use crate::cli::RunArgs;
use crate::usage;

/// The largest agents file read (a hostfile of thousands of lines is well under it).
const AGENTS_FILE_LIMIT: u64 = 16 << 20;

/// The agents of a run, and the launcher that started them, if one did: it is ended (its
/// agents with it) when this is dropped.
pub struct Agents {
    pub fleet: Fleet,
    pub launched: Option<Launched>,
}

/// `--agents`/`--agents-file` or `--launch`, `--token-file`, `--tls-ca` and `--target
/// HOST=PATH`; `None` for a local run. `target` is the run's TARGET (a launched agent may use
/// it), `default_target` every agent's unless `--target` names another; `runs` the
/// repetitions each launched agent serves; `stop` ends the wait for launched agents (Ctrl-C).
pub fn agents(
    args: &RunArgs,
    target: &Path,
    default_target: Option<&PathBuf>,
    runs: u32,
    stop: &AtomicBool,
) -> Result<Option<Agents>> {
    let d = &args.distributed;
    let agents_file = match &d.agents_file {
        Some(path) => Some((
            path.display().to_string(),
            crate::read_limited(path, AGENTS_FILE_LIMIT, "an agents file").map_err(|e| {
                usage(format!(
                    "--agents-file {}: cannot read it: {e}",
                    path.display()
                ))
            })?,
        )),
        None => None,
    };
    let mut distributed_only = Vec::new();
    for (given, name) in [
        (d.token_file.is_some(), "--token-file"),
        (!args.target_map.is_empty(), "--target"),
        (d.on_agent_failure.is_some(), "--on-agent-failure"),
        (d.max_failed_agents.is_some(), "--max-failed-agents"),
        (d.tls_ca.is_some(), "--tls-ca"),
        (!args.host_endpoints.is_empty(), "--host-endpoint"),
    ] {
        if given {
            distributed_only.push(name);
        }
    }
    let tls_ca = match &d.tls_ca {
        Some(p) => Some(
            read_regular(
                p,
                "--tls-ca",
                stormark_cluster::PEM_LIMIT,
                "a PEM file of the CA that signed the agents' certificates",
            )
            .map_err(|e| usage(e.to_string()))?,
        ),
        None => None,
    };
    // One token for this run's launched agents, made here and given to them through the
    // launcher's environment.
    let launch_token = d.launch.as_ref().map(|_| stormark_cluster::one_run_token());
    let launched = match (&d.launch, &launch_token) {
        (Some(command), Some(token)) => Some(launch(args, command, token, target, runs, stop)?),
        _ => None,
    };
    let Some(hosts) = hosts(&HostsOptions {
        agents: match &launched {
            Some(l) => Some(
                l.agents
                    .iter()
                    .map(|a| a.address.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            None => d.agents.clone(),
        },
        agents_file,
        targets: args.target_map.clone(),
        endpoints: args.host_endpoints.clone(),
        default_target: default_target.cloned(),
        distributed_only,
    })
    .map_err(usage)?
    else {
        return Ok(None);
    };
    let token = match (launch_token, &d.token_file) {
        (Some(token), _) => token,
        (None, Some(file)) => read_token(file).map_err(|e| usage(e.to_string()))?,
        (None, None) => {
            return Err(usage(
                "--agents needs --token-file FILE holding the agents' shared token",
            ))
        }
    };
    Ok(Some(Agents {
        fleet: Fleet {
            token,
            tls_ca,
            hosts,
        },
        launched,
    }))
}

/// Starts `--launch`'s launcher with the agent's command appended and waits for every agent
/// it started to report.
fn launch(
    args: &RunArgs,
    command: &str,
    token: &str,
    target: &Path,
    runs: u32,
    stop: &AtomicBool,
) -> Result<Launched> {
    let d = &args.distributed;
    for (given, name) in [
        (!args.target_map.is_empty(), "--target HOST=PATH"),
        (!args.host_endpoints.is_empty(), "--host-endpoint"),
    ] {
        if given {
            return Err(usage(format!(
                "{name} goes with --agents: launched agents are known only once they run, and each uses TARGET (leave out {name}, or start the agents yourself)"
            )));
        }
    }
    let wait = match d.launch_wait.as_deref() {
        None => Duration::from_secs(60),
        Some(t) => stormark_spec::parse_duration(t)
            .filter(|w| !w.is_zero())
            .ok_or_else(|| {
                usage(format!(
                    "--launch-wait {t}: expected a duration such as 60s or 5m"
                ))
            })?,
    };
    if let Some(net) = &d.launch_net {
        net.parse::<stormark_cluster::Net>().map_err(usage)?;
    }
    let shown = target.display().to_string();
    if !matches!(
        stormark_spec::Target::parse(target),
        Ok(stormark_spec::Target::Path(_))
    ) {
        return Err(usage(format!(
            "--launch: {shown} is not a path; launched agents serve a directory, file or device (an iSCSI or NFS target needs agents started with --allow-iscsi or --allow-nfs, given by --agents)"
        )));
    }
    // The agent may use TARGET itself, or its directory when TARGET is a file still to make.
    let absolute = std::path::absolute(target)
        .map_err(|e| usage(format!("{shown}: cannot make it absolute: {e}")))?;
    let allow = if absolute.exists() {
        absolute
    } else {
        absolute.parent().map(Path::to_path_buf).unwrap_or(absolute)
    };
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find this program's own path: {e}"))?;
    let mut agent: Vec<std::ffi::OsString> = vec![
        exe.into(),
        "agent".into(),
        "--launched".into(),
        "--coordinator".into(),
        stormark_cluster::coordinator_address().to_string().into(),
        "--allow-path".into(),
        allow.into(),
        "--runs".into(),
        runs.to_string().into(),
        "--contact-within".into(),
        (wait.as_secs() + 30).to_string().into(),
    ];
    if let Some(net) = &d.launch_net {
        agent.extend(["--launch-net".into(), net.into()]);
    }
    // TLS: each agent serves the certificate `stormark cert agent` made for its host beside
    // the CA (DIR/HOST.pem, DIR/HOST.key), which must name the address it listens on.
    if let Some(ca) = &d.tls_ca {
        let dir = std::path::absolute(ca)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .ok_or_else(|| {
                usage(format!(
                    "--tls-ca {}: cannot find its directory",
                    ca.display()
                ))
            })?;
        agent.extend(["--tls-dir".into(), dir.into()]);
    }
    let opts = LaunchOptions {
        command: command.to_string(),
        agent,
        token: token.to_string(),
        wait,
    };
    let launched = Launched::start(&opts, stop).map_err(|e| match e {
        LaunchError::Interrupted => anyhow::anyhow!("{e}"),
        e => usage(e.to_string()),
    })?;
    // An agent on another host that found only a loopback address cannot be reached.
    let here = stormark_cluster::host_name();
    if let Some(a) = launched
        .agents
        .iter()
        .find(|a| a.address.ip().is_loopback() && a.host != here)
    {
        return Err(usage(format!(
            "--launch: agent {} on {} listens on {}, which this host ({here}) cannot reach; give --launch-net, the network the hosts share (such as 10.0.0.0/16)",
            a.rank, a.host, a.address
        )));
    }
    Ok(launched)
}
