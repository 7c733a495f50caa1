//! Paper 000 section 5.1: a weighted connection of weight N against
//! m = 200 - N standard flows on a 50 ms drop-tail dumbbell with a BDP
//! buffer, for every weighted controller and both peers; fairness index and
//! CoV per controller, peer, bandwidth and N.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;

use flowshare_controllers::Spec;

use super::common::bulk;
use super::common::jobs;
use super::common::key;
use super::common::name;
use super::common::nest;
use super::common::note_skipped;
use super::common::paced;
use super::common::spec_at;
use super::common::Controllers;
use super::Experiment;
use super::Outcome;
use crate::metrics;
use crate::metrics::mean_and_deviation;
use crate::options::standard_algorithms;
use crate::options::weighted_algorithms;
use crate::options::Options;
use crate::report;
use crate::report::fmt;
use crate::report::number;
use crate::report::Line;
use crate::report::Table;
use crate::result::RunResult;
use crate::scenario::LinkConfig;
use crate::scenario::Scenario;
use crate::scenario::LAB_START_SPREAD_S;
use crate::setup::Role;
use crate::sweep;

/// `flowshare lab fairness`.
pub const EXPERIMENT: Experiment = Experiment {
    name: "fairness",
    run,
    uses: &["seeds", "controllers", "n", "peers", "bandwidths", "duration", "warmup", "pacing"],
};

/// One point of the grid: a controller at weight N against m peers.
struct Point {
    /// The controller as named on the command line.
    controller: String,
    /// Its canonical spec at weight `n`.
    spec: String,
    peer: String,
    bandwidth: f64,
    n: f64,
    m: usize,
}

/// The points to run and what the summary says about how.
struct Grid {
    points: Vec<Point>,
    /// The controllers, and the notes on what was skipped.
    chosen: Controllers,
    peers: Vec<String>,
    seeds: usize,
    duration: f64,
    warmup: f64,
    total_flows: usize,
}

fn grid(options: &Options) -> Result<Grid, String> {
    let quick = options.quick;
    let mut chosen = Controllers::choose(options, weighted_algorithms);
    let requested_peers = options.peers.clone().unwrap_or_else(standard_algorithms);
    let (peers, skipped_peers): (Vec<String>, Vec<String>) =
        requested_peers.into_iter().partition(|peer| peer.parse::<Spec>().is_ok());
    note_skipped(&mut chosen.notes, &skipped_peers, "peers", "not known to the spec language");
    if chosen.weighted.is_empty() || peers.is_empty() {
        let notes = &chosen.notes;
        let notes = if notes.is_empty() { String::new() } else { format!(" ({})", notes.trim()) };
        return Err(format!("no controller or peer to run{notes}"));
    }
    let bandwidths = options.bandwidths_mbps.clone().unwrap_or(if quick { vec![20.0] } else { vec![200.0, 400.0] });
    let integer_n: Vec<f64> = if quick { vec![2.0, 4.0, 8.0] } else { (2..=30).map(f64::from).collect() };
    let fractional_n: Vec<f64> = if quick { vec![0.5] } else { vec![0.25, 0.5, 0.75] };
    let total_flows = if quick { 20 } else { 200 };
    let mut points = Vec::new();
    for controller in &chosen.weighted {
        let fractional = controller.takes_fractional_weight();
        let n_values: Vec<f64> = match &options.n {
            Some(n) => n.iter().copied().filter(|&n| n >= 1.0 || fractional).collect(),
            None => fractional_n.iter().filter(|_| fractional).chain(&integer_n).copied().collect(),
        };
        for peer in &peers {
            for &bandwidth in &bandwidths {
                for &n in &n_values {
                    let m = total_flows - (n.ceil() as usize).clamp(1, total_flows - 1);
                    let (controller_name, spec) = (controller.name.clone(), spec_at(controller, n)?);
                    points.push(Point { controller: controller_name, spec, peer: peer.clone(), bandwidth, n, m });
                }
            }
        }
    }
    Ok(Grid {
        points,
        chosen,
        peers,
        seeds: options.seeds.unwrap_or(if quick { 1 } else { 20 }),
        duration: options.duration_s.unwrap_or(if quick { 40.0 } else { 400.0 }),
        warmup: options.warmup_s.unwrap_or(if quick { 10.0 } else { 100.0 }),
        total_flows,
    })
}

fn scenario(point: &Point, grid: &Grid, options: &Options) -> Scenario {
    // The full form's 200 flows start within 5 s.
    let spread = if options.quick { LAB_START_SPREAD_S } else { 5.0 };
    let bottleneck = LinkConfig::bottleneck(point.bandwidth, 100.0);
    let scenario = Scenario::dumbbell(&name("fairness", options.quick), grid.duration, grid.warmup, spread, bottleneck)
        .with_flow(bulk(&point.spec, 1, Role::Weighted))
        .with_flow(bulk(&point.peer, point.m, Role::Standard));
    paced(scenario, options)
}

/// What one fairness run is reduced to.
#[derive(Clone, Debug)]
struct Sample {
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

fn sample(run: &RunResult, n: f64, keep_series: bool) -> Sample {
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
    Sample {
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

/// Runs the experiment.
pub fn run(options: &Options, out: &Path) -> Result<Outcome, String> {
    let grid = grid(options)?;
    let (points, seeds) = (&grid.points, grid.seeds);
    let scenarios: Vec<Scenario> = points.iter().map(|point| scenario(point, &grid, options)).collect();
    let jobs = jobs(&scenarios, options, seeds)?;
    if let Some(first) = scenarios.first() {
        report::write_file(out, "scenario-example.toml", &first.to_toml())?;
    }
    eprint!("{}", grid.chosen.notes);
    let n_of: Vec<f64> = points.iter().flat_map(|p| std::iter::repeat_n(p.n, seeds)).collect();
    let samples =
        sweep::run("fairness", jobs, options.threads, |index, run| sample(&run, n_of[index], index % seeds == 0));

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
        let collect = |f: &dyn Fn(&Sample) -> Option<f64>| -> Vec<f64> { chunk.iter().filter_map(f).collect() };
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
            "cc": point.spec,
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
        "scenario": name("fairness", options.quick),
        "seed": options.seed,
        "flows": flows,
        "metrics": {
            "fairness_index": fi_map,
            "cov": cov_map,
            "utilization": util_map,
            "points": point_values,
            "controllers": grid.chosen.names(),
            "skipped_controllers": grid.chosen.skipped,
            "peers": grid.peers,
            "seeds": seeds,
            "duration_s": grid.duration,
            "warmup_s": grid.warmup,
            "total_flows": grid.total_flows,
        },
    });
    Ok(Outcome { table: grid.chosen.notes + &table.render(), summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quick_grid_is_every_weighted_controller_against_both_peers_in_20_flows() {
        let options = Options { quick: true, ..Default::default() };
        let grid = grid(&options).unwrap();
        // 4 weighted controllers x 2 peers x N in {0.5, 2, 4, 8}.
        assert_eq!(grid.points.len(), 32);
        assert_eq!(grid.chosen.names(), weighted_algorithms());
        for point in &grid.points {
            assert_eq!(point.m + (point.n.ceil() as usize).max(1), 20, "{}", point.spec);
        }
        let first = &grid.points[0];
        assert_eq!(
            (first.spec.as_str(), first.peer.as_str(), first.m),
            (
                "multcp:n=0.5,decrease=paper,pacing=even,thinning=paper,ack_delay=paper,whole_packets=paper,loops=one",
                "reno",
                19
            )
        );
        let scenario = scenario(first, &grid, &options);
        assert_eq!((scenario.duration_s, scenario.warmup_s, scenario.start_spread_s), (40.0, 10.0, 2.0));
        let link = &scenario.links[0];
        assert_eq!((link.rate_mbps, link.delay_ms, link.buffer_bdp), (20.0, 50.0, Some(1.0)));
        let counts: Vec<usize> = scenario.flows.iter().map(|flow| flow.count).collect();
        assert_eq!(counts, [1, 19]);
    }

    #[test]
    fn controllers_that_take_no_weight_are_skipped_with_a_note() {
        let controllers = Some(vec!["pa-multcp:probe=cubic".into(), "ctcp".into()]);
        let options = Options { quick: true, controllers, n: Some(vec![3.0]), ..Default::default() };
        let grid = grid(&options).unwrap();
        assert_eq!(grid.chosen.skipped, ["ctcp"]);
        assert!(grid.chosen.notes.contains("skipped controllers ctcp"), "{}", grid.chosen.notes);
        let specs: Vec<&str> = grid.points.iter().map(|point| point.spec.as_str()).collect();
        assert_eq!(specs, ["pa-multcp:n=3"; 2]);
        assert_eq!(grid.points[0].controller, "pa-multcp:probe=cubic");
    }

    #[test]
    fn the_paper_expects_multcp_above_one_at_400_mbit_up_to_n_25() {
        assert_eq!(paper_fairness("multcp", "reno", 400.0, 25.0), "> 1");
        assert_eq!(paper_fairness("multcp", "reno", 400.0, 26.0), "< 1");
        assert_eq!(paper_fairness("multcp", "cubic", 400.0, 2.0), "-");
    }
}
