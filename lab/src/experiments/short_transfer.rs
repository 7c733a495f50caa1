//! Paper 000 section 5.3: a transfer of 10-400 KB starts at 50 s next to
//! 20 standard flows on 5 Mbit/s, 50 ms, in one of three ways, and the
//! mean completion times are compared:
//!
//! * **inside, N**: it joins a weighted aggregate (N = 4), getting one packet
//!   in N + 1 of the aggregate's, whose weight stays N (the lab's first
//!   reading of the paper: the transfer takes a fifth of about four
//!   flowshares);
//! * **inside, N + 1**: as flowshare's server runs it: the transfer joins
//!   the aggregate and inherits its congestion state (paper 000: the
//!   arriving flow joins the aggregate), the aggregate's weight is N + 1
//!   while it lasts (`weight = "streams"` raises N for each response), and
//!   the connection's streams take turns (the server's round robin), so
//!   the transfer gets every other packet: (N + 1) / 2 flowshares;
//! * **own loop**: it runs a window loop of its own from slow start, as
//!   MPAT gives each flow of an aggregate, which in the lab is a new
//!   standard connection.

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

/// The streams a server's round robin alternates between while the
/// transfer lasts: the bulk response and the transfer.
const STREAMS_IN_TURN: u32 = 2;

/// How the transfer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    /// Inside the aggregate, whose weight stays N.
    Inside,
    /// Inside the aggregate, whose weight is N + 1 while it lasts.
    Raised,
    /// In a window loop of its own (a new connection).
    OwnLoop,
}

/// The ways, in the table's order.
const WAYS: [Way; 3] = [Way::Inside, Way::Raised, Way::OwnLoop];

/// One run: a controller, a transfer size, and a scenario in which the
/// transfer runs one way.
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
            for way in WAYS {
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
                let joined = aggregate.clone().with_join(bytes, JOIN_AT_S, n.round() as u32 + 1);
                let scenario = match way {
                    Way::Inside => base.with_flow(joined),
                    Way::Raised => base.with_flow(
                        aggregate.clone().with_join(bytes, JOIN_AT_S, STREAMS_IN_TURN).with_join_weight(n + 1.0),
                    ),
                    Way::OwnLoop => {
                        let separate = FlowConfig::transfer(&peer, bytes, &[BOTTLENECK])
                            .with_access(1.0, 1.0)
                            .with_role(Role::Other)
                            .with_times(JOIN_AT_S, None)
                            .with_label("transfer");
                        base.with_flow(aggregate).with_flow(separate)
                    }
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
    let mut table = Table::new(&[
        "controller",
        "size KB",
        "inside, N s",
        "inside, N+1 s",
        "own loop s",
        "N+1 vs own",
        "incomplete",
    ]);
    let mut results = serde_json::Map::new();
    let mut lines: Vec<Line> = Vec::new();
    let mut csv = String::from("controller,size_kb,inside_s,raised_s,own_loop_s,incomplete\n");
    for (index, group) in cases.chunks(WAYS.len()).enumerate() {
        let (controller, size) = (&group[0].controller, group[0].size_kb);
        let of = |k: usize| &times[(WAYS.len() * index + k) * seeds..(WAYS.len() * index + k + 1) * seeds];
        let complete = |t: &[Option<f64>]| t.iter().flatten().copied().collect::<Vec<f64>>();
        let [inside, raised, own] = [0, 1, 2].map(|k| mean_and_deviation(&complete(of(k))).0);
        let incomplete = (0..WAYS.len()).flat_map(of).filter(|t| t.is_none()).count();
        let reduction = 1.0 - raised / own;
        table.row(vec![
            controller.clone(),
            key(size),
            fmt(Some(inside), 3),
            fmt(Some(raised), 3),
            fmt(Some(own), 3),
            fmt(Some(reduction * 100.0), 1) + "%",
            incomplete.to_string(),
        ]);
        let _ = writeln!(csv, "{controller},{size},{inside},{raised},{own},{incomplete}");
        nest(
            &mut results,
            controller,
            &key(size),
            json!({"inside_s": number(Some(inside)), "raised_s": number(Some(raised)), "own_loop_s": number(Some(own)),
                "reduction_raised_vs_own_loop": number(Some(reduction)), "incomplete": incomplete}),
        );
        let named = [("inside, N", inside), ("inside, N+1", raised), ("own loop", own)];
        for (name, value) in named.map(|(way, value)| (format!("{controller} {way}"), value)) {
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
            "paper": "PA-MulTCP cuts the completion time by 25-50% against MPAT, less for larger transfers (paper 000 fig. 8); here a new connection stands in for MPAT's window loop of the flow's own",
        },
    });
    Ok(Outcome { table: chosen.notes + &table.render(), summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_transfer_joins_the_aggregate_with_or_without_a_weight_or_runs_its_own_loop() {
        let options = Options { quick: true, ..Default::default() };
        let (cases, chosen) = cases(&options).unwrap();
        assert_eq!(chosen.names(), CONTROLLERS);
        // PA-MulTCP and MulTCP x 10 and 100 KB x three ways.
        assert_eq!(cases.len(), 12);
        let (inside, raised, separate) = (&cases[0].scenario, &cases[1].scenario, &cases[2].scenario);
        assert_eq!((inside.flows[1].join_weight, raised.flows[1].join_weight), (None, Some(5.0)));
        assert_eq!((inside.flows[1].join_share, raised.flows[1].join_share), (Some(5), Some(2)));
        assert!(raised.resolve().is_ok());
        assert_eq!((cases[0].controller.as_str(), cases[0].size_kb), ("pa-multcp", 10.0));
        let aggregate = &inside.flows[1];
        assert_eq!(
            aggregate.cc.as_deref(),
            Some("pa-multcp:n=4,assign=consecutive,probe=reno,cap=paper,pacing=even,thinning=paper")
        );
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
