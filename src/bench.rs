//! `flowshare bench loopback`: the same transfer with several controllers,
//! goodput side by side.
//!
//! Transfers alternate between the controllers round by round so that
//! background load on the host spreads over all of them; the ratio is each
//! controller's mean goodput over the first one's. For a rate-based
//! controller (MulTFRC) through a bottleneck it also reports how closely
//! the sender kept to the controller's rate: bytes sent over the second half
//! of each transfer against the mean rate the controller asked for, as
//! `tests/loopback.rs` checks it.
//!
//! `flowshare bench server URL`: downloads one URL from any HTTP/3 (or
//! hq-interop) server, round after round, with `flowshare get`'s client,
//! and reports the goodput and, given the server's process ID, the server's
//! CPU time per GB read from /proc: the same measurement for flowshare's
//! server and any other.

use std::time::Duration;

use flowshare_controllers::spec::Delivery;
use flowshare_controllers::Spec;
use flowshare_interop::client;
use flowshare_interop::client::ClientConfig;
use flowshare_interop::client::Fetch;
use flowshare_interop::client::Sink;
use flowshare_interop::endpoint::EndpointOptions;
use flowshare_interop::loadtest::cpu_time;
use flowshare_quic::link::LinkConfig;
use flowshare_quic::transfer;
use flowshare_quic::transfer::TransferConfig;

use crate::units;

#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: Bench,
}

#[derive(clap::Subcommand)]
enum Bench {
    /// Loopback goodput of the same transfer with each controller.
    Loopback(LoopbackArgs),
    /// Goodput of downloading URL from any HTTP/3 server, and with --pid
    /// that server's CPU time per GB.
    Server(ServerArgs),
}

#[derive(clap::Args)]
struct LoopbackArgs {
    /// Controllers to compare (repeat the flag); the first is the reference.
    #[arg(long = "cc", default_values = ["cubic", "multcp:n=1"])]
    specs: Vec<String>,
    /// Bytes per transfer.
    #[arg(long, default_value = "200M", value_parser = units::bytes)]
    bytes: u64,
    /// Transfers per controller.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Bottleneck rate (e.g. 100mbit), or `none` for plain loopback.
    #[arg(long, default_value = "none")]
    rate: String,
    /// One-way delay when a bottleneck is used.
    #[arg(long, default_value = "10ms", value_parser = units::duration)]
    delay: Duration,
    /// Both endpoints send and receive one datagram per UDP message (no
    /// GSO, no GRO).
    #[arg(long)]
    no_gso: bool,
}

#[derive(clap::Args)]
struct ServerArgs {
    /// The file to download, e.g. https://127.0.0.1:4433/big.bin.
    url: String,
    /// The file's size: a response of any other length fails the round.
    #[arg(long, value_parser = units::bytes)]
    size: Option<u64>,
    /// Downloads, one after the other, each on a new connection.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Process ID of the server: its CPU time per round, from /proc.
    #[arg(long)]
    pid: Option<u32>,
    /// The client's controller.
    #[arg(long, default_value = "cubic")]
    cc: String,
    #[command(flatten)]
    access: crate::h3::ServerAccess,
    /// The client sends and receives one datagram per UDP message.
    #[arg(long)]
    no_gso: bool,
    /// Give up on a download after this long.
    #[arg(long, default_value = "300s", value_parser = units::duration)]
    timeout: Duration,
}

pub fn run(args: BenchArgs) -> Result<(), String> {
    match args.what {
        Bench::Loopback(args) => loopback(args),
        Bench::Server(args) => server(args),
    }
}

fn loopback(args: LoopbackArgs) -> Result<(), String> {
    let specs = args
        .specs
        .iter()
        .map(|text| text.parse::<Spec>().map_err(|e| format!("--cc: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    if args.rounds == 0 {
        return Err("--rounds: must be at least 1".into());
    }
    let link = match args.rate.as_str() {
        "none" => None,
        rate => {
            let rate_bps = units::bits_per_second(rate).map_err(|e| format!("--rate: {e}"))?;
            Some(LinkConfig {
                rate_bps,
                delay: args.delay,
                queue_packets: LinkConfig::bdp_queue(rate_bps, args.delay, 1350),
            })
        }
    };

    let mut goodputs = vec![Vec::new(); specs.len()];
    let mut accuracies = vec![Vec::new(); specs.len()];
    for round in 1..=args.rounds {
        for ((spec, results), accuracy) in specs.iter().zip(&mut goodputs).zip(&mut accuracies) {
            let mut config = TransferConfig::new(spec.clone(), args.bytes);
            config.link = link;
            config.offload = crate::h3::offload(args.no_gso);
            config.progress_every = Duration::from_millis(100);
            let mut samples = Vec::new();
            let report = transfer::run(&config, |progress| samples.push(progress.clone()))
                .map_err(|e| format!("{spec}: {e}"))?;
            let rate_based = spec.algorithm().delivery == Delivery::Rate;
            let kept = if rate_based && link.is_some() { rate_kept(&samples) } else { None };
            eprintln!(
                "round {round}/{}: {spec}: {:.1} Mbit/s{}",
                args.rounds,
                report.goodput_bps / 1e6,
                kept.map_or_else(String::new, |kept| format!(", sent {:+.2} % of its rate", (kept - 1.0) * 100.0))
            );
            results.push(report.goodput_bps);
            accuracy.extend(kept);
        }
    }

    let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
    let reference = mean(&goodputs[0]);
    println!(
        "{:<24} {:>12} {:>12} {:>12} {:>8} {:>14}",
        "controller", "mean_Mbps", "min_Mbps", "max_Mbps", "ratio", "sent/rate_%"
    );
    for ((spec, results), accuracy) in specs.iter().zip(&goodputs).zip(&accuracies) {
        let min = results.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = results.iter().cloned().fold(0.0, f64::max);
        let kept =
            if accuracy.is_empty() { "-".to_string() } else { format!("{:+.2}", (mean(accuracy) - 1.0) * 100.0) };
        println!(
            "{:<24} {:>12.1} {:>12.1} {:>12.1} {:>8.3} {:>14}",
            spec.to_string(),
            mean(results) / 1e6,
            min / 1e6,
            max / 1e6,
            mean(results) / reference,
            kept
        );
    }
    Ok(())
}

/// Bytes sent per second over the second half of a transfer (past slow
/// start) over the mean pacing rate the controller asked for meanwhile.
fn rate_kept(samples: &[transfer::Progress]) -> Option<f64> {
    let half = samples.get(samples.len() / 2..samples.len().checked_sub(1)?)?;
    let (first, last) = (half.first()?, half.last()?);
    let seconds = (last.elapsed - first.elapsed).as_secs_f64();
    let rates: Vec<f64> = half.iter().filter_map(|p| p.snapshot.as_ref()?.pacing_rate).map(|r| r as f64).collect();
    if seconds <= 0.0 || rates.is_empty() {
        return None;
    }
    let asked = rates.iter().sum::<f64>() / rates.len() as f64;
    Some((last.sent_bytes - first.sent_bytes) as f64 / seconds / asked)
}

/// One download of `flowshare bench server`.
struct Round {
    bytes: u64,
    seconds: f64,
    server_cpu: Option<f64>,
    client_cpu: f64,
}

fn server(args: ServerArgs) -> Result<(), String> {
    if args.rounds == 0 {
        return Err("--rounds: must be at least 1".into());
    }
    flowshare_interop::log::init(flowshare_interop::log::Level::Warn, "client");
    let cc: Spec = args.cc.parse().map_err(|e| format!("--cc: {e}"))?;
    let scratch =
        flowshare_quic::cert::ScratchDir::new("bench-server").map_err(|e| format!("scratch directory: {e}"))?;
    let fetch = Fetch {
        urls: vec![args.url.clone()],
        out: Some(scratch.path().to_path_buf()),
        upload: None,
        protocol: args.access.alpn,
        connections: 1,
        connection_per_url: false,
        resume: false,
        bind: Vec::new(),
        connect: args.access.connect,
        sni: args.access.sni.clone(),
        weight: None,
        headers: Vec::new(),
    };
    let mut schedule = fetch.prepare()?;
    // Bodies are counted, not stored: the disk is not what is measured.
    for request in schedule.batches.iter_mut().flatten().flat_map(|plan| plan.requests.iter_mut()) {
        request.sink = Sink::Discard;
    }
    let plans = schedule.batches.into_iter().next().unwrap_or_default();
    let config = ClientConfig {
        protocol: args.access.alpn,
        cc,
        insecure: args.access.insecure,
        ca: args.access.ca.clone(),
        endpoint: EndpointOptions { qlog_dir: None, keylog: None, stats: false, idle_timeout: Duration::from_secs(30) },
        time_limit: args.timeout,
        headers: schedule.headers,
        resume: false,
        early_data: false,
        offload: crate::h3::offload(args.no_gso),
        ack_every: 1,
    };
    let pid = args.pid.map(|pid| pid.to_string());
    println!("flowshare bench server: {} x {}, load average {}", args.rounds, args.url, load_average());
    let mut rounds = Vec::with_capacity(args.rounds);
    for round in 1..=args.rounds {
        let server_before = pid.as_deref().map(cpu_time).transpose()?;
        let client_before = cpu_time("self")?;
        let reports = client::run(&config, plans.clone(), |_| {})?;
        let client_cpu = cpu_time("self")?.saturating_sub(client_before).as_secs_f64();
        let server_cpu = match (pid.as_deref(), server_before) {
            (Some(pid), Some(before)) => Some(cpu_time(pid)?.saturating_sub(before).as_secs_f64()),
            _ => None,
        };
        let request = reports
            .iter()
            .flat_map(|report| &report.requests)
            .next()
            .ok_or_else(|| format!("round {round}: no response"))?;
        if let Some(error) = &request.error {
            return Err(format!("round {round}: {}: {error}", args.url));
        }
        if let Some(size) = args.size.filter(|&size| size != request.bytes) {
            return Err(format!("round {round}: {} has {} bytes, not --size {size}", args.url, request.bytes));
        }
        let result =
            Round { bytes: request.bytes, seconds: request.elapsed.as_secs_f64().max(1e-9), server_cpu, client_cpu };
        println!(
            "round {round}/{}: {} bytes in {:.3} s, {:.1} Mbit/s, server cpu {}, client cpu {:.2} s, load {}",
            args.rounds,
            result.bytes,
            result.seconds,
            result.bytes as f64 * 8.0 / result.seconds / 1e6,
            result.server_cpu.map_or_else(
                || "-".to_string(),
                |cpu| format!("{cpu:.2} s ({:.2} s/GB)", cpu / (result.bytes as f64 / 1e9))
            ),
            result.client_cpu,
            load_average()
        );
        rounds.push(result);
    }
    let goodputs: Vec<f64> = rounds.iter().map(|r| r.bytes as f64 * 8.0 / r.seconds / 1e6).collect();
    let (min, max) = goodputs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &g| (lo.min(g), hi.max(g)));
    let bytes: u64 = rounds.iter().map(|r| r.bytes).sum();
    let seconds: f64 = rounds.iter().map(|r| r.seconds).sum();
    print!("goodput {:.1} Mbit/s (min {min:.1}, max {max:.1})", bytes as f64 * 8.0 / seconds / 1e6);
    let server_cpu: Option<f64> = rounds.iter().map(|r| r.server_cpu).sum();
    if let Some(cpu) = server_cpu {
        let per_gb: Vec<f64> =
            rounds.iter().filter_map(|r| r.server_cpu.map(|cpu| cpu / (r.bytes as f64 / 1e9))).collect();
        let (lo, hi) = per_gb.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &c| (lo.min(c), hi.max(c)));
        print!(", server cpu {:.2} s/GB (min {lo:.2}, max {hi:.2})", cpu / (bytes as f64 / 1e9));
    }
    let client_cpu: f64 = rounds.iter().map(|r| r.client_cpu).sum();
    println!(", client cpu {:.2} s/GB", client_cpu / (bytes as f64 / 1e9));
    Ok(())
}

/// The 1-minute load average, for the record next to each figure.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "-".to_string())
}
