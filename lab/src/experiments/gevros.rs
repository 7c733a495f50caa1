//! Paper 001 table I: 8 standard + 4 MulTCP(2) flows with drop-tail and
//! RED, and 6 + 6 with RED, on a 2 Mbit/s bottleneck (the table's totals
//! add up to 1.8 Mbit/s; the paper gives no rate), 15 ms, 50-packet queues
//! (ALTQ's default).

use std::path::Path;

use serde_json::json;
use serde_json::Value;

use flowshare_controllers::registry;
use flowshare_controllers::Spec;

use super::common::bulk;
use super::common::jobs;
use super::common::name;
use super::common::paced;
use super::Experiment;
use super::Outcome;
use crate::metrics;
use crate::metrics::mean_and_deviation;
use crate::options::Options;
use crate::report;
use crate::report::fmt;
use crate::report::number;
use crate::report::Table;
use crate::scenario::LinkConfig;
use crate::scenario::Scenario;
use crate::scenario::LAB_START_SPREAD_S;
use crate::setup::Role;
use crate::sweep;

/// `flowshare lab gevros`.
pub const EXPERIMENT: Experiment = Experiment {
    name: "gevros",
    run,
    uses: &["seeds", "controllers", "n", "peers", "bandwidths", "duration", "warmup", "pacing"],
};

/// The paper's TCP and MulTCP KB/s and the gain in percent.
type Paper = Option<(f64, f64, f64)>;

/// The mixes of table I: queue, standard flows, weighted flows, the paper's
/// numbers (the last mix is not in the table).
const MIXES: [(&str, usize, usize, Paper); 4] = [
    ("droptail", 8, 4, Some((15.952, 23.959, 50.1))),
    ("red", 8, 4, Some((14.278, 27.259, 90.9))),
    ("red", 6, 6, Some((13.922, 23.039, 65.5))),
    ("droptail", 6, 6, None),
];

/// The runs: one scenario per mix.
struct Plan {
    /// The weighted spec.
    spec: String,
    n: f64,
    rate: f64,
    scenarios: Vec<Scenario>,
}

fn plan(options: &Options) -> Result<Plan, String> {
    let quick = options.quick;
    // Paper 001's MulTCP: one decrease per loss event.
    let paper = || registry::find("multcp").map_or_else(|| "multcp".into(), |algorithm| algorithm.paper_text());
    let controller = options.first_controller().unwrap_or_else(paper);
    let n = options.first_n().unwrap_or(2.0);
    let spec = controller.parse::<Spec>().and_then(|spec| spec.reweighted(n));
    let spec = spec.map_err(|e| e.to_string())?.to_string();
    let peer = options.first_peer().unwrap_or_else(|| "reno".into());
    let rate = options.bandwidth_mbps().unwrap_or(2.0);
    let duration = options.duration_s.unwrap_or(if quick { 40.0 } else { 120.0 });
    let warmup = options.warmup_s.unwrap_or(10.0);
    let scenarios = MIXES
        .iter()
        .map(|(queue, standard, weighted, _)| {
            let bottleneck = LinkConfig::bottleneck(rate, 30.0).with_buffer_packets(50).with_queue(queue);
            let scenario = Scenario::dumbbell("gevros", duration, warmup, LAB_START_SPREAD_S, bottleneck)
                .with_flow(bulk(&peer, *standard, Role::Standard))
                .with_flow(bulk(&spec, *weighted, Role::Weighted));
            paced(scenario, options)
        })
        .collect();
    Ok(Plan { spec, n, rate, scenarios })
}

/// Runs the experiment.
pub fn run(options: &Options, out: &Path) -> Result<Outcome, String> {
    let quick = options.quick;
    let Plan { spec, n, rate, scenarios } = plan(options)?;
    let seeds = options.seeds.unwrap_or(if quick { 1 } else { 10 });
    let jobs = jobs(&scenarios, options, seeds)?;
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
    for (index, (queue, standard, weighted, paper)) in MIXES.iter().enumerate() {
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
        "scenario": name("gevros", quick),
        "seed": options.seed,
        "flows": values.iter().enumerate().map(|(id, v)| json!({"id": id, "cc": spec, "weight": n, "throughput_bps": number(v["weighted_kbytes_per_s"].as_f64().map(|k| k * 8e3))})).collect::<Vec<_>>(),
        "metrics": {"fairness_index": fi_map, "cov": Value::Null, "utilization": Value::Null, "mixes": values, "seeds": seeds, "bandwidth_mbps": rate},
    });
    Ok(Outcome { table: table.render(), summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mixes_share_a_50_packet_queue_of_either_discipline() {
        let plan = plan(&Options { quick: true, ..Default::default() }).unwrap();
        assert_eq!(
            (plan.spec.as_str(), plan.n, plan.rate),
            (
                "multcp:n=2,decrease=paper,pacing=even,thinning=paper,ack_delay=paper,whole_packets=paper,loops=one",
                2.0,
                2.0
            )
        );
        for (scenario, (queue, standard, weighted, _)) in plan.scenarios.iter().zip(MIXES) {
            let link = &scenario.links[0];
            assert_eq!((link.queue.as_str(), link.buffer_packets, link.buffer_bdp), (queue, Some(50), None));
            assert_eq!((scenario.flows[0].count, scenario.flows[1].count), (standard, weighted));
        }
    }

    #[test]
    fn a_controller_without_weight_is_refused() {
        let options = Options { controllers: Some(vec!["ctcp".into()]), ..Default::default() };
        let error = plan(&options).err().unwrap();
        assert!(error.contains("ctcp: n cannot be changed"), "{error}");
    }
}
