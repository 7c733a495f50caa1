//! The built-in experiments: the papers' scenarios, each with a `--quick`
//! variant that runs in seconds.
//!
//! Every experiment builds [`Scenario`]s in the vocabulary of scenario
//! files, runs them with [`sweep::run`] on all cores, and writes its table,
//! `summary.json`, CSV files and plots. Controllers are taken by name and
//! filtered to those the spec language knows, so the experiments grow with
//! the controller crate.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;
use serde_json::Value;

use flowshare_controllers::equations::TcpEquation;
use flowshare_controllers::registry;
use flowshare_controllers::Spec;

use crate::metrics;
use crate::metrics::mean_and_deviation;
use crate::report;
use crate::report::fmt;
use crate::report::number;
use crate::report::Line;
use crate::report::Table;
use crate::rng::derive_seed;
use crate::scenario::FlowConfig;
use crate::scenario::LinkConfig;
use crate::scenario::Scenario;
use crate::sim::Role;
use crate::sim::RunResult;
use crate::sweep;
use crate::sweep::Job;

/// The weighted controllers the experiments compare by default: every
/// weighted algorithm of the registry.
pub fn weighted_controllers() -> Vec<String> {
    registry::weighted().map(|algorithm| algorithm.name.to_string()).collect()
}

/// The standard peers: the registry's standard algorithms.
pub fn peers() -> Vec<String> {
    registry::standard().map(|algorithm| algorithm.name.to_string()).collect()
}

/// Options shared by the experiments; `None` keeps the experiment's
/// default (full or quick).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Run the quick variant.
    pub quick: bool,
    /// Base seed.
    pub seed: u64,
    /// Replications per point.
    pub seeds: Option<usize>,
    /// Worker threads.
    pub threads: usize,
    /// Weights N.
    pub n: Option<Vec<f64>>,
    /// Bottleneck rates, Mbit/s.
    pub bandwidths: Option<Vec<f64>>,
    /// Controller names (or specs without `n`).
    pub controllers: Option<Vec<String>>,
    /// Peer controllers.
    pub peers: Option<Vec<String>>,
    /// Simulated time, seconds.
    pub duration: Option<f64>,
    /// Warm-up, seconds.
    pub warmup: Option<f64>,
    /// Pacing on or off (default: as the controller asks).
    pub pacing: Option<bool>,
}

/// What an experiment produced.
pub struct Outcome {
    /// The table for stdout.
    pub table: String,
    /// `summary.json`.
    pub summary: Value,
}

/// Splits `names` into the ones the spec language knows (checked with
/// `probe(name)`) and the ones it does not.
fn known(names: &[String], probe: impl Fn(&str) -> String) -> (Vec<String>, Vec<String>) {
    names.iter().cloned().partition(|name| probe(name).parse::<Spec>().is_ok())
}

/// The weighted spec of `controller` with weight `n`: `name:n=N` appended to
/// whatever keys the name already carries.
pub fn weighted_spec(controller: &str, n: f64) -> String {
    if controller.contains(':') {
        format!("{controller},n={n}")
    } else {
        format!("{controller}:n={n}")
    }
}

/// Whether `controller` accepts a weight below one.
pub fn accepts_fractional_weight(controller: &str) -> bool {
    weighted_spec(controller, 0.5).parse::<Spec>().is_ok()
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn note_skipped(notes: &mut String, skipped: &[String], what: &str) {
    if !skipped.is_empty() {
        let _ = writeln!(notes, "note: skipped {what} {} (not known to the spec language yet)", skipped.join(", "));
    }
}

/// A dumbbell: one bottleneck `rate_mbps`/`delay_ms`, drop-tail with a
/// buffer of one bandwidth-delay product at RTT `2 delay_ms`.
fn dumbbell(name: &str, duration: f64, warmup: f64, rate_mbps: f64, delay_ms: f64) -> Scenario {
    Scenario {
        name: name.into(),
        duration_s: duration,
        warmup_s: warmup,
        packet_bytes: 1500,
        pacing: true,
        ack_every: 2,
        max_ack_delay_ms: 25.0,
        bin_s: 0.1,
        start_spread_s: 2.0,
        links: vec![LinkConfig::droptail_bdp("bottleneck", rate_mbps, delay_ms, 2.0 * delay_ms)],
        flows: Vec::new(),
    }
}

/// `count` bulk flows of `cc` on the bottleneck with 1 ms access delay and
/// up to 1 ms of jitter, which breaks the phase effects of identical RTTs.
fn bulk(cc: &str, count: usize, role: Role) -> FlowConfig {
    let mut flow = FlowConfig::bulk(cc, count, &["bottleneck"]);
    flow.access_delay_ms = 1.0;
    flow.jitter_ms = 1.0;
    flow.role = Some(role);
    flow
}

fn apply_pacing(scenario: &mut Scenario, options: &Options) {
    if let Some(pacing) = options.pacing {
        scenario.pacing = pacing;
    }
}

fn job(scenario: &Scenario, seed: u64) -> Result<Job, String> {
    let setup = scenario.resolve().map_err(|e| format!("internal scenario {}: {e}", scenario.name))?;
    Ok(Job { setup, seed })
}

/// A number as a JSON key: `2`, `0.5`.
fn key(value: f64) -> String {
    format!("{value}")
}

/// Inserts `value` at `outer/inner` of a JSON object.
fn nest(map: &mut serde_json::Map<String, Value>, outer: &str, inner: &str, value: Value) {
    let entry = map.entry(outer.to_string()).or_insert_with(|| json!({}));
    if let Value::Object(inner_map) = entry {
        inner_map.insert(inner.to_string(), value);
    }
}

// ---------------------------------------------------------------------------
// fairness: paper 000 section 5.1

/// What one fairness run is reduced to.
#[derive(Clone, Debug)]
struct FairnessSample {
    fairness_index: Option<f64>,
    cov: Option<f64>,
    utilization: f64,
    weighted_bps: f64,
    standard_mean_bps: f64,
    weighted_loss_event_rate: f64,
    standard_loss_event_rate: f64,
    weighted_timeouts: u64,
    /// One-second means of the weighted aggregate per flowshare and of the
    /// mean standard flow, for the first seed's series.
    series: Vec<(f64, f64, f64)>,
}

fn fairness_sample(run: &RunResult, n: f64, keep_series: bool) -> FairnessSample {
    let flows = metrics::flow_metrics(run);
    let (weighted, standard): (Vec<_>, Vec<_>) = flows.iter().partition(|f| f.role == Role::Weighted);
    let standard_mean = |f: &dyn Fn(&metrics::FlowMetrics) -> f64| {
        standard.iter().map(|s| f(s)).sum::<f64>() / standard.len().max(1) as f64
    };
    let series = if keep_series {
        let w = metrics::role_series(run, Role::Weighted);
        let s = metrics::role_series(run, Role::Standard);
        let per = (1.0 / run.bin_seconds).round().max(1.0) as usize;
        w.chunks(per)
            .zip(s.chunks(per))
            .enumerate()
            .map(|(i, (w, s))| {
                let t = run.warmup_seconds + (i * per) as f64 * run.bin_seconds;
                let mean = |c: &[f64]| c.iter().sum::<f64>() / c.len() as f64;
                (t, mean(w) / n / 1e6, mean(s) / standard.len().max(1) as f64 / 1e6)
            })
            .collect()
    } else {
        Vec::new()
    };
    FairnessSample {
        fairness_index: metrics::fairness_index(run),
        cov: metrics::cov(run),
        utilization: metrics::utilization(run),
        weighted_bps: weighted.iter().map(|f| f.throughput_bps).sum(),
        standard_mean_bps: standard_mean(&|f| f.throughput_bps),
        weighted_loss_event_rate: weighted.first().map_or(0.0, |f| f.loss_event_rate),
        standard_loss_event_rate: standard_mean(&|f| f.loss_event_rate),
        weighted_timeouts: weighted.iter().map(|f| f.timeouts).sum(),
        series,
    }
}

/// What paper 000 reports for a point (figure 4), if anything.
pub fn paper_fairness(controller: &str, peer: &str, bandwidth_mbps: f64, n: f64) -> &'static str {
    if peer != "reno" || n < 1.0 {
        return "-";
    }
    match (controller, bandwidth_mbps as u64) {
        ("multcp", 400) => {
            if n <= 25.0 {
                "> 1"
            } else {
                "< 1"
            }
        }
        ("multcp", 200) => {
            if n > 10.0 {
                "< 1"
            } else {
                "> 1 (implied)"
            }
        }
        ("pa-multcp", 200 | 400) => "~ 1",
        _ => "-",
    }
}

/// Paper 000 section 5.1: a weighted connection of weight N against
/// m = 200 - N standard flows on a 50 ms drop-tail dumbbell with a BDP
/// buffer, for every weighted controller and both peers.
pub fn fairness(options: &Options, out: &Path) -> Result<Outcome, String> {
    let quick = options.quick;
    let mut notes = String::new();
    let requested = options.controllers.clone().unwrap_or_else(|| weighted_controllers());
    let (controllers, skipped) = known(&requested, |c| weighted_spec(c, 2.0));
    note_skipped(&mut notes, &skipped, "controllers");
    let (peers, skipped_peers) = known(&options.peers.clone().unwrap_or_else(|| peers()), |p| p.to_string());
    note_skipped(&mut notes, &skipped_peers, "peers");
    if controllers.is_empty() || peers.is_empty() {
        return Err(format!(
            "no controller or peer to run{}",
            if notes.is_empty() { String::new() } else { format!(" ({})", notes.trim()) }
        ));
    }
    let bandwidths = options.bandwidths.clone().unwrap_or(if quick { vec![20.0] } else { vec![200.0, 400.0] });
    let integer_n: Vec<f64> = if quick { vec![2.0, 4.0, 8.0] } else { (2..=30).map(f64::from).collect() };
    let fractional_n: Vec<f64> = if quick { vec![0.5] } else { vec![0.25, 0.5, 0.75] };
    let seeds = options.seeds.unwrap_or(if quick { 1 } else { 20 });
    let duration = options.duration.unwrap_or(if quick { 40.0 } else { 400.0 });
    let warmup = options.warmup.unwrap_or(if quick { 10.0 } else { 100.0 });
    let total_flows = if quick { 20 } else { 200 };

    struct Point {
        controller: String,
        peer: String,
        bandwidth: f64,
        n: f64,
        m: usize,
    }
    let mut points = Vec::new();
    for controller in &controllers {
        let n_values: Vec<f64> = match &options.n {
            Some(n) => n.iter().copied().filter(|&n| n >= 1.0 || accepts_fractional_weight(controller)).collect(),
            None => {
                let mut n = if accepts_fractional_weight(controller) { fractional_n.clone() } else { Vec::new() };
                n.extend(&integer_n);
                n
            }
        };
        for peer in &peers {
            for &bandwidth in &bandwidths {
                for &n in &n_values {
                    let m = total_flows - (n.ceil() as usize).clamp(1, total_flows - 1);
                    points.push(Point { controller: controller.clone(), peer: peer.clone(), bandwidth, n, m });
                }
            }
        }
    }
    let scenario_of = |point: &Point| {
        let mut scenario =
            dumbbell(if quick { "fairness-quick" } else { "fairness" }, duration, warmup, point.bandwidth, 50.0);
        scenario.start_spread_s = if quick { 2.0 } else { 5.0 };
        scenario.flows.push(bulk(&weighted_spec(&point.controller, point.n), 1, Role::Weighted));
        scenario.flows.push(bulk(&point.peer, point.m, Role::Standard));
        apply_pacing(&mut scenario, options);
        scenario
    };
    let mut jobs = Vec::new();
    for point in &points {
        let scenario = scenario_of(point);
        for replicate in 0..seeds {
            jobs.push(job(&scenario, derive_seed(options.seed, replicate as u64))?);
        }
    }
    if let Some(first) = points.first() {
        report::write_file(out, "scenario-example.toml", &scenario_of(first).to_toml())?;
    }
    eprint!("{notes}");
    let n_of: Vec<f64> = points.iter().flat_map(|p| std::iter::repeat_n(p.n, seeds)).collect();
    let samples = sweep::run("fairness", jobs, options.threads, |index, run| {
        fairness_sample(&run, n_of[index], index % seeds == 0)
    });

    let mut table = Table::new(&[
        "controller",
        "peer",
        "Mbit/s",
        "N",
        "m",
        "FI",
        "FI sd",
        "CoV",
        "util",
        "loss ev. w",
        "loss ev. std",
        "PTOs w",
        "paper FI",
    ]);
    let mut csv = String::from(
        "controller,peer,bandwidth_mbps,n,m,seeds,fairness_index,fairness_index_sd,cov,cov_sd,utilization,weighted_mbps,standard_mean_mbps,weighted_loss_event_rate,standard_loss_event_rate,weighted_timeouts\n",
    );
    let mut fi_map = serde_json::Map::new();
    let mut cov_map = serde_json::Map::new();
    let mut util_map = serde_json::Map::new();
    let mut point_values = Vec::new();
    let mut flows = Vec::new();
    let mut fi_lines: Vec<Line> = Vec::new();
    let mut cov_lines: Vec<Line> = Vec::new();
    let mut series_csv =
        String::from("controller,peer,bandwidth_mbps,n,time_s,weighted_per_flowshare_mbps,standard_mean_mbps\n");
    for (index, point) in points.iter().enumerate() {
        let chunk = &samples[index * seeds..(index + 1) * seeds];
        let collect = |f: &dyn Fn(&FairnessSample) -> Option<f64>| -> Vec<f64> { chunk.iter().filter_map(f).collect() };
        let (fi, fi_sd) = mean_and_deviation(&collect(&|s| s.fairness_index));
        let (cov, cov_sd) = mean_and_deviation(&collect(&|s| s.cov));
        let (util, _) = mean_and_deviation(&collect(&|s| Some(s.utilization)));
        let (weighted, _) = mean_and_deviation(&collect(&|s| Some(s.weighted_bps)));
        let (standard, _) = mean_and_deviation(&collect(&|s| Some(s.standard_mean_bps)));
        let (w_loss, _) = mean_and_deviation(&collect(&|s| Some(s.weighted_loss_event_rate)));
        let (s_loss, _) = mean_and_deviation(&collect(&|s| Some(s.standard_loss_event_rate)));
        let (timeouts, _) = mean_and_deviation(&collect(&|s| Some(s.weighted_timeouts as f64)));
        let paper = paper_fairness(&point.controller, &point.peer, point.bandwidth, point.n);
        table.row(vec![
            point.controller.clone(),
            point.peer.clone(),
            key(point.bandwidth),
            key(point.n),
            point.m.to_string(),
            fmt(Some(fi), 3),
            fmt(Some(fi_sd), 3),
            fmt(Some(cov), 3),
            fmt(Some(util), 3),
            fmt(Some(w_loss), 5),
            fmt(Some(s_loss), 5),
            fmt(Some(timeouts), 1),
            paper.into(),
        ]);
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            point.controller,
            point.peer,
            point.bandwidth,
            point.n,
            point.m,
            seeds,
            fi,
            fi_sd,
            cov,
            cov_sd,
            util,
            weighted / 1e6,
            standard / 1e6,
            w_loss,
            s_loss,
            timeouts
        );
        let group = format!("{}/{}/{}", point.controller, point.peer, key(point.bandwidth));
        nest(&mut fi_map, &group, &key(point.n), number(Some(fi)));
        nest(&mut cov_map, &group, &key(point.n), number(Some(cov)));
        nest(&mut util_map, &group, &key(point.n), number(Some(util)));
        point_values.push(json!({
            "controller": point.controller,
            "peer": point.peer,
            "bandwidth_mbps": point.bandwidth,
            "n": point.n,
            "m": point.m,
            "seeds": seeds,
            "fairness_index": number(Some(fi)),
            "fairness_index_sd": number(Some(fi_sd)),
            "cov": number(Some(cov)),
            "cov_sd": number(Some(cov_sd)),
            "utilization": number(Some(util)),
            "weighted_throughput_bps": number(Some(weighted)),
            "standard_mean_throughput_bps": number(Some(standard)),
            "weighted_loss_event_rate": number(Some(w_loss)),
            "standard_loss_event_rate": number(Some(s_loss)),
            "weighted_timeouts": number(Some(timeouts)),
            "paper_fairness_index": paper,
        }));
        flows.push(json!({
            "id": index,
            "cc": weighted_spec(&point.controller, point.n),
            "weight": point.n,
            "throughput_bps": number(Some(weighted)),
            "peer": point.peer,
            "bandwidth_mbps": point.bandwidth,
        }));
        for (line_set, value) in [(&mut fi_lines, fi), (&mut cov_lines, cov)] {
            match line_set.iter_mut().find(|l| l.name == group) {
                Some(line) => line.points.push((point.n, value)),
                None => line_set.push(Line { name: group.clone(), points: vec![(point.n, value)] }),
            }
        }
        for &(t, w, s) in &chunk[0].series {
            let _ =
                writeln!(series_csv, "{},{},{},{},{t},{w},{s}", point.controller, point.peer, point.bandwidth, point.n);
        }
    }
    report::write_file(out, "points.csv", &csv)?;
    report::write_file(out, "series.csv", &series_csv)?;
    report::plot(out, "fairness_index.png", "Fairness index (paper 000 eq. 11)", "N", "fairness index", &fi_lines)?;
    report::plot(out, "cov.png", "CoV of the weighted aggregate (paper 000 eq. 12)", "N", "CoV", &cov_lines)?;
    let summary = json!({
        "scenario": if quick { "fairness-quick" } else { "fairness" },
        "seed": options.seed,
        "flows": flows,
        "metrics": {
            "fairness_index": fi_map,
            "cov": cov_map,
            "utilization": util_map,
            "points": point_values,
            "controllers": controllers,
            "skipped_controllers": skipped,
            "peers": peers,
            "seeds": seeds,
            "duration_s": duration,
            "warmup_s": warmup,
            "total_flows": total_flows,
        },
    });
    Ok(Outcome { table: notes + &table.render(), summary })
}

// ---------------------------------------------------------------------------
// transient: paper 000 section 5.2

/// The first time at or after `from` (seconds) when `series` (bits/s per
/// bin), averaged over `window` bins, crosses `threshold` downwards
/// (`falling`) or upwards.
fn crossing(series: &[f64], bin: f64, from: f64, window: usize, threshold: f64, falling: bool) -> Option<f64> {
    let start = (from / bin).round() as usize;
    (start..series.len().saturating_sub(window)).find_map(|i| {
        let mean = series[i..i + window].iter().sum::<f64>() / window as f64;
        let crossed = if falling { mean <= threshold } else { mean >= threshold };
        crossed.then_some((i + window) as f64 * bin - from)
    })
}

fn mean_between(series: &[f64], bin: f64, from: f64, to: f64) -> f64 {
    let (a, b) = ((from / bin).round() as usize, ((to / bin).round() as usize).min(series.len()));
    if b <= a {
        return f64::NAN;
    }
    series[a..b].iter().sum::<f64>() / (b - a) as f64
}

/// Paper 000 section 5.2: a weighted connection (N = 10) and 20 standard
/// flows on 120 Mbit/s, 50 ms; a CBR flow takes half the link from 300 s to
/// 600 s. Reports how many RTTs the weighted connection takes to give up
/// bandwidth and to take it back.
pub fn transient(options: &Options, out: &Path) -> Result<Outcome, String> {
    let quick = options.quick;
    let mut notes = String::new();
    let requested = options.controllers.clone().unwrap_or_else(|| weighted_controllers());
    let (controllers, skipped) = known(&requested, |c| weighted_spec(c, 10.0));
    note_skipped(&mut notes, &skipped, "controllers");
    let peer = options.peers.as_ref().and_then(|p| p.first().cloned()).unwrap_or_else(|| "reno".into());
    let n = options.n.as_ref().and_then(|n| n.first().copied()).unwrap_or(10.0);
    let rate = options.bandwidths.as_ref().and_then(|b| b.first().copied()).unwrap_or(if quick { 24.0 } else { 120.0 });
    let duration = options.duration.unwrap_or(if quick { 90.0 } else { 900.0 });
    let (cbr_on, cbr_off) = (duration / 3.0, 2.0 * duration / 3.0);
    let seeds = options.seeds.unwrap_or(1);
    let rtt = 0.104; // 2 x (50 ms + 2 ms access)
    let mut jobs = Vec::new();
    let mut scenarios = Vec::new();
    for controller in &controllers {
        let mut scenario = dumbbell(
            if quick { "transient-quick" } else { "transient" },
            duration,
            options.warmup.unwrap_or(duration / 9.0),
            rate,
            50.0,
        );
        scenario.flows.push(bulk(&weighted_spec(controller, n), 1, Role::Weighted));
        scenario.flows.push(bulk(&peer, 20, Role::Standard));
        let mut cbr = FlowConfig::bulk("reno", 1, &["bottleneck"]);
        cbr.cc = None;
        cbr.traffic = "cbr".into();
        cbr.rate_mbps = Some(rate / 2.0);
        cbr.start_s = cbr_on;
        cbr.stop_s = Some(cbr_off);
        cbr.access_delay_ms = 1.0;
        cbr.role = Some(Role::Other);
        cbr.label = Some("cbr".into());
        scenario.flows.push(cbr);
        apply_pacing(&mut scenario, options);
        for replicate in 0..seeds {
            jobs.push(job(&scenario, derive_seed(options.seed, replicate as u64))?);
        }
        scenarios.push(scenario);
    }
    if let Some(first) = scenarios.first() {
        report::write_file(out, "scenario-example.toml", &first.to_toml())?;
    }
    eprint!("{notes}");
    let bin = 0.1;
    let results = sweep::run("transient", jobs, options.threads, |_, run| {
        let weighted = full_series(&run, Role::Weighted);
        let standard = full_series(&run, Role::Standard);
        let before = mean_between(&weighted, bin, cbr_on - (cbr_on / 3.0), cbr_on);
        let during = mean_between(&weighted, bin, cbr_on + (cbr_off - cbr_on) / 3.0, cbr_off);
        let after = mean_between(&weighted, bin, cbr_off + (duration - cbr_off) / 3.0, duration);
        // Two-RTT moving average; 90% of the way to the new level.
        let window = 2;
        let reaction = crossing(&weighted, bin, cbr_on, window, during + 0.1 * (before - during), true);
        let recovery = crossing(&weighted, bin, cbr_off, window, after - 0.1 * (after - during), false);
        (run, weighted, standard, before, during, after, reaction, recovery)
    });
    let mut table =
        Table::new(&["controller", "seed", "before Mbit/s", "during", "after", "reaction RTTs", "recovery RTTs", "FI"]);
    let mut per_controller = serde_json::Map::new();
    let mut flows = Vec::new();
    let mut lines = Vec::new();
    let mut csv = String::from("controller,time_s,weighted_mbps,standard_mean_mbps\n");
    let mut fi_values = serde_json::Map::new();
    for (c, controller) in controllers.iter().enumerate() {
        let chunk = &results[c * seeds..(c + 1) * seeds];
        let mut reactions = Vec::new();
        let mut recoveries = Vec::new();
        for (replicate, (run, weighted, standard, before, during, after, reaction, recovery)) in
            chunk.iter().enumerate()
        {
            let fi = metrics::fairness_index(run);
            table.row(vec![
                controller.clone(),
                replicate.to_string(),
                fmt(Some(before / 1e6), 2),
                fmt(Some(during / 1e6), 2),
                fmt(Some(after / 1e6), 2),
                fmt(reaction.map(|t| t / rtt), 1),
                fmt(recovery.map(|t| t / rtt), 1),
                fmt(fi, 3),
            ]);
            reactions.extend(reaction.map(|t| t / rtt));
            recoveries.extend(recovery.map(|t| t / rtt));
            if replicate == 0 {
                fi_values.insert(controller.clone(), number(fi));
                let per = 10;
                let points: Vec<(f64, f64)> = weighted
                    .chunks(per)
                    .enumerate()
                    .map(|(i, w)| ((i * per) as f64 * bin, w.iter().sum::<f64>() / w.len() as f64 / 1e6))
                    .collect();
                for (i, (t, w)) in points.iter().enumerate() {
                    let s = standard[i * per..((i + 1) * per).min(standard.len())].iter().sum::<f64>()
                        / per as f64
                        / 20.0
                        / 1e6;
                    let _ = writeln!(csv, "{controller},{t},{w},{s}");
                }
                lines.push(Line { name: weighted_spec(controller, n), points });
                for (id, connection) in run.connections.iter().enumerate() {
                    if connection.role == Role::Weighted {
                        flows.push(json!({"id": id, "cc": connection.cc, "weight": connection.weight, "throughput_bps": connection.throughput_bps}));
                    }
                }
            }
        }
        per_controller.insert(
            controller.clone(),
            json!({
                "reaction_time_rtts": number(Some(mean_and_deviation(&reactions).0)),
                "recovery_time_rtts": number(Some(mean_and_deviation(&recoveries).0)),
                "runs_without_reaction": seeds - reactions.len(),
            }),
        );
    }
    report::write_file(out, "series.csv", &csv)?;
    report::plot(
        out,
        "transient.png",
        "Weighted aggregate under a CBR step (paper 000 fig. 6/7)",
        "time (s)",
        "Mbit/s",
        &lines,
    )?;
    let summary = json!({
        "scenario": if quick { "transient-quick" } else { "transient" },
        "seed": options.seed,
        "flows": flows,
        "metrics": {
            "fairness_index": fi_values,
            "cov": Value::Null,
            "utilization": Value::Null,
            "controllers": per_controller,
            "skipped_controllers": skipped,
            "bandwidth_mbps": rate,
            "cbr_mbps": rate / 2.0,
            "cbr_on_s": cbr_on,
            "cbr_off_s": cbr_off,
            "rtt_s": rtt,
            "paper": "reaction to the CBR: PA-MulTCP 7-8 RTTs, MulTCP 17-18 RTTs (paper 000 section 5.2)",
        },
    });
    Ok(Outcome { table: notes + &table.render(), summary })
}

/// The whole-run series of the connections with `role`, bits/s per bin.
fn full_series(run: &RunResult, role: Role) -> Vec<f64> {
    let duration_bins = ((run.warmup_seconds + run.measured_seconds) / run.bin_seconds).round() as usize;
    let bins = run.connections.first().map_or(0, |c| c.bins.len()).min(duration_bins);
    let mut series = vec![0.0; bins];
    for c in run.connections.iter().filter(|c| c.role == role) {
        for (slot, bytes) in series.iter_mut().zip(&c.bins) {
            *slot += *bytes as f64 * 8.0 / run.bin_seconds;
        }
    }
    series
}

// ---------------------------------------------------------------------------
// short-transfer: paper 000 section 5.3

/// Paper 000 section 5.3: a transfer of 10-400 KB starts at 50 s, either
/// inside a weighted aggregate (N = 4, one packet in N + 1 of the
/// aggregate's) or as a new standard connection, next to 20 standard flows
/// on 5 Mbit/s, 50 ms. Reports the mean completion times.
pub fn short_transfer(options: &Options, out: &Path) -> Result<Outcome, String> {
    let quick = options.quick;
    let mut notes = String::new();
    let requested = options.controllers.clone().unwrap_or_else(|| strings(&["pa-multcp", "multcp"]));
    let (controllers, skipped) = known(&requested, |c| weighted_spec(c, 4.0));
    note_skipped(&mut notes, &skipped, "controllers");
    let peer = options.peers.as_ref().and_then(|p| p.first().cloned()).unwrap_or_else(|| "reno".into());
    let n = options.n.as_ref().and_then(|n| n.first().copied()).unwrap_or(4.0);
    let sizes_kb: Vec<f64> = if quick { vec![10.0, 100.0] } else { vec![10.0, 30.0, 100.0, 200.0, 400.0] };
    let seeds = options.seeds.unwrap_or(if quick { 1 } else { 20 });
    let join_at = 50.0;
    let duration = options.duration.unwrap_or(if quick { 80.0 } else { 120.0 });
    let mut cases = Vec::new();
    for controller in &controllers {
        for &size in &sizes_kb {
            for inside in [true, false] {
                let mut scenario = dumbbell(
                    if quick { "short-transfer-quick" } else { "short-transfer" },
                    duration,
                    join_at,
                    5.0,
                    50.0,
                );
                scenario.flows.push(bulk(&peer, 20, Role::Standard));
                let mut aggregate = bulk(&weighted_spec(controller, n), 1, Role::Weighted);
                let bytes = (size * 1000.0) as u64;
                if inside {
                    aggregate.join_bytes = Some(bytes);
                    aggregate.join_at_s = Some(join_at);
                    aggregate.join_share = Some(n.round() as u32 + 1);
                }
                scenario.flows.push(aggregate);
                if !inside {
                    let mut separate = bulk(&peer, 1, Role::Other);
                    separate.traffic = "transfer".into();
                    separate.bytes = Some(bytes);
                    separate.start_s = join_at;
                    separate.label = Some("transfer".into());
                    scenario.flows.push(separate);
                }
                scenario.start_spread_s = 5.0;
                apply_pacing(&mut scenario, options);
                cases.push((controller.clone(), size, inside, scenario));
            }
        }
    }
    let mut jobs = Vec::new();
    for (_, _, _, scenario) in &cases {
        for replicate in 0..seeds {
            jobs.push(job(scenario, derive_seed(options.seed, replicate as u64))?);
        }
    }
    if let Some((_, _, _, first)) = cases.first() {
        report::write_file(out, "scenario-example.toml", &first.to_toml())?;
    }
    eprint!("{notes}");
    let times = sweep::run("short-transfer", jobs, options.threads, |_, run| {
        // The run's only timed transfer.
        run.connections.iter().flat_map(|c| c.completions.iter()).next().map(|done| done.duration_s)
    });
    let mut table = Table::new(&["controller", "size KB", "inside s", "separate s", "reduction", "incomplete"]);
    let mut results = serde_json::Map::new();
    let mut lines: Vec<Line> = Vec::new();
    let mut csv = String::from("controller,size_kb,inside_s,separate_s,incomplete\n");
    for (index, pair) in cases.chunks(2).enumerate() {
        let (controller, size) = (&pair[0].0, pair[0].1);
        let inside_times = &times[2 * index * seeds..(2 * index + 1) * seeds];
        let separate_times = &times[(2 * index + 1) * seeds..(2 * index + 2) * seeds];
        let complete = |t: &[Option<f64>]| t.iter().flatten().copied().collect::<Vec<f64>>();
        let (inside, _) = mean_and_deviation(&complete(inside_times));
        let (separate, _) = mean_and_deviation(&complete(separate_times));
        let incomplete = inside_times.iter().chain(separate_times).filter(|t| t.is_none()).count();
        let reduction = 1.0 - inside / separate;
        table.row(vec![
            controller.clone(),
            key(size),
            fmt(Some(inside), 3),
            fmt(Some(separate), 3),
            fmt(Some(reduction * 100.0), 1) + "%",
            incomplete.to_string(),
        ]);
        let _ = writeln!(csv, "{controller},{size},{inside},{separate},{incomplete}");
        nest(
            &mut results,
            controller,
            &key(size),
            json!({"inside_s": number(Some(inside)), "separate_s": number(Some(separate)), "reduction": number(Some(reduction)), "incomplete": incomplete}),
        );
        for (name, value) in [(format!("{controller} inside"), inside), (format!("{controller} separate"), separate)] {
            match lines.iter_mut().find(|l| l.name == name) {
                Some(line) => line.points.push((size, value)),
                None => lines.push(Line { name, points: vec![(size, value)] }),
            }
        }
    }
    report::write_file(out, "completion.csv", &csv)?;
    report::plot(
        out,
        "completion.png",
        "Completion time of a transfer joining at 50 s (paper 000 fig. 8)",
        "size (KB)",
        "seconds",
        &lines,
    )?;
    let summary = json!({
        "scenario": if quick { "short-transfer-quick" } else { "short-transfer" },
        "seed": options.seed,
        "flows": [],
        "metrics": {
            "fairness_index": Value::Null,
            "cov": Value::Null,
            "utilization": Value::Null,
            "completion_times": results,
            "skipped_controllers": skipped,
            "seeds": seeds,
            "paper": "PA-MulTCP cuts the completion time by 25-50% against MPAT, less for larger transfers (paper 000 fig. 8); here the new separate connection stands in for MPAT's new window loop",
        },
    });
    Ok(Outcome { table: notes + &table.render(), summary })
}

// ---------------------------------------------------------------------------
// multfrc-friendliness: paper 004 section III-A

/// Paper 004 section III-A: MulTFRC(n) against n TCP flows on a 64 Mbit/s,
/// 20 ms RED bottleneck (normalised throughput, ideal 1), and MulTFRC(n),
/// n in 0.1..2, against one TCP flow on 8 Mbit/s RED (throughput ratio,
/// ideal n). RED has ns-3's automatic parameters and a limit of two
/// bandwidth-delay products (the paper takes TFRC's RED settings, which the
/// extraction does not give); access delays add 3 ms each way (the paper's
/// 2 ms sender side and 1 ms receiver side).
pub fn multfrc_friendliness(options: &Options, out: &Path) -> Result<Outcome, String> {
    let quick = options.quick;
    let controller = options.controllers.as_ref().and_then(|c| c.first().cloned()).unwrap_or_else(|| "multfrc".into());
    let peer = options.peers.as_ref().and_then(|p| p.first().cloned()).unwrap_or_else(|| "reno".into());
    if weighted_spec(&controller, 2.0).parse::<Spec>().is_err() {
        let note = format!("note: skipped: {controller} is not known to the spec language yet");
        let summary = json!({"scenario": "multfrc-friendliness", "seed": options.seed, "flows": [],
            "metrics": {"fairness_index": Value::Null, "cov": Value::Null, "utilization": Value::Null, "skipped_controllers": [controller]}});
        return Ok(Outcome { table: note + "\n", summary });
    }
    let seeds = options.seeds.unwrap_or(if quick { 1 } else { 3 });
    let many: Vec<f64> =
        options.n.clone().unwrap_or(if quick { vec![1.0, 4.0] } else { vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0] });
    let fractional: Vec<f64> = if quick { vec![0.5, 1.5] } else { (1..=20).map(|i| i as f64 / 10.0).collect() };
    let red_link = |rate: f64| {
        let mut link = LinkConfig::droptail_bdp("bottleneck", rate, 20.0, 46.0);
        link.queue = "red".into();
        link.buffer_bdp = Some(2.0);
        link
    };
    let base = |name: &str, duration: f64, warmup: f64, rate: f64| Scenario {
        links: vec![red_link(rate)],
        start_spread_s: 1.0,
        ..dumbbell(name, duration, warmup, rate, 20.0)
    };
    // Paper 004: access links of 2 ms (sender side) and 1 ms (receiver side).
    let flow = |cc: &str, count: usize, role: Role| {
        let mut flow = bulk(cc, count, role);
        flow.access_delay_ms = 3.0;
        flow
    };
    let mut cases = Vec::new();
    for &n in &many {
        let (duration, warmup) = if quick { (30.0, 10.0) } else { (100.0, 20.0) };
        let mut scenario = base("multfrc-vs-n-tcp", duration, warmup, 64.0);
        scenario.flows.push(flow(&weighted_spec(&controller, n), 1, Role::Weighted));
        scenario.flows.push(flow(&peer, (n.round() as usize).max(1), Role::Standard));
        apply_pacing(&mut scenario, options);
        cases.push(("vs-n-tcp", n, scenario));
    }
    let fractional: Vec<f64> = fractional.into_iter().filter(|_| accepts_fractional_weight(&controller)).collect();
    for &n in &fractional {
        let (duration, warmup) = if quick { (40.0, 10.0) } else { (200.0, 15.0) };
        let mut scenario = base("multfrc-fractional", duration, warmup, 8.0);
        scenario.flows.push(flow(&weighted_spec(&controller, n), 1, Role::Weighted));
        scenario.flows.push(flow(&peer, 1, Role::Standard));
        apply_pacing(&mut scenario, options);
        cases.push(("fractional", n, scenario));
    }
    let mut jobs = Vec::new();
    for (_, _, scenario) in &cases {
        for replicate in 0..seeds {
            jobs.push(job(scenario, derive_seed(options.seed, replicate as u64))?);
        }
    }
    if let Some((_, _, first)) = cases.first() {
        report::write_file(out, "scenario-example.toml", &first.to_toml())?;
    }
    let samples = sweep::run("multfrc-friendliness", jobs, options.threads, |_, run| {
        let weighted: f64 = run.connections.iter().filter(|c| c.role == Role::Weighted).map(|c| c.throughput_bps).sum();
        let standard: Vec<f64> =
            run.connections.iter().filter(|c| c.role == Role::Standard).map(|c| c.throughput_bps).collect();
        (weighted, standard.iter().sum::<f64>() / standard.len().max(1) as f64, metrics::utilization(&run))
    });
    let mut table = Table::new(&["case", "n", "MulTFRC norm.", "TCP norm.", "ratio / n", "util"]);
    let mut values = Vec::new();
    let mut fi_map = serde_json::Map::new();
    let mut lines = vec![
        Line { name: "MulTFRC / n, vs n TCP (64 Mbit/s RED)".into(), points: Vec::new() },
        Line { name: "TCP, vs MulTFRC(n) (64 Mbit/s RED)".into(), points: Vec::new() },
        Line { name: "MulTFRC / (n TCP), n < 2 (8 Mbit/s RED)".into(), points: Vec::new() },
    ];
    for (index, (case, n, scenario)) in cases.iter().enumerate() {
        let chunk = &samples[index * seeds..(index + 1) * seeds];
        let (weighted, _) = mean_and_deviation(&chunk.iter().map(|s| s.0).collect::<Vec<_>>());
        let (standard, _) = mean_and_deviation(&chunk.iter().map(|s| s.1).collect::<Vec<_>>());
        let (util, _) = mean_and_deviation(&chunk.iter().map(|s| s.2).collect::<Vec<_>>());
        let capacity = scenario.links[0].rate_mbps * 1e6;
        let tcp_count = scenario.flows[1].count as f64;
        // Paper 004: fair share of one flow is C / 2n with n TCP flows; for
        // n < 2 the MulTFRC rate over the TCP rate should be n.
        let share = capacity / (n + tcp_count);
        let multfrc_norm = weighted / n / share;
        let tcp_norm = standard / share;
        let ratio = weighted / standard / n;
        table.row(vec![
            case.to_string(),
            key(*n),
            fmt(Some(multfrc_norm), 3),
            fmt(Some(tcp_norm), 3),
            fmt(Some(ratio), 3),
            fmt(Some(util), 3),
        ]);
        if *case == "vs-n-tcp" {
            lines[0].points.push((*n, multfrc_norm));
            lines[1].points.push((*n, tcp_norm));
        } else {
            lines[2].points.push((*n, ratio));
        }
        nest(&mut fi_map, case, &key(*n), number(Some(ratio)));
        values.push(json!({"case": case, "n": n, "multfrc_normalized": number(Some(multfrc_norm)), "tcp_normalized": number(Some(tcp_norm)),
            "ratio_over_n": number(Some(ratio)), "utilization": number(Some(util)), "multfrc_bps": number(Some(weighted)), "tcp_mean_bps": number(Some(standard))}));
    }
    report::plot(
        out,
        "multfrc.png",
        "MulTFRC n-TCP-friendliness (paper 004 fig. 7)",
        "n",
        "normalised throughput",
        &lines,
    )?;
    let summary = json!({
        "scenario": if quick { "multfrc-friendliness-quick" } else { "multfrc-friendliness" },
        "seed": options.seed,
        "flows": values.iter().enumerate().map(|(id, v)| json!({"id": id, "cc": weighted_spec(&controller, v["n"].as_f64().unwrap_or(1.0)), "weight": v["n"], "throughput_bps": v["multfrc_bps"]})).collect::<Vec<_>>(),
        "metrics": {
            "fairness_index": fi_map,
            "cov": Value::Null,
            "utilization": Value::Null,
            "points": values,
            "seeds": seeds,
            "paper": "normalised throughput between 0.89 and 1.01 for n up to 100 (fig. 7); for n in 0.1..2 within 4% of n except n = 0.1, 0.2 (about 15%)",
        },
    });
    Ok(Outcome { table: table.render(), summary })
}

// ---------------------------------------------------------------------------
// gevros: paper 001 table I

/// Paper 001 table I: 8 standard + 4 MulTCP(2) flows with drop-tail and
/// RED, and 6 + 6 with RED, on a 2 Mbit/s bottleneck (the table's totals
/// add up to 1.8 Mbit/s; the paper gives no rate), 15 ms, 50-packet queues
/// (ALTQ's default).
pub fn gevros(options: &Options, out: &Path) -> Result<Outcome, String> {
    let quick = options.quick;
    let controller = options.controllers.as_ref().and_then(|c| c.first().cloned()).unwrap_or_else(|| "multcp".into());
    let n = options.n.as_ref().and_then(|n| n.first().copied()).unwrap_or(2.0);
    let spec = weighted_spec(&controller, n);
    spec.parse::<Spec>().map_err(|e| e.to_string())?;
    let peer = options.peers.as_ref().and_then(|p| p.first().cloned()).unwrap_or_else(|| "reno".into());
    let rate = options.bandwidths.as_ref().and_then(|b| b.first().copied()).unwrap_or(2.0);
    let seeds = options.seeds.unwrap_or(if quick { 1 } else { 10 });
    let (duration, warmup) =
        (options.duration.unwrap_or(if quick { 40.0 } else { 120.0 }), options.warmup.unwrap_or(10.0));
    /// The paper's TCP and MulTCP KB/s and the gain in percent.
    type Paper = Option<(f64, f64, f64)>;
    // (queue, standard flows, weighted flows, the paper's numbers)
    let mixes: [(&str, usize, usize, Paper); 4] = [
        ("droptail", 8, 4, Some((15.952, 23.959, 50.1))),
        ("red", 8, 4, Some((14.278, 27.259, 90.9))),
        ("red", 6, 6, Some((13.922, 23.039, 65.5))),
        ("droptail", 6, 6, None),
    ];
    let mut jobs = Vec::new();
    let mut scenarios = Vec::new();
    for (queue, standard, weighted, _) in &mixes {
        let mut link = LinkConfig::droptail_bdp("bottleneck", rate, 15.0, 30.0);
        link.queue = queue.to_string();
        link.buffer_bdp = None;
        link.bdp_rtt_ms = None;
        link.buffer_packets = Some(50);
        let mut scenario = Scenario { links: vec![link], ..dumbbell("gevros", duration, warmup, rate, 15.0) };
        scenario.flows.push(bulk(&peer, *standard, Role::Standard));
        scenario.flows.push(bulk(&spec, *weighted, Role::Weighted));
        apply_pacing(&mut scenario, options);
        for replicate in 0..seeds {
            jobs.push(job(&scenario, derive_seed(options.seed, replicate as u64))?);
        }
        scenarios.push(scenario);
    }
    report::write_file(out, "scenario-example.toml", &scenarios[0].to_toml())?;
    let samples = sweep::run("gevros", jobs, options.threads, |_, run| {
        let family = |role| {
            let values: Vec<f64> =
                run.connections.iter().filter(|c| c.role == role).map(|c| c.throughput_bps).collect();
            values.iter().sum::<f64>() / values.len().max(1) as f64
        };
        (family(Role::Standard), family(Role::Weighted), metrics::utilization(&run), metrics::fairness_index(&run))
    });
    let mut table = Table::new(&[
        "queue",
        "mix",
        "TCP KB/s",
        "weighted KB/s",
        "gain",
        "paper TCP",
        "paper MulTCP",
        "paper gain",
        "util",
    ]);
    let mut values = Vec::new();
    let mut fi_map = serde_json::Map::new();
    for (index, (queue, standard, weighted, paper)) in mixes.iter().enumerate() {
        let chunk = &samples[index * seeds..(index + 1) * seeds];
        let (tcp, _) = mean_and_deviation(&chunk.iter().map(|s| s.0 / 8e3).collect::<Vec<_>>());
        let (multcp, _) = mean_and_deviation(&chunk.iter().map(|s| s.1 / 8e3).collect::<Vec<_>>());
        let (util, _) = mean_and_deviation(&chunk.iter().map(|s| s.2).collect::<Vec<_>>());
        let (fi, _) = mean_and_deviation(&chunk.iter().filter_map(|s| s.3).collect::<Vec<_>>());
        let gain = (multcp / tcp - 1.0) * 100.0;
        let mix = format!("{standard}+{weighted}");
        table.row(vec![
            queue.to_string(),
            mix.clone(),
            fmt(Some(tcp), 3),
            fmt(Some(multcp), 3),
            fmt(Some(gain), 1) + "%",
            fmt(paper.map(|p| p.0), 3),
            fmt(paper.map(|p| p.1), 3),
            paper.map_or("-".into(), |p| format!("{:.1}%", p.2)),
            fmt(Some(util), 3),
        ]);
        fi_map.insert(format!("{queue}/{mix}"), number(Some(fi)));
        values.push(json!({"queue": queue, "standard": standard, "weighted": weighted, "tcp_kbytes_per_s": number(Some(tcp)),
            "weighted_kbytes_per_s": number(Some(multcp)), "gain_percent": number(Some(gain)), "utilization": number(Some(util)),
            "paper_gain_percent": paper.map(|p| p.2)}));
    }
    let summary = json!({
        "scenario": if quick { "gevros-quick" } else { "gevros" },
        "seed": options.seed,
        "flows": values.iter().enumerate().map(|(id, v)| json!({"id": id, "cc": spec, "weight": n, "throughput_bps": number(v["weighted_kbytes_per_s"].as_f64().map(|k| k * 8e3))})).collect::<Vec<_>>(),
        "metrics": {"fairness_index": fi_map, "cov": Value::Null, "utilization": Value::Null, "mixes": values, "seeds": seeds, "bandwidth_mbps": rate},
    });
    Ok(Outcome { table: table.render(), summary })
}

// ---------------------------------------------------------------------------
// validation of the lab itself

/// Equal-RTT standard flows: Jain's index of their throughputs.
pub fn equal_rtt_jain(
    cc: &str,
    flows: usize,
    rate_mbps: f64,
    duration: f64,
    seed: u64,
) -> Result<(f64, RunResult), String> {
    let mut scenario = dumbbell("validate-jain", duration, duration / 5.0, rate_mbps, 20.0);
    scenario.flows.push(bulk(cc, flows, Role::Standard));
    let run = crate::sim::Simulation::new(scenario.resolve().map_err(|e| e.to_string())?, seed).run();
    let throughputs: Vec<f64> = run.connections.iter().map(|c| c.throughput_bps).collect();
    Ok((metrics::jain_index(&throughputs), run))
}

/// One standard flow on a path with random loss `loss`: its throughput, and
/// what the TCP equation (RFC 5348 section 3.1, t_RTO = 4R, b = 1) gives
/// for the loss event rate and mean RTT it measured.
pub fn equation_check(cc: &str, loss: f64, duration: f64, seed: u64) -> Result<(f64, f64, f64, f64), String> {
    let mut scenario = dumbbell("validate-equation", duration, duration / 10.0, 1000.0, 25.0);
    scenario.links[0].random_loss = loss;
    scenario.links[0].buffer_bdp = Some(4.0);
    scenario.flows.push(bulk(cc, 1, Role::Standard));
    scenario.start_spread_s = 0.0;
    let run = crate::sim::Simulation::new(scenario.resolve().map_err(|e| e.to_string())?, seed).run();
    let flow = &metrics::flow_metrics(&run)[0];
    let rtt = flow.mean_rtt_ms * 1e-3;
    let p = flow.loss_event_rate;
    let equation = TcpEquation { rtt, rto: 4.0 * rtt, b: 1.0 }.packets_per_second(p) * 1500.0 * 8.0;
    Ok((flow.throughput_bps, equation, p, rtt))
}

/// `flowshare lab validate`: the lab's validation in full form.
pub fn validate(options: &Options, out: &Path) -> Result<Outcome, String> {
    let quick = options.quick;
    let duration = options.duration.unwrap_or(if quick { 60.0 } else { 300.0 });
    let mut table = Table::new(&["check", "setup", "measured", "expected", "error"]);
    let mut checks = Vec::new();
    for (cc, flows, rate) in [("reno", 8, 20.0), ("reno", 16, 100.0), ("cubic", 8, 20.0)] {
        let (jain, _) = equal_rtt_jain(cc, flows, rate, duration, options.seed)?;
        let setup = format!("{flows} x {cc}, {rate} Mbit/s, 40 ms RTT, {duration} s");
        table.row(vec!["Jain index".into(), setup.clone(), fmt(Some(jain), 4), ">= 0.98".into(), "-".into()]);
        checks.push(json!({"check": "jain_index", "setup": setup, "value": jain}));
    }
    for loss in [0.001, 0.005, 0.01, 0.02, 0.05] {
        let (measured, equation, p, rtt) = equation_check("reno", loss, duration.max(100.0), options.seed)?;
        let error = measured / equation - 1.0;
        let setup = format!("1 x reno, random loss {loss}, p = {p:.5}, R = {:.1} ms", rtt * 1e3);
        table.row(vec![
            "TCP equation".into(),
            setup.clone(),
            fmt(Some(measured / 1e6), 3),
            fmt(Some(equation / 1e6), 3),
            fmt(Some(error * 100.0), 1) + "%",
        ]);
        checks.push(json!({"check": "tcp_equation", "setup": setup, "measured_bps": measured, "equation_bps": equation, "relative_error": error}));
    }
    let summary = json!({"scenario": "validate", "seed": options.seed, "flows": [],
        "metrics": {"fairness_index": Value::Null, "cov": Value::Null, "utilization": Value::Null, "checks": checks}});
    report::write_file(out, "validate.txt", &table.render())?;
    Ok(Outcome { table: table.render(), summary })
}

// ---------------------------------------------------------------------------
// mcompound: paper 003 section IV

/// Paper 003 section IV, three topologies (fig. 2 is missing from the
/// extraction; the text gives): (a) load balancing, 64 ms: subflow 1 on
/// link 1 with a Compound TCP flow from 0 s, subflow 2 over links 2 and 3;
/// Compound TCP flows join link 2 and link 3 at 70 s; 300 s. (b) efficiency:
/// one subflow on each of two disjoint 200 Mbit/s, 40 ms paths. (c)
/// fairness: two subflows and one Compound TCP flow on one 100 Mbit/s,
/// 64 ms bottleneck. Link rates in (a) are not given; 200 Mbit/s is
/// assumed. Buffers are one BDP, packets 1500 bytes.
pub fn mcompound(options: &Options, out: &Path) -> Result<Outcome, String> {
    let quick = options.quick;
    let group_spec = "mcompound:group=lab";
    if group_spec.parse::<Spec>().is_err() || "ctcp".parse::<Spec>().is_err() {
        let summary = json!({"scenario": "mcompound", "seed": options.seed, "flows": [],
            "metrics": {"fairness_index": Value::Null, "cov": Value::Null, "utilization": Value::Null, "skipped_controllers": ["mcompound", "ctcp"]}});
        return Ok(Outcome {
            table: "note: skipped: mcompound or ctcp is not known to the spec language yet\n".into(),
            summary,
        });
    }
    let scale = if quick { 0.1 } else { 1.0 };
    let rate_a =
        options.bandwidths.as_ref().and_then(|b| b.first().copied()).unwrap_or(if quick { 20.0 } else { 200.0 });
    let peer = |count: usize, path: &[&str], start: f64| {
        let mut flow = FlowConfig::bulk("ctcp", count, path);
        flow.access_delay_ms = 1.0;
        flow.jitter_ms = 1.0;
        flow.start_s = start;
        flow.role = Some(Role::Standard);
        flow
    };
    let multipath = |paths: &[&[&str]]| {
        let mut flow = FlowConfig::bulk(group_spec, 1, &[]);
        flow.paths = paths.iter().map(|p| p.iter().map(|l| l.to_string()).collect()).collect();
        flow.access_delay_ms = 1.0;
        flow.jitter_ms = 1.0;
        flow.role = Some(Role::Weighted);
        flow.label = Some("mcompound".into());
        flow
    };
    let base = |name: &str, duration: f64, links: Vec<LinkConfig>| {
        let mut scenario = dumbbell(name, duration, duration / 10.0, 1.0, 1.0);
        scenario.links = links;
        apply_pacing(&mut scenario, options);
        scenario
    };
    let mut load = base(
        "mcompound-load-balancing",
        300.0 * scale,
        vec![
            LinkConfig::droptail_bdp("link1", rate_a, 64.0, 128.0),
            LinkConfig::droptail_bdp("link2", rate_a, 64.0, 128.0),
            LinkConfig::droptail_bdp("link3", rate_a, 64.0, 128.0),
        ],
    );
    load.warmup_s = 70.0 * scale;
    load.flows = vec![
        multipath(&[&["link1"], &["link2", "link3"]]),
        peer(1, &["link1"], 0.0),
        peer(1, &["link2"], 70.0 * scale),
        peer(1, &["link3"], 70.0 * scale),
    ];
    let rate_b = if quick { 20.0 } else { 200.0 };
    let mut efficiency = base(
        "mcompound-efficiency",
        400.0 * scale,
        vec![
            LinkConfig::droptail_bdp("path1", rate_b, 40.0, 80.0),
            LinkConfig::droptail_bdp("path2", rate_b, 40.0, 80.0),
        ],
    );
    efficiency.flows = vec![multipath(&[&["path1"], &["path2"]])];
    let rate_c = if quick { 10.0 } else { 100.0 };
    let mut fairness =
        base("mcompound-fairness", 300.0 * scale, vec![LinkConfig::droptail_bdp("shared", rate_c, 64.0, 128.0)]);
    fairness.flows = vec![multipath(&[&["shared"], &["shared"]]), peer(1, &["shared"], 0.0)];
    let scenarios = [load, efficiency, fairness];
    let seeds = options.seeds.unwrap_or(1);
    let mut jobs = Vec::new();
    for scenario in &scenarios {
        for replicate in 0..seeds {
            jobs.push(job(scenario, derive_seed(options.seed, replicate as u64))?);
        }
    }
    for scenario in &scenarios {
        report::write_file(out, &format!("{}.toml", scenario.name), &scenario.to_toml())?;
    }
    let runs = sweep::run("mcompound", jobs, options.threads, |_, run| run);
    let mut table = Table::new(&["scenario", "seed", "connection", "Mbit/s", "utilization", "FI"]);
    let mut metrics_json = serde_json::Map::new();
    let mut flows = Vec::new();
    for (index, run) in runs.iter().enumerate() {
        let fi = metrics::fairness_index(run);
        for (id, c) in run.connections.iter().enumerate() {
            table.row(vec![
                run.name.clone(),
                (index % seeds).to_string(),
                format!("{id}:{}", c.label),
                fmt(Some(c.throughput_bps / 1e6), 2),
                fmt(Some(metrics::utilization(run)), 3),
                fmt(fi, 3),
            ]);
            if index % seeds == 0 {
                flows.push(json!({"id": flows.len(), "scenario": run.name, "cc": c.cc, "weight": c.weight, "throughput_bps": c.throughput_bps}));
            }
        }
        if index % seeds == 0 {
            let scenario_dir = out.join(&run.name);
            report::write_file(&scenario_dir, "series.csv", &report::series_csv(run))?;
            report::plot(
                &scenario_dir,
                "throughput.png",
                &run.name,
                "time (s)",
                "Mbit/s",
                &report::throughput_lines(run, 0.5),
            )?;
            metrics_json.insert(
                run.name.clone(),
                json!({"fairness_index": number(fi), "utilization": metrics::utilization(run),
                    "throughput_bps": run.connections.iter().map(|c| c.throughput_bps).collect::<Vec<_>>(),
                    "links": metrics::link_metrics(run)}),
            );
        }
    }
    let fi = runs.get(2 * seeds).and_then(metrics::fairness_index);
    let efficiency_util = runs.get(seeds).map(metrics::utilization);
    let summary = json!({
        "scenario": if quick { "mcompound-quick" } else { "mcompound" },
        "seed": options.seed,
        "flows": flows,
        "metrics": {
            "fairness_index": number(fi),
            "cov": Value::Null,
            "utilization": number(efficiency_util),
            "scenarios": metrics_json,
            "paper": "(a) subflows average 161.4 and 124.6 Mbit/s before 70 s, then +30 and -58.7 Mbit/s; (b) well over 380 of 400 Mbit/s; (c) MCompound's total about equal to the single CTCP flow",
        },
    });
    Ok(Outcome { table: table.render(), summary })
}
