//! Paper 003 section IV, three topologies (fig. 2 is missing from the
//! extraction; the text gives): (a) load balancing, 64 ms: subflow 1 on
//! link 1 with a Compound TCP flow from 0 s, subflow 2 over links 2 and 3;
//! Compound TCP flows join link 2 and link 3 at 70 s; 300 s. (b) efficiency:
//! one subflow on each of two disjoint 200 Mbit/s, 40 ms paths. (c)
//! fairness: two subflows and one Compound TCP flow on one 100 Mbit/s,
//! 64 ms bottleneck. Link rates in (a) are not given; 200 Mbit/s is
//! assumed. Buffers are one BDP, packets 1500 bytes.

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

/// The three topologies, a tenth of the rates and times in the quick form.
fn scenarios(options: &Options) -> [Scenario; 3] {
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
    let fairness = base("mcompound-fairness", 300.0 * scale, vec![shared])
        .with_flow(multipath(&[&["shared"], &["shared"]]))
        .with_flow(peer(&["shared"], 0.0));
    [load, efficiency, fairness]
}

/// Runs the experiment.
pub fn run(options: &Options, out: &Path) -> Result<Outcome, String> {
    let scenarios = scenarios(options);
    let seeds = options.seeds.unwrap_or(1);
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
    let summary = json!({
        "scenario": name("mcompound", options.quick),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_topologies_run_one_multipath_connection_each() {
        let [load, efficiency, fairness] = scenarios(&Options { quick: true, ..Default::default() });
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
    }
}
