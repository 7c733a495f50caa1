//! `flowshare bench loopback`: the same transfer with several controllers,
//! goodput side by side.
//!
//! Transfers alternate between the controllers round by round so that
//! background load on the host spreads over all of them; the ratio is each
//! controller's mean goodput over the first one's.

use std::time::Duration;

use flowshare_controllers::Spec;
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
}

pub fn run(args: BenchArgs) -> Result<(), String> {
    match args.what {
        Bench::Loopback(args) => loopback(args),
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
            Some(LinkConfig { rate_bps, delay: args.delay, queue_packets: LinkConfig::bdp_queue(rate_bps, args.delay, 1350) })
        }
    };

    let mut goodputs = vec![Vec::new(); specs.len()];
    for round in 1..=args.rounds {
        for (spec, results) in specs.iter().zip(&mut goodputs) {
            let mut config = TransferConfig::new(spec.clone(), args.bytes);
            config.link = link;
            let report = transfer::run(&config, |_| {}).map_err(|e| format!("{spec}: {e}"))?;
            eprintln!("round {round}/{}: {spec}: {:.1} Mbit/s", args.rounds, report.goodput_bps / 1e6);
            results.push(report.goodput_bps);
        }
    }

    let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
    let reference = mean(&goodputs[0]);
    println!("{:<24} {:>12} {:>12} {:>12} {:>8}", "controller", "mean_Mbps", "min_Mbps", "max_Mbps", "ratio");
    for (spec, results) in specs.iter().zip(&goodputs) {
        let min = results.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = results.iter().cloned().fold(0.0, f64::max);
        println!(
            "{:<24} {:>12.1} {:>12.1} {:>12.1} {:>8.3}",
            spec.to_string(),
            mean(results) / 1e6,
            min / 1e6,
            max / 1e6,
            mean(results) / reference
        );
    }
    Ok(())
}
