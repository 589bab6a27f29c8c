//! A network mesh's matrices, read from its phases: each ordered pair alone (its throughput,
//! then its round trips and path MTU), then every pair at once, each from the net sessions
//! the phases' hosts reported.

use crate::{MeshHost, MeshPair, MeshReport, NetReport, Phase, PhaseKind, Results};

/// The mesh of `r`, when its phases are a mesh's (`None` otherwise).
pub fn mesh_of(r: &Results) -> Option<MeshReport> {
    let of = |kind: PhaseKind| r.phases.iter().filter(move |p| p.kind() == kind);
    let first = of(PhaseKind::Pair).next()?;
    let n = r.hosts.len();
    let pairs: Vec<(u32, u32)> = (0..n as u32)
        .flat_map(|i| (0..n as u32).filter(move |&j| j != i).map(move |j| (i, j)))
        .collect();
    // A phase's session from `i` to `j`.
    let session = |p: &'_ Phase, (i, j): (u32, u32)| -> Option<NetReport> {
        p.net
            .iter()
            .find(|s| s.from == Some(i) && s.to == Some(j))
            .cloned()
    };
    let alone = pairs
        .iter()
        .map(|&ij| {
            let ran = of(PhaseKind::Pair).find_map(|p| session(p, ij).map(|s| (p, s)));
            let Some((p, s)) = ran else {
                return not_run(r, ij);
            };
            let mut pair = pair_of(ij, &s, p.total.bytes, p.duration_ns);
            pair.seconds = p.intervals.iter().map(|i| i.total.bytes).collect();
            if let Some((rtt, s)) =
                of(PhaseKind::PairRtt).find_map(|p| session(p, ij).map(|s| (p, s)))
            {
                pair.path_mtu = s.path_mtu;
                let lat = rtt
                    .total
                    .latency_ns
                    .as_ref()
                    .filter(|_| s.failure.is_none());
                pair.rtt_p50_ns = lat.map(|l| l.p50);
                pair.rtt_p99_ns = lat.map(|l| l.p99);
            }
            pair
        })
        .collect();
    let loaded = match of(PhaseKind::AllPairs).next_back() {
        Some(p) => pairs
            .iter()
            .map(|&ij| match session(p, ij) {
                Some(s) => {
                    let bytes = s.streams.iter().map(|x| x.bytes).sum();
                    pair_of(ij, &s, bytes, p.duration_ns)
                }
                None => not_run(r, ij),
            })
            .collect(),
        None => Vec::new(),
    };
    let sessions = || r.phases.iter().flat_map(|p| &p.net);
    let hosts = r
        .hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let i = i as u32;
            // The address the others streamed to; else the one the agent was named by.
            let ip = sessions()
                .find(|s| s.to == Some(i))
                .and_then(|s| s.server.parse::<std::net::SocketAddr>().ok())
                .map(|a| a.ip().to_string())
                .or_else(|| {
                    h.address
                        .as_deref()
                        .and_then(|a| a.rsplit_once(':'))
                        .map(|(host, _)| host.trim_matches(['[', ']']).to_string())
                })
                .unwrap_or_default();
            let out = sessions().find(|s| s.from == Some(i) && s.interface.is_some());
            MeshHost {
                agent: h.address.clone().unwrap_or_else(|| h.name.clone()),
                ip,
                host: h.name.clone(),
                interface: out.and_then(|s| s.interface.clone()),
                mtu: out.and_then(|s| s.mtu),
                link_mbps: out.and_then(|s| s.link_mbps),
            }
        })
        .collect();
    Some(MeshReport {
        hosts,
        streams: first.jobs.first().map_or(0, |j| j.workers),
        time_ms: first.duration_ns / 1_000_000,
        alone,
        loaded,
    })
}

/// A pair as its session and phase say: `bytes` over the phase's measured time.
fn pair_of((from, to): (u32, u32), s: &NetReport, bytes: u64, duration_ns: u64) -> MeshPair {
    MeshPair {
        from,
        to,
        bytes,
        duration_ns,
        bits_per_s: if duration_ns == 0 {
            0.0
        } else {
            bytes as f64 * 8e9 / duration_ns as f64
        },
        streams: s.streams.clone(),
        failure: s.failure.clone(),
        ..MeshPair::default()
    }
}

/// A pair that did not run: a host of it had failed, which is named with its failure.
fn not_run(r: &Results, (from, to): (u32, u32)) -> MeshPair {
    let failed = [from, to].into_iter().find_map(|h| {
        let host = r.hosts.get(h as usize)?;
        let f = host.failure.as_ref()?;
        Some(format!(
            "not run: {} ({}) failed: {}",
            host.address.as_deref().unwrap_or(&host.name),
            host.name,
            f.message
        ))
    });
    MeshPair {
        from,
        to,
        failure: Some(failed.unwrap_or_else(|| "not run (the run ended before it)".into())),
        ..MeshPair::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Host, HostFailure, NetStream, Summary};

    fn host(name: &str, failed: Option<&str>) -> Host {
        Host {
            name: name.into(),
            target: None,
            inventory: Default::default(),
            samples: Vec::new(),
            sampler_cpu_ns: None,
            address: Some(format!("{name}:7878")),
            failure: failed.map(|m| HostFailure {
                message: m.into(),
                phase: "pair:0->1".into(),
                at_ns: 0,
                last_interval: None,
            }),
            clock_offset_ns: None,
            clock_rtt_ns: None,
        }
    }

    fn phase(name: &str, kind: PhaseKind, bytes: u64, net: Vec<NetReport>) -> Phase {
        Phase {
            name: name.into(),
            kind: Some(kind),
            jobs: Vec::new(),
            start_offset_ns: 0,
            duration_ns: 1_000_000_000,
            total: Summary {
                bytes,
                ..Summary::default()
            },
            by_op: Default::default(),
            by_host: Default::default(),
            by_job: Default::default(),
            by_target: Default::default(),
            errors: Vec::new(),
            intervals: Vec::new(),
            histograms: Default::default(),
            host_starts_ns: Default::default(),
            start_uncertainty_ns: None,
            done: None,
            cpu: None,
            repetition: None,
            net,
            verify: None,
            reached: None,
        }
    }

    fn session(from: u32, to: u32, bytes: u64, failure: Option<&str>) -> NetReport {
        NetReport {
            server: format!("10.0.0.{}:4000", to + 1),
            from: Some(from),
            to: Some(to),
            streams: vec![NetStream {
                bytes,
                ..NetStream::default()
            }],
            failure: failure.map(str::to_string),
            ..NetReport::default()
        }
    }

    #[test]
    fn pairs_are_read_from_their_phases_and_a_failed_hosts_pairs_name_it() {
        let mut r = Results::new(vec!["stormark".into()]);
        r.hosts = vec![host("a", None), host("b", Some("no answer within 4 s"))];
        r.phases = vec![
            phase(
                "pair:0->1",
                PhaseKind::Pair,
                125_000_000,
                vec![session(0, 1, 125_000_000, None)],
            ),
            phase(
                "all-pairs",
                PhaseKind::AllPairs,
                0,
                vec![session(
                    0,
                    1,
                    0,
                    Some("server 10.0.0.2:4000: cannot connect"),
                )],
            ),
        ];
        let m = mesh_of(&r).expect("a mesh");
        assert_eq!(m.hosts[1].ip, "10.0.0.2");
        assert_eq!(m.alone.len(), 2);
        // 125 MB in its phase's one second: 1 Gbit/s.
        assert_eq!((m.alone[0].from, m.alone[0].to), (0, 1));
        assert!((m.alone[0].bits_per_s - 1e9).abs() < 1.0);
        assert!(m.alone[0].failure.is_none());
        // b -> a never ran: b failed, and is named.
        let why = m.alone[1].failure.as_deref().unwrap();
        assert!(why.contains("b:7878") && why.contains("no answer"), "{why}");
        assert!(m.loaded[0]
            .failure
            .as_deref()
            .unwrap()
            .contains("cannot connect"));
        // No pair phases: no mesh.
        r.phases.clear();
        assert!(mesh_of(&r).is_none());
    }
}
