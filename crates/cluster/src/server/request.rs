//! A coordinator's validate request, read on the agent: its jobs resolved as this host's own
//! options, its target held to the agent's `--allow-path`, and what the run may do.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use stormark_spec::{Job, JobOpts, LoadKind, Source};
use tonic::Status;

use crate::agent::{NetPeer, NetPeers, TargetOptions};
use crate::config::{AgentConfig, ConfigError};
use crate::wire::pb;

/// The jobs, each resolved from its key/values as a job file's would be.
pub(super) fn jobs(req: &pb::ValidateRequest) -> Result<Vec<Job>, Status> {
    let mut jobs = Vec::new();
    for (i, spec) in req.jobs.iter().enumerate() {
        let mut opts = JobOpts::default();
        let context = format!("job {} from the coordinator", i + 1);
        let kind = match pb::LoadKind::try_from(spec.kind) {
            Ok(pb::LoadKind::File) => LoadKind::File,
            Ok(pb::LoadKind::Null) => LoadKind::Null,
            Ok(pb::LoadKind::S3) => LoadKind::S3,
            Ok(pb::LoadKind::Net) => LoadKind::Net,
            Ok(pb::LoadKind::Meta) => LoadKind::Meta,
            Err(_) => {
                return Err(Status::invalid_argument(format!(
                    "{context}: a kind of load this agent does not know ({}); run the same stormark version on both",
                    spec.kind
                )))
            }
        };
        opts.kind = Some(kind);
        for kv in &spec.options {
            opts.set(&kv.key, &kv.value, Source::Key(&context))
                .map_err(|e| Status::invalid_argument(e.to_string()))?;
        }
        jobs.push(
            opts.resolve(&format!("job{}", i + 1))
                .map_err(|e| Status::invalid_argument(e.to_string()))?,
        );
    }
    Ok(jobs)
}

/// The target: only file load touches a path, and then it must lie under an `--allow-path`
/// (a file to make: its directory); an iSCSI LUN must be one of the agent's `--allow-iscsi`,
/// an NFS share's directory one of its `--allow-nfs` or beneath one.
pub(super) fn target(
    cfg: &AgentConfig,
    req: &pb::ValidateRequest,
    jobs: &[Job],
) -> Result<PathBuf, Status> {
    if !jobs.iter().any(|j| j.kind.needs_target()) {
        return Ok(PathBuf::new());
    }
    match stormark_spec::Target::parse(Path::new(&req.target)) {
        // An iSCSI LUN: one the agent was told it may use, touching no path of the host.
        Ok(stormark_spec::Target::Lun(_)) => {
            return cfg
                .allowed_lun(&req.target)
                .map(|_| PathBuf::from(&req.target))
                .map_err(|e| Status::permission_denied(e.to_string()));
        }
        // An NFS share's directory: one the agent was told it may use.
        Ok(stormark_spec::Target::Share(_)) => {
            return cfg
                .allowed_share(&req.target)
                .map(|_| PathBuf::from(&req.target))
                .map_err(|e| Status::permission_denied(e.to_string()));
        }
        Err(e) => return Err(Status::invalid_argument(format!("TARGET: {e}"))),
        Ok(stormark_spec::Target::Path(_)) => {}
    }
    let asked = Path::new(&req.target);
    let denied = |e: ConfigError| Status::permission_denied(e.to_string());
    // The target is held to the allowed paths before anything else looks at it: one outside
    // them is refused in the same words whether it exists or not.
    let missing = match cfg.allowed(asked) {
        Ok(real) => return Ok(real),
        Err(e @ ConfigError::TargetMissing { .. }) => e,
        Err(e) => return Err(denied(e)),
    };
    match (req.create_file, asked.parent(), asked.file_name()) {
        // A file to make: its directory must be allowed (the name is made beneath it).
        (true, Some(parent), Some(name))
            if std::fs::symlink_metadata(asked).is_err() && !parent.as_os_str().is_empty() =>
        {
            Ok(cfg.allowed(parent).map_err(denied)?.join(name))
        }
        _ => Err(denied(missing)),
    }
}

/// What the run may do on this host, as the request says and the agent allows.
pub(super) fn target_options(
    cfg: &AgentConfig,
    req: &pb::ValidateRequest,
    target: PathBuf,
) -> TargetOptions {
    TargetOptions {
        path: target,
        keep: req.keep,
        reuse: req.reuse,
        allow_overwrite: req.allow_overwrite,
        allow_device_write: req.allow_device_write,
        force: req.force,
        allowed_devices: Some(cfg.devices.clone()),
        run: req.run.clone(),
        create_file: req.create_file,
        net_token: req.net_token.clone(),
        net_peers: None,
        s3: req.s3.as_ref().map(|a| crate::agent::S3Access {
            credentials: stormark_s3::Credentials {
                access_key: a.access_key.clone(),
                secret_key: a.secret_key.clone(),
            },
            create_bucket: a.create_bucket,
            insecure: a.insecure,
            endpoint: Some(a.endpoint.clone()).filter(|e| !e.is_empty()),
        }),
    }
}

/// The run's hosts for net jobs between its agents, checked: at most one per peer port an
/// agent opens, each an IP address, the token long enough.
pub(super) fn net_peers(req: &pb::ValidateRequest) -> Result<Option<NetPeers>, Status> {
    let Some(p) = &req.net_peers else {
        return Ok(None);
    };
    if p.ips.len() > crate::local::MAX_PEERS + 1 {
        return Err(Status::invalid_argument(format!(
            "{} hosts in a mesh (at most {})",
            p.ips.len(),
            crate::local::MAX_PEERS + 1
        )));
    }
    if p.token.len() < crate::MIN_TOKEN_LEN {
        return Err(Status::invalid_argument("a mesh token is too short"));
    }
    let ips = p
        .ips
        .iter()
        .map(|ip| {
            ip.parse::<IpAddr>()
                .map_err(|_| Status::invalid_argument(format!("peer {ip}: not an IP address")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(NetPeers {
        ips,
        token: p.token.clone(),
    }))
}

/// Where this host's streams to the run's agents go in a stage, checked.
pub(super) fn net_to(req: &pb::RunStageRequest) -> Result<Vec<NetPeer>, Status> {
    if req.net_to.len() > crate::local::MAX_PEERS {
        return Err(Status::invalid_argument("more peers than a mesh has"));
    }
    req.net_to
        .iter()
        .map(|p| {
            Ok(NetPeer {
                host: p.host,
                address: p.address.parse::<SocketAddr>().map_err(|_| {
                    Status::invalid_argument(format!("peer {}: expected IP:PORT", p.address))
                })?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 54: through an agent, a path outside its allowed list gets the same answer
    /// whether it exists or not, a file to make included.
    #[test]
    fn a_target_outside_gets_one_answer_whether_it_exists_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "0123456789abcdef0123\n").unwrap();
        let inside = dir.path().join("bench");
        std::fs::create_dir(&inside).unwrap();
        let cfg = AgentConfig::new(&token, std::slice::from_ref(&inside)).unwrap();
        let said = |target: &str, create_file: bool| {
            let req = pb::ValidateRequest {
                target: target.into(),
                create_file,
                jobs: vec![pb::JobSpec {
                    options: vec![],
                    kind: pb::LoadKind::File as i32,
                }],
                ..Default::default()
            };
            let jobs = jobs(&req).unwrap();
            let s = super::target(&cfg, &req, &jobs).unwrap_err();
            (s.code(), s.message().replace(target, "PATH"))
        };
        let shadow = said("/etc/passwd", false);
        assert_eq!(shadow.0, tonic::Code::PermissionDenied);
        assert!(
            shadow.1.contains("outside this agent's --allow-path"),
            "{shadow:?}"
        );
        for create_file in [false, true] {
            for p in [
                "/etc/passwd",
                "/etc/stormark-no-such-file",
                "/no-such-dir/f",
            ] {
                assert_eq!(said(p, create_file), shadow, "{p} {create_file}");
            }
        }
        // A file to make beneath an allowed directory is still made there.
        let req = pb::ValidateRequest {
            target: inside.join("new").display().to_string(),
            create_file: true,
            jobs: vec![pb::JobSpec {
                options: vec![],
                kind: pb::LoadKind::File as i32,
            }],
            ..Default::default()
        };
        let made = super::target(&cfg, &req, &jobs(&req).unwrap()).unwrap();
        assert_eq!(made, inside.canonicalize().unwrap().join("new"));
    }
}
