//! The three network namespaces of a run and the veths between them.
//!
//! ```text
//!  client ns                       sim ns (ns-3 only)          server ns
//!  c0 198.18.0.100[,.101..] ---- l0 ~ left node 0 ~~ link 0 ~~ right node ~ r0 ---- s0 198.19.0.100
//!  c1 198.18.1.100[,.101..] ---- l1 ~ left node 1 ~~ link 1 ~~/
//! ```
//!
//! Everything is created inside namespaces named `fstb-PID-K-{client,sim,
//! server}` (K counts the runs of the process, which may run several at
//! once): the veths are born in their namespaces (`ip link add ... netns`),
//! so no interface, address or route of the host namespace is ever touched,
//! and concurrent runs cannot collide. The sim namespace's kernel does not
//! forward (IPv4 forwarding off, IPv6 off, FORWARD policy DROP) and its
//! veths have no address, so every packet crosses ns-3. Checksum and
//! segmentation offloads are off so that the raw sockets see real,
//! checksummed, MTU-sized packets. Dropping a [`Topology`] removes the
//! namespaces, killing anything still running inside them.

use std::process::Command;
use std::process::Stdio;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use crate::requirements::find_program;

/// Prefix of every namespace the testbed creates.
pub const PREFIX: &str = "fstb-";

/// Address of the server.
pub const SERVER_ADDRESS: &str = "198.19.0.100";
/// ns-3's right (server-side) node.
pub const RIGHT_ADDRESS: &str = "198.19.0.2/24";

/// The client's `index`-th address on link `link`.
pub fn client_address(link: usize, index: usize) -> String {
    format!("198.18.{link}.{}", 100 + index)
}

/// ns-3's left node of link `link`.
pub fn left_address(link: usize) -> String {
    format!("198.18.{link}.2/24")
}

/// Runs `ip` (or another tool) with `args`; the error carries its stderr.
fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let path = find_program(program).ok_or_else(|| format!("{program} not found"))?;
    let output = Command::new(&path)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!("`{program} {}` failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
    }
}

/// The namespaces that exist now.
pub fn list() -> Vec<String> {
    run("ip", &["netns", "list"])
        .map(|text| text.lines().filter_map(|line| line.split_whitespace().next().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Kills whatever runs in `namespace` and deletes it.
fn remove(namespace: &str) {
    if let Ok(pids) = run("ip", &["netns", "pids", namespace]) {
        for pid in pids.split_whitespace() {
            let _ = run("kill", &["-KILL", pid]);
        }
    }
    let _ = run("ip", &["netns", "delete", namespace]);
}

/// Whether process `pid` exists and is not a zombie (a killed run stays a
/// zombie until its parent reaps it).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next().map(|state| state != "Z"))
        })
        .unwrap_or(false)
}

/// Removes the namespaces of earlier runs whose process no longer exists
/// (a run killed with SIGKILL cannot clean up); returns their names.
pub fn remove_stale() -> Vec<String> {
    let mut removed = Vec::new();
    for name in list() {
        let Some(rest) = name.strip_prefix(PREFIX) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|pid| pid.parse::<u32>().ok()) else { continue };
        if pid != std::process::id() && !alive(pid) {
            remove(&name);
            removed.push(name);
        }
    }
    removed
}

/// Runs this process has created namespaces for: the K of their names.
static RUNS: AtomicUsize = AtomicUsize::new(0);

/// The namespaces of one run.
pub struct Topology {
    /// Client namespace.
    pub client: String,
    /// Namespace of ns-3.
    pub sim: String,
    /// Server namespace.
    pub server: String,
    /// Number of bottleneck links.
    pub links: usize,
    /// What every namespace name of this run starts with.
    pub prefix: String,
    created: Vec<String>,
}

impl Topology {
    /// Creates the namespaces for `clients_per_link.len()` links, with
    /// `clients_per_link[i]` client addresses on link `i`.
    pub fn create(clients_per_link: &[usize], tcp_pacing: bool) -> Result<Topology, String> {
        let prefix = format!("{PREFIX}{}-{}-", std::process::id(), RUNS.fetch_add(1, Ordering::Relaxed));
        let mut topology = Topology {
            client: format!("{prefix}client"),
            sim: format!("{prefix}sim"),
            server: format!("{prefix}server"),
            links: clients_per_link.len(),
            prefix,
            created: Vec::new(),
        };
        topology.configure(clients_per_link)?;
        if tcp_pacing {
            // Linux paces TCP only under fq: the server's senders' interface.
            let server = topology.server.clone();
            run("tc", &["-n", &server, "qdisc", "replace", "dev", "s0", "root", "fq"])?;
        }
        Ok(topology)
    }

    /// A command that runs `program` inside `namespace`. `ip netns exec`
    /// execs the program, so the child's PID is the program's.
    pub fn command(&self, namespace: &str, program: &str) -> Command {
        let mut command = Command::new(find_program("ip").unwrap_or_else(|| "ip".into()));
        command.args(["netns", "exec", namespace, program]);
        command
    }

    fn exec(&self, namespace: &str, program: &str, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["netns", "exec", namespace, program];
        all.extend_from_slice(args);
        run("ip", &all)
    }

    fn configure(&mut self, clients_per_link: &[usize]) -> Result<(), String> {
        let (client, sim, server) = (self.client.clone(), self.sim.clone(), self.server.clone());
        for namespace in [&client, &sim, &server] {
            run("ip", &["netns", "add", namespace])?;
            self.created.push(namespace.clone());
            run("ip", &["-n", namespace, "link", "set", "lo", "up"])?;
            self.exec(
                namespace,
                "sysctl",
                &["-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"],
            )?;
        }
        // New namespaces inherit the host's default congestion control (bbr
        // on these machines), and the kernel lets a namespace other than the
        // host's choose only among the host's allowed ones: every TCP peer
        // therefore sets its own with iperf3 -C, checked in its report.

        // Replies to a client address of link i arrive on link i's veth
        // while the main table's route back points at link 0.
        self.exec(&client, "sysctl", &["-qw", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"])?;
        self.exec(&sim, "sysctl", &["-qw", "net.ipv4.ip_forward=0"])?;
        self.exec(&sim, "iptables", &["-P", "FORWARD", "DROP"])?;

        run("ip", &["link", "add", "s0", "netns", &server, "type", "veth", "peer", "name", "r0", "netns", &sim])?;
        for (link, &clients) in clients_per_link.iter().enumerate() {
            let (outer, inner) = (format!("c{link}"), format!("l{link}"));
            run(
                "ip",
                &["link", "add", &outer, "netns", &client, "type", "veth", "peer", "name", &inner, "netns", &sim],
            )?;
            for index in 0..clients.max(1) {
                run(
                    "ip",
                    &["-n", &client, "addr", "add", &format!("{}/24", client_address(link, index)), "dev", &outer],
                )?;
            }
        }
        let mut interfaces: Vec<(String, String)> = vec![(server.clone(), "s0".into()), (sim.clone(), "r0".into())];
        for link in 0..clients_per_link.len() {
            interfaces.push((client.clone(), format!("c{link}")));
            interfaces.push((sim.clone(), format!("l{link}")));
        }
        for (namespace, interface) in &interfaces {
            self.exec(namespace, "ethtool", &["-K", interface, "tx", "off", "tso", "off", "gso", "off", "gro", "off"])?;
            if namespace == &sim {
                run("ip", &["-n", namespace, "link", "set", interface, "promisc", "on"])?;
            }
            run("ip", &["-n", namespace, "link", "set", interface, "up"])?;
        }

        run("ip", &["-n", &server, "addr", "add", &format!("{SERVER_ADDRESS}/24"), "dev", "s0"])?;
        run("ip", &["-n", &server, "route", "add", "198.18.0.0/16", "via", "198.19.0.2"])?;
        let server_net = "198.19.0.0/24";
        for link in 0..clients_per_link.len() {
            let gateway = format!("198.18.{link}.2");
            let device = format!("c{link}");
            if link == 0 {
                run("ip", &["-n", &client, "route", "add", server_net, "via", &gateway, "dev", &device])?;
            } else {
                // Traffic from link i's addresses leaves on link i.
                let table = (100 + link).to_string();
                run("ip", &["-n", &client, "rule", "add", "from", &format!("198.18.{link}.0/24"), "table", &table])?;
                run(
                    "ip",
                    &["-n", &client, "route", "add", server_net, "via", &gateway, "dev", &device, "table", &table],
                )?;
            }
        }
        Ok(())
    }

    /// Whether a TCP connection attempt from the client to the server gets
    /// an answer within `limit`. Nothing listens on the port: a reset
    /// ("connection refused") proves that the path works both ways.
    pub fn path_answers(&self, limit: Duration) -> bool {
        let script = format!("exec 3<>/dev/tcp/{SERVER_ADDRESS}/9");
        let started = Instant::now();
        let status = self
            .command(&self.client, "timeout")
            .args([&format!("{:.1}", limit.as_secs_f64()), "bash", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        // timeout(1) exits 124 when the limit passed without an answer.
        matches!(status, Ok(status) if status.code() != Some(124)) && started.elapsed() < limit
    }

    /// Removes the namespaces (idempotent).
    pub fn teardown(&mut self) {
        for namespace in self.created.drain(..).rev() {
            remove(&namespace);
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.teardown();
    }
}
