//! From what a run measured to the lab's [`RunResult`], so that the table,
//! `summary.json`, the series and the plots are the lab's, plus what only
//! the testbed has: endpoint goodput and the emulation's own health.
//!
//! Throughput is the lab's: IP bytes of the flow that the bottleneck
//! delivered towards the receiver, in bins, after the warm-up. Loss, loss
//! events and queueing delay are the bottleneck's view too, so every
//! transport is measured the same way; goodput is the receiving
//! application's.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;
use serde_json::Value;

use flowshare_lab::metrics;
use flowshare_lab::report;
use flowshare_lab::report::fmt;
use flowshare_lab::report::Line;
use flowshare_lab::report::Table;
use flowshare_lab::result::Completion;
use flowshare_lab::result::ConnectionResult;
use flowshare_lab::result::LinkResult;
use flowshare_lab::result::LinkStats;
use flowshare_lab::result::RunResult;
use flowshare_lab::result::SenderStats;

use crate::episodes;
use crate::episodes::Episodes;
use crate::run::GoodputClock;
use crate::run::Measurements;
use crate::scenario::Plan;

/// Real time may lag simulated time by this much at a sampling tick before
/// the tick counts as late.
pub const LATE_TICK_MS: f64 = 5.0;
/// A run is trusted when at most this share of its ticks are late...
pub const MAX_LATE_SHARE: f64 = 0.01;
/// ... and real time never lagged by more than this.
pub const MAX_LAG_MS: f64 = 50.0;

/// How well ns-3 kept real time during a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Emulation {
    /// Largest lag of real time behind simulated time, ms.
    pub max_lag_ms: f64,
    /// Mean lag, ms.
    pub mean_lag_ms: f64,
    /// Sampling ticks, and those later than [`LATE_TICK_MS`].
    pub ticks: u64,
    /// See `ticks`.
    pub late_ticks: u64,
    /// Packets the raw sockets' kernel buffers dropped.
    pub socket_drops: u64,
    /// Whether the run's numbers can be trusted (see the constants).
    pub trusted: bool,
    /// ns-3's mean wait for a CPU each time it woke, µs (where measured):
    /// concurrent runs (`scorecard testbed --jobs`) raise it before they
    /// make real time lag.
    pub cpu_wait_us: Option<f64>,
}

impl Emulation {
    /// From the `ns3-summary.json` the ns-3 program writes at its end (the
    /// testbed's runs and the simulator container's alike).
    pub fn from_summary(summary: &Value) -> Emulation {
        let lag = &summary["lag"];
        let ticks = lag["ticks"].as_u64().unwrap_or(0);
        let late_ticks = lag["late_ticks"].as_u64().unwrap_or(0);
        let max_lag_ms = lag["max_ms"].as_f64().unwrap_or(f64::NAN);
        let socket_drops =
            summary["sockets"].as_array().into_iter().flatten().map(|s| s["drops"].as_u64().unwrap_or(0)).sum();
        let trusted = ticks > 0
            && socket_drops == 0
            && max_lag_ms <= MAX_LAG_MS
            && late_ticks as f64 <= MAX_LATE_SHARE * ticks as f64;
        Emulation {
            max_lag_ms,
            mean_lag_ms: lag["mean_ms"].as_f64().unwrap_or(f64::NAN),
            ticks,
            late_ticks,
            socket_drops,
            trusted,
            cpu_wait_us: None,
        }
    }

    /// One line for the table.
    pub fn line(&self) -> String {
        format!(
            "emulation: max lag {} ms, mean {} ms, {}/{} ticks late (> {LATE_TICK_MS} ms), {} socket drops: {}",
            fmt(Some(self.max_lag_ms), 1),
            fmt(Some(self.mean_lag_ms), 2),
            self.late_ticks,
            self.ticks,
            self.socket_drops,
            if self.trusted { "real time held" } else { "SUSPECT (CPU-starved: do not trust this run)" }
        )
    }

    /// As JSON.
    pub fn to_json(&self) -> Value {
        json!({"max_lag_ms": report::number(Some(self.max_lag_ms)), "mean_lag_ms": report::number(Some(self.mean_lag_ms)),
            "ticks": self.ticks, "late_ticks": self.late_ticks, "late_tick_ms": LATE_TICK_MS,
            "socket_drops": self.socket_drops, "trusted": self.trusted,
            "ns3_cpu_wait_us_per_wakeup": report::number(self.cpu_wait_us)})
    }
}

/// A run turned into the lab's result plus the testbed's extras.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The lab's view of the run.
    pub run: RunResult,
    /// Goodput of each flow after the warm-up, bit/s (`None` for CBR or
    /// when the endpoint reported nothing).
    pub goodput_bps: Vec<Option<f64>>,
    /// Per flow and link: IP bytes delivered after the warm-up.
    pub per_link_bytes: Vec<Vec<u64>>,
    /// The emulation's health.
    pub emulation: Emulation,
    /// Load averages before and after.
    pub load: ([f64; 3], [f64; 3]),
    /// Endpoint goodput series: per flow (seconds, Mbit/s).
    pub goodput_series: Vec<Vec<(f64, f64)>>,
    /// Per link, its queue's overflow episodes after the warm-up and the
    /// share of them that caught each flow (`None`: it dropped nothing).
    pub episodes: Vec<Option<Episodes>>,
}

/// Cumulative bytes at `t`, linearly interpolated between samples.
fn cumulative_at(samples: &[(f64, u64)], t: f64) -> Option<f64> {
    let first = samples.first()?;
    if t <= first.0 {
        return Some(first.1 as f64);
    }
    for pair in samples.windows(2) {
        let ((t0, b0), (t1, b1)) = (pair[0], pair[1]);
        if t <= t1 {
            let share = if t1 > t0 { (t - t0) / (t1 - t0) } else { 1.0 };
            return Some(b0 as f64 + share * (b1 as f64 - b0 as f64));
        }
    }
    samples.last().map(|&(_, bytes)| bytes as f64)
}

/// When flow `k`'s data started, seconds after the origin: the start of the
/// first interval in which ns-3 saw its busiest connection (iperf3's
/// control connection is the other one).
fn data_start(
    measured: &Measurements,
    k: usize,
    plan: &Plan,
    to_run_time: &dyn Fn(f64) -> f64,
    bin: f64,
) -> Option<f64> {
    let flow = &plan.flows[k];
    let mut ports: Vec<(u16, u64, f64)> = Vec::new();
    for row in measured
        .series
        .iter()
        .filter(|r| r.direction == 'd' && flow.owns(r.protocol, r.source_port, r.destination_port))
    {
        match ports.iter_mut().find(|(port, _, _)| *port == row.source_port) {
            Some(entry) => {
                entry.1 += row.bytes;
                entry.2 = entry.2.min(row.sim_s);
            }
            None => ports.push((row.source_port, row.bytes, row.sim_s)),
        }
    }
    ports.iter().max_by_key(|(_, bytes, _)| *bytes).map(|&(_, _, first)| to_run_time(first) - bin)
}

/// Builds the outcome of `plan` from `measured`.
pub fn outcome(plan: &Plan, measured: &Measurements) -> Outcome {
    let setup = &plan.setup;
    let bin = setup.bin as f64 * 1e-9;
    let warmup = setup.warmup as f64 * 1e-9;
    let duration = plan.duration_s();
    let measured_s = duration - warmup;
    let bins = (duration / bin).ceil() as usize;
    let first_measured = (warmup / bin).round() as usize;
    // Simulated time maps to wall time by the smallest observed offset:
    // the ticks that ran on time.
    let offset = measured
        .monitor
        .iter()
        .map(|row| row.wall_s - row.sim_s)
        .chain(measured.series.iter().map(|row| row.wall_s - row.sim_s))
        .fold(f64::INFINITY, f64::min);
    let to_run_time = |sim_s: f64| sim_s + offset - measured.origin_epoch_s;

    let links = plan.links.len();
    let flows = plan.flows.len();
    let mut flow_bins = vec![vec![0u64; bins]; flows];
    let mut stats = vec![SenderStats::default(); flows];
    let mut per_link_bytes = vec![vec![0u64; links]; flows];
    let mut link_stats = vec![LinkStats::default(); links];
    // Per link and flow, the queue's drops in each bin after the warm-up.
    let mut drop_bins = vec![vec![vec![0u64; bins.saturating_sub(first_measured)]; flows]; links];
    for row in measured.series.iter().filter(|row| row.direction == 'd') {
        // A row covers the interval that ends at its time; its midpoint
        // picks the bin.
        let t = to_run_time(row.sim_s) - bin / 2.0;
        if !(0.0..duration).contains(&t) || row.link >= links {
            continue;
        }
        let index = ((t / bin) as usize).min(bins - 1);
        let in_window = index >= first_measured;
        let owner = plan.flows.iter().position(|f| f.owns(row.protocol, row.source_port, row.destination_port));
        if in_window {
            let link = &mut link_stats[row.link];
            link.arrivals += row.packets + row.queue_drops + row.link_drops;
            link.drops += row.queue_drops + row.link_drops;
            link.bytes += row.bytes;
        }
        let Some(k) = owner else { continue };
        flow_bins[k][index] += row.bytes;
        if in_window {
            let s = &mut stats[k];
            s.packets_sent += row.packets + row.queue_drops + row.link_drops;
            s.packets_lost += row.queue_drops + row.link_drops;
            s.loss_events += row.loss_events;
            per_link_bytes[k][row.link] += row.bytes;
            drop_bins[row.link][k][index - first_measured] += row.queue_drops;
        }
    }

    let ns3_links = measured.ns3_summary["links"].as_array().cloned().unwrap_or_default();
    let sojourn_s = |link: usize| ns3_links.get(link).and_then(|l| l["mean_sojourn_s"].as_f64()).unwrap_or(0.0);
    let link_results: Vec<LinkResult> = plan
        .links
        .iter()
        .enumerate()
        .map(|(i, link)| {
            let mut stats = link_stats[i];
            let accepted = stats.arrivals.saturating_sub(stats.drops);
            stats.queueing_delay_sum = (sojourn_s(i) * 1e9 * accepted as f64) as u128;
            stats.max_queue_packets = ns3_links.get(i).and_then(|l| l["max_queue_packets"].as_u64()).unwrap_or(0);
            LinkResult {
                name: setup.links[i].name.clone(),
                rate_bps: link.rate_bps,
                utilization: stats.bytes as f64 * 8.0 / (link.rate_bps * measured_s),
                stats,
            }
        })
        .collect();

    let mut goodput_bps = Vec::new();
    let mut goodput_series = Vec::new();
    let mut connections = Vec::new();
    for (k, flow) in plan.flows.iter().enumerate() {
        let shift = match measured.goodput_clock[k] {
            GoodputClock::Run => 0.0,
            GoodputClock::DataStart => data_start(measured, k, plan, &to_run_time, bin).unwrap_or(flow.start_s),
        };
        let samples: Vec<(f64, u64)> = measured.goodput[k].iter().map(|&(t, bytes)| (t + shift, bytes)).collect();
        let samples = &samples;
        let goodput = match (cumulative_at(samples, warmup), cumulative_at(samples, duration)) {
            (Some(before), Some(after)) if samples.len() > 1 => Some((after - before) * 8.0 / measured_s),
            _ => None,
        };
        goodput_bps.push(goodput);
        goodput_series.push(
            samples
                .windows(2)
                .filter(|p| p[1].0 > p[0].0)
                .map(|p| (p[1].0, (p[1].1 - p[0].1) as f64 * 8.0 / (p[1].0 - p[0].0) / 1e6))
                .collect(),
        );
        // The RTT a packet of this flow saw in the network: propagation
        // both ways plus the bottleneck's mean queueing delay.
        let rtts: Vec<f64> =
            flow.subflows.iter().map(|s| 2.0 * plan.links[s.link].delay_s + sojourn_s(s.link)).collect();
        let rtt_s = rtts.iter().sum::<f64>() / rtts.len().max(1) as f64;
        stats[k].rtt_sum = (rtt_s * 1e9) as u128;
        stats[k].rtt_samples = 1;
        let measured_bytes: u64 = flow_bins[k][first_measured.min(bins)..].iter().sum();
        connections.push(ConnectionResult {
            label: flow.label.clone(),
            cc: flow.cc.clone(),
            weight: flow.weight,
            role: flow.role,
            bins: std::mem::take(&mut flow_bins[k]),
            throughput_bps: measured_bytes as f64 * 8.0 / measured_s,
            stats: stats[k],
            completions: match (measured.completions[k], flow.bytes) {
                (Some(seconds), Some(bytes)) => vec![Completion { start_s: flow.start_s, duration_s: seconds, bytes }],
                _ => Vec::new(),
            },
            controller: None,
        });
    }
    let packets_sent = link_results.iter().map(|l| l.stats.arrivals).sum();
    Outcome {
        run: RunResult {
            name: setup.name.clone(),
            seed: plan.seed,
            measured_seconds: measured_s,
            warmup_seconds: warmup,
            bin_seconds: bin,
            connections,
            links: link_results,
            packets_sent,
            events: 0,
        },
        goodput_bps,
        per_link_bytes,
        emulation: Emulation {
            cpu_wait_us: measured.ns3_cpu.map(|cpu| cpu.wait_per_slice_us()),
            ..Emulation::from_summary(&measured.ns3_summary)
        },
        load: (measured.load_before, measured.load_after),
        goodput_series,
        episodes: drop_bins.iter().map(|drops| episodes::find(drops, bin)).collect(),
    }
}

/// Whether a run's `summary.json` says it can be trusted: its emulation
/// kept real time and it started on a quiet machine (either missing, as
/// in runs from before they were recorded, counts as yes).
pub fn trusted(summary: &Value) -> bool {
    let testbed = &summary["metrics"]["testbed"];
    testbed["emulation"]["trusted"].as_bool().unwrap_or(true) && testbed["load_gate"]["quiet"].as_bool().unwrap_or(true)
}

/// The table of a run: the lab's columns, with the transport, the
/// endpoint goodput and the emulation's health added.
pub fn table(plan: &Plan, outcome: &Outcome) -> String {
    let run = &outcome.run;
    let mut table = Table::new(&[
        "id",
        "label",
        "transport",
        "cc",
        "role",
        "Mbit/s",
        "goodput",
        "loss %",
        "loss ev. rate",
        "RTT ms",
        "FCT s",
    ]);
    for (f, flow) in metrics::flow_metrics(run).into_iter().zip(&plan.flows) {
        table.row(vec![
            f.id.to_string(),
            f.label,
            flow.transport().to_string(),
            f.cc,
            format!("{:?}", f.role).to_lowercase(),
            fmt(Some(f.throughput_bps / 1e6), 3),
            fmt(outcome.goodput_bps[f.id].map(|g| g / 1e6), 3),
            fmt(Some(f.packet_loss_rate * 100.0), 2),
            fmt(Some(f.loss_event_rate), 5),
            fmt(Some(f.mean_rtt_ms), 1),
            f.completion_times_s.iter().map(|t| format!("{t:.3}")).collect::<Vec<_>>().join(" "),
        ]);
    }
    let mut out = table.render();
    let _ = writeln!(out, "{}", report::metrics_line(run));
    let (before, after) = outcome.load;
    let _ = writeln!(out, "{}; load average {:.2} before, {:.2} after", outcome.emulation.line(), before[0], after[0]);
    out
}

/// `summary.json` of a run: the lab's schema; per flow also the transport
/// and goodput, and `timeouts` is null (the testbed does not see PTOs).
pub fn summary(plan: &Plan, outcome: &Outcome, measured: &Measurements) -> Value {
    let (before, after) = outcome.load;
    let extra = json!({
        "testbed": {
            "emulation": outcome.emulation.to_json(),
            "load_average_before": before,
            "load_average_after": after,
            "ns3_links": measured.ns3_summary["links"],
            "ns3_sockets": measured.ns3_summary["sockets"],
            "overflow_episodes": outcome.episodes,
        }
    });
    let mut summary = report::run_summary(&outcome.run, extra);
    if let Some(flows) = summary["flows"].as_array_mut() {
        for (entry, flow) in flows.iter_mut().zip(&plan.flows) {
            entry["transport"] = json!(flow.transport());
            entry["goodput_bps"] = report::number(outcome.goodput_bps[flow.id]);
            entry["timeouts"] = Value::Null;
            entry["per_link_bytes"] = json!(outcome.per_link_bytes[flow.id]);
            entry["start_s"] = json!(flow.start_s);
        }
    }
    summary
}

/// Writes a run's files into `dir`: `summary.json`, `series.csv`,
/// `goodput.csv`, `throughput.png`, `goodput.png`, `emulation.png`.
pub fn write(dir: &Path, plan: &Plan, outcome: &Outcome, measured: &Measurements) -> Result<(), String> {
    report::write_summary(dir, &summary(plan, outcome, measured))?;
    report::write_file(dir, "series.csv", &report::series_csv(&outcome.run))?;
    let mut csv = String::from("flow,label,time_s,goodput_mbps\n");
    for (flow, series) in plan.flows.iter().zip(&outcome.goodput_series) {
        for (t, mbps) in series {
            let _ = writeln!(csv, "{},{},{t:.3},{mbps:.6}", flow.id, flow.label.replace(',', ";"));
        }
    }
    report::write_file(dir, "goodput.csv", &csv)?;
    let name = &outcome.run.name;
    report::plot(
        dir,
        "throughput.png",
        &format!("{name}: throughput at the bottleneck"),
        "time (s)",
        "Mbit/s",
        &report::throughput_lines(&outcome.run, 1.0),
    )?;
    let goodput: Vec<Line> = plan
        .flows
        .iter()
        .zip(&outcome.goodput_series)
        .filter(|(_, series)| !series.is_empty())
        .map(|(flow, series)| Line {
            name: format!("{} {} ({})", flow.id, flow.label, flow.transport()),
            points: smooth(series, 1.0),
        })
        .collect();
    report::plot(dir, "goodput.png", &format!("{name}: endpoint goodput"), "time (s)", "Mbit/s", &goodput)?;
    let offset = measured.origin_epoch_s;
    let mut lines = vec![Line {
        name: "lag of real time (ms)".into(),
        points: measured.monitor.iter().map(|row| (row.wall_s - offset, row.lag_ms)).collect(),
    }];
    for link in 0..plan.links.len() {
        lines.push(Line {
            name: format!("queue of {} (packets)", plan.setup.links[link].name),
            points: measured
                .monitor
                .iter()
                .map(|row| (row.wall_s - offset, row.queues.get(link).copied().unwrap_or(0) as f64))
                .collect(),
        });
    }
    report::plot(dir, "emulation.png", &format!("{name}: emulation lag and queues"), "time (s)", "ms / packets", &lines)
}

/// Averages a rate series over windows of `seconds`.
fn smooth(series: &[(f64, f64)], seconds: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut window_start = series.first().map_or(0.0, |p| p.0);
    let (mut sum, mut count) = (0.0, 0);
    for &(t, value) in series {
        if t - window_start >= seconds && count > 0 {
            out.push((window_start, sum / count as f64));
            window_start = t;
            sum = 0.0;
            count = 0;
        }
        sum += value;
        count += 1;
    }
    if count > 0 {
        out.push((window_start, sum / count as f64));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulator::MonitorRow;
    use crate::emulator::SeriesRow;
    use crate::scenario::TestbedScenario;

    fn row(
        sim_s: f64,
        link: usize,
        protocol: u8,
        source_port: u16,
        destination_port: u16,
        bytes: u64,
        drops: u64,
    ) -> SeriesRow {
        SeriesRow {
            wall_s: 1000.0 + sim_s,
            sim_s,
            link,
            direction: 'd',
            protocol,
            source: "198.19.0.100".into(),
            source_port,
            destination: "198.18.0.100".into(),
            destination_port,
            bytes,
            packets: bytes / 1000,
            queue_drops: drops,
            link_drops: 0,
            loss_events: drops.min(1),
        }
    }

    #[test]
    fn bottleneck_rows_become_the_lab_throughput_and_loss_of_their_flows() {
        let text = r#"
name = "t"
duration_s = 4
warmup_s = 2
[[link]]
name = "b"
rate_mbps = 10
delay_ms = 10
buffer_packets = 20
[[flow]]
cc = "multcp:n=2"
path = ["b"]
[[flow]]
cc = "cubic"
transport = "tcp"
path = ["b"]
"#;
        let plan = TestbedScenario::from_toml(text).unwrap().plan(1, &mut String::new()).unwrap();
        let (quic, tcp) = (22000, 21001);
        let mut series = Vec::new();
        // Origin at wall 1000.5: simulated second s + 0.5 is run second s.
        for tick in 1..=45 {
            let sim = tick as f64 * 0.1;
            series.push(row(sim, 0, 17, quic, 40000, 100_000, if tick == 40 { 2 } else { 0 }));
            // A drop of the TCP flow's in the warm-up, which no episode counts.
            series.push(row(sim, 0, 6, 50000, tcp, 50_000, if tick == 10 { 1 } else { 0 }));
        }
        let measured = Measurements {
            series,
            monitor: vec![MonitorRow { wall_s: 1000.1, sim_s: 0.1, lag_ms: 0.0, queues: vec![0], socket_drops: 0 }],
            ns3_summary: json!({"lag": {"ticks": 40, "late_ticks": 0, "max_ms": 1.0, "mean_ms": 0.1},
                "sockets": [{"drops": 0}], "links": [{"mean_sojourn_s": 0.005, "max_queue_packets": 7}]}),
            origin_epoch_s: 1000.5,
            goodput: vec![vec![(0.0, 0), (4.0, 4_000_000)], vec![]],
            goodput_clock: vec![GoodputClock::Run, GoodputClock::DataStart],
            completions: vec![None, None],
            load_before: [0.1; 3],
            load_after: [0.2; 3],
            ns3_cpu: None,
        };
        let outcome = outcome(&plan, &measured);
        let run = &outcome.run;
        // Run seconds 2..4 hold 20 rows of each flow: 100 kB and 50 kB per
        // 0.1 s are 8 and 4 Mbit/s.
        assert_eq!(run.connections[0].throughput_bps, 8e6);
        assert_eq!(run.connections[1].throughput_bps, 4e6);
        assert_eq!(run.connections[0].stats.packets_lost, 2);
        assert_eq!(run.connections[0].stats.loss_events, 1);
        assert_eq!(run.connections[0].stats.packets_sent, 20 * 100 + 2);
        assert_eq!(run.links[0].utilization, 1.2);
        assert_eq!(run.links[0].stats.max_queue_packets, 7);
        // 2 x 10 ms + 5 ms of queue.
        assert!((run.connections[0].stats.rtt_sum as f64 * 1e-6 - 25.0).abs() < 1e-6);
        assert_eq!(outcome.goodput_bps[0], Some(8e6));
        assert_eq!(outcome.goodput_bps[1], None);
        // Per flowshare, the weighted flow gets 4 Mbit/s, as the TCP flow.
        assert_eq!(metrics::fairness_index(run), Some(1.0));
        assert!(outcome.emulation.trusted);
        // One overflow in the 2 s after the warm-up, which caught the
        // weighted flow only.
        let episodes = outcome.episodes[0].as_ref().expect("the queue dropped packets");
        assert_eq!((episodes.per_s, episodes.flows_per_episode), (0.5, 1.0));
        assert_eq!(episodes.caught_share, vec![1.0, 0.0]);
    }

    #[test]
    fn tcp_goodput_counts_from_the_first_interval_of_the_data_connection() {
        let text = r#"
name = "t"
duration_s = 4
warmup_s = 1
[[link]]
name = "b"
rate_mbps = 10
delay_ms = 10
buffer_packets = 20
[[flow]]
cc = "cubic"
transport = "tcp"
path = ["b"]
"#;
        let plan = TestbedScenario::from_toml(text).unwrap().plan(1, &mut String::new()).unwrap();
        let port = 21000;
        // The control connection (port 40000) opens at 0.5 s, the data
        // connection's first interval ends at 1.5 s (a SYN timeout later).
        let mut series = vec![row(0.5, 0, 6, 40000, port, 500, 0)];
        for tick in 15..=40 {
            series.push(row(tick as f64 * 0.1, 0, 6, 40001, port, 125_000, 0));
        }
        let measured = Measurements {
            series,
            monitor: vec![],
            ns3_summary: json!({}),
            origin_epoch_s: 1000.0,
            // iperf3: 1.25 MB per second from its own start.
            goodput: vec![vec![(0.0, 0), (2.5, 3_125_000)]],
            goodput_clock: vec![GoodputClock::DataStart],
            completions: vec![None],
            load_before: [0.0; 3],
            load_after: [0.0; 3],
            ns3_cpu: None,
        };
        let outcome = outcome(&plan, &measured);
        // Data from 1.4 s to 3.9 s: 1 to 4 s holds 2.5 s of it, 3.125 MB
        // over the 3 measured seconds.
        let goodput = outcome.goodput_bps[0].unwrap();
        assert!((goodput - 3_125_000.0 * 8.0 / 3.0).abs() < 1.0, "{goodput}");
    }

    /// The scorecard's samples and `testbed equation` both read this.
    #[test]
    fn a_summary_is_trusted_when_the_emulation_kept_up_and_the_machine_was_quiet() {
        let summary = |trusted: bool, quiet: bool| json!({"metrics": {"testbed": {"emulation": {"trusted": trusted}, "load_gate": {"quiet": quiet}}}});
        assert!(trusted(&summary(true, true)));
        assert!(!trusted(&summary(false, true)));
        assert!(!trusted(&summary(true, false)));
        assert!(trusted(&json!({"metrics": {}})), "runs from before either was recorded count");
    }

    #[test]
    fn a_lagging_or_dropping_emulation_is_not_trusted() {
        let summary = |max: f64, late: u64, drops: u64| json!({"lag": {"ticks": 1000, "late_ticks": late, "max_ms": max, "mean_ms": 0.5}, "sockets": [{"drops": drops}]});
        assert!(Emulation::from_summary(&summary(10.0, 10, 0)).trusted);
        assert!(!Emulation::from_summary(&summary(80.0, 10, 0)).trusted);
        assert!(!Emulation::from_summary(&summary(10.0, 11, 0)).trusted);
        assert!(!Emulation::from_summary(&summary(10.0, 0, 3)).trusted);
    }

    #[test]
    fn cumulative_bytes_interpolate_between_samples() {
        let samples = [(0.0, 0), (1.0, 100), (3.0, 300)];
        assert_eq!(cumulative_at(&samples, 2.0), Some(200.0));
        assert_eq!(cumulative_at(&samples, 5.0), Some(300.0));
        assert_eq!(cumulative_at(&[], 1.0), None);
    }
}
