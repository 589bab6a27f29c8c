//! Where a worker runs and where its memory comes from: fio's `cpus_allowed` (and
//! `cpumask`), `cpus_allowed_policy=split`, `numa_cpu_nodes` and `numa_mem_policy`, settled
//! from this host's CPUs and NUMA nodes and applied to the worker's own thread before it
//! allocates its buffers.

use std::path::Path;

use stormark_spec::{CpuList, MemPolicy, Placement};

/// The numbers of a kernel list file (`0-3,8`), or `None` when it cannot be read.
fn read_list(path: &Path) -> Option<Vec<u16>> {
    let text = std::fs::read_to_string(path).ok()?;
    if text.trim().is_empty() {
        return Some(Vec::new());
    }
    CpuList::parse(&text).map(|l| l.0)
}

/// This host's online CPUs.
pub fn online_cpus() -> Vec<u16> {
    read_list(Path::new("/sys/devices/system/cpu/online")).unwrap_or_default()
}

/// This host's NUMA nodes (a host without the NUMA files has node 0).
pub fn nodes() -> Vec<u16> {
    read_list(Path::new("/sys/devices/system/node/online")).unwrap_or_else(|| vec![0])
}

/// The CPUs of node `n`.
fn node_cpus(n: u16) -> Option<Vec<u16>> {
    read_list(&Path::new("/sys/devices/system/node").join(format!("node{n}/cpulist")))
        .or_else(|| (n == 0).then(online_cpus))
}

/// The CPUs the placement allows on this host (`None`: any), or why it cannot run here.
pub fn allowed(p: &Placement) -> Result<Option<Vec<u16>>, String> {
    // Raising a priority is the superuser's (CAP_SYS_NICE; the real-time I/O class too).
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if let Some(n) = p.nice.filter(|n| *n < 0 && !root) {
        return Err(format!(
            "nice {n}: a priority above the default needs root (CAP_SYS_NICE); give 0 to 19"
        ));
    }
    if p.ioprio.is_some_and(|(class, _)| class == 1) && !root {
        return Err("prioclass 1 (real time) needs root (CAP_SYS_NICE); give 2 or 3".into());
    }
    if p.cmdprio.is_some_and(|c| c.class == 1) && !root {
        return Err(
            "cmdprio_class 1 (real time, fio's default) needs root (CAP_SYS_ADMIN); give --cmdprio-class 2 or 3"
                .into(),
        );
    }
    let online = online_cpus();
    let have = nodes();
    let shown = |v: &[u16]| CpuList(v.to_vec()).text();
    for n in p.mem.iter().flat_map(MemPolicy::nodes) {
        if !have.contains(&n) {
            return Err(format!(
                "numa_mem_policy names node {n}; this host has nodes {}",
                shown(&have)
            ));
        }
    }
    let mut set: Option<Vec<u16>> = None;
    if let Some(cpus) = &p.cpus {
        if let Some(c) = cpus.0.iter().find(|c| !online.contains(c)) {
            return Err(format!(
                "cpus_allowed names CPU {c}; this host's online CPUs are {}",
                shown(&online)
            ));
        }
        set = Some(cpus.0.clone());
    }
    if let Some(list) = &p.nodes {
        let mut cpus = Vec::new();
        for &n in &list.0 {
            match node_cpus(n).filter(|_| have.contains(&n)) {
                Some(c) => cpus.extend(c),
                None => {
                    return Err(format!(
                        "numa_cpu_nodes names node {n}; this host has nodes {}",
                        shown(&have)
                    ))
                }
            }
        }
        set = Some(match set {
            Some(s) => s.into_iter().filter(|c| cpus.contains(c)).collect(),
            None => cpus,
        });
    }
    match set {
        Some(s) if s.is_empty() => {
            Err("cpus_allowed and numa_cpu_nodes leave no CPU of this host in common".into())
        }
        s => Ok(s.map(|mut s| {
            s.sort_unstable();
            s.dedup();
            s
        })),
    }
}

/// The CPUs worker `w` of the job may run on: all allowed, or with `split` the `w`-th of them
/// in turn (as fio gives each clone its own). Empty: any.
pub fn worker_cpus(p: &Placement, w: usize) -> Result<Vec<u16>, String> {
    Ok(match allowed(p)? {
        None => Vec::new(),
        Some(s) if p.split => vec![s[w % s.len()]],
        Some(s) => s,
    })
}

/// Gives the calling thread the worker's CPUs, memory policy, CPU and I/O priority.
pub(crate) fn apply(spec: &crate::WorkerSpec) -> Result<(), String> {
    pin(&spec.cpus, spec.mem_policy.as_ref())?;
    if let Some(n) = spec.nice {
        // SAFETY: plain syscalls on this thread's own id.
        let rc = unsafe {
            libc::setpriority(
                libc::PRIO_PROCESS,
                libc::gettid() as libc::id_t,
                i32::from(n),
            )
        };
        if rc != 0 {
            return Err(format!("nice {n}: {}", std::io::Error::last_os_error()));
        }
    }
    if let Some((class, level)) = spec.ioprio {
        // ioprio_set(IOPRIO_WHO_PROCESS, 0: this thread, class << 13 | level).
        let value = i32::from(class) << 13 | i32::from(level);
        // SAFETY: a plain syscall with integer arguments.
        let rc = unsafe { libc::syscall(libc::SYS_ioprio_set, 1, 0, value) };
        if rc != 0 {
            return Err(format!(
                "prioclass {class}, prio {level}: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// Pins the calling thread to `cpus` (empty: left as it is) and sets its memory policy.
fn pin(cpus: &[u16], mem: Option<&MemPolicy>) -> Result<(), String> {
    if !cpus.is_empty() {
        // SAFETY: a zeroed cpu_set_t is empty; CPU_SET writes within it for numbers below
        // CPU_SETSIZE (CpuList holds numbers below 1024).
        let rc = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus {
                libc::CPU_SET(usize::from(c), &mut set);
            }
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        if rc != 0 {
            return Err(format!(
                "cannot run on CPUs {}: {}",
                CpuList(cpus.to_vec()).text(),
                std::io::Error::last_os_error()
            ));
        }
    }
    if let Some(m) = mem {
        let (mode, nodes) = match m {
            MemPolicy::Default => (0, Vec::new()),
            MemPolicy::Prefer(n) => (1, vec![*n]),
            MemPolicy::Bind(l) => (2, l.0.clone()),
            MemPolicy::Interleave(l) => (3, l.0.clone()),
            MemPolicy::Local => (4, Vec::new()),
        };
        let mut mask = [0u64; 16];
        for n in nodes {
            mask[usize::from(n) / 64] |= 1 << (n % 64);
        }
        let (ptr, max) = if mode == 0 || mode == 4 {
            (std::ptr::null(), 0)
        } else {
            (mask.as_ptr(), 1024 + 1)
        };
        // SAFETY: the mask outlives the call and holds `max - 1` bits.
        let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, max as libc::c_ulong) };
        if rc != 0 {
            return Err(format!(
                "numa_mem_policy {}: {}",
                m.text(),
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This host's CPUs and node 0 are allowed; a CPU or node it lacks is refused, naming
    /// what it has; split gives each worker one CPU in turn.
    #[test]
    fn placement_from_this_hosts_cpus_and_nodes() {
        let online = online_cpus();
        assert!(!online.is_empty());
        let p = |cpus: Option<&str>, nodes: Option<&str>, split: bool| Placement {
            cpus: cpus.map(|c| CpuList::parse(c).unwrap()),
            split,
            nodes: nodes.map(|n| CpuList::parse(n).unwrap()),
            mem: None,
            nice: None,
            ioprio: None,
            cmdprio: None,
        };
        assert_eq!(allowed(&p(None, None, false)), Ok(None));
        assert_eq!(allowed(&p(Some("0"), None, false)), Ok(Some(vec![0])));
        assert_eq!(
            allowed(&p(None, Some("0"), false)).unwrap().unwrap(),
            node_cpus(0).unwrap()
        );
        let e = allowed(&p(Some("1000"), None, false)).unwrap_err();
        assert!(
            e.contains("CPU 1000") && e.contains("online CPUs are"),
            "{e}"
        );
        let e = allowed(&p(None, Some("900"), false)).unwrap_err();
        assert!(e.contains("node 900"), "{e}");
        let all = CpuList(online.clone()).text();
        let split = p(Some(&all), None, true);
        assert_eq!(worker_cpus(&split, 0).unwrap(), vec![online[0]]);
        assert_eq!(worker_cpus(&split, online.len()).unwrap(), vec![online[0]]);
        // Applied to a thread of its own: it then runs on that CPU only.
        let cpu = online[online.len() - 1];
        let got = std::thread::spawn(move || {
            pin(&[cpu], Some(&MemPolicy::Local)).unwrap();
            // SAFETY: reads this thread's CPU.
            unsafe { libc::sched_getcpu() }
        })
        .join()
        .unwrap();
        assert_eq!(got, i32::from(cpu));
    }
}
