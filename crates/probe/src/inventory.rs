//! The host's inventory: what it is, for every results document.

use serde::Serialize;

/// What this host is. Fields that cannot be read are `None` ("unknown").
#[derive(Debug, Clone, Serialize)]
pub struct Inventory {
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// Distribution (`PRETTY_NAME` of /etc/os-release).
    pub os: Option<String>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Logical CPUs available to this process.
    pub cpus: usize,
    /// Physical memory, bytes.
    pub memory_bytes: Option<u64>,
    /// Swap space, bytes.
    pub swap_bytes: Option<u64>,
    /// Whether io_uring can be set up here.
    pub io_uring: bool,
    /// Why not, when it cannot.
    pub io_uring_error: Option<String>,
}

impl Inventory {
    /// Reads the inventory of this host.
    pub fn collect() -> Inventory {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let os_release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
        Inventory {
            hostname: hostname(),
            kernel: read_trim("/proc/sys/kernel/osrelease"),
            os: os_release
                .lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string()),
            cpu_model: cpuinfo
                .lines()
                .find_map(|l| l.strip_prefix("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string()),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes: meminfo_kib(&meminfo, "MemTotal:").map(|k| k * 1024),
            swap_bytes: meminfo_kib(&meminfo, "SwapTotal:").map(|k| k * 1024),
            io_uring: io_uring_probe().is_ok(),
            io_uring_error: io_uring_probe().err(),
        }
    }
}

fn io_uring_probe() -> Result<(), String> {
    // io_uring_setup(2) with a tiny ring; SYS_io_uring_setup is 425 on every architecture
    // that has it. A refusal (ENOSYS, EPERM under kernel.io_uring_disabled) is the answer.
    let mut params = [0u8; 120];
    // SAFETY: params is a zeroed io_uring_params (120 bytes); the fd is closed right away.
    let fd = unsafe { libc::syscall(425, 2u32, params.as_mut_ptr()) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    // SAFETY: fd was just returned by the kernel and is ours.
    unsafe { libc::close(fd as i32) };
    Ok(())
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn hostname() -> String {
    read_trim("/proc/sys/kernel/hostname").unwrap_or_else(|| "localhost".to_string())
}

/// A `Key:   123 kB` line of /proc/meminfo, in KiB.
pub(crate) fn meminfo_kib(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_lines() {
        let text =
            "MemTotal:       24608060 kB\nMemFree:        1 kB\nSwapTotal:             0 kB\n";
        assert_eq!(meminfo_kib(text, "MemTotal:"), Some(24_608_060));
        assert_eq!(meminfo_kib(text, "SwapTotal:"), Some(0));
        assert_eq!(meminfo_kib(text, "Nope:"), None);
        assert_eq!(meminfo_kib("MemTotal: x kB", "MemTotal:"), None);
    }

    #[test]
    fn live_inventory_matches_the_host() {
        let inv = Inventory::collect();
        assert!(inv.cpus >= 1);
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
        assert_eq!(
            inv.memory_bytes,
            meminfo_kib(&meminfo, "MemTotal:").map(|k| k * 1024)
        );
        assert!(!inv.hostname.is_empty());
    }
}
