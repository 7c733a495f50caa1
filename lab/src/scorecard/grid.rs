//! The scorecard's grid: which controllers, weights, peers, paths and queues
//! it measures, as data, and the scenario of each cell.
//!
//! A *group* is one controller against one kind of peer on one path and
//! queue; its cells are the weights N and the group's *control*: the same
//! controller at weight one against the same peers. The control says what
//! one flowshare of this controller is worth against these peers, so a
//! weighted cell is judged by its fairness index relative to the control
//! (N flowshares are N times the control's share) and its absolute index is
//! reported beside it. On request a group also runs, for every whole N of
//! two or more, N *separate* connections of the controller at weight one
//! against the same peers: what opening N connections would get, the
//! reference where one connection's share depends on how many others of its
//! kind share the path (QUIC against Linux TCP, testbed/README.md).

use flowshare_controllers::grammar::Args;

use crate::options::Options;
use crate::scenario::FlowConfig;
use crate::scenario::LinkConfig;
use crate::scenario::Scenario;
use crate::scenario::BOTTLENECK;
use crate::setup::JitterShape;
use crate::setup::Role;

/// Controller flows in a paper-scale control: ten flows at weight one among
/// the peers average out one flow's luck (one flow among 199 varies by 6 %
/// from run to run in the lab) without changing the mix much.
const PAPER_CONTROL_FLOWS: usize = 10;

/// The measured part of every run starts this long after the flows.
pub const WARMUP_FRACTION: f64 = 0.25;

/// A bottleneck path and how many flows share it.
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    /// Name in the table, e.g. `paper-200` or `small-20`.
    pub name: String,
    /// Bottleneck rate, Mbit/s.
    pub rate_mbps: f64,
    /// Base RTT, ms.
    pub rtt_ms: f64,
    /// How many standard flows share it with the weighted connection.
    pub flows: Flows,
    /// Seconds a run lasts: long enough that a few seeds give a narrow
    /// interval (a handful of flows share less steadily than 200).
    pub duration_s: f64,
}

/// The standard flows of a path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Flows {
    /// Paper 000's setup: the weighted connection and `total - N` standard
    /// flows (`total - 1` below one flowshare), so the link always carries
    /// `total` flowshares.
    Total(usize),
    /// A fixed number of standard flows.
    Standard(usize),
}

impl Flows {
    /// Standard flows next to a connection of weight `n`.
    pub fn standard(self, n: f64) -> usize {
        match self {
            Flows::Total(total) => total.saturating_sub(n.max(1.0).round() as usize).max(1),
            Flows::Standard(count) => count,
        }
    }
}

/// A queue at the bottleneck.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Queue {
    /// Name in the table.
    pub name: &'static str,
    /// `droptail` or `red`.
    pub discipline: &'static str,
    /// Buffer in bandwidth-delay products.
    pub buffer_bdp: f64,
}

/// The queues the full grids measure.
pub const QUEUES: [Queue; 3] = [
    Queue { name: "droptail-1bdp", discipline: "droptail", buffer_bdp: 1.0 },
    Queue { name: "droptail-0.5bdp", discipline: "droptail", buffer_bdp: 0.5 },
    Queue { name: "red-1bdp", discipline: "red", buffer_bdp: 1.0 },
];

/// The queues of [`QUEUES`] whose discipline is `discipline` and whose
/// buffer is one of `buffers_bdp` (either unset: all).
pub fn queues(discipline: Option<&str>, buffers_bdp: Option<&[f64]>) -> Vec<Queue> {
    QUEUES
        .iter()
        .copied()
        .filter(|queue| discipline.is_none_or(|wanted| wanted == queue.discipline))
        .filter(|queue| buffers_bdp.is_none_or(|wanted| wanted.contains(&queue.buffer_bdp)))
        .collect()
}

/// One controller against one kind of peer on one path and queue.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// Position in the grid: shards and merges keep this order.
    pub index: usize,
    /// The controller: a name or a spec whose weight each cell sets.
    pub controller: String,
    /// The standard peers (a spec in the lab; the testbed also knows
    /// `tcp-cubic`, `tcp-reno`).
    pub peer: String,
    /// The path.
    pub path: Path,
    /// The queue.
    pub queue: Queue,
    /// The weights measured besides the control.
    pub weights: Vec<f64>,
}

/// What one cell runs: the control (weight one), a weight, or N separate
/// connections at weight one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell {
    /// The controller at weight one against the same peers.
    Control,
    /// The controller at weight N.
    Weight(f64),
    /// N connections of the controller at weight one against the peers of
    /// the weight-N cell.
    Separate(f64),
}

impl Cell {
    /// The weight of each of the controller's connections.
    pub fn weight(self) -> f64 {
        match self {
            Cell::Control | Cell::Separate(_) => 1.0,
            Cell::Weight(n) => n,
        }
    }
}

/// Whether `n` separate connections can stand beside weight `n`: a whole
/// number of two or more.
pub fn has_separate_reference(n: f64) -> bool {
    n >= 2.0 && n.fract() == 0.0
}

/// What precedes a cell's weight in its scenario's name
/// (`scorecard KEY n=N`, [`Group::scenario`]).
const WEIGHT_IN_NAME: &str = " n=";

/// The group's part of a scorecard scenario's name, `scorecard KEY` of
/// `scorecard KEY n=N`, which a group's control and weighted cells share;
/// a name without a weight (N separate connections', or another
/// scenario's) is its own group.
pub fn group_of_scenario(name: &str) -> &str {
    name.rsplit_once(WEIGHT_IN_NAME).map_or(name, |(group, _)| group)
}

impl Group {
    /// `controller/peer/path/queue`: the group's key in tables and files.
    pub fn key(&self) -> String {
        format!("{}/{}/{}/{}", self.controller, self.peer, self.path.name, self.queue.name)
    }

    /// The control, then the weights, then (with `separate`) N separate
    /// connections for every weight that has them.
    pub fn cells(&self, separate: bool) -> Vec<Cell> {
        std::iter::once(Cell::Control)
            .chain(self.weights.iter().map(|&n| Cell::Weight(n)))
            .chain(self.separate_weights(separate).map(Cell::Separate))
            .collect()
    }

    /// The weights that (with `separate`) also run as N separate
    /// connections: the whole ones of two or more.
    pub fn separate_weights(&self, separate: bool) -> impl Iterator<Item = f64> + '_ {
        self.weights.iter().copied().filter(move |&n| separate && has_separate_reference(n))
    }

    /// The scenario of `cell`, the path's duration long (the first quarter
    /// is warm-up); `peer_flows(count)` gives the standard flows (the lab
    /// puts the peer spec in `cc`, the testbed also picks their transport)
    /// and `access` the weighted flows' way in (the lab's [`LAB_ACCESS`]
    /// unless `--jitter` says otherwise; the testbed has none: every path's
    /// delay is its link's).
    pub fn scenario(
        &self,
        cell: Cell,
        start_spread_s: f64,
        access: Access,
        peer_flows: &dyn Fn(usize) -> Result<FlowConfig, String>,
    ) -> Result<Scenario, String> {
        let spec = self.controller.parse::<flowshare_controllers::Spec>().map_err(|e| e.to_string())?;
        let spec = spec.reweighted(cell.weight()).map_err(|e| e.to_string())?;
        let (controller_flows, standard) = match (cell, self.path.flows) {
            (Cell::Control, Flows::Total(total)) => (PAPER_CONTROL_FLOWS, total - PAPER_CONTROL_FLOWS),
            (Cell::Separate(n), flows) => (n as usize, flows.standard(n)),
            (cell, flows) => (1, flows.standard(cell.weight())),
        };
        let queue = self.queue;
        let bottleneck = LinkConfig::bottleneck(self.path.rate_mbps, self.path.rtt_ms)
            .with_queue(queue.discipline)
            .with_buffer_bdp(queue.buffer_bdp, self.path.rtt_ms);
        let name = match cell {
            Cell::Separate(n) => format!("scorecard {} {n} separate", self.key()),
            cell => format!("scorecard {}{WEIGHT_IN_NAME}{}", self.key(), cell.weight()),
        };
        let weighted = FlowConfig::bulk(&spec.to_string(), controller_flows, &[BOTTLENECK]).with_role(Role::Weighted);
        let weighted = access.apply(weighted);
        let peers = peer_flows(standard)?.with_role(Role::Standard);
        let duration_s = self.path.duration_s;
        Ok(Scenario::dumbbell(&name, duration_s, duration_s * WARMUP_FRACTION, start_spread_s, bottleneck)
            .with_flow(weighted)
            .with_flow(peers))
    }
}

/// The flags of [`crate::options::FLAGS`] both scorecards read
/// (`--bandwidths` and `--rtt` pick the grid's paths). Neither reads
/// `--warmup` (the first quarter of every run is warm-up) nor `--pacing`
/// (the weighted connection paces as its spec says); each refuses what it
/// does not read ([`refuse_unused`]).
const GRID_FLAGS: [&str; 11] = [
    "seeds",
    "controllers",
    "n",
    "peers",
    "bandwidths",
    "rtt",
    "queue",
    "buffers",
    "duration",
    "jitter",
    "jitter-shape",
];

/// Refuses the options `scorecard` would ignore: it reads [`GRID_FLAGS`]
/// and its `own`.
pub fn refuse_unused(options: &Options, scorecard: &str, own: &[&str]) -> Result<(), String> {
    let uses: Vec<&str> = GRID_FLAGS.iter().chain(own).copied().collect();
    options.refuse_unused(scorecard, &uses)
}

/// Narrows `paths` to those of `--bandwidths` and `--rtt`.
fn pick_paths(paths: &mut Vec<Path>, options: &Options) {
    if let Some(rates) = &options.bandwidths_mbps {
        paths.retain(|path| rates.contains(&path.rate_mbps));
    }
    if let Some(rtt_ms) = options.rtt_ms {
        paths.retain(|path| path.rtt_ms == rtt_ms);
    }
}

/// Checks a grid's `--controllers`: each a weighted controller's spec
/// without `n`, which the grid sets from `--n` (a spec's own would be
/// overridden, and the results named by a weight their runs did not have).
pub fn check_controllers(controllers: &[String]) -> Result<(), String> {
    for controller in controllers {
        let spec: flowshare_controllers::Spec = controller.parse().map_err(|e| format!("--controllers: {e}"))?;
        if !spec.algorithm().is_weighted() {
            return Err(format!("--controllers {controller}: not a weighted controller"));
        }
        let mut args = Args::parse(controller).map_err(|e| format!("--controllers: {e}"))?;
        if args.text("n").is_some() {
            return Err(format!("--controllers {controller}: the grid sets n from --n; give the spec without it"));
        }
    }
    Ok(())
}

/// The groups of a grid's `controllers` x `peers` x `paths`, narrowed by
/// the options: the paths of `--bandwidths` and `--rtt`, the queues of
/// `--queue` and `--buffers` (a quick grid: the first of them); an error
/// when the options leave no cell to run.
pub fn narrowed_groups(
    controllers: &[String],
    peers: &[String],
    mut paths: Vec<Path>,
    weights: &[f64],
    options: &Options,
) -> Result<Vec<Group>, String> {
    pick_paths(&mut paths, options);
    let mut queues = queues(options.queue.as_deref(), options.buffers_bdp.as_deref());
    if options.quick {
        queues.truncate(1);
    }
    let groups = groups(controllers, peers, &paths, &queues, weights);
    if groups.is_empty() {
        return Err("the options leave no cell of the grid to run".into());
    }
    Ok(groups)
}

/// The groups of `controllers` x `peers` x `paths` x `queues`, in that
/// nesting order, each with `weights`.
pub fn groups(
    controllers: &[String],
    peers: &[String],
    paths: &[Path],
    queues: &[Queue],
    weights: &[f64],
) -> Vec<Group> {
    let mut groups = Vec::new();
    for controller in controllers {
        for peer in peers {
            for path in paths {
                for &queue in queues {
                    groups.push(Group {
                        index: groups.len(),
                        controller: controller.clone(),
                        peer: peer.clone(),
                        path: path.clone(),
                        queue,
                        weights: weights.to_vec(),
                    });
                }
            }
        }
    }
    groups
}

/// A flow's way into the network: access delay and jitter, ms, and how
/// the jitter varies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Access {
    /// One-way access delay, ms.
    pub delay_ms: f64,
    /// Up to this much more per packet, ms.
    pub jitter_ms: f64,
    /// How the extra delay varies from packet to packet.
    pub jitter_shape: JitterShape,
}

impl Access {
    /// `flow` with this access; without jitter the shape is left unset, so
    /// that the testbed, which has no access links, has nothing to note.
    pub fn apply(&self, flow: FlowConfig) -> FlowConfig {
        let flow = flow.with_access(self.delay_ms, self.jitter_ms);
        if self.jitter_ms > 0.0 {
            flow.with_jitter_shape(self.jitter_shape)
        } else {
            flow
        }
    }
}

/// The lab's access of every flow. The jitter breaks the phase effects of
/// identical paths; it drifts rather than being drawn per packet, because a
/// per-packet draw that may not reorder a flow squeezes a fast flow's
/// packets into clumps (one connection of 30 flowshares at 400 Mbit/s sends
/// a packet every 0.2 ms against 1 ms of jitter) and a drop-tail queue drops
/// clumps first, which the N flows the connection stands for would not
/// suffer (lab/README.md). Where one connection sends most of the packets
/// into a chronically full drop-tail queue (the small paths at N >= 8), the
/// share it gets depends on the jitter as much as on its controller:
/// `--jitter` and `--jitter-shape` measure that.
pub const LAB_ACCESS: Access = Access { delay_ms: 1.0, jitter_ms: 1.0, jitter_shape: JitterShape::Drift };

/// The lab's standard flows of `peer`: bulk flows with `access`.
pub fn lab_peers(peer: &str, count: usize, access: Access) -> FlowConfig {
    access.apply(FlowConfig::bulk(peer, count, &[BOTTLENECK]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(flows: Flows) -> Group {
        let path = Path { name: "p".into(), rate_mbps: 20.0, rtt_ms: 40.0, flows, duration_s: 100.0 };
        groups(&["pa-multcp".into()], &["cubic".into()], &[path], &QUEUES[1..2], &[0.5, 8.0]).remove(0)
    }

    #[test]
    fn queues_are_chosen_by_discipline_and_buffer() {
        let names = |discipline, buffers: Option<&[f64]>| -> Vec<&str> {
            queues(discipline, buffers).iter().map(|queue| queue.name).collect()
        };
        assert_eq!(names(None, None), ["droptail-1bdp", "droptail-0.5bdp", "red-1bdp"]);
        assert_eq!(names(Some("droptail"), None), ["droptail-1bdp", "droptail-0.5bdp"]);
        assert_eq!(names(Some("droptail"), Some(&[1.0])), ["droptail-1bdp"]);
        assert_eq!(names(None, Some(&[0.5])), ["droptail-0.5bdp"]);
        assert!(names(Some("red"), Some(&[0.5])).is_empty());
    }

    #[test]
    fn paper_scale_cells_keep_the_total_of_flowshares_and_the_control_has_ten_flows() {
        let group = group(Flows::Total(200));
        let flows = |cell| {
            let scenario =
                group.scenario(cell, 2.0, LAB_ACCESS, &|count| Ok(lab_peers("cubic", count, LAB_ACCESS))).unwrap();
            (scenario.flows[0].count, scenario.flows[1].count, scenario.flows[0].cc.clone().unwrap_or_default())
        };
        assert_eq!(flows(Cell::Control), (10, 190, "pa-multcp:n=1".into()));
        assert_eq!(flows(Cell::Weight(8.0)), (1, 192, "pa-multcp:n=8".into()));
        assert_eq!(flows(Cell::Weight(0.5)), (1, 199, "pa-multcp:n=0.5".into()));
        assert_eq!(flows(Cell::Separate(8.0)), (8, 192, "pa-multcp:n=1".into()));
    }

    /// The control and the weighted cells of a group name the same group;
    /// N separate connections, which have no weight in their name, are
    /// their own.
    #[test]
    fn a_scenario_name_gives_back_its_group() {
        let group = group(Flows::Standard(4));
        let name = |cell| {
            group.scenario(cell, 2.0, LAB_ACCESS, &|count| Ok(lab_peers("cubic", count, LAB_ACCESS))).unwrap().name
        };
        let expected = format!("scorecard {}", group.key());
        assert_eq!(group_of_scenario(&name(Cell::Control)), expected);
        assert_eq!(group_of_scenario(&name(Cell::Weight(0.5))), expected);
        let separate = name(Cell::Separate(8.0));
        assert_eq!(group_of_scenario(&separate), separate);
    }

    #[test]
    fn a_cell_runs_its_queue_and_resolves() {
        let group = group(Flows::Standard(4));
        let scenario = group
            .scenario(Cell::Weight(8.0), 2.0, LAB_ACCESS, &|count| Ok(lab_peers("cubic", count, LAB_ACCESS)))
            .unwrap();
        assert_eq!((scenario.flows[0].count, scenario.flows[1].count), (1, 4));
        assert_eq!(scenario.links[0].buffer_bdp, Some(0.5));
        assert_eq!(scenario.warmup_s, 25.0);
        assert!(scenario.resolve().is_ok());
        assert_eq!(group.cells(false), [Cell::Control, Cell::Weight(0.5), Cell::Weight(8.0)]);
        assert_eq!(group.cells(true), [Cell::Control, Cell::Weight(0.5), Cell::Weight(8.0), Cell::Separate(8.0)]);
        let separate = group
            .scenario(Cell::Separate(8.0), 2.0, LAB_ACCESS, &|count| Ok(lab_peers("cubic", count, LAB_ACCESS)))
            .unwrap();
        assert_eq!((separate.flows[0].count, separate.flows[1].count), (8, 4));
        assert!(!has_separate_reference(0.5) && !has_separate_reference(1.0) && !has_separate_reference(2.5));
        assert_eq!(group.key(), "pa-multcp/cubic/p/droptail-0.5bdp");
    }
}
