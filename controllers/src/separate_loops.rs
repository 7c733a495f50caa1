//! `loops=separate`, MulTCP's and MulCUBIC's default: one connection that
//! carries N standard flows side by side, each with its own window, its own
//! packets, its own acknowledgement clock and its own pacing clock. A
//! weight change on a live connection retires loops or adds them
//! (`set_weight` below).
//!
//! One window standing for N flows takes more than N flowshares at a full
//! drop-tail queue on the lab's small paths, where N separate connections
//! of the same rules hold (lab/README.md, "Eight separate flows hold where
//! one connection of eight does not"). Counting the flows a loss event
//! hits, N windows in one loop and every pacing pattern of one clock left
//! it there. What separate flows have is that each is its own feedback
//! loop: a packet belongs to one flow, its loss backs off that flow, its
//! acknowledgement grows that flow, and that flow's window sets its own
//! clock. This controller keeps that inside one connection, as MPAT keeps a
//! window per flow of an aggregate:
//!
//! * ⌊N⌋ loops of one standard flow (`multcp:n=1`, RFC 9002 NewReno, or
//!   `mulcubic:n=1`, RFC 9438 CUBIC) and, where N is not whole, one of the
//!   same algorithm's weight for the rest; at N <= 1 one loop of weight N;
//! * while one loop is all there is (N <= 1, or a connection whose weight
//!   came down to one flowshare once the retired loops' packets are gone),
//!   the connection is that loop's controller call for call, the one window
//!   of weight N, so that a weight that rises later (`weight = "streams"`
//!   from one response to several) starts loops of its own instead of
//!   leaving one window to stand for N flows;
//! * a packet goes to the loop whose pacing clock is due first among those
//!   with room in their windows; an acknowledgement or a loss goes to the
//!   loop whose packet it was; the host sees the sum of the windows;
//! * a loop hears of its packets' acknowledgements two at a time, or a lone
//!   one after [`MAX_ACK_DELAY`] or with a loss of its own, as it would from
//!   a receiver of its own that acknowledges every second packet (RFC 9000
//!   §13.2), unless its window is under [`HELD_FROM_WINDOW_PACKETS`]. The
//!   connection's receiver acknowledges every second packet of
//!   the connection, so without this each acknowledgement released one
//!   packet of each of two loops at once: those pairs left back to back and
//!   lost more at a full queue (the lab, 20 Mbit/s, 40 ms, 1 BDP drop-tail,
//!   4 Reno peers, no jitter, N = 16: 0.87 of the share, 0.91 with the
//!   acknowledgements held);
//! * a loop that does not pace (`pacing=off`, the loops' rate is `None`)
//!   holds a lone acknowledgement only until the connection's next one, not
//!   for its pair: the connection's receiver may already have held it for
//!   the connection's next packet, and a loop that waited for its own next
//!   packet as well fell short against unpaced peers on drop-tail, where N
//!   separate connections hold. A paced loop's clock spaces its packets,
//!   and it keeps the pairs. The measurements, and the receivers for which
//!   holding none would be right instead: lab/README.md, "Unpaced loops
//!   hold a lone acknowledgement for one acknowledgement";
//! * the connection never sends two packets closer than [`SPACING_FLOOR`]
//!   times its mean gap, where the loops' clocks, released by the same
//!   acknowledgement, would put them together.

use std::fmt;
use std::time::Duration;

use crate::controller::AckedPacket;
use crate::controller::CongestionEvent;
use crate::controller::Controller;
use crate::controller::Counters;
use crate::controller::LostPacket;
use crate::controller::Params;
use crate::controller::SentPacket;
use crate::controller::Snapshot;
use crate::controller::Value;
use crate::grammar::Range;
use crate::grammar::SpecError;
use crate::ledger::Ledger;
use crate::time::Time;

/// How many window loops a window controller of weight N runs (the `loops`
/// key of MulTCP and MulCUBIC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loops {
    /// One window worth N flows.
    One,
    /// A standard flow's loop for each flowshare, each with its own packets
    /// and pacing clock ([`SeparateLoops`]).
    Separate,
}

impl Loops {
    /// The loops of MulTCP and MulCUBIC unless a spec says otherwise (and
    /// MulTCP's `a` or `b` do: a pair of one's own runs one window).
    pub const DEFAULT: Loops = Loops::Separate;
}

/// The values of the `loops` key.
pub const LOOPS: [(&str, Loops); 2] = [("one", Loops::One), ("separate", Loops::Separate)];

/// The smallest part of a flow kept as a loop of its own; less of N is
/// dropped.
const SMALLEST_FRACTION: f64 = 0.01;

/// How long a loop's lone acknowledgement is held for its pair: RFC 9000's
/// default `max_ack_delay`, what a flow's own receiver would wait.
pub const MAX_ACK_DELAY: Duration = Duration::from_millis(25);

/// The smallest window, in packets, at which a loop's acknowledgements are
/// held for their pairs; a loop with less hears of each at once. A measured
/// setting: on the lab's 10 and 20 Mbit/s paths at N = 30, where each loop
/// has a window of one to three packets, holding every loop's left MulTCP
/// at 0.82-0.90 of N flowshares on drop-tail at 10 Mbit/s, where 30
/// separate connections hold; holding none took that to 0.97-1.05 but
/// overshot at N = 8 (1.08-1.14) and on RED (1.14-1.19); holding from 4
/// packets gives 0.90-1.01 on drop-tail at both rates and 1.07-1.17 on RED,
/// raises N = 16 by up to 0.09 and moves N <= 8 by 0.03 or less
/// (lab/README.md, "Separate loops in one connection"). Holding for 10 ms
/// instead of 25 changed nothing (0.81-0.87).
pub const HELD_FROM_WINDOW_PACKETS: usize = 4;

/// The shortest gap between two of the connection's packets, over the mean
/// gap of the loops' rates together. Regular spacing takes more than its
/// share at a full drop-tail queue and bunched packets less, so this is a
/// measured setting: the lab's small paths (20 and 10 Mbit/s, 40 ms, 4 Reno
/// or CUBIC peers, drop-tail of 1 and 0.5 BDP and RED, N = 2-30) held 46, 50,
/// 54, 59, 47 and 32 of about 70 judged cells with 0, 1/8, 1/4, 1/2, 3/4
/// and 1; below 1/2 the connection falls short on drop-tail, above it takes
/// more (lab/README.md, "Separate loops in one connection").
pub const SPACING_FLOOR: f64 = 0.5;

/// One flow of the connection.
#[derive(Debug)]
struct Loop<C> {
    controller: C,
    /// The flowshares this loop stands for: one, or the rest of N.
    weight: f64,
    /// Whether the loop takes new packets. A weight change that leaves
    /// fewer loops retires the rest: they keep only what they have in
    /// flight until it is acknowledged or lost, and a later rise of the
    /// weight takes them up again.
    active: bool,
    /// The controller's window and pacing rate, and whether it lets the
    /// loop send with what it has in flight, as of its last event: the host
    /// asks for the connection's after every packet and event, and only the
    /// loop an event went to can have changed.
    window: usize,
    rate: Option<u64>,
    open: bool,
    /// Bytes of this loop's packets in flight.
    in_flight: usize,
    /// When this loop's pacing clock lets its next packet leave; `None`
    /// before its first packet or when it does not pace.
    due: Option<Time>,
    /// Acknowledgements of this loop's packets held back, with when the
    /// host processed them: a separate flow's receiver acknowledges every
    /// second packet of its own and holds a lone one.
    held: Vec<(AckedPacket, Time)>,
    /// Their bytes, which the host no longer counts in flight.
    held_bytes: usize,
    /// This loop's part of the event being processed: its acknowledgements
    /// let go and its losses (capacity kept between events).
    acked: Vec<AckedPacket>,
    lost: Vec<LostPacket>,
}

impl<C: Controller> Loop<C> {
    fn new(controller: C, weight: f64) -> Self {
        let (window, rate, open) = (controller.congestion_window(), controller.pacing_rate(), controller.can_send(0));
        Loop {
            controller,
            weight,
            active: true,
            window,
            rate,
            open,
            in_flight: 0,
            due: None,
            held: Vec::new(),
            held_bytes: 0,
            acked: Vec::new(),
            lost: Vec::new(),
        }
    }

    /// Reads the window, pacing rate and whether it may send again after an
    /// event of the loop's (its packets in flight change only with one).
    fn refresh(&mut self) {
        self.window = self.controller.congestion_window();
        self.rate = self.controller.pacing_rate();
        self.open = self.controller.can_send(self.in_flight);
    }

    /// Whether a packet of `bytes` fits in this loop's window whole (a loop
    /// with nothing in flight may always send one, as a host lets a lone
    /// flow do).
    fn has_room(&self, bytes: usize) -> bool {
        self.active && (self.in_flight == 0 || self.in_flight + bytes <= self.window && self.open)
    }
}

/// Builds a loop of the given weight: one flow of the algorithm, or the
/// rest of N.
pub type MakeLoop<C> = Box<dyn Fn(f64) -> C + Send + Sync>;

/// N standard flows in one connection (`loops=separate`), each a `C`.
pub struct SeparateLoops<C> {
    /// The algorithm the loops run, for the snapshot and errors.
    algorithm: &'static str,
    n: f64,
    /// The weights `set_weight` accepts: the algorithm's.
    weights: Range,
    make: MakeLoop<C>,
    /// Every loop built, active or retired, at the index the ledger names
    /// it by.
    loops: Vec<Loop<C>>,
    /// The loop and size of every packet in flight.
    owners: Ledger<usize>,
    /// The loop that is the whole connection, if one is: the only active
    /// loop, with none of its acknowledgements held and no retired loop's
    /// packets in flight. The host's calls then go to it unchanged.
    alone: Option<usize>,
    /// Where the host counts the gap before the next packet from: when it
    /// sent the last one, or when it had scheduled it if that is later.
    pace_from: Option<Time>,
    /// When the host's pacer will let the next packet leave (see
    /// [`SeparateLoops::schedule`]).
    scheduled: Option<Time>,
    /// Whether the host paces yet: from its first RTT sample on, before
    /// which the lab's sender and quiche's first burst send unpaced.
    host_paces: bool,
    max_datagram_size: usize,
    counters: Counters,
}

impl<C: fmt::Debug> fmt::Debug for SeparateLoops<C> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("SeparateLoops")
            .field("algorithm", &self.algorithm)
            .field("n", &self.n)
            .field("loops", &self.loops)
            .finish_non_exhaustive()
    }
}

/// The weights of the loops of N: one for each whole flowshare and one for
/// the rest where it is at least [`SMALLEST_FRACTION`]; below one flowshare
/// one loop of N.
fn loop_weights(n: f64) -> Vec<f64> {
    let whole = n.floor() as usize;
    let fraction = n - n.floor();
    if whole == 0 {
        return vec![n];
    }
    let mut weights = vec![1.0; whole];
    if fraction >= SMALLEST_FRACTION {
        weights.push(fraction);
    }
    weights
}

impl<C: Controller> SeparateLoops<C> {
    /// The loops of weight `n` of `algorithm`, each built by `make` of its
    /// weight ([`loop_weights`]); `weights` is the range of N the algorithm
    /// accepts, for later weight changes.
    pub fn new(algorithm: &'static str, n: f64, weights: Range, make: MakeLoop<C>, params: &Params) -> Self {
        let loops = loop_weights(n).into_iter().map(|weight| Loop::new(make(weight), weight)).collect();
        let mut connection = SeparateLoops {
            algorithm,
            n,
            weights,
            make,
            loops,
            owners: Ledger::default(),
            alone: None,
            pace_from: None,
            scheduled: None,
            host_paces: false,
            max_datagram_size: params.max_datagram_size,
            counters: Counters::default(),
        };
        connection.find_alone();
        connection
    }

    /// Finds whether one loop is the whole connection ([`Self::alone`]),
    /// after anything that changes which loops are active, what they hold
    /// or what they have in flight.
    fn find_alone(&mut self) {
        let mut active = self.loops.iter().enumerate().filter(|(_, flow)| flow.active);
        let idle = |flow: &Loop<C>| flow.in_flight == 0 && flow.held.is_empty();
        self.alone = match (active.next(), active.next()) {
            (Some((index, flow)), None)
                if flow.held.is_empty() && self.loops.iter().all(|other| other.active || idle(other)) =>
            {
                Some(index)
            }
            _ => None,
        };
    }

    /// A congestion event of the connection of one loop: the loop's
    /// controller hears it as the host reported it, and the ledger lets go
    /// of the packets in it.
    fn alone_event(&mut self, index: usize, event: &CongestionEvent) {
        let numbers =
            event.acked.iter().map(|packet| packet.number).chain(event.lost.iter().map(|packet| packet.number));
        let gone: usize = numbers.filter_map(|number| self.owners.resolve(number)).map(|(_, bytes)| bytes).sum();
        let flow = &mut self.loops[index];
        flow.in_flight = flow.in_flight.saturating_sub(gone);
        self.counters.loss_events += hear(&mut flow.controller, event);
        flow.refresh();
    }

    /// The loops that take packets.
    fn active(&self) -> impl Iterator<Item = &Loop<C>> {
        self.loops.iter().filter(|flow| flow.active)
    }

    /// The loop with room for a packet of `bytes` whose clock is due first
    /// (the first of equals), if any has room.
    fn first_due_with_room(&self, bytes: usize) -> Option<usize> {
        (0..self.loops.len())
            .filter(|&index| self.loops[index].has_room(bytes))
            .min_by_key(|&index| self.loops[index].due)
    }

    /// The loop the next packet of `bytes` goes to: the first due of those
    /// with room, else the one with the most room.
    fn next_loop(&self, bytes: usize) -> usize {
        self.first_due_with_room(bytes).unwrap_or_else(|| {
            let spare = |flow: &Loop<C>| flow.window as f64 - flow.in_flight as f64;
            (0..self.loops.len())
                .filter(|&index| self.loops[index].active)
                .max_by(|&a, &b| spare(&self.loops[a]).total_cmp(&spare(&self.loops[b])))
                .unwrap_or(0)
        })
    }

    /// Follows the host's pacer after `packet`: a pacer that asks for the
    /// rate after each packet it sends schedules the next one at the later
    /// of the packet's send time and its own schedule, plus the packet's
    /// bytes over the rate (quiche's pacer, the lab's sender). The rate
    /// this controller reports spaces the next packet to a loop's due time,
    /// so it must count from where the host counts: a host that sent the
    /// packet ahead of its schedule (quiche lets every second packet out at
    /// once, and the server builds packets ahead of their release) would
    /// otherwise add the time it was ahead to the next gap, and again to
    /// each gap after it: with packets let out in pairs, 60 packets moved
    /// the schedule 6.3 times as far as the loops' rate would (the test
    /// `a_host_that_sends_ahead_of_its_schedule_keeps_to_the_loops_due_times`).
    /// The lab's sender sends a packet no earlier than its schedule, so
    /// there the host counts from the send time either way (the lab's
    /// results are unchanged, byte for byte).
    fn schedule(&mut self, packet: &SentPacket) {
        let from = match self.scheduled {
            Some(scheduled) if self.host_paces => scheduled.max(packet.time),
            _ => packet.time,
        };
        self.pace_from = Some(from);
        self.scheduled = self.pacing_rate().filter(|&rate| rate > 0).map(|rate| from + pacing_gap(packet.bytes, rate));
    }
}

/// Tells a loop's controller of an event of its packets and returns the
/// loss events it counted for it, which the connection's counters add up.
fn hear<C: Controller>(controller: &mut C, event: &CongestionEvent) -> u64 {
    let before = controller.counters().loss_events;
    controller.on_congestion_event(event);
    controller.counters().loss_events - before
}

/// The gap a pacer leaves after a packet of `bytes` at `rate` bytes per
/// second, to the nanosecond below, as the lab's sender computes it.
fn pacing_gap(bytes: usize, rate: u64) -> Duration {
    Duration::from_nanos((bytes as u128 * 1_000_000_000 / rate as u128) as u64)
}

impl<C: Controller> Controller for SeparateLoops<C> {
    fn on_packet_sent(&mut self, packet: &SentPacket) {
        self.counters.record_sent(packet);
        if !self.owners.takes(packet.number) {
            // Out of order: no loop could be told of its acknowledgement, so
            // it is not tracked; a connection of one loop hears of it as the
            // one window would.
            if let Some(index) = self.alone {
                self.loops[index].controller.on_packet_sent(packet);
                self.loops[index].refresh();
            }
        } else {
            let index = self.alone.unwrap_or_else(|| self.next_loop(packet.bytes));
            let flow = &mut self.loops[index];
            let bytes_in_flight = if self.alone.is_some() { packet.bytes_in_flight } else { flow.in_flight };
            flow.controller.on_packet_sent(&SentPacket { bytes_in_flight, ..*packet });
            flow.in_flight += packet.bytes;
            flow.refresh();
            flow.due = flow
                .rate
                .filter(|&rate| rate > 0)
                .map(|rate| flow.due.map_or(packet.time, |due| due.max(packet.time)) + pacing_gap(packet.bytes, rate));
            self.owners.push(packet.number, packet.bytes, index);
        }
        self.schedule(packet);
    }

    fn on_congestion_event(&mut self, event: &CongestionEvent) {
        self.counters.record_event(event);
        self.host_paces |= event.rtt_updated;
        if let Some(index) = self.alone {
            self.alone_event(index, event);
            return;
        }
        for packet in event.acked {
            if let Some((index, _)) = self.owners.resolve(packet.number) {
                let flow = &mut self.loops[index];
                flow.held.push((*packet, event.now));
                flow.held_bytes += packet.bytes;
            }
        }
        for packet in event.lost {
            if let Some((index, _)) = self.owners.resolve(packet.number) {
                self.loops[index].lost.push(*packet);
            }
        }
        for flow in &mut self.loops {
            if let Some(&(_, oldest)) = flow.held.first() {
                // Pairs go on; a lone acknowledgement waits for its pair, a
                // loss of the loop's or the receiver's delay, unless the
                // loop's window is too small to hold it for. An unpaced
                // loop's lone one waits for one more acknowledgement of the
                // connection at most (the module's documentation says why).
                let small = flow.window < HELD_FROM_WINDOW_PACKETS * self.max_datagram_size;
                let unpaced_waited = flow.rate.is_none() && oldest < event.now;
                let waited = event.now.saturating_duration_since(oldest) >= MAX_ACK_DELAY;
                let release = if !flow.lost.is_empty() || small || unpaced_waited || waited {
                    flow.held.len()
                } else {
                    flow.held.len() / 2 * 2
                };
                flow.acked.extend(flow.held.drain(..release).map(|(packet, _)| packet));
            }
            if flow.acked.is_empty() && flow.lost.is_empty() {
                continue;
            }
            // The acknowledgements let go are all that leaves the held ones.
            let released: usize = flow.acked.iter().map(|p| p.bytes).sum();
            flow.held_bytes -= released;
            let prior = flow.in_flight;
            let gone = released + flow.lost.iter().map(|p| p.bytes).sum::<usize>();
            flow.in_flight = prior.saturating_sub(gone);
            let own = CongestionEvent {
                acked: &flow.acked,
                lost: &flow.lost,
                prior_in_flight: prior,
                bytes_in_flight: flow.in_flight,
                ..*event
            };
            self.counters.loss_events += hear(&mut flow.controller, &own);
            flow.refresh();
            flow.acked.clear();
            flow.lost.clear();
        }
        self.find_alone();
    }

    fn on_retransmission_timeout(&mut self, now: Time) {
        self.counters.timeouts += 1;
        for flow in &mut self.loops {
            flow.controller.on_retransmission_timeout(now);
            flow.refresh();
        }
    }

    fn on_persistent_congestion(&mut self, now: Time) {
        self.counters.persistent_congestion += 1;
        for flow in &mut self.loops {
            flow.controller.on_persistent_congestion(now);
            flow.refresh();
        }
    }

    fn on_app_limited(&mut self, bytes_in_flight: usize) {
        let alone = self.alone;
        for (index, flow) in self.loops.iter_mut().enumerate() {
            flow.controller.on_app_limited(if alone == Some(index) { bytes_in_flight } else { flow.in_flight });
            flow.refresh();
        }
    }

    fn on_packet_discarded(&mut self, number: u64) {
        match (self.owners.resolve(number), self.alone) {
            (Some((index, bytes)), _) => {
                let flow = &mut self.loops[index];
                flow.in_flight = flow.in_flight.saturating_sub(bytes);
                flow.controller.on_packet_discarded(number);
                flow.refresh();
                self.find_alone();
            }
            (None, Some(index)) => {
                self.loops[index].controller.on_packet_discarded(number);
                self.loops[index].refresh();
            }
            (None, None) => {}
        }
    }

    fn set_max_datagram_size(&mut self, bytes: usize) {
        self.max_datagram_size = bytes;
        for flow in &mut self.loops {
            flow.controller.set_max_datagram_size(bytes);
            flow.refresh();
        }
    }

    /// Gives the connection the loops of `weight`: the active loops take
    /// the new loops' weights in order, loops left over retire (their
    /// packets in flight still count), and loops still missing are taken up
    /// again from the retired ones or start as new flows do.
    fn set_weight(&mut self, weight: f64) -> Result<(), SpecError> {
        if !self.weights.contains(weight) {
            return Err(SpecError::out_of_range(self.algorithm, "n", weight, self.weights));
        }
        let targets = loop_weights(weight);
        let (active, retired): (Vec<usize>, Vec<usize>) =
            (0..self.loops.len()).partition(|&index| self.loops[index].active);
        let mut slots = active.into_iter().chain(retired);
        for &target in &targets {
            match slots.next() {
                Some(index) => {
                    let alone = self.alone == Some(index);
                    let flow = &mut self.loops[index];
                    // The loop that is the whole connection hears of every
                    // weight, as the one window would.
                    if flow.weight != target || alone {
                        flow.controller.set_weight(target)?;
                        flow.weight = target;
                    }
                    flow.active = true;
                    flow.refresh();
                }
                None => {
                    let mut controller = (self.make)(target);
                    controller.set_max_datagram_size(self.max_datagram_size);
                    self.loops.push(Loop::new(controller, target));
                }
            }
        }
        for index in slots {
            self.loops[index].active = false;
        }
        self.n = weight;
        self.find_alone();
        Ok(())
    }

    /// What the host may keep in flight: the window of the loop that is the
    /// whole connection, if one is; else each active loop's window, or what
    /// it has in flight where that is more (a loop in recovery), so that one
    /// loop over its window does not hold the others back, and what retired
    /// loops still have in flight; each less the packets whose
    /// acknowledgements the loop holds. The host has counted those out of
    /// flight already, so counted in here they left it room that no loop
    /// had, and it filled that room again after every packet: quiche sends
    /// by this window alone (`can_send` only tells its pacer why it
    /// waits). In the testbed MulTCP(4) then sent at twice its loops'
    /// rate whenever their windows were full, lost 7 % of its packets and
    /// ran the loops' clocks seconds ahead, then sent nothing for 2-6 s
    /// until they came due (testbed/README.md). The lab's sender also asks
    /// `can_send`, which is why the lab never showed it.
    fn congestion_window(&self) -> usize {
        if let Some(index) = self.alone {
            return self.loops[index].window;
        }
        self.loops
            .iter()
            .map(|flow| {
                let counted = if flow.active { flow.window.max(flow.in_flight) } else { flow.in_flight };
                counted.saturating_sub(flow.held_bytes)
            })
            .sum()
    }

    /// Spaces the next packet to the due time of the loop it will go to, at
    /// least [`SPACING_FLOOR`] times the loops' mean gap after the last one,
    /// counted from where the host counts ([`SeparateLoops::schedule`]).
    /// Where no loop has room the floor alone: the packet leaves when an
    /// acknowledgement opens one, as that loop's own host would let it.
    /// None when the loops do not pace (`pacing=off`). The loop that is the
    /// whole connection paces as its controller does.
    fn pacing_rate(&self) -> Option<u64> {
        if let Some(index) = self.alone {
            return self.loops[index].rate;
        }
        let bytes = self.max_datagram_size as u128;
        let total: u64 = self.active().filter_map(|flow| flow.rate).sum();
        if total == 0 {
            return None;
        }
        let Some(from) = self.pace_from else { return Some(total) };
        let floor = (bytes as f64 * 1e9 / total as f64 * SPACING_FLOOR) as u128;
        let due = self.first_due_with_room(self.max_datagram_size).and_then(|index| self.loops[index].due);
        let gap = due.map_or(0, |due| due.saturating_duration_since(from).as_nanos());
        Some((bytes * 1_000_000_000 / gap.max(floor).max(1)).min(u64::MAX as u128) as u64)
    }

    fn can_send(&self, bytes_in_flight: usize) -> bool {
        if let Some(index) = self.alone {
            return self.loops[index].controller.can_send(bytes_in_flight);
        }
        self.loops.iter().any(|flow| flow.has_room(self.max_datagram_size))
    }

    fn in_recovery(&self) -> bool {
        self.active().any(|flow| flow.controller.in_recovery())
    }

    fn ssthresh(&self) -> Option<usize> {
        self.active().map(|flow| flow.controller.ssthresh()).sum()
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn snapshot(&self) -> Snapshot {
        if let Some(index) = self.alone {
            return self.loops[index].controller.snapshot();
        }
        // A weight always leaves one loop active.
        let phase = self.active().next().map_or("retired", |first| first.controller.snapshot().phase);
        Snapshot {
            algorithm: self.algorithm,
            phase,
            congestion_window: self.active().map(|flow| flow.window).sum(),
            ssthresh: self.ssthresh(),
            pacing_rate: self.active().map(|flow| flow.controller.snapshot().pacing_rate).sum(),
            weight: Some(self.n),
            state: vec![("loops", Value::Integer(self.active().count() as u64))],
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::aimd::Aimd;
    use crate::mulcubic::MulCubic;
    use crate::mulcubic::MulCubicConfig;
    use crate::multcp::MulTcp;
    use crate::multcp::MulTcpConfig;
    use crate::testing;
    use crate::testing::Host;
    use crate::testing::MSS;

    fn loops(spec: &str) -> SeparateLoops<MulTcp> {
        testing::config::<MulTcpConfig>(spec).separate_loops(&testing::params())
    }

    fn windows<C: Controller>(controller: &SeparateLoops<C>) -> Vec<usize> {
        controller.loops.iter().map(|flow| flow.controller.congestion_window() / MSS).collect()
    }

    /// The loop that packet `number` went to (while it is in flight).
    fn owner<C>(controller: &SeparateLoops<C>, number: u64) -> usize {
        controller.owners.owner(number).unwrap_or(usize::MAX)
    }

    /// The packets among the first `count` sent that went to loop `index`.
    fn packets_of<C>(controller: &SeparateLoops<C>, index: usize, count: u64) -> Vec<u64> {
        (0..count).filter(|&number| owner(controller, number) == index).collect()
    }

    #[test]
    fn a_loop_per_flowshare_and_one_for_the_rest() {
        assert_eq!(windows(&loops("multcp:n=4,loops=separate")), vec![10; 4]);
        let fractional = loops("multcp:n=2.5,loops=separate");
        assert_eq!(fractional.loops.len(), 3);
        assert_eq!(fractional.loops[2].controller.config().n, 0.5);
        assert_eq!(loops("multcp:n=2.001,loops=separate").loops.len(), 2);
        // Every loop is a standard flow, whatever N is.
        assert!(fractional.loops[..2].iter().all(|flow| flow.controller.config().aimd == Aimd::STANDARD));
    }

    fn active_weights(controller: &SeparateLoops<MulTcp>) -> Vec<f64> {
        controller.active().map(|flow| flow.weight).collect()
    }

    #[test]
    fn a_lower_weight_retires_loops_that_keep_their_packets_until_they_are_acknowledged() {
        let mut host = Host::new(loops("multcp:n=4,loops=separate"));
        host.send_allowed(100);
        host.controller.set_weight(2.5).unwrap();
        assert_eq!(active_weights(&host.controller), [1.0, 1.0, 0.5]);
        assert_eq!(host.controller.loops[2].controller.config().n, 0.5);
        let retired = &host.controller.loops[3];
        assert!(!retired.active && retired.in_flight == 10 * MSS && !retired.has_room(MSS));
        assert_eq!(host.controller.snapshot().number("loops"), Some(3.0));
        assert_eq!(host.controller.snapshot().weight, Some(2.5));
        // The retired loop's packets still count against the host's window
        // and still reach it when acknowledged.
        assert_eq!(host.controller.congestion_window(), 30 * MSS + 10 * MSS);
        let mine = packets_of(&host.controller, 3, 40);
        host.event(&mine, &[]);
        assert_eq!(host.controller.loops[3].in_flight, 0);
        assert_eq!(host.controller.loops[3].controller.counters().packets_acked, 10);
        assert_eq!(host.controller.congestion_window(), 30 * MSS);
        // New packets go only to the active loops.
        host.send_allowed(100);
        assert_eq!(host.controller.loops[3].in_flight, 0);
    }

    #[test]
    fn a_higher_weight_takes_retired_loops_up_again_and_adds_new_flows() {
        let mut host = Host::new(loops("multcp:n=3,loops=separate"));
        host.send_allowed(100);
        host.controller.set_weight(1.0).unwrap();
        assert_eq!(active_weights(&host.controller), [1.0]);
        host.controller.set_weight(0.5).unwrap();
        assert_eq!(active_weights(&host.controller), [0.5]);
        host.controller.set_weight(5.25).unwrap();
        assert_eq!(active_weights(&host.controller), [1.0, 1.0, 1.0, 1.0, 1.0, 0.25]);
        assert_eq!(host.controller.loops.len(), 6);
        // A new loop starts as a new flow does; a loop taken up again goes on
        // from where it was.
        assert_eq!(windows(&host.controller)[3..], [10, 10, 10]);
        assert_eq!(host.controller.loops[1].in_flight, 10 * MSS);
        assert!(host.controller.can_send(host.in_flight));
    }

    #[test]
    fn a_weight_out_of_range_is_refused_and_changes_nothing() {
        let mut controller = loops("multcp:n=4,loops=separate");
        for weight in [0.0, -1.0, 300.0, f64::NAN] {
            let error = controller.set_weight(weight).unwrap_err().to_string();
            assert!(error.starts_with("multcp: n = "), "{error}");
            assert_eq!(active_weights(&controller), [1.0; 4]);
        }
    }

    #[test]
    fn packets_fill_every_loop_and_the_host_sees_the_sum_of_the_windows() {
        let mut host = Host::new(loops("multcp:n=4,loops=separate"));
        assert_eq!(host.controller.congestion_window(), 40 * MSS);
        let sent = host.send_allowed(100);
        assert_eq!(sent.end - sent.start, 40);
        assert!(host.controller.loops.iter().all(|flow| flow.in_flight == 10 * MSS));
        assert!(!host.controller.can_send(host.in_flight));
    }

    #[test]
    fn a_loss_backs_off_the_loop_whose_packet_it_was_and_no_other() {
        let mut host = Host::new(loops("multcp:n=4,loops=separate"));
        host.send_allowed(100);
        let hit = owner(&host.controller, 5);
        host.event(&[], &[5]);
        let after = windows(&host.controller);
        for (index, &window) in after.iter().enumerate() {
            assert_eq!(window, if index == hit { 5 } else { 10 }, "{after:?}");
        }
        // Half of one flow's window, where MulTCP(4)'s one window would lose
        // an eighth of its whole. The host may keep the hit loop's nine
        // packets in flight until they are acknowledged.
        assert_eq!(host.controller.snapshot().congestion_window, 35 * MSS);
        assert_eq!(host.controller.congestion_window(), 39 * MSS);
        assert!(!host.controller.loops[hit].has_room(MSS));
    }

    /// A host of `spec` that has filled every loop's window, the loop that
    /// took packet 0 and that loop's packets among the first 20.
    fn windows_full(spec: &str) -> (Host<SeparateLoops<MulTcp>>, usize, Vec<u64>) {
        let mut host = Host::new(loops(spec));
        host.send_allowed(100);
        let first = owner(&host.controller, 0);
        let mine = packets_of(&host.controller, first, 20);
        (host, first, mine)
    }

    /// The acknowledgements loop `index` has heard of.
    fn heard(host: &Host<SeparateLoops<MulTcp>>, index: usize) -> u64 {
        host.controller.loops[index].controller.counters().packets_acked
    }

    #[test]
    fn a_loop_hears_of_its_acknowledgements_in_pairs_or_after_the_delay() {
        let (mut host, first, mine) = windows_full("multcp:n=2,loops=separate");
        host.event(&[mine[0]], &[]);
        assert_eq!(heard(&host, first), 0, "a lone acknowledgement waits");
        host.event(&[mine[1]], &[]);
        assert_eq!(heard(&host, first), 2, "its pair releases both");
        host.event(&[mine[2]], &[]);
        host.now = host.now + Duration::from_millis(1);
        host.event(&[], &[]);
        assert_eq!(heard(&host, first), 2, "a paced loop's lone one waits past the connection's next event");
        host.now = host.now + MAX_ACK_DELAY;
        host.event(&[], &[]);
        assert_eq!(heard(&host, first), 3, "the receiver's delay releases a lone one");
        // Held packets stay in the loop's flight until it hears of them.
        host.event(&[mine[3]], &[]);
        assert_eq!(host.controller.loops[first].in_flight, (10 - 3) * MSS);
    }

    #[test]
    fn an_unpaced_loop_holds_a_lone_acknowledgement_for_one_more_of_the_connection() {
        let (mut host, first, mine) = windows_full("multcp:n=2,loops=separate,pacing=off");
        let others = packets_of(&host.controller, 1 - first, 20);
        host.event(&[mine[0]], &[]);
        assert_eq!(heard(&host, first), 0, "a lone acknowledgement waits");
        host.event(&[others[0]], &[]);
        assert_eq!(heard(&host, first), 0, "for a later acknowledgement, not one processed at the same time");
        host.now = host.now + Duration::from_millis(1);
        host.event(&[others[1]], &[]);
        assert_eq!(heard(&host, first), 1, "the connection's next acknowledgement lets it go without its pair");
        host.now = host.now + Duration::from_millis(1);
        host.event(&[mine[1], mine[2]], &[]);
        assert_eq!(heard(&host, first), 3, "a pair goes on at once");
    }

    #[test]
    fn a_loop_with_a_window_under_four_packets_hears_of_each_acknowledgement_at_once() {
        let (mut host, first, mine) = windows_full("multcp:n=2,loops=separate");
        // Persistent congestion takes every loop to the minimum window.
        host.controller.on_persistent_congestion(host.now);
        let flow = &host.controller.loops[first];
        assert!(flow.window < HELD_FROM_WINDOW_PACKETS * MSS, "{}", flow.window);
        let before = heard(&host, first);
        host.event(&[mine[1]], &[]);
        assert_eq!(heard(&host, first), before + 1);
    }

    #[test]
    fn the_packets_leave_no_closer_than_the_floor_of_the_mean_gap() {
        let mut host = Host::new(loops("multcp:n=8,loops=separate"));
        host.send(1);
        let total: u64 = host.controller.loops.iter().filter_map(|flow| flow.controller.pacing_rate()).sum();
        let rate = host.controller.pacing_rate().unwrap();
        assert!(rate <= (total as f64 / SPACING_FLOOR) as u64 + 1, "{rate} against {total}");
        assert_eq!(loops("multcp:n=8,loops=separate,pacing=off").pacing_rate(), None);
    }

    /// Sends `count` packets through a pacer that schedules as quiche's
    /// does (the next packet at the later of the schedule and the send
    /// time, plus the packet over the rate asked for after it), letting
    /// every second packet out with the one before it, as quiche's lumpy
    /// pacing does; the windows have room throughout. Returns how far the
    /// schedule moved over how far the loops' mean rate would move it.
    fn schedule_over_mean_gaps(lumpy: bool, count: u32) -> f64 {
        let mut host = Host::new(loops("multcp:n=4,loops=separate"));
        host.round();
        host.round();
        assert!(host.controller.congestion_window() >= 2 * count as usize * MSS);
        let total: u64 = host.controller.loops.iter().filter_map(|flow| flow.rate).sum();
        let start = host.now;
        let mut release = start;
        for k in 0..count {
            if !(lumpy && k % 2 == 1) {
                host.now = host.now.max(release);
            }
            host.send(1);
            let rate = host.controller.pacing_rate().unwrap();
            release = release.max(host.now) + pacing_gap(MSS, rate);
        }
        let mean_gap = MSS as f64 / total as f64;
        release.saturating_duration_since(start).as_secs_f64() / (count as f64 * mean_gap)
    }

    #[test]
    fn a_host_that_sends_ahead_of_its_schedule_keeps_to_the_loops_due_times() {
        let on_time = schedule_over_mean_gaps(false, 60);
        let lumpy = schedule_over_mean_gaps(true, 60);
        assert!((0.9..1.1).contains(&on_time), "{on_time}");
        // Counted from the send time, the time a lumpy packet was ahead of
        // its schedule went into every gap after it: the schedule moved 6.3
        // times as far as the loops' rate would over these 60 packets, and
        // further the more packets.
        assert!((on_time - lumpy).abs() < 0.05, "{lumpy} against {on_time}");
    }

    #[test]
    fn a_connection_built_at_one_flowshare_runs_loops_once_its_weight_rises() {
        let mut host = Host::new(loops("multcp:n=1,loops=separate"));
        assert_eq!(host.controller.alone, Some(0));
        host.send_allowed(100);
        host.controller.set_weight(3.0).unwrap();
        assert_eq!(host.controller.alone, None);
        assert_eq!(active_weights(&host.controller), [1.0; 3]);
        // The new loops start as new flows; the first keeps its packets.
        assert_eq!(windows(&host.controller), [10; 3]);
        assert_eq!(host.controller.congestion_window(), 30 * MSS);
        assert_eq!(host.send_allowed(100).count(), 20);
        // Back at one flowshare, the connection is one loop again once the
        // retired loops' packets are acknowledged.
        host.controller.set_weight(1.0).unwrap();
        let retired: Vec<u64> =
            packets_of(&host.controller, 1, 30).into_iter().chain(packets_of(&host.controller, 2, 30)).collect();
        assert_eq!(retired.len(), 20);
        host.event(&retired[..10], &[]);
        assert_eq!(host.controller.alone, None);
        host.event(&retired[10..], &[]);
        assert_eq!(host.controller.alone, Some(0));
    }

    /// Drives `loops` and `window` alike through `ops` (weights kept within
    /// one flowshare) and checks that the host sees the same window, pacing
    /// rate, permission to send, counters and snapshot after every call.
    fn call_for_call<C: Controller>(
        loops: SeparateLoops<C>,
        window: C,
        ops: &[testing::Op],
    ) -> Result<(), TestCaseError> {
        let (mut loops, mut window) = (Host::new(loops), Host::new(window));
        for op in ops {
            let op = match *op {
                testing::Op::Weight(weight) => testing::Op::Weight(weight.min(1.0)),
                ref other => other.clone(),
            };
            loops.apply(&op);
            window.apply(&op);
            let (separate, one) = (&loops.controller, &window.controller);
            prop_assert_eq!(separate.alone, Some(0));
            prop_assert_eq!(separate.congestion_window(), one.congestion_window());
            prop_assert_eq!(separate.pacing_rate(), one.pacing_rate());
            prop_assert_eq!(separate.can_send(loops.in_flight), one.can_send(window.in_flight));
            prop_assert_eq!(separate.in_recovery(), one.in_recovery());
            prop_assert_eq!(separate.ssthresh(), one.ssthresh());
            prop_assert_eq!(separate.counters(), one.counters());
            prop_assert_eq!(separate.snapshot(), one.snapshot());
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// At N <= 1 the loops are the one window, MulTCP's and MulCUBIC's.
        #[test]
        fn one_loop_is_the_one_window_call_for_call(
            n in 0.01f64..=1.0,
            ops in proptest::collection::vec(testing::op(), 1..60),
        ) {
            let params = testing::params();
            let multcp = |spec: &str| testing::config::<MulTcpConfig>(&format!("multcp:n={n}{spec}"));
            let loops = multcp("").separate_loops(&params);
            call_for_call(loops, MulTcp::new(multcp(",loops=one"), &params), &ops)?;
            let mulcubic = |spec: &str| testing::config::<MulCubicConfig>(&format!("mulcubic:n={n}{spec}"));
            let loops = mulcubic("").separate_loops(&params);
            call_for_call(loops, MulCubic::new(mulcubic(",loops=one"), &params), &ops)?;
        }

        #[test]
        fn random_event_sequences_keep_every_loop_sane(
            n in 0.01f64..=40.0,
            ops in proptest::collection::vec(testing::op(), 1..60),
        ) {
            let spec = format!("multcp:n={n},loops=separate");
            let mut host = Host::new(loops(&spec));
            for op in &ops {
                host.apply(op);
                let controller = &host.controller;
                // The host may send only what some loop has room for: its
                // window less what it has in flight is at most the loops'
                // room, whatever acknowledgements they hold.
                let room: usize = controller.active().map(|flow| flow.window.saturating_sub(flow.in_flight)).sum();
                let host_room = controller.congestion_window().saturating_sub(host.in_flight);
                prop_assert!(host_room <= room, "the host has {host_room} bytes of room, the loops {room}");
                prop_assert!(controller.active().all(|flow| flow.window >= 2 * host.mss));
                prop_assert!(controller.pacing_rate().is_none_or(|rate| rate > 0));
                for flow in &controller.loops {
                    prop_assert_eq!(flow.window, flow.controller.congestion_window(), "a loop's window is read after its event");
                    prop_assert_eq!(flow.rate, flow.controller.pacing_rate(), "so is its pacing rate");
                    prop_assert_eq!(flow.open, flow.controller.can_send(flow.in_flight), "and whether it may send");
                    prop_assert_eq!(flow.held_bytes, flow.held.iter().map(|(packet, _)| packet.bytes).sum::<usize>());
                }
                let in_flight: usize = controller.loops.iter().map(|flow| flow.in_flight).sum();
                let held: usize = controller.loops.iter().flat_map(|flow| &flow.held).map(|(packet, _)| packet.bytes).sum();
                prop_assert!(in_flight <= host.in_flight + held, "{in_flight} in the loops, {} in the host, {held} held", host.in_flight);
            }
        }
    }
}
