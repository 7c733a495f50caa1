//! `flowshare demo`: a weighted controller in real quiche transfers against
//! standard quiche connections through one emulated bottleneck.
//!
//! A quiche server sends to a quiche client per connection, all through one
//! drop-tail bottleneck on loopback (by default 20 Mbit/s, 20 ms each way,
//! one bandwidth-delay product of queue): the weighted connection (`--cc`)
//! and `--count` standard ones (`--against`). Each connection carries its
//! fair share of what the link moves in `--duration`, its weight's share
//! for the weighted one, so when the weight holds they all finish together.
//! The demo prints every connection's rate, the weighted connection's share
//! and the fairness index as it goes (from the start of congestion
//! avoidance on), a summary at the end, and a PNG of the rates over time.
//!
//! By default the weighted connection is `pa-multcp:n=3,pacing=off`:
//! quiche's own CUBIC does not pace, and a paced connection of weight one
//! takes about three of its flowshares at this queue, so the weight only
//! means something when both send alike (controllers/README.md, "Pacing
//! against peers that do not pace"). The demo says so when they do not.

use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use flowshare_controllers::Params;
use flowshare_controllers::Spec;
use flowshare_lab::report::plot;
use flowshare_lab::report::Line;
use flowshare_quic::link::LinkConfig;
use flowshare_quic::transfer;
use flowshare_quic::transfer::Progress;
use flowshare_quic::transfer::TransferConfig;

use crate::units;

/// Datagram size on the link (quiche's payload limit in flowshare).
const DATAGRAM_BYTES: usize = 1350;

/// The first part of the run is slow start and not counted in the summary.
const WARMUP_FRACTION: f64 = 0.2;

/// The weighted connection by default: three flowshares against the
/// default two quiche CUBIC connections, unpaced as they are.
const DEFAULT_CC: &str = "pa-multcp:n=3,pacing=off";

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Controller of the weighted connection, e.g. `pa-multcp:n=3`,
    /// `multcp:n=4`, `multfrc:n=0.5`. The default does not pace, because
    /// quiche's own CUBIC and Reno do not: a paced connection of weight
    /// one takes about three of their flowshares here (controllers/README.md).
    #[arg(long, default_value = DEFAULT_CC)]
    cc: String,
    /// Controller of the standard connections (quiche's own `cubic` or
    /// `reno`, or any spec).
    #[arg(long, default_value = "cubic")]
    against: String,
    /// Standard connections beside the weighted one (0: it runs alone).
    #[arg(long, default_value_t = 2)]
    count: usize,
    /// About how long the transfers last when the weight holds.
    #[arg(long, default_value = "60s", value_parser = units::duration)]
    duration: Duration,
    /// Bottleneck rate (e.g. 20mbit).
    #[arg(long, default_value = "20mbit")]
    rate: String,
    /// One-way delay of the bottleneck link.
    #[arg(long, default_value = "20ms", value_parser = units::duration)]
    delay: Duration,
    /// Queue of the bottleneck, packets (default: one bandwidth-delay product).
    #[arg(long)]
    queue: Option<usize>,
    /// How often to print the rates.
    #[arg(long, default_value = "2s", value_parser = units::duration)]
    interval: Duration,
    /// Where to write the PNG of the rates over time.
    #[arg(long, default_value = "demo-results")]
    out: PathBuf,
}

/// The bytes each connection sent by each report, and when.
struct Timeline {
    /// Per connection: (seconds, bytes sent) at each report.
    samples: Vec<Vec<(f64, u64)>>,
}

impl Timeline {
    /// Bytes connection `k` sent by `t`, interpolated between reports;
    /// `None` after its last report.
    fn sent_at(&self, k: usize, t: f64) -> Option<f64> {
        let samples = &self.samples[k];
        if samples.last().is_none_or(|&(last, _)| t > last) {
            return None;
        }
        let after = samples.iter().position(|&(s, _)| s >= t)?;
        if after == 0 {
            return Some(samples[0].1 as f64 * t / samples[0].0.max(1e-9));
        }
        let ((t0, b0), (t1, b1)) = (samples[after - 1], samples[after]);
        Some(b0 as f64 + (b1 as f64 - b0 as f64) * (t - t0) / (t1 - t0).max(1e-9))
    }

    /// Every connection's rate in bit/s between `from` and `to`, if all
    /// were still sending.
    fn rates(&self, from: f64, to: f64) -> Option<Vec<f64>> {
        (0..self.samples.len())
            .map(|k| Some((self.sent_at(k, to)? - self.sent_at(k, from)?) * 8.0 / (to - from)))
            .collect()
    }

    /// When the first connection finished.
    fn all_active_until(&self) -> f64 {
        self.samples.iter().filter_map(|s| s.last().map(|&(t, _)| t)).fold(f64::INFINITY, f64::min)
    }
}

/// The fairness index of `rates` (the weighted connection's first): its
/// rate per flowshare over the mean standard rate.
fn fairness_index(rates: &[f64], weight: f64) -> Option<f64> {
    let standard = &rates[1..];
    let mean = standard.iter().sum::<f64>() / standard.len() as f64;
    (!standard.is_empty() && mean > 0.0).then(|| rates[0] / weight / mean)
}

pub fn run(args: DemoArgs) -> Result<(), String> {
    let spec: Spec = args.cc.parse().map_err(|e| format!("--cc: {e}"))?;
    let against: Spec = args.against.parse().map_err(|e| format!("--against: {e}"))?;
    let rate_bps = units::bits_per_second(&args.rate).map_err(|e| format!("--rate: {e}"))?;
    let queue_packets = args.queue.unwrap_or_else(|| LinkConfig::bdp_queue(rate_bps, args.delay, DATAGRAM_BYTES));
    if queue_packets == 0 {
        return Err("--queue: must be at least 1 packet".into());
    }
    if args.interval.is_zero() || args.duration < args.interval {
        return Err("--interval must be longer than 0 and --duration at least one interval".into());
    }
    let link = LinkConfig { rate_bps, delay: args.delay, queue_packets };

    // Each connection carries its share of what the link moves in
    // `duration`, so all finish together when the weight holds.
    let weight = spec.weight();
    let flowshares = weight + args.count as f64;
    let link_bytes = rate_bps as f64 / 8.0 * args.duration.as_secs_f64();
    let transfer = |spec: &Spec, share: f64| {
        let mut config = TransferConfig::new(spec.clone(), (link_bytes * share / flowshares).ceil() as u64);
        config.progress_every = args.interval / 4;
        config.time_limit = args.duration * 4 + Duration::from_secs(30);
        config
    };
    let configs: Vec<TransferConfig> =
        std::iter::once(transfer(&spec, weight)).chain((0..args.count).map(|_| transfer(&against, 1.0))).collect();
    let names: Vec<String> =
        std::iter::once(spec.to_string()).chain((1..=args.count).map(|k| format!("{against} #{k}"))).collect();

    println!(
        "flowshare demo: {spec} (weight {weight}) against {} {against} through {} Mbit/s, {} ms each way, {}-packet queue",
        args.count,
        rate_bps as f64 / 1e6,
        args.delay.as_secs_f64() * 1e3,
        queue_packets
    );
    if args.count > 0 {
        println!(
            "its fair share is {:.0} % of the link; a fairness index of 1 means the weight holds",
            weight / flowshares * 100.0
        );
    }
    let spec_paces = paces(&spec);
    if args.count > 0 && spec_paces != paces(&against) {
        let (paced, unpaced) = if spec_paces { (&spec, &against) } else { (&against, &spec) };
        println!(
            "note: {paced} paces its packets and {unpaced} does not; at a drop-tail queue pacing alone is worth \
             about three flowshares here, so compare like with like (`pacing=off` or a paced --against)"
        );
    }
    let header: Vec<String> = names.iter().map(|name| format!("{:>14}", truncate(name, 14))).collect();
    println!("{:>6}  {}  {:>6}  {:>6}", "t_s", header.join(" "), "share", "FI");

    let mut timeline = Timeline { samples: vec![Vec::new(); configs.len()] };
    let mut printed = 0.0;
    let interval = args.interval.as_secs_f64();
    let reports = transfer::run_many(&configs, Some(link), |k, progress: &Progress| {
        timeline.samples[k].push((progress.elapsed.as_secs_f64(), progress.sent_bytes));
        // Print once every connection has reported past the next line.
        let reached = timeline.samples.iter().map(|s| s.last().map_or(0.0, |&(t, _)| t)).fold(f64::INFINITY, f64::min);
        while printed + interval <= reached {
            if let Some(rates) = timeline.rates(printed, printed + interval) {
                print_line(printed + interval, &rates, weight);
            }
            printed += interval;
        }
    })
    .map_err(|e| e.to_string())?;

    summarize(&timeline, &names, weight, args.duration.as_secs_f64());
    for (name, report) in names.iter().zip(&reports) {
        println!(
            "  {name}: {} bytes in {:.1} s, {} packets lost",
            report.bytes,
            report.elapsed.as_secs_f64(),
            report.sender.lost_packets
        );
    }
    if let Some(stats) = reports.first().and_then(|report| report.link) {
        println!(
            "bottleneck: {} forwarded, {} dropped, queue peaked at {} packets",
            stats.forwarded, stats.dropped, stats.max_queue
        );
    }
    let file = draw(&timeline, &names, weight, interval, &args.out)?;
    println!("wrote {}", file.display());
    Ok(())
}

/// Whether connections of `spec` pace their packets: quiche's own Reno and
/// CUBIC do not, flowshare's controllers do unless told `pacing=off`.
fn paces(spec: &Spec) -> bool {
    spec.standard().is_none()
        && spec.build(&Params::default()).is_ok_and(|controller| controller.pacing_rate().is_some())
}

fn truncate(text: &str, width: usize) -> &str {
    text.char_indices().nth(width).map_or(text, |(end, _)| &text[..end])
}

fn print_line(t: f64, rates: &[f64], weight: f64) {
    let columns: Vec<String> = rates.iter().map(|rate| format!("{:>9.2} Mbps", rate / 1e6)).collect();
    let total: f64 = rates.iter().sum();
    let share = if total > 0.0 { format!("{:>5.1}%", rates[0] / total * 100.0) } else { "-".into() };
    let fi = fairness_index(rates, weight).map_or("-".into(), |fi| format!("{fi:.2}"));
    println!("{t:>6.1}  {}  {share:>6}  {fi:>6}", columns.join(" "));
}

/// The rates and fairness index over the time all connections were sending,
/// after the first fifth.
fn summarize(timeline: &Timeline, names: &[String], weight: f64, duration: f64) {
    let until = timeline.all_active_until();
    let from = WARMUP_FRACTION * until.min(duration);
    println!();
    match timeline.rates(from, until).filter(|_| until > from) {
        Some(rates) => {
            println!("from {from:.1} s to {until:.1} s, while all were sending:");
            for (name, rate) in names.iter().zip(&rates) {
                println!("  {name}: {:.2} Mbit/s", rate / 1e6);
            }
            if let Some(fi) = fairness_index(&rates, weight) {
                // Judged as printed, so that 1.10 never reads "does not hold".
                let shown = (fi * 100.0).round() / 100.0;
                let verdict =
                    if (shown - 1.0).abs() <= 0.1 + 1e-9 { "the weight holds" } else { "the weight does not hold" };
                println!("fairness index {fi:.2} (1 = {weight} flowshares): {verdict} within 10 %");
            }
        }
        None => println!("the connections were not all sending long enough to compare"),
    }
}

/// A PNG of each connection's rate over time, with the rate its weight is
/// worth, into `dir/demo-shares.png`.
fn draw(timeline: &Timeline, names: &[String], weight: f64, interval: f64, dir: &Path) -> Result<PathBuf, String> {
    let end = timeline.samples.iter().filter_map(|s| s.last().map(|&(t, _)| t)).fold(0.0, f64::max);
    let mut lines: Vec<Line> = names
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let points = (1..)
                .map(|i| i as f64 * interval)
                .take_while(|&t| t <= end)
                .filter_map(|t| {
                    let (a, b) = (timeline.sent_at(k, t - interval)?, timeline.sent_at(k, t)?);
                    Some((t, (b - a) * 8.0 / interval / 1e6))
                })
                .collect();
            Line { name: name.clone(), points }
        })
        .collect();
    let until = timeline.all_active_until();
    if let Some(rates) = timeline.rates(WARMUP_FRACTION * until, until).filter(|_| names.len() > 1) {
        let total: f64 = rates.iter().sum::<f64>() / 1e6;
        let flowshares = weight + (names.len() - 1) as f64;
        lines.push(Line {
            name: format!("{weight} flowshares"),
            points: vec![(0.0, total * weight / flowshares), (until, total * weight / flowshares)],
        });
        lines.push(Line {
            name: "1 flowshare".into(),
            points: vec![(0.0, total / flowshares), (until, total / flowshares)],
        });
    }
    plot(dir, "demo-shares.png", "flowshare demo: rates through the bottleneck", "seconds", "Mbit/s", &lines)?;
    Ok(dir.join("demo-shares.png"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_knows_which_connections_pace() {
        let paces = |text: &str| paces(&text.parse::<Spec>().unwrap());
        // quiche's own controllers send as acknowledgements open the window.
        assert!(!paces("cubic") && !paces("reno"));
        assert!(!paces(DEFAULT_CC) && !paces("multcp:n=4,pacing=off"));
        assert!(paces("multcp:n=4") && paces("multfrc:n=2") && paces("pa-multcp:n=3,pacing=even"));
    }
}
