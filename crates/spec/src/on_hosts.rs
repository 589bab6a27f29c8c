//! The hosts a job runs on (its `hosts` key): indexes into the run's agents in the order they
//! were given, ranges of them, or their names, as fio's client mode gives each host its own job
//! file (`fio --client=h1 a.fio --client=h2 b.fio`). Names are settled into indexes once the
//! agents are known ([`OnHosts::resolve`]); what travels to an agent is indexes only.

/// Hosts of a run a job runs on; the other hosts run it with no workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnHosts(Vec<HostRef>);

/// One entry of a `hosts` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRef {
    /// Hosts `.0` to `.1`, both included (a single host: both the same).
    Range(usize, usize),
    /// A host by its name as `--agents` gives it (`node1:7878`, or `node1` without the port).
    Name(String),
}

impl OnHosts {
    /// The accepted form, for errors.
    pub const FORM: &'static str = "hosts by index from 0 in the order of --agents, ranges and names as in --agents, such as 0, \"1-3\", \"0,2\" or [0, \"node3\"]";

    /// Parses `0`, `1-3`, `0,2-3`, `node1,node2:7878` (a job file's array arrives joined by
    /// commas); `None` when it is not such a list.
    pub fn parse(value: &str) -> Option<OnHosts> {
        let mut list = Vec::new();
        for part in value.split(',').map(str::trim) {
            if part.is_empty() {
                return None;
            }
            let index = |s: &str| s.trim().parse::<usize>().ok().filter(|&n| n < 1 << 20);
            if let Some(n) = index(part) {
                list.push(HostRef::Range(n, n));
            } else if let Some((a, b)) = part
                .split_once('-')
                .and_then(|(a, b)| Some((index(a)?, index(b)?)))
            {
                if a > b {
                    return None;
                }
                list.push(HostRef::Range(a, b));
            } else if part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.:[]".contains(c))
                && part.len() <= 255
            {
                list.push(HostRef::Name(part.to_string()));
            } else {
                return None;
            }
        }
        (!list.is_empty()).then_some(OnHosts(list))
    }

    /// The hosts as indexes into `names` (each agent's address as given, `host:port`, in the
    /// run's order): each index below their number, each name one of them (with or without
    /// its port). One line for the user otherwise.
    pub fn resolve(&self, names: &[&str]) -> Result<OnHosts, String> {
        let n = names.len();
        let mut hosts: Vec<usize> = Vec::new();
        for r in &self.0 {
            match r {
                HostRef::Range(a, b) => {
                    if *b >= n {
                        let what = if a == b {
                            a.to_string()
                        } else {
                            format!("{a}-{b}")
                        };
                        let have = match n {
                            1 => "1 host, host 0 (without --agents, this one)".to_string(),
                            _ => format!("{n} hosts, 0 to {} in the order of --agents", n - 1),
                        };
                        return Err(format!("hosts {what}: out of range; this run has {have}"));
                    }
                    hosts.extend(*a..=*b);
                }
                HostRef::Name(name) => {
                    let found = names.iter().position(|a| {
                        *a == name
                            || a.rsplit_once(':').is_some_and(|(h, _)| {
                                h.trim_start_matches('[').trim_end_matches(']') == name
                            })
                    });
                    let Some(i) = found else {
                        let shown: Vec<&str> = names.iter().take(4).copied().collect();
                        let more = if n > 4 { ", ..." } else { "" };
                        return Err(format!(
                            "hosts {name}: no agent of this run is named so; give an index from 0 or a name as in --agents ({}{more})",
                            shown.join(", ")
                        ));
                    };
                    hosts.push(i);
                }
            }
        }
        hosts.sort_unstable();
        hosts.dedup();
        Ok(OnHosts(
            hosts.into_iter().map(|h| HostRef::Range(h, h)).collect(),
        ))
    }

    /// Whether host `h` is one of them (a name not yet resolved is none).
    pub fn contains(&self, h: usize) -> bool {
        self.0
            .iter()
            .any(|r| matches!(r, HostRef::Range(a, b) if (*a..=*b).contains(&h)))
    }

    /// How many of the `total` hosts of the run they are.
    pub fn count(&self, total: usize) -> usize {
        (0..total).filter(|&h| self.contains(h)).count()
    }

    /// As the key is written (`0,2-3`; consecutive indexes joined into ranges).
    pub fn name(&self) -> String {
        let range = |(a, b): (usize, usize)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        };
        let mut parts: Vec<String> = Vec::new();
        let mut run: Option<(usize, usize)> = None;
        for r in &self.0 {
            match (r, run) {
                (HostRef::Range(a, b), Some((s, e))) if *a == e + 1 => run = Some((s, *b)),
                (HostRef::Range(a, b), _) => {
                    parts.extend(run.map(range));
                    run = Some((*a, *b));
                }
                (HostRef::Name(n), _) => {
                    parts.extend(run.take().map(range));
                    parts.push(n.clone());
                }
            }
        }
        parts.extend(run.map(range));
        parts.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses_and_resolves_against_the_agents() {
        let agents = [
            "node1:7878",
            "node2:7878",
            "10.0.0.3:7878",
            "[fd00::4]:7878",
        ];
        let resolved = |v: &str| {
            OnHosts::parse(v)
                .unwrap()
                .resolve(&agents)
                .map(|h| h.name())
        };
        assert_eq!(resolved("0").unwrap(), "0");
        assert_eq!(resolved("1-3").unwrap(), "1-3");
        assert_eq!(resolved("3, 0,1").unwrap(), "0-1,3");
        assert_eq!(resolved("node2").unwrap(), "1");
        assert_eq!(resolved("node1:7878,10.0.0.3").unwrap(), "0,2");
        assert_eq!(resolved("fd00::4").unwrap(), "3");
        assert_eq!(resolved("0,0,1").unwrap(), "0-1");
        let h = OnHosts::parse("1-2").unwrap();
        assert!(!h.contains(0) && h.contains(1) && h.contains(2) && !h.contains(3));
        assert_eq!(h.count(4), 2);
        assert_eq!(h.count(2), 1);
        // As written before it is resolved: names kept.
        assert_eq!(OnHosts::parse("node1,0").unwrap().name(), "node1,0");
    }

    #[test]
    fn what_is_not_a_host_list_or_not_a_host_is_refused() {
        for bad in ["", ",", "3-1", "a b", "0,,1", "x/y"] {
            assert_eq!(OnHosts::parse(bad), None, "{bad}");
        }
        let agents = ["node1:7878", "node2:7878", "node3:7878"];
        let e = OnHosts::parse("3").unwrap().resolve(&agents).unwrap_err();
        assert_eq!(
            e,
            "hosts 3: out of range; this run has 3 hosts, 0 to 2 in the order of --agents"
        );
        let e = OnHosts::parse("1-5").unwrap().resolve(&agents).unwrap_err();
        assert!(e.starts_with("hosts 1-5: out of range"), "{e}");
        let e = OnHosts::parse("1")
            .unwrap()
            .resolve(&["local"])
            .unwrap_err();
        assert!(e.contains("1 host, host 0"), "{e}");
        let e = OnHosts::parse("node9")
            .unwrap()
            .resolve(&agents)
            .unwrap_err();
        assert!(
            e.starts_with("hosts node9: no agent") && e.contains("node1:7878"),
            "{e}"
        );
    }

    /// A job file's `hosts`, an array or a string, reaches the job, travels in its pairs as
    /// indexes and reads back the same; a net job refuses it.
    #[test]
    fn a_job_files_hosts_key_reaches_the_job_and_travels() {
        let f = crate::parse_job_file(
            "time = \"3s\"\n[[job]]\nname = \"a\"\nhosts = [0]\n[[job]]\nname = \"b\"\nhosts = \"1-2\"\n[[job]]\nname = \"c\"\nhosts = [\"node1\", 2]\n",
            "f.toml",
        )
        .unwrap();
        let jobs: Vec<crate::Job> = f
            .jobs
            .iter()
            .map(|o| f.defaults.overlay(o).resolve("j").unwrap())
            .collect();
        assert!(jobs[0].runs_on(0) && !jobs[0].runs_on(1));
        assert!(!jobs[1].runs_on(0) && jobs[1].runs_on(2));
        assert_eq!(jobs[1].hosts_running(3), 2);
        assert_eq!(jobs[2].hosts.as_ref().unwrap().name(), "node1,2");
        let pairs = jobs[1].to_pairs();
        assert!(pairs.contains(&("hosts", "1-2".to_string())), "{pairs:?}");
        let mut o = crate::JobOpts::default();
        for (k, v) in &pairs {
            o.set(k, v, crate::Source::Flag).unwrap();
        }
        assert_eq!(o.resolve("b").unwrap().hosts, jobs[1].hosts);
        let w = crate::Workload::new(jobs, false).unwrap();
        let here = w.on_host(1);
        assert_eq!(
            here.jobs.iter().map(|j| j.jobs).collect::<Vec<_>>(),
            [0, 1, 0]
        );
        for bad in ["hosts = []", "hosts = [1.5]", "hosts = \"a b\""] {
            let e = crate::parse_job_file(&format!("[[job]]\n{bad}\n"), "f.toml").unwrap_err();
            assert!(e.to_string().contains("hosts"), "{bad}: {e}");
        }
        let mut net = crate::JobOpts::default();
        net.set("kind", "net", crate::Source::Flag).unwrap();
        net.set("hosts", "0", crate::Source::Flag).unwrap();
        net.set("server", "10.0.0.1", crate::Source::Flag).unwrap();
        let e = net.resolve("n").unwrap_err().to_string();
        assert!(e.contains("no hosts key on a net job"), "{e}");
    }
}
