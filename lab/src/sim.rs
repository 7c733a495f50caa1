//! The discrete-event engine: virtual time, one event queue, the network,
//! the endpoints and the traffic sources of one run.
//!
//! Events are small `Copy` values in a binary heap ordered by time and then
//! by insertion order, so simultaneous events run in the order they were
//! scheduled and a run depends only on its setup and seed. Flows, links and
//! connections live in vectors indexed by ids; a data packet costs one
//! event per hop plus its delivery, and every second packet an
//! acknowledgement. Timers are lazy: a flow keeps the time its timer entry
//! was scheduled for and only pushes a new entry when the deadline moves
//! earlier, so re-arming on every acknowledgement costs nothing.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::collections::VecDeque;

use flowshare_controllers::mcompound::McompoundGroup;
use flowshare_controllers::Controller;
use flowshare_controllers::Params;
use flowshare_controllers::Spec;

use crate::network::Link;
use crate::network::LinkSpec;
use crate::network::LinkStats;
use crate::network::Offer;
use crate::rng::Rng;
use crate::sender::Data;
use crate::sender::Emitted;
use crate::sender::Sender;
use crate::sender::SenderConfig;
use crate::sender::SenderStats;
use crate::sender::Transfer;
use crate::sender::BULK;
use crate::Nanos;

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
    /// Pace when the controller gives a pacing rate.
    pub pacing: bool,
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

/// RTT the senders assume before their first sample (RFC 9002: 333 ms).
const INITIAL_RTT: Nanos = 333_000_000;
/// Initial window in packets (RFC 9002: 10).
const INITIAL_WINDOW_PACKETS: usize = 10;

/// A data or CBR packet in the network.
#[derive(Clone, Copy, Debug)]
struct Packet {
    number: u64,
    flow: u32,
    segment: u32,
    bytes: u32,
    epoch: u16,
    hop: u8,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    /// A packet arrives at hop `hop` of its path (the receiver past the last).
    Arrive(Packet),
    /// An acknowledgement reaches the sender: the receiver's log up to
    /// `log_end` is acknowledged.
    Ack {
        flow: u32,
        epoch: u16,
        log_end: u64,
        largest: u64,
        ack_delay: Nanos,
    },
    LossTimer {
        flow: u32,
    },
    PacingWake {
        flow: u32,
    },
    AckTimer {
        flow: u32,
    },
    Start {
        flow: u32,
    },
    Stop {
        flow: u32,
    },
    Join {
        flow: u32,
    },
    CbrSend {
        flow: u32,
    },
    CbrToggle {
        flow: u32,
    },
    WebObject {
        flow: u32,
    },
    /// The warm-up ends.
    Measure,
}

#[derive(Clone, Copy, Debug)]
struct Scheduled {
    time: Nanos,
    seq: u64,
    event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}

impl Eq for Scheduled {}

impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scheduled {
    /// Reversed: the heap's greatest element is the earliest event.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

#[derive(Debug, Default)]
struct EventQueue {
    heap: BinaryHeap<Scheduled>,
    seq: u64,
    processed: u64,
}

impl EventQueue {
    fn push(&mut self, time: Nanos, event: Event) {
        self.seq += 1;
        self.heap.push(Scheduled { time, seq: self.seq, event });
    }
}

/// How a flow's packets reach the network and its acknowledgements return.
#[derive(Clone, Debug)]
struct Route {
    /// Index of the first link of the path in `Simulation::path_links`.
    path_start: u32,
    /// Number of links on the path.
    path_len: u8,
    access_delay: Nanos,
    jitter: Nanos,
    /// One-way delay of acknowledgements: access plus link delays.
    return_delay: Nanos,
    /// Latest arrival scheduled at the first link: jitter never reorders a
    /// flow's packets on its access link.
    last_out: Nanos,
    /// Latest acknowledgement arrival scheduled.
    last_back: Nanos,
}

impl Route {
    fn jittered(&self, base: Nanos, rng: &mut Rng) -> Nanos {
        if self.jitter == 0 {
            base
        } else {
            base + rng.below(self.jitter as f64) as Nanos
        }
    }

    fn outbound(&mut self, now: Nanos, rng: &mut Rng) -> Nanos {
        let at = self.jittered(now + self.access_delay, rng).max(self.last_out);
        self.last_out = at;
        at
    }

    fn inbound(&mut self, now: Nanos, rng: &mut Rng) -> Nanos {
        let at = self.jittered(now + self.return_delay, rng).max(self.last_back);
        self.last_back = at;
        at
    }
}

/// Which packets of a timed transfer arrived.
#[derive(Clone, Debug)]
struct Segments {
    bits: Vec<u64>,
    received: u32,
    total: u32,
    started: Nanos,
    /// Bytes the transfer is, for the report.
    bytes: u64,
}

impl Segments {
    fn new(total: u32, started: Nanos, bytes: u64) -> Segments {
        Segments { bits: vec![0; (total as usize).div_ceil(64)], received: 0, total, started, bytes }
    }

    /// Records `segment`; returns whether that completed the transfer.
    fn receive(&mut self, segment: u32) -> bool {
        let (word, bit) = ((segment / 64) as usize, segment % 64);
        let Some(slot) = self.bits.get_mut(word) else { return false };
        if *slot & (1 << bit) != 0 {
            return false;
        }
        *slot |= 1 << bit;
        self.received += 1;
        self.received == self.total
    }
}

/// The receiving end of a transport flow.
#[derive(Debug)]
struct Receiver {
    largest: Option<u64>,
    largest_at: Nanos,
    unacknowledged: u32,
    /// Packet numbers received and not yet acknowledged to the sender, from
    /// absolute position `log_base`: an acknowledgement carries the position
    /// it covers, which is what a QUIC ACK frame's ranges tell.
    log: VecDeque<u64>,
    log_base: u64,
    ack_deadline: Option<Nanos>,
    ack_timer_scheduled: Option<Nanos>,
    transfer: Option<Segments>,
}

impl Receiver {
    fn new() -> Receiver {
        Receiver {
            largest: None,
            largest_at: 0,
            unacknowledged: 0,
            log: VecDeque::with_capacity(16),
            log_base: 0,
            ack_deadline: None,
            ack_timer_scheduled: None,
            transfer: None,
        }
    }
}

#[derive(Debug)]
struct Transport {
    spec: Spec,
    /// The MCompound group of the connection's subflows.
    group: Option<McompoundGroup>,
    sender: Sender,
    receiver: Receiver,
    /// Incremented for every new connection of a web source; packets and
    /// acknowledgements of earlier ones are ignored.
    epoch: u16,
    timer_scheduled: Option<Nanos>,
    pacing_scheduled: Option<Nanos>,
    /// Sender counters at the end of the warm-up.
    stats_at_warmup: SenderStats,
    /// Sender counters of the finished connections of a web source.
    finished_stats: SenderStats,
}

#[derive(Debug)]
struct Cbr {
    rate_bps: f64,
    on_off: Option<(f64, f64)>,
    on: bool,
    next_number: u64,
}

#[derive(Debug)]
enum Endpoint {
    Transport(Box<Transport>),
    Cbr(Cbr),
}

/// A flow: one subflow of a connection, or a CBR source.
#[derive(Debug)]
struct Flow {
    connection: u32,
    route: Route,
    endpoint: Endpoint,
    stopped: bool,
}

/// A completed timed transfer.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Completion {
    /// When it started, seconds.
    pub start_s: f64,
    /// How long it took until the receiver had every byte, seconds.
    pub duration_s: f64,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Everything measured about one connection.
#[derive(Clone, Debug)]
pub struct ConnectionResult {
    /// Label.
    pub label: String,
    /// Controller spec (`cbr` for CBR).
    pub cc: String,
    /// Flowshares the spec asks for.
    pub weight: f64,
    /// Role in the metrics.
    pub role: Role,
    /// Bytes delivered per bin over the whole run.
    pub bins: Vec<u64>,
    /// Throughput after the warm-up, bits per second.
    pub throughput_bps: f64,
    /// Sender counters after the warm-up, summed over subflows.
    pub stats: SenderStats,
    /// Timed transfers that completed.
    pub completions: Vec<Completion>,
}

/// Everything measured about one link.
#[derive(Clone, Debug)]
pub struct LinkResult {
    /// Name.
    pub name: String,
    /// Rate, bits per second.
    pub rate_bps: f64,
    /// Counters after the warm-up.
    pub stats: LinkStats,
    /// Bytes sent over the measured time per byte the link could send.
    pub utilization: f64,
}

/// The outcome of a run.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Scenario name.
    pub name: String,
    /// Seed.
    pub seed: u64,
    /// Measured time (duration minus warm-up), seconds.
    pub measured_seconds: f64,
    /// Warm-up, seconds.
    pub warmup_seconds: f64,
    /// Bin width, seconds.
    pub bin_seconds: f64,
    /// Per connection.
    pub connections: Vec<ConnectionResult>,
    /// Per link.
    pub links: Vec<LinkResult>,
    /// Data packets sent by all flows over the whole run.
    pub packets_sent: u64,
    /// Events processed.
    pub events: u64,
}

/// One run in progress.
pub struct Simulation {
    setup: Setup,
    seed: u64,
    now: Nanos,
    queue: EventQueue,
    rng: Rng,
    links: Vec<Link>,
    path_links: Vec<u16>,
    flows: Vec<Flow>,
    bins: Vec<Vec<u64>>,
    completions: Vec<Vec<Completion>>,
    params: Params,
    sender_config: SenderConfig,
}

impl Simulation {
    /// A run of `setup` with `seed`.
    pub fn new(setup: Setup, seed: u64) -> Simulation {
        let mut rng = Rng::new(seed);
        let mut queue = EventQueue::default();
        let links: Vec<Link> = setup.links.iter().cloned().map(Link::new).collect();
        let bin_count = setup.duration.div_ceil(setup.bin.max(1)) as usize + 1;
        let params = Params {
            initial_window_packets: INITIAL_WINDOW_PACKETS,
            max_datagram_size: setup.packet_bytes as usize,
            initial_rtt: std::time::Duration::from_nanos(INITIAL_RTT),
        };
        let sender_config = SenderConfig {
            packet_bytes: setup.packet_bytes,
            max_ack_delay: setup.max_ack_delay,
            pacing: setup.pacing,
            initial_rtt: INITIAL_RTT,
        };
        let mut path_links = Vec::new();
        let mut flows = Vec::new();
        for (index, connection) in setup.connections.iter().enumerate() {
            // An MCompound group is one connection's subflows: private to the
            // run (not the process-wide group its spec names), so that runs on
            // other threads cannot join it.
            let group = connection.cc.as_ref().is_some_and(|spec| spec.algorithm().grouped).then(McompoundGroup::new);
            // Only connections that start with the run are spread out: a
            // start time given on purpose is kept.
            let offset = if setup.start_spread > 0 && connection.start == 0 {
                rng.below(setup.start_spread as f64) as Nanos
            } else {
                0
            };
            let start = connection.start + offset;
            for path in &connection.paths {
                let path_start = path_links.len() as u32;
                path_links.extend(path.iter().map(|&link| link as u16));
                let link_delays: Nanos = path.iter().map(|&link| setup.links[link].delay).sum();
                let route = Route {
                    path_start,
                    path_len: path.len() as u8,
                    access_delay: connection.access_delay,
                    jitter: connection.jitter,
                    return_delay: connection.access_delay + link_delays,
                    last_out: 0,
                    last_back: 0,
                };
                let flow = flows.len() as u32;
                let endpoint = match (&connection.traffic, &connection.cc) {
                    (Traffic::Cbr { rate_bps, on_off }, _) => {
                        queue.push(start, Event::CbrToggle { flow });
                        Endpoint::Cbr(Cbr { rate_bps: *rate_bps, on_off: *on_off, on: false, next_number: 0 })
                    }
                    (traffic, Some(spec)) => {
                        let data = match traffic {
                            Traffic::Bulk { join } => {
                                if let Some(join) = join {
                                    queue.push(join.at, Event::Join { flow });
                                }
                                Data::bulk()
                            }
                            Traffic::Transfer { segments } => Data::transfer(*segments),
                            _ => Data::default(),
                        };
                        let mut transport = Transport {
                            spec: spec.clone(),
                            group: group.clone(),
                            sender: Sender::new(sender_config, build_controller(spec, group.as_ref(), &params), data),
                            receiver: Receiver::new(),
                            epoch: 0,
                            timer_scheduled: None,
                            pacing_scheduled: None,
                            stats_at_warmup: SenderStats::default(),
                            finished_stats: SenderStats::default(),
                        };
                        if let Traffic::Transfer { segments } = traffic {
                            let bytes = *segments as u64 * setup.packet_bytes as u64;
                            transport.receiver.transfer = Some(Segments::new(*segments, start, bytes));
                        }
                        match traffic {
                            Traffic::Web { .. } => queue.push(start, Event::WebObject { flow }),
                            _ => queue.push(start, Event::Start { flow }),
                        }
                        Endpoint::Transport(Box::new(transport))
                    }
                    (_, None) => unreachable!("setups give every responsive connection a controller"),
                };
                if let Some(stop) = connection.stop {
                    queue.push(stop, Event::Stop { flow });
                }
                flows.push(Flow { connection: index as u32, route, endpoint, stopped: false });
            }
        }
        queue.push(setup.warmup, Event::Measure);
        let connections = setup.connections.len();
        Simulation {
            seed,
            now: 0,
            queue,
            rng,
            links,
            path_links,
            flows,
            bins: vec![vec![0; bin_count]; connections],
            completions: vec![Vec::new(); connections],
            params,
            sender_config,
            setup,
        }
    }

    /// Runs to the end and returns the measurements.
    pub fn run(mut self) -> RunResult {
        let end = self.setup.duration;
        while let Some(scheduled) = self.queue.heap.pop() {
            if scheduled.time > end {
                break;
            }
            self.now = scheduled.time;
            self.queue.processed += 1;
            self.handle(scheduled.event);
        }
        self.finish()
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Arrive(packet) => self.arrive(packet),
            Event::Ack { flow, epoch, log_end, largest, ack_delay } => {
                self.on_ack(flow, epoch, log_end, largest, ack_delay)
            }
            Event::LossTimer { flow } => self.on_loss_timer(flow),
            Event::PacingWake { flow } => {
                if let Endpoint::Transport(transport) = &mut self.flows[flow as usize].endpoint {
                    if transport.pacing_scheduled == Some(self.now) {
                        transport.pacing_scheduled = None;
                        self.try_send(flow);
                    }
                }
            }
            Event::AckTimer { flow } => self.on_ack_timer(flow),
            Event::Start { flow } => self.try_send(flow),
            Event::Stop { flow } => {
                let f = &mut self.flows[flow as usize];
                f.stopped = true;
                if let Endpoint::Transport(transport) = &mut f.endpoint {
                    transport.sender.data.bulk = false;
                }
            }
            Event::Join { flow } => self.join(flow),
            Event::CbrSend { flow } => self.cbr_send(flow),
            Event::CbrToggle { flow } => self.cbr_toggle(flow),
            Event::WebObject { flow } => self.web_object(flow),
            Event::Measure => self.measure(),
        }
    }

    fn arrive(&mut self, mut packet: Packet) {
        let flow = &self.flows[packet.flow as usize];
        if packet.hop < flow.route.path_len {
            let link = self.path_links[(flow.route.path_start + packet.hop as u32) as usize] as usize;
            let link = &mut self.links[link];
            if let Offer::Accepted { finish, .. } = link.offer(self.now, packet.bytes, &mut self.rng) {
                packet.hop += 1;
                self.queue.push(finish + link.spec.delay, Event::Arrive(packet));
            }
            return;
        }
        let connection = flow.connection as usize;
        if let Some(bin) = self.bins[connection].get_mut((self.now / self.setup.bin) as usize) {
            *bin += packet.bytes as u64;
        }
        self.deliver(packet);
    }

    /// A packet reached its receiver.
    fn deliver(&mut self, packet: Packet) {
        let now = self.now;
        let flow_id = packet.flow;
        let Flow { route, endpoint, connection, .. } = &mut self.flows[flow_id as usize];
        let Endpoint::Transport(transport) = endpoint else { return };
        if packet.epoch != transport.epoch {
            return;
        }
        let receiver = &mut transport.receiver;
        let opens_gap = receiver.largest.map_or(packet.number != 0, |largest| packet.number > largest + 1);
        if receiver.largest.is_none_or(|largest| packet.number > largest) {
            receiver.largest = Some(packet.number);
            receiver.largest_at = now;
        }
        receiver.log.push_back(packet.number);
        receiver.unacknowledged += 1;
        let mut completed = None;
        if packet.segment != BULK {
            if let Some(segments) = receiver.transfer.as_mut() {
                if segments.receive(packet.segment) {
                    completed = Some(Completion {
                        start_s: segments.started as f64 * 1e-9,
                        duration_s: (now - segments.started) as f64 * 1e-9,
                        bytes: segments.bytes,
                    });
                }
            }
        }
        if receiver.unacknowledged >= self.setup.ack_every || opens_gap || completed.is_some() {
            Self::send_ack(&mut self.queue, &mut self.rng, route, transport, flow_id, now);
        } else if receiver.ack_deadline.is_none() {
            let deadline = now + self.setup.max_ack_delay;
            receiver.ack_deadline = Some(deadline);
            if receiver.ack_timer_scheduled.is_none_or(|scheduled| scheduled > deadline) {
                receiver.ack_timer_scheduled = Some(deadline);
                self.queue.push(deadline, Event::AckTimer { flow: flow_id });
            }
        }
        if let Some(completion) = completed {
            transport.receiver.transfer = None;
            self.completions[*connection as usize].push(completion);
            if let Some(Traffic::Web { mean_off_seconds, .. }) =
                self.setup.connections.get(*connection as usize).map(|c| &c.traffic)
            {
                let think = (self.rng.exponential(*mean_off_seconds) * 1e9) as Nanos;
                self.queue.push(now + think, Event::WebObject { flow: flow_id });
            }
        }
    }

    fn send_ack(
        queue: &mut EventQueue,
        rng: &mut Rng,
        route: &mut Route,
        transport: &mut Transport,
        flow: u32,
        now: Nanos,
    ) {
        let receiver = &mut transport.receiver;
        let Some(largest) = receiver.largest else { return };
        receiver.unacknowledged = 0;
        receiver.ack_deadline = None;
        let at = route.inbound(now, rng);
        queue.push(
            at,
            Event::Ack {
                flow,
                epoch: transport.epoch,
                log_end: receiver.log_base + receiver.log.len() as u64,
                largest,
                ack_delay: now - receiver.largest_at,
            },
        );
    }

    fn on_ack_timer(&mut self, flow_id: u32) {
        let now = self.now;
        let Flow { route, endpoint, .. } = &mut self.flows[flow_id as usize];
        let Endpoint::Transport(transport) = endpoint else { return };
        if transport.receiver.ack_timer_scheduled != Some(now) {
            return;
        }
        transport.receiver.ack_timer_scheduled = None;
        match transport.receiver.ack_deadline {
            Some(deadline) if deadline <= now => {
                if transport.receiver.unacknowledged > 0 {
                    Self::send_ack(&mut self.queue, &mut self.rng, route, transport, flow_id, now);
                }
                transport.receiver.ack_deadline = None;
            }
            Some(deadline) => {
                transport.receiver.ack_timer_scheduled = Some(deadline);
                self.queue.push(deadline, Event::AckTimer { flow: flow_id });
            }
            None => {}
        }
    }

    fn on_ack(&mut self, flow_id: u32, epoch: u16, log_end: u64, largest: u64, ack_delay: Nanos) {
        let now = self.now;
        let Endpoint::Transport(transport) = &mut self.flows[flow_id as usize].endpoint else { return };
        if transport.epoch != epoch {
            return;
        }
        let Transport { sender, receiver, .. } = &mut **transport;
        let count = (log_end.saturating_sub(receiver.log_base) as usize).min(receiver.log.len());
        receiver.log_base += count as u64;
        sender.on_ack(now, receiver.log.drain(..count), largest, ack_delay);
        self.try_send(flow_id);
    }

    fn on_loss_timer(&mut self, flow_id: u32) {
        let now = self.now;
        let Flow { route, endpoint, .. } = &mut self.flows[flow_id as usize];
        let Endpoint::Transport(transport) = endpoint else { return };
        if transport.timer_scheduled != Some(now) {
            return;
        }
        transport.timer_scheduled = None;
        let epoch = transport.epoch;
        let (queue, rng) = (&mut self.queue, &mut self.rng);
        transport.sender.on_timer(now, |emitted| Self::emit(queue, rng, route, flow_id, epoch, now, emitted));
        self.try_send(flow_id);
    }

    fn emit(
        queue: &mut EventQueue,
        rng: &mut Rng,
        route: &mut Route,
        flow: u32,
        epoch: u16,
        now: Nanos,
        emitted: Emitted,
    ) {
        let at = route.outbound(now, rng);
        queue.push(
            at,
            Event::Arrive(Packet {
                number: emitted.number,
                flow,
                segment: emitted.segment,
                bytes: emitted.bytes,
                epoch,
                hop: 0,
            }),
        );
    }

    /// Sends what the flow may send now and re-arms its timers.
    fn try_send(&mut self, flow_id: u32) {
        let now = self.now;
        let Flow { route, endpoint, .. } = &mut self.flows[flow_id as usize];
        let Endpoint::Transport(transport) = endpoint else { return };
        let epoch = transport.epoch;
        let (queue, rng) = (&mut self.queue, &mut self.rng);
        let paced_until =
            transport.sender.send(now, |emitted| Self::emit(queue, rng, route, flow_id, epoch, now, emitted));
        if let Some(at) = paced_until {
            if transport.pacing_scheduled.is_none_or(|scheduled| scheduled > at) {
                transport.pacing_scheduled = Some(at);
                queue.push(at, Event::PacingWake { flow: flow_id });
            }
        }
        if let Some(deadline) = transport.sender.timer_deadline() {
            let deadline = deadline.max(now);
            if transport.timer_scheduled.is_none_or(|scheduled| scheduled > deadline) {
                transport.timer_scheduled = Some(deadline);
                queue.push(deadline, Event::LossTimer { flow: flow_id });
            }
        }
    }

    fn join(&mut self, flow_id: u32) {
        let now = self.now;
        let connection = self.flows[flow_id as usize].connection as usize;
        let Traffic::Bulk { join: Some(join) } = self.setup.connections[connection].traffic else { return };
        let bytes = join.segments as u64 * self.setup.packet_bytes as u64;
        let Endpoint::Transport(transport) = &mut self.flows[flow_id as usize].endpoint else { return };
        transport.sender.data.transfer = Some(Transfer::new(join.segments));
        transport.sender.data.transfer_share = join.share;
        transport.receiver.transfer = Some(Segments::new(join.segments, now, bytes));
        self.try_send(flow_id);
    }

    /// A web source starts its next object on a fresh connection.
    fn web_object(&mut self, flow_id: u32) {
        let now = self.now;
        let flow = &mut self.flows[flow_id as usize];
        if flow.stopped {
            return;
        }
        let connection = &self.setup.connections[flow.connection as usize];
        let Traffic::Web { mean_object_bytes, pareto_shape, .. } = connection.traffic else { return };
        let Endpoint::Transport(transport) = &mut flow.endpoint else { return };
        let bytes = self.rng.pareto(pareto_shape, mean_object_bytes).max(1.0);
        let segments = (bytes / self.setup.packet_bytes as f64).ceil().clamp(1.0, u32::MAX as f64) as u32;
        let finished = transport.sender.stats;
        accumulate(&mut transport.finished_stats, &finished);
        transport.epoch = transport.epoch.wrapping_add(1);
        let controller = build_controller(&transport.spec, transport.group.as_ref(), &self.params);
        transport.sender = Sender::new(self.sender_config, controller, Data::transfer(segments));
        transport.receiver = Receiver::new();
        transport.receiver.transfer =
            Some(Segments::new(segments, now, segments as u64 * self.setup.packet_bytes as u64));
        transport.timer_scheduled = None;
        transport.pacing_scheduled = None;
        self.try_send(flow_id);
    }

    fn cbr_toggle(&mut self, flow_id: u32) {
        let now = self.now;
        let flow = &mut self.flows[flow_id as usize];
        let Endpoint::Cbr(cbr) = &mut flow.endpoint else { return };
        if flow.stopped {
            return;
        }
        cbr.on = !cbr.on;
        if let Some((on_mean, off_mean)) = cbr.on_off {
            let period = self.rng.exponential(if cbr.on { on_mean } else { off_mean });
            self.queue.push(now + (period * 1e9) as Nanos, Event::CbrToggle { flow: flow_id });
        }
        if cbr.on {
            self.queue.push(now, Event::CbrSend { flow: flow_id });
        }
    }

    fn cbr_send(&mut self, flow_id: u32) {
        let now = self.now;
        let bytes = self.setup.packet_bytes;
        let Flow { route, endpoint, stopped, .. } = &mut self.flows[flow_id as usize];
        let Endpoint::Cbr(cbr) = endpoint else { return };
        if !cbr.on || *stopped {
            return;
        }
        let number = cbr.next_number;
        cbr.next_number += 1;
        let interval = (bytes as f64 * 8e9 / cbr.rate_bps) as Nanos;
        let at = route.outbound(now, &mut self.rng);
        self.queue.push(at, Event::Arrive(Packet { number, flow: flow_id, segment: BULK, bytes, epoch: 0, hop: 0 }));
        self.queue.push(now + interval.max(1), Event::CbrSend { flow: flow_id });
    }

    fn measure(&mut self) {
        for link in &mut self.links {
            link.measuring = true;
        }
        for flow in &mut self.flows {
            if let Endpoint::Transport(transport) = &mut flow.endpoint {
                let mut at_warmup = transport.finished_stats;
                accumulate(&mut at_warmup, &transport.sender.stats);
                transport.stats_at_warmup = at_warmup;
            }
        }
    }

    fn finish(self) -> RunResult {
        let measured = (self.setup.duration - self.setup.warmup) as f64 * 1e-9;
        let first_bin = (self.setup.warmup / self.setup.bin) as usize;
        let last_bin = (self.setup.duration / self.setup.bin) as usize;
        let mut packets_sent = 0;
        let mut stats = vec![SenderStats::default(); self.setup.connections.len()];
        for flow in &self.flows {
            match &flow.endpoint {
                Endpoint::Transport(transport) => {
                    let mut total = transport.finished_stats;
                    accumulate(&mut total, &transport.sender.stats);
                    packets_sent += total.packets_sent;
                    accumulate(&mut stats[flow.connection as usize], &difference(&total, &transport.stats_at_warmup));
                }
                Endpoint::Cbr(cbr) => packets_sent += cbr.next_number,
            }
        }
        let connections = self
            .setup
            .connections
            .iter()
            .zip(self.bins)
            .zip(self.completions)
            .zip(stats)
            .map(|(((setup, bins), completions), stats)| {
                let measured_bytes: u64 = bins[first_bin.min(bins.len())..last_bin.min(bins.len())].iter().sum();
                ConnectionResult {
                    label: setup.label.clone(),
                    cc: setup.cc.as_ref().map_or_else(|| "cbr".to_string(), |spec| spec.to_string()),
                    weight: setup.cc.as_ref().map_or(0.0, Spec::weight),
                    role: setup.role,
                    throughput_bps: measured_bytes as f64 * 8.0 / measured,
                    bins,
                    stats,
                    completions,
                }
            })
            .collect();
        let links = self
            .links
            .into_iter()
            .map(|link| LinkResult {
                name: link.spec.name.clone(),
                rate_bps: link.spec.rate_bps,
                utilization: link.stats.bytes as f64 * 8.0 / (link.spec.rate_bps * measured),
                stats: link.stats,
            })
            .collect();
        RunResult {
            name: self.setup.name.clone(),
            seed: self.seed,
            measured_seconds: measured,
            warmup_seconds: self.setup.warmup as f64 * 1e-9,
            bin_seconds: self.setup.bin as f64 * 1e-9,
            connections,
            links,
            packets_sent,
            events: self.queue.processed,
        }
    }
}

fn build_controller(spec: &Spec, group: Option<&McompoundGroup>, params: &Params) -> Box<dyn Controller> {
    match group {
        // The spec is an MCompound spec, which every group accepts.
        Some(group) => group.build(spec, params).unwrap_or_else(|_| spec.build(params)),
        None => spec.build(params),
    }
}

fn accumulate(total: &mut SenderStats, more: &SenderStats) {
    total.packets_sent += more.packets_sent;
    total.packets_lost += more.packets_lost;
    total.loss_events += more.loss_events;
    total.timeouts += more.timeouts;
    total.persistent_congestion += more.persistent_congestion;
    total.rtt_sum += more.rtt_sum;
    total.rtt_samples += more.rtt_samples;
}

fn difference(total: &SenderStats, before: &SenderStats) -> SenderStats {
    SenderStats {
        packets_sent: total.packets_sent - before.packets_sent,
        packets_lost: total.packets_lost - before.packets_lost,
        loss_events: total.loss_events - before.loss_events,
        timeouts: total.timeouts - before.timeouts,
        persistent_congestion: total.persistent_congestion - before.persistent_congestion,
        rtt_sum: total.rtt_sum - before.rtt_sum,
        rtt_samples: total.rtt_samples - before.rtt_samples,
    }
}
