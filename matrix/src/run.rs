//! The matrix run: input checks, the networks, one set of containers per
//! test, the runner's checks, matrix.json, and cleanup whatever happens.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;
use std::time::SystemTime;

use flowshare_controllers::grammar::split_spec_list;
use flowshare_controllers::Spec;
use flowshare_testbed::cli::interrupt_flag;
use flowshare_testbed::run::load_average;
use serde::Serialize;

use crate::cases;
use crate::cases::TestCase;
use crate::docker;
use crate::docker::PREFIX;
use crate::one_test::run_once;
use crate::one_test::Context;
use crate::one_test::Random;
use crate::report;
use crate::sim;
use crate::trace;
use crate::MatrixAction;
use crate::MatrixArgs;

pub const LEFT_SUBNET: &str = "198.18.0.0/24";
pub const RIGHT_SUBNET: &str = "198.19.0.0/24";
pub(crate) const SIM_LEFT: &str = "198.18.0.2";
pub(crate) const SIM_RIGHT: &str = "198.19.0.2";
pub(crate) const CLIENT_ADDRESS: &str = "198.18.0.100";
pub(crate) const SERVER_ADDRESS: &str = "198.19.0.100";
pub(crate) const IPERF_CLIENT_ADDRESS: &str = "198.18.0.90";
pub(crate) const IPERF_SERVER_ADDRESS: &str = "198.19.0.110";

pub(crate) const SIM_IMAGE: &str = "flowshare-sim:latest";
pub(crate) const IPERF_IMAGE: &str = "flowshare-iperf:latest";

/// Time the containers get to start before the test case's own limit
/// counts: the simulator waits up to 10 s for the server, the client for
/// the simulator.
pub(crate) const STARTUP_ALLOWANCE: Duration = Duration::from_secs(25);

/// An implementation the matrix can run, and its image.
pub(crate) fn image_of(implementation: &str) -> Option<&'static str> {
    match implementation {
        "flowshare" => Some("flowshare-endpoint:latest"),
        "aioquic" => Some("flowshare-aioquic:latest"),
        _ => None,
    }
}

fn parse_implementations(list: &str, option: &str) -> Result<Vec<String>, String> {
    let mut chosen: Vec<String> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if image_of(name).is_none() {
            return Err(format!("unknown implementation '{name}' in {option}; known: flowshare, aioquic"));
        }
        if !chosen.iter().any(|c| c == name) {
            chosen.push(name.to_string());
        }
    }
    if chosen.is_empty() {
        return Err(format!("{option} names no implementation"));
    }
    Ok(chosen)
}

/// One server x controller x client combination.
#[derive(Clone, Debug)]
pub(crate) struct Cell {
    pub(crate) server: String,
    pub(crate) client: String,
    /// The server's controller: a flowshare spec, or aioquic's reno/cubic.
    pub(crate) controller: String,
    pub(crate) weight: f64,
}

impl Cell {
    fn label(&self) -> String {
        format!("{}({}) x {}", self.server, self.controller, self.client)
    }

    fn slug(&self) -> String {
        let controller: String =
            self.controller.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '-' }).collect();
        format!("{}-{}_x_{}", self.server, controller, self.client)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Succeeded,
    Failed,
    Unsupported,
}

/// One run of one test case.
#[derive(Clone, Debug, Serialize)]
pub struct RunRecord {
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput_kbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shares: Option<sim::Shares>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim_health: Option<sim::Health>,
    pub dir: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    pub mean: f64,
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
    pub values: Vec<f64>,
}

impl Stats {
    pub fn of(values: &[f64]) -> Option<Stats> {
        if values.is_empty() {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        // Sample standard deviation (n - 1), as the runner's statistics module.
        let stddev =
            if n > 1 { (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() } else { 0.0 };
        let min = values.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = values.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        Some(Stats { mean, stddev, min, max, n, values: values.to_vec() })
    }
}

/// Crosstraffic: the QUIC flow against the iperf flow, per run and over runs.
#[derive(Clone, Debug, Serialize)]
pub struct CrossStats {
    pub quic_kbps: Stats,
    pub iperf_kbps: Stats,
    /// QUIC throughput over iperf throughput, per run.
    pub ratio: Stats,
    /// The controller's weight: the ratio it asks for.
    pub weight: f64,
    /// ratio / weight: 1 is exactly the asked-for share.
    pub ratio_over_weight: f64,
    pub iperf_congestion: String,
}

/// One test case of one cell.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    pub server: String,
    pub client: String,
    pub controller: String,
    pub weight: f64,
    pub testcase: String,
    pub abbreviation: String,
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput_kbps: Option<Stats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crosstraffic: Option<CrossStats>,
    pub runs: Vec<RunRecord>,
}

#[derive(Debug, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub load_before: [f64; 3],
    pub load_after: [f64; 3],
}

#[derive(Debug, Serialize)]
pub struct Matrix {
    pub command: String,
    pub started_unix: u64,
    pub wall_seconds: f64,
    pub completed: bool,
    pub bandwidth: String,
    pub iperf_congestion: String,
    pub aioquic_cc: String,
    pub servers: Vec<String>,
    pub clients: Vec<String>,
    pub controllers: Vec<String>,
    pub testcases: Vec<String>,
    pub images: BTreeMap<String, String>,
    pub machine: Machine,
    pub results: Vec<CaseResult>,
}

/// Removes every `flowshare-matrix-*` container and network when dropped:
/// at the end, on an error and after an interrupt.
struct Cleanup;

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Err(e) = docker::remove_all(PREFIX) {
            eprintln!("flowshare matrix: {e}");
        }
    }
}

/// Parsed and checked options.
pub(crate) struct Plan {
    pub(crate) servers: Vec<String>,
    pub(crate) clients: Vec<String>,
    pub(crate) controllers: Vec<(String, f64)>,
    pub(crate) cases: Vec<TestCase>,
    pub(crate) repetitions: Option<usize>,
    pub(crate) bandwidth: String,
    /// The bandwidth over 10 Mbit/s: measurement files grow with it.
    pub(crate) scale: f64,
    pub(crate) out: PathBuf,
    pub(crate) must_pass: Vec<(String, String)>,
}

fn parse_bandwidth(text: &str) -> Result<f64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let (number, unit) = lower.split_at(lower.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(lower.len()));
    let value: f64 = number.parse().map_err(|_| format!("--bandwidth {text}: expected a rate like 10Mbps"))?;
    let factor = match unit {
        "bps" => 1.0,
        "kbps" => 1e3,
        "mbps" => 1e6,
        "gbps" => 1e9,
        _ => return Err(format!("--bandwidth {text}: expected a rate like 10Mbps (bps, kbps, Mbps, Gbps)")),
    };
    let bps = value * factor;
    if !(1e5..=1e9).contains(&bps) {
        return Err(format!("--bandwidth {text} is out of range; accepted 100kbps to 1Gbps"));
    }
    Ok(bps)
}

fn plan(args: &MatrixArgs) -> Result<Plan, String> {
    let servers = parse_implementations(&args.servers, "--servers")?;
    let clients = parse_implementations(&args.clients, "--clients")?;
    let cases = cases::select(&args.testcases)?;
    let mut controllers = Vec::new();
    for text in split_spec_list(&args.controllers) {
        let spec: Spec = text.parse().map_err(|e: flowshare_controllers::SpecError| e.to_string())?;
        controllers.push((spec.to_string(), spec.weight()));
    }
    if controllers.is_empty() {
        return Err("--controllers names no controller".to_string());
    }
    for (value, option) in [(&args.aioquic_cc, "--aioquic-cc"), (&args.iperf_congestion, "--iperf-congestion")] {
        if value != "cubic" && value != "reno" {
            return Err(format!("{option} {value}: accepted cubic or reno"));
        }
    }
    if args.repetitions == Some(0) {
        return Err("--repetitions must be at least 1".to_string());
    }
    let bps = parse_bandwidth(&args.bandwidth)?;
    let Some(out) = args.out.clone() else {
        return Err("--out DIR is required (where matrix.json, logs and pcaps go)".to_string());
    };
    let mut must_pass = Vec::new();
    if let Some(list) = &args.must_pass {
        for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((server, client)) = pair.split_once(':') else {
                return Err(format!("--must-pass {pair}: expected SERVER:CLIENT, e.g. flowshare:flowshare"));
            };
            if !servers.iter().any(|s| s == server) || !clients.iter().any(|c| c == client) {
                return Err(format!("--must-pass {pair}: that pair is not in --servers/--clients"));
            }
            must_pass.push((server.to_string(), client.to_string()));
        }
    }
    Ok(Plan {
        servers,
        clients,
        controllers,
        cases,
        repetitions: args.repetitions,
        bandwidth: args.bandwidth.clone(),
        scale: (bps / 10e6).max(1.0),
        out,
        must_pass,
    })
}

fn subnet_overlaps(subnet: &str, ours: &str) -> bool {
    let parse = |cidr: &str| -> Option<(u32, u32)> {
        let (address, prefix) = cidr.split_once('/')?;
        let octets: Vec<u32> = address.split('.').map(|o| o.parse().ok()).collect::<Option<Vec<u32>>>()?;
        if octets.len() != 4 {
            return None;
        }
        let value = (octets[0] << 24) | (octets[1] << 16) | (octets[2] << 8) | octets[3];
        let prefix: u32 = prefix.parse().ok()?;
        let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix.min(32)) };
        Some((value & mask, mask))
    };
    match (parse(subnet), parse(ours)) {
        (Some((a, ma)), Some((b, mb))) => {
            let mask = ma & mb;
            a & mask == b & mask
        }
        _ => false,
    }
}

/// Everything that must hold before anything is created.
fn preflight(plan: &Plan) -> Result<BTreeMap<String, String>, String> {
    docker::engine()?;
    let containers = docker::containers(PREFIX)?;
    let networks = docker::networks(PREFIX)?;
    if !containers.is_empty() || !networks.is_empty() {
        let all: Vec<String> = containers.into_iter().chain(networks).collect();
        return Err(format!(
            "an earlier matrix run left {} behind; remove them with `flowshare matrix clean`",
            all.join(", ")
        ));
    }
    let mut images = vec![SIM_IMAGE];
    for implementation in plan.servers.iter().chain(plan.clients.iter()) {
        if let Some(image) = image_of(implementation) {
            if !images.contains(&image) {
                images.push(image);
            }
        }
    }
    if plan.cases.iter().any(|c| c.iperf) {
        images.push(IPERF_IMAGE);
    }
    let mut ids = BTreeMap::new();
    for image in images {
        if !docker::image_exists(image) {
            return Err(format!("image {image} is missing; build the images with docker/build.sh"));
        }
        ids.insert(image.to_string(), docker::image_id(image));
    }
    trace::available()?;
    // The layout's addresses must be free: another Docker network on the
    // same subnets (the compose layout left up, say) would clash.
    for (name, subnets) in docker::subnets()? {
        for subnet in subnets {
            for ours in [LEFT_SUBNET, RIGHT_SUBNET] {
                if subnet_overlaps(&subnet, ours) {
                    return Err(format!(
                        "docker network {name} already uses {subnet}, which the matrix needs ({ours}); \
                         remove it (docker network rm {name}, or docker-compose -f docker/compose.yml down)"
                    ));
                }
            }
        }
    }
    Ok(ids)
}

fn create_networks() -> Result<(), String> {
    for (name, subnet) in [("leftnet", LEFT_SUBNET), ("rightnet", RIGHT_SUBNET)] {
        let network = format!("{PREFIX}{name}");
        docker::quick(&[
            "network",
            "create",
            "--driver",
            "bridge",
            "--subnet",
            subnet,
            "--opt",
            "com.docker.network.bridge.enable_ip_masquerade=false",
            "--label",
            "flowshare.matrix=1",
            &network,
        ])
        .map_err(|e| format!("cannot create network {network} ({subnet}): {e}"))?;
    }
    Ok(())
}

fn summarize(cell: &Cell, case: &TestCase, runs: Vec<RunRecord>, iperf: &str) -> CaseResult {
    let failed = runs.iter().find(|r| r.outcome == Outcome::Failed);
    let unsupported = runs.iter().find(|r| r.outcome == Outcome::Unsupported);
    let (outcome, reason) = match (failed, unsupported) {
        (Some(f), _) => (Outcome::Failed, f.reason.clone()),
        (None, Some(u)) => (Outcome::Unsupported, u.reason.clone()),
        _ => (Outcome::Succeeded, None),
    };
    let goodputs: Vec<f64> = runs.iter().filter_map(|r| r.goodput_kbps).collect();
    let goodput_kbps = if case.is_measurement() { Stats::of(&goodputs) } else { None };
    let crosstraffic = if case.iperf {
        let shares: Vec<&sim::Shares> = runs.iter().filter_map(|r| r.shares.as_ref()).collect();
        let quic: Vec<f64> = shares.iter().map(|s| s.quic_kbps).collect();
        let tcp: Vec<f64> = shares.iter().map(|s| s.iperf_kbps).collect();
        let ratios: Vec<f64> =
            shares.iter().filter(|s| s.iperf_kbps > 0.0).map(|s| s.quic_kbps / s.iperf_kbps).collect();
        match (Stats::of(&quic), Stats::of(&tcp), Stats::of(&ratios)) {
            (Some(quic_kbps), Some(iperf_kbps), Some(ratio)) => Some(CrossStats {
                ratio_over_weight: ratio.mean / cell.weight,
                quic_kbps,
                iperf_kbps,
                ratio,
                weight: cell.weight,
                iperf_congestion: iperf.to_string(),
            }),
            _ => None,
        }
    } else {
        None
    };
    CaseResult {
        server: cell.server.clone(),
        client: cell.client.clone(),
        controller: cell.controller.clone(),
        weight: cell.weight,
        testcase: case.name.to_string(),
        abbreviation: case.abbreviation.to_string(),
        outcome,
        reason,
        goodput_kbps,
        crosstraffic,
        runs,
    }
}

fn write_json(path: &Path, matrix: &Matrix) -> Result<(), String> {
    let text = serde_json::to_string_pretty(matrix).map_err(|e| format!("cannot encode matrix.json: {e}"))?;
    let temporary = path.with_extension("json.tmp");
    std::fs::write(&temporary, text + "\n").map_err(|e| format!("cannot write {}: {e}", temporary.display()))?;
    std::fs::rename(&temporary, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn certificates(out: &Path) -> Result<PathBuf, String> {
    let certs = out.join("certs");
    std::fs::create_dir_all(&certs).map_err(|e| format!("cannot create {}: {e}", certs.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the flowshare binary: {e}"))?;
    let output = std::process::Command::new(exe)
        .args(["cert", "--out"])
        .arg(&certs)
        .args(["--name", "server", "--name", "server4", "--name", "server46", "--name", "localhost"])
        .output()
        .map_err(|e| format!("cannot run flowshare cert: {e}"))?;
    if !output.status.success() {
        return Err(format!("flowshare cert failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    // The runner's names.
    std::fs::rename(certs.join("key.pem"), certs.join("priv.key"))
        .map_err(|e| format!("cannot rename the key in {}: {e}", certs.display()))?;
    Ok(certs)
}

fn format_duration(seconds: f64) -> String {
    let s = seconds.round() as u64;
    if s >= 3600 {
        format!("{} h {:02} min", s / 3600, (s % 3600) / 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

pub fn run(args: MatrixArgs) -> Result<(), String> {
    if let Some(MatrixAction::Clean) = args.action {
        docker::engine()?;
        let (containers, networks) = docker::remove_all(PREFIX)?;
        if containers.is_empty() && networks.is_empty() {
            println!("nothing to clean: no flowshare-matrix-* container or network");
        } else {
            println!(
                "removed {} container(s) and {} network(s): {}",
                containers.len(),
                networks.len(),
                containers.iter().chain(networks.iter()).cloned().collect::<Vec<_>>().join(", ")
            );
        }
        return Ok(());
    }
    let plan = plan(&args)?;
    let images = preflight(&plan)?;
    let interrupted = interrupt_flag()?;
    std::fs::create_dir_all(&plan.out).map_err(|e| format!("cannot create {}: {e}", plan.out.display()))?;
    let certs = certificates(&plan.out)?;

    let mut cells = Vec::new();
    for server in &plan.servers {
        let controllers: Vec<(String, f64)> =
            if server == "flowshare" { plan.controllers.clone() } else { vec![(args.aioquic_cc.clone(), 1.0)] };
        for (controller, weight) in controllers {
            for client in &plan.clients {
                cells.push(Cell {
                    server: server.clone(),
                    client: client.clone(),
                    controller: controller.clone(),
                    weight,
                });
            }
        }
    }
    let repetitions =
        |case: &TestCase| if case.is_measurement() { plan.repetitions.unwrap_or(case.repetitions) } else { 1 };
    let total: usize = cells.len() * plan.cases.iter().map(repetitions).sum::<usize>();

    let started_unix = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let started = Instant::now();
    let mut matrix = Matrix {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        started_unix,
        wall_seconds: 0.0,
        completed: false,
        bandwidth: plan.bandwidth.clone(),
        iperf_congestion: args.iperf_congestion.clone(),
        aioquic_cc: args.aioquic_cc.clone(),
        servers: plan.servers.clone(),
        clients: plan.clients.clone(),
        controllers: plan.controllers.iter().map(|(c, _)| c.clone()).collect(),
        testcases: plan.cases.iter().map(|c| c.name.to_string()).collect(),
        images,
        machine: Machine {
            nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
            load_before: load_average(),
            load_after: [f64::NAN; 3],
        },
        results: Vec::new(),
    };
    let json_path = plan.out.join("matrix.json");
    eprintln!(
        "flowshare matrix: {} cell(s) x {} test case(s), {} run(s), {}; results in {}",
        cells.len(),
        plan.cases.len(),
        total,
        plan.bandwidth,
        plan.out.display()
    );

    let _cleanup = Cleanup;
    create_networks()?;
    let seed = started_unix ^ (u64::from(std::process::id()) << 32);
    let mut ctx = Context {
        plan: &plan,
        certs,
        interrupted: Arc::clone(&interrupted),
        random: Random::new(seed),
        iperf: args.iperf_congestion.clone(),
        aioquic_cc: args.aioquic_cc.clone(),
    };
    let mut done = 0usize;
    let mut outcome = Ok(());
    'cells: for cell in &cells {
        for case in &plan.cases {
            let reps = repetitions(case);
            let mut runs = Vec::new();
            for rep in 0..reps {
                if interrupted.load(Ordering::Relaxed) {
                    outcome = Err("interrupted".to_string());
                    break 'cells;
                }
                done += 1;
                let name = if reps > 1 { format!("{}-{}", case.name, rep + 1) } else { case.name.to_string() };
                let dir = plan.out.join(cell.slug()).join(&name);
                let _ = std::fs::remove_dir_all(&dir);
                eprint!(
                    "[{done:>3}/{total} {:>7}] {:<40} {:<15} ",
                    format_duration(started.elapsed().as_secs_f64()),
                    cell.label(),
                    name
                );
                let _ = std::io::stderr().flush();
                match run_once(&mut ctx, cell, case, &dir) {
                    Ok(record) => {
                        eprintln!("{}", report::run_line(&record));
                        let failed = record.outcome != Outcome::Succeeded;
                        runs.push(record);
                        // As the runner: a measurement stops at its first failure.
                        if failed {
                            done += reps - rep - 1;
                            break;
                        }
                    }
                    Err(e) if e == "interrupted" => {
                        eprintln!("interrupted");
                        outcome = Err("interrupted".to_string());
                        break 'cells;
                    }
                    Err(e) => {
                        eprintln!("error");
                        outcome = Err(e);
                        break 'cells;
                    }
                }
            }
            matrix.results.push(summarize(cell, case, runs, &args.iperf_congestion));
            matrix.wall_seconds = started.elapsed().as_secs_f64();
            write_json(&json_path, &matrix)?;
        }
    }
    drop(_cleanup);
    matrix.wall_seconds = started.elapsed().as_secs_f64();
    matrix.machine.load_after = load_average();
    matrix.completed = outcome.is_ok();
    write_json(&json_path, &matrix)?;
    if let Err(e) = outcome {
        if e == "interrupted" {
            return Err(format!(
                "interrupted after {}: every flowshare-matrix container and network removed; partial results in {}",
                format_duration(matrix.wall_seconds),
                json_path.display()
            ));
        }
        return Err(format!("{e} (every flowshare-matrix container and network removed)"));
    }
    print!("{}", report::table(&matrix));
    println!("wrote {}", json_path.display());
    let must_fail: Vec<&CaseResult> = matrix
        .results
        .iter()
        .filter(|r| r.outcome == Outcome::Failed)
        .filter(|r| plan.must_pass.iter().any(|(s, c)| *s == r.server && *c == r.client))
        .collect();
    if let Some(first) = must_fail.first() {
        return Err(format!(
            "{} test(s) of --must-pass pairs failed, e.g. {}({}) x {} {}: {}",
            must_fail.len(),
            first.server,
            first.controller,
            first.client,
            first.testcase,
            first.reason.as_deref().unwrap_or("?")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::one_test::check_files;

    #[test]
    fn subnets_overlap_by_prefix() {
        assert!(subnet_overlaps("198.18.0.0/16", LEFT_SUBNET));
        assert!(subnet_overlaps("198.18.0.0/24", LEFT_SUBNET));
        assert!(!subnet_overlaps("198.18.1.0/24", LEFT_SUBNET));
        assert!(!subnet_overlaps("172.17.0.0/16", RIGHT_SUBNET));
        assert!(!subnet_overlaps("fd00::/64", RIGHT_SUBNET));
    }

    #[test]
    fn bandwidths_parse_with_units() {
        assert_eq!(parse_bandwidth("10Mbps").unwrap(), 10e6);
        assert_eq!(parse_bandwidth("100mbps").unwrap(), 100e6);
        assert!(parse_bandwidth("fast").unwrap_err().contains("10Mbps"));
        assert!(parse_bandwidth("5Gbps").is_err());
    }

    #[test]
    fn stats_use_the_sample_deviation() {
        let stats = Stats::of(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!((stats.mean, stats.stddev, stats.min, stats.max), (2.0, 1.0, 1.0, 3.0));
        assert!(Stats::of(&[]).is_none());
    }

    #[test]
    fn file_check_reports_missing_and_changed_files() {
        let dir = std::env::temp_dir().join(format!("flowshare-matrix-files-{}", std::process::id()));
        let (www, downloads) = (dir.join("www"), dir.join("downloads"));
        std::fs::create_dir_all(&www).unwrap();
        std::fs::create_dir_all(&downloads).unwrap();
        std::fs::write(www.join("a"), b"hello").unwrap();
        std::fs::write(www.join("b"), b"world").unwrap();
        let files = vec![("a".to_string(), 5), ("b".to_string(), 5)];
        std::fs::write(downloads.join("a"), b"hello").unwrap();
        assert!(check_files(&www, &downloads, &files).unwrap().starts_with("1 of 2 files missing"));
        std::fs::write(downloads.join("b"), b"w0rld").unwrap();
        assert!(check_files(&www, &downloads, &files).unwrap().contains("contents differ"));
        std::fs::write(downloads.join("b"), b"world").unwrap();
        assert_eq!(check_files(&www, &downloads, &files), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
