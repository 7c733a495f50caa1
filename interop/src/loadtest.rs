//! `flowshare loadtest`: many concurrent connections with mixed
//! controllers against a `flowshare serve` child process.
//!
//! The load test writes a scratch root with one file, a self-signed
//! certificate and a policy that maps one server name per entry of the mix
//! to its controller (`m0.load.test` → the first spec, ...), starts the
//! server as a child process, opens every connection at once from one
//! client thread, each with its server name in turn, and waits until all
//! have fetched their files and closed. It reports connections per second,
//! goodput, handshake latency, errors on both sides (the server's `--stats`
//! lines say which controller each connection ran and whether it failed)
//! and the CPU time the server used, read from /proc.
//!
//! This is a benchmark to run by hand, not a test: numbers depend on the
//! host. Build with `--release`.

use std::collections::BTreeMap;
use std::fmt;
use std::io::BufRead;
use std::io::BufReader;
use std::net::SocketAddr;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;
use std::time::Instant;

use flowshare_controllers::Spec;
use flowshare_controllers::Standard;
use flowshare_quic::cert::ScratchDir;

use crate::client;
use crate::client::ClientConfig;
use crate::client::Plan;
use crate::client::Sink;
use crate::endpoint::EndpointOptions;
use crate::http::Protocol;
use crate::io::Offload;

/// Linux reports process CPU times in /proc in units of USER_HZ, which the
/// kernel ABI fixes at 100 per second.
const USER_HZ: f64 = 100.0;

/// How long to wait for the server's stats lines after the clients finish:
/// a closed connection lingers for three PTOs in the draining state, and
/// on a busy host the PTO of a connection whose handshake took a second
/// is itself seconds (3 s let a quarter of quiche's CUBIC connections go
/// unreported at a load average of 8).
const STATS_GRACE: Duration = Duration::from_secs(15);

/// One entry of the controller mix.
#[derive(Clone, Debug, PartialEq)]
pub struct MixEntry {
    /// The controller.
    pub spec: Spec,
    /// `weight = "streams"` for it.
    pub streams: bool,
}

impl std::str::FromStr for MixEntry {
    type Err = String;

    /// `SPEC` or `SPEC@streams`.
    fn from_str(text: &str) -> Result<MixEntry, String> {
        let (spec, streams) = match text.strip_suffix("@streams") {
            Some(spec) => (spec, true),
            None => (text, false),
        };
        let spec: Spec = spec.parse().map_err(|e| format!("{e}"))?;
        Ok(MixEntry { spec, streams })
    }
}

impl fmt::Display for MixEntry {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}{}", self.spec, if self.streams { "@streams" } else { "" })
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// The `flowshare` binary to run the server with.
    pub binary: PathBuf,
    /// Concurrent connections.
    pub connections: usize,
    /// Requests per connection, sent concurrently.
    pub requests: usize,
    /// Size of the file each request fetches.
    pub size: u64,
    /// Controllers, given to connections in turn.
    pub mix: Vec<MixEntry>,
    /// Application protocol.
    pub protocol: Protocol,
    /// The run fails if it takes longer.
    pub time_limit: Duration,
    /// Segmentation offload of the server and the clients (`--no-gso`).
    pub offload: Offload,
}

/// The measurements.
#[derive(Clone, Debug)]
pub struct LoadReport {
    /// Connections opened.
    pub connections: usize,
    /// Connections whose every request succeeded.
    pub succeeded: usize,
    /// Requests that failed, with up to five distinct reasons.
    pub failed_requests: usize,
    /// Distinct error messages seen.
    pub errors: Vec<String>,
    /// From opening the first connection to the close of the last.
    pub wall: Duration,
    /// Response body bytes received.
    pub bytes: u64,
    /// Handshake times, sorted.
    pub handshakes: Vec<Duration>,
    /// CPU the server used during the run.
    pub server_cpu: Duration,
    /// CPU the client (this process) used during the run.
    pub client_cpu: Duration,
    /// Server stats lines by controller spec.
    pub server_connections: BTreeMap<String, usize>,
    /// Server stats lines with an error.
    pub server_errors: usize,
}

impl LoadReport {
    /// Whether everything succeeded on both sides.
    pub fn ok(&self) -> bool {
        self.succeeded == self.connections
            && self.failed_requests == 0
            && self.server_errors == 0
            && self.server_connections.values().sum::<usize>() == self.connections
    }
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() - 1) as f64 * fraction).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let wall = self.wall.as_secs_f64().max(1e-9);
        writeln!(
            f,
            "connections     {} opened, {} succeeded, {} failed requests",
            self.connections, self.succeeded, self.failed_requests
        )?;
        writeln!(f, "wall time       {:.2} s", wall)?;
        writeln!(f, "connections/s   {:.1}", self.connections as f64 / wall)?;
        writeln!(f, "goodput         {:.1} Mbit/s ({} bytes)", self.bytes as f64 * 8.0 / wall / 1e6, self.bytes)?;
        writeln!(
            f,
            "handshake       p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            percentile(&self.handshakes, 0.5).as_secs_f64() * 1e3,
            percentile(&self.handshakes, 0.99).as_secs_f64() * 1e3,
            self.handshakes.last().copied().unwrap_or_default().as_secs_f64() * 1e3
        )?;
        writeln!(
            f,
            "server CPU      {:.2} s ({:.0}% of one core); client CPU {:.2} s",
            self.server_cpu.as_secs_f64(),
            self.server_cpu.as_secs_f64() / wall * 100.0,
            self.client_cpu.as_secs_f64()
        )?;
        let by_cc: Vec<String> = self.server_connections.iter().map(|(cc, n)| format!("{cc}: {n}")).collect();
        writeln!(f, "server saw      {} ({} with errors)", by_cc.join(", "), self.server_errors)?;
        for error in &self.errors {
            writeln!(f, "error           {error}")?;
        }
        write!(f, "result          {}", if self.ok() { "ok" } else { "FAILED" })
    }
}

/// The server child process, killed when dropped.
pub(crate) struct ServerProcess {
    pub(crate) child: Child,
    lines: mpsc::Receiver<String>,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU time (user + system) of process `pid` from /proc.
pub fn cpu_time(pid: &str) -> Result<Duration, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).ok_or("unreadable /proc stat")?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).ok_or("unreadable /proc stat");
    Ok(Duration::from_secs_f64((ticks(11)? + ticks(12)?) as f64 / USER_HZ))
}

fn write_policy(dir: &Path, mix: &[MixEntry]) -> Result<PathBuf, String> {
    let mut text = String::from("# written by flowshare loadtest\n");
    for (index, entry) in mix.iter().enumerate() {
        text.push_str(&format!("\n[[rule]]\nsni = \"m{index}.load.test\"\ncc = \"{}\"\n", entry.spec));
        if entry.streams {
            text.push_str("weight = \"streams\"\n");
        }
    }
    let path = dir.join("policy.toml");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

fn start_server(
    binary: &Path,
    dir: &Path,
    policy: &Path,
    connections: usize,
    offload: Offload,
) -> Result<(ServerProcess, SocketAddr), String> {
    let log = std::fs::File::create(dir.join("server.log")).map_err(|e| format!("server log: {e}"))?;
    // Every connection comes from 127.0.0.1, all at once: the limits on
    // half-open connections and connections per address must let them in.
    let allowed = (2 * connections + 16).max(1000).to_string();
    let mut child = Command::new(binary)
        .args(["serve", "--listen", "127.0.0.1:0", "--stats", "--log-level", "warn"])
        .args(["--max-half-open", &allowed, "--max-connections-per-address", &allowed])
        .arg("--root")
        .arg(dir.join("www"))
        .arg("--cert")
        .arg(dir.join("cert.pem"))
        .arg("--key")
        .arg(dir.join("key.pem"))
        .arg("--policy")
        .arg(policy)
        .args(if offload == Offload::Off { &["--no-gso"][..] } else { &[] })
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", binary.display()))?;
    let stdout = child.stdout.take().ok_or("no server stdout")?;
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let server = ServerProcess { child, lines };
    let first = server
        .lines
        .recv_timeout(Duration::from_secs(10))
        .map_err(|_| "the server did not start (see server.log)".to_string())?;
    let address = first
        .split_whitespace()
        .find_map(|word| word.parse::<SocketAddr>().ok())
        .ok_or_else(|| format!("unexpected first server line {first:?}"))?;
    Ok((server, address))
}

/// A load test's server and what its clients ask of it.
pub(crate) struct Bench {
    /// The root, certificate and policy (removed when dropped).
    _scratch: ScratchDir,
    pub(crate) server: ServerProcess,
    pub(crate) address: SocketAddr,
    pub(crate) server_pid: String,
}

impl Bench {
    /// Writes the root, certificate and policy and starts the server.
    pub(crate) fn start(config: &LoadConfig) -> Result<Bench, String> {
        if config.mix.is_empty() || config.connections == 0 || config.requests == 0 {
            return Err("the load test needs at least one controller, connection and request".into());
        }
        let scratch = ScratchDir::new("loadtest").map_err(|e| e.to_string())?;
        let dir = scratch.path();
        std::fs::create_dir_all(dir.join("www")).map_err(|e| e.to_string())?;
        let content: Vec<u8> = (0..config.size).map(|i| (i % 251) as u8).collect();
        std::fs::write(dir.join("www").join("file.bin"), &content).map_err(|e| e.to_string())?;
        flowshare_quic::cert::write_self_signed(dir, &["*.load.test".to_string(), "localhost".to_string()])
            .map_err(|e| e.to_string())?;
        let policy = write_policy(dir, &config.mix)?;
        let (server, address) = start_server(&config.binary, dir, &policy, config.connections, config.offload)?;
        let server_pid = server.child.id().to_string();
        Ok(Bench { _scratch: scratch, server, address, server_pid })
    }
}

/// Runs the load test, printing progress to stderr.
pub fn run(config: &LoadConfig) -> Result<LoadReport, String> {
    let bench = Bench::start(config)?;
    eprintln!(
        "loadtest: server pid {} on {}; {} connections x {} requests of {} bytes",
        bench.server_pid, bench.address, config.connections, config.requests, config.size
    );
    let report = round(&bench, config, true);
    drop(bench);
    report
}

/// One round of the load test against `bench`'s server: every connection
/// at once, until all have closed and the server has reported them.
pub(crate) fn round(bench: &Bench, config: &LoadConfig, progress: bool) -> Result<LoadReport, String> {
    let (address, server_pid, server) = (bench.address, &bench.server_pid, &bench.server);
    let plans: Vec<Plan> = (0..config.connections)
        .map(|index| {
            let name = format!("m{}.load.test", index % config.mix.len());
            Plan {
                local: "127.0.0.1:0".parse().expect("a literal address"),
                server: address,
                server_name: Some(name.clone()),
                authority: format!("{name}:{}", address.port()),
                requests: (0..config.requests)
                    .map(|_| client::Request { path: "/file.bin".into(), sink: Sink::Discard, upload: None })
                    .collect(),
            }
        })
        .collect();
    let client_config = ClientConfig {
        protocol: config.protocol,
        cc: Spec::of_standard(Standard::Cubic),
        insecure: true,
        ca: None,
        endpoint: EndpointOptions { qlog_dir: None, keylog: None, stats: false, idle_timeout: Duration::from_secs(30) },
        time_limit: config.time_limit,
        headers: Vec::new(),
        resume: false,
        early_data: false,
        offload: config.offload,
        ack_every: 1,
    };

    let server_cpu_before = cpu_time(server_pid)?;
    let client_cpu_before = cpu_time("self")?;
    let started = Instant::now();
    let total = config.connections * config.requests;
    let mut done = 0;
    let mut last_progress = Instant::now();
    let reports = client::run(&client_config, plans, |_| {
        done += 1;
        if progress && last_progress.elapsed() >= Duration::from_secs(1) {
            eprintln!("loadtest: {done}/{total} requests after {:.1} s", started.elapsed().as_secs_f64());
            last_progress = Instant::now();
        }
    })?;
    let wall = started.elapsed();
    let client_cpu = cpu_time("self")?.saturating_sub(client_cpu_before);

    let mut server_connections = BTreeMap::new();
    let mut server_errors = 0;
    let grace = Instant::now() + STATS_GRACE;
    while server_connections.values().sum::<usize>() < config.connections {
        let Ok(line) = server.lines.recv_timeout(grace.saturating_duration_since(Instant::now())) else { break };
        let Some(fields) = line.strip_prefix("stats ") else { continue };
        let field = |key: &str| fields.split_whitespace().find_map(|f| f.strip_prefix(key)).map(str::to_string);
        *server_connections.entry(field("cc=").unwrap_or_default()).or_insert(0) += 1;
        if field("error=").is_some_and(|error| error != "-") {
            server_errors += 1;
        }
    }
    let server_cpu = cpu_time(server_pid)?.saturating_sub(server_cpu_before);

    let mut errors: Vec<String> = Vec::new();
    let mut failed_requests = 0;
    let mut bytes = 0;
    for request in reports.iter().flat_map(|report| &report.requests) {
        bytes += request.bytes;
        if let Some(error) = &request.error {
            failed_requests += 1;
            if errors.len() < 5 && !errors.contains(error) {
                errors.push(error.clone());
            }
        }
    }
    let mut handshakes: Vec<Duration> = reports.iter().filter_map(|report| report.handshake).collect();
    handshakes.sort();
    Ok(LoadReport {
        connections: config.connections,
        succeeded: reports.iter().filter(|report| report.ok()).count(),
        failed_requests,
        errors,
        wall,
        bytes,
        handshakes,
        server_cpu,
        client_cpu,
        server_connections,
        server_errors,
    })
}
