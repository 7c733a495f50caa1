//! Testbed scenarios: the lab's scenario vocabulary plus the few keys only
//! real endpoints need, and their translation into a [`Plan`] of
//! processes, ports and addresses.
//!
//! A testbed scenario file is a lab scenario file (see
//! [`flowshare_lab::scenario`]) with two optional extra keys:
//!
//! ```toml
//! [[link]]
//! name = "bottleneck"
//! rate_mbps = 10
//! delay_ms = 15
//! buffer_packets = 25
//! blackhole = [[10.0, 12.0]]   # testbed only: drop everything in [10 s, 12 s)
//!
//! [[flow]]
//! cc = "cubic"
//! transport = "tcp"            # testbed only: Linux kernel TCP (iperf3); default "quic"
//! path = ["bottleneck"]
//! ```
//!
//! `flowshare lab` and `flowshare compare` read the same file with these
//! keys removed. What the testbed cannot emulate (paths of several links,
//! access delays, web traffic, joining transfers) is refused with the
//! field named; what real endpoints decide for themselves (pacing, ACK
//! frequency, packet size) is ignored and said so. The flows' access
//! jitter (`jitter_ms`, `jitter_shape`) is ns-3's, one setting for every
//! flow of a run ([`Plan::access_jitter`]).

use std::fmt::Write as _;

use flowshare_controllers::Spec;
use flowshare_lab::rng::Rng;
use flowshare_lab::scenario::Scenario;
use flowshare_lab::setup::Discipline;
use flowshare_lab::setup::Limit;
use flowshare_lab::setup::Role;
use flowshare_lab::setup::Setup;
use flowshare_lab::setup::Traffic;

use crate::emulator::AccessJitter;
use crate::emulator::CbrSetup;
use crate::emulator::EmulatorSetup;
use crate::emulator::LinkSetup;
use crate::netns;

/// The most bottlenecks the topology has (one veth pair and ns-3 node each).
pub const MAX_LINKS: usize = 4;
/// The most connections one run starts (each is one or two processes on a
/// two-core machine).
pub const MAX_CONNECTIONS: usize = 24;
/// Above this rate ns-3 falls behind real time on two cores
/// (shared/design/testbed.md).
pub const REAL_TIME_LIMIT_MBPS: f64 = 200.0;

/// First port of each kind of flow; flow `k` uses base + k.
const TCP_PORT_BASE: u16 = 21000;
const QUIC_PORT_BASE: u16 = 22000;
const CBR_PORT_BASE: u16 = 23000;

/// How a flow's packets are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// quiche connections (`flowshare serve` / `flowshare get`).
    Quic,
    /// Linux kernel TCP (iperf3).
    Tcp,
}

impl Transport {
    /// The name used in files and tables.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Quic => "quic",
            Transport::Tcp => "tcp",
        }
    }
}

/// A lab scenario plus the testbed's keys.
#[derive(Clone, Debug, PartialEq)]
pub struct TestbedScenario {
    /// The scenario as the lab reads it.
    pub scenario: Scenario,
    /// Transport of each `[[flow]]` entry.
    pub transports: Vec<Transport>,
    /// Blackhole periods `[start, end)` of each `[[link]]`, seconds.
    pub blackholes: Vec<Vec<(f64, f64)>>,
    /// Whether Linux TCP senders pace (`tcp_pacing = true`: an `fq` qdisc
    /// on the server namespace's interface). Linux paces CUBIC and Reno only
    /// under `fq`, so by default its TCP peers send in bursts, as most
    /// servers do; QUIC senders always pace themselves.
    pub tcp_pacing: bool,
    /// Microseconds that Linux TCP's packets from the server wait in ns-3
    /// before they join the bottleneck queue (`tcp_send_delay_us`; 0: none;
    /// drop-tail bottlenecks only). The experiment behind it: QUIC senders
    /// answer an acknowledgement about 90 µs later than Linux TCP does;
    /// does that lag alone cost them share against Linux TCP?
    /// (testbed/README.md, "Weight one between stacks").
    pub tcp_send_delay_us: u32,
    /// The QUIC servers' pacing slack, µs (`quic_pacing_slack_us`; none:
    /// `flowshare serve`'s default of 100 µs): packets due within it of a
    /// send leave with it, so gaps below it do not reach the bottleneck.
    /// The experiment behind it: does `pacing=split` hold its weight once
    /// its pairs leave as far apart as it spaces them?
    pub quic_pacing_slack_us: Option<u32>,
}

/// Largest `quic_pacing_slack_us` accepted: `flowshare serve`'s limit
/// (`flowshare_quic::pacing::MAX_PACING_SLACK`, written again here because
/// the testbed does not link quiche; `flowshare serve` refuses more anyway).
const MAX_QUIC_PACING_SLACK_US: i64 = 1_000;

/// Longest `tcp_send_delay_us` accepted, 10 ms: far beyond any sender's
/// answer delay (the traced ones are 0.1-0.3 ms).
const MAX_TCP_SEND_DELAY_US: i64 = 10_000;

fn take_array(table: &mut toml::Table, key: &str) -> Vec<toml::Value> {
    match table.remove(key) {
        Some(toml::Value::Array(items)) => items,
        Some(other) => vec![other],
        None => Vec::new(),
    }
}

impl TestbedScenario {
    /// The warm-up, seconds, of the run whose directory is `dir` (from the
    /// `scenario.toml` it keeps; none there, 0): what the analyses of a
    /// run's traces and qlogs leave out.
    pub fn warmup_of_run(dir: &std::path::Path) -> Result<f64, String> {
        let path = dir.join("scenario.toml");
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                Ok(TestbedScenario::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))?.scenario.warmup_s)
            }
            Err(_) => Ok(0.0),
        }
    }

    /// A scenario without testbed keys: every flow over QUIC.
    pub fn from_lab(scenario: Scenario) -> TestbedScenario {
        let transports = vec![Transport::Quic; scenario.flows.len()];
        TestbedScenario::with_transports(scenario, transports)
    }

    /// A scenario whose flows run over `transports`, without blackholes,
    /// TCP unpaced.
    pub fn with_transports(scenario: Scenario, transports: Vec<Transport>) -> TestbedScenario {
        let blackholes = vec![Vec::new(); scenario.links.len()];
        TestbedScenario {
            scenario,
            transports,
            blackholes,
            tcp_pacing: false,
            tcp_send_delay_us: 0,
            quic_pacing_slack_us: None,
        }
    }

    /// Parses a scenario file; errors name the field.
    pub fn from_toml(text: &str) -> Result<TestbedScenario, String> {
        let mut table: toml::Table = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
            match line {
                Some(line) => format!("line {line}: {}", e.message()),
                None => e.message().to_string(),
            }
        })?;
        let tcp_pacing = match table.remove("tcp_pacing") {
            None => false,
            Some(toml::Value::Boolean(pacing)) => pacing,
            Some(other) => return Err(format!("tcp_pacing = {other} is not true or false")),
        };
        let tcp_send_delay_us = match table.remove("tcp_send_delay_us") {
            None => 0,
            Some(toml::Value::Integer(delay)) if (0..=MAX_TCP_SEND_DELAY_US).contains(&delay) => delay as u32,
            Some(other) => {
                return Err(format!(
                "tcp_send_delay_us = {other} is not a whole number of microseconds from 0 to {MAX_TCP_SEND_DELAY_US}"
            ))
            }
        };
        let quic_pacing_slack_us = match table.remove("quic_pacing_slack_us") {
            None => None,
            Some(toml::Value::Integer(slack)) if (0..=MAX_QUIC_PACING_SLACK_US).contains(&slack) => Some(slack as u32),
            Some(other) => {
                return Err(format!(
                    "quic_pacing_slack_us = {other} is not a whole number of microseconds from 0 to {MAX_QUIC_PACING_SLACK_US}"
                ))
            }
        };
        let mut transports = Vec::new();
        let mut flows = take_array(&mut table, "flow");
        for (i, flow) in flows.iter_mut().enumerate() {
            let transport = match flow.as_table_mut().and_then(|t| t.remove("transport")) {
                None => Transport::Quic,
                Some(toml::Value::String(name)) if name == "quic" => Transport::Quic,
                Some(toml::Value::String(name)) if name == "tcp" => Transport::Tcp,
                Some(other) => {
                    return Err(format!(
                        "flow[{i}].transport = {other} is not a transport (accepted: \"quic\", \"tcp\")"
                    ))
                }
            };
            transports.push(transport);
        }
        let mut blackholes = Vec::new();
        let mut links = take_array(&mut table, "link");
        for (i, link) in links.iter_mut().enumerate() {
            let periods = match link.as_table_mut().and_then(|t| t.remove("blackhole")) {
                None => Vec::new(),
                Some(value) => parse_periods(&value).map_err(|message| format!("link[{i}].blackhole: {message}"))?,
            };
            blackholes.push(periods);
        }
        if !flows.is_empty() {
            table.insert("flow".into(), toml::Value::Array(flows));
        }
        if !links.is_empty() {
            table.insert("link".into(), toml::Value::Array(links));
        }
        let scenario: Scenario =
            toml::Value::Table(table).try_into().map_err(|e: toml::de::Error| e.message().to_string())?;
        Ok(TestbedScenario { scenario, transports, blackholes, tcp_pacing, tcp_send_delay_us, quic_pacing_slack_us })
    }

    /// The scenario as a file, testbed keys included.
    pub fn to_toml(&self) -> String {
        let Ok(mut table) = toml::from_str::<toml::Table>(&self.scenario.to_toml()) else {
            return self.scenario.to_toml();
        };
        if self.tcp_pacing {
            table.insert("tcp_pacing".into(), true.into());
        }
        if self.tcp_send_delay_us > 0 {
            table.insert("tcp_send_delay_us".into(), i64::from(self.tcp_send_delay_us).into());
        }
        if let Some(slack) = self.quic_pacing_slack_us {
            table.insert("quic_pacing_slack_us".into(), i64::from(slack).into());
        }
        if let Some(toml::Value::Array(flows)) = table.get_mut("flow") {
            for (flow, transport) in flows.iter_mut().zip(&self.transports) {
                if let (Some(flow), Transport::Tcp) = (flow.as_table_mut(), transport) {
                    flow.insert("transport".into(), "tcp".into());
                }
            }
        }
        if let Some(toml::Value::Array(links)) = table.get_mut("link") {
            for (link, periods) in links.iter_mut().zip(&self.blackholes) {
                if let (Some(link), false) = (link.as_table_mut(), periods.is_empty()) {
                    let periods = periods.iter().map(|&(a, b)| toml::Value::Array(vec![a.into(), b.into()])).collect();
                    link.insert("blackhole".into(), toml::Value::Array(periods));
                }
            }
        }
        toml::to_string(&table).unwrap_or_else(|_| self.scenario.to_toml())
    }

    /// Validates the scenario for the testbed and lays it out; `notes`
    /// collects what is ignored.
    pub fn plan(&self, seed: u64, notes: &mut String) -> Result<Plan, String> {
        let setup = self.scenario.resolve_for_hosts().map_err(|e| e.to_string())?;
        let scenario = &self.scenario;
        if self.transports.len() != scenario.flows.len() || self.blackholes.len() != scenario.links.len() {
            return Err("the testbed keys do not match the scenario's flows and links".into());
        }
        if setup.links.len() > MAX_LINKS {
            return Err(format!(
                "link: the testbed emulates at most {MAX_LINKS} links, the scenario has {}",
                setup.links.len()
            ));
        }
        if setup.connections.len() > MAX_CONNECTIONS {
            return Err(format!(
                "flow: the testbed runs at most {MAX_CONNECTIONS} connections on this machine, the scenario has {}",
                setup.connections.len()
            ));
        }
        let mut links = Vec::new();
        for (i, link) in setup.links.iter().enumerate() {
            let queue_packets = match link.limit {
                Limit::Packets(packets) => packets,
                Limit::Bytes(bytes) => bytes.div_ceil(scenario.packet_bytes as usize).max(1),
            };
            if link.rate_bps > REAL_TIME_LIMIT_MBPS * 1e6 {
                let _ = writeln!(
                    notes,
                    "warning: link[{i}] at {} Mbit/s is above what ns-3 keeps in real time on two cores (~{REAL_TIME_LIMIT_MBPS} Mbit/s); check the lag figures",
                    link.rate_bps / 1e6
                );
            }
            for &(start, end) in &self.blackholes[i] {
                if !(0.0..=setup.duration as f64 * 1e-9).contains(&start) || end <= start {
                    return Err(format!("link[{i}].blackhole: [{start}, {end}] must satisfy 0 <= start < end"));
                }
            }
            links.push(LinkSetup {
                rate_bps: link.rate_bps,
                delay_s: link.delay as f64 * 1e-9,
                queue_packets,
                red: link.discipline == Discipline::Red,
                loss: link.random_loss,
            });
        }

        // Connection k comes from the [[flow]] entry whose counts cover k.
        let mut entries = Vec::new();
        for (i, flow) in scenario.flows.iter().enumerate() {
            entries.extend(std::iter::repeat_n(i, flow.count));
        }
        for (i, flow) in scenario.flows.iter().enumerate() {
            let field = |name: &str| format!("flow[{i}].{name}");
            if flow.access_delay_ms != 0.0 {
                return Err(format!(
                    "{} = {} is not supported by the testbed (every path's delay is its link's); set it to 0",
                    field("access_delay_ms"),
                    flow.access_delay_ms
                ));
            }
            if flow.join_bytes.is_some() {
                return Err(format!("{}: joining transfers are not supported by the testbed", field("join_bytes")));
            }
        }
        let access_jitter = access_jitter(&setup)?;
        if scenario.flows.iter().any(|flow| flow.pacing.is_some()) {
            let _ = writeln!(
                notes,
                "note: a flow's pacing is ignored: quiche paces, Linux TCP does when tcp_pacing = true"
            );
        }
        let _ = writeln!(
            notes,
            "note: pacing, max_ack_delay_ms and packet_bytes are the endpoints' own in the testbed (quiche, Linux); ack_every is the QUIC clients' (Linux TCP receivers acknowledge every second segment)"
        );

        let mut rng = Rng::new(seed);
        let mut clients_per_link = vec![1; links.len()];
        let duration = setup.duration as f64 * 1e-9;
        let mut flows = Vec::new();
        for (k, connection) in setup.connections.iter().enumerate() {
            let entry = entries[k];
            let transport = self.transports[entry];
            let field = |name: &str| format!("flow[{entry}].{name}");
            let mut subflows = Vec::new();
            for path in &connection.paths {
                if path.len() != 1 {
                    return Err(format!(
                        "{}: the testbed emulates each path as one bottleneck; give one link per path",
                        field("path")
                    ));
                }
                let link = path[0];
                let index = subflows.iter().filter(|s: &&Subflow| s.link == link).count();
                clients_per_link[link] = clients_per_link[link].max(index + 1);
                subflows.push(Subflow { link, client_address: netns::client_address(link, index) });
            }
            let spread = rng.below(setup.start_spread as f64 * 1e-9);
            let mut start_s = connection.start as f64 * 1e-9 + spread;
            let stop_s = connection.stop.map_or(duration, |stop| (stop as f64 * 1e-9).min(duration));
            if transport == Transport::Tcp && matches!(connection.traffic, Traffic::Bulk { .. }) {
                // iperf3 runs for whole seconds: start up to a second later
                // so that it stops when the flow should.
                start_s = stop_s - (stop_s - start_s).floor().max(1.0);
            }
            let kind = match (&connection.traffic, &connection.cc, transport) {
                (Traffic::Cbr { rate_bps, on_off }, _, _) => {
                    FlowKind::Cbr { rate_bps: *rate_bps, on_off: *on_off, port: CBR_PORT_BASE + k as u16 }
                }
                (Traffic::Web { .. }, _, _) => {
                    return Err(format!("{}: web traffic is not supported by the testbed", field("traffic")))
                }
                (_, Some(spec), Transport::Tcp) => {
                    if spec.standard().is_none() {
                        return Err(format!("{}: Linux TCP peers run reno or cubic, not {spec}", field("cc")));
                    }
                    if subflows.len() != 1 {
                        return Err(format!("{}: TCP peers are single-path", field("paths")));
                    }
                    FlowKind::Tcp { cc: spec.name(), port: TCP_PORT_BASE + k as u16 }
                }
                (_, Some(spec), Transport::Quic) => {
                    FlowKind::Quic { spec: spec.clone(), port: QUIC_PORT_BASE + k as u16 }
                }
                (_, None, _) => return Err(format!("{}: is required", field("cc"))),
            };
            let bytes = match connection.traffic {
                Traffic::Transfer { segments } => Some(segments as u64 * scenario.packet_bytes as u64),
                _ => None,
            };
            let label = match (&scenario.flows[entry].label, &kind) {
                (None, FlowKind::Tcp { cc, .. }) => format!("linux-{cc}"),
                _ => connection.label.clone(),
            };
            flows.push(FlowPlan {
                id: k,
                label,
                role: connection.role,
                cc: connection.cc.as_ref().map_or_else(|| "cbr".to_string(), Spec::to_string),
                weight: connection.cc.as_ref().map_or(0.0, Spec::weight),
                kind,
                subflows,
                start_s,
                stop_s,
                bytes,
            });
        }
        Ok(Plan {
            setup,
            links,
            blackholes: self.blackholes.clone(),
            flows,
            clients_per_link,
            seed,
            tcp_pacing: self.tcp_pacing,
            tcp_send_delay_us: self.tcp_send_delay_us,
            access_jitter,
            quic_pacing_slack_us: self.quic_pacing_slack_us,
        })
    }
}

/// The access jitter ns-3 gives every connection's packets before the
/// bottleneck queue ([`Plan::access_jitter`]): the connections' `jitter_ms`
/// and `jitter_shape`, which must agree (one setting per run), none where
/// it is 0.
fn access_jitter(setup: &Setup) -> Result<Option<AccessJitter>, String> {
    let Some(first) = setup.connections.first() else {
        return Ok(None);
    };
    for (k, connection) in setup.connections.iter().enumerate() {
        if connection.jitter != first.jitter || (first.jitter > 0 && connection.jitter_shape != first.jitter_shape) {
            return Err(format!(
                "flow: connection {k} ({}) has an access jitter of {} ms ({}) where connection 0 has {} ms ({}): the testbed gives every flow the same jitter",
                connection.label,
                connection.jitter as f64 * 1e-6,
                connection.jitter_shape.name(),
                first.jitter as f64 * 1e-6,
                first.jitter_shape.name()
            ));
        }
    }
    Ok((first.jitter > 0).then_some(AccessJitter { max_us: first.jitter.div_ceil(1_000), shape: first.jitter_shape }))
}

fn parse_periods(value: &toml::Value) -> Result<Vec<(f64, f64)>, String> {
    let number = |v: &toml::Value| v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
    let items = value.as_array().ok_or("must be a list of [start_s, end_s] pairs")?;
    items
        .iter()
        .map(|item| match item.as_array().map(|pair| pair.iter().map(number).collect::<Vec<_>>()) {
            Some(pair) if pair.len() == 2 && pair.iter().all(Option::is_some) => {
                Ok((pair[0].unwrap_or_default(), pair[1].unwrap_or_default()))
            }
            _ => Err(format!("{item} is not a [start_s, end_s] pair")),
        })
        .collect()
}

/// A subflow's way through the topology.
#[derive(Clone, Debug, PartialEq)]
pub struct Subflow {
    /// The bottleneck it crosses.
    pub link: usize,
    /// The client address it uses (which selects the link).
    pub client_address: String,
}

/// What a flow runs.
#[derive(Clone, Debug, PartialEq)]
pub enum FlowKind {
    /// A quiche connection: `flowshare serve --cc SPEC` sends to
    /// `flowshare get`.
    Quic {
        /// The sender's controller.
        spec: Spec,
        /// The server's UDP port.
        port: u16,
    },
    /// Linux TCP: iperf3 in the server namespace sends to iperf3 in the
    /// client namespace.
    Tcp {
        /// `reno` or `cubic`.
        cc: &'static str,
        /// The receiver's TCP port.
        port: u16,
    },
    /// Constant bit rate UDP made inside ns-3.
    Cbr {
        /// Rate while on, bit/s.
        rate_bps: f64,
        /// Mean on and off periods, seconds (always on if `None`).
        on_off: Option<(f64, f64)>,
        /// Destination port.
        port: u16,
    },
}

/// One connection of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowPlan {
    /// Index, as in the lab's reports.
    pub id: usize,
    /// Label in reports.
    pub label: String,
    /// Role in the fairness metrics.
    pub role: Role,
    /// Controller spec (`cbr` for CBR).
    pub cc: String,
    /// Flowshares.
    pub weight: f64,
    /// What runs.
    pub kind: FlowKind,
    /// One per subflow.
    pub subflows: Vec<Subflow>,
    /// Start, seconds after the run's origin.
    pub start_s: f64,
    /// When it stops sending (bulk and CBR), seconds.
    pub stop_s: f64,
    /// Size of a finite transfer.
    pub bytes: Option<u64>,
}

impl FlowPlan {
    /// The transport name for reports.
    pub fn transport(&self) -> &'static str {
        match self.kind {
            FlowKind::Quic { .. } => "quic",
            FlowKind::Tcp { .. } => "tcp",
            FlowKind::Cbr { .. } => "udp-cbr",
        }
    }

    /// Whether a row of the ns-3 series belongs to this flow: QUIC by the
    /// server's port, TCP and CBR by the receiver's.
    pub fn owns(&self, protocol: u8, source_port: u16, destination_port: u16) -> bool {
        match self.kind {
            FlowKind::Quic { port, .. } => protocol == 17 && source_port == port,
            FlowKind::Tcp { port, .. } => protocol == 6 && destination_port == port,
            FlowKind::Cbr { port, .. } => protocol == 17 && destination_port == port,
        }
    }
}

/// A scenario laid out for the testbed.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The lab's resolved setup (names, duration, warm-up, bins).
    pub setup: Setup,
    /// The emulated links.
    pub links: Vec<LinkSetup>,
    /// Blackhole periods per link.
    pub blackholes: Vec<Vec<(f64, f64)>>,
    /// The connections.
    pub flows: Vec<FlowPlan>,
    /// Client addresses needed on each link.
    pub clients_per_link: Vec<usize>,
    /// Seed of the run (start spread, CBR on/off, ns-3's random loss).
    pub seed: u64,
    /// Whether Linux TCP senders pace (an `fq` qdisc in the server
    /// namespace).
    pub tcp_pacing: bool,
    /// Delay of Linux TCP's packets before the bottleneck queue, µs.
    pub tcp_send_delay_us: u32,
    /// Every flow's access jitter before the bottleneck queue; none: its
    /// packets join as they reach ns-3.
    pub access_jitter: Option<AccessJitter>,
    /// The QUIC servers' pacing slack, µs; none: their default.
    pub quic_pacing_slack_us: Option<u32>,
}

impl Plan {
    /// Duration, seconds.
    pub fn duration_s(&self) -> f64 {
        self.setup.duration as f64 * 1e-9
    }

    /// What ns-3 is started with.
    pub fn emulator_setup(&self, hard_limit_ms: f64, pcap: bool) -> EmulatorSetup {
        let cbr = self
            .flows
            .iter()
            .filter_map(|flow| match flow.kind {
                FlowKind::Cbr { rate_bps, port, .. } => {
                    Some(CbrSetup { port, rate_bps, link: flow.subflows.first().map_or(0, |s| s.link) })
                }
                _ => None,
            })
            .collect();
        EmulatorSetup {
            links: self.links.clone(),
            cbr,
            interval_s: self.setup.bin as f64 * 1e-9,
            seed: self.seed,
            hard_limit_ms,
            pcap,
            tcp_send_delay_us: self.tcp_send_delay_us,
            access_jitter: self.access_jitter,
        }
    }

    /// Whether any flow needs the `flowshare` QUIC endpoints.
    pub fn needs_quic(&self) -> bool {
        self.flows.iter().any(|flow| matches!(flow.kind, FlowKind::Quic { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowshare_lab::setup::JitterShape;

    const CROSS: &str = r#"
name = "cross"
duration_s = 20
warmup_s = 5

[[link]]
name = "bottleneck"
rate_mbps = 10
delay_ms = 15
buffer_packets = 25
blackhole = [[8, 9.5]]

[[flow]]
cc = "multcp:n=2"
path = ["bottleneck"]

[[flow]]
cc = "cubic"
transport = "tcp"
path = ["bottleneck"]
"#;

    fn plan(text: &str) -> Result<Plan, String> {
        TestbedScenario::from_toml(text)?.plan(1, &mut String::new())
    }

    #[test]
    fn testbed_keys_are_read_and_the_rest_is_the_lab_scenario() {
        let scenario = TestbedScenario::from_toml(CROSS).unwrap();
        assert_eq!(scenario.transports, vec![Transport::Quic, Transport::Tcp]);
        assert_eq!(scenario.blackholes, vec![vec![(8.0, 9.5)]]);
        assert_eq!(scenario.scenario.links[0].buffer_packets, Some(25));
        assert_eq!(TestbedScenario::from_toml(&scenario.to_toml()).unwrap(), scenario);
    }

    #[test]
    fn tcp_pacing_is_read_planned_and_written_back() {
        assert!(!plan(CROSS).unwrap().tcp_pacing);
        let paced = TestbedScenario::from_toml(&format!("tcp_pacing = true\n{CROSS}")).unwrap();
        assert!(paced.tcp_pacing && paced.plan(1, &mut String::new()).unwrap().tcp_pacing);
        assert_eq!(TestbedScenario::from_toml(&paced.to_toml()).unwrap(), paced);
        let error = TestbedScenario::from_toml(&format!("tcp_pacing = 1\n{CROSS}")).unwrap_err();
        assert_eq!(error, "tcp_pacing = 1 is not true or false");
    }

    #[test]
    fn tcp_send_delay_is_read_planned_written_back_and_bounded() {
        assert_eq!(plan(CROSS).unwrap().tcp_send_delay_us, 0);
        let delayed = TestbedScenario::from_toml(&format!("tcp_send_delay_us = 90\n{CROSS}")).unwrap();
        assert_eq!(delayed.plan(1, &mut String::new()).unwrap().tcp_send_delay_us, 90);
        assert_eq!(TestbedScenario::from_toml(&delayed.to_toml()).unwrap(), delayed);
        for bad in ["-1", "10001", "0.5", "\"90us\""] {
            let error = TestbedScenario::from_toml(&format!("tcp_send_delay_us = {bad}\n{CROSS}")).unwrap_err();
            assert!(error.starts_with(&format!("tcp_send_delay_us = {bad} is not")), "{error}");
        }
        // The access stage stands in front of RED as of a FIFO.
        let red = TestbedScenario::from_toml(&format!(
            "tcp_send_delay_us = 90\n{}",
            CROSS.replace("buffer_packets = 25", "buffer_packets = 25\nqueue = \"red\"")
        ));
        assert_eq!(red.unwrap().plan(1, &mut String::new()).unwrap().tcp_send_delay_us, 90);
        assert_eq!(delayed.plan(1, &mut String::new()).unwrap().emulator_setup(0.0, false).tcp_send_delay_us, 90);
    }

    #[test]
    fn every_flows_access_jitter_reaches_ns3_and_the_flows_must_agree_on_it() {
        assert_eq!(plan(CROSS).unwrap().access_jitter, None);
        let jittered = |first: &str, second: &str| {
            let text = CROSS
                .replacen("path = [\"bottleneck\"]", &format!("path = [\"bottleneck\"]\n{first}"), 1)
                .replace("transport = \"tcp\"", &format!("transport = \"tcp\"\n{second}"));
            plan(&text)
        };
        let drift = "jitter_ms = 1.5\njitter_shape = \"drift\"";
        let plan = jittered(drift, drift).unwrap();
        assert_eq!(plan.access_jitter, Some(AccessJitter { max_us: 1_500, shape: JitterShape::Drift }));
        assert_eq!(plan.emulator_setup(0.0, false).access_jitter, plan.access_jitter);
        // The lab's default shape is drawn per packet.
        let per_packet = jittered("jitter_ms = 1", "jitter_ms = 1").unwrap().access_jitter;
        assert_eq!(per_packet, Some(AccessJitter { max_us: 1_000, shape: JitterShape::PerPacket }));
        let error = jittered(drift, "jitter_ms = 1.5").unwrap_err();
        assert_eq!(
            error,
            "flow: connection 1 (cubic) has an access jitter of 1.5 ms (per-packet) where connection 0 has 1.5 ms (drift): the testbed gives every flow the same jitter"
        );
        assert!(jittered(drift, "").unwrap_err().contains("connection 1 (cubic) has an access jitter of 0 ms"));
    }

    #[test]
    fn the_quic_pacing_slack_is_read_planned_written_back_and_bounded() {
        assert_eq!(plan(CROSS).unwrap().quic_pacing_slack_us, None);
        let tight = TestbedScenario::from_toml(&format!("quic_pacing_slack_us = 10\n{CROSS}")).unwrap();
        assert_eq!(tight.plan(1, &mut String::new()).unwrap().quic_pacing_slack_us, Some(10));
        assert_eq!(TestbedScenario::from_toml(&tight.to_toml()).unwrap(), tight);
        for bad in ["-1", "1001", "0.5", "\"10us\""] {
            let error = TestbedScenario::from_toml(&format!("quic_pacing_slack_us = {bad}\n{CROSS}")).unwrap_err();
            assert!(error.starts_with(&format!("quic_pacing_slack_us = {bad} is not")), "{error}");
        }
    }

    #[test]
    fn the_shipped_answer_delay_scenario_delays_linux_tcp_behind_one_weight_one_quic_flow() {
        let files = shipped_scenarios("answer-delay-");
        assert_eq!(files.len(), 1, "{files:?}");
        let plan = plan(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
        assert_eq!(plan.tcp_send_delay_us, 90);
        let kinds: Vec<_> = plan.flows.iter().map(|flow| (flow.role, flow.weight, &flow.kind)).collect();
        assert!(matches!(kinds[0], (Role::Weighted, 1.0, FlowKind::Quic { .. })), "{kinds:?}");
        assert!(kinds[1..].iter().all(|kind| matches!(kind, (Role::Standard, _, FlowKind::Tcp { cc: "cubic", .. }))));
        assert_eq!(kinds.len(), 5);
    }

    #[test]
    fn the_shipped_burst_split_scenario_splits_one_weight_one_quic_flow_against_linux_tcp() {
        let files = shipped_scenarios("burst-split-");
        assert_eq!(files.len(), 1, "{files:?}");
        let plan = plan(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
        let split: Spec = "pa-multcp:n=1,pacing=split,split=12".parse().unwrap();
        assert!(
            matches!(&plan.flows[0].kind, FlowKind::Quic { spec, .. } if *spec == split),
            "{:?}",
            plan.flows[0].kind
        );
        assert_eq!(plan.flows[0].role, Role::Weighted);
        assert!(plan.flows[1..]
            .iter()
            .all(|flow| flow.role == Role::Standard && matches!(flow.kind, FlowKind::Tcp { cc: "cubic", .. })));
        assert_eq!(plan.flows.len(), 5);
    }

    #[test]
    fn flows_get_ports_links_and_labels_by_transport() {
        let plan = plan(CROSS).unwrap();
        assert_eq!(plan.flows.len(), 2);
        assert_eq!(plan.flows[0].kind, FlowKind::Quic { spec: "multcp:n=2".parse().unwrap(), port: QUIC_PORT_BASE });
        assert_eq!(plan.flows[1].kind, FlowKind::Tcp { cc: "cubic", port: TCP_PORT_BASE + 1 });
        assert_eq!(plan.flows[1].label, "linux-cubic");
        assert_eq!(plan.flows[1].role, Role::Standard);
        assert_eq!(plan.flows[0].weight, 2.0);
        assert_eq!(plan.links[0].queue_packets, 25);
        // QUIC rows are the server's (source) port, TCP rows the receiver's.
        assert!(plan.flows[0].owns(17, QUIC_PORT_BASE, 40000));
        assert!(!plan.flows[0].owns(6, QUIC_PORT_BASE, 40000));
        assert!(plan.flows[1].owns(6, 50000, TCP_PORT_BASE + 1));
    }

    #[test]
    fn subflows_on_one_link_get_distinct_client_addresses() {
        let text = r#"
name = "mp"
duration_s = 10
[[link]]
name = "a"
rate_mbps = 10
delay_ms = 10
buffer_bdp = 1
[[link]]
name = "b"
rate_mbps = 10
delay_ms = 10
buffer_bdp = 1
[[flow]]
cc = "mcompound:group=1"
paths = [["a"], ["b"]]
[[flow]]
cc = "mcompound:group=2"
paths = [["a"], ["a"]]
"#;
        let plan = plan(text).unwrap();
        let addresses = |k: usize| plan.flows[k].subflows.iter().map(|s| s.client_address.clone()).collect::<Vec<_>>();
        assert_eq!(addresses(0), ["198.18.0.100", "198.18.1.100"]);
        assert_eq!(addresses(1), ["198.18.0.100", "198.18.0.101"]);
        assert_eq!(plan.clients_per_link, vec![2, 1]);
    }

    #[test]
    fn what_the_testbed_cannot_emulate_is_refused_with_the_field() {
        let error = plan(&CROSS.replace("cc = \"cubic\"", "cc = \"multcp:n=2\"")).unwrap_err();
        assert_eq!(error, "flow[1].cc: Linux TCP peers run reno or cubic, not multcp:n=2");
        let error = plan(&CROSS.replace(
            "path = [\"bottleneck\"]\n\n[[flow]]",
            "path = [\"bottleneck\"]\naccess_delay_ms = 2\n\n[[flow]]",
        ))
        .unwrap_err();
        assert!(error.starts_with("flow[0].access_delay_ms = 2 is not supported"), "{error}");
        let error =
            TestbedScenario::from_toml(&CROSS.replace("transport = \"tcp\"", "transport = \"sctp\"")).unwrap_err();
        assert_eq!(error, "flow[1].transport = \"sctp\" is not a transport (accepted: \"quic\", \"tcp\")");
        let error = TestbedScenario::from_toml(&CROSS.replace("[[8, 9.5]]", "[8]")).unwrap_err();
        assert!(error.starts_with("link[0].blackhole:"), "{error}");
    }

    #[test]
    fn the_shipped_control_scenarios_plan_and_run_what_their_names_say() {
        // testbed/README.md's calibration table is measured with these files.
        let files = shipped_scenarios("control-");
        assert_eq!(files.len(), 8, "{files:?}");
        let implementation = |cc: &str| match cc {
            "cubic" => "quiche-cubic",
            "reno" => "quiche-reno",
            "mulcubic:n=1" => "flowshare-cubic",
            "multcp:n=1" => "flowshare-reno",
            other => panic!("a control runs weight-one flows only, not {other}"),
        };
        for file in files {
            let plan = plan(&std::fs::read_to_string(&file).unwrap()).unwrap_or_else(|e| panic!("{file:?}: {e}"));
            assert_eq!(plan.flows.len(), 3, "{file:?}");
            assert!(plan.flows.iter().all(|flow| flow.weight == 1.0), "{file:?}");
            let (weighted, standard) = (implementation(&plan.flows[0].cc), implementation(&plan.flows[1].cc));
            assert_eq!(plan.flows[2].cc, plan.flows[1].cc, "{file:?}");
            // control-A-vs-B.toml: A in the weighted slot against two B.
            let stem = file.file_stem().unwrap().to_str().unwrap();
            let implied = stem.strip_prefix("control-").and_then(|pair| pair.split_once("-vs-"));
            assert_eq!(Some((weighted, standard)), implied, "{file:?}");
        }
    }

    /// The scenario files shipped in testbed/scenarios whose names start
    /// with `prefix`, sorted.
    fn shipped_scenarios(prefix: &str) -> Vec<std::path::PathBuf> {
        let directory = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let mut files: Vec<_> = std::fs::read_dir(&directory)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with(prefix)))
            .collect();
        files.sort();
        files
    }

    #[test]
    fn the_shipped_linux_peer_scenarios_put_weight_one_quic_against_linux_tcp() {
        // testbed/README.md's weight-one and eight-connection rows.
        let files = [shipped_scenarios("weight-one-"), shipped_scenarios("eight-")].concat();
        assert_eq!(files.len(), 3, "{files:?}");
        for file in files {
            let plan = plan(&std::fs::read_to_string(&file).unwrap()).unwrap_or_else(|e| panic!("{file:?}: {e}"));
            let (quic, tcp): (Vec<_>, Vec<_>) =
                plan.flows.iter().partition(|flow| matches!(flow.kind, FlowKind::Quic { .. }));
            assert!(quic.iter().all(|flow| flow.weight == 1.0 && flow.role == Role::Weighted), "{file:?}");
            assert!(tcp.iter().all(|flow| flow.role == Role::Standard), "{file:?}");
            let stem = file.file_stem().unwrap().to_str().unwrap();
            let counts = if stem.starts_with("eight-") { (8, 4) } else { (1, 1) };
            assert_eq!((quic.len(), tcp.len()), counts, "{file:?}");
        }
    }

    #[test]
    fn a_flows_pacing_is_the_endpoints_own_in_the_testbed() {
        let text =
            CROSS.replace("path = [\"bottleneck\"]\n\n[[flow]]", "path = [\"bottleneck\"]\npacing = false\n\n[[flow]]");
        assert_ne!(text, CROSS);
        let scenario = TestbedScenario::from_toml(&text).unwrap();
        let mut notes = String::new();
        scenario.plan(1, &mut notes).unwrap();
        assert!(notes.contains("note: a flow's pacing is ignored"), "{notes}");
    }
}
