//! A scorecard as people read it: the full table, the headline matrix
//! (how many cells of each controller and peer hold their weight), and
//! plots of the fairness index against N with the tolerance band.

use std::fmt::Write as _;
use std::path::Path;

use crate::report;
use crate::report::Table;
use crate::scorecard::card::CellCard;
use crate::scorecard::card::Estimate;
use crate::scorecard::card::GroupCard;
use crate::scorecard::card::Scorecard;
use crate::scorecard::card::Verdict;

/// `mean ± ci`, with the interval left out when it is not finite.
fn estimate(value: &Estimate) -> String {
    if value.ci95.is_finite() {
        format!("{:.3} +- {:.3}", value.mean, value.ci95)
    } else {
        format!("{:.3}", value.mean)
    }
}

fn verdict_text(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Control => "control",
        Verdict::Holds => "holds",
        Verdict::Misses => "MISSES",
        Verdict::Imprecise => "imprecise",
        Verdict::Reference => "reference",
    }
}

/// The distinct values, in the order first seen.
fn distinct<T: PartialEq>(values: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut seen = Vec::new();
    for value in values {
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    seen
}

/// `low-high` of `values`, `-` when there are none.
fn range_text(values: Vec<f64>) -> String {
    match span(values) {
        Some((low, high)) => format!("{low:.2}-{high:.2}"),
        None => "-".to_string(),
    }
}

/// The lowest and the highest value, if there is one.
fn span(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values.into_iter().fold(None, |span, v| match span {
        None => Some((v, v)),
        Some((low, high)) => Some((f64::min(low, v), f64::max(high, v))),
    })
}

/// Cells by verdict.
struct Tally {
    holds: usize,
    misses: usize,
    imprecise: usize,
}

impl Tally {
    fn of<'a>(cells: impl IntoIterator<Item = &'a CellCard>) -> Tally {
        Tally::of_verdicts(cells.into_iter().map(|cell| cell.verdict))
    }

    fn of_verdicts(verdicts: impl IntoIterator<Item = Verdict>) -> Tally {
        let mut tally = Tally { holds: 0, misses: 0, imprecise: 0 };
        for verdict in verdicts {
            match verdict {
                Verdict::Holds => tally.holds += 1,
                Verdict::Misses => tally.misses += 1,
                Verdict::Imprecise => tally.imprecise += 1,
                Verdict::Control | Verdict::Reference => {}
            }
        }
        tally
    }

    /// Cells judged: those that hold or miss.
    fn judged(&self) -> usize {
        self.holds + self.misses
    }
}

/// A role's packet loss over the bottleneck's drop rate; `-` where a run
/// did not record it or nothing was dropped.
fn loss_over_drop_rate_text(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{ratio:.2}")
    } else {
        "-".to_string()
    }
}

/// A row of the table; with `separate`, the two columns of the judgement
/// against N separate connections follow.
fn row(table: &mut Table, group: &GroupCard, cell: &CellCard, separate: bool) {
    let untrusted = if cell.untrusted > 0 { format!(" ({} untrusted)", cell.untrusted) } else { String::new() };
    let n = match cell.verdict {
        Verdict::Reference => format!("{} separate", cell.n),
        _ => format!("{}", cell.n),
    };
    let mut values = vec![
        group.controller.clone(),
        group.peer.clone(),
        group.path.clone(),
        group.queue.clone(),
        n,
        estimate(&cell.fairness_index),
        estimate(&cell.relative),
        format!("{:.5}", cell.loss_event_rate_weighted),
        format!("{:.5}", cell.loss_event_rate_standard),
        loss_over_drop_rate_text(cell.loss_over_drop_rate_weighted),
        loss_over_drop_rate_text(cell.loss_over_drop_rate_standard),
        format!("{}{untrusted}", cell.seeds),
        verdict_text(cell.verdict).to_string(),
    ];
    if separate {
        match &cell.separate {
            Some(judgement) => {
                values.extend([estimate(&judgement.relative), verdict_text(judgement.verdict).to_string()])
            }
            None => values.extend(["-".to_string(), "-".to_string()]),
        }
    }
    table.row(values);
}

/// Every cell: the control first in each group, N separate connections
/// (when the scorecard ran them) last.
pub fn table(card: &Scorecard) -> String {
    let mut columns = vec![
        "controller",
        "peer",
        "path",
        "queue",
        "N",
        "FI (abs.)",
        "FI / control",
        "loss ev. w",
        "loss ev. std",
        "loss/drops w",
        "loss/drops std",
        "seeds",
        "verdict",
    ];
    if card.separate {
        columns.extend(["FI / N separate", "vs N separate"]);
    }
    let mut table = Table::new(&columns);
    for group in &card.groups {
        for cell in group.all_cells() {
            row(&mut table, group, cell, card.separate);
        }
    }
    table.render()
}

/// Per controller and peer, the weighted cells judged against N separate
/// connections (`--separate`), and what N separate connections get per
/// connection relative to one alone: 1 where the peers treat a QUIC
/// connection alike however many share the path.
fn separate_headline(card: &Scorecard, pairs: &[(&str, &str)]) -> String {
    let mut table =
        Table::new(&["controller", "peer", "hold vs N separate", "FI / N separate", "N separate / control"]);
    for &(controller, peer) in pairs {
        let groups: Vec<&GroupCard> =
            card.groups.iter().filter(|g| g.controller == controller && g.peer == peer).collect();
        let judged: Vec<_> = groups.iter().flat_map(|g| &g.cells).filter_map(|c| c.separate).collect();
        let tally = Tally::of_verdicts(judged.iter().map(|j| j.verdict));
        table.row(vec![
            controller.to_string(),
            peer.to_string(),
            format!("{}/{} ({} imprecise)", tally.holds, tally.judged(), tally.imprecise),
            range_text(judged.iter().filter(|j| j.verdict != Verdict::Imprecise).map(|j| j.relative.mean).collect()),
            range_text(groups.iter().flat_map(|g| &g.separate).map(|c| c.relative.mean).collect()),
        ]);
    }
    table.render()
}

/// Per controller and peer: cells that hold, of those judged, the range of
/// the fairness index relative to the control, and the range of the
/// controls' absolute index.
pub fn headline(card: &Scorecard) -> String {
    let pairs = distinct(card.groups.iter().map(|g| (g.controller.as_str(), g.peer.as_str())));
    let mut table = Table::new(&["controller", "peer", "hold", "misses", "imprecise", "FI / control", "control FI"]);
    for &(controller, peer) in &pairs {
        let groups: Vec<&GroupCard> =
            card.groups.iter().filter(|g| g.controller == controller && g.peer == peer).collect();
        let cells: Vec<&CellCard> = groups.iter().flat_map(|g| &g.cells).collect();
        let tally = Tally::of(cells.iter().copied());
        let judged: Vec<f64> =
            cells.iter().filter(|c| c.verdict != Verdict::Imprecise).map(|c| c.relative.mean).collect();
        table.row(vec![
            controller.to_string(),
            peer.to_string(),
            format!("{}/{}", tally.holds, tally.judged()),
            tally.misses.to_string(),
            tally.imprecise.to_string(),
            range_text(judged),
            range_text(groups.iter().map(|g| g.control.fairness_index.mean).collect()),
        ]);
    }
    let mut text = table.render();
    let _ = writeln!(
        text,
        "hold: weighted cells within +-{:.0} % of N times the control's share, of those whose control's 95 % interval is within +-{:.0} %",
        card.tolerance * 100.0,
        card.precision * 100.0
    );
    if card.separate {
        text.push('\n');
        text.push_str(&separate_headline(card, &pairs));
        let _ = writeln!(
            text,
            "vs N separate: weighted cells within +-{:.0} % of what each of N separate connections at weight one gets per connection (--separate)",
            card.tolerance * 100.0
        );
    }
    if card.access_jitter_ms.is_some() || card.access_jitter_shape.is_some() {
        let default = crate::scorecard::grid::LAB_ACCESS;
        let jitter = card.access_jitter_ms.unwrap_or(default.jitter_ms);
        let shape = card.access_jitter_shape.unwrap_or(default.jitter_shape);
        if jitter == 0.0 {
            let _ = writeln!(text, "no access jitter: every sender's own timing (--jitter 0)");
        } else {
            let _ = writeln!(
                text,
                "access jitter: up to {jitter} ms, {} (--jitter, --jitter-shape; the lab's default is up to {} ms, {})",
                shape.name(),
                default.jitter_ms,
                default.jitter_shape.name()
            );
        }
    }
    if card.peer_pacing == Some(false) {
        let _ = writeln!(text, "{UNPACED_PEERS}");
    }
    if let Some(note) = pacing_slack_note(card) {
        let _ = writeln!(text, "{note}");
    }
    text
}

/// The note on a testbed grid whose QUIC servers ran with another pacing
/// slack than `flowshare serve`'s default.
fn pacing_slack_note(card: &Scorecard) -> Option<String> {
    card.quic_pacing_slack_us.map(|slack| {
        format!("QUIC servers' pacing slack: {slack} µs (`--pacing-slack`; by default `flowshare serve`'s).")
    })
}

/// The note on a grid whose standard peers do not pace.
const UNPACED_PEERS: &str =
    "Standard peers unpaced (`--peer-pacing false`): they send as their acknowledgements open the window.";

/// One PNG per peer, path and queue: each controller's fairness index over
/// its control's against N (log scale) with its 95 % interval; the
/// tolerance band shaded green and each control's own interval, relative to
/// its mean, as a band of the controller's colour around 1. Filled markers
/// hold, crosses miss, hollow circles are imprecise (not judged);
/// triangles are N separate connections (`--separate`), each's index over
/// the control's.
pub fn plots(card: &Scorecard, dir: &Path) -> Result<(), String> {
    let panels = distinct(card.groups.iter().map(|g| (g.peer.as_str(), g.path.as_str(), g.queue.as_str())));
    for (peer, path, queue) in panels {
        let groups: Vec<&GroupCard> = card
            .groups
            .iter()
            .filter(|g| (g.peer.as_str(), g.path.as_str(), g.queue.as_str()) == (peer, path, queue))
            .collect();
        let file = format!("fi-{peer}-{path}-{queue}.png").replace(['/', ':', ','], "_");
        let title = format!("{} scorecard: peers {peer}, {path}, {queue}", card.kind);
        panel(&dir.join(file), &title, &groups, card.tolerance)?;
    }
    Ok(())
}

/// The y range of a panel: the points with their intervals and the
/// tolerance band, never less than 0.5 to 1.5 nor more than 0 to 4 (an
/// interval of two seeds can be wider than any judgement needs).
fn y_range(groups: &[&GroupCard], tolerance: f64) -> (f64, f64) {
    let (mut low, mut high) = (0.5f64.min(1.0 - 2.0 * tolerance), 1.5f64.max(1.0 + 2.0 * tolerance));
    for cell in groups.iter().flat_map(|g| g.cells.iter().chain(&g.separate)) {
        let (mean, ci) = (cell.relative.mean, cell.relative.ci95);
        if mean.is_finite() {
            let ci = if ci.is_finite() { ci } else { 0.0 };
            low = low.min(mean - ci);
            high = high.max(mean + ci);
        }
    }
    (low.max(0.0), high.min(4.0))
}

fn panel(path: &Path, title: &str, groups: &[&GroupCard], tolerance: f64) -> Result<(), String> {
    use plotters::prelude::*;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create output directory {}: {e}", parent.display()))?;
    }
    let failure = |e: String| format!("cannot draw {}: {e}", path.display());
    let text = report::fonts_available();
    // x is log2 N, so that the grid's weights (0.5, 2, 4, 8, 16, 30) fall
    // on or near whole-number ticks labelled as N.
    let weights: Vec<f64> = groups.iter().flat_map(|g| g.cells.iter().map(|c| c.n.log2())).chain([0.0]).collect();
    let (x0, x1) = weights.iter().fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
    let (x0, x1) = (x0 - 0.5, x1 + 0.5);
    // Controllers at the same N sit side by side instead of on each other.
    let dodge = |i: usize| 0.06 * (i as f64 - (groups.len() as f64 - 1.0) / 2.0);
    let (y0, y1) = y_range(groups, tolerance);
    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failure(e.to_string()))?;
    let mut builder = ChartBuilder::on(&root);
    builder.margin(15);
    if text {
        builder.caption(title, ("sans-serif", 22)).x_label_area_size(45).y_label_area_size(70);
    }
    let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1).map_err(|e| failure(e.to_string()))?;
    let mut mesh = chart.configure_mesh();
    let n_label = |x: &f64| format!("{}", 2f64.powf(*x));
    if text {
        mesh.x_desc("N (log scale)")
            .y_desc("fairness index / control's")
            .x_labels((x1 - x0).ceil() as usize + 1)
            .x_label_formatter(&n_label);
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(|e| failure(e.to_string()))?;
    let band = GREEN.mix(0.15);
    let tolerance_band = chart
        .draw_series([Rectangle::new([(x0, 1.0 - tolerance), (x1, 1.0 + tolerance)], band.filled())])
        .map_err(|e| failure(e.to_string()))?;
    if text {
        let label = format!("within ±{:.0} % of N x the control", tolerance * 100.0);
        tolerance_band.label(label).legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 20, y + 5)], band.filled()));
    }
    chart
        .draw_series(LineSeries::new([(x0, 1.0), (x1, 1.0)], BLACK.mix(0.4).stroke_width(1)))
        .map_err(|e| failure(e.to_string()))?;
    for (i, group) in groups.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let control = &group.control.fairness_index;
        let spread = control.ci95 / control.mean;
        if spread.is_finite() {
            chart
                .draw_series([Rectangle::new([(x0, 1.0 - spread), (x1, 1.0 + spread)], color.mix(0.12).filled())])
                .map_err(|e| failure(e.to_string()))?;
        }
        let mut cells: Vec<&CellCard> = group.cells.iter().filter(|c| c.relative.mean.is_finite()).collect();
        cells.sort_by(|a, b| a.n.total_cmp(&b.n));
        let line = chart
            .draw_series(LineSeries::new(
                cells.iter().map(|c| (c.n.log2() + dodge(i), c.relative.mean)),
                color.stroke_width(2),
            ))
            .map_err(|e| failure(e.to_string()))?;
        if text {
            let control_text = if control.ci95.is_finite() {
                format!("{:.2} ± {:.2}", control.mean, control.ci95)
            } else {
                format!("{:.2}", control.mean)
            };
            line.label(format!("{} (control's index {control_text})", group.controller))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        for cell in cells.iter().copied().chain(group.separate.iter().filter(|c| c.relative.mean.is_finite())) {
            let (x, mean, ci) = (cell.n.log2() + dodge(i), cell.relative.mean, cell.relative.ci95);
            if ci.is_finite() {
                let (low, high) = ((mean - ci).max(y0), (mean + ci).min(y1));
                let bar = [(x, low), (x, high)];
                let caps = [[(x - 0.04, low), (x + 0.04, low)], [(x - 0.04, high), (x + 0.04, high)]];
                chart
                    .draw_series(std::iter::once(bar).chain(caps).map(|points| PathElement::new(points, color)))
                    .map_err(|e| failure(e.to_string()))?;
            }
            let point = (x, mean.clamp(y0, y1));
            let marker: DynElement<BitMapBackend, (f64, f64)> = match cell.verdict {
                Verdict::Holds | Verdict::Control => Circle::new(point, 5, color.filled()).into_dyn(),
                Verdict::Misses => Cross::new(point, 6, color.stroke_width(3)).into_dyn(),
                Verdict::Imprecise => Circle::new(point, 5, color.stroke_width(2)).into_dyn(),
                Verdict::Reference => TriangleMarker::new(point, 7, color.stroke_width(2)).into_dyn(),
            };
            chart.draw_series(std::iter::once(marker)).map_err(|e| failure(e.to_string()))?;
        }
    }
    if text && groups.iter().any(|g| !g.separate.is_empty()) {
        // An empty series that only carries the legend's entry.
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(|e| failure(e.to_string()))?
            .label("N separate connections at weight one, per connection")
            .legend(|(x, y)| TriangleMarker::new((x + 10, y), 7, BLACK.stroke_width(2)));
    }
    if text {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| failure(e.to_string()))?;
    }
    root.present().map_err(|e| failure(e.to_string()))
}

/// The scorecard as the READMEs show it (`scorecard.md`): cells that hold
/// per controller, peer and path; per controller, the misses by N; every
/// cell's relative index.
pub fn markdown(card: &Scorecard) -> String {
    let mut text = String::new();
    let controllers = distinct(card.groups.iter().map(|g| g.controller.as_str()));
    let peers = distinct(card.groups.iter().map(|g| g.peer.as_str()));
    let paths = distinct(card.groups.iter().map(|g| g.path.as_str()));
    let mut weights: Vec<f64> = card.groups.iter().flat_map(|g| g.cells.iter().map(|c| c.n)).collect();
    weights.sort_by(f64::total_cmp);
    weights.dedup();
    let cells_of = |filter: &dyn Fn(&GroupCard) -> bool| -> Vec<&CellCard> {
        card.groups.iter().filter(|g| filter(g)).flat_map(|g| &g.cells).collect()
    };
    // `holds/judged`, with ` (k?)` for imprecise cells.
    let count = |cells: &[&CellCard]| {
        let tally = Tally::of(cells.iter().copied());
        let mark = if tally.imprecise > 0 { format!(" ({}?)", tally.imprecise) } else { String::new() };
        (tally.holds, tally.judged(), mark)
    };

    if card.peer_pacing == Some(false) {
        let _ = writeln!(text, "{UNPACED_PEERS}\n");
    }
    if let Some(note) = pacing_slack_note(card) {
        let _ = writeln!(text, "{note}\n");
    }
    let _ = writeln!(text, "Cells that hold, of those judged, per path (`?`: imprecise):\n");
    let _ = writeln!(text, "| controller | peer | {} | all |", paths.join(" | "));
    let _ = writeln!(text, "|---|---|{}---|", "---|".repeat(paths.len()));
    for controller in &controllers {
        for peer in &peers {
            let mine = |g: &GroupCard| g.controller == *controller && g.peer == *peer;
            let mut row = format!("| {controller} | {peer} |");
            for path in &paths {
                let (holds, judged, mark) = count(&cells_of(&|g| mine(g) && g.path == *path));
                let _ = write!(row, " {holds}/{judged}{mark} |");
            }
            let (holds, judged, mark) = count(&cells_of(&mine));
            let _ = writeln!(text, "{row} **{holds}/{judged}**{mark} |");
        }
    }
    let (holds, judged, _) = count(&cells_of(&|_| true));
    let per = |names: &[&str], field: fn(&GroupCard) -> &str| {
        names
            .iter()
            .map(|name| {
                let (holds, judged, _) = count(&cells_of(&|g| field(g) == *name));
                format!("{name} {holds}/{judged}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        text,
        "\n**{holds} of {judged} judged cells hold** (per controller: {}; per path: {}).\n",
        per(&controllers, |g| &g.controller),
        per(&paths, |g| &g.path)
    );

    let tolerance = card.tolerance * 100.0;
    let header: String = peers.iter().map(|peer| format!(" against {peer}: holds / judged |")).collect();
    let _ = writeln!(text, "| controller |{header} cells outside ±{tolerance:.0} % (relative FI) |");
    let _ = writeln!(text, "|---|{}---|", "---|".repeat(peers.len()));
    for controller in &controllers {
        let mut row = format!("| {controller} |");
        for peer in &peers {
            let (holds, judged, mark) = count(&cells_of(&|g| g.controller == *controller && g.peer == *peer));
            let mark = mark.replace('?', " imprecise");
            let _ = write!(row, " {holds} / {judged}{mark} |");
        }
        let mut outside = Vec::new();
        for &n in &weights {
            let misses: Vec<f64> = cells_of(&|g| g.controller == *controller)
                .into_iter()
                .filter(|c| c.n == n && c.verdict == Verdict::Misses)
                .map(|c| c.relative.mean)
                .collect();
            match (misses.len(), span(misses.iter().copied())) {
                (1, Some((low, _))) => outside.push(format!("N = {n}: 1 ({low:.2})")),
                (k, Some((low, high))) => outside.push(format!("N = {n}: {k} ({low:.2}–{high:.2})")),
                (_, None) => {}
            }
        }
        let outside = if outside.is_empty() { "none".to_string() } else { outside.join("; ") };
        let _ = writeln!(text, "{row} {outside} |");
    }

    let _ = writeln!(
        text,
        "\nEvery cell, relative fairness index ± its 95 % interval (bold: misses, `?`: imprecise), with the control's absolute index:\n"
    );
    let columns: String = weights.iter().map(|n| format!(" N = {n} |")).collect();
    let _ = writeln!(text, "| controller | peer | path | queue | control FI |{columns}");
    let _ = writeln!(text, "|---|---|---|---|---|{}", "---|".repeat(weights.len()));
    let value = |estimate: &Estimate| {
        if estimate.ci95.is_finite() {
            format!("{:.2}±{:.2}", estimate.mean, estimate.ci95)
        } else {
            format!("{:.2}", estimate.mean)
        }
    };
    // A judged value: bold when it misses, `?` when imprecise.
    let marked = |estimate: &Estimate, verdict: Verdict| match verdict {
        Verdict::Misses => format!("**{}**", value(estimate)),
        Verdict::Imprecise => format!("{}?", value(estimate)),
        _ => value(estimate),
    };
    for group in &card.groups {
        let mut row = format!(
            "| {} | {} | {} | {} | {} |",
            group.controller,
            group.peer,
            group.path,
            group.queue,
            value(&group.control.fairness_index)
        );
        for &n in &weights {
            let cell = match group.cells.iter().find(|c| c.n == n) {
                None => "-".to_string(),
                Some(c) => marked(&c.relative, c.verdict),
            };
            let _ = write!(row, " {cell} |");
        }
        let _ = writeln!(text, "{row}");
    }
    if card.separate {
        let _ = writeln!(
            text,
            "\nAgainst N separate connections at weight one (`--separate`): what each of them gets over the control's index, and the weighted connection's index over theirs (bold: outside ±{tolerance:.0} %, `?`: imprecise):\n"
        );
        let _ =
            writeln!(text, "| controller | peer | path | queue | N | N separate / control | weighted / N separate |");
        let _ = writeln!(text, "|---|---|---|---|---|---|---|");
        for group in &card.groups {
            for reference in &group.separate {
                let judgement = group.cells.iter().find(|c| c.n == reference.n).and_then(|c| c.separate);
                let judged = judgement.map_or("-".to_string(), |j| marked(&j.relative, j.verdict));
                let _ = writeln!(
                    text,
                    "| {} | {} | {} | {} | {} | {} | {judged} |",
                    group.controller,
                    group.peer,
                    group.path,
                    group.queue,
                    reference.n,
                    value(&reference.relative)
                );
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorecard::card::Sample;

    #[test]
    fn the_markdown_counts_verdicts_per_path_and_lists_the_misses() {
        let sample = |fairness_index| Sample {
            fairness_index,
            weighted_loss_event_rate: 0.01,
            standard_loss_event_rate: 0.01,
            weighted_loss_over_drop_rate: 0.8,
            standard_loss_over_drop_rate: 1.05,
            utilization: 1.0,
            trusted: true,
        };
        let control = CellCard::new(1.0, &[sample(0.8), sample(0.8), sample(0.8)], None, 0.05, 0.1);
        let cells = vec![
            CellCard::new(4.0, &[sample(0.85), sample(0.85)], Some(&control), 0.05, 0.1),
            CellCard::new(8.0, &[sample(1.0), sample(1.0)], Some(&control), 0.05, 0.1),
            CellCard::new(16.0, &[sample(0.5), sample(1.5)], Some(&control), 0.05, 0.1),
        ];
        let card = Scorecard {
            kind: "lab".into(),
            quick: false,
            precision: 0.05,
            tolerance: 0.1,
            access_jitter_ms: None,
            access_jitter_shape: None,
            peer_pacing: None,
            separate: false,
            quic_pacing_slack_us: None,
            grid_groups: 1,
            shard: None,
            groups: vec![GroupCard {
                index: 0,
                controller: "multcp".into(),
                peer: "reno".into(),
                path: "small-20".into(),
                rate_mbps: 20.0,
                rtt_ms: 40.0,
                queue: "droptail-1bdp".into(),
                control,
                cells,
                separate: Vec::new(),
            }],
        };
        let text = markdown(&card);
        assert!(text.contains("| controller | peer | small-20 | all |"), "{text}");
        assert!(text.contains("| multcp | reno | 1/2 (1?) | **1/2** (1?) |"), "{text}");
        assert!(text.contains("**1 of 2 judged cells hold** (per controller: multcp 1/2; per path: small-20 1/2)"));
        assert!(text.contains("| multcp | 1 / 2 (1 imprecise) | N = 8: 1 (1.25) |"), "{text}");
        assert!(
            text.contains("| multcp | reno | small-20 | droptail-1bdp | 0.80±0.00 | 1.06±0.00 | **1.25±0.00** | 1.25±")
        );
        assert!(text.trim_end().ends_with("? |"), "{text}");
        assert!(!text.contains("unpaced") && !headline(&card).contains("unpaced"));
        assert!(!text.contains("separate") && !table(&card).contains("separate"));

        // Four separate connections get 0.85 each, as the weighted one does
        // per flowshare: it holds against them.
        let mut with_separate = Scorecard { separate: true, ..card.clone() };
        let group = &mut with_separate.groups[0];
        let reference = CellCard::separate_reference(4.0, &[sample(0.85), sample(0.85)], &group.control);
        group.cells[0] = group.cells[0].clone().judged_against_separate(&reference, 0.05, 0.1);
        group.separate = vec![reference];
        let text = markdown(&with_separate);
        assert!(text.contains("| multcp | reno | small-20 | droptail-1bdp | 4 | 1.06±0.00 | 1.00±0.00 |"), "{text}");
        assert!(headline(&with_separate).contains("1/1 (0 imprecise)"), "{}", headline(&with_separate));
        assert!(table(&with_separate).contains("4 separate"), "{}", table(&with_separate));
        assert!(!text.contains("pacing slack") && !headline(&card).contains("pacing slack"));
        let slack = Scorecard { quic_pacing_slack_us: Some(10), ..card.clone() };
        let note = "QUIC servers' pacing slack: 10 µs";
        assert!(markdown(&slack).starts_with(note) && headline(&slack).contains(note), "{}", headline(&slack));
        let unpaced = Scorecard { peer_pacing: Some(false), ..card };
        assert!(markdown(&unpaced).starts_with(UNPACED_PEERS) && headline(&unpaced).contains(UNPACED_PEERS));
    }
}
