//! What takes pages from the page cache besides memory pressure, read from sysfs: DAMON
//! schemes that page cold memory out (`/sys/kernel/mm/damon/admin`, Linux 5.18+), and a
//! virtio balloon the hypervisor reclaims a guest's memory through. On a host with either, a
//! "cached" file does not stay cached: DAMON's physical-address monitoring sees pages read
//! with `pread` (never mapped) as unaccessed, and pages them out within seconds.

use stormark_stats::{CacheEviction, DamonScheme};

use crate::HostRoot;

const DAMON: &str = "sys/kernel/mm/damon/admin/kdamonds";

/// What evicts the cache of the host under `root`; nothing where sysfs says nothing.
pub fn cache_eviction(root: &HostRoot) -> CacheEviction {
    let mut damon_pageout = Vec::new();
    for k in root.list(DAMON).into_iter().filter(|k| is_index(k)) {
        let kd = format!("{DAMON}/{k}");
        if root.read_value(&format!("{kd}/state")).as_deref() != Some("on") {
            continue;
        }
        for c in root
            .list(&format!("{kd}/contexts"))
            .into_iter()
            .filter(|c| is_index(c))
        {
            let ctx = format!("{kd}/contexts/{c}");
            let operations = root.read_value(&format!("{ctx}/operations"));
            let aggr_us: Option<u64> = root
                .read_value(&format!("{ctx}/monitoring_attrs/intervals/aggr_us"))
                .and_then(|v| v.parse().ok());
            for s in root
                .list(&format!("{ctx}/schemes"))
                .into_iter()
                .filter(|s| is_index(s))
            {
                let scheme = format!("{ctx}/schemes/{s}");
                if root.read_value(&format!("{scheme}/action")).as_deref() != Some("pageout") {
                    continue;
                }
                let min_age: Option<u64> = root
                    .read_value(&format!("{scheme}/access_pattern/age/min"))
                    .and_then(|v| v.parse().ok());
                damon_pageout.push(DamonScheme {
                    path: format!("kdamonds/{k}/contexts/{c}/schemes/{s}"),
                    operations: operations.clone(),
                    min_age_us: min_age.zip(aggr_us).map(|(a, us)| a.saturating_mul(us)),
                });
            }
        }
    }
    let virtio_balloon = root
        .list("sys/bus/virtio/drivers/virtio_balloon")
        .iter()
        .any(|d| d.starts_with("virtio"));
    CacheEviction {
        damon_pageout,
        virtio_balloon,
    }
}

fn is_index(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
}
