//! A scorecard as people read it: the full table, the headline matrix
//! (how many cells of each controller and peer hold their weight), and
//! plots of the fairness index against N with the tolerance band.

use std::fmt::Write as _;
use std::path::Path;

use crate::report;
use crate::report::Line;
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

fn verdict(cell: &CellCard) -> &'static str {
    match cell.verdict {
        Verdict::Control => "control",
        Verdict::Holds => "holds",
        Verdict::Misses => "MISSES",
        Verdict::Imprecise => "imprecise",
    }
}

fn row(table: &mut Table, group: &GroupCard, cell: &CellCard) {
    let untrusted = if cell.untrusted > 0 { format!(" ({} untrusted)", cell.untrusted) } else { String::new() };
    table.row(vec![
        group.controller.clone(),
        group.peer.clone(),
        group.path.clone(),
        group.queue.clone(),
        format!("{}", cell.n),
        estimate(&cell.fairness_index),
        estimate(&cell.relative),
        format!("{:.5}", cell.loss_event_rate_weighted),
        format!("{:.5}", cell.loss_event_rate_standard),
        format!("{}{untrusted}", cell.seeds),
        verdict(cell).to_string(),
    ]);
}

/// Every cell: the control first in each group.
pub fn table(card: &Scorecard) -> String {
    let mut table = Table::new(&[
        "controller",
        "peer",
        "path",
        "queue",
        "N",
        "FI (abs.)",
        "FI / control",
        "loss ev. w",
        "loss ev. std",
        "seeds",
        "verdict",
    ]);
    for group in &card.groups {
        row(&mut table, group, &group.control);
        for cell in &group.cells {
            row(&mut table, group, cell);
        }
    }
    table.render()
}

/// Per controller and peer: cells that hold, of those judged, the range of
/// the fairness index relative to the control, and the range of the
/// controls' absolute index.
pub fn headline(card: &Scorecard) -> String {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for group in &card.groups {
        if !pairs.contains(&(&group.controller, &group.peer)) {
            pairs.push((&group.controller, &group.peer));
        }
    }
    let mut table = Table::new(&["controller", "peer", "hold", "misses", "imprecise", "FI / control", "control FI"]);
    for (controller, peer) in pairs {
        let groups: Vec<&GroupCard> =
            card.groups.iter().filter(|g| g.controller == controller && g.peer == peer).collect();
        let cells: Vec<&CellCard> = groups.iter().flat_map(|g| &g.cells).collect();
        let count = |verdict| cells.iter().filter(|cell| cell.verdict == verdict).count();
        let range = |values: Vec<f64>| {
            let (low, high) = values.iter().fold((f64::MAX, f64::MIN), |(l, h), &v| (l.min(v), h.max(v)));
            if values.is_empty() {
                "-".to_string()
            } else {
                format!("{low:.2}-{high:.2}")
            }
        };
        let judged: Vec<f64> =
            cells.iter().filter(|c| c.verdict != Verdict::Imprecise).map(|c| c.relative.mean).collect();
        table.row(vec![
            controller.to_string(),
            peer.to_string(),
            format!("{}/{}", count(Verdict::Holds), count(Verdict::Holds) + count(Verdict::Misses)),
            count(Verdict::Misses).to_string(),
            count(Verdict::Imprecise).to_string(),
            range(judged),
            range(groups.iter().map(|g| g.control.fairness_index.mean).collect()),
        ]);
    }
    let mut text = table.render();
    let _ = writeln!(
        text,
        "hold: weighted cells within +-{:.0} % of N times the control's share, of those whose control's 95 % interval is within +-{:.0} %",
        card.tolerance * 100.0,
        card.precision * 100.0
    );
    if card.access_jitter_ms.is_some() || card.access_jitter_shape.is_some() {
        let default = crate::scorecard::grid::LAB_ACCESS;
        let jitter = card.access_jitter_ms.unwrap_or(default.jitter_ms);
        let shape = card.access_jitter_shape.unwrap_or(default.jitter_shape);
        let _ = writeln!(
            text,
            "access jitter: up to {jitter} ms, {} (--jitter, --jitter-shape; the lab's default is up to {} ms, {})",
            shape.name(),
            default.jitter_ms,
            default.jitter_shape.name()
        );
    }
    text
}

/// One PNG per peer, path and queue: the fairness index over the control's
/// against N, a line per controller, with the tolerance band.
pub fn plots(card: &Scorecard, dir: &Path) -> Result<(), String> {
    let mut panels: Vec<(&str, &str, &str)> = Vec::new();
    for group in &card.groups {
        let panel = (group.peer.as_str(), group.path.as_str(), group.queue.as_str());
        if !panels.contains(&panel) {
            panels.push(panel);
        }
    }
    for (peer, path, queue) in panels {
        let groups =
            card.groups.iter().filter(|g| (g.peer.as_str(), g.path.as_str(), g.queue.as_str()) == (peer, path, queue));
        let mut lines: Vec<Line> = groups
            .map(|group| Line {
                name: group.controller.clone(),
                points: std::iter::once((1.0, 1.0))
                    .chain(group.cells.iter().map(|cell| (cell.n, cell.relative.mean)))
                    .filter(|(_, y)| y.is_finite())
                    .collect(),
            })
            .collect();
        for line in &mut lines {
            line.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let xs: Vec<f64> = lines.iter().flat_map(|line| line.points.iter().map(|p| p.0)).collect();
        let (low, high) = xs.iter().fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
        for (name, y) in [("+tolerance", 1.0 + card.tolerance), ("-tolerance", 1.0 - card.tolerance)] {
            lines.push(Line { name: name.into(), points: vec![(low, y), (high, y)] });
        }
        let file = format!("fi-{peer}-{path}-{queue}.png").replace(['/', ':', ','], "_");
        let title = format!("{} scorecard: peers {peer}, {path}, {queue}", card.kind);
        report::plot(dir, &file, &title, "N", "fairness index / control", &lines)?;
    }
    Ok(())
}
