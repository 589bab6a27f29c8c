//! `stormark probe`: this host's inventory, and what `--auto` would choose for a target.

use std::fmt::Write as _;
use std::path::PathBuf;

use stormark_probe::{auto_size, classify, Inventory, SizingInput};
use stormark_report::Output;

use crate::cli::ProbeArgs;
use crate::{usage, Ending};

fn gib(b: Option<u64>) -> String {
    b.map_or_else(
        || "unknown".to_string(),
        |b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
    )
}

fn or_unknown<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "unknown".to_string(), |v| v.to_string())
}

/// The inventory as the terminal shows it.
pub fn text(inv: &Inventory) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "host:     {}", inv.hostname);
    let _ = writeln!(out, "os:       {}", or_unknown(inv.os.as_ref()));
    let _ = writeln!(out, "kernel:   {}", or_unknown(inv.kernel.as_ref()));
    let _ = writeln!(
        out,
        "cpu:      {}; {} sockets, {} cores, {} threads ({} usable here)",
        or_unknown(inv.cpu_model.as_ref()),
        or_unknown(inv.cpu_sockets),
        or_unknown(inv.cpu_cores),
        or_unknown(inv.cpu_threads),
        inv.cpus
    );
    let _ = writeln!(
        out,
        "memory:   {} (swap {})",
        gib(inv.memory_bytes),
        gib(inv.swap_bytes)
    );
    match &inv.io_uring_error {
        None => out.push_str("io_uring: available\n"),
        Some(e) => {
            let _ = writeln!(out, "io_uring: not available ({e})");
        }
    }
    out.push_str("block devices:\n");
    for d in &inv.block_devices {
        let media = match d.rotational {
            Some(true) => "rotational",
            Some(false) => "non-rotational",
            None => "media unknown",
        };
        let _ = write!(
            out,
            "  {:<10} {:>10}  {media}, scheduler {}, queue depth {}",
            d.name,
            gib(d.size_bytes),
            or_unknown(d.scheduler.as_ref()),
            or_unknown(d.queue_depth)
        );
        if let Some(t) = &d.transport {
            let _ = write!(out, ", {t}");
            if let (Some(n), Some(depth)) = (d.hw_queues, d.hw_queue_depth) {
                let queues = if n == 1 { "queue" } else { "queues" };
                let _ = write!(out, " ({n} {queues} of {depth})");
            }
        }
        if let Some(kb) = d.max_sectors_kb {
            let _ = write!(out, ", requests up to {kb} KiB");
            if let Some(hw) = d.max_hw_sectors_kb.filter(|hw| *hw > kb) {
                let _ = write!(out, " (raisable to {hw})");
            }
        }
        if let Some(m) = &d.model {
            let _ = write!(out, ", model {m}");
        }
        if let Some(v) = &d.vendor {
            let _ = write!(out, ", vendor {v}");
        }
        if let Some(f) = &d.firmware {
            let _ = write!(out, ", firmware {f}");
        }
        if let Some(s) = &d.serial {
            let _ = write!(out, ", serial {s}");
        }
        if !d.mount_points.is_empty() {
            let _ = write!(
                out,
                ", {} on {}",
                or_unknown(d.fs_type.as_ref()),
                d.mount_points.join(" ")
            );
        }
        out.push('\n');
        for p in &d.partitions {
            let _ = write!(out, "    {:<8} {:>10}", p.name, gib(p.size_bytes));
            if !p.mount_points.is_empty() {
                let _ = write!(
                    out,
                    "  {} on {}",
                    or_unknown(p.fs_type.as_ref()),
                    p.mount_points.join(" ")
                );
            }
            out.push('\n');
        }
    }
    out.push_str("filesystems:\n");
    for f in &inv.filesystems {
        let _ = writeln!(
            out,
            "  {:<24} {:<8} {:>10}  {} used  ({})",
            f.mount_point,
            f.fs_type,
            gib(f.size_bytes),
            f.used_pct
                .map_or_else(|| "unknown".to_string(), |p| format!("{p:.0}%")),
            or_unknown(f.source.as_ref())
        );
    }
    out.push_str("network interfaces:\n");
    for n in &inv.net_interfaces {
        let _ = writeln!(
            out,
            "  {:<12} {}, mtu {}, {}",
            n.name,
            n.speed_mbps
                .map_or_else(|| "speed unknown".to_string(), |s| format!("{s} Mb/s")),
            or_unknown(n.mtu),
            or_unknown(n.state.as_ref())
        );
    }
    for n in &inv.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

pub fn main(args: ProbeArgs) -> anyhow::Result<Ending> {
    let out = crate::output("--json", args.json.as_deref(), &[], true)?;
    let mut inv = stormark_probe::collect_inventory();
    if args.show_serial {
        stormark_probe::read_serials(&mut inv, &stormark_probe::HostRoot::live());
    }
    // With --json -, the inventory owns standard output and the text goes to stderr.
    let json_out = out.as_ref().is_some_and(Output::is_stdout);
    let say = |t: &str| {
        if json_out {
            eprint!("{t}");
        } else {
            out!("{t}");
        }
    };
    say(&text(&inv));
    let target = args
        .target
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    classify(&target).map_err(|e| usage(e.to_string()))?;
    let input = SizingInput::for_target(&target, false);
    let sizing = auto_size(&inv, &input);
    say(&format!(
        "recommended for {} (what `stormark run {} --auto` chooses):\n",
        target.display(),
        target.display()
    ));
    for r in &sizing.reasons {
        say(&format!("  {r}\n"));
    }
    if let (Some(out), Some(path)) = (out, args.json) {
        let json = serde_json::to_string_pretty(&inv).expect("an inventory serializes");
        out.write((json + "\n").as_bytes())
            .map_err(|e| anyhow::anyhow!("--json {}: cannot write it: {e}", path.display()))?;
    }
    Ok(Ending::Success)
}
