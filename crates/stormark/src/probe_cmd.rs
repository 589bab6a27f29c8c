//! `stormark probe`: this host's inventory.

use crate::cli::ProbeArgs;

pub fn main(args: ProbeArgs) -> i32 {
    let inv = stormark_probe::Inventory::collect();
    let json = serde_json::to_string_pretty(&inv).expect("an inventory serializes");
    let gib = |b: Option<u64>| {
        b.map_or_else(
            || "unknown".to_string(),
            |b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        )
    };
    println!("host:     {}", inv.hostname);
    println!("os:       {}", inv.os.as_deref().unwrap_or("unknown"));
    println!("kernel:   {}", inv.kernel.as_deref().unwrap_or("unknown"));
    println!(
        "cpu:      {} x {}",
        inv.cpus,
        inv.cpu_model.as_deref().unwrap_or("unknown")
    );
    println!(
        "memory:   {} (swap {})",
        gib(inv.memory_bytes),
        gib(inv.swap_bytes)
    );
    match &inv.io_uring_error {
        None => println!("io_uring: available"),
        Some(e) => println!("io_uring: not available ({e})"),
    }
    if let Some(path) = args.json {
        if let Err(e) = std::fs::write(&path, json + "\n") {
            eprintln!("error: --json {}: {e}", path.display());
            return 2;
        }
    }
    0
}
