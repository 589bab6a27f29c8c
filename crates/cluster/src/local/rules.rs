//! Whether an existing file or block device may be used as a target: the safety rules checked
//! before any load, on the node that was opened (not on its name).

use std::fs::File;
use std::path::Path;

use stormark_engine::Identity;
use stormark_probe::{device_in_use, file_in_use, fs_signature, TargetKind};

use crate::agent::{AgentError, TargetOptions};

/// What was opened at `path`, checked against the rules for a workload that writes or not.
/// Returns the identity the engine must find again when it opens the target.
pub(super) fn check_existing(
    opts: &TargetOptions,
    path: &Path,
    kind: &TargetKind,
    writes: bool,
) -> Result<Identity, AgentError> {
    let refused = |m: String| AgentError::target(path, m);
    let refuse = |m: &str| AgentError::target(path, m);
    let file = File::open(path).map_err(|e| refused(format!("cannot open it: {e}")))?;
    let id = Identity::of(&file).map_err(|e| refused(format!("{e}")))?;
    let block = matches!(kind, TargetKind::BlockDevice { .. });
    match (id, kind) {
        (Identity::File { .. }, TargetKind::File { .. })
        | (Identity::Device { .. }, TargetKind::BlockDevice { .. }) => {}
        _ => return Err(refuse("changed while it was being examined; try again")),
    }
    if let (Identity::Device { rdev }, Some(allowed)) = (id, &opts.allowed_devices) {
        // An agent: a device node under an allowed directory (made with mknod) names a real
        // device; only devices the agent itself allows by `--allow-device` may be used.
        if !allowed.contains(&rdev) {
            return Err(refused(format!(
                "a block device ({}:{}) this agent does not allow; start the agent with --allow-device naming it",
                libc::major(rdev),
                libc::minor(rdev)
            )));
        }
    }
    if !writes {
        return Ok(id);
    }
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        return Err(refused(format!(
            "cannot open it for writing ({e}); run a read workload or fix its permissions"
        )));
    }
    match id {
        Identity::File { dev, ino } => {
            if !opts.allow_overwrite {
                return Err(refuse("this workload writes, and stormark did not create this file; add --allow-overwrite to overwrite its data"));
            }
            if let Some(why) = file_in_use(dev, ino) {
                return Err(refused(format!(
                    "{why}; stormark never writes to a file in use"
                )));
            }
        }
        Identity::Device { rdev } => {
            if !opts.allow_device_write {
                return Err(refuse("this workload writes to a block device, destroying its data; add --allow-device-write if that is intended"));
            }
            if let Some(why) = device_in_use(path, rdev) {
                return Err(refused(format!(
                    "{why}; stormark never writes to a device in use"
                )));
            }
            if let Some(sig) = fs_signature(path)? {
                if !opts.force {
                    return Err(refused(format!(
                        "holds a {sig} signature; add --force to overwrite it anyway"
                    )));
                }
            }
            if read_only(&file) {
                return Err(refuse(
                    "the device is read-only; run a read workload (--rw read or randread)",
                ));
            }
        }
    }
    debug_assert!(block == matches!(id, Identity::Device { .. }));
    Ok(id)
}

/// Whether a block device is read-only (`BLKROGET`).
fn read_only(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // From linux/fs.h: _IO(0x12, 94).
    const BLKROGET: libc::c_ulong = 0x125e;
    let mut ro: libc::c_int = 0;
    // SAFETY: BLKROGET writes an int into the pointer given; the descriptor is open.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), BLKROGET, &mut ro) };
    r == 0 && ro != 0
}

/// fio's io_uring options (`fixedbufs`, `registerfiles`, `sqthread_poll`, `hipri`): refused
/// before any load where the job does not run on io_uring, where this kernel refuses the ring
/// asked for, or (`hipri`) where the I/O is not direct or the device under `target` has no
/// poll queues, whose I/Os would each fail.
pub(super) fn check_ring(
    job: &stormark_spec::Job,
    backend: stormark_engine::Backend,
    target: &Path,
) -> Result<(), AgentError> {
    let ring = job.ring;
    let Some((key, _)) = ring.keys().into_iter().find(|(_, on)| *on) else {
        return Ok(());
    };
    let refuse = |why: String| AgentError::job(&job.name, format!("{key}: {why}"));
    if backend != stormark_engine::Backend::IoUring {
        let why = if job.rw.trims() {
            "an io_uring option; trims run one at a time by psync: leave it out".to_string()
        } else {
            format!(
                "an io_uring option, and this job runs {}: give --engine io_uring",
                backend.name()
            )
        };
        return Err(refuse(why));
    }
    if ring.fixed_bufs && job.atomic {
        return Err(refuse(
            "atomic writes need a buffer of one segment, which registered buffers are not \
             (the kernel says EINVAL): leave out fixedbufs or atomic"
                .to_string(),
        ));
    }
    stormark_engine::io_uring_features_ok(ring)
        .map_err(|e| refuse(format!("this kernel refuses it ({e})")))?;
    if ring.hipri {
        if job.direct != stormark_spec::Direct::Yes {
            return Err(AgentError::job(
                &job.name,
                "hipri: polled completions are for direct I/O only: give --direct",
            ));
        }
        let media = stormark_probe::target_media(target);
        let device = media.device.unwrap_or_default();
        let polls = std::fs::read_to_string(format!("/sys/block/{device}/queue/io_poll"))
            .is_ok_and(|v| v.trim() == "1");
        if !polls {
            let on = if device.is_empty() {
                "no block device".to_string()
            } else {
                format!("{device}, which has no poll queues (queue/io_poll is 0; NVMe's poll_queues module option makes some)")
            };
            return Err(AgentError::job(
                &job.name,
                format!("hipri: polled completions need a device with poll queues; this target is on {on}"),
            ));
        }
    }
    Ok(())
}
