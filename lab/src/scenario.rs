//! Scenarios: the vocabulary experiments and TOML files describe runs in.
//!
//! ```toml
//! name = "two-reno"
//! duration_s = 60
//! warmup_s = 10
//!
//! [[link]]
//! name = "bottleneck"
//! rate_mbps = 20
//! delay_ms = 20
//! queue = "droptail"        # or "red"
//! buffer_bdp = 1.0          # or buffer_packets / buffer_bytes
//!
//! [[flow]]
//! cc = "reno"
//! count = 2
//! path = ["bottleneck"]
//! access_delay_ms = 1
//! jitter_ms = 0.5
//! ```
//!
//! Every key is checked: unknown keys, missing ones and values out of range
//! give an error naming the field (`flow[1].rate_mbps ...`); [`Scenario::resolve`]
//! turns a scenario into the [`crate::setup::Setup`] of a run.
//!
//! The built-in scenarios of the lab and the testbed are made with the
//! constructors below ([`Scenario::new`], [`Scenario::dumbbell`],
//! [`LinkConfig::bottleneck`], [`FlowConfig::bulk`] and their `with_*`
//! builders), which take the file format's defaults, so that each default
//! is written once: in the `default_*` functions serde reads too.

use serde::Deserialize;
use serde::Serialize;

use crate::setup::JitterShape;
use crate::setup::Role;

mod resolve;

/// A scenario as written in a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name used in reports.
    pub name: String,
    /// Simulated time, seconds.
    pub duration_s: f64,
    /// Time discarded from the metrics, seconds.
    #[serde(default)]
    pub warmup_s: f64,
    /// Packet size on the wire, bytes.
    #[serde(default = "default_packet_bytes")]
    pub packet_bytes: u32,
    /// Pace when the controller gives a rate.
    #[serde(default = "default_true")]
    pub pacing: bool,
    /// Receivers acknowledge every this many packets.
    #[serde(default = "default_ack_every")]
    pub ack_every: u32,
    /// ... or after this delay, ms.
    #[serde(default = "default_max_ack_delay_ms")]
    pub max_ack_delay_ms: f64,
    /// Throughput bin, seconds.
    #[serde(default = "default_bin_s")]
    pub bin_s: f64,
    /// Connections with `start_s = 0` start at a random time in
    /// `[0, start_spread_s)`, seconds, to avoid synchronised starts.
    #[serde(default)]
    pub start_spread_s: f64,
    /// Links.
    #[serde(rename = "link")]
    pub links: Vec<LinkConfig>,
    /// Flows.
    #[serde(rename = "flow")]
    pub flows: Vec<FlowConfig>,
}

/// A link as written in a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Name that paths refer to.
    pub name: String,
    /// Rate, Mbit/s.
    pub rate_mbps: f64,
    /// Propagation delay, ms.
    pub delay_ms: f64,
    /// `droptail` or `red`.
    #[serde(default = "default_queue")]
    pub queue: String,
    /// Buffer in packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_packets: Option<usize>,
    /// Buffer in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_bytes: Option<usize>,
    /// Buffer as a multiple of the bandwidth-delay product (packets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_bdp: Option<f64>,
    /// RTT the bandwidth-delay product uses, ms (default: twice the delay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bdp_rtt_ms: Option<f64>,
    /// Random loss probability per packet.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub random_loss: f64,
}

/// A flow (or `count` identical ones) as written in a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// Label in reports (default: the controller spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Controller spec; required unless `traffic = "cbr"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<String>,
    /// Number of identical connections.
    #[serde(default = "default_count")]
    pub count: usize,
    /// Link names on the path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
    /// One path per subflow, for multipath connections (instead of `path`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<Vec<String>>,
    /// One-way access delay, ms.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub access_delay_ms: f64,
    /// Up to this much extra access delay per packet, ms.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub jitter_ms: f64,
    /// How that delay varies: "per-packet" (default: each packet draws its
    /// own, so a fast flow arrives in clumps) or "drift" (a slowly moving
    /// delay that keeps every flow's spacing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_shape: Option<JitterShape>,
    /// Pace or not, for this flow only (default: the scenario's `pacing`),
    /// e.g. paced QUIC against unpaced TCP peers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing: Option<bool>,
    /// Start, seconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_s: f64,
    /// Stop sending new data, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_s: Option<f64>,
    /// `weighted`, `standard` or `other` (default: `standard` for reno,
    /// cubic and ctcp, `other` for cbr and web, `weighted` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// `bulk`, `transfer`, `cbr` or `web`.
    #[serde(default = "default_traffic")]
    pub traffic: String,
    /// Transfer size, bytes (`transfer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// CBR rate, Mbit/s (`cbr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_mbps: Option<f64>,
    /// Mean on period, seconds (`cbr` on/off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_s: Option<f64>,
    /// Mean off period, seconds (`cbr` on/off, `web` think time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_s: Option<f64>,
    /// Mean object size, bytes (`web`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_object_bytes: Option<f64>,
    /// Pareto shape of object sizes (`web`, default 1.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pareto_shape: Option<f64>,
    /// A transfer of this many bytes joins the bulk stream (`bulk`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_bytes: Option<u64>,
    /// ... at this time, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_at_s: Option<f64>,
    /// ... and gets one packet in this many (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_share: Option<u32>,
    /// ... while the connection's weight is this (a server's `weight =
    /// "streams"` raises N by one for each response); back to the spec's
    /// when the transfer completes. Default: unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_weight: Option<f64>,
}

fn default_packet_bytes() -> u32 {
    1500
}
fn default_true() -> bool {
    true
}
fn default_ack_every() -> u32 {
    2
}
fn default_max_ack_delay_ms() -> f64 {
    25.0
}
fn default_bin_s() -> f64 {
    0.1
}
fn default_queue() -> String {
    "droptail".into()
}
fn default_count() -> usize {
    1
}
fn default_traffic() -> String {
    "bulk".into()
}
fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

/// The link of a dumbbell, which its flows name in their paths.
pub const BOTTLENECK: &str = "bottleneck";

/// How long the lab's experiments spread the starts of the connections that
/// start with the run, seconds: simulated flows that start together would
/// take their first losses together.
pub const LAB_START_SPREAD_S: f64 = 2.0;

/// How long the testbed's built-ins spread those starts, seconds: their runs
/// are short (10 to 90 s) and real endpoints already start some
/// milliseconds apart.
pub const TESTBED_START_SPREAD_S: f64 = 1.0;

impl Scenario {
    /// A scenario over `links` without flows, with the file format's
    /// defaults for everything else. `start_spread_s` is
    /// [`LAB_START_SPREAD_S`], [`TESTBED_START_SPREAD_S`] or an experiment's
    /// own choice.
    pub fn new(name: &str, duration_s: f64, warmup_s: f64, start_spread_s: f64, links: Vec<LinkConfig>) -> Scenario {
        Scenario {
            name: name.into(),
            duration_s,
            warmup_s,
            packet_bytes: default_packet_bytes(),
            pacing: default_true(),
            ack_every: default_ack_every(),
            max_ack_delay_ms: default_max_ack_delay_ms(),
            bin_s: default_bin_s(),
            start_spread_s,
            links,
            flows: Vec::new(),
        }
    }

    /// A dumbbell: one link, `bottleneck` (see [`LinkConfig::bottleneck`]).
    pub fn dumbbell(
        name: &str,
        duration_s: f64,
        warmup_s: f64,
        start_spread_s: f64,
        bottleneck: LinkConfig,
    ) -> Scenario {
        Scenario::new(name, duration_s, warmup_s, start_spread_s, vec![bottleneck])
    }

    /// With `flow` added.
    pub fn with_flow(mut self, flow: FlowConfig) -> Scenario {
        self.flows.push(flow);
        self
    }

    /// With pacing on or off.
    pub fn with_pacing(mut self, pacing: bool) -> Scenario {
        self.pacing = pacing;
        self
    }
}

impl LinkConfig {
    /// A drop-tail link with a delay of half `rtt_ms` and a buffer of one
    /// bandwidth-delay product at `rtt_ms`.
    pub fn droptail_bdp(name: &str, rate_mbps: f64, rtt_ms: f64) -> LinkConfig {
        LinkConfig {
            name: name.into(),
            rate_mbps,
            delay_ms: rtt_ms / 2.0,
            queue: default_queue(),
            buffer_packets: None,
            buffer_bytes: None,
            buffer_bdp: Some(1.0),
            bdp_rtt_ms: Some(rtt_ms),
            random_loss: 0.0,
        }
    }

    /// The drop-tail BDP link of a dumbbell, named [`BOTTLENECK`].
    pub fn bottleneck(rate_mbps: f64, rtt_ms: f64) -> LinkConfig {
        LinkConfig::droptail_bdp(BOTTLENECK, rate_mbps, rtt_ms)
    }

    /// With the queue discipline `queue` (`droptail` or `red`).
    pub fn with_queue(mut self, queue: &str) -> LinkConfig {
        self.queue = queue.into();
        self
    }

    /// With a buffer of `packets` instead of a bandwidth-delay product.
    pub fn with_buffer_packets(mut self, packets: usize) -> LinkConfig {
        self.buffer_packets = Some(packets);
        self.buffer_bdp = None;
        self.bdp_rtt_ms = None;
        self
    }

    /// With a buffer of `multiple` bandwidth-delay products at `rtt_ms`.
    pub fn with_buffer_bdp(mut self, multiple: f64, rtt_ms: f64) -> LinkConfig {
        self.buffer_bdp = Some(multiple);
        self.bdp_rtt_ms = Some(rtt_ms);
        self
    }

    /// Dropping each packet with probability `loss`.
    pub fn with_random_loss(mut self, loss: f64) -> LinkConfig {
        self.random_loss = loss;
        self
    }
}

impl FlowConfig {
    /// `count` connections of `cc` over `path` that carry `traffic`.
    fn new(cc: Option<&str>, count: usize, path: &[&str], traffic: &str) -> FlowConfig {
        FlowConfig {
            label: None,
            cc: cc.map(str::to_string),
            count,
            path: path.iter().map(|link| link.to_string()).collect(),
            paths: Vec::new(),
            access_delay_ms: 0.0,
            jitter_ms: 0.0,
            jitter_shape: None,
            pacing: None,
            start_s: 0.0,
            stop_s: None,
            role: None,
            traffic: traffic.into(),
            bytes: None,
            rate_mbps: None,
            on_s: None,
            off_s: None,
            mean_object_bytes: None,
            pareto_shape: None,
            join_bytes: None,
            join_at_s: None,
            join_share: None,
            join_weight: None,
        }
    }

    /// `count` bulk connections of `cc` over `path`.
    pub fn bulk(cc: &str, count: usize, path: &[&str]) -> FlowConfig {
        FlowConfig::new(Some(cc), count, path, &default_traffic())
    }

    /// One bulk connection of `cc` with a subflow on each of `paths`.
    pub fn multipath(cc: &str, paths: &[&[&str]]) -> FlowConfig {
        let mut flow = FlowConfig::new(Some(cc), 1, &[], &default_traffic());
        flow.paths = paths.iter().map(|path| path.iter().map(|link| link.to_string()).collect()).collect();
        flow
    }

    /// One transfer of `bytes` with `cc` over `path`.
    pub fn transfer(cc: &str, bytes: u64, path: &[&str]) -> FlowConfig {
        let mut flow = FlowConfig::new(Some(cc), 1, path, "transfer");
        flow.bytes = Some(bytes);
        flow
    }

    /// A CBR source of `rate_mbps` over `path`, labelled `cbr`, outside the
    /// fairness metrics.
    pub fn cbr(rate_mbps: f64, path: &[&str]) -> FlowConfig {
        let mut flow = FlowConfig::new(None, 1, path, "cbr");
        flow.rate_mbps = Some(rate_mbps);
        flow.role = Some(Role::Other);
        flow.label = Some("cbr".into());
        flow
    }

    /// In `role` for the metrics.
    pub fn with_role(mut self, role: Role) -> FlowConfig {
        self.role = Some(role);
        self
    }

    /// Labelled `label` in reports.
    pub fn with_label(mut self, label: &str) -> FlowConfig {
        self.label = Some(label.into());
        self
    }

    /// With a one-way access delay and up to `jitter_ms` more per packet.
    pub fn with_access(mut self, delay_ms: f64, jitter_ms: f64) -> FlowConfig {
        self.access_delay_ms = delay_ms;
        self.jitter_ms = jitter_ms;
        self
    }

    /// With the access jitter varying as `shape` says.
    pub fn with_jitter_shape(mut self, shape: JitterShape) -> FlowConfig {
        self.jitter_shape = Some(shape);
        self
    }

    /// Starting at `start_s` and, if given, stopping at `stop_s`.
    pub fn with_times(mut self, start_s: f64, stop_s: Option<f64>) -> FlowConfig {
        self.start_s = start_s;
        self.stop_s = stop_s;
        self
    }

    /// With a transfer of `bytes` joining the bulk stream at `at_s` and
    /// getting one packet in `share`.
    /// With the connection's weight at `weight` while the joining transfer
    /// lasts.
    pub fn with_join_weight(mut self, weight: f64) -> FlowConfig {
        self.join_weight = Some(weight);
        self
    }

    /// With a transfer of `bytes` joining the stream at `at_s`, one packet
    /// in `share` of the connection's.
    pub fn with_join(mut self, bytes: u64, at_s: f64, share: u32) -> FlowConfig {
        self.join_bytes = Some(bytes);
        self.join_at_s = Some(at_s);
        self.join_share = Some(share);
        self
    }
}

/// A scenario that cannot be run: the field and what is wrong with it.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    /// Path of the field, e.g. `flow[2].cc`.
    pub field: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else if self.message.starts_with("= ") {
            // "link[0].rate_mbps = -1 is out of range ...", as written in the file.
            write!(f, "{} {}", self.field, self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

fn error(field: impl Into<String>, message: impl Into<String>) -> ScenarioError {
    ScenarioError { field: field.into(), message: message.into() }
}

impl Scenario {
    /// Parses a TOML scenario; errors name the offending key.
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        toml::from_str(text).map_err(|e| {
            let message = e.message().to_string();
            let location = e
                .span()
                .map(|span| {
                    let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                    format!("line {line}")
                })
                .unwrap_or_default();
            error(location, message)
        })
    }

    /// The scenario as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_else(|e| format!("# scenario could not be written: {e}\n"))
    }
}
