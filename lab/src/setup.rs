//! What one run is: links, connections and their traffic, validated and
//! with names resolved into indices. [`crate::scenario`] makes a [`Setup`]
//! from a scenario file; the engine ([`crate::sim`]) runs it; the testbed
//! plans real processes from it.

use flowshare_controllers::Spec;

use crate::Nanos;

/// How a queue's capacity is counted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// At most this many packets waiting.
    Packets(usize),
    /// At most this many bytes waiting.
    Bytes(usize),
}

/// The queue discipline of a link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Discipline {
    /// Drop arrivals that do not fit.
    DropTail,
    /// Random Early Detection, gentle, with automatic parameters.
    Red,
}

/// Everything needed to build a link.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    /// Name used in topologies and reports.
    pub name: String,
    /// Rate in bits per second.
    pub rate_bps: f64,
    /// Propagation delay.
    pub delay: Nanos,
    /// Queue discipline.
    pub discipline: Discipline,
    /// Queue capacity.
    pub limit: Limit,
    /// Probability of dropping any arriving packet at random (0 for none).
    pub random_loss: f64,
    /// Packet size RED assumes for its packet-time constant, bytes.
    pub mean_packet_bytes: usize,
}

/// What a connection is in the fairness metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The weighted flow (aggregate) under test.
    Weighted,
    /// A standard flow the weighted one is compared with.
    Standard,
    /// Cross traffic, left out of the fairness metrics.
    Other,
}

/// How a flow's extra access delay varies from packet to packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JitterShape {
    /// Each packet draws its own delay, uniform up to the maximum, and waits
    /// behind the flow's previous packet: a flow sending faster than one
    /// packet per maximum jitter arrives in clumps, more so the faster it
    /// sends.
    #[default]
    PerPacket,
    /// The delay drifts linearly between values drawn uniformly up to the
    /// maximum every [`DRIFT_PERIODS`] maximum jitters: phases move, but no
    /// flow's spacing changes by more than 1 / [`DRIFT_PERIODS`], at any
    /// rate.
    Drift,
}

/// The shapes by the names scenario files and `--jitter-shape` use.
pub const JITTER_SHAPES: [(&str, JitterShape); 2] =
    [("drift", JitterShape::Drift), ("per-packet", JitterShape::PerPacket)];

impl JitterShape {
    /// The name scenario files and `--jitter-shape` use.
    pub fn name(&self) -> &'static str {
        flowshare_controllers::grammar::choice_name(&JITTER_SHAPES, *self)
    }

    /// The shape called `name`.
    pub fn from_name(name: &str) -> Option<JitterShape> {
        JITTER_SHAPES.iter().find(|(known, _)| *known == name).map(|(_, shape)| *shape)
    }
}

/// How many maximum jitters a drifting delay takes from one drawn value to
/// the next: its slope is at most 1 / this.
pub const DRIFT_PERIODS: u64 = 10;

/// The traffic a connection carries.
#[derive(Clone, Debug, PartialEq)]
pub enum Traffic {
    /// An endless stream; optionally a timed transfer of `segments` joins it
    /// at `at` and gets one packet in `share`.
    Bulk {
        /// The transfer that joins, if any.
        join: Option<Join>,
    },
    /// A transfer of `segments` packets; its completion time is recorded.
    Transfer {
        /// Size in packets.
        segments: u32,
    },
    /// Unresponsive constant bit rate, alternating `on` and `off` periods
    /// (exponentially distributed with these means) if given.
    Cbr {
        /// Rate while on, bit/s.
        rate_bps: f64,
        /// Mean on and off periods, seconds; always on if `None`.
        on_off: Option<(f64, f64)>,
    },
    /// Web-like: objects of Pareto-distributed size, each on a new
    /// connection, separated by exponentially distributed think times.
    Web {
        /// Mean object size, bytes.
        mean_object_bytes: f64,
        /// Pareto shape of the object sizes.
        pareto_shape: f64,
        /// Mean think time, seconds.
        mean_off_seconds: f64,
    },
}

/// A transfer joining a bulk connection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Join {
    /// When it joins.
    pub at: Nanos,
    /// Its size in packets.
    pub segments: u32,
    /// It gets one packet in this many.
    pub share: u32,
    /// The connection's weight while it lasts, if it changes.
    pub weight: Option<f64>,
}

/// One connection of a setup: a controller (none for CBR) on one path per
/// subflow.
#[derive(Clone, Debug)]
pub struct ConnectionSetup {
    /// Label in reports.
    pub label: String,
    /// The controller spec, for responsive traffic.
    pub cc: Option<Spec>,
    /// Role in the metrics.
    pub role: Role,
    /// Link indices of each subflow's path.
    pub paths: Vec<Vec<usize>>,
    /// One-way access delay added before the first link and on the way back.
    pub access_delay: Nanos,
    /// Up to this much extra access delay per packet, uniformly drawn.
    pub jitter: Nanos,
    /// How that delay varies from packet to packet.
    pub jitter_shape: JitterShape,
    /// Pace when the controller gives a pacing rate (the flow's `pacing`,
    /// else the scenario's).
    pub pacing: bool,
    /// When the connection starts.
    pub start: Nanos,
    /// When it stops sending new data.
    pub stop: Option<Nanos>,
    /// What it sends.
    pub traffic: Traffic,
}

/// A complete, validated description of one run.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Scenario name.
    pub name: String,
    /// Simulated time.
    pub duration: Nanos,
    /// Metrics ignore what happens before this.
    pub warmup: Nanos,
    /// Width of the throughput bins.
    pub bin: Nanos,
    /// Packet size on the wire, bytes.
    pub packet_bytes: u32,
    /// Receivers acknowledge every this many packets...
    pub ack_every: u32,
    /// ...or this long after the first unacknowledged one.
    pub max_ack_delay: Nanos,
    /// Connections starting at 0 start up to this much later.
    pub start_spread: Nanos,
    /// Links.
    pub links: Vec<LinkSpec>,
    /// Connections.
    pub connections: Vec<ConnectionSetup>,
}
