//! The lab's own validation (issue 6 item 6): Jain's index of equal-RTT
//! standard flows, and one standard flow against the TCP equation for the
//! loss event rate and RTT it measured.

use std::path::Path;

use serde_json::json;
use serde_json::Value;

use flowshare_controllers::equations::TcpEquation;

use super::common::bulk;
use super::Experiment;
use super::Outcome;
use crate::metrics;
use crate::options::Options;
use crate::report;
use crate::report::fmt;
use crate::report::Table;
use crate::result::RunResult;
use crate::scenario::LinkConfig;
use crate::scenario::Scenario;
use crate::scenario::LAB_START_SPREAD_S;
use crate::setup::Role;
use crate::sim::Simulation;

/// `flowshare lab validate`.
pub const EXPERIMENT: Experiment = Experiment { name: "validate", run, uses: &["duration"] };

/// Equal-RTT standard flows: Jain's index of their throughputs.
pub fn equal_rtt_jain(
    cc: &str,
    flows: usize,
    rate_mbps: f64,
    duration: f64,
    seed: u64,
) -> Result<(f64, RunResult), String> {
    let bottleneck = LinkConfig::bottleneck(rate_mbps, 40.0);
    let scenario = Scenario::dumbbell("validate-jain", duration, duration / 5.0, LAB_START_SPREAD_S, bottleneck)
        .with_flow(bulk(cc, flows, Role::Standard));
    let run = Simulation::new(scenario.resolve().map_err(|e| e.to_string())?, seed).run();
    let throughputs: Vec<f64> = run.connections.iter().map(|c| c.throughput_bps).collect();
    Ok((metrics::jain_index(&throughputs), run))
}

/// One standard flow on a path with random loss `loss`: its throughput, and
/// what the TCP equation (RFC 5348 section 3.1, t_RTO = 4R, b = 1) gives
/// for the loss event rate and mean RTT it measured.
pub fn equation_check(cc: &str, loss: f64, duration: f64, seed: u64) -> Result<(f64, f64, f64, f64), String> {
    // A buffer of four BDPs: random loss, not the queue, limits the flow.
    let bottleneck = LinkConfig::bottleneck(1000.0, 50.0).with_buffer_bdp(4.0, 50.0).with_random_loss(loss);
    let scenario = Scenario::dumbbell("validate-equation", duration, duration / 10.0, 0.0, bottleneck).with_flow(bulk(
        cc,
        1,
        Role::Standard,
    ));
    let run = Simulation::new(scenario.resolve().map_err(|e| e.to_string())?, seed).run();
    let flow = &metrics::flow_metrics(&run)[0];
    let rtt = flow.mean_rtt_ms * 1e-3;
    let p = flow.loss_event_rate;
    let equation = TcpEquation { rtt, rto: 4.0 * rtt, b: 1.0 }.packets_per_second(p) * 1500.0 * 8.0;
    Ok((flow.throughput_bps, equation, p, rtt))
}

/// Runs the validation in full form.
pub fn run(options: &Options, out: &Path) -> Result<Outcome, String> {
    let quick = options.quick;
    let duration = options.duration_s.unwrap_or(if quick { 60.0 } else { 300.0 });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_equal_reno_flows_share_a_small_link_and_fill_it() {
        let (jain, run) = equal_rtt_jain("reno", 2, 2.0, 30.0, 1).unwrap();
        assert!(jain > 0.9, "Jain index {jain}");
        assert!(metrics::utilization(&run) > 0.9);
    }
}
