//! An iSCSI LUN as the target (`iscsi://HOST[:PORT]/IQN/LUN`): measured from user space over
//! the workers' own sessions, no kernel initiator, no block device. Its size and block size
//! come from a login before any load (READ CAPACITY(16)); writes need `--allow-device-write`,
//! as a local device's do; what stormark cannot do over iSCSI yet is refused in one line.

use std::path::Path;
use std::sync::Arc;

use stormark_engine::Backend;
use stormark_iscsi::{Chap, Session, Url};
use stormark_spec::units::format_size;
use stormark_spec::Workload;

use super::planning::Existing;
use super::service::Service;
use super::{push_once, LocalAgent, Where};
use crate::agent::{AgentError, Validated};

/// A LUN the run uses: where, and the login's credentials.
#[derive(Debug, Clone)]
pub(crate) struct Lun {
    pub url: Arc<Url>,
    pub chap: Option<Arc<Chap>>,
    /// Where this host's slice of the LUN starts (several hosts share it).
    pub base: u64,
}

impl LocalAgent {
    /// Plans every job of `workload` on the LUN `target` names: a login to learn its size,
    /// each job's workers placed on it as on a block device.
    pub(super) fn plan_lun(
        &mut self,
        workload: &Workload,
        target: &str,
        v: &mut Validated,
    ) -> Result<(), AgentError> {
        let url = Url::parse(target).map_err(|e| AgentError::option("TARGET", e.to_string()))?;
        stormark_iscsi::available().map_err(|e| AgentError::option("TARGET", e))?;
        let mut warnings = Vec::new();
        let chap = Chap::from_env(&mut warnings).map_err(|e| AgentError::option("TARGET", e))?;
        for w in warnings {
            push_once(&mut v.notes, w);
        }
        let shown = url.to_string();
        let session = Session::connect(&url, chap.as_ref())
            .map_err(|e| AgentError::target(&shown, login_failure(&e.to_string())))?;
        let (capacity, lbs) = (session.capacity(), u64::from(session.block_size()));
        drop(session);
        // Several hosts on one LUN: each its own slice, so that their writes never meet (a
        // check of one host's blocks would find the other's).
        let hosts = u64::from(self.hosts.max(1));
        let align = if capacity / hosts >= 1 << 20 {
            1 << 20
        } else {
            lbs
        };
        let total = capacity / hosts / align * align;
        let base = self.index.min(hosts - 1) * total;
        if total < lbs {
            return Err(AgentError::target(
                &shown,
                format!(
                    "holds {} bytes, too few to share among {hosts} hosts",
                    capacity
                ),
            ));
        }
        self.stages.clear();
        for stage in workload.stages() {
            let mut runs = Vec::new();
            for job in stage {
                // What the job asks of this host, as on any target (not its engine: every
                // worker of a LUN runs iSCSI commands), and of the LUN.
                let service = Service {
                    name: "iSCSI",
                    takes: "block I/O",
                    shown: &shown,
                };
                service.check(job, &mut v.notes)?;
                if job.rw.trims() && job.verify {
                    return Err(service.not_yet(job, "--verify with trims (UNMAP)"));
                }
                if job.read_pct() < 100 && !self.opts.allow_device_write {
                    return Err(AgentError::target(
                        &shown,
                        "this workload writes to the LUN, destroying its data; add --allow-device-write if that is intended",
                    ));
                }
                unaligned(job, lbs, &shown)?;
                let on = Existing {
                    path: Path::new(&shown),
                    shown: &shown,
                    total,
                    block: true,
                    lbs,
                };
                let mut run = on.job_run(job, Backend::Iscsi, &mut v.notes)?;
                // Nothing caches between the worker and the target: every command goes to it.
                run.direct = true;
                runs.push(run);
            }
            self.stages.push(runs);
        }
        push_once(
            &mut v.notes,
            format!(
                "{shown}: {} in {lbs}-byte blocks, each worker its own iSCSI session",
                format_size(capacity)
            ),
        );
        if hosts > 1 {
            push_once(
                &mut v.notes,
                format!(
                    "{shown}: this host works on its {} from {} (host {} of {hosts}, each its own slice)",
                    format_size(total),
                    format_size(base),
                    self.index + 1
                ),
            );
        }
        v.target = Some(stormark_stats::Target {
            path: shown.clone(),
            kind: "iscsi-lun".into(),
            run_dir: None,
            kept: false,
            device: None,
            fs_type: None,
        });
        self.place = Some(Where::Lun(Lun {
            url: Arc::new(url),
            chap: chap.map(Arc::new),
            base,
        }));
        Ok(())
    }
}

/// Every command on a LUN moves whole blocks: an I/O size, alignment or offset of `job` that
/// is not a multiple of the LUN's `lbs`-byte blocks is refused before any load (it failed
/// mid-run, command after command), naming the option and the form accepted.
fn unaligned(job: &stormark_spec::Job, lbs: u64, shown: &str) -> Result<(), AgentError> {
    let split = job.bs_split.iter().flat_map(|s| s.entries());
    let sizes = [
        ("--bs", job.bs.to_string(), job.bs.min),
        ("--bs", job.bs.to_string(), job.bs.max),
        ("--bs-align", format_size(job.bs_align), job.bs_align),
        ("--offset", format_size(job.offset), job.offset),
        (
            "--offset-increment",
            format_size(job.offset_increment),
            job.offset_increment,
        ),
    ]
    .into_iter()
    .chain(split.map(|&(b, _)| ("--bssplit", format_size(b), b)));
    for (option, value, bytes) in sizes {
        if !bytes.is_multiple_of(lbs) {
            let near = bytes.div_ceil(lbs) * lbs;
            return Err(AgentError::option(
                format!("{option} {value}"),
                format!(
                    "{shown} has {lbs}-byte blocks and every command moves whole blocks: expected a multiple of {lbs} (such as {})",
                    format_size(near)
                ),
            ));
        }
    }
    Ok(())
}

/// libiscsi's login failure in a user's words, with what to check.
fn login_failure(why: &str) -> String {
    let lower = why.to_ascii_lowercase();
    let hint = if lower.contains("authentication") || lower.contains("chap") {
        "check STORMARK_ISCSI_USER and STORMARK_ISCSI_SECRET (or STORMARK_ISCSI_CHAP_FILE)"
    } else if lower.contains("not found")
        || lower.contains("target")
        || lower.contains("logical_unit")
    {
        "check the IQN and LUN (iscsi-ls iscsi://HOST lists a portal's targets)"
    } else {
        "check the portal's address and port, and that it serves iSCSI"
    };
    format!("cannot log in: {why}; {hint}")
}
