//! The loss-based window loop shared by every AIMD controller.
//!
//! [`WindowLoop`] is the RFC 9002 (section 7.3) congestion window state
//! machine with its AIMD pair as a parameter: slow start until the slow start
//! threshold, additive increase of `a` packets per RTT above it, one
//! multiplicative decrease by `b` per loss event, and a recovery period that
//! ends when a packet sent after the decrease is acknowledged. MulTCP,
//! PA-MulTCP's two loops, the reference Reno and Compound TCP's loss window
//! are all instances.
//!
//! Windows are kept in bytes as real numbers, so that the growth of
//! `a * max_datagram_size * acked / window` per acknowledgement adds up
//! exactly instead of being lost to rounding.
//!
//! A loop can stand for `n` equal flows ([`WindowLoop::set_virtual_flows`]):
//! then every loss of a loss event is attributed to one of the `n` virtual
//! flows at random, and the window loses `b` of itself for each virtual flow
//! the event hits, as `n` separate flows would each back off when their own
//! packets are dropped ([`LossEvent`]). With `k` packets lost the expected
//! number of flows hit is `n (1 - (1 - 1/n)^k)`, so an event that loses one
//! packet decreases by `b` as before, and one that loses many decreases by
//! up to `n b` (never more than half the window, what all `n` flows halving
//! would leave, unless `b` itself is larger). Each hit removes
//! [`hit_window_bias`] times `b`: the flow a loss hits is larger than the
//! mean one. A further loss of the event takes the newly hit flow's share
//! off the window as it is then, so what the flows not hit grew meanwhile
//! stays.
//!
//! The recovery period is tracked by packet number rather than send time:
//! quiche reports lost packets without their send time, and packet numbers
//! increase with send time, so "sent before the decrease" is "numbered at
//! most the largest packet sent before the decrease".

use std::fmt::Debug;
use std::time::Duration;

use crate::ack_delay::AckDelay;
use crate::ack_delay::FlowAcks;
use crate::aimd::Aimd;
use crate::controller::CongestionEvent;
use crate::controller::Controller;
use crate::controller::Counters;
use crate::controller::Params;
use crate::controller::SentPacket;
use crate::controller::Snapshot;
use crate::grammar::choice_name;
use crate::grammar::SpecError;
use crate::pacing::Gaps;
use crate::pacing::Pacing;
use crate::time::Time;
use crate::virtual_flows::LossEvent;
use crate::whole_packets::WholePackets;

/// Minimum congestion window, in packets (RFC 9002, kMinimumWindow).
pub const MINIMUM_WINDOW_PACKETS: f64 = 2.0;

/// Pacing gain in slow start: the window may double within one RTT, so the
/// pacer must release at twice the window per RTT to keep up (Linux uses the
/// same 200%).
pub const SLOW_START_PACING_GAIN: f64 = 2.0;

/// Pacing gain in congestion avoidance: RFC 9002 section 7.7 suggests a
/// value slightly above 1 (1.25) so RTT variation does not leave the window
/// underused.
pub const CONGESTION_AVOIDANCE_PACING_GAIN: f64 = 1.25;

/// How much larger than the mean the window of a Reno flow is when a loss
/// hits it, `E[W²]/E[W]² - 1`: a packet loss picks a flow in proportion to
/// its window, and under random loss a Reno window has `E[W²] = 2/p`
/// (growth of one packet per RTT balances `p W` halvings of `W/2`) and
/// `E[W] = 1.31/√p` (Ott, Kemperman and Mathis), so the flow hit holds
/// 1.165 times the mean window and halves that.
pub const RENO_HIT_WINDOW_EXCESS: f64 = 2.0 / (1.31 * 1.31) - 1.0;

/// The factor by which a hit among `n` equal virtual flows should remove
/// more than `1/n` of the window's `b`: `1 + 0.165 (1 - 1/n)`. The flows
/// hit are larger than the mean ([`RENO_HIT_WINDOW_EXCESS`]); the window
/// itself is sampled the same way, but as the sum of `n` flows its spread
/// is `1/n` of one flow's, so one flow (`n = 1`) needs no correction.
pub fn hit_window_bias(n: f64) -> f64 {
    1.0 + RENO_HIT_WINDOW_EXCESS * (1.0 - 1.0 / n.max(1.0))
}

/// How a loss event decreases a window that stands for several flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decrease {
    /// A window for each flow, each backing off when a loss falls to it
    /// (MulCUBIC's default, [`crate::flow_windows`]).
    Windows,
    /// One window, decreased once for each virtual flow the event's losses
    /// hit (MulTCP's default).
    PerFlow,
    /// Once per loss event, as in the papers (`decrease=paper`).
    Paper,
}

impl Decrease {
    /// The virtual flows one window worth `n` flowshares attributes its
    /// losses to: `n` with [`Decrease::PerFlow`] above one flowshare, else 1.
    pub fn virtual_flows(self, n: f64) -> f64 {
        match self {
            Decrease::PerFlow => n.max(1.0),
            Decrease::Windows | Decrease::Paper => 1.0,
        }
    }

    /// The flows a window worth `n` flowshares keeps a window for: `n` with
    /// [`Decrease::Windows`] above one flowshare, else none.
    pub fn flow_windows(self, n: f64) -> Option<f64> {
        (self == Decrease::Windows && n > 1.0).then_some(n)
    }

    /// The name in specs.
    pub fn name(self) -> &'static str {
        choice_name(&CUBIC_DECREASES, self)
    }
}

/// The values of MulTCP's `decrease` key.
pub const DECREASES: [(&str, Decrease); 2] = [CUBIC_DECREASES[1], CUBIC_DECREASES[2]];

/// The values of MulCUBIC's `decrease` key: also a window for each flow.
pub const CUBIC_DECREASES: [(&str, Decrease); 3] =
    [("windows", Decrease::Windows), ("per-flow", Decrease::PerFlow), ("paper", Decrease::Paper)];

/// A loss-based AIMD window loop.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowLoop {
    /// The AIMD pair used in congestion avoidance and on loss events.
    aimd: Aimd,
    /// Congestion window, bytes.
    window: f64,
    /// Slow start threshold, bytes; infinite until the first loss event.
    ssthresh: f64,
    /// Below this window slow start sends three packets per acknowledged
    /// packet instead of two (MulTCP's rapid slow start); 0 turns it off.
    rapid_slow_start_until: f64,
    /// Largest window allowed, bytes (PA-MulTCP's W_max); infinite if none.
    cap: f64,
    /// The fraction of the window that becomes the slow start threshold on
    /// persistent congestion when [`LossWindow::collapse`] is used; `None`
    /// for `1 - b`, what one loss event would leave.
    collapse_ssthresh_factor: Option<f64>,
    /// Maximum datagram size, bytes: the unit of growth.
    max_datagram_size: f64,
    /// Which of this loop's packets were sent before its last decrease.
    recovery: RecoveryPeriod,
    /// The number of equal flows the loop stands for when it attributes
    /// losses to flows; 1 for one decrease per loss event.
    virtual_flows: f64,
    /// The current loss event of a window standing for several flows.
    event: Option<LossEvent>,
}

impl WindowLoop {
    /// A loop that starts in slow start at the initial window.
    pub fn new(aimd: Aimd, params: &Params) -> Self {
        let max_datagram_size = params.max_datagram_size as f64;
        WindowLoop {
            aimd,
            window: params.initial_window_packets as f64 * max_datagram_size,
            ssthresh: f64::INFINITY,
            rapid_slow_start_until: 0.0,
            cap: f64::INFINITY,
            collapse_ssthresh_factor: None,
            max_datagram_size,
            recovery: RecoveryPeriod::default(),
            virtual_flows: 1.0,
            event: None,
        }
    }

    /// Makes the loop stand for `n` equal flows: a loss event decreases the
    /// window by `b` for each virtual flow its losses hit (module docs);
    /// `n <= 1` is one decrease per loss event.
    pub fn set_virtual_flows(&mut self, n: f64) {
        self.virtual_flows = n.max(1.0);
    }

    /// The fraction of the window a loss event that hit `hits` virtual flows
    /// removes: `b` per flow hit, scaled by [`hit_window_bias`], at most
    /// `max(b, 1/2)`.
    fn event_decrease(aimd: Aimd, virtual_flows: f64, hits: f64) -> f64 {
        let b = aimd.decrease;
        (hits * b * hit_window_bias(virtual_flows)).min(b.max(0.5))
    }

    /// Sends three packets per acknowledged packet in slow start while the
    /// window is below `until` bytes.
    pub fn with_rapid_slow_start(mut self, until: f64) -> Self {
        self.set_rapid_slow_start(until);
        self
    }

    /// Changes the window below which slow start is rapid.
    pub fn set_rapid_slow_start(&mut self, until: f64) {
        self.rapid_slow_start_until = until;
    }

    /// On persistent congestion ([`LossWindow::collapse`]), the slow start
    /// threshold becomes `factor` times the window instead of `1 - b` times.
    pub fn set_collapse_ssthresh_factor(&mut self, factor: f64) {
        self.collapse_ssthresh_factor = Some(factor);
    }

    /// The AIMD pair.
    pub fn aimd(&self) -> Aimd {
        self.aimd
    }

    /// Replaces the AIMD pair; the window is kept.
    pub fn set_aimd(&mut self, aimd: Aimd) {
        self.aimd = aimd;
    }

    /// Limits the window to `cap` bytes: the window and the slow start
    /// threshold are clamped now, and growth stops at the cap. The cap never
    /// forces the window below the minimum window.
    pub fn set_cap(&mut self, cap: f64) {
        self.cap = cap.max(self.minimum_window());
        self.window = self.window.min(self.cap);
        self.ssthresh = self.ssthresh.min(self.cap);
    }

    /// The window cap in bytes (infinite if none).
    pub fn cap(&self) -> f64 {
        self.cap
    }

    /// Congestion window, bytes.
    pub fn window(&self) -> f64 {
        self.window
    }

    /// Slow start threshold, bytes (infinite before the first loss event).
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    /// Whether the loop is in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.window < self.ssthresh
    }

    /// Whether the loop is in a recovery period: it decreased its window and
    /// no packet sent since has been acknowledged.
    pub fn in_recovery(&self) -> bool {
        self.recovery.in_recovery()
    }

    /// The phase name for logs.
    pub fn phase(&self) -> &'static str {
        self.recovery.phase(self.in_slow_start())
    }

    /// The smallest window, bytes (RFC 9002: 2 packets).
    pub fn minimum_window(&self) -> f64 {
        MINIMUM_WINDOW_PACKETS * self.max_datagram_size
    }

    /// Changes the unit of growth; the window is kept at least at the new
    /// minimum window.
    pub fn set_max_datagram_size(&mut self, bytes: usize) {
        self.max_datagram_size = bytes as f64;
        self.window = self.window.max(self.minimum_window());
    }

    /// Records that this loop sent packet `number`.
    pub fn on_sent(&mut self, number: u64) {
        self.recovery.on_sent(number);
    }

    /// Packet `number` of `bytes` bytes, sent by this loop, was
    /// acknowledged. `may_grow` is false when the packet was sent while the
    /// application limited sending.
    pub fn on_ack(&mut self, number: u64, bytes: usize, may_grow: bool) {
        self.on_ack_alongside(number, bytes, may_grow, 0.0);
    }

    /// [`WindowLoop::on_ack`] for a loop that is one part of what is sent per
    /// RTT: `alongside` more bytes (Compound TCP's delay window) are
    /// acknowledged with this loop's window every RTT, so congestion
    /// avoidance spreads its `a` packets per RTT over both.
    pub fn on_ack_alongside(&mut self, number: u64, bytes: usize, may_grow: bool, alongside: f64) {
        self.recovery.on_acked(number);
        if !may_grow || bytes == 0 {
            return;
        }
        if self.recovery.sent_before_decrease(number) {
            // Of the virtual flows, only those the event hit are in
            // recovery: the others grow on as separate flows would.
            if let Some(event) = &self.event {
                let unhit = event.unhit();
                if unhit > 0.0 && self.window < self.cap {
                    let growth =
                        unhit * self.aimd.increase * self.max_datagram_size * bytes as f64 / (self.window + alongside);
                    self.window = (self.window + growth).min(self.cap);
                }
            }
            return;
        }
        let mut remaining = bytes as f64;

        // Slow start: every acknowledged byte adds one byte (two packets sent
        // per packet acknowledged), or two in the rapid phase (three sent).
        while remaining > 0.0 && self.window < self.ssthresh.min(self.cap) {
            let rapid = self.window < self.rapid_slow_start_until;
            let (gain, limit) =
                if rapid { (2.0, self.ssthresh.min(self.rapid_slow_start_until)) } else { (1.0, self.ssthresh) };
            let limit = limit.min(self.cap);
            let used = remaining.min((limit - self.window) / gain);
            self.window += used * gain;
            remaining -= used;
        }

        // Congestion avoidance: a packets per window of acknowledged bytes.
        if remaining > 0.0 && self.window < self.cap {
            let growth = self.aimd.increase * self.max_datagram_size * remaining / (self.window + alongside);
            self.window = (self.window + growth).min(self.cap);
        }
    }

    /// Packet `number`, sent by this loop, was declared lost. Returns whether
    /// this loss started a loss event (and so decreased the window); losses
    /// of packets sent before the last decrease belong to that event.
    pub fn on_loss(&mut self, number: u64) -> bool {
        if self.recovery.sent_before_decrease(number) {
            // Another loss of the event: with virtual flows it may hit one
            // more of them, while the event's recovery lasts.
            let (aimd, virtual_flows) = (self.aimd, self.virtual_flows);
            if let Some(event) = self.event.as_mut().filter(|_| self.recovery.in_recovery()) {
                let taken = event.add_loss(|hits| Self::event_decrease(aimd, virtual_flows, hits));
                self.window = (self.window - taken).max(self.minimum_window());
                self.ssthresh = self.window;
            }
            return false;
        }
        let before = self.window;
        self.event = (self.virtual_flows > 1.0).then(|| LossEvent::start(before, self.virtual_flows));
        let decrease = Self::event_decrease(self.aimd, self.virtual_flows, 1.0);
        self.window = (before * (1.0 - decrease)).max(self.minimum_window());
        self.ssthresh = self.window;
        self.recovery.start(Some(number));
        true
    }

    /// Persistent congestion: the slow start threshold becomes
    /// `ssthresh_factor` times the window, the window collapses to the
    /// minimum, and packets sent so far can no longer start a loss event.
    pub fn on_persistent_congestion(&mut self, ssthresh_factor: f64) {
        self.on_persistent_congestion_to(self.window * ssthresh_factor);
    }

    /// Persistent congestion with the slow start threshold given in bytes,
    /// for algorithms whose threshold depends on more than this loop's
    /// window (Compound TCP's total window).
    pub fn on_persistent_congestion_to(&mut self, ssthresh: f64) {
        self.ssthresh = ssthresh.max(self.minimum_window()).min(self.cap);
        self.window = self.minimum_window();
        self.recovery.start(None);
        self.event = None;
    }

    /// The pacing rate for this window, bytes per second, given the smoothed
    /// RTT in seconds.
    pub fn pacing_rate(&self, smoothed_rtt_seconds: f64) -> u64 {
        pacing_rate(self.window, self.in_slow_start(), smoothed_rtt_seconds)
    }
}

impl LossWindow for WindowLoop {
    fn on_sent(&mut self, number: u64) {
        WindowLoop::on_sent(self, number);
    }

    fn on_acked(&mut self, number: u64, bytes: usize, _now: Time, _smoothed_rtt: Duration, may_grow: bool) {
        self.on_ack(number, bytes, may_grow);
    }

    fn on_lost(&mut self, number: u64) -> bool {
        self.on_loss(number)
    }

    fn collapse(&mut self) {
        let factor = self.collapse_ssthresh_factor.unwrap_or(1.0 - self.aimd.decrease);
        self.on_persistent_congestion(factor);
    }

    fn set_max_datagram_size(&mut self, bytes: usize) {
        WindowLoop::set_max_datagram_size(self, bytes);
    }

    fn max_datagram_size(&self) -> f64 {
        self.max_datagram_size
    }

    fn window(&self) -> f64 {
        self.window
    }

    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    fn in_slow_start(&self) -> bool {
        WindowLoop::in_slow_start(self)
    }

    fn recovery(&self) -> &RecoveryPeriod {
        &self.recovery
    }
}

/// The pacing rate, bytes per second, for sending `window` bytes per
/// smoothed RTT (in seconds), with the gain of the phase.
pub fn pacing_rate(window: f64, in_slow_start: bool, smoothed_rtt_seconds: f64) -> u64 {
    let gain = if in_slow_start { SLOW_START_PACING_GAIN } else { CONGESTION_AVOIDANCE_PACING_GAIN };
    (gain * window / smoothed_rtt_seconds.max(1e-6)) as u64
}

/// A loss-based window state machine (the AIMD [`WindowLoop`], CUBIC's
/// window): what [`SingleWindow`] drives.
pub trait LossWindow: Debug + Send + Sync {
    /// Packet `number` was sent.
    fn on_sent(&mut self, number: u64);

    /// Packet `number` of `bytes` was acknowledged at `now`; `may_grow` is
    /// false for packets sent while app-limited.
    fn on_acked(&mut self, number: u64, bytes: usize, now: Time, smoothed_rtt: Duration, may_grow: bool);

    /// Packet `number` was lost; returns whether a loss event began.
    fn on_lost(&mut self, number: u64) -> bool;

    /// Persistent congestion: the window collapses by the window's rule.
    fn collapse(&mut self);

    /// The maximum datagram size changed.
    fn set_max_datagram_size(&mut self, bytes: usize);

    /// Maximum datagram size, bytes: the window's unit.
    fn max_datagram_size(&self) -> f64;

    /// Congestion window, bytes.
    fn window(&self) -> f64;

    /// Slow start threshold, bytes (infinite before the first loss event).
    fn ssthresh(&self) -> f64;

    /// Whether the window is in slow start.
    fn in_slow_start(&self) -> bool;

    /// Which packets were sent before the last decrease.
    fn recovery(&self) -> &RecoveryPeriod;
}

/// What a single-window algorithm adds to its window: its name and, for
/// weighted ones, the weight and how a change of it reshapes the window.
pub trait WindowAlgorithm<W>: Debug + Send + Sync {
    /// Algorithm name in snapshots.
    fn name(&self) -> &'static str;

    /// The number of flowshares, for weighted algorithms.
    fn weight(&self) -> Option<f64> {
        None
    }

    /// Changes the number of flowshares, reshaping `window`.
    fn set_weight(&mut self, window: &mut W, weight: f64) -> Result<(), SpecError> {
        let _ = (window, weight);
        Err(SpecError::not_settable(self.name(), "n"))
    }

    /// How the connection spaces its packets.
    fn pacing(&self) -> Pacing {
        Pacing::Even
    }

    /// Whether the connection lets out only what its flows' delayed
    /// acknowledgements would ([`crate::ack_delay`]).
    fn ack_delay(&self) -> AckDelay {
        AckDelay::Paper
    }

    /// Whether the connection holds back the remainders of the flows it
    /// stands for ([`crate::whole_packets`]).
    fn whole_packets(&self) -> WholePackets {
        WholePackets::Paper
    }

    /// A packet was lost after `window` took it: `began_event` when the
    /// loss started a loss event, `ended_slow_start` when that event ended
    /// slow start. Algorithms that follow their losses per event (below
    /// one flowshare, [`crate::thinning`]) reshape `window` here.
    fn on_lost(&mut self, window: &mut W, began_event: bool, ended_slow_start: bool) {
        let _ = (window, began_event, ended_slow_start);
    }
}

/// An unweighted algorithm known by its name alone (the reference CUBIC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named(pub &'static str);

impl<W> WindowAlgorithm<W> for Named {
    fn name(&self) -> &'static str {
        self.0
    }
}

/// A controller made of one [`LossWindow`] and its [`WindowAlgorithm`]: the
/// event bookkeeping every single-window algorithm shares (counters,
/// app-limited packets, pacing at the window's rate).
#[derive(Debug)]
pub struct SingleWindow<W, A> {
    /// The window.
    window: W,
    /// The algorithm around it.
    algorithm: A,
    /// Packets sent while app-limited.
    app_limited: AppLimitedTracker,
    /// Smoothed RTT of the last congestion event, for pacing.
    smoothed_rtt: Duration,
    /// The gap after each packet.
    gaps: Gaps,
    /// What the flows' acknowledgements would let out.
    flow_acks: FlowAcks,
    /// Event counts.
    counters: Counters,
}

impl<W: LossWindow, A: WindowAlgorithm<W>> SingleWindow<W, A> {
    /// A controller running `algorithm` on `window`.
    pub fn around(window: W, algorithm: A, params: &Params) -> Self {
        let gaps = Gaps::new(algorithm.pacing(), algorithm.weight().unwrap_or(1.0));
        let flow_acks = FlowAcks::new(algorithm.ack_delay());
        SingleWindow {
            window,
            algorithm,
            app_limited: AppLimitedTracker::default(),
            smoothed_rtt: params.initial_rtt,
            gaps,
            flow_acks,
            counters: Counters::default(),
        }
    }

    /// The window.
    pub fn loss_window(&self) -> &W {
        &self.window
    }

    /// The algorithm around the window.
    pub fn algorithm(&self) -> &A {
        &self.algorithm
    }

    /// What the window lets out, bytes: all of it, or with
    /// `ack_delay=flows` and `whole_packets=flows` what the flows it stands
    /// for would have in flight, never less than the minimum window.
    fn sending_window(&self) -> f64 {
        let (window, mss) = (self.window.window(), self.window.max_datagram_size());
        let floor = window.min(MINIMUM_WINDOW_PACKETS * mss);
        let (n, in_slow_start) = (self.algorithm.weight().unwrap_or(1.0), self.window.in_slow_start());
        let factor =
            self.flow_acks.window_factor(n, self.algorithm.pacing(), in_slow_start, window / mss, self.smoothed_rtt);
        let held_back = self.algorithm.whole_packets().held_back_packets(n, in_slow_start) * mss;
        (window * factor - held_back).max(floor)
    }

    /// The sending window over the RTT: the mean of the rates reported.
    fn mean_pacing_rate(&self) -> u64 {
        pacing_rate(self.sending_window(), self.window.in_slow_start(), self.smoothed_rtt.as_secs_f64())
    }
}

impl<W: LossWindow, A: WindowAlgorithm<W>> Controller for SingleWindow<W, A> {
    fn on_packet_sent(&mut self, packet: &SentPacket) {
        self.counters.record_sent(packet);
        self.window.on_sent(packet.number);
        self.app_limited.on_sent(packet.number);
        self.gaps.on_sent(packet.number);
    }

    fn on_congestion_event(&mut self, event: &CongestionEvent) {
        self.counters.record_event(event);
        self.smoothed_rtt = event.rtt.smoothed;
        self.flow_acks.on_acked(event.acked);
        for packet in event.acked {
            let may_grow = self.app_limited.may_grow(packet.number);
            self.window.on_acked(packet.number, packet.bytes, event.now, event.rtt.smoothed, may_grow);
        }
        for packet in event.lost.iter().filter(|packet| packet.bytes > 0) {
            let in_slow_start = self.window.in_slow_start();
            let began_event = self.window.on_lost(packet.number);
            if began_event {
                self.counters.loss_events += 1;
            }
            self.algorithm.on_lost(&mut self.window, began_event, in_slow_start);
        }
    }

    fn on_retransmission_timeout(&mut self, _now: Time) {
        self.counters.timeouts += 1;
    }

    fn on_persistent_congestion(&mut self, _now: Time) {
        self.counters.persistent_congestion += 1;
        self.window.collapse();
    }

    fn on_app_limited(&mut self, _bytes_in_flight: usize) {
        self.app_limited.on_app_limited();
    }

    fn set_max_datagram_size(&mut self, bytes: usize) {
        self.window.set_max_datagram_size(bytes);
    }

    fn set_weight(&mut self, weight: f64) -> Result<(), SpecError> {
        self.algorithm.set_weight(&mut self.window, weight)?;
        self.gaps.set_weight(weight);
        Ok(())
    }

    fn congestion_window(&self) -> usize {
        self.sending_window() as usize
    }

    fn pacing_rate(&self) -> Option<u64> {
        self.gaps.rate(self.mean_pacing_rate())
    }

    fn in_recovery(&self) -> bool {
        self.window.recovery().in_recovery()
    }

    fn ssthresh(&self) -> Option<usize> {
        let ssthresh = self.window.ssthresh();
        ssthresh.is_finite().then_some(ssthresh as usize)
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            algorithm: self.algorithm.name(),
            phase: self.window.recovery().phase(self.window.in_slow_start()),
            congestion_window: self.congestion_window(),
            ssthresh: self.ssthresh(),
            pacing_rate: self.gaps.mean(self.mean_pacing_rate()),
            weight: self.algorithm.weight(),
            ..Snapshot::default()
        }
    }
}

/// Which packets belong to the loss event of the last window decrease (RFC
/// 9002, section 7.3.2), tracked by packet number: a loss of a packet sent
/// before the decrease is part of that event, and its acknowledgement ends
/// no recovery and grows no window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecoveryPeriod {
    /// Largest packet number sent.
    largest_sent: Option<u64>,
    /// Largest packet number acknowledged.
    largest_acked: Option<u64>,
    /// Largest packet number sent when the last decrease happened.
    sent_through: Option<u64>,
}

impl RecoveryPeriod {
    /// Packet `number` was sent.
    pub fn on_sent(&mut self, number: u64) {
        self.largest_sent = self.largest_sent.max(Some(number));
    }

    /// Packet `number` was acknowledged.
    pub fn on_acked(&mut self, number: u64) {
        self.largest_acked = self.largest_acked.max(Some(number));
    }

    /// The window decreased, because packet `lost` was lost or (`None`) on
    /// persistent congestion: every packet sent so far belongs to this event.
    pub fn start(&mut self, lost: Option<u64>) {
        self.sent_through = self.largest_sent.max(lost);
    }

    /// Whether packet `number` was sent before the last decrease.
    pub fn sent_before_decrease(&self, number: u64) -> bool {
        self.sent_through.is_some_and(|through| number <= through)
    }

    /// Whether no packet sent since the last decrease has been acknowledged.
    pub fn in_recovery(&self) -> bool {
        match (self.sent_through, self.largest_acked) {
            (Some(through), Some(acked)) => acked <= through,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// The phase name for logs.
    pub fn phase(&self, in_slow_start: bool) -> &'static str {
        if self.in_recovery() {
            "recovery"
        } else if in_slow_start {
            "slow_start"
        } else {
            "congestion_avoidance"
        }
    }
}

/// Remembers which packets were sent while the application, not the window,
/// limited sending: their acknowledgements must not grow the window (RFC
/// 9002, section 7.8).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppLimitedTracker {
    /// Largest packet number sent so far.
    largest_sent: Option<u64>,
    /// The next packet sent is also app-limited: quiche reports app-limited
    /// while it builds that packet, the lab after the last one it sent.
    next_is_limited: bool,
    /// Packets numbered up to this were sent while app-limited.
    limited_through: Option<u64>,
}

impl AppLimitedTracker {
    /// The application ran out of data with room left in the window.
    pub fn on_app_limited(&mut self) {
        self.limited_through = self.largest_sent;
        self.next_is_limited = true;
    }

    /// Packet `number` was sent.
    pub fn on_sent(&mut self, number: u64) {
        self.largest_sent = Some(number);
        if self.next_is_limited {
            self.limited_through = Some(number);
            self.next_is_limited = false;
        }
    }

    /// Whether the acknowledgement of packet `number` may grow the window.
    pub fn may_grow(&self, number: u64) -> bool {
        self.limited_through.is_none_or(|through| number > through)
    }
}

#[cfg(test)]
mod tests;
