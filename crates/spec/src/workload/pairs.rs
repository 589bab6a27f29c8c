//! A job in job-file form: the `key = value` pairs that run it again (results documents,
//! the jobs handed to agents).

use super::{Job, LoadKind, SyncMode};
use crate::units::{format_duration, format_size};

impl Job {
    /// The job as `key = value` pairs in job-file form, enough to run it again.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![
            ("name", self.name.clone()),
            ("rw", self.rw_text()),
            ("rwmixread", self.rwmixread.to_string()),
            ("random_pct", self.random_pct.to_string()),
            ("random_distribution", self.distribution.name()),
            ("bs", self.bs.to_string()),
            ("bs_align", format_size(self.bs_align)),
            ("iodepth", self.iodepth.to_string()),
            ("jobs", self.jobs.to_string()),
            ("files", self.files.to_string()),
            ("direct", self.direct.name().to_string()),
            ("engine", self.engine.name().to_string()),
            ("ramp", format_duration(self.ramp)),
            ("invalidate", self.invalidate.name().to_string()),
            ("iodepth_batch", self.iodepth_batch.to_string()),
            (
                "iodepth_batch_complete",
                self.iodepth_batch_complete.to_string(),
            ),
        ];
        if self.iodepth_batch_complete_max != self.iodepth_batch_complete {
            pairs.push((
                "iodepth_batch_complete_max",
                self.iodepth_batch_complete_max.to_string(),
            ));
        }
        if let Some(low) = self.iodepth_low {
            pairs.push(("iodepth_low", low.to_string()));
        }
        if self.trim_percentage > 0 {
            pairs.push(("trim_percentage", self.trim_percentage.to_string()));
            pairs.push(("trim_verify_zero", self.trim_verify_zero.to_string()));
        }
        if self.serialize_overlap {
            pairs.push(("serialize_overlap", "true".into()));
        }
        if self.kind == LoadKind::Meta {
            // A meta job refuses the options of data load: only its own travel.
            pairs.retain(|(k, _)| matches!(*k, "name" | "jobs" | "ramp"));
        }
        if self.kind != LoadKind::File {
            pairs.push(("kind", self.kind.name().to_string()));
        }
        if let Some(split) = &self.bs_split {
            pairs.push(("bssplit", split.name()));
        }
        if !self.start_delay.is_zero() {
            pairs.push(("startdelay", format_duration(self.start_delay)));
        }
        self.region_and_pace_pairs(&mut pairs);
        if let Some(g) = &self.group {
            pairs.push(("group", g.clone()));
        }
        if let Some(h) = &self.hosts {
            pairs.push(("hosts", h.name()));
        }
        if let Some(s3) = &self.s3 {
            pairs.extend(s3.pairs());
        }
        if let Some(net) = &self.net {
            pairs.extend(net.pairs());
        }
        if let Some(meta) = &self.meta {
            pairs.extend(meta.pairs());
        }
        if self.zero_buffers {
            pairs.push(("zero_buffers", "true".into()));
        }
        if self.pin_cache {
            pairs.push(("pin_cache", "true".into()));
        }
        if self.sync != SyncMode::None {
            pairs.push(("sync", self.sync.name().into()));
        }
        if self.fsync > 0 {
            pairs.push(("fsync", self.fsync.to_string()));
        }
        if self.fdatasync > 0 {
            pairs.push(("fdatasync", self.fdatasync.to_string()));
        }
        if self.end_fsync {
            pairs.push(("end_fsync", "true".into()));
        }
        if let Some(p) = &self.buffer_pattern {
            pairs.push(("buffer_pattern", p.text()));
        }
        if !self.fadvise_hint {
            pairs.push(("fadvise_hint", "false".into()));
        }
        if self.compress_ratio > 1.0 {
            pairs.push(("compress_ratio", self.compress_ratio.to_string()));
        }
        if self.verify && self.kind == LoadKind::File {
            pairs.push(("verify", "true".into()));
        }
        if self.verify_only {
            pairs.push(("verify_only", "true".into()));
        }
        if self.fill_device {
            pairs.push(("fill_device", "true".into()));
        }
        if !self.verify_after {
            pairs.push(("verify_after", "false".into()));
        }
        if let Some(n) = self.verify_interval {
            pairs.push(("verify_interval", n.to_string()));
        }
        if self.atomic {
            pairs.push(("atomic", "true".into()));
        }
        for (key, on) in self.ring.keys() {
            if on {
                pairs.push((key, "true".into()));
            }
        }
        for (key, off) in self.ring.keys_off() {
            if off {
                pairs.push((key, "false".into()));
            }
        }
        if self.dedup_ratio > 1.0 {
            pairs.push(("dedup_ratio", self.dedup_ratio.to_string()));
            pairs.push(("dedup_block", format_size(self.dedup_block)));
            if let Some(p) = self.dedup_working_set {
                pairs.push(("dedup_working_set", p.to_string()));
                pairs.push(("dedup_global", self.dedup_global.to_string()));
            }
        }
        if let Some(s) = self.size {
            pairs.push(("size", format_size(s)));
        }
        if let Some(t) = self.time {
            pairs.push(("time", format_duration(t)));
        }
        if let Some(t) = self.io_total {
            pairs.push(("io_total", format_size(t)));
        }
        self.run_pairs(&mut pairs);
        if let Some(s) = &self.steady_state {
            pairs.push(("steady_state", s.to_string()));
        }
        if let Some(r) = self.rate_iops {
            pairs.push(("rate_iops", r.to_string()));
        }
        pairs
    }

    /// The pairs of how a job's workers run beside their I/O (fio's least rates, exits, flows,
    /// CPUs and memory nodes), where set.
    fn run_pairs(&self, pairs: &mut Vec<(&'static str, String)>) {
        for (key, min) in [
            ("rate_min", self.rate_min),
            ("rate_iops_min", self.rate_iops_min),
        ] {
            if let Some([r, w]) = min {
                pairs.push((key, format!("{r},{w}")));
            }
        }
        if let Some(f) = self.flow {
            pairs.push(("flow", f.weight.to_string()));
            pairs.push(("flow_id", f.id.to_string()));
            pairs.push(("flow_sleep", f.sleep.as_micros().to_string()));
        }
        let p = &self.placement;
        if let Some(c) = &p.cpus {
            pairs.push(("cpus_allowed", c.text()));
        }
        if p.split {
            pairs.push(("cpus_allowed_policy", "split".into()));
        }
        if let Some(n) = &p.nodes {
            pairs.push(("numa_cpu_nodes", n.text()));
        }
        if let Some(m) = &p.mem {
            pairs.push(("numa_mem_policy", m.text()));
        }
        if let Some(n) = p.nice {
            pairs.push(("nice", n.to_string()));
        }
        if let Some((class, level)) = p.ioprio {
            pairs.push(("prioclass", class.to_string()));
            pairs.push(("prio", level.to_string()));
        }
        if let Some(c) = p.cmdprio {
            match &c.split {
                Some(split) => pairs.push(("cmdprio_bssplit", split.name())),
                None => pairs.push((
                    "cmdprio_percentage",
                    format!("{},{}", c.share[0], c.share[1]),
                )),
            }
            pairs.push(("cmdprio_class", c.class.to_string()));
            pairs.push(("cmdprio", c.level.to_string()));
            if c.hint > 0 {
                pairs.push(("cmdprio_hint", c.hint.to_string()));
            }
        }
        if let Some(e) = self.exit {
            pairs.push(("exitall", "true".into()));
            pairs.push(("exit_what", e.name().into()));
        }
        if self.exit_on_error {
            pairs.push(("exitall_on_error", "true".into()));
        }
        if !self.ignore_errors.is_empty() {
            pairs.push(("ignore_errors", self.ignore_errors.join(",")));
        }
    }

    /// The pairs of a job's region of a file or device and of its workers' pace (fio's
    /// `offset`, shares, `loops`, `rate_process`, `thinktime`, `rw_sequencer`), where set.
    fn region_and_pace_pairs(&self, pairs: &mut Vec<(&'static str, String)>) {
        if self.rand_run_same {
            pairs.push(("rw_sequencer", "identical".into()));
        }
        if self.random_map {
            pairs.push(("random_map", "true".into()));
        }
        if let crate::Distribution::Sequence { stride: true, .. } = self.distribution {
            pairs.push(("random_sequence_stride", "1".into()));
        }
        if let Some(z) = self.zones {
            pairs.push(("zone_size", z.size.to_string()));
            pairs.push(("zone_range", z.range.to_string()));
            pairs.push(("zone_skip", z.skip.to_string()));
        }
        if let Some(z) = self.zoned {
            pairs.push(("zoned", "true".into()));
            pairs.push(("zone_size", z.size.to_string()));
            pairs.push(("max_open_zones", z.max_open.to_string()));
            pairs.push(("zone_reset_threshold", z.reset_threshold.to_string()));
            pairs.push(("zone_reset_frequency", z.reset_frequency.to_string()));
            pairs.push(("read_beyond_wp", z.read_beyond_wp.to_string()));
        }
        if let Some(s) = self.sprandom {
            pairs.push(("sprandom", "true".into()));
            pairs.push(("spr_op", s.op.to_string()));
            pairs.push(("spr_num_regions", s.regions.to_string()));
            pairs.push(("spr_cs", s.cache.to_string()));
        }
        if self.offset > 0 {
            pairs.push(("offset", self.offset.to_string()));
        }
        if let Some(p) = self.offset_pct {
            pairs.push(("offset", format!("{p}%")));
        }
        if let Some(p) = self.size_pct {
            pairs.push(("size", format!("{p}%")));
        }
        if let Some(n) = self.loops {
            pairs.push(("loops", n.to_string()));
        }
        if self.rate_poisson {
            pairs.push(("rate_process", "poisson".into()));
        }
        if !self.thinktime.is_zero() {
            pairs.push(("thinktime", self.thinktime.as_micros().to_string()));
            pairs.push((
                "thinktime_spin",
                self.thinktime_spin.as_micros().to_string(),
            ));
            pairs.push(("thinktime_blocks", self.thinktime_blocks.to_string()));
        }
        if self.offset_increment > 0 {
            pairs.push(("offset_increment", self.offset_increment.to_string()));
        }
        if let Some(f) = &self.filename {
            pairs.push(("filename", f.clone()));
        }
        if self.fresh {
            pairs.push(("fresh", "true".into()));
        }
        if self.file_shift > 0 {
            pairs.push(("file_shift", self.file_shift.to_string()));
        }
    }
}
