//! Paper 003 section IV, three topologies (fig. 2 is missing from the
//! extraction; the text gives): (a) load balancing, 64 ms: subflow 1 on
//! link 1 with a Compound TCP flow from 0 s, subflow 2 over links 2 and 3;
//! Compound TCP flows join link 2 and link 3 at 70 s; 300 s. (b) efficiency:
//! one subflow on each of two disjoint 200 Mbit/s, 40 ms paths. (c)
//! fairness: two subflows and one Compound TCP flow on one 100 Mbit/s,
//! 64 ms bottleneck. Link rates in (a) are not given; 200 Mbit/s is
//! assumed. Buffers are one BDP, packets 1500 bytes.
//!
//! (c) runs 900 s with the first 300 s discarded, beside its control, two
//! Compound TCP flows on the same bottleneck, over 8 seeds: with a BDP
//! buffer a loss epoch lasts about 100 s and Compound TCP's delay window
//! shares unevenly between flows for long stretches, so the paper's 100 s
//! showed Compound TCP's own 24 : 76 split, not the coupling (the lab
//! measured MCompound at 0.26 of a CTCP flow in 100 s runs; in 900 s runs
//! CTCP against CTCP is 0.8 to 1.14 from seed to seed).

use std::path::Path;

use serde_json::json;
use serde_json::Value;

use super::common::jobs;
use super::common::name;
use super::common::paced;
use super::Experiment;
use super::Outcome;
use crate::metrics;
use crate::options::Options;
use crate::report;
use crate::report::fmt;
use crate::report::number;
use crate::report::Table;
use crate::scenario::FlowConfig;
use crate::scenario::LinkConfig;
use crate::scenario::Scenario;
use crate::scenario::LAB_START_SPREAD_S;
use crate::setup::Role;
use crate::sweep;

/// `flowshare lab mcompound`.
pub const EXPERIMENT: Experiment = Experiment { name: "mcompound", run, uses: &["seeds", "bandwidths", "pacing"] };

/// The spec of the multipath connection's subflows; the engine makes each
/// connection's group private to its run, whatever the ID.
const GROUP_SPEC: &str = "mcompound:group=lab";

/// The three topologies and (c)'s control, a tenth of the rates and
/// times in the quick form.
fn scenarios(options: &Options) -> [Scenario; 4] {
    let quick = options.quick;
    let scale = if quick { 0.1 } else { 1.0 };
    let peer = |path: &[&str], start: f64| {
        FlowConfig::bulk("ctcp", 1, path).with_access(1.0, 1.0).with_times(start, None).with_role(Role::Standard)
    };
    let multipath = |paths: &[&[&str]]| {
        FlowConfig::multipath(GROUP_SPEC, paths).with_access(1.0, 1.0).with_role(Role::Weighted).with_label("mcompound")
    };
    let base = |name: &str, duration: f64, links: Vec<LinkConfig>| {
        paced(Scenario::new(name, duration, duration / 10.0, LAB_START_SPREAD_S, links), options)
    };
    let rate_a = options.bandwidth_mbps().unwrap_or(if quick { 20.0 } else { 200.0 });
    let links_a = ["link1", "link2", "link3"].map(|link| LinkConfig::droptail_bdp(link, rate_a, 128.0));
    let mut load = base("mcompound-load-balancing", 300.0 * scale, links_a.to_vec())
        .with_flow(multipath(&[&["link1"], &["link2", "link3"]]))
        .with_flow(peer(&["link1"], 0.0))
        .with_flow(peer(&["link2"], 70.0 * scale))
        .with_flow(peer(&["link3"], 70.0 * scale));
    load.warmup_s = 70.0 * scale;
    let rate_b = if quick { 20.0 } else { 200.0 };
    let links_b = ["path1", "path2"].map(|link| LinkConfig::droptail_bdp(link, rate_b, 80.0));
    let efficiency =
        base("mcompound-efficiency", 400.0 * scale, links_b.to_vec()).with_flow(multipath(&[&["path1"], &["path2"]]));
    let rate_c = if quick { 10.0 } else { 100.0 };
    let shared = LinkConfig::droptail_bdp("shared", rate_c, 128.0);
    let mut fairness = base("mcompound-fairness", 900.0 * scale, vec![shared.clone()])
        .with_flow(multipath(&[&["shared"], &["shared"]]))
        .with_flow(peer(&["shared"], 0.0));
    fairness.warmup_s = 300.0 * scale;
    let mut control = base("mcompound-fairness-control", 900.0 * scale, vec![shared])
        .with_flow(peer(&["shared"], 0.0).with_role(Role::Weighted).with_label("ctcp-a"))
        .with_flow(peer(&["shared"], 0.0));
    control.warmup_s = 300.0 * scale;
    [load, efficiency, fairness, control]
}

/// The fairness index of (c) and of its control over the seeds.
fn fairness_over_seeds(runs: &[crate::result::RunResult], scenario: &str) -> (f64, f64, Vec<f64>) {
    let values: Vec<f64> = runs.iter().filter(|run| run.name == scenario).filter_map(metrics::fairness_index).collect();
    let (mean, deviation) = metrics::mean_and_deviation(&values);
    (mean, deviation, values)
}

/// Runs the experiment.
pub fn run(options: &Options, out: &Path) -> Result<Outcome, String> {
    let scenarios = scenarios(options);
    let seeds = options.seeds.unwrap_or(if options.quick { 1 } else { 8 });
    let jobs = jobs(&scenarios, options, seeds)?;
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
    let (fairness, control) =
        (fairness_over_seeds(&runs, "mcompound-fairness"), fairness_over_seeds(&runs, "mcompound-fairness-control"));
    let mut table = table.render();
    table.push_str(&format!(
        "\n(c) over {seeds} seeds: MCompound / CTCP {:.3} +- {:.3} (sd), control CTCP / CTCP {:.3} +- {:.3}; paper: about equal\n",
        fairness.0, fairness.1, control.0, control.1
    ));
    let summary = json!({
        "scenario": name("mcompound", options.quick),
        "seed": options.seed,
        "flows": flows,
        "metrics": {
            "fairness_index": number(fi),
            "cov": Value::Null,
            "utilization": number(efficiency_util),
            "scenarios": metrics_json,
            "fairness_over_seeds": {"mean": number(Some(fairness.0)), "sd": number(Some(fairness.1)), "values": fairness.2},
            "control_over_seeds": {"mean": number(Some(control.0)), "sd": number(Some(control.1)), "values": control.2},
            "paper": "(a) subflows average 161.4 and 124.6 Mbit/s before 70 s, then +30 and -58.7 Mbit/s; (b) well over 380 of 400 Mbit/s; (c) MCompound's total about equal to the single CTCP flow",
        },
    });
    Ok(Outcome { table, summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_topologies_run_one_multipath_connection_each() {
        let [load, efficiency, fairness, control] = scenarios(&Options { quick: true, ..Default::default() });
        for scenario in [&load, &efficiency, &fairness] {
            let multipath = &scenario.flows[0];
            assert_eq!((multipath.cc.as_deref(), multipath.paths.len()), (Some(GROUP_SPEC), 2), "{}", scenario.name);
            scenario.resolve().unwrap();
        }
        assert_eq!(load.flows[0].paths[1], ["link2", "link3"]);
        assert_eq!((load.duration_s, load.warmup_s, load.flows[2].start_s), (30.0, 7.0, 7.0));
        let rates = [&load, &efficiency, &fairness].map(|scenario| scenario.links[0].rate_mbps);
        assert_eq!(rates, [20.0, 20.0, 10.0]);
        assert_eq!(fairness.flows[0].paths, [["shared"], ["shared"]]);
        // The control: two Compound TCP flows on the same bottleneck, as long.
        assert_eq!((control.flows[0].cc.as_deref(), control.flows[1].cc.as_deref()), (Some("ctcp"), Some("ctcp")));
        assert_eq!((fairness.duration_s, fairness.warmup_s), (control.duration_s, control.warmup_s));
        assert_eq!((fairness.duration_s, fairness.warmup_s), (90.0, 30.0));
    }
}
