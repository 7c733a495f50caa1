//! Outputs: the table on stdout, `summary.json`, CSV series and PNG plots.
//!
//! `summary.json` always has the keys `scenario`, `seed`, `flows` (each with
//! `id`, `cc`, `weight`, `throughput_bps`) and `metrics` (`fairness_index`,
//! `cov`, `utilization` and per-experiment fields). Keys are sorted and no
//! wall-clock value is written, so identical runs give identical files.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use flowshare_controllers::Snapshot;
use flowshare_controllers::Value as SnapshotValue;
use plotters::prelude::*;
use serde_json::json;
use serde_json::Value;

use crate::metrics;
use crate::result::RunResult;
use crate::setup::Role;

/// Fonts looked for to label plots; without any, plots have no text.
const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Registers the first font found; returns whether plots can have text.
pub(crate) fn fonts_available() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    *REGISTERED.get_or_init(|| {
        FONT_PATHS.iter().any(|path| {
            let Ok(bytes) = fs::read(path) else { return false };
            // Registered once per process and kept for its lifetime.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
        })
    })
}

/// A plain text table.
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new(header: &[&str]) -> Table {
        Table { header: header.iter().map(|h| h.to_string()).collect(), rows: Vec::new() }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table with aligned columns.
    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.len()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                if i < widths.len() {
                    widths[i] = widths[i].max(cell.len());
                }
            }
        }
        let mut out = String::new();
        let line = |out: &mut String, cells: &[String]| {
            let parts: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:>w$}")).collect();
            let _ = writeln!(out, "{}", parts.join("  ").trim_end());
        };
        line(&mut out, &self.header);
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        line(&mut out, &rule);
        for row in &self.rows {
            line(&mut out, row);
        }
        out
    }
}

/// `value` with `digits` decimals, `-` for missing values.
pub fn fmt(value: Option<f64>, digits: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{v:.digits$}"),
        _ => "-".into(),
    }
}

/// A JSON number, or null for missing and non-finite values.
pub fn number(value: Option<f64>) -> Value {
    match value {
        Some(v) if v.is_finite() => json!(v),
        _ => Value::Null,
    }
}

/// Creates `dir` and writes `name` into it.
pub fn write_file(dir: &Path, name: &str, contents: &str) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create output directory {}: {e}", dir.display()))?;
    let path = dir.join(name);
    fs::write(&path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Writes `summary.json`.
pub fn write_summary(dir: &Path, summary: &Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(summary).map_err(|e| format!("cannot encode summary.json: {e}"))?;
    write_file(dir, "summary.json", &(text + "\n"))
}

/// The summary of a single run.
pub fn run_summary(run: &RunResult, extra: Value) -> Value {
    let flows: Vec<Value> = metrics::flow_metrics(run)
        .into_iter()
        .map(|f| {
            let controller = run.connections.get(f.id).and_then(|c| c.controller.as_ref()).map(|states| {
                json!({"at_warmup": snapshot_json(&states.at_warmup), "at_end": snapshot_json(&states.at_end)})
            });
            json!({
                "controller": controller,
                "id": f.id,
                "label": f.label,
                "cc": f.cc,
                "weight": f.weight,
                "role": f.role,
                "throughput_bps": f.throughput_bps,
                "packet_loss_rate": f.packet_loss_rate,
                "loss_event_rate": f.loss_event_rate,
                "mean_rtt_ms": f.mean_rtt_ms,
                "timeouts": f.timeouts,
                "completion_times_s": f.completion_times_s,
            })
        })
        .collect();
    let throughputs: Vec<f64> =
        run.connections.iter().filter(|c| c.role != Role::Other).map(|c| c.throughput_bps).collect();
    let mut metrics = json!({
        "fairness_index": number(metrics::fairness_index(run)),
        "cov": number(metrics::cov(run)),
        "utilization": metrics::utilization(run),
        "jain_index": number((!throughputs.is_empty()).then(|| metrics::jain_index(&throughputs))),
        "links": metrics::link_metrics(run),
        "measured_seconds": run.measured_seconds,
        "packets_sent": run.packets_sent,
    });
    if let (Value::Object(map), Value::Object(more)) = (&mut metrics, extra) {
        map.extend(more);
    }
    json!({ "scenario": run.name, "seed": run.seed, "flows": flows, "metrics": metrics })
}

/// A controller's snapshot as JSON: what every controller has, then its own
/// values by name (times in seconds).
fn snapshot_json(snapshot: &Snapshot) -> Value {
    let own: serde_json::Map<String, Value> = snapshot
        .state
        .iter()
        .map(|&(name, value)| {
            let value = match value {
                SnapshotValue::Name(name) => json!(name),
                value => number(value.as_f64()),
            };
            (name.to_string(), value)
        })
        .collect();
    json!({
        "phase": snapshot.phase,
        "congestion_window": snapshot.congestion_window,
        "ssthresh": snapshot.ssthresh,
        "pacing_rate": snapshot.pacing_rate,
        "state": own,
    })
}

/// The table of a single run.
pub fn run_table(run: &RunResult) -> String {
    let mut table = Table::new(&["id", "label", "cc", "role", "Mbit/s", "loss ev. rate", "RTT ms", "PTOs", "FCT s"]);
    for f in metrics::flow_metrics(run) {
        table.row(vec![
            f.id.to_string(),
            f.label,
            f.cc,
            format!("{:?}", f.role).to_lowercase(),
            fmt(Some(f.throughput_bps / 1e6), 3),
            fmt(Some(f.loss_event_rate), 5),
            fmt(Some(f.mean_rtt_ms), 1),
            f.timeouts.to_string(),
            f.completion_times_s.iter().map(|t| format!("{t:.3}")).collect::<Vec<_>>().join(" "),
        ]);
    }
    let mut out = table.render();
    let _ = writeln!(out, "{}", metrics_line(run));
    out
}

/// The line under a run's table: fairness index, CoV and utilization.
pub fn metrics_line(run: &RunResult) -> String {
    format!(
        "fairness index {}  CoV {}  utilization {}",
        fmt(metrics::fairness_index(run), 3),
        fmt(metrics::cov(run), 3),
        fmt(Some(metrics::utilization(run)), 4)
    )
}

/// The per-connection throughput series, one column per connection, Mbit/s
/// per bin.
pub fn series_csv(run: &RunResult) -> String {
    let mut out = String::from("time_s");
    for (id, c) in run.connections.iter().enumerate() {
        let _ = write!(out, ",{id}:{}", c.label.replace(',', ";"));
    }
    out.push('\n');
    let bins = run.connections.first().map_or(0, |c| c.bins.len());
    let last = ((run.measured_seconds + run.warmup_seconds) / run.bin_seconds).round() as usize;
    for bin in 0..bins.min(last) {
        let _ = write!(out, "{:.3}", bin as f64 * run.bin_seconds);
        for c in &run.connections {
            let _ = write!(out, ",{:.6}", c.bins[bin] as f64 * 8.0 / run.bin_seconds / 1e6);
        }
        out.push('\n');
    }
    out
}

/// One line of a plot.
pub struct Line {
    /// Legend entry.
    pub name: String,
    /// Points.
    pub points: Vec<(f64, f64)>,
}

/// Plots `lines` into `dir/name` (PNG, 1000x600).
pub fn plot(dir: &Path, name: &str, title: &str, x_label: &str, y_label: &str, lines: &[Line]) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create output directory {}: {e}", dir.display()))?;
    let path = dir.join(name);
    let failure = |e: String| format!("cannot draw {}: {e}", path.display());
    let text = fonts_available();
    let points = lines.iter().flat_map(|l| l.points.iter()).filter(|(x, y)| x.is_finite() && y.is_finite());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, 0.0f64, f64::MIN);
    for &(x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y1) = (0.0, 1.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    let root = BitMapBackend::new(&path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failure(e.to_string()))?;
    let mut builder = ChartBuilder::on(&root);
    builder.margin(15);
    if text {
        builder.caption(title, ("sans-serif", 22)).x_label_area_size(45).y_label_area_size(70);
    }
    let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1 * 1.05).map_err(|e| failure(e.to_string()))?;
    let mut mesh = chart.configure_mesh();
    if text {
        mesh.x_desc(x_label).y_desc(y_label);
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(|e| failure(e.to_string()))?;
    for (i, line) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let series = chart
            .draw_series(LineSeries::new(
                line.points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()),
                color.stroke_width(2),
            ))
            .map_err(|e| failure(e.to_string()))?;
        if text {
            series
                .label(line.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
    }
    if text && lines.len() > 1 {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| failure(e.to_string()))?;
    }
    root.present().map_err(|e| failure(e.to_string()))
}

/// Throughput over time of the connections of a run, one line per label
/// (summed), averaged over `smooth_seconds`.
pub fn throughput_lines(run: &RunResult, smooth_seconds: f64) -> Vec<Line> {
    let per = (smooth_seconds / run.bin_seconds).round().max(1.0) as usize;
    let mut lines: Vec<(String, Vec<f64>)> = Vec::new();
    for c in &run.connections {
        let name = format!("{} ({:?})", c.label, c.role).to_lowercase();
        let index = match lines.iter().position(|(n, _)| *n == name) {
            Some(i) => i,
            None => {
                lines.push((name, vec![0.0; c.bins.len()]));
                lines.len() - 1
            }
        };
        for (slot, bytes) in lines[index].1.iter_mut().zip(&c.bins) {
            *slot += *bytes as f64;
        }
    }
    let last = ((run.measured_seconds + run.warmup_seconds) / run.bin_seconds).round() as usize;
    lines
        .into_iter()
        .map(|(name, bins)| {
            let bins = &bins[..last.min(bins.len())];
            let points = bins
                .chunks(per)
                .enumerate()
                .map(|(i, chunk)| {
                    let bytes: f64 = chunk.iter().sum();
                    let seconds = chunk.len() as f64 * run.bin_seconds;
                    ((i * per) as f64 * run.bin_seconds, bytes * 8.0 / seconds / 1e6)
                })
                .collect();
            Line { name, points }
        })
        .collect()
}

/// Writes the outputs of a single run into `dir`: `summary.json`,
/// `series.csv`, `throughput.png`; returns the table.
pub fn write_run(dir: &Path, run: &RunResult, extra: Value) -> Result<String, String> {
    write_summary(dir, &run_summary(run, extra))?;
    write_file(dir, "series.csv", &series_csv(run))?;
    plot(
        dir,
        "throughput.png",
        &format!("{}: throughput", run.name),
        "time (s)",
        "Mbit/s",
        &throughput_lines(run, 1.0),
    )?;
    Ok(run_table(run))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns() {
        let mut table = Table::new(&["a", "bbb"]);
        table.row(vec!["1000".into(), "2".into()]);
        assert_eq!(table.render(), "   a  bbb\n----  ---\n1000    2\n");
    }

    #[test]
    fn missing_and_infinite_numbers_are_null() {
        assert_eq!(number(None), Value::Null);
        assert_eq!(number(Some(f64::NAN)), Value::Null);
        assert_eq!(number(Some(1.5)), json!(1.5));
    }
}
