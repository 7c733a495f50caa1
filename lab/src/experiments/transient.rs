//! Paper 000 section 5.2: a weighted connection (N = 10) and 20 standard
//! flows on 120 Mbit/s, 50 ms; a CBR flow takes half the link from 300 s to
//! 600 s. Reports how many RTTs the weighted connection takes to give up
//! bandwidth and to take it back.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;
use serde_json::Value;

use super::common::bulk;
use super::common::jobs;
use super::common::name;
use super::common::paced;
use super::common::spec_at;
use super::common::Controllers;
use super::Experiment;
use super::Outcome;
use crate::metrics;
use crate::metrics::mean_and_deviation;
use crate::options::weighted_algorithms;
use crate::options::Options;
use crate::report;
use crate::report::fmt;
use crate::report::number;
use crate::report::Line;
use crate::report::Table;
use crate::result::RunResult;
use crate::scenario::FlowConfig;
use crate::scenario::LinkConfig;
use crate::scenario::Scenario;
use crate::scenario::BOTTLENECK;
use crate::scenario::LAB_START_SPREAD_S;
use crate::setup::Role;
use crate::sweep;

/// `flowshare lab transient`.
pub const EXPERIMENT: Experiment = Experiment {
    name: "transient",
    run,
    uses: &["seeds", "controllers", "n", "peers", "bandwidths", "duration", "warmup", "pacing"],
};

/// The round-trip time the reaction and recovery are counted in, seconds:
/// 2 x (50 ms + 2 ms access).
const RTT_S: f64 = 0.104;

/// The width of the throughput bins the times are read from, seconds.
const BIN_S: f64 = 0.1;

/// The runs: one scenario per controller, and the CBR period.
struct Plan {
    /// The controllers, and the notes on what was skipped.
    chosen: Controllers,
    /// The spec of each controller at the weight.
    specs: Vec<String>,
    scenarios: Vec<Scenario>,
    rate: f64,
    duration: f64,
    cbr_on: f64,
    cbr_off: f64,
}

fn plan(options: &Options) -> Result<Plan, String> {
    let quick = options.quick;
    let chosen = Controllers::choose(options, weighted_algorithms);
    let peer = options.first_peer().unwrap_or_else(|| "reno".into());
    let n = options.first_n().unwrap_or(10.0);
    let rate = options.bandwidth_mbps().unwrap_or(if quick { 24.0 } else { 120.0 });
    let duration = options.duration_s.unwrap_or(if quick { 90.0 } else { 900.0 });
    let warmup = options.warmup_s.unwrap_or(duration / 9.0);
    let (cbr_on, cbr_off) = (duration / 3.0, 2.0 * duration / 3.0);
    let mut specs = Vec::new();
    let mut scenarios = Vec::new();
    for controller in &chosen.weighted {
        let spec = spec_at(controller, n)?;
        let bottleneck = LinkConfig::bottleneck(rate, 100.0);
        let cbr = FlowConfig::cbr(rate / 2.0, &[BOTTLENECK]).with_access(1.0, 0.0).with_times(cbr_on, Some(cbr_off));
        let scenario = Scenario::dumbbell(&name("transient", quick), duration, warmup, LAB_START_SPREAD_S, bottleneck)
            .with_flow(bulk(&spec, 1, Role::Weighted))
            .with_flow(bulk(&peer, 20, Role::Standard))
            .with_flow(cbr);
        scenarios.push(paced(scenario, options));
        specs.push(spec);
    }
    Ok(Plan { chosen, specs, scenarios, rate, duration, cbr_on, cbr_off })
}

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

/// Runs the experiment.
pub fn run(options: &Options, out: &Path) -> Result<Outcome, String> {
    let plan = plan(options)?;
    let seeds = options.seeds.unwrap_or(1);
    let jobs = jobs(&plan.scenarios, options, seeds)?;
    if let Some(first) = plan.scenarios.first() {
        report::write_file(out, "scenario-example.toml", &first.to_toml())?;
    }
    eprint!("{}", plan.chosen.notes);
    let (bin, rtt, duration, cbr_on, cbr_off) = (BIN_S, RTT_S, plan.duration, plan.cbr_on, plan.cbr_off);
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
    for (c, (controller, spec)) in plan.chosen.names().iter().zip(&plan.specs).enumerate() {
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
                lines.push(Line { name: spec.clone(), points });
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
        "scenario": name("transient", options.quick),
        "seed": options.seed,
        "flows": flows,
        "metrics": {
            "fairness_index": fi_values,
            "cov": Value::Null,
            "utilization": Value::Null,
            "controllers": per_controller,
            "skipped_controllers": plan.chosen.skipped,
            "bandwidth_mbps": plan.rate,
            "cbr_mbps": plan.rate / 2.0,
            "cbr_on_s": cbr_on,
            "cbr_off_s": cbr_off,
            "rtt_s": rtt,
            "paper": "reaction to the CBR: PA-MulTCP 7-8 RTTs, MulTCP 17-18 RTTs (paper 000 section 5.2)",
        },
    });
    Ok(Outcome { table: plan.chosen.notes + &table.render(), summary })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quick_form_steps_a_cbr_flow_of_half_the_link_in_the_middle_third() {
        let options = Options { quick: true, controllers: Some(vec!["multcp".into()]), ..Default::default() };
        let plan = plan(&options).unwrap();
        assert_eq!((plan.chosen.names(), plan.specs), (vec!["multcp".to_string()], vec!["multcp:n=10".to_string()]));
        assert_eq!((plan.cbr_on, plan.cbr_off), (30.0, 60.0));
        let scenario = &plan.scenarios[0];
        assert_eq!((scenario.duration_s, scenario.warmup_s, scenario.links[0].rate_mbps), (90.0, 10.0, 24.0));
        let cbr = &scenario.flows[2];
        assert_eq!(
            (cbr.traffic.as_str(), cbr.rate_mbps, cbr.start_s, cbr.stop_s),
            ("cbr", Some(12.0), 30.0, Some(60.0))
        );
        assert_eq!(scenario.flows[1].count, 20);
    }

    #[test]
    fn a_crossing_is_timed_from_the_step_to_the_end_of_the_window() {
        // 1 Mbit/s for 2 s, then 0.2 Mbit/s: at 0.1 s bins the two-bin mean
        // falls below 0.5 Mbit/s in the bin that starts at the step.
        let series: Vec<f64> = (0..40).map(|bin| if bin < 20 { 1e6 } else { 0.2e6 }).collect();
        let falling = crossing(&series, 0.1, 2.0, 2, 0.5e6, true).unwrap();
        assert!((falling - 0.2).abs() < 1e-9, "{falling}");
        assert_eq!(crossing(&series, 0.1, 2.0, 2, 0.5e6, false), None);
        assert!((mean_between(&series, 0.1, 1.0, 3.0) - 0.6e6).abs() < 1e-3);
    }
}
