//! How a PA-MulTCP connection's share goes with the loss its probe meets
//! (`flowshare testbed loss-law DIR`).
//!
//! PA-MulTCP's probe is one standard flow inside the connection, and the
//! adjusting loop holds `N - K` times what the probes get, so the whole
//! connection's share per flowshare follows the probe's: if the probe loses
//! a smaller part of its packets than its peers do, it grows a larger
//! window than theirs and the connection takes more than N flowshares. Per
//! run this takes the probe's packet loss (as its sender declared it, from
//! the qlog) over the standard flows' mean packet loss (as the bottleneck
//! counted it, `summary.json`), `r`, and the weighted connection's share per
//! flowshare; per cell the least-squares line through `(ln r, ln share)`,
//! that is the law `share = a r^b`, and its correlation. A standard flow at
//! its peers' loss would have `r = 1`; where `b` is near -1/2 (the square
//! root law of a window that halves per loss) the probe's loss is what sets
//! the cell's share, and `a` is the share the connection would get at
//! `r = 1`.
//!
//! The adjusting loop's packets over `N - K` probes' are shown beside it,
//! as `flowshare testbed windows` shows them per run: near one, the share
//! is the probe's. In a run of N separate connections (`--separate`) the
//! first one's probe stands for all of them, and the share is their mean.

use std::collections::BTreeMap;
use std::path::Path;

use flowshare_lab::report::Table;
use flowshare_lab::scorecard::card::Estimate;

use crate::equation::compare;
use crate::equation::in_grid_order;
use crate::equation::show;
use crate::equation::summaries;
use crate::equation::DEFAULT_T_RTO_RTTS;
use crate::windows::Run;

/// One run's probe and share.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeRun {
    /// The run's directory, relative to the directory reported on.
    pub run: String,
    /// The weighted connection's flowshares.
    pub weight: f64,
    /// The probes' packets lost over sent, after the warm-up.
    pub probe_loss: f64,
    /// The standard flows' mean packet loss rate.
    pub peers_loss: f64,
    /// The weighted connection's throughput per flowshare over the mean
    /// standard flow's (bytes, as the scorecard counts it).
    pub share: f64,
    /// The adjusting loop's packets over `N - K` probes' (`None` at
    /// `N <= K`).
    pub adjusting: Option<f64>,
    /// Whether the run's emulation and load gate were trusted.
    pub trusted: bool,
}

impl ProbeRun {
    /// The probe's loss over its peers', `r`.
    pub fn loss_ratio(&self) -> f64 {
        self.probe_loss / self.peers_loss
    }
}

/// `share = a r^b`, fitted by least squares in logarithms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PowerLaw {
    /// The share at `r = 1`.
    pub a: f64,
    /// The exponent: -1/2 for a window that halves per loss.
    pub b: f64,
    /// The correlation of `ln r` and `ln share`.
    pub correlation: f64,
}

impl PowerLaw {
    /// The fit through `(r, share)` points; `None` with fewer than three
    /// points, a value that is not positive, or every `r` or every share
    /// the same (no line to fit, or no correlation).
    pub fn fit(points: &[(f64, f64)]) -> Option<PowerLaw> {
        if points.len() < 3 || points.iter().any(|&(r, share)| !(r > 0.0 && share > 0.0)) {
            return None;
        }
        let logs: Vec<(f64, f64)> = points.iter().map(|&(r, share)| (r.ln(), share.ln())).collect();
        let count = logs.len() as f64;
        let mean_x = logs.iter().map(|p| p.0).sum::<f64>() / count;
        let mean_y = logs.iter().map(|p| p.1).sum::<f64>() / count;
        let (mut xx, mut yy, mut xy) = (0.0, 0.0, 0.0);
        for (x, y) in &logs {
            xx += (x - mean_x).powi(2);
            yy += (y - mean_y).powi(2);
            xy += (x - mean_x) * (y - mean_y);
        }
        if xx <= 0.0 || yy <= 0.0 {
            return None;
        }
        let b = xy / xx;
        Some(PowerLaw { a: (mean_y - b * mean_x).exp(), b, correlation: xy / (xx * yy).sqrt() })
    }
}

/// The run in `dir`, `name` its name in the report, with its scenario's
/// name; `None` when its weighted connection has no probe (not PA-MulTCP)
/// or the ratio has nothing to divide (no probe packet sent, peers without
/// loss).
fn probe_run(dir: &Path, name: String) -> Result<Option<(String, ProbeRun)>, String> {
    let run = Run::read_role(dir, Some("weighted"))?;
    let Some(weighted) = run.weighted() else { return Ok(None) };
    let Some(probe) = weighted.probe.as_ref().filter(|probe| probe.packets_sent > 0) else { return Ok(None) };
    // The share and the peers' loss as the equation's split counts them.
    let Some(pair) = compare(&run.summary, DEFAULT_T_RTO_RTTS)? else { return Ok(None) };
    if pair.standard_packet_loss_rate <= 0.0 {
        return Ok(None);
    }
    let scenario = run.summary["scenario"].as_str().unwrap_or("(unnamed)").to_string();
    Ok(Some((
        scenario,
        ProbeRun {
            run: name,
            weight: pair.weight,
            probe_loss: probe.packets_lost as f64 / probe.packets_sent as f64,
            peers_loss: pair.standard_packet_loss_rate,
            share: pair.share_per_flowshare,
            adjusting: weighted.adjusting_packets_of_target(),
            trusted: crate::results::trusted(&run.summary),
        },
    )))
}

/// The report of every run under `dir` (a run's directory or a campaign's
/// `--out`; runs need their qlogs).
pub fn report(dir: &Path) -> Result<String, String> {
    let paths = summaries(dir)?;
    if paths.is_empty() {
        return Err(format!("no summary.json under {}", dir.display()));
    }
    let mut cells: BTreeMap<String, Vec<ProbeRun>> = BTreeMap::new();
    for path in &paths {
        let run_dir = path.parent().unwrap_or(dir);
        let name = run_dir.strip_prefix(dir).unwrap_or(run_dir).display().to_string();
        let name = if name.is_empty() { ".".to_string() } else { name };
        if let Some((scenario, run)) = probe_run(run_dir, name)? {
            cells.entry(scenario).or_default().push(run);
        }
    }
    if cells.is_empty() {
        return Err(format!(
            "no run under {} has a PA-MulTCP connection whose probe sent packets beside standard flows with loss",
            dir.display()
        ));
    }
    let order = in_grid_order(&cells, |runs| runs.first().map_or(f64::NAN, |run| run.weight));
    let mut out = String::from(
        "Per cell, PA-MulTCP's probe's packet loss (as its sender declared it) over the standard flows' mean \
         (as the bottleneck counted it), r, and the share per flowshare; the fit share = a r^b is least squares \
         on logarithms over the cell's runs (three or more), corr the correlation of ln r and ln share.\n\n",
    );
    let mut table = Table::new(&[
        "cell",
        "runs",
        "r mean",
        "r min-max",
        "share per flowshare",
        "adjusting over N - K probes",
        "a",
        "b",
        "corr",
    ]);
    for (_, name, runs) in &order {
        let ratios: Vec<f64> = runs.iter().map(ProbeRun::loss_ratio).collect();
        let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let high = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let adjusting: Vec<f64> = runs.iter().filter_map(|run| run.adjusting).collect();
        let untrusted = runs.iter().filter(|run| !run.trusted).count();
        let points: Vec<(f64, f64)> = runs.iter().map(|run| (run.loss_ratio(), run.share)).collect();
        let law = PowerLaw::fit(&points);
        let or_dash = |value: Option<f64>, digits: usize| value.map_or("-".to_string(), |v| format!("{v:.digits$}"));
        table.row(vec![
            name.to_string(),
            if untrusted > 0 { format!("{} ({untrusted} untrusted)", runs.len()) } else { runs.len().to_string() },
            show(Estimate::of(&ratios), 3),
            format!("{low:.2}-{high:.2}"),
            show(Estimate::of(&runs.iter().map(|run| run.share).collect::<Vec<_>>()), 3),
            if adjusting.is_empty() { "-".to_string() } else { show(Estimate::of(&adjusting), 3) },
            or_dash(law.map(|law| law.a), 3),
            or_dash(law.map(|law| law.b), 2),
            or_dash(law.map(|law| law.correlation), 2),
        ]);
    }
    out.push_str(&table.render());
    out.push_str("\nRun by run:\n\n");
    let mut runs_table = Table::new(&["run", "N", "probe lost %", "peers' lost %", "r", "share", "adjusting"]);
    for (_, _, runs) in &order {
        for run in runs.iter() {
            runs_table.row(vec![
                if run.trusted { run.run.clone() } else { format!("{} (untrusted)", run.run) },
                format!("{}", run.weight),
                format!("{:.3}", 100.0 * run.probe_loss),
                format!("{:.3}", 100.0 * run.peers_loss),
                format!("{:.3}", run.loss_ratio()),
                format!("{:.3}", run.share),
                run.adjusting.map_or("-".to_string(), |v| format!("{v:.3}")),
            ]);
        }
    }
    out.push_str(&runs_table.render());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_square_root_law_is_found_again() {
        // share = 1.1 r^-0.5 exactly: the fit gives a, b and a correlation
        // of -1.
        let points: Vec<(f64, f64)> = [0.8, 1.0, 2.0, 3.5].iter().map(|&r: &f64| (r, 1.1 * r.powf(-0.5))).collect();
        let law = PowerLaw::fit(&points).expect("a law");
        assert!((law.a - 1.1).abs() < 1e-9 && (law.b + 0.5).abs() < 1e-9, "{law:?}");
        assert!((law.correlation + 1.0).abs() < 1e-9, "{law:?}");
        // Scatter lowers the correlation, not the sign.
        let scattered = [(1.0, 1.0), (2.0, 0.8), (3.0, 0.75), (4.0, 0.5)];
        let law = PowerLaw::fit(&scattered).expect("a law");
        assert!(law.b < 0.0 && law.correlation > -1.0 && law.correlation < -0.9, "{law:?}");
    }

    #[test]
    fn no_law_from_too_few_or_degenerate_points() {
        assert_eq!(PowerLaw::fit(&[(1.0, 1.0), (2.0, 0.7)]), None);
        assert_eq!(PowerLaw::fit(&[(1.0, 1.0), (1.0, 0.7), (1.0, 0.8)]), None);
        assert_eq!(PowerLaw::fit(&[(1.0, 1.0), (2.0, 1.0), (3.0, 1.0)]), None);
        assert_eq!(PowerLaw::fit(&[(0.0, 1.0), (2.0, 0.7), (3.0, 0.6)]), None);
    }

    /// A campaign directory of three runs of one cell: PA-MulTCP(4) beside
    /// two Linux TCP flows at 2 Mbit/s that lose 1 % of their packets; per
    /// run the probe loses `probe_lost` of its 100 packets and the
    /// connection takes `share` per flowshare. The connection sends 400
    /// packets after the warm-up, 100 of them the probe's.
    fn campaign(name: &str, runs: &[(u64, f64)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("flowshare-loss-law-{name}-{}", std::process::id()));
        for (seed, &(probe_lost, share)) in runs.iter().enumerate() {
            let run = dir.join(format!("runs/cell/seed-{seed}"));
            std::fs::create_dir_all(run.join("qlog/flow-0-server")).unwrap();
            let tcp = |id: u32| {
                format!(
                    r#"{{"id":{id},"transport":"tcp","role":"standard","weight":1.0,"throughput_bps":2e6,"packet_loss_rate":0.01,"loss_event_rate":0.005,"mean_rtt_ms":40.0}}"#
                )
            };
            let weighted = format!(
                r#"{{"id":0,"transport":"quic","role":"weighted","cc":"pa-multcp:n=4","weight":4.0,"throughput_bps":{},"packet_loss_rate":0.005,"loss_event_rate":0.003,"mean_rtt_ms":40.0}}"#,
                4.0 * share * 2e6
            );
            let summary = format!(r#"{{"scenario":"cell","flows":[{weighted},{},{}]}}"#, tcp(1), tcp(2));
            std::fs::write(run.join("summary.json"), summary).unwrap();
            let mut records = vec![
                r#"{"time":0.0,"name":"quic:recovery_metrics_updated","data":{"congestion_window":10000}}"#.to_string(),
                r#"{"time":0.0,"name":"flowshare:controller_updated","data":{"weight":4.0,"probe_window":2500,"probe_packets_sent":0,"probe_packets_lost":0}}"#.to_string(),
            ];
            records.extend((1..=400).map(|t| format!(r#"{{"time":{t}.0,"name":"quic:packet_sent","data":{{}}}}"#)));
            records.push(format!(
                r#"{{"time":401.0,"name":"flowshare:controller_updated","data":{{"probe_packets_sent":100,"probe_packets_lost":{probe_lost}}}}}"#
            ));
            let qlog: String = records.iter().map(|record| format!("\u{1e}{record}\n")).collect();
            std::fs::write(run.join("qlog/flow-0-server/server.sqlog"), qlog).unwrap();
        }
        dir
    }

    #[test]
    fn a_campaign_s_cell_gets_its_law_from_the_probe_s_loss() {
        // r = 2, 1 and 4 (the probe loses 2, 1 and 4 % of its packets, the
        // peers 1 %), shares 1.2 r^-0.5.
        let runs = [(2, 1.2 / 2f64.sqrt()), (1, 1.2), (4, 0.6)];
        let dir = campaign("cell", &runs);
        let report = report(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        let report = report.unwrap();
        let row = report
            .lines()
            .find(|line| line.trim_start().starts_with("cell ") && line.contains("±"))
            .expect("the cell's row");
        let cells: Vec<&str> = row.split_whitespace().collect();
        // cell, runs, r mean ± ci, min-max, share ± ci, adjusting ± ci, a, b, corr
        assert_eq!((cells[1], cells[2], cells[5]), ("3", "2.333", "1.00-4.00"), "{report}");
        assert_eq!(&cells[cells.len() - 3..], ["1.200", "-0.50", "-1.00"], "{report}");
        assert_eq!(cells[9], "1.000", "the adjusting loop's 300 packets are three probes': {report}");
        assert!(report.contains("runs/cell/seed-2"), "{report}");
    }

    #[test]
    fn a_campaign_without_pa_multcp_is_one_error() {
        let dir = std::env::temp_dir().join(format!("flowshare-loss-law-none-{}", std::process::id()));
        let run = dir.join("runs/cell/seed-1");
        std::fs::create_dir_all(run.join("qlog/flow-0-server")).unwrap();
        std::fs::write(
            run.join("summary.json"),
            r#"{"scenario":"cell","flows":[{"id":0,"transport":"quic","role":"weighted","weight":2.0,"throughput_bps":1e6}]}"#,
        )
        .unwrap();
        let missing = report(&dir.join("nothing"));
        let none = report(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(missing.unwrap_err().contains("cannot read"));
        assert!(none.unwrap_err().contains("no run under"));
    }
}
