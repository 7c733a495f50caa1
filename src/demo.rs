//! `flowshare demo`: one controller in a real quiche transfer on loopback.
//!
//! A quiche server sends to a quiche client through an emulated bottleneck
//! (by default 20 Mbit/s, 20 ms each way, one bandwidth-delay product of
//! queue), so that the controller meets loss; the demo prints the sender's
//! window and rate as the transfer goes and a summary at the end.

use std::time::Duration;

use flowshare_controllers::Spec;
use flowshare_quic::link::LinkConfig;
use flowshare_quic::transfer;
use flowshare_quic::transfer::Progress;
use flowshare_quic::transfer::TransferConfig;

use crate::units;

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Controller of the sender, e.g. `multcp:n=4`, `reno`, `cubic`.
    #[arg(long, default_value = "multcp:n=2")]
    cc: String,
    /// Bytes to transfer (e.g. 20M).
    #[arg(long, default_value = "20M", value_parser = units::bytes)]
    bytes: u64,
    /// Bottleneck rate (e.g. 20mbit); `none` for plain loopback.
    #[arg(long, default_value = "20mbit")]
    rate: String,
    /// One-way delay of the bottleneck link.
    #[arg(long, default_value = "20ms", value_parser = units::duration)]
    delay: Duration,
    /// Queue of the bottleneck, packets (default: one bandwidth-delay product).
    #[arg(long)]
    queue: Option<usize>,
    /// How often to print the controller's state.
    #[arg(long, default_value = "500ms", value_parser = units::duration)]
    interval: Duration,
}

pub fn run(args: DemoArgs) -> Result<(), String> {
    let spec: Spec = args.cc.parse().map_err(|e| format!("--cc: {e}"))?;
    let link = match args.rate.as_str() {
        "none" => None,
        rate => {
            let rate_bps = units::bits_per_second(rate).map_err(|e| format!("--rate: {e}"))?;
            let queue_packets = args.queue.unwrap_or_else(|| LinkConfig::bdp_queue(rate_bps, args.delay, 1350));
            if queue_packets == 0 {
                return Err("--queue: must be at least 1 packet".into());
            }
            Some(LinkConfig { rate_bps, delay: args.delay, queue_packets })
        }
    };
    if args.interval.is_zero() {
        return Err("--interval: must be longer than 0".into());
    }

    let mut config = TransferConfig::new(spec.clone(), args.bytes);
    config.link = link;
    config.progress_every = args.interval;
    match &link {
        Some(link) => println!(
            "flowshare demo: {} sends {} bytes through {} Mbit/s, {} ms each way, {}-packet queue",
            spec,
            args.bytes,
            link.rate_bps as f64 / 1e6,
            link.delay.as_secs_f64() * 1e3,
            link.queue_packets
        ),
        None => println!("flowshare demo: {} sends {} bytes over plain loopback", spec, args.bytes),
    }
    println!("{:>7} {:>10} {:>10} {:>10} {:>11} {:>8}  phase", "time_s", "sent_MB", "cwnd_B", "ssthr_B", "pacing_Mbps", "rtt_ms");

    let report = transfer::run(&config, print_progress).map_err(|e| e.to_string())?;

    println!();
    println!("transferred   {} bytes in {:.2} s: {:.2} Mbit/s", report.bytes, report.elapsed.as_secs_f64(), report.goodput_bps / 1e6);
    println!("controller    {}", report.sender.spec);
    println!("final window  {} bytes, smoothed RTT {:.1} ms", report.sender.path_cwnd, report.sender.rtt.as_secs_f64() * 1e3);
    println!("packets       {} sent, {} lost", report.sender.sent_packets, report.sender.lost_packets);
    if let Some(counters) = report.sender.counters {
        println!(
            "controller saw {} congestion events, {} loss events, {} timeouts, {} persistent congestion",
            counters.congestion_events, counters.loss_events, counters.timeouts, counters.persistent_congestion
        );
    }
    if let Some(link) = report.link {
        println!("bottleneck    {} forwarded, {} dropped, queue peaked at {} packets", link.forwarded, link.dropped, link.max_queue);
    }
    Ok(())
}

fn print_progress(progress: &Progress) {
    let (phase, ssthresh, pacing) = match &progress.snapshot {
        Some(snapshot) => (
            snapshot.phase,
            snapshot.ssthresh.map_or("-".to_string(), |s| s.to_string()),
            snapshot.pacing_rate.map_or("-".to_string(), |r| format!("{:.2}", r as f64 * 8.0 / 1e6)),
        ),
        None => ("(quiche built-in)", "-".to_string(), "-".to_string()),
    };
    println!(
        "{:>7.2} {:>10.2} {:>10} {:>10} {:>11} {:>8.1}  {}",
        progress.elapsed.as_secs_f64(),
        progress.sent_bytes as f64 / 1e6,
        progress.cwnd,
        ssthresh,
        pacing,
        progress.rtt.as_secs_f64() * 1e3,
        phase
    );
}
