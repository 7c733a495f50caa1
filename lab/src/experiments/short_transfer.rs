//! Paper 000 section 5.3: a transfer of 10-400 KB starts at 50 s, either
//! inside a weighted aggregate (N = 4, one packet in N + 1 of the
//! aggregate's) or as a new standard connection, next to 20 standard flows
//! on 5 Mbit/s, 50 ms. Reports the mean completion times.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;
use serde_json::Value;

use super::common::bulk;
use super::common::jobs;
use super::common::key;
use super::common::name;
use super::common::nest;
use super::common::paced;
use super::common::spec_at;
use super::common::Controllers;
use super::Experiment;
use super::Outcome;
use crate::metrics::mean_and_deviation;
use crate::options::Options;
use crate::report;
use crate::report::fmt;
use crate::report::number;
use crate::report::Line;
use crate::report::Table;
use crate::scenario::FlowConfig;
use crate::scenario::LinkConfig;
use crate::scenario::Scenario;
use crate::scenario::BOTTLENECK;
use crate::setup::Role;
use crate::sweep;

/// `flowshare lab short-transfer`.
pub const EXPERIMENT: Experiment =
    Experiment { name: "short-transfer", run, uses: &["seeds", "controllers", "n", "peers", "duration", "pacing"] };

/// When the transfer starts, seconds; the warm-up ends then too.
const JOIN_AT_S: f64 = 50.0;

/// The controllers the paper compares: its own and the one it improves on.
const CONTROLLERS: &[&str] = &["pa-multcp", "multcp"];

/// One run: a controller, a transfer size, and a scenario in which the
/// transfer joins the aggregate or opens a connection of its own.
struct Case {
    controller: String,
    size_kb: f64,
    scenario: Scenario,
}

/// The cases, inside and separate next to each other, and the controllers.
fn cases(options: &Options) -> Result<(Vec<Case>, Controllers), String> {
    let quick = options.quick;
    let default = || CONTROLLERS.iter().map(|name| name.to_string()).collect();
    let chosen = Controllers::choose(options, default);
    let peer = options.first_peer().unwrap_or_else(|| "reno".into());
    let n = options.first_n().unwrap_or(4.0);
    let sizes_kb: Vec<f64> = if quick { vec![10.0, 100.0] } else { vec![10.0, 30.0, 100.0, 200.0, 400.0] };
    let duration = options.duration_s.unwrap_or(if quick { 80.0 } else { 120.0 });
    let mut cases = Vec::new();
    for controller in &chosen.weighted {
        let spec = spec_at(controller, n)?;
        for &size_kb in &sizes_kb {
            for inside in [true, false] {
                let bytes = (size_kb * 1000.0) as u64;
                let aggregate = bulk(&spec, 1, Role::Weighted);
                // Starts spread over 5 s, not the lab's usual 2 s.
                let base = Scenario::dumbbell(
                    &name("short-transfer", quick),
                    duration,
                    JOIN_AT_S,
                    5.0,
                    LinkConfig::bottleneck(5.0, 100.0),
                )
                .with_flow(bulk(&peer, 20, Role::Standard));
                let scenario = if inside {
                    base.with_flow(aggregate.with_join(bytes, JOIN_AT_S, n.round() as u32 + 1))
                } else {
                    let separate = FlowConfig::transfer(&peer, bytes, &[BOTTLENECK])
                        .with_access(1.0, 1.0)
                        .with_role(Role::Other)
                        .with_times(JOIN_AT_S, None)
                        .with_label("transfer");
                    base.with_flow(aggregate).with_flow(separate)
                };
                let scenario = paced(scenario, options);
                cases.push(Case { controller: controller.name.clone(), size_kb, scenario });
            }
        }
    }
    Ok((cases, chosen))
}

/// Runs the experiment.
pub fn run(options: &Options, out: &Path) -> Result<Outcome, String> {
    let quick = options.quick;
    let (cases, chosen) = cases(options)?;
    let seeds = options.seeds.unwrap_or(if quick { 1 } else { 20 });
    let jobs = jobs(cases.iter().map(|case| &case.scenario), options, seeds)?;
    if let Some(first) = cases.first() {
        report::write_file(out, "scenario-example.toml", &first.scenario.to_toml())?;
    }
    eprint!("{}", chosen.notes);
    let times = sweep::run("short-transfer", jobs, options.threads, |_, run| {
        // The run's only timed transfer.
        run.connections.iter().flat_map(|c| c.completions.iter()).next().map(|done| done.duration_s)
    });
    let mut table = Table::new(&["controller", "size KB", "inside s", "separate s", "reduction", "incomplete"]);
    let mut results = serde_json::Map::new();
    let mut lines: Vec<Line> = Vec::new();
    let mut csv = String::from("controller,size_kb,inside_s,separate_s,incomplete\n");
    for (index, pair) in cases.chunks(2).enumerate() {
        let (controller, size) = (&pair[0].controller, pair[0].size_kb);
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
        "scenario": name("short-transfer", quick),
        "seed": options.seed,
        "flows": [],
        "metrics": {
            "fairness_index": Value::Null,
            "cov": Value::Null,
            "utilization": Value::Null,
            "completion_times": results,
            "skipped_controllers": chosen.skipped,
            "seeds": seeds,
            "paper": "PA-MulTCP cuts the completion time by 25-50% against MPAT, less for larger transfers (paper 000 fig. 8); here the new separate connection stands in for MPAT's new window loop",
        },
    });
    Ok(Outcome { table: chosen.notes + &table.render(), summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_transfer_joins_the_aggregate_or_opens_a_connection_of_its_own() {
        let options = Options { quick: true, ..Default::default() };
        let (cases, chosen) = cases(&options).unwrap();
        assert_eq!(chosen.names(), CONTROLLERS);
        // PA-MulTCP and MulTCP x 10 and 100 KB x inside and separate.
        assert_eq!(cases.len(), 8);
        let (inside, separate) = (&cases[0].scenario, &cases[1].scenario);
        assert_eq!((cases[0].controller.as_str(), cases[0].size_kb), ("pa-multcp", 10.0));
        let aggregate = &inside.flows[1];
        assert_eq!(aggregate.cc.as_deref(), Some("pa-multcp:n=4,assign=consecutive,probe=reno,cap=paper"));
        assert_eq!(
            (aggregate.join_bytes, aggregate.join_at_s, aggregate.join_share),
            (Some(10_000), Some(50.0), Some(5))
        );
        assert_eq!(inside.flows.len(), 2);
        let transfer = &separate.flows[2];
        assert_eq!((transfer.traffic.as_str(), transfer.bytes, transfer.start_s), ("transfer", Some(10_000), 50.0));
        assert_eq!(separate.flows[1].join_bytes, None);
        assert_eq!((inside.warmup_s, inside.start_spread_s, inside.links[0].rate_mbps), (50.0, 5.0, 5.0));
    }
}
