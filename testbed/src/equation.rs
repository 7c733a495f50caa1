//! How each cell's flows compare with the TCP throughput equation (RFC 5348
//! section 3.1) at the loss event rates the bottleneck gave them
//! (`flowshare testbed equation DIR`).
//!
//! A weighted connection's share per flowshare is its rate over N times a
//! standard flow's. Against the equation at the standard flows' mean loss
//! event rate `p` and the path's RTT `R` that share splits exactly in two:
//!
//! ```text
//! share per flowshare = [w / (N X(p, R))] / [s / X(p, R)]
//! ```
//!
//! with `w` the weighted connection's packets per second and `s` the mean
//! standard flow's. The first factor says whether the connection sends
//! what N equation-driven flows would at its peers' loss event rate, the
//! second how far the peers themselves fall from that equation. Over the
//! control (the same group at weight one) each factor's ratio then tells
//! which side of the pair moved a cell away from N times its control: a
//! connection that takes more than N flows' equation, or peers that get
//! less of theirs at the higher loss event rate a heavier connection leaves
//! them.
//!
//! The equation takes `b = 1` and `t_RTO = 4R` as TFRC does, unless
//! `--t-rto` says otherwise: a peer whose own timeouts cost more than 4 RTTs
//! falls below it as its loss event rate rises, and a `t_RTO` at which the
//! peers' factor stays flat across N is the timeout cost that explains them.
//!
//! A third table asks where the queue's drops fell: each side's packet loss
//! over the queue's drop rate (every flow's lost packets over every flow's
//! arrivals) beside the weighted connection's part of the arrivals `a`. The
//! two ratios `r_w` and `r_s` average to one, `a r_w + (1 - a) r_s = 1`, so
//! a side that loses more than the queue's average leaves the other less:
//! a lone QUIC connection against Linux TCP loses about twice the average
//! while it brings a seventh of the arrivals, and `r_w` falls toward one as
//! its part grows, for one weighted connection as for N separate ones
//! (testbed/README.md, "Where the queue's drops fall").
//!
//! Rates are in packets: the bottleneck counts bytes of IP packets, a
//! quiche datagram of 1350 bytes is 1378 on the wire and a Linux TCP
//! segment (1448 bytes and timestamps) 1500. On the grid's runs these sizes
//! give the bottleneck's packet count to within 0.2 %.

use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;

use serde_json::Value;

use flowshare_controllers::equations::TcpEquation;
use flowshare_lab::report::Table;
use flowshare_lab::scorecard::card::Estimate;
use flowshare_lab::scorecard::grid::group_of_scenario;

/// Bytes of a full quiche datagram at the bottleneck: 1350 bytes of UDP
/// payload (`quic::pacing::MAX_DATAGRAM_SIZE`) and 28 of IPv4 and UDP
/// headers.
pub const QUIC_WIRE_BYTES: f64 = 1378.0;

/// Bytes of a full Linux TCP segment at the bottleneck: a 1500-byte MTU's.
pub const TCP_WIRE_BYTES: f64 = 1500.0;

/// `t_RTO` in RTTs when none is asked for: TFRC's (RFC 5348 section 4.3).
pub const DEFAULT_T_RTO_RTTS: f64 = 4.0;

/// One run's flows against the equation.
#[derive(Clone, Debug, PartialEq)]
pub struct RunComparison {
    /// The standard flows' mean loss event rate.
    pub standard_loss_event_rate: f64,
    /// Their mean packets lost per loss event.
    pub standard_losses_per_event: f64,
    /// Their mean packet loss rate.
    pub standard_packet_loss_rate: f64,
    /// The mean standard flow's rate over the equation at that loss event
    /// rate.
    pub standard_of_equation: f64,
    /// The weighted connection's flowshares (the sum of its flows' weights).
    pub weight: f64,
    /// Its loss event rate.
    pub weighted_loss_event_rate: f64,
    /// Its packets lost per loss event.
    pub weighted_losses_per_event: f64,
    /// Its rate over N times the equation at the standard flows' loss event
    /// rate.
    pub weighted_of_equation: f64,
    /// Its throughput per flowshare over the mean standard flow's (bytes,
    /// as the scorecard counts it).
    pub share_per_flowshare: f64,
    /// The weighted side's packets over all flows' packets arriving at the
    /// bottleneck (its delivered and lost ones).
    pub weighted_part_of_arrivals: f64,
    /// The weighted side's packet loss over the queue's drop rate.
    pub weighted_loss_over_queue: f64,
    /// The standard flows' packet loss over the queue's drop rate.
    pub standard_loss_over_queue: f64,
}

/// What a flow of `summary.json` carries that this needs.
struct Flow {
    role: String,
    weight: f64,
    packets_per_second: f64,
    throughput_bps: f64,
    loss_event_rate: f64,
    packet_loss_rate: f64,
    losses_per_event: f64,
    rtt_s: f64,
}

impl Flow {
    /// Packets per second that reached the bottleneck: those delivered and
    /// those it dropped.
    fn arrivals(&self) -> f64 {
        self.packets_per_second / (1.0 - self.packet_loss_rate).max(f64::MIN_POSITIVE)
    }

    fn drops(&self) -> f64 {
        self.arrivals() * self.packet_loss_rate
    }
}

/// Packets per second that `flows` brought to the bottleneck and that it
/// dropped of them.
fn arrivals_and_drops<'a>(flows: impl IntoIterator<Item = &'a Flow>) -> (f64, f64) {
    flows.into_iter().fold((0.0, 0.0), |(arrivals, drops), flow| (arrivals + flow.arrivals(), drops + flow.drops()))
}

fn flows(summary: &Value) -> Result<Vec<Flow>, String> {
    let list = summary["flows"].as_array().ok_or("no flows")?;
    list.iter()
        .enumerate()
        .map(|(i, flow)| {
            let number = |key: &str| flow[key].as_f64().ok_or_else(|| format!("flow {i} has no number {key}"));
            let wire_bytes = match flow["transport"].as_str() {
                Some("quic") => QUIC_WIRE_BYTES,
                Some("tcp") => TCP_WIRE_BYTES,
                other => return Err(format!("flow {i} has transport {other:?}, not quic or tcp")),
            };
            let throughput_bps = number("throughput_bps")?;
            let loss_event_rate = number("loss_event_rate")?;
            let packet_loss_rate = number("packet_loss_rate")?;
            Ok(Flow {
                role: flow["role"].as_str().unwrap_or_default().to_string(),
                weight: number("weight")?,
                packets_per_second: throughput_bps / 8.0 / wire_bytes,
                throughput_bps,
                loss_event_rate,
                packet_loss_rate,
                losses_per_event: if loss_event_rate > 0.0 { packet_loss_rate / loss_event_rate } else { 0.0 },
                rtt_s: number("mean_rtt_ms")? / 1e3,
            })
        })
        .collect()
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0usize), |(sum, count), v| (sum + v, count + 1));
    sum / count.max(1) as f64
}

/// One run's comparison from its `summary.json`, `t_rto` in RTTs; `None`
/// when it has no weighted or no standard flow, its standard flows saw no
/// loss event, or a role has no RTT.
pub fn compare(summary: &Value, t_rto: f64) -> Result<Option<RunComparison>, String> {
    let flows = flows(summary)?;
    let standard: Vec<&Flow> = flows.iter().filter(|f| f.role == "standard").collect();
    let weighted: Vec<&Flow> = flows.iter().filter(|f| f.role == "weighted").collect();
    if standard.is_empty() || weighted.is_empty() {
        return Ok(None);
    }
    let p = mean(standard.iter().map(|f| f.loss_event_rate));
    let rtt = mean(standard.iter().map(|f| f.rtt_s));
    let weighted_rtt = mean(weighted.iter().map(|f| f.rtt_s));
    if p <= 0.0 || rtt <= 0.0 || weighted_rtt <= 0.0 {
        return Ok(None);
    }
    let equation = |rtt: f64| TcpEquation { rtt, rto: t_rto * rtt, b: 1.0 }.packets_per_second(p);
    let standard_packets = mean(standard.iter().map(|f| f.packets_per_second));
    let weight: f64 = weighted.iter().map(|f| f.weight).sum();
    let weighted_packets: f64 = weighted.iter().map(|f| f.packets_per_second).sum();
    let weighted_bps: f64 = weighted.iter().map(|f| f.throughput_bps).sum();
    let (all_arrivals, all_drops) = arrivals_and_drops(&flows);
    let queue_drop_rate = all_drops / all_arrivals;
    let (weighted_arrivals, weighted_drops) = arrivals_and_drops(weighted.iter().copied());
    let (standard_arrivals, standard_drops) = arrivals_and_drops(standard.iter().copied());
    Ok(Some(RunComparison {
        standard_loss_event_rate: p,
        standard_losses_per_event: mean(standard.iter().map(|f| f.losses_per_event)),
        standard_packet_loss_rate: mean(standard.iter().map(|f| f.packet_loss_rate)),
        standard_of_equation: standard_packets / equation(rtt),
        weight,
        weighted_loss_event_rate: mean(weighted.iter().map(|f| f.loss_event_rate)),
        weighted_losses_per_event: mean(weighted.iter().map(|f| f.losses_per_event)),
        weighted_of_equation: weighted_packets / (weight * equation(weighted_rtt)),
        share_per_flowshare: weighted_bps / weight / mean(standard.iter().map(|f| f.throughput_bps)),
        weighted_part_of_arrivals: weighted_arrivals / all_arrivals,
        weighted_loss_over_queue: weighted_drops / weighted_arrivals / queue_drop_rate,
        standard_loss_over_queue: standard_drops / standard_arrivals / queue_drop_rate,
    }))
}

/// Every `summary.json` under `dir` (or `dir` itself when it is one),
/// sorted by path.
pub(crate) fn summaries(dir: &Path) -> Result<Vec<PathBuf>, String> {
    if dir.is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let entries = std::fs::read_dir(&next).map_err(|e| format!("cannot read {}: {e}", next.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", next.display()))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() && entry.file_name() == "summary.json" {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The runs of one scenario.
#[derive(Default)]
struct Cell {
    runs: Vec<RunComparison>,
    untrusted: usize,
}

impl Cell {
    fn estimate(&self, field: impl Fn(&RunComparison) -> f64) -> Estimate {
        Estimate::of(&self.runs.iter().map(field).collect::<Vec<_>>())
    }

    fn weight(&self) -> f64 {
        self.runs.first().map_or(f64::NAN, |run| run.weight)
    }
}

/// A mean with its 95 % interval, the mean alone for one value.
pub(crate) fn show(estimate: Estimate, digits: usize) -> String {
    if estimate.ci95.is_finite() {
        format!("{:.digits$} ± {:.digits$}", estimate.mean, estimate.ci95)
    } else {
        format!("{:.digits$}", estimate.mean)
    }
}

/// Cells by group (`group_of_scenario`), within a group the control
/// (weight one) first and then by weight, each with its group.
pub(crate) fn in_grid_order<T>(cells: &BTreeMap<String, T>, weight: impl Fn(&T) -> f64) -> Vec<(&str, &String, &T)> {
    let mut order: Vec<(&str, &String, &T)> =
        cells.iter().map(|(name, cell)| (group_of_scenario(name), name, cell)).collect();
    order.sort_by(|a, b| {
        let key = |w: f64| if w == 1.0 { f64::NEG_INFINITY } else { w };
        a.0.cmp(b.0).then(key(weight(a.2)).total_cmp(&key(weight(b.2))))
    });
    order
}

/// The report of every run under `dir` (a run's directory, a campaign's
/// `--out` or a measured directory), `t_rto` in RTTs.
pub fn report(dir: &Path, t_rto: f64) -> Result<String, String> {
    if !(t_rto.is_finite() && t_rto > 0.0) {
        return Err(format!("--t-rto {t_rto} is not a positive number of RTTs"));
    }
    let paths = summaries(dir)?;
    if paths.is_empty() {
        return Err(format!("no summary.json under {}", dir.display()));
    }
    let mut cells: BTreeMap<String, Cell> = BTreeMap::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let summary: Value = serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        let Some(run) = compare(&summary, t_rto).map_err(|e| format!("{}: {e}", path.display()))? else {
            continue;
        };
        let cell = cells.entry(summary["scenario"].as_str().unwrap_or("(unnamed)").to_string()).or_default();
        cell.runs.push(run);
        cell.untrusted += usize::from(!crate::results::trusted(&summary));
    }
    if cells.is_empty() {
        return Err(format!("no run under {} has both a weighted and a standard flow with loss", dir.display()));
    }
    let order = in_grid_order(&cells, Cell::weight);

    let mut out = format!(
        "Each cell's flows against RFC 5348's equation (b = 1, t_RTO = {t_rto} RTTs) at the standard flows' mean \
         loss event rate p, mean ± 95 % interval over runs; rates in packets ({QUIC_WIRE_BYTES} bytes per QUIC \
         packet, {TCP_WIRE_BYTES} per TCP one). Per run, weighted's of N X / peers' of X is the share per \
         flowshare in packets; the share column counts bytes, as the scorecard does.\n\n"
    );
    let mut table = Table::new(&[
        "cell",
        "runs",
        "peers' p",
        "peers' losses/event",
        "peers' of X",
        "weighted's p",
        "weighted's losses/event",
        "weighted's of N X",
        "share per flowshare",
    ]);
    for (_, name, cell) in &order {
        table.row(vec![
            name.to_string(),
            if cell.untrusted > 0 {
                format!("{} ({} untrusted)", cell.runs.len(), cell.untrusted)
            } else {
                cell.runs.len().to_string()
            },
            show(cell.estimate(|r| r.standard_loss_event_rate), 4),
            show(cell.estimate(|r| r.standard_losses_per_event), 2),
            show(cell.estimate(|r| r.standard_of_equation), 3),
            show(cell.estimate(|r| r.weighted_loss_event_rate), 4),
            show(cell.estimate(|r| r.weighted_losses_per_event), 2),
            show(cell.estimate(|r| r.weighted_of_equation), 3),
            show(cell.estimate(|r| r.share_per_flowshare), 3),
        ]);
    }
    out.push_str(&table.render());

    let mut relative = Table::new(&[
        "cell",
        "share over control",
        "weighted's of N X over control's",
        "control's peers' of X over the cell's",
    ]);
    let mut judged = 0;
    for (group, name, cell) in &order {
        let control = order.iter().find(|(g, _, c)| g == group && c.weight() == 1.0).map(|(_, _, c)| c);
        let Some(control) = control.filter(|_| cell.weight() != 1.0) else { continue };
        let ratio = |field: fn(&RunComparison) -> f64| cell.estimate(field).relative_to(&control.estimate(field));
        let peers =
            control.estimate(|r| r.standard_of_equation).relative_to(&cell.estimate(|r| r.standard_of_equation));
        relative.row(vec![
            name.to_string(),
            show(ratio(|r| r.share_per_flowshare), 3),
            show(ratio(|r| r.weighted_of_equation), 3),
            show(peers, 3),
        ]);
        judged += 1;
    }
    if judged > 0 {
        out.push_str(
            "\nOver the group's control (weight one): the share's ratio is the product of the other two, up to the \
             scorecard's byte/packet units and the means over runs.\n\n",
        );
        out.push_str(&relative.render());
    }

    let mut drops = Table::new(&[
        "cell",
        "weighted's part of arrivals",
        "weighted's loss over the queue's",
        "peers' loss over the queue's",
        "share per flowshare",
    ]);
    for (_, name, cell) in &order {
        drops.row(vec![
            name.to_string(),
            show(cell.estimate(|r| r.weighted_part_of_arrivals), 3),
            show(cell.estimate(|r| r.weighted_loss_over_queue), 2),
            show(cell.estimate(|r| r.standard_loss_over_queue), 2),
            show(cell.estimate(|r| r.share_per_flowshare), 3),
        ]);
    }
    out.push_str(
        "\nWhere the queue's drops fell: each side's packet loss over the queue's drop rate (all flows' lost packets \
         over all that arrived), beside the weighted side's part of the arrivals a; a r_w + (1 - a) r_s = 1.\n\n",
    );
    out.push_str(&drops.render());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const RTT_MS: f64 = 80.0;

    /// The packets per second RFC 5348 gives at `p` on the tests' path.
    fn x(p: f64) -> f64 {
        TcpEquation { rtt: RTT_MS / 1e3, rto: 4.0 * RTT_MS / 1e3, b: 1.0 }.packets_per_second(p)
    }

    fn flow(role: &str, transport: &str, weight: f64, packets_per_second: f64, p: f64) -> Value {
        let bytes = if transport == "quic" { QUIC_WIRE_BYTES } else { TCP_WIRE_BYTES };
        json!({"role": role, "transport": transport, "weight": weight, "throughput_bps": packets_per_second * bytes * 8.0,
               "loss_event_rate": p, "packet_loss_rate": 2.0 * p, "mean_rtt_ms": RTT_MS})
    }

    fn summary(scenario: &str, flows: Vec<Value>) -> Value {
        json!({"scenario": scenario, "flows": flows, "metrics": {}})
    }

    /// Peers at their equation and a weighted connection at 1.2 times N
    /// flows' of it: the factors are 1 and 1.2, and the share per
    /// flowshare (in bytes) is their ratio times the packet sizes'.
    #[test]
    fn a_run_splits_its_share_into_the_connections_and_the_peers_factor() {
        let p = 0.01;
        let run = summary(
            "scorecard g n=4",
            vec![
                flow("weighted", "quic", 4.0, 1.2 * 4.0 * x(p), 0.004),
                flow("standard", "tcp", 1.0, 0.9 * x(p), p),
                flow("standard", "tcp", 1.0, 1.1 * x(p), p),
            ],
        );
        let comparison = compare(&run, 4.0).expect("a valid summary").expect("both roles");
        assert!((comparison.standard_of_equation - 1.0).abs() < 1e-12);
        assert!((comparison.weighted_of_equation - 1.2).abs() < 1e-12);
        assert!((comparison.share_per_flowshare - 1.2 * QUIC_WIRE_BYTES / TCP_WIRE_BYTES).abs() < 1e-12);
        assert_eq!((comparison.weight, comparison.standard_losses_per_event), (4.0, 2.0));
    }

    /// A connection that loses twice its peers' part of its packets loses
    /// more than the queue's average, they less, and weighted by their parts
    /// of the arrivals the two ratios average to one.
    #[test]
    fn the_queue_s_drops_split_between_the_sides_by_their_arrivals() {
        let run = summary(
            "s",
            vec![
                flow("weighted", "quic", 1.0, 100.0, 0.01),
                flow("standard", "tcp", 1.0, 150.0, 0.005),
                flow("standard", "tcp", 1.0, 250.0, 0.005),
            ],
        );
        let c = compare(&run, 4.0).expect("a valid summary").expect("both roles");
        let (a, r_w, r_s) = (c.weighted_part_of_arrivals, c.weighted_loss_over_queue, c.standard_loss_over_queue);
        // Packet loss 2 % against 1 %: arrivals 100 / 0.98 and 400 / 0.99.
        let (weighted_in, standard_in) = (100.0 / 0.98, 400.0 / 0.99);
        assert!((a - weighted_in / (weighted_in + standard_in)).abs() < 1e-12, "{a}");
        assert!((r_w / r_s - 2.0).abs() < 1e-12, "{r_w} {r_s}");
        assert!(r_w > 1.0 && r_s < 1.0);
        assert!((a * r_w + (1.0 - a) * r_s - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_run_without_standard_loss_or_without_a_role_is_left_out() {
        let lossless =
            summary("s", vec![flow("weighted", "quic", 2.0, 100.0, 0.01), flow("standard", "tcp", 1.0, 50.0, 0.0)]);
        assert_eq!(compare(&lossless, 4.0), Ok(None));
        let alone = summary("s", vec![flow("standard", "tcp", 1.0, 50.0, 0.01)]);
        assert_eq!(compare(&alone, 4.0), Ok(None));
    }

    #[test]
    fn a_flow_of_an_unknown_transport_is_an_error_naming_it() {
        let run = summary("s", vec![flow("weighted", "sctp", 2.0, 100.0, 0.01)]);
        let error = compare(&run, 4.0).expect_err("sctp has no packet size here");
        assert_eq!(error, "flow 0 has transport Some(\"sctp\"), not quic or tcp");
    }

    fn write(dir: &Path, relative: &str, value: &Value) {
        let path = dir.join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a writable temp dir");
        std::fs::write(path, value.to_string()).expect("a writable temp dir");
    }

    /// A campaign's control and cell: the cell's peers get 0.8 of their
    /// equation where the control's got 1.0, and the connection sends N
    /// flows' equation in both, so it takes 1.25 of N times its control and
    /// the report lays that on the peers.
    #[test]
    fn a_campaign_lays_a_cell_s_miss_on_the_side_that_moved() {
        let dir = std::env::temp_dir().join(format!("flowshare-equation-{}", std::process::id()));
        let (p_control, p_cell) = (0.002, 0.01);
        write(
            &dir,
            "runs/control/seed-1/summary.json",
            &summary(
                "scorecard g n=1",
                vec![
                    flow("weighted", "quic", 1.0, x(p_control), p_control),
                    flow("standard", "quic", 1.0, x(p_control), p_control),
                ],
            ),
        );
        write(
            &dir,
            "runs/n-4/seed-1/summary.json",
            &summary(
                "scorecard g n=4",
                vec![
                    flow("weighted", "quic", 4.0, 4.0 * x(p_cell), 0.003),
                    flow("standard", "quic", 1.0, 0.8 * x(p_cell), p_cell),
                ],
            ),
        );
        let report = report(&dir, 4.0).expect("two runs");
        std::fs::remove_dir_all(&dir).expect("the temp dir");
        let control_row = report.lines().position(|l| l.contains("scorecard g n=1")).expect("the control's row");
        let cell_row = report.lines().position(|l| l.contains("scorecard g n=4")).expect("the cell's row");
        assert!(control_row < cell_row, "the control comes first:\n{report}");
        let relative_table = report.split("Over the group's control").nth(1).expect("the relative table");
        let relative = relative_table.lines().find(|l| l.contains("scorecard g n=4")).expect("a relative row");
        let numbers: Vec<&str> = relative.split_whitespace().skip(3).collect();
        assert_eq!(numbers, ["1.250", "1.000", "1.250"], "{report}");
    }

    #[test]
    fn bad_input_gets_a_one_line_error() {
        assert_eq!(report(Path::new("/nonexistent-flowshare"), 4.0).expect_err("no dir").lines().count(), 1);
        assert_eq!(report(Path::new("."), 0.0), Err("--t-rto 0 is not a positive number of RTTs".to_string()));
        let dir = std::env::temp_dir().join(format!("flowshare-equation-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a writable temp dir");
        std::fs::write(dir.join("summary.json"), "{").expect("a writable temp dir");
        let error = report(&dir, 4.0).expect_err("not JSON");
        std::fs::remove_dir_all(&dir).expect("the temp dir");
        assert!(error.contains("summary.json is not JSON") && error.lines().count() == 1, "{error}");
    }
}
