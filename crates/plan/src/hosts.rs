//! Where a distributed run goes: the agents named by `--agents` or an agents file, each with
//! its target (`--target HOST=PATH`, else TARGET). Checked before anything connects.

use std::path::PathBuf;

/// The agents as the command line gave them, files already read by the caller.
#[derive(Debug, Clone, Default)]
pub struct HostsOptions {
    /// `--agents host:port,...`.
    pub agents: Option<String>,
    /// `--agents-file`: its path as shown and its text.
    pub agents_file: Option<(String, String)>,
    /// `--target HOST=PATH`, each as typed.
    pub targets: Vec<String>,
    /// `--host-endpoint HOST=URL` (S3), each as typed.
    pub endpoints: Vec<String>,
    /// TARGET when the user gave one: every agent's target unless `--target` names another.
    pub default_target: Option<PathBuf>,
    /// The distributed-only options given (such as `--token-file`), by name: refused without
    /// agents.
    pub distributed_only: Vec<&'static str>,
}

use stormark_spec::Host;

/// Each job's `hosts` settled against the run's agents (`agents`, in their order; `None`: a
/// run on this host alone, host 0): names into indexes, every index one of the run's hosts.
/// One line for the user otherwise (exit 2), before anything connects.
pub fn place_jobs(
    workload: &mut stormark_spec::Workload,
    agents: Option<&[Host]>,
) -> Result<(), String> {
    let names: Vec<&str> = match agents {
        Some(hosts) => hosts.iter().map(|h| h.address.as_str()).collect(),
        None => vec!["this host"],
    };
    for job in &mut workload.jobs {
        if let Some(on) = &job.hosts {
            let on = on
                .resolve(&names)
                .map_err(|e| format!("job {}: {e}", job.name))?;
            job.hosts = Some(on);
        }
    }
    Ok(())
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentsFile {
    agent: Vec<AgentEntry>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentEntry {
    address: String,
    target: Option<PathBuf>,
    endpoint: Option<String>,
}

/// A host list, one agent a line (`host:port [TARGET]`, `#` comments), as a cluster's hostfile
/// is kept: thousands of lines.
fn host_lines(shown: &str, text: &str) -> Result<Vec<(String, Option<PathBuf>)>, String> {
    let mut list = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(address), target, None) = (words.next(), words.next(), words.next()) else {
            return Err(format!(
                "--agents-file {shown}: line {}: expected host:port and an optional target path, such as node1:7878 /mnt/bench (or [[agent]] sections)",
                no + 1
            ));
        };
        list.push((address.to_string(), target.map(PathBuf::from)));
    }
    Ok(list)
}

/// The agents of a distributed run, or `None` for a run on this host. Every mistake is one
/// line for the user (exit 2).
pub fn hosts(opts: &HostsOptions) -> Result<Option<Vec<Host>>, String> {
    let mut endpoints: Vec<Option<String>> = Vec::new();
    let mut entries: Vec<(String, Option<PathBuf>)> = match (&opts.agents, &opts.agents_file) {
        (Some(list), _) => list
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(|a| (a.to_string(), None))
            .collect(),
        // A host list, one agent a line (`host:port [TARGET]`, `#` comments), as a cluster's
        // hostfile is kept: thousands of lines.
        (None, Some((shown, text))) if !text.contains("[[agent]]") => {
            let list = host_lines(shown, text)?;
            endpoints.resize(list.len(), None);
            list
        }
        (None, Some((shown, text))) => {
            let file: AgentsFile = toml::from_str(text).map_err(|e| {
                format!(
                    "--agents-file {shown}: {}; expected [[agent]] sections with address = \"host:port\" and optional target = \"/path\"",
                    e.message()
                )
            })?;
            file.agent
                .into_iter()
                .map(|a| {
                    endpoints.push(a.endpoint);
                    (a.address, a.target)
                })
                .collect()
        }
        (None, None) => {
            if !opts.distributed_only.is_empty() {
                let verb = if opts.distributed_only.len() == 1 {
                    "needs"
                } else {
                    "need"
                };
                return Err(format!(
                    "{} {verb} --agents or --agents-file",
                    opts.distributed_only.join(", ")
                ));
            }
            return Ok(None);
        }
    };
    // `dns:NAME:PORT`: every address NAME resolves to (a Kubernetes headless Service's pods).
    if entries.iter().any(|(a, _)| a.starts_with("dns:")) {
        let mut expanded = Vec::new();
        let mut kept = Vec::new();
        for (i, (addr, target)) in entries.into_iter().enumerate() {
            let endpoint = endpoints.get(i).cloned().flatten();
            match addr.strip_prefix("dns:") {
                Some(name) => {
                    for a in resolve_all(name)? {
                        expanded.push((a, target.clone()));
                        kept.push(endpoint.clone());
                    }
                }
                None => {
                    expanded.push((addr, target));
                    kept.push(endpoint);
                }
            }
        }
        entries = expanded;
        endpoints = kept;
    }
    if entries.is_empty() {
        return Err("--agents: expected host:port[,host:port...]".into());
    }
    for (addr, _) in &entries {
        let port_ok = addr
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        if !port_ok {
            return Err(format!(
                "--agents {addr}: expected host:port, such as node1:7878"
            ));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some((dup, _)) = entries.iter().find(|(a, _)| !seen.insert(a.clone())) {
        return Err(format!("--agents: {dup} is listed twice"));
    }
    endpoints.resize(entries.len(), None);
    for pair in &opts.targets {
        let (i, path) = which(
            &entries,
            "--target",
            pair,
            "HOST=PATH, such as node2=/dev/sdb",
        )?;
        // A list of targets for one host (`node2=/dev/sdb,/dev/sdc`, or the host given again):
        // over agents each host runs one target for now; said rather than taken as one path
        // or the last one silently.
        let list = path.contains(',') && path.split(',').all(|p| p.starts_with('/'));
        if list || entries[i].1.is_some() {
            return Err(format!(
                "--target {pair}: one target per host over agents (several targets on one host run locally: stormark run T1 T2); give this host one PATH"
            ));
        }
        entries[i].1 = Some(PathBuf::from(path));
    }
    for pair in &opts.endpoints {
        let form = "HOST=URL, such as node2=http://rgw2:8080";
        let (i, url) = which(&entries, "--host-endpoint", pair, form)?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!("--host-endpoint {pair}: expected {form}"));
        }
        endpoints[i] = Some(url.to_string());
    }
    entries
        .into_iter()
        .zip(endpoints)
        .map(|((address, t), endpoint)| {
            let target = t.or_else(|| opts.default_target.clone()).ok_or_else(|| {
                format!(
                    "agent {address}: no target; give TARGET (the same path on every agent) or --target {address}=PATH"
                )
            })?;
            Ok(Host {
                address,
                target,
                endpoint,
            })
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Some)
}

/// The agent `pair` (`HOST=VALUE`, HOST as in the list, with or without its port) names, and
/// the value; `form` is the accepted form, for the message.
fn which<'a>(
    entries: &[(String, Option<PathBuf>)],
    option: &str,
    pair: &'a str,
    form: &str,
) -> Result<(usize, &'a str), String> {
    let (host, value) = pair
        .split_once('=')
        .filter(|(h, v)| !h.is_empty() && !v.is_empty())
        .ok_or_else(|| format!("{option} {pair}: expected {form}"))?;
    let matching: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, (a, _))| a == host || a.rsplit_once(':').is_some_and(|(h, _)| h == host))
        .map(|(i, _)| i)
        .collect();
    match matching.as_slice() {
        [i] => Ok((*i, value)),
        [] => Err(format!("{option} {pair}: {host} is not one of the agents")),
        _ => Err(format!(
            "{option} {pair}: {host} names several agents; use host:port"
        )),
    }
}

/// Every address `NAME:PORT` resolves to, as `ip:port`, IPv4 ones only when there are any
/// (a name with both would otherwise list each agent twice), sorted.
fn resolve_all(name_port: &str) -> Result<Vec<String>, String> {
    use std::net::ToSocketAddrs;
    let form = "dns:NAME:PORT, such as dns:stormark-agent.bench.svc:7878";
    let port_ok = name_port
        .rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
    if !port_ok {
        return Err(format!("--agents dns:{name_port}: expected {form}"));
    }
    let found: Vec<std::net::SocketAddr> = name_port
        .to_socket_addrs()
        .map_err(|e| format!("--agents dns:{name_port}: cannot resolve it ({e}); expected {form}"))?
        .collect();
    let v4 = found.iter().any(|a| a.is_ipv4());
    let mut out: Vec<String> = found
        .into_iter()
        .filter(|a| a.is_ipv4() == v4)
        .map(|a| a.to_string())
        .collect();
    out.sort();
    out.dedup();
    if out.is_empty() {
        return Err(format!("--agents dns:{name_port}: resolves to no address"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(agents: &str, targets: &[&str], default: Option<&str>) -> HostsOptions {
        HostsOptions {
            agents: Some(agents.into()),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            default_target: default.map(PathBuf::from),
            ..HostsOptions::default()
        }
    }

    #[test]
    fn targets_by_host_or_address() {
        let h = hosts(&opts("a:1,b:2", &["b=/dev/sdb"], Some("/mnt")))
            .unwrap()
            .unwrap();
        assert_eq!(h[0].target, PathBuf::from("/mnt"));
        assert_eq!(h[1].target, PathBuf::from("/dev/sdb"));
        let h = hosts(&opts("a:1,a:2", &["a:2=/x", "a:1=/y"], None))
            .unwrap()
            .unwrap();
        assert_eq!(
            (h[0].target.to_str(), h[1].target.to_str()),
            (Some("/y"), Some("/x"))
        );
    }

    #[test]
    fn mistakes_are_one_line() {
        for (agents, targets, default) in [
            ("", &[][..], Some("/m")),
            ("a", &[], Some("/m")),
            ("a:1,a:1", &[], Some("/m")),
            ("a:1", &["b=/x"], Some("/m")),
            ("a:1,a:2", &["a=/x"], Some("/m")),
            ("a:1", &["a/x"], Some("/m")),
            ("a:1", &[], None),
            ("a:1", &["a=/x,/y"], Some("/m")),
            ("a:1", &["a=/x", "a=/y"], Some("/m")),
        ] {
            let e = hosts(&opts(agents, targets, default)).unwrap_err();
            assert!(!e.contains('\n') && !e.is_empty(), "{e}");
        }
        let local = HostsOptions {
            distributed_only: vec!["--token-file"],
            ..HostsOptions::default()
        };
        assert_eq!(
            hosts(&local).unwrap_err(),
            "--token-file needs --agents or --agents-file"
        );
        assert_eq!(hosts(&HostsOptions::default()), Ok(None));
        for list in [&["a=/x,/y"][..], &["a=/x", "a:1=/y"]] {
            let e = hosts(&opts("a:1", list, None)).unwrap_err();
            assert!(e.contains("one target per host over agents"), "{e}");
        }
    }

    #[test]
    fn endpoints_per_host() {
        let o = HostsOptions {
            endpoints: vec!["b=https://rgw2:443".into()],
            ..opts("a:1,b:2", &[], Some("/m"))
        };
        let h = hosts(&o).unwrap().unwrap();
        assert_eq!(h[0].endpoint, None);
        assert_eq!(h[1].endpoint.as_deref(), Some("https://rgw2:443"));
        let bad = HostsOptions {
            endpoints: vec!["b=rgw2:443".into()],
            ..opts("a:1,b:2", &[], Some("/m"))
        };
        assert!(hosts(&bad)
            .unwrap_err()
            .starts_with("--host-endpoint b=rgw2:443: expected HOST=URL"));
    }

    #[test]
    fn agents_file() {
        let o = HostsOptions {
            agents_file: Some((
                "f.toml".into(),
                "[[agent]]\naddress = \"n1:7878\"\ntarget = \"/d\"\n[[agent]]\naddress = \"n2:7878\"\nendpoint = \"http://rgw2:8080\"\n".into(),
            )),
            default_target: Some("/t".into()),
            ..HostsOptions::default()
        };
        let h = hosts(&o).unwrap().unwrap();
        assert_eq!(
            h,
            vec![
                Host {
                    address: "n1:7878".into(),
                    target: "/d".into(),
                    endpoint: None
                },
                Host {
                    address: "n2:7878".into(),
                    target: "/t".into(),
                    endpoint: Some("http://rgw2:8080".into())
                }
            ]
        );
        let bad = HostsOptions {
            agents_file: Some(("f.toml".into(), "[[agent]]\nadress = 1\n".into())),
            ..HostsOptions::default()
        };
        assert!(hosts(&bad)
            .unwrap_err()
            .starts_with("--agents-file f.toml: "));
    }

    /// Issue 33: a hostfile of thousands of lines, one agent a line with an optional target,
    /// comments and blank lines left out; a line of three words is one line for the user.
    #[test]
    fn a_hostfile_of_thousands_of_agents() {
        let mut text = String::from("# the fleet\n\n");
        for i in 0..5000 {
            text.push_str(&format!(
                "10.{}.{}.{}:7878",
                i / 65536,
                i / 256 % 256,
                i % 256
            ));
            if i % 2 == 0 {
                text.push_str(" /mnt/local");
            }
            text.push_str("  # rack\n");
        }
        let o = HostsOptions {
            agents_file: Some(("hosts".into(), text)),
            default_target: Some("/t".into()),
            ..HostsOptions::default()
        };
        let h = hosts(&o).unwrap().unwrap();
        assert_eq!(h.len(), 5000);
        assert_eq!(h[0].target, PathBuf::from("/mnt/local"));
        assert_eq!(h[1].target, PathBuf::from("/t"));
        assert_eq!(h[4999].address, "10.0.19.135:7878");
        let bad = HostsOptions {
            agents_file: Some(("hosts".into(), "n1:7878\nn2:7878 /a /b\n".into())),
            ..HostsOptions::default()
        };
        let e = hosts(&bad).unwrap_err();
        assert!(
            e.starts_with("--agents-file hosts: line 2: expected host:port"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
    }

    #[test]
    fn a_dns_name_stands_for_every_address_it_resolves_to() {
        let opts = HostsOptions {
            agents: Some("dns:localhost:7878,10.0.0.9:7878".into()),
            default_target: Some("/mnt/bench".into()),
            ..HostsOptions::default()
        };
        let found = hosts(&opts).unwrap().unwrap();
        let addrs: Vec<&str> = found.iter().map(|h| h.address.as_str()).collect();
        assert_eq!(addrs, ["127.0.0.1:7878", "10.0.0.9:7878"]);
        for bad in [
            "dns:localhost",
            "dns::7878",
            "dns:no-such-host.invalid:7878",
        ] {
            let opts = HostsOptions {
                agents: Some(bad.into()),
                default_target: Some("/mnt/bench".into()),
                ..HostsOptions::default()
            };
            let e = hosts(&opts).unwrap_err();
            assert!(
                e.contains("dns:NAME:PORT") || e.contains("cannot resolve"),
                "{bad}: {e}"
            );
        }
    }
}
