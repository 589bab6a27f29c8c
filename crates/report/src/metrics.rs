//! `--metrics-listen ADDR`: the live figures at `/metrics`, for Prometheus and Grafana to follow
//! a long run (deploy/grafana/ holds a dashboard). Encoded by the Prometheus project's Rust
//! client in OpenMetrics, served as such to a scraper that asks for it (`Accept:
//! application/openmetrics-text`, as Prometheus does) and otherwise in Prometheus' text format
//! 0.0.4 (what `curl` and `promtool check metrics` read: a counter's HELP and TYPE under its
//! sample's name, `stormark_ops_total`). Served by a small HTTP/1.1 responder on its own
//! threads that answers `GET /metrics` and nothing else, reads at most 8 KiB of a request,
//! drops a connection silent for 2 s and serves at most 16 connections at once.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::{text::encode, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use stormark_stats::{Interval, Summary};

/// Connections served at once; more are closed unanswered.
const MAX_CONNECTIONS: usize = 16;
/// A request longer than this is not a scrape.
const MAX_REQUEST: usize = 8 << 10;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabels {
    op: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HostLabels {
    host: String,
    op: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PairLabels {
    matrix: String,
    from: String,
    to: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QuantileLabels {
    op: String,
    /// The percentile as a fraction (`0.99`; `1` the maximum). Not `quantile`: that label
    /// belongs to a summary's samples, and this family is gauges (promtool refuses it).
    percentile: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    phase: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// The live figures, updated every closed second.
pub struct LiveMetrics {
    registry: Registry,
    ops: Family<OpLabels, Counter>,
    bytes: Family<OpLabels, Counter>,
    errors: Family<OpLabels, Counter>,
    iops: Family<OpLabels, FloatGauge>,
    bandwidth: Family<OpLabels, FloatGauge>,
    latency: Family<QuantileLabels, FloatGauge>,
    phase: Family<PhaseLabels, Gauge>,
    host_ops: Family<HostLabels, Counter>,
    host_bytes: Family<HostLabels, Counter>,
    host_errors: Family<HostLabels, Counter>,
    host_iops: Family<HostLabels, FloatGauge>,
    host_bandwidth: Family<HostLabels, FloatGauge>,
    pair_bits: Family<PairLabels, FloatGauge>,
    pair_retransmits: Family<PairLabels, Gauge>,
    current: Mutex<Option<String>>,
}

impl LiveMetrics {
    fn new() -> LiveMetrics {
        let mut registry = Registry::with_prefix("stormark");
        let ops = Family::<OpLabels, Counter>::default();
        let bytes = Family::<OpLabels, Counter>::default();
        let errors = Family::<OpLabels, Counter>::default();
        let iops = Family::<OpLabels, FloatGauge>::default();
        let bandwidth = Family::<OpLabels, FloatGauge>::default();
        let latency = Family::<QuantileLabels, FloatGauge>::default();
        let phase = Family::<PhaseLabels, Gauge>::default();
        registry.register("ops", "Operations completed, over every host", ops.clone());
        registry.register("bytes", "Bytes moved, over every host", bytes.clone());
        registry.register(
            "errors",
            "Operations failed, over every host",
            errors.clone(),
        );
        registry.register(
            "iops",
            "Operations per second in the last closed second",
            iops.clone(),
        );
        registry.register(
            "bandwidth_bytes_per_second",
            "Bytes per second in the last closed second",
            bandwidth.clone(),
        );
        registry.register(
            "latency_seconds",
            "Latency quantiles of the last closed second (exact, HDR histograms merged over hosts)",
            latency.clone(),
        );
        registry.register("phase", "1 for the phase running now", phase.clone());
        let host_ops = Family::<HostLabels, Counter>::default();
        let host_bytes = Family::<HostLabels, Counter>::default();
        let host_errors = Family::<HostLabels, Counter>::default();
        let host_iops = Family::<HostLabels, FloatGauge>::default();
        let host_bandwidth = Family::<HostLabels, FloatGauge>::default();
        registry.register(
            "host_ops",
            "Operations completed by one host (runs over agents)",
            host_ops.clone(),
        );
        registry.register(
            "host_bytes",
            "Bytes moved by one host (runs over agents)",
            host_bytes.clone(),
        );
        registry.register(
            "host_errors",
            "Operations failed on one host (runs over agents)",
            host_errors.clone(),
        );
        registry.register(
            "host_iops",
            "One host's operations per second in the last closed second (runs over agents)",
            host_iops.clone(),
        );
        let pair_bits = Family::<PairLabels, FloatGauge>::default();
        let pair_retransmits = Family::<PairLabels, Gauge>::default();
        registry.register(
            "mesh_pair_bits_per_second",
            "A mesh pair's throughput as its receiver counted it, once the pair's test ended (matrix alone or loaded)",
            pair_bits.clone(),
        );
        registry.register(
            "mesh_pair_retransmits",
            "A mesh pair's retransmitted segments (the sender's TCP_INFO), once its test ended",
            pair_retransmits.clone(),
        );
        registry.register(
            "host_bandwidth_bytes_per_second",
            "One host's bytes per second in the last closed second (runs over agents)",
            host_bandwidth.clone(),
        );
        LiveMetrics {
            registry,
            ops,
            bytes,
            errors,
            iops,
            bandwidth,
            latency,
            phase,
            host_ops,
            host_bytes,
            host_errors,
            host_iops,
            host_bandwidth,
            pair_bits,
            pair_retransmits,
            current: Mutex::new(None),
        }
    }

    /// Binds `addr` and serves `/metrics` from now on; the error is one line for the user
    /// (a mistake, found before any load).
    pub fn serve(addr: SocketAddr) -> Result<Arc<LiveMetrics>, String> {
        let listener = TcpListener::bind(addr).map_err(|e| {
            format!(
                "--metrics-listen {addr}: cannot listen there ({e}); give a free ADDR:PORT, such as 127.0.0.1:9464"
            )
        })?;
        let metrics = Arc::new(LiveMetrics::new());
        let served = metrics.clone();
        let open = Arc::new(AtomicUsize::new(0));
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                for conn in listener.incoming().flatten() {
                    if open.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
                        open.fetch_sub(1, Ordering::AcqRel);
                        continue;
                    }
                    let (served, slot) = (served.clone(), open.clone());
                    let spawned = std::thread::Builder::new()
                        .name("metrics-conn".into())
                        .spawn(move || {
                            answer(conn, &served);
                            slot.fetch_sub(1, Ordering::AcqRel);
                        });
                    if spawned.is_err() {
                        // The thread never ran: its slot is free again.
                        open.fetch_sub(1, Ordering::AcqRel);
                    }
                }
            })
            .map_err(|e| format!("--metrics-listen {addr}: cannot start its thread ({e})"))?;
        Ok(metrics)
    }

    /// A phase begins: it is the one with `stormark_phase{phase=...} 1`.
    pub fn phase(&self, name: &str) {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = current.take() {
            self.phase.get_or_create(&PhaseLabels { phase: old }).set(0);
        }
        self.phase
            .get_or_create(&PhaseLabels {
                phase: name.to_string(),
            })
            .set(1);
        *current = Some(name.to_string());
    }

    /// A closed second of the current phase, merged over every host.
    pub fn second(&self, interval: &Interval) {
        for (op, s) in &interval.by_op {
            self.op_second(op, s);
        }
    }

    /// A closed second of a run over agents: each host's counts, labelled with the host.
    /// Hosts that did nothing in the second keep their counters and show a rate of 0.
    pub fn hosts(&self, hosts: &[(&str, &[(stormark_stats::Op, stormark_stats::Counts)])]) {
        // Every host's rates of the last second: a host idle in it reads 0, not its last.
        for g in [&self.host_iops, &self.host_bandwidth] {
            g.clear();
        }
        for (host, ops) in hosts {
            for (op, c) in *ops {
                let l = HostLabels {
                    host: host.to_string(),
                    op: op.name().to_string(),
                };
                self.host_ops.get_or_create(&l).inc_by(c.ops);
                self.host_bytes.get_or_create(&l).inc_by(c.bytes);
                self.host_errors.get_or_create(&l).inc_by(c.errors);
                self.host_iops.get_or_create(&l).set(c.ops as f64);
                self.host_bandwidth.get_or_create(&l).set(c.bytes as f64);
            }
        }
    }

    /// A phase ended: a mesh's pairs (alone or all at once), each as its session says, its
    /// throughput and retransmits labelled with the matrix and both hosts (`hosts`: their
    /// names, which the sessions index).
    pub fn phase_done(&self, phase: &stormark_stats::Phase, hosts: &[String]) {
        let alone = match phase.kind() {
            stormark_stats::PhaseKind::Pair => true,
            stormark_stats::PhaseKind::AllPairs => false,
            _ => return,
        };
        let name = |i: Option<u32>| {
            i.and_then(|i| hosts.get(i as usize))
                .cloned()
                .unwrap_or_default()
        };
        for s in phase.net.iter().filter(|s| s.failure.is_none()) {
            let bytes: u64 = s.streams.iter().map(|x| x.bytes).sum();
            let bits_per_s = if phase.duration_ns == 0 {
                0.0
            } else {
                bytes as f64 * 8e9 / phase.duration_ns as f64
            };
            let retransmits: u64 = s
                .streams
                .iter()
                .filter_map(|x| x.retransmits)
                .map(u64::from)
                .sum();
            let l = PairLabels {
                matrix: if alone { "alone" } else { "loaded" }.into(),
                from: name(s.from),
                to: name(s.to),
            };
            self.pair_bits.get_or_create(&l).set(bits_per_s);
            self.pair_retransmits
                .get_or_create(&l)
                .set(i64::try_from(retransmits).unwrap_or(i64::MAX));
        }
    }

    /// An agent's worker-second: counters only (rates come from Prometheus' `rate()`).
    pub fn counts(&self, counts: &[(stormark_stats::Op, u64, u64, u64)]) {
        for &(op, ops, bytes, errors) in counts {
            if ops + bytes + errors == 0 {
                continue;
            }
            let l = OpLabels {
                op: op.name().to_string(),
            };
            self.ops.get_or_create(&l).inc_by(ops);
            self.bytes.get_or_create(&l).inc_by(bytes);
            self.errors.get_or_create(&l).inc_by(errors);
        }
    }

    /// A `stormark net` second: each stream's snapshot, merged.
    pub fn snapshots(&self, t: u32, snaps: &[stormark_stats::Snapshot]) {
        let mut all = stormark_stats::Snapshot::new();
        for s in snaps {
            all += s;
        }
        let second = 1_000_000_000;
        self.second(&Interval {
            t_s: t,
            duration_ns: second,
            total: Summary::of(&all.total(), second),
            by_op: all
                .ops()
                .filter(|(_, r)| r.ops + r.bytes + r.errors > 0)
                .map(|(op, r)| (op.name().to_string(), Summary::of(r, second)))
                .collect(),
        });
    }

    fn op_second(&self, op: &str, s: &Summary) {
        let l = OpLabels { op: op.to_string() };
        self.ops.get_or_create(&l).inc_by(s.ops);
        self.bytes.get_or_create(&l).inc_by(s.bytes);
        self.errors.get_or_create(&l).inc_by(s.errors);
        self.iops.get_or_create(&l).set(s.iops);
        self.bandwidth.get_or_create(&l).set(s.bw_bytes_per_s);
        if let Some(lat) = &s.latency_ns {
            for (q, ns) in [
                ("0.5", lat.p50),
                ("0.9", lat.p90),
                ("0.99", lat.p99),
                ("0.999", lat.p999),
                ("1", lat.max),
            ] {
                self.latency
                    .get_or_create(&QuantileLabels {
                        op: op.to_string(),
                        percentile: q.into(),
                    })
                    .set(ns as f64 / 1e9);
            }
        }
    }

    /// The figures in OpenMetrics.
    fn text(&self) -> String {
        let mut out = String::new();
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// OpenMetrics text as Prometheus' text format 0.0.4: a counter family `x` is named by its
/// samples, `x_total` (its HELP and TYPE with it), and `# UNIT` and `# EOF`, which 0.0.4 does
/// not have, are left out. Gauges and their samples read the same in both.
fn text_format(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len() + 256);
    // A family's HELP comes before its TYPE, which names its kind.
    let mut help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            help = Some(rest.split_once(' ').unwrap_or((rest, "")));
            continue;
        }
        if let Some((name, kind)) = line.strip_prefix("# TYPE ").and_then(|t| t.split_once(' ')) {
            let shown = if kind == "counter" {
                format!("{name}_total")
            } else {
                name.to_string()
            };
            if let Some((_, text)) = help.take().filter(|(h, _)| *h == name) {
                let _ = writeln!(out, "# HELP {shown} {text}");
            }
            let _ = writeln!(out, "# TYPE {shown} {kind}");
            continue;
        }
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Answers one connection: `GET /metrics` gets the figures, anything else 404.
fn answer(mut conn: TcpStream, metrics: &LiveMetrics) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = conn.set_write_timeout(Some(Duration::from_secs(2)));
    let mut request = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(n @ 1..) if request.len() + n <= MAX_REQUEST => request.extend_from_slice(&buf[..n]),
            _ => return,
        }
    }
    let scrape = request.starts_with(b"GET /metrics ") || request.starts_with(b"GET /metrics?");
    // Prometheus asks for OpenMetrics in its Accept header; anyone else gets the text format.
    let openmetrics = String::from_utf8_lossy(&request).lines().any(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("accept:")
            .is_some_and(|v| v.contains("application/openmetrics-text"))
    });
    let (status, kind, body) = if scrape && openmetrics {
        (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.text(),
        )
    } else if scrape {
        (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            text_format(&metrics.text()),
        )
    } else {
        (
            "404 Not Found",
            "text/plain",
            "only /metrics is served\n".to_string(),
        )
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_moves_the_counters_and_sets_the_gauges() {
        let m = LiveMetrics::new();
        m.phase("run");
        let mut i = Interval {
            t_s: 0,
            duration_ns: 1_000_000_000,
            total: Summary::default(),
            by_op: Default::default(),
        };
        i.by_op.insert(
            "read".into(),
            Summary {
                ops: 1000,
                bytes: 4_096_000,
                iops: 1000.0,
                bw_bytes_per_s: 4_096_000.0,
                ..Summary::default()
            },
        );
        m.second(&i);
        m.second(&i);
        m.phase("run:2");
        let text = m.text();
        assert!(
            text.contains("stormark_ops_total{op=\"read\"} 2000"),
            "{text}"
        );
        assert!(text.contains("stormark_iops{op=\"read\"} 1000"), "{text}");
        assert!(text.contains("stormark_phase{phase=\"run\"} 0"), "{text}");
        assert!(text.contains("stormark_phase{phase=\"run:2\"} 1"), "{text}");
        // The text format names a counter's family by its samples (issue 56: promtool
        // refused `stormark_ops_total` with no HELP).
        let plain = text_format(&text);
        assert!(
            plain.contains("# HELP stormark_ops_total Operations completed")
                && plain.contains("# TYPE stormark_ops_total counter\n"),
            "{plain}"
        );
        assert!(plain.contains("# TYPE stormark_iops gauge\n"), "{plain}");
        assert!(!plain.contains("# EOF") && !plain.contains("# TYPE stormark_ops counter"));
        assert!(
            plain.contains("\nstormark_ops_total{op=\"read\"} 2000\n"),
            "{plain}"
        );
    }

    #[test]
    fn the_grafana_dashboard_asks_only_for_series_that_exist() {
        let dashboard = include_str!("../../../deploy/grafana/stormark-dashboard.json");
        let m = LiveMetrics::new();
        m.phase("run");
        let mut i = Interval {
            t_s: 0,
            duration_ns: 1_000_000_000,
            total: Summary::default(),
            by_op: Default::default(),
        };
        i.by_op.insert(
            "read".into(),
            Summary {
                ops: 1,
                latency_ns: Some(stormark_stats::Latency {
                    min: 1,
                    mean: 1.0,
                    p50: 1,
                    p90: 1,
                    p99: 1,
                    p999: 1,
                    p9999: 1,
                    max: 1,
                }),
                ..Summary::default()
            },
        );
        m.second(&i);
        let ops = [(
            stormark_stats::Op::Read,
            stormark_stats::Counts {
                ops: 5,
                bytes: 20480,
                errors: 0,
            },
        )];
        m.hosts(&[("host-a", &ops), ("evil\"} 1\nstormark_forged{x=\"", &ops)]);
        let text = m.text();
        // Issue 54: a host's name is a label value, escaped (quote, newline), never a line
        // of its own.
        assert!(
            !text.lines().any(|l| l.starts_with("stormark_forged")),
            "{text}"
        );
        assert!(
            text.contains("stormark_host_iops{host=\"host-a\",op=\"read\"} 5"),
            "{text}"
        );
        let names: std::collections::BTreeSet<&str> = dashboard
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("stormark_"))
            .collect();
        assert!(names.len() >= 5, "{names:?}");
        for name in names {
            assert!(
                text.contains(&format!("\n{name}{{")),
                "{name} is not served:\n{text}"
            );
        }
    }
}
