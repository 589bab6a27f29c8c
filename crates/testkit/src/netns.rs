//! Hosts for distributed tests: network namespaces on a bridge, with tc limits and MTUs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{require_root, run, wait_listening};

/// A small cluster of hosts for distributed tests: network namespaces joined by veth pairs to
/// one bridge in the test's own namespace, which has the address `.1` of the subnet. Host `i`
/// is `10.<a>.<b>.<i + 2>`. Everything is removed when dropped (agents first).
pub struct NetCluster {
    /// Namespace names, one per host.
    pub namespaces: Vec<String>,
    /// Host addresses, one per host.
    pub addresses: Vec<String>,
    /// The test's own address on the bridge (`.1`): where a server the hosts use listens.
    pub gateway: String,
    bridge: String,
    veths: Vec<String>,
    /// Each host's own end of its veth pair, inside its namespace.
    insides: Vec<String>,
    children: Vec<std::process::Child>,
    /// Each host's agent: its place in `children`.
    agents: Vec<Option<usize>>,
    /// Each host's agent's command (program, arguments, environment), to start it again.
    agent_cmds: Vec<Option<AgentCmd>>,
}

type AgentCmd = (String, Vec<String>, Vec<(String, String)>);

static CLUSTER_SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl NetCluster {
    /// Creates `hosts` namespaces on a fresh bridge, or says why it cannot (not root, no
    /// `ip`, no netns support).
    pub fn new(hosts: usize) -> Result<NetCluster, String> {
        let seq = CLUSTER_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Short, unique names: interface names are limited to 15 characters. Another test
        // process (or one that died and left its bridge) may hold the first choice: the next
        // is tried then.
        let mut id = (std::process::id() % 10_000) * 10 + seq % 10;
        for _ in 0..8 {
            let taken = Command::new("ip")
                .args(["link", "show", &format!("smb{id}")])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !taken {
                break;
            }
            id = (id + 37_501) % 100_000;
        }
        let bridge = format!("smb{id}");
        let subnet = format!("10.{}.{}", 100 + (id / 250) % 150, id % 250);
        let mut c = NetCluster {
            namespaces: Vec::new(),
            addresses: Vec::new(),
            gateway: format!("{subnet}.1"),
            bridge: bridge.clone(),
            veths: Vec::new(),
            insides: Vec::new(),
            children: Vec::new(),
            agents: vec![None; hosts],
            agent_cmds: vec![None; hosts],
        };
        run(Command::new("ip").args(["link", "add", &bridge, "type", "bridge"]))?;
        run(Command::new("ip").args(["addr", "add", &format!("{subnet}.1/24"), "dev", &bridge]))?;
        run(Command::new("ip").args(["link", "set", &bridge, "up"]))?;
        for i in 0..hosts {
            let ns = format!("smn{id}h{i}");
            let outside = format!("smv{id}h{i}");
            let inside = format!("smi{id}h{i}");
            let addr = format!("{subnet}.{}", i + 2);
            run(Command::new("ip").args(["netns", "add", &ns]))?;
            c.namespaces.push(ns.clone());
            run(Command::new("ip").args([
                "link", "add", &outside, "type", "veth", "peer", "name", &inside,
            ]))?;
            c.veths.push(outside.clone());
            run(Command::new("ip").args(["link", "set", &outside, "master", &bridge, "up"]))?;
            run(Command::new("ip").args(["link", "set", &inside, "netns", &ns]))?;
            let in_ns = |args: &[&str]| {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", &ns, "ip"]).args(args);
                run(&mut cmd)
            };
            in_ns(&["addr", "add", &format!("{addr}/24"), "dev", &inside])?;
            in_ns(&["link", "set", &inside, "up"])?;
            in_ns(&["link", "set", "lo", "up"])?;
            c.addresses.push(addr);
            c.insides.push(inside);
        }
        Ok(c)
    }

    /// Runs `program args...` inside host `i`'s namespace and waits for it.
    pub fn run_in(&self, i: usize, program: &str, args: &[&str]) -> std::process::Output {
        Command::new("ip")
            .args(["netns", "exec", &self.namespaces[i], program])
            .args(args)
            .output()
            .expect("ip netns exec")
    }

    /// Sets the MTU of host `i`'s interface (jumbo frames on one host only, say).
    pub fn set_mtu(&self, i: usize, mtu: u32) -> Result<(), String> {
        run(Command::new("ip").args([
            "netns",
            "exec",
            &self.namespaces[i],
            "ip",
            "link",
            "set",
            "dev",
            &self.insides[i],
            "mtu",
            &mtu.to_string(),
        ]))
    }

    /// Limits what reaches host `i` to `rate` with a token bucket on the bridge's side of its
    /// link: past the senders' own queues, so that what does not fit is dropped on the way
    /// (as a slower link in the path does) instead of holding the sender back.
    pub fn limit_to(&self, i: usize, rate: &str) -> Result<(), String> {
        run(Command::new("tc").args(tbf(&self.veths[i], rate)))
    }

    /// Limits what host `i` sends to `rate` (tc's form, such as `200mbit`) with a token
    /// bucket on its own interface, as a slower link would.
    pub fn limit(&self, i: usize, rate: &str) -> Result<(), String> {
        run(Command::new("ip")
            .args(["netns", "exec", &self.namespaces[i], "tc"])
            .args(tbf(&self.insides[i], rate)))
    }

    /// Starts `program args...` inside host `i`'s namespace; it is killed when the cluster is
    /// dropped. Its stderr goes to `log`.
    pub fn spawn(
        &mut self,
        i: usize,
        program: &str,
        args: &[&str],
        log: &Path,
    ) -> Result<u32, String> {
        let log = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new("ip")
            .args(["netns", "exec", &self.namespaces[i], program])
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("ip netns exec: {e}"))?;
        let pid = child.id();
        self.children.push(child);
        Ok(pid)
    }

    /// Starts `bin agent` in every host's namespace on port 7878 of its address, with the
    /// token file `token`, each allowed the path `allowed(i)`, its state and log under `dir`
    /// (`state{i}`, `agent{i}.log`); waits until each listens. Returns the agents' list
    /// (`addr:7878,...`).
    pub fn start_agents(
        &mut self,
        bin: &str,
        token: &Path,
        dir: &Path,
        allowed: &dyn Fn(usize) -> PathBuf,
    ) -> String {
        self.start_agents_on(self.addresses.len(), bin, token, dir, allowed, &[], &[])
    }

    /// As [`NetCluster::start_agents`], on the first `hosts` hosts only, each agent also given
    /// `extra` arguments and started with the environment variables `env` added.
    #[allow(clippy::too_many_arguments)]
    pub fn start_agents_on(
        &mut self,
        hosts: usize,
        bin: &str,
        token: &Path,
        dir: &Path,
        allowed: &dyn Fn(usize) -> PathBuf,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> String {
        let mut list = Vec::new();
        for i in 0..hosts {
            let listen = format!("{}:7878", self.addresses[i]);
            let allowed = allowed(i);
            let state = dir.join(format!("state{i}"));
            let mut args = vec![
                "agent",
                "--listen",
                &listen,
                "--token-file",
                token.to_str().expect("a UTF-8 path"),
                "--allow-path",
                allowed.to_str().expect("a UTF-8 path"),
                "--state-dir",
                state.to_str().expect("a UTF-8 path"),
            ];
            args.extend_from_slice(extra);
            self.agent_cmds[i] = Some((
                bin.to_string(),
                args.iter().map(|a| a.to_string()).collect(),
                env.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ));
            self.spawn_agent(i, &dir.join(format!("agent{i}.log")))
                .expect("starting an agent");
            list.push(listen);
        }
        list.join(",")
    }

    /// Starts host `i`'s agent from its command, its stderr to `log`, and waits until it
    /// listens.
    fn spawn_agent(&mut self, i: usize, log: &Path) -> Result<(), String> {
        let (bin, args, env) = self.agent_cmds[i]
            .clone()
            .ok_or_else(|| format!("host {i} never had an agent"))?;
        let log = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new("ip")
            .args(["netns", "exec", &self.namespaces[i], &bin])
            .args(&args)
            .envs(env)
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting agent {i}: {e}"))?;
        self.agents[i] = Some(self.children.len());
        self.children.push(child);
        wait_listening(
            &format!("{}:7878", self.addresses[i]),
            &format!("agent {i}"),
        );
        Ok(())
    }

    /// Starts host `i`'s agent again, as it was started (its state directory included), after
    /// [`NetCluster::kill_agent`], its stderr to `log`; returns once it listens, which an agent
    /// does after removing what its journal names of its runs that did not finish.
    pub fn restart_agent(&mut self, i: usize, log: &Path) -> Result<(), String> {
        self.spawn_agent(i, log)
    }

    /// Kills host `i`'s agent (SIGKILL; `ip netns exec` runs it in its own process), as a
    /// crash or an operator would: its host stays on the network, so what connects to its
    /// ports is refused at once.
    pub fn kill_agent(&mut self, i: usize) -> Result<(), String> {
        let c = self
            .agents
            .get(i)
            .copied()
            .flatten()
            .and_then(|k| self.children.get_mut(k))
            .ok_or_else(|| format!("host {i} has no agent"))?;
        c.kill().map_err(|e| format!("killing agent {i}: {e}"))?;
        c.wait()
            .map_err(|e| format!("waiting for agent {i}: {e}"))?;
        Ok(())
    }

    /// Cuts host `i` off the network (its link on the bridge goes down): packets are dropped
    /// silently, as when a cable is pulled.
    pub fn cut(&self, i: usize) -> Result<(), String> {
        run(Command::new("ip").args(["link", "set", &self.veths[i], "down"]))
    }
}

impl Drop for NetCluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "delete", ns]).status();
        }
        for v in &self.veths {
            let _ = Command::new("ip")
                .args(["link", "delete", v])
                .stderr(std::process::Stdio::null())
                .status();
        }
        let _ = Command::new("ip")
            .args(["link", "delete", &self.bridge])
            .status();
    }
}

/// tc's arguments for a token bucket of `rate` at the root of `dev`
/// (`tc qdisc add dev X root tbf rate R burst 1mbit latency 50ms`).
fn tbf<'a>(dev: &'a str, rate: &'a str) -> [&'a str; 12] {
    [
        "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", "1mbit", "latency",
        "50ms",
    ]
}

/// Whether a small cluster of namespaces can be made here; records why a test skips when not.
pub fn require_netns(test: &str) -> bool {
    if !require_root(test) {
        return false;
    }
    match NetCluster::new(1) {
        Ok(_) => true,
        Err(e) => {
            crate::skip(test, &format!("cannot create network namespaces: {e}"));
            false
        }
    }
}
