//! Paper 004 section III-A: MulTFRC(n) against n TCP flows on a 64 Mbit/s,
//! 20 ms RED bottleneck (normalised throughput, ideal 1), and MulTFRC(n),
//! n in 0.1..2, against one TCP flow on 8 Mbit/s RED (throughput ratio,
//! ideal n). RED has ns-3's automatic parameters and a limit of two
//! bandwidth-delay products (the paper takes TFRC's RED settings, which the
//! extraction does not give); access delays add 3 ms each way (the paper's
//! 2 ms sender side and 1 ms receiver side).

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
use super::Experiment;
use super::Outcome;
use crate::metrics;
use crate::metrics::mean_and_deviation;
use crate::options::Options;
use crate::options::Weighted;
use crate::report;
use crate::report::fmt;
use crate::report::number;
use crate::report::Line;
use crate::report::Table;
use crate::scenario::LinkConfig;
use crate::scenario::Scenario;
use crate::setup::Role;
use crate::sweep;

/// `flowshare lab multfrc-friendliness`.
pub const EXPERIMENT: Experiment =
    Experiment { name: "multfrc-friendliness", run, uses: &["seeds", "controllers", "n", "peers", "pacing"] };

/// One run: `vs-n-tcp` or `fractional`, the weight, the spec at it.
struct Case {
    case: &'static str,
    n: f64,
    spec: String,
    scenario: Scenario,
}

/// The cases for `controller` against `peer`.
fn cases(controller: &Weighted, peer: &str, options: &Options) -> Result<Vec<Case>, String> {
    let quick = options.quick;
    let many: Vec<f64> =
        options.n.clone().unwrap_or(if quick { vec![1.0, 4.0] } else { vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0] });
    let fractional: Vec<f64> = if quick { vec![0.5, 1.5] } else { (1..=20).map(|i| i as f64 / 10.0).collect() };
    let fractional = if controller.takes_fractional_weight() { fractional } else { Vec::new() };
    let red = |rate: f64| LinkConfig::bottleneck(rate, 40.0).with_queue("red").with_buffer_bdp(2.0, 46.0);
    // Paper 004: access links of 2 ms (sender side) and 1 ms (receiver side).
    let flow = |cc: &str, count: usize, role: Role| bulk(cc, count, role).with_access(3.0, 1.0);
    let mut cases = Vec::new();
    for (case, weights, rate) in [("vs-n-tcp", many, 64.0), ("fractional", fractional, 8.0)] {
        let (duration, warmup) = match (case, quick) {
            ("vs-n-tcp", true) => (30.0, 10.0),
            ("vs-n-tcp", false) => (100.0, 20.0),
            (_, true) => (40.0, 10.0),
            (_, false) => (200.0, 15.0),
        };
        for n in weights {
            let spec = spec_at(controller, n)?;
            let peers = if case == "vs-n-tcp" { (n.round() as usize).max(1) } else { 1 };
            let scenario = Scenario::dumbbell(&format!("multfrc-{case}"), duration, warmup, 1.0, red(rate))
                .with_flow(flow(&spec, 1, Role::Weighted))
                .with_flow(flow(peer, peers, Role::Standard));
            cases.push(Case { case, n, spec, scenario: paced(scenario, options) });
        }
    }
    Ok(cases)
}

/// Runs the experiment.
pub fn run(options: &Options, out: &Path) -> Result<Outcome, String> {
    let quick = options.quick;
    let name_given = options.first_controller().unwrap_or_else(|| "multfrc".into());
    let peer = options.first_peer().unwrap_or_else(|| "reno".into());
    let (weighted, _) = match options.controllers {
        Some(_) => Weighted::parse_all(std::slice::from_ref(&name_given)),
        None => Weighted::papers(std::slice::from_ref(&name_given)),
    };
    let Some(controller) = weighted.first() else {
        let note = format!("note: skipped: {name_given} is no weighted controller of the spec language");
        let summary = json!({"scenario": "multfrc-friendliness", "seed": options.seed, "flows": [],
            "metrics": {"fairness_index": Value::Null, "cov": Value::Null, "utilization": Value::Null, "skipped_controllers": [name_given]}});
        return Ok(Outcome { table: note + "\n", summary });
    };
    let seeds = options.seeds.unwrap_or(if quick { 1 } else { 3 });
    let cases = cases(controller, &peer, options)?;
    let jobs = jobs(cases.iter().map(|case| &case.scenario), options, seeds)?;
    if let Some(first) = cases.first() {
        report::write_file(out, "scenario-example.toml", &first.scenario.to_toml())?;
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
    for (index, Case { case, n, scenario, .. }) in cases.iter().enumerate() {
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
        "scenario": name("multfrc-friendliness", quick),
        "seed": options.seed,
        "flows": values.iter().zip(&cases).enumerate().map(|(id, (v, case))| json!({"id": id, "cc": case.spec, "weight": v["n"], "throughput_bps": v["multfrc_bps"]})).collect::<Vec<_>>(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multfrc_meets_n_tcp_flows_and_one_flow_below_n_2_on_red() {
        let options = Options { quick: true, ..Default::default() };
        let (weighted, _) = Weighted::parse_all(&["multfrc".to_string()]);
        let cases = cases(&weighted[0], "reno", &options).unwrap();
        let summary: Vec<(&str, f64, &str, usize, f64)> = cases
            .iter()
            .map(|c| (c.case, c.n, c.spec.as_str(), c.scenario.flows[1].count, c.scenario.links[0].rate_mbps))
            .collect();
        assert_eq!(
            summary,
            [
                ("vs-n-tcp", 1.0, "multfrc:n=1", 1, 64.0),
                ("vs-n-tcp", 4.0, "multfrc:n=4", 4, 64.0),
                ("fractional", 0.5, "multfrc:n=0.5", 1, 8.0),
                ("fractional", 1.5, "multfrc:n=1.5", 1, 8.0),
            ]
        );
        let link = &cases[0].scenario.links[0];
        assert_eq!((link.queue.as_str(), link.buffer_bdp, link.bdp_rtt_ms), ("red", Some(2.0), Some(46.0)));
        assert_eq!(cases[0].scenario.flows[0].access_delay_ms, 3.0);
    }
}
