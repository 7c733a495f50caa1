//! The printed forms: one progress line per run and the runner-style table
//! at the end.

use std::fmt::Write;

use crate::run::CaseResult;
use crate::run::Matrix;
use crate::run::Outcome;
use crate::run::RunRecord;

/// The end of a progress line: what one run gave.
pub fn run_line(record: &RunRecord) -> String {
    let mut line = match record.outcome {
        Outcome::Succeeded => "✓".to_string(),
        Outcome::Failed => "✕".to_string(),
        Outcome::Unsupported => "?".to_string(),
    };
    let _ = write!(line, " {:.1} s", record.seconds);
    if let Some(goodput) = record.goodput_kbps {
        let _ = write!(line, "  {goodput:.0} kbit/s");
    }
    if let Some(shares) = &record.shares {
        let _ = write!(line, " (bottleneck: QUIC {:.0}, iperf {:.0} kbit/s)", shares.quic_kbps, shares.iperf_kbps);
    }
    if let Some(health) = &record.sim_health {
        if !health.trusted {
            let _ = write!(
                line,
                "  [sim lagged: max {:.0} ms, {} late ticks, {} socket drops]",
                health.max_lag_ms, health.late_ticks, health.socket_drops
            );
        }
    }
    if let Some(reason) = &record.reason {
        let _ = write!(line, "  {reason}");
    }
    line
}

fn cell_text(result: &CaseResult) -> String {
    match result.outcome {
        Outcome::Succeeded => match (&result.goodput_kbps, &result.crosstraffic) {
            (Some(g), _) => format!("{:.0}±{:.0}", g.mean, g.stddev),
            _ => "✓".to_string(),
        },
        Outcome::Failed => "✕".to_string(),
        Outcome::Unsupported => "?".to_string(),
    }
}

fn pad(text: &str, width: usize) -> String {
    let n = text.chars().count();
    if n >= width {
        text.to_string()
    } else {
        format!("{text}{}", " ".repeat(width - n))
    }
}

/// Rows (server, controller, client) by columns (test cases), failures with
/// their reasons, crosstraffic per controller and the simulator's health.
pub fn table(matrix: &Matrix) -> String {
    let mut out = String::new();
    let mut rows: Vec<(String, String, String)> = Vec::new();
    for r in &matrix.results {
        let key = (r.server.clone(), r.controller.clone(), r.client.clone());
        if !rows.contains(&key) {
            rows.push(key);
        }
    }
    let columns: Vec<(String, String)> = matrix
        .testcases
        .iter()
        .map(|name| {
            let abbreviation = matrix
                .results
                .iter()
                .find(|r| &r.testcase == name)
                .map_or(name.clone(), |r| format!("{} ({})", name, r.abbreviation));
            (name.clone(), abbreviation)
        })
        .collect();
    let label = |row: &(String, String, String)| format!("{}({}) x {}", row.0, row.1, row.2);
    let first = rows.iter().map(|r| label(r).chars().count()).max().unwrap_or(10).max(27) + 2;
    let mut widths = Vec::new();
    for (name, header) in &columns {
        let cells = rows.iter().filter_map(|row| {
            matrix
                .results
                .iter()
                .find(|r| &r.testcase == name && r.server == row.0 && r.controller == row.1 && r.client == row.2)
                .map(|r| cell_text(r).chars().count())
        });
        widths.push(cells.max().unwrap_or(1).max(header.chars().count()) + 2);
    }
    let _ = writeln!(
        out,
        "\nflowshare matrix: {} bottleneck, {} runs, wall time {:.0} s; ✓ passed, ✕ failed, ? unsupported, \
         measurements in kbit/s (mean±sd)",
        matrix.bandwidth,
        matrix.results.iter().map(|r| r.runs.len()).sum::<usize>(),
        matrix.wall_seconds
    );
    let mut header = pad("server(controller) x client", first);
    for ((_, title), width) in columns.iter().zip(&widths) {
        header += &pad(title, *width);
    }
    let _ = writeln!(out, "{}", header.trim_end());
    for row in &rows {
        let mut line = pad(&label(row), first);
        for ((name, _), width) in columns.iter().zip(&widths) {
            let text = matrix
                .results
                .iter()
                .find(|r| &r.testcase == name && r.server == row.0 && r.controller == row.1 && r.client == row.2)
                .map_or("-".to_string(), cell_text);
            line += &pad(&text, *width);
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }

    let failures: Vec<&CaseResult> = matrix.results.iter().filter(|r| r.outcome != Outcome::Succeeded).collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "\nnot passed:");
        for r in failures {
            let _ = writeln!(
                out,
                "  {}({}) x {} {}: {} — {}",
                r.server,
                r.controller,
                r.client,
                r.testcase,
                if r.outcome == Outcome::Failed { "failed" } else { "unsupported" },
                r.reason.as_deref().unwrap_or("?")
            );
        }
    }

    let cross: Vec<&CaseResult> = matrix.results.iter().filter(|r| r.crosstraffic.is_some()).collect();
    if !cross.is_empty() {
        let _ = writeln!(
            out,
            "\ncrosstraffic against iperf3 TCP {} (bottleneck throughput while the QUIC transfer ran, kbit/s, mean±sd):",
            matrix.iperf_congestion
        );
        let _ = writeln!(
            out,
            "  {}{}{}{}{}ratio/weight",
            pad("server(controller) x client", first),
            pad("QUIC", 14),
            pad("iperf", 14),
            pad("QUIC/iperf", 14),
            pad("weight", 8)
        );
        for r in cross {
            if let Some(c) = &r.crosstraffic {
                let _ = writeln!(
                    out,
                    "  {}{}{}{}{}{:.2}",
                    pad(&format!("{}({}) x {}", r.server, r.controller, r.client), first),
                    pad(&format!("{:.0}±{:.0}", c.quic_kbps.mean, c.quic_kbps.stddev), 14),
                    pad(&format!("{:.0}±{:.0}", c.iperf_kbps.mean, c.iperf_kbps.stddev), 14),
                    pad(&format!("{:.2}±{:.2}", c.ratio.mean, c.ratio.stddev), 14),
                    pad(&format!("{}", c.weight), 8),
                    c.ratio_over_weight
                );
            }
        }
    }

    let healths: Vec<&crate::sim::Health> =
        matrix.results.iter().flat_map(|r| r.runs.iter()).filter_map(|run| run.sim_health.as_ref()).collect();
    if !healths.is_empty() {
        let trusted = healths.iter().filter(|h| h.trusted).count();
        let max_lag = healths.iter().map(|h| h.max_lag_ms).fold(0.0, f64::max);
        let drops: u64 = healths.iter().map(|h| h.socket_drops).sum();
        let late: u64 = healths.iter().map(|h| h.late_ticks).sum();
        let ticks: u64 = healths.iter().map(|h| h.ticks).sum();
        let _ = writeln!(
            out,
            "\nsimulator real-time health: {trusted} of {} runs trusted (no socket drop, lag <= 50 ms, <= 1 % late \
             ticks); max lag {max_lag:.1} ms, {late} of {ticks} ticks > 5 ms late, {drops} raw-socket drops; load \
             {:.2} before, {:.2} after",
            healths.len(),
            matrix.machine.load_before[0],
            matrix.machine.load_after[0]
        );
    }
    out
}
