//! The discrete-event engine: virtual time, one event queue, the network,
//! the endpoints and the traffic sources of one run.
//!
//! Events (`events`) run in the order of their time and then of
//! their scheduling, so a run depends only on its [`Setup`] and seed. Flows
//! (`flow`), links and connections live in vectors indexed by ids;
//! a data packet costs one event per hop plus its delivery, and every
//! second packet an acknowledgement. Timers are lazy: a flow keeps the time
//! its timer entry was scheduled for and only pushes a new entry when the
//! deadline moves earlier, so re-arming on every acknowledgement costs
//! nothing. What a run measured is a [`RunResult`].

use flowshare_controllers::mcompound::McompoundGroup;
use flowshare_controllers::Controller;
use flowshare_controllers::Params;
use flowshare_controllers::Spec;

use crate::events::Event;
use crate::events::EventQueue;
use crate::events::Packet;
use crate::flow::Cbr;
use crate::flow::Endpoint;
use crate::flow::Flow;
use crate::flow::Jitter;
use crate::flow::Receiver;
use crate::flow::Route;
use crate::flow::Segments;
use crate::flow::Transport;
use crate::network::Link;
use crate::network::Offer;
use crate::result::Completion;
use crate::result::ConnectionResult;
use crate::result::ControllerStates;
use crate::result::LinkResult;
use crate::result::RunResult;
use crate::result::SenderStats;
use crate::rng::Rng;
use crate::sender::Data;
use crate::sender::Emitted;
use crate::sender::Sender;
use crate::sender::SenderConfig;
use crate::sender::Transfer;
use crate::sender::BULK;
use crate::setup::ConnectionSetup;
use crate::setup::Join;
use crate::setup::Setup;
use crate::setup::Traffic;
use crate::Nanos;

/// RTT the senders assume before their first sample (RFC 9002: 333 ms).
const INITIAL_RTT: Nanos = 333_000_000;
/// Initial window in packets (RFC 9002: 10).
const INITIAL_WINDOW_PACKETS: usize = 10;

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
}

/// The sender configuration of `connection` in `setup`.
fn sender_config(setup: &Setup, connection: &ConnectionSetup) -> SenderConfig {
    SenderConfig {
        packet_bytes: setup.packet_bytes,
        max_ack_delay: setup.max_ack_delay,
        pacing: connection.pacing,
        initial_rtt: INITIAL_RTT,
    }
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
                    return_delay: connection.access_delay + link_delays,
                    outbound_jitter: Jitter::new(connection.jitter, connection.jitter_shape),
                    inbound_jitter: Jitter::new(connection.jitter, connection.jitter_shape),
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
                            sender: Sender::new(
                                sender_config(&setup, connection),
                                build_controller(spec, group.as_ref(), &params),
                                data,
                            ),
                            receiver: Receiver::new(),
                            epoch: 0,
                            timer_scheduled: None,
                            pacing_scheduled: None,
                            stats_at_warmup: SenderStats::default(),
                            snapshot_at_warmup: None,
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
            // A joined transfer that raised the connection's weight hands it
            // back when it completes.
            if let Some(Traffic::Bulk { join: Some(Join { weight: Some(_), .. }) }) =
                self.setup.connections.get(*connection as usize).map(|c| &c.traffic)
            {
                transport.sender.set_weight(transport.spec.weight());
            }
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
        if let Some(weight) = join.weight {
            transport.sender.set_weight(weight);
        }
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
        transport.finished_stats.add(&finished);
        transport.epoch = transport.epoch.wrapping_add(1);
        let controller = build_controller(&transport.spec, transport.group.as_ref(), &self.params);
        transport.sender = Sender::new(sender_config(&self.setup, connection), controller, Data::transfer(segments));
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
                at_warmup.add(&transport.sender.stats);
                transport.stats_at_warmup = at_warmup;
                transport.snapshot_at_warmup = Some(transport.sender.snapshot());
            }
        }
    }

    fn finish(self) -> RunResult {
        let measured = (self.setup.duration - self.setup.warmup) as f64 * 1e-9;
        let first_bin = (self.setup.warmup / self.setup.bin) as usize;
        let last_bin = (self.setup.duration / self.setup.bin) as usize;
        let mut packets_sent = 0;
        let mut stats = vec![SenderStats::default(); self.setup.connections.len()];
        let mut controllers: Vec<Option<ControllerStates>> = vec![None; self.setup.connections.len()];
        for flow in &self.flows {
            match &flow.endpoint {
                Endpoint::Transport(transport) => {
                    let states = &mut controllers[flow.connection as usize];
                    if states.is_none() {
                        *states = transport
                            .snapshot_at_warmup
                            .clone()
                            .map(|at_warmup| ControllerStates { at_warmup, at_end: transport.sender.snapshot() });
                    }
                    let mut total = transport.finished_stats;
                    total.add(&transport.sender.stats);
                    packets_sent += total.packets_sent;
                    stats[flow.connection as usize].add(&total.since(&transport.stats_at_warmup));
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
            .zip(controllers)
            .map(|((((setup, bins), completions), stats), controller)| {
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
                    controller,
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
    let built = match group {
        // The spec is an MCompound spec, which every group accepts.
        Some(group) => group.build(spec, params).or_else(|_| spec.build(params)),
        None => spec.build(params),
    };
    built.expect("Scenario::resolve refuses the specs the lab cannot build")
}
