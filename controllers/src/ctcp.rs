//! Compound TCP (`ctcp`): a loss-based window plus a delay-based window.
//!
//! Compound TCP (Tan, Song, Zhang and Sridharan, INFOCOM 2006, and the IETF
//! draft draft-sridharan-tcpm-ctcp) as summarised in paper 003 section III-A.
//! The sending window is the sum of a standard TCP window and a delay window
//! that grows fast while the path shows no queue and gives way when one
//! builds, so the flow fills long fat pipes quickly yet takes no more than
//! standard TCP once the bottleneck queue is full. The same controller runs
//! every MCompound subflow ([`crate::mcompound`]) through a [`Coupling`]:
//! single-path Compound TCP is the case `θ1 = θ2 = θ3 = 1` of the rules
//! below.
//!
//! # Rules (windows in packets here; the code keeps bytes)
//!
//! * **Total window** `win = cwnd + dwnd`: the loss window plus the delay
//!   window.
//! * **Loss window** `cwnd`: standard TCP. Slow start as RFC 9002; in
//!   congestion avoidance it grows `θ2` packets per RTT, i.e. by `θ2 / win`
//!   per acknowledged packet (the draft's `cwnd += 1/(cwnd + dwnd)`: one RTT
//!   acknowledges the whole `win`, not just `cwnd`); it halves on a loss
//!   event.
//! * **Backlog** (Tan et al. and the draft): the packets queued in the network,
//!   `diff = (win/baseRTT - win/RTT) · baseRTT`.
//! * **Delay window**, once per round trip, while in congestion avoidance:
//!   * `dwnd += (α · win^k · θ1 - θ2)⁺` if `diff < θ3 · γ`: the total grows
//!     by `α · win^k` per RTT (`θ1 = θ2 = 1`), paper 003 eq. (1) and phase 1
//!     (A to B) of its fig. 1;
//!   * `dwnd = (dwnd - ζ · diff)⁺` if `diff >= θ3 · γ`: the delay window
//!     gives way to the loss window's growth and the total stays near the
//!     window that built the queue, phase 2 (B to C);
//!   * once `dwnd` is 0 only the loss window grows, one packet per RTT as
//!     standard TCP, eq. (4), phase 3 (C to D).
//! * **Loss event**: `dwnd = (win · (1 - β) - cwnd/2)⁺` with `cwnd` halved,
//!   so the total becomes `win · (1 - β)` (exactly, for β <= 1/2 and above
//!   the minimum window).
//! * **Slow start**: the delay window is 0 and not updated (the draft:
//!   "dwnd is initialized to zero while the connection is in slow start").
//! * **Persistent congestion**: as for a loss, the slow start threshold is
//!   `win · (1 - β)`; the loss window collapses to the minimum, the delay
//!   window to 0, and the base RTT is measured afresh (see below).
//! * **Probe timeout**: counted only; RFC 9002 reduces windows on the losses
//!   and persistent congestion that follow, not on the timeout itself.
//!
//! # Rounds
//!
//! A round begins at an acknowledgement and ends when a packet sent after
//! that point is acknowledged, so it lasts one RTT; packet numbers increase
//! with send time, so "sent after" is "numbered above the largest packet
//! sent when the round began". The delay window changes only at the end of
//! a round that began in congestion avoidance outside recovery and
//! acknowledged no app-limited packet: a round that began in recovery
//! measures the queue that the loss left behind, and an app-limited round
//! says nothing about the window. `RTT` is the smallest sample of the round:
//! QUIC's samples include the receiver's ACK delay, which the minimum
//! filters out (TCP Vegas, whose backlog estimate CTCP borrows, takes the
//! same minimum).
//! `win` is the total window when the round ends (the draft's `win(t)`).
//!
//! # Base RTT
//!
//! `baseRTT` is the smallest RTT sample since the controller started or
//! since the last persistent congestion, when RFC 9002 (section 5.2) also
//! re-establishes `min_rtt` because the path may have changed. It is not
//! refreshed on a timer: an estimate that drifts up takes in the standing
//! queue (phase 2 keeps about `γ` packets queued), which makes the delay
//! window aim at an ever longer queue, while an estimate that stays too low
//! after a route change only keeps the delay window at 0, so the flow falls
//! back to standard TCP, the safe side. A connection that migrates gets a
//! new controller, and so a new base RTT, from the host anyway.
//!
//! # Not implemented
//!
//! The draft's threshold that keeps the delay window off below 38 packets
//! (paper 003 has none; with α = 1/8 and k = 3/4 its growth is 0 below 16
//! packets anyway) and the automatic tuning of γ (paper 003 uses a fixed γ).

use std::fmt;
use std::time::Duration;

use crate::aimd::Aimd;
use crate::controller::CongestionEvent;
use crate::controller::Controller;
use crate::controller::Counters;
use crate::controller::Params;
use crate::controller::SentPacket;
use crate::controller::Snapshot;
use crate::controller::Value;
use crate::grammar::Args;
use crate::grammar::Range;
use crate::grammar::SpecError;
use crate::spec::AlgorithmConfig;
use crate::time::Time;
use crate::window;
use crate::window::AppLimitedTracker;
use crate::window::WindowLoop;

/// α, the delay window's growth factor: 1/8 (Tan et al., paper 003 section
/// III-A).
pub const ALPHA: f64 = 0.125;
/// β, the fraction of the total window given up on a loss event: 1/2.
pub const BETA: f64 = 0.5;
/// k, the exponent of the delay window's growth: 3/4 (Tan et al.: close to
/// HighSpeed TCP's 0.8 and cheap to compute).
pub const K: f64 = 0.75;
/// γ, the backlog in packets above which the delay window gives way: 30.
pub const GAMMA: f64 = 30.0;
/// ζ, how many packets the delay window gives up per packet of backlog: 1.
pub const ZETA: f64 = 1.0;

/// Accepted α: any positive factor up to 1 (`win^k` packets per RTT).
const ALPHA_RANGE: Range = Range::above_up_to(0.0, 1.0);
/// Accepted β: the loss window halves on its own, so above 1/2 the total
/// could not drop by β without cutting the loss window deeper than standard
/// TCP.
const BETA_RANGE: Range = Range::above_up_to(0.0, 0.5);
/// Accepted k: growth `α win^k` between constant (0) and short of
/// exponential (1); paper 003's model divides by `1 - k`.
const K_RANGE: Range = Range::from_up_to(0.0, 1.0);
/// Accepted γ in packets: a backlog of 10 000 packets is a bloated buffer
/// already.
const GAMMA_RANGE: Range = Range::above_up_to(0.0, 10_000.0);
/// Accepted ζ: 1 gives up the measured backlog in one round trip; ten times
/// that is already a collapse.
const ZETA_RANGE: Range = Range::above_up_to(0.0, 10.0);

/// The loss window is standard TCP's and halves on a loss event whatever β
/// is; the delay window makes up the difference (the draft).
const LOSS_WINDOW_DECREASE: f64 = 0.5;

/// The parameters of Compound TCP.
#[derive(Clone, Debug, PartialEq)]
pub struct CtcpConfig {
    alpha: f64,
    beta: f64,
    k: f64,
    gamma: f64,
    zeta: f64,
}

impl Default for CtcpConfig {
    /// The values of paper 003 section III-A and Tan et al.
    fn default() -> Self {
        CtcpConfig { alpha: ALPHA, beta: BETA, k: K, gamma: GAMMA, zeta: ZETA }
    }
}

impl CtcpConfig {
    /// Compound TCP with the given parameters, each checked against its
    /// accepted range.
    pub fn new(alpha: f64, beta: f64, k: f64, gamma: f64, zeta: f64) -> Result<Self, SpecError> {
        let config = CtcpConfig { alpha, beta, k, gamma, zeta };
        for (key, value, range) in config.keys() {
            if !range.contains(value) {
                return Err(SpecError::new("ctcp", key, format!("= {value} is out of range; accepted range {range}")));
            }
        }
        Ok(config)
    }

    /// α, the delay window's growth factor.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// β, the fraction of the total window given up on a loss event.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// k, the exponent of the delay window's growth.
    pub fn k(&self) -> f64 {
        self.k
    }

    /// γ, the backlog in packets above which the delay window gives way.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// ζ, packets of delay window given up per packet of backlog.
    pub fn zeta(&self) -> f64 {
        self.zeta
    }

    /// Key, value and accepted range of every parameter, in spec order.
    fn keys(&self) -> [(&'static str, f64, Range); 5] {
        [
            ("alpha", self.alpha, ALPHA_RANGE),
            ("beta", self.beta, BETA_RANGE),
            ("k", self.k, K_RANGE),
            ("gamma", self.gamma, GAMMA_RANGE),
            ("zeta", self.zeta, ZETA_RANGE),
        ]
    }

    /// Writes `key=value` for every parameter that differs from its default,
    /// the first preceded by `first`, the others by `,`.
    pub(crate) fn write_keys(&self, f: &mut fmt::Formatter, first: char) -> fmt::Result {
        let defaults = CtcpConfig::default().keys();
        let mut separator = first;
        for ((key, value, _), (_, default, _)) in self.keys().into_iter().zip(defaults) {
            if value != default {
                write!(f, "{separator}{key}={value}")?;
                separator = ',';
            }
        }
        Ok(())
    }
}

impl AlgorithmConfig for CtcpConfig {
    /// Parses `alpha`, `beta`, `k`, `gamma` and `zeta`; absent keys keep
    /// their defaults.
    fn from_args(args: &mut Args) -> Result<Self, SpecError> {
        Ok(CtcpConfig {
            alpha: args.real("alpha", ALPHA_RANGE)?.unwrap_or(ALPHA),
            beta: args.real("beta", BETA_RANGE)?.unwrap_or(BETA),
            k: args.real("k", K_RANGE)?.unwrap_or(K),
            gamma: args.real("gamma", GAMMA_RANGE)?.unwrap_or(GAMMA),
            zeta: args.real("zeta", ZETA_RANGE)?.unwrap_or(ZETA),
        })
    }

    fn build(&self, params: &Params) -> Box<dyn Controller> {
        Box::new(Compound::new(self.clone(), params))
    }
}

impl fmt::Display for CtcpConfig {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("ctcp")?;
        self.write_keys(f, ':')
    }
}

/// Where the delay window stands in paper 003's fig. 1, after its last
/// update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelayPhase {
    /// No round has been measured since the start or the last loss.
    Unmeasured,
    /// Phase 1 (A to B): no queue to speak of, the delay window grows.
    Growth,
    /// Phase 2 (B to C): the backlog reached γ, the delay window gives way.
    Backoff,
    /// Phase 3 (C to D): the delay window is 0; the flow is standard TCP.
    LossOnly,
}

impl DelayPhase {
    /// The name in snapshots.
    pub fn name(self) -> &'static str {
        match self {
            DelayPhase::Unmeasured => "congestion_avoidance",
            DelayPhase::Growth => "delay_growth",
            DelayPhase::Backoff => "delay_backoff",
            DelayPhase::LossOnly => "loss_only",
        }
    }
}

/// One round trip over which the delay window measures the backlog.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Round {
    /// Largest packet number sent when the round began (`None` if nothing
    /// had been sent): the round ends when a later packet is acknowledged.
    sent_before: Option<u64>,
    /// Smallest RTT sample taken during the round.
    min_rtt: Option<Duration>,
    /// Whether the round may update the delay window: it began in congestion
    /// avoidance outside recovery, no loss event happened in it, and it
    /// acknowledged no app-limited packet.
    measurable: bool,
}

impl Round {
    fn ended_by(&self, acked: u64) -> bool {
        self.sent_before.is_none_or(|sent| acked > sent)
    }
}

/// The coupling factors of a Compound TCP flow: what MCompound scales its
/// growth by (paper 003 Algorithm 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thetas {
    /// θ1: scales the delay window's growth, eq. (13).
    pub theta1: f64,
    /// θ2: scales the loss window's growth, eq. (15).
    pub theta2: f64,
    /// θ3: scales γ, Algorithm 1.
    pub theta3: f64,
}

impl Thetas {
    /// A single path, or a group of one: no scaling.
    pub const SINGLE_PATH: Thetas = Thetas { theta1: 1.0, theta2: 1.0, theta3: 1.0 };
}

/// What couples a Compound TCP flow to other flows: MCompound's group
/// membership. The flow reports the end of each round and takes new
/// coupling factors at the congestion event after it.
pub trait Coupling: fmt::Debug + Send + Sync {
    /// A round ended with a total window of `window` bytes.
    fn on_round_end(&mut self, window: f64, smoothed_rtt: Duration);

    /// The coupling factors for exponent `k`, if they may have changed
    /// since they were last taken.
    fn refresh(&mut self, k: f64) -> Option<Thetas>;

    /// This flow's share of its group's rate, for snapshots.
    fn share(&self) -> f64;
}

/// A Compound TCP controller: single-path `ctcp`, or one subflow of an
/// MCompound group (a [`Coupling`]).
#[derive(Debug)]
pub struct Compound {
    /// Name in snapshots: `ctcp` or `mcompound`.
    name: &'static str,
    /// Parameters.
    config: CtcpConfig,
    /// The loss window `cwnd`: AIMD(θ2, 1/2) with standard slow start.
    loss_window: WindowLoop,
    /// The delay window `dwnd`, bytes; 0 in slow start.
    delay_window: f64,
    /// Maximum datagram size, bytes: the packet of the rules.
    max_datagram_size: f64,
    /// Packets sent while app-limited.
    app_limited: AppLimitedTracker,
    /// Largest packet number sent.
    largest_sent: Option<u64>,
    /// Smallest RTT sample since the start or the last persistent
    /// congestion.
    base_rtt: Option<Duration>,
    /// The round in progress; `None` until the first acknowledgement and
    /// after persistent congestion.
    round: Option<Round>,
    /// What the last delay window update did.
    delay_phase: DelayPhase,
    /// The coupling factors in use: all 1 for single-path Compound TCP.
    thetas: Thetas,
    /// What couples an MCompound subflow to its group.
    coupling: Option<Box<dyn Coupling>>,
    /// Smoothed RTT of the last congestion event, for pacing and rates.
    smoothed_rtt: Duration,
    /// Event counts.
    counters: Counters,
}

impl Compound {
    /// Single-path Compound TCP.
    pub fn new(config: CtcpConfig, params: &Params) -> Self {
        Compound::build("ctcp", config, params, None)
    }

    /// A flow called `name` in snapshots whose growth follows `coupling`.
    pub fn coupled(name: &'static str, config: CtcpConfig, params: &Params, coupling: Box<dyn Coupling>) -> Self {
        Compound::build(name, config, params, Some(coupling))
    }

    fn build(name: &'static str, config: CtcpConfig, params: &Params, coupling: Option<Box<dyn Coupling>>) -> Self {
        Compound {
            name,
            config,
            loss_window: WindowLoop::new(Aimd { increase: 1.0, decrease: LOSS_WINDOW_DECREASE }, params),
            delay_window: 0.0,
            max_datagram_size: params.max_datagram_size as f64,
            app_limited: AppLimitedTracker::default(),
            largest_sent: None,
            base_rtt: None,
            round: None,
            delay_phase: DelayPhase::Unmeasured,
            thetas: Thetas::SINGLE_PATH,
            coupling,
            smoothed_rtt: params.initial_rtt,
            counters: Counters::default(),
        }
    }

    /// A controller whose coupling factors stay at `thetas`: a reference
    /// flow for tests of the coupling.
    #[cfg(test)]
    pub(crate) fn with_fixed_thetas(mut self, thetas: Thetas) -> Self {
        self.set_thetas(thetas);
        self
    }

    /// The parameters in use.
    pub fn config(&self) -> &CtcpConfig {
        &self.config
    }

    /// The coupling factors in use.
    pub fn thetas(&self) -> Thetas {
        self.thetas
    }

    /// The loss window, bytes.
    pub fn loss_window(&self) -> f64 {
        self.loss_window.window()
    }

    /// The delay window, bytes.
    pub fn delay_window(&self) -> f64 {
        self.delay_window
    }

    /// The total window, bytes.
    pub fn window(&self) -> f64 {
        self.loss_window.window() + self.delay_window
    }

    /// The base RTT, once there is a sample.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.base_rtt
    }

    fn set_thetas(&mut self, thetas: Thetas) {
        self.thetas = thetas;
        self.loss_window.set_aimd(Aimd { increase: thetas.theta2, decrease: LOSS_WINDOW_DECREASE });
    }

    /// Takes the group's rates into the coupling factors once after each
    /// round this subflow published: at the event after the one that ended
    /// the round, so that subflows whose rounds end on the same ACK clock
    /// see each other's new rates.
    fn refresh_thetas(&mut self) {
        let k = self.config.k;
        if let Some(thetas) = self.coupling.as_mut().and_then(|coupling| coupling.refresh(k)) {
            self.set_thetas(thetas);
        }
    }

    fn start_round(&mut self) {
        self.round = Some(Round {
            sent_before: self.largest_sent,
            min_rtt: None,
            measurable: !self.loss_window.in_slow_start() && !self.loss_window.in_recovery(),
        });
    }

    fn end_round(&mut self, round: Round) {
        if let (true, Some(base_rtt), Some(rtt)) = (round.measurable, self.base_rtt, round.min_rtt) {
            self.update_delay_window(base_rtt, rtt);
        }
        let window = self.window();
        if let Some(coupling) = self.coupling.as_mut() {
            coupling.on_round_end(window, self.smoothed_rtt);
        }
    }

    fn update_delay_window(&mut self, base_rtt: Duration, rtt: Duration) {
        let packet = self.max_datagram_size;
        let window = self.window() / packet;
        let diff = backlog(window, base_rtt, rtt);
        let (delay_window, phase) =
            next_delay_window(&self.config, &self.thetas, window, self.delay_window / packet, diff);
        self.delay_window = delay_window * packet;
        self.delay_phase = phase;
    }
}

impl Controller for Compound {
    fn on_packet_sent(&mut self, packet: &SentPacket) {
        self.counters.record_sent(packet);
        self.loss_window.on_sent(packet.number);
        self.app_limited.on_sent(packet.number);
        self.largest_sent = Some(self.largest_sent.map_or(packet.number, |largest| largest.max(packet.number)));
    }

    fn on_congestion_event(&mut self, event: &CongestionEvent) {
        self.counters.record_event(event);
        self.smoothed_rtt = event.rtt.smoothed;
        self.refresh_thetas();

        if event.rtt_updated {
            let sample = event.rtt.latest;
            self.base_rtt = Some(self.base_rtt.map_or(sample, |base| base.min(sample)));
            if let Some(round) = self.round.as_mut() {
                round.min_rtt = Some(round.min_rtt.map_or(sample, |min| min.min(sample)));
            }
        }

        for packet in event.acked {
            let may_grow = self.app_limited.may_grow(packet.number);
            if !may_grow && packet.bytes > 0 {
                if let Some(round) = self.round.as_mut() {
                    round.measurable = false;
                }
            }
            self.loss_window.on_ack_alongside(packet.number, packet.bytes, may_grow, self.delay_window);
        }
        if let Some(largest_acked) = event.acked.iter().map(|packet| packet.number).max() {
            match self.round {
                Some(round) if round.ended_by(largest_acked) => {
                    self.end_round(round);
                    self.start_round();
                }
                Some(_) => {}
                None => self.start_round(),
            }
        }

        for packet in event.lost.iter().filter(|packet| packet.bytes > 0) {
            let window = self.window();
            if self.loss_window.on_loss(packet.number) {
                self.counters.loss_events += 1;
                self.delay_window = delay_window_after_loss(window, self.loss_window.window(), self.config.beta);
                self.delay_phase = DelayPhase::Unmeasured;
                self.start_round();
            }
        }
    }

    fn on_retransmission_timeout(&mut self, _now: Time) {
        self.counters.timeouts += 1;
    }

    fn on_persistent_congestion(&mut self, _now: Time) {
        self.counters.persistent_congestion += 1;
        let window = self.window();
        self.loss_window.on_persistent_congestion_to(window * (1.0 - self.config.beta));
        self.delay_window = 0.0;
        self.delay_phase = DelayPhase::Unmeasured;
        self.base_rtt = None;
        self.round = None;
    }

    fn on_app_limited(&mut self, _bytes_in_flight: usize) {
        self.app_limited.on_app_limited();
    }

    fn set_max_datagram_size(&mut self, bytes: usize) {
        self.loss_window.set_max_datagram_size(bytes);
        self.max_datagram_size = bytes as f64;
    }

    fn congestion_window(&self) -> usize {
        self.window() as usize
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(window::pacing_rate(self.window(), self.loss_window.in_slow_start(), self.smoothed_rtt.as_secs_f64()))
    }

    fn in_recovery(&self) -> bool {
        self.loss_window.in_recovery()
    }

    fn ssthresh(&self) -> Option<usize> {
        let ssthresh = self.loss_window.ssthresh();
        ssthresh.is_finite().then_some(ssthresh as usize)
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn snapshot(&self) -> Snapshot {
        let phase = if self.loss_window.in_recovery() || self.loss_window.in_slow_start() {
            self.loss_window.phase()
        } else {
            self.delay_phase.name()
        };
        Snapshot {
            algorithm: self.name,
            phase,
            congestion_window: self.congestion_window(),
            ssthresh: self.ssthresh(),
            pacing_rate: self.pacing_rate(),
            weight: None,
            state: [
                Some(("loss_window", Value::Integer(self.loss_window.window() as u64))),
                Some(("delay_window", Value::Integer(self.delay_window as u64))),
                self.base_rtt.map(|rtt| ("base_rtt", Value::Duration(rtt))),
                self.coupling.as_ref().map(|coupling| ("group_share", Value::Real(coupling.share()))),
            ]
            .into_iter()
            .flatten()
            .collect(),
        }
    }
}

/// The backlog in packets of a window of `window` packets:
/// `diff = (win/baseRTT - win/RTT) · baseRTT`, computed as the equal
/// `win · (1 - baseRTT/RTT)` so that a zero base RTT gives no NaN.
pub fn backlog(window: f64, base_rtt: Duration, rtt: Duration) -> f64 {
    let rtt = rtt.as_secs_f64();
    if rtt <= 0.0 {
        return 0.0;
    }
    window * (1.0 - base_rtt.as_secs_f64() / rtt)
}

/// The delay window's growth over one round in packets,
/// `(α · win^k · θ1 - θ2)⁺`: with the loss window's `θ2` the total grows
/// `α · win^k · θ1` per RTT (paper 003 eqs. (1) and (7)).
pub fn delay_window_increase(config: &CtcpConfig, thetas: &Thetas, window: f64) -> f64 {
    (config.alpha * window.powf(config.k) * thetas.theta1 - thetas.theta2).max(0.0)
}

/// The delay window after one round, in packets, for a total window of
/// `window` packets with `diff` packets of backlog, and the phase of fig. 1
/// it puts the flow in.
pub fn next_delay_window(
    config: &CtcpConfig,
    thetas: &Thetas,
    window: f64,
    delay_window: f64,
    diff: f64,
) -> (f64, DelayPhase) {
    let (next, phase) = if diff < thetas.theta3 * config.gamma {
        (delay_window + delay_window_increase(config, thetas, window), DelayPhase::Growth)
    } else {
        ((delay_window - config.zeta * diff).max(0.0), DelayPhase::Backoff)
    };
    if next > 0.0 {
        (next, phase)
    } else {
        (0.0, DelayPhase::LossOnly)
    }
}

/// The delay window after a loss event (any unit), `(win · (1 - β) -
/// cwnd')⁺`, where `cwnd'` is the loss window after its own decrease, so
/// that the total drops by β.
pub fn delay_window_after_loss(window: f64, loss_window: f64, beta: f64) -> f64 {
    (window * (1.0 - beta) - loss_window).max(0.0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::spec::Spec;
    use crate::testing;
    use crate::testing::Host;
    use crate::testing::MSS;
    use proptest::prelude::*;

    const PACKET: f64 = MSS as f64;

    fn ctcp(spec: &str) -> Host<Compound> {
        Host::new(Compound::new(crate::testing::config(spec), &testing::params()))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    /// Acknowledges every packet in flight in one congestion event.
    pub(crate) fn ack_all(host: &mut Host<Compound>) {
        let numbers: Vec<u64> = host.outstanding.iter().map(|&(number, _)| number).collect();
        host.event(&numbers, &[]);
    }

    /// Sends what the window allows and acknowledges it in one congestion
    /// event: one round.
    pub(crate) fn round(host: &mut Host<Compound>) {
        host.send_allowed(usize::MAX);
        ack_all(host);
    }

    /// Slow start to 320 packets, then a loss: the loss window is 160
    /// packets, the delay window 320 (1 - β) - 160 (0 for β = 1/2), and one
    /// more round leaves recovery, so the next round measures.
    fn in_congestion_avoidance(spec: &str) -> Host<Compound> {
        let mut host = ctcp(spec);
        for _ in 0..5 {
            round(&mut host); // 10 -> 20 -> 40 -> 80 -> 160 -> 320
        }
        assert_eq!(host.controller.congestion_window(), 320_000);
        let flight = host.send(320);
        host.event(&[], &[flight.start]);
        assert_eq!(host.controller.loss_window(), 160_000.0);
        assert_eq!(host.controller.window(), 320_000.0 * (1.0 - host.controller.config().beta()));
        ack_all(&mut host); // the rest of the flight, sent before the decrease
        round(&mut host); // leaves recovery; this round began in recovery
        assert!(!host.controller.in_recovery());
        host
    }

    /// The loss window after `acks` acknowledgements of one packet each, in
    /// congestion avoidance alongside a delay window of `delay` bytes.
    fn loss_window_after(mut loss_window: f64, delay: f64, acks: usize, theta2: f64) -> f64 {
        for _ in 0..acks {
            loss_window += theta2 * PACKET * PACKET / (loss_window + delay);
        }
        loss_window
    }

    /// The packets a round sends: the window rounded up.
    fn packets_in(window: f64) -> usize {
        (window / PACKET).ceil() as usize
    }

    #[test]
    fn defaults_are_the_papers_and_canonical_form_round_trips() {
        let config = CtcpConfig::default();
        assert_eq!(
            (config.alpha(), config.beta(), config.k(), config.gamma(), config.zeta()),
            (0.125, 0.5, 0.75, 30.0, 1.0)
        );
        assert_eq!("ctcp".parse::<Spec>().unwrap().to_string(), "ctcp");
        for text in ["ctcp", "ctcp:gamma=20", "ctcp:alpha=0.25,beta=0.3,k=0.8,gamma=5,zeta=0.5", "ctcp:k=0"] {
            let spec: Spec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
            assert_eq!(spec.to_string().parse::<Spec>().unwrap(), spec);
        }
        // Defaults written out are dropped from the canonical form.
        assert_eq!("ctcp:alpha=0.125,zeta=1".parse::<Spec>().unwrap().to_string(), "ctcp");
    }

    #[test]
    fn out_of_range_parameters_name_the_key_and_the_range() {
        let error = |text: &str| text.parse::<Spec>().unwrap_err().to_string();
        assert!(error("ctcp:beta=0.6").contains("ctcp: beta = 0.6 is out of range; accepted range (0, 0.5]"));
        assert!(error("ctcp:k=1").contains("k = 1 is out of range; accepted range [0, 1)"));
        assert!(error("ctcp:alpha=0").contains("alpha = 0 is out of range; accepted range (0, 1]"));
        assert!(error("ctcp:gamma=NaN").contains("gamma = NaN is out of range; accepted range (0, 10000]"));
        assert!(error("ctcp:zeta=-1").contains("zeta = -1 is out of range; accepted range (0, 10]"));
        assert!(error("ctcp:n=2").contains("n is not a known key (accepted: alpha, beta, k, gamma, zeta)"));
        assert!(CtcpConfig::new(0.125, 0.7, 0.75, 30.0, 1.0).unwrap_err().to_string().contains("beta = 0.7"));
        assert!(CtcpConfig::new(0.125, 0.5, 0.75, 30.0, 1.0).is_ok());
    }

    #[test]
    fn backlog_is_expected_minus_actual_times_base_rtt() {
        // 200 packets, base 100 ms, RTT 125 ms: (2000 - 1600) pkt/s * 0.1 s = 40.
        let diff = backlog(200.0, Duration::from_millis(100), Duration::from_millis(125));
        assert!(close(diff, 40.0), "{diff}");
        assert_eq!(backlog(200.0, Duration::from_millis(100), Duration::from_millis(100)), 0.0);
        assert_eq!(backlog(200.0, Duration::ZERO, Duration::ZERO), 0.0);
    }

    #[test]
    fn delay_window_rules_in_numbers() {
        let config = CtcpConfig::default();
        let one = Thetas::SINGLE_PATH;
        // Phase 1: win = 256 packets, no backlog: (1/8 * 256^0.75 - 1) = 8 - 1 = 7.
        let (next, phase) = next_delay_window(&config, &one, 256.0, 10.0, 0.0);
        assert!(close(next, 17.0), "{next}");
        assert_eq!(phase, DelayPhase::Growth);
        // Below 16 packets 1/8 * win^0.75 <= 1: no growth, the flow is standard TCP.
        assert_eq!(next_delay_window(&config, &one, 16.0, 0.0, 0.0), (0.0, DelayPhase::LossOnly));
        // 29.9 packets of backlog is still below gamma = 30.
        assert_eq!(next_delay_window(&config, &one, 256.0, 10.0, 29.9).1, DelayPhase::Growth);
        // Phase 2: backlog 30 >= gamma: dwnd 50 - 1 * 30 = 20.
        assert_eq!(next_delay_window(&config, &one, 256.0, 50.0, 30.0), (20.0, DelayPhase::Backoff));
        // Phase 3: the back-off stops at 0.
        assert_eq!(next_delay_window(&config, &one, 256.0, 20.0, 40.0), (0.0, DelayPhase::LossOnly));
        // zeta = 0.5 gives up half a packet per packet of backlog: 50 - 20 = 30.
        let gentle = CtcpConfig::new(0.125, 0.5, 0.75, 30.0, 0.5).unwrap();
        assert_eq!(next_delay_window(&gentle, &one, 256.0, 50.0, 40.0), (30.0, DelayPhase::Backoff));
        // Loss: win 256 = cwnd 100 + dwnd 156; cwnd halves to 50, dwnd = 128 - 50 = 78.
        assert_eq!(delay_window_after_loss(256.0, 50.0, 0.5), 78.0);
        // beta = 0.3 keeps 0.7 * 256 = 179.2 = 50 + 129.2.
        assert!(close(delay_window_after_loss(256.0, 50.0, 0.3), 129.2));
        // A loss window that already holds the reduced total leaves no delay window.
        assert_eq!(delay_window_after_loss(100.0, 50.0, 0.5), 0.0);
    }

    #[test]
    fn slow_start_keeps_the_delay_window_at_zero() {
        let mut host = ctcp("ctcp");
        for _ in 0..4 {
            round(&mut host);
            assert_eq!(host.controller.delay_window(), 0.0);
            assert_eq!(host.controller.snapshot().phase, "slow_start");
        }
        assert_eq!(host.controller.congestion_window(), 160_000);
    }

    #[test]
    fn phase_1_the_total_grows_alpha_win_to_the_k_per_round() {
        let mut host = in_congestion_avoidance("ctcp");
        let config = CtcpConfig::default();
        for _ in 0..10 {
            let (loss_window, delay_window) = (host.controller.loss_window(), host.controller.delay_window());
            let acks = packets_in(host.controller.window());
            round(&mut host);
            // cwnd: one packet per win acknowledged; dwnd: + (1/8 win^0.75 - 1).
            let expected_loss_window = loss_window_after(loss_window, delay_window, acks, 1.0);
            assert!(close(host.controller.loss_window(), expected_loss_window));
            let window = (expected_loss_window + delay_window) / PACKET;
            let growth = 0.125 * window.powf(0.75) - 1.0;
            assert!(growth > 4.6, "{growth}"); // win > 160 packets: 1/8 * 160^0.75 - 1 = 4.62
            assert!(close(host.controller.delay_window(), delay_window + growth * PACKET));
            let (next, _) = next_delay_window(&config, &Thetas::SINGLE_PATH, window, delay_window / PACKET, 0.0);
            assert!(close(host.controller.delay_window() / PACKET, next));
            assert_eq!(host.controller.snapshot().phase, "delay_growth");
        }
        // Ten rounds from 161 packets (all loss window) end at 170.99 loss
        // and 53.76 delay packets: the delay window did 5/6 of the growth
        // (an independent recomputation of the rules gives these numbers).
        assert!((host.controller.loss_window() / PACKET - 170.9879).abs() < 1e-4);
        assert!((host.controller.delay_window() / PACKET - 53.7560).abs() < 1e-4);
    }

    #[test]
    fn phase_2_the_delay_window_gives_way_by_zeta_times_diff() {
        let mut host = in_congestion_avoidance("ctcp");
        for _ in 0..10 {
            round(&mut host);
        }
        // A queue builds: 120 ms instead of 100 ms, diff = win (1 - 100/120) = win / 6.
        host.rtt = Duration::from_millis(120);
        let (loss_window, delay_window) = (host.controller.loss_window(), host.controller.delay_window());
        let acks = packets_in(host.controller.window());
        round(&mut host);
        let expected_loss_window = loss_window_after(loss_window, delay_window, acks, 1.0);
        assert!(close(host.controller.loss_window(), expected_loss_window));
        let window = (expected_loss_window + delay_window) / PACKET;
        let diff = window / 6.0;
        assert!(diff >= 30.0, "{diff}");
        assert!(close(host.controller.delay_window(), delay_window - diff * PACKET));
        assert_eq!(host.controller.snapshot().phase, "delay_backoff");
        // The loss window grew a packet, the delay window gave up diff: the total shrank.
        assert!(host.controller.window() < loss_window + delay_window);
    }

    #[test]
    fn phase_3_without_a_delay_window_the_loss_window_grows_one_packet_per_round() {
        let mut host = in_congestion_avoidance("ctcp");
        round(&mut host);
        assert!(host.controller.delay_window() > 0.0);
        host.rtt = Duration::from_millis(150); // diff = win / 3 > 50: dwnd empties
        round(&mut host);
        assert_eq!(host.controller.delay_window(), 0.0);
        assert_eq!(host.controller.snapshot().phase, "loss_only");
        for _ in 0..5 {
            let loss_window = host.controller.loss_window();
            let acks = packets_in(loss_window);
            round(&mut host);
            assert_eq!(host.controller.delay_window(), 0.0);
            assert!(close(host.controller.loss_window(), loss_window_after(loss_window, 0.0, acks, 1.0)));
            // Acknowledging ceil(w) packets of a w-packet window adds about one packet.
            let growth = (host.controller.loss_window() - loss_window) / PACKET;
            assert!((growth - 1.0).abs() < 0.01, "{growth}");
        }
    }

    #[test]
    fn loss_drops_the_total_by_beta_and_halves_the_loss_window() {
        for (spec, beta) in [("ctcp", 0.5), ("ctcp:beta=0.3", 0.3)] {
            let mut host = in_congestion_avoidance(spec);
            for _ in 0..5 {
                round(&mut host);
            }
            let (loss_window, window) = (host.controller.loss_window(), host.controller.window());
            assert!(host.controller.delay_window() > 0.0);
            let flight = host.send(5);
            host.event(&[], &[flight.start, flight.start + 1]); // two losses, one loss event
            assert_eq!(host.controller.loss_window(), loss_window / 2.0, "{spec}");
            assert!(close(host.controller.window(), window * (1.0 - beta)), "{spec}");
            assert!(close(host.controller.delay_window(), window * (1.0 - beta) - loss_window / 2.0));
            assert_eq!(host.controller.counters().loss_events, 2, "{spec}"); // with the one of the setup
            assert_eq!(host.controller.ssthresh(), Some((loss_window / 2.0) as usize));
        }
    }

    #[test]
    fn the_round_after_a_loss_does_not_move_the_delay_window() {
        let mut host = in_congestion_avoidance("ctcp");
        for _ in 0..3 {
            round(&mut host);
        }
        let flight = host.send(3);
        host.event(&[], &[flight.start]);
        let delay_window = host.controller.delay_window();
        // The recovery round sees the queue the loss left: a long RTT that must not count.
        host.rtt = Duration::from_millis(400);
        ack_all(&mut host);
        round(&mut host);
        assert_eq!(host.controller.delay_window(), delay_window);
        host.rtt = Duration::from_millis(100);
        round(&mut host);
        assert!(host.controller.delay_window() > delay_window);
    }

    #[test]
    fn app_limited_rounds_do_not_move_the_delay_window() {
        let mut host = in_congestion_avoidance("ctcp");
        round(&mut host);
        let delay_window = host.controller.delay_window();
        host.send(10);
        host.controller.on_app_limited(10 * MSS);
        // Ends the running round, which acknowledged app-limited packets.
        ack_all(&mut host);
        // Ends the next one, which acknowledged the packet sent right after.
        host.send(10);
        ack_all(&mut host);
        assert_eq!(host.controller.delay_window(), delay_window);
    }

    #[test]
    fn diff_uses_the_smallest_rtt_sample_of_the_round() {
        let mut host = in_congestion_avoidance("ctcp");
        let flight = host.send_allowed(usize::MAX);
        let half = flight.start + (flight.end - flight.start) / 2;
        host.event(&(flight.start..half).collect::<Vec<_>>(), &[]); // ends a round: the next one begins
        ack_all(&mut host); // a clean 100 ms sample
        let delay_window = host.controller.delay_window();
        // The sample that ends the round is inflated by 50 ms of ACK delay:
        // alone (or averaged, 125 ms) it would mean win / 3 (or win / 5) > 30
        // packets of backlog.
        host.rtt = Duration::from_millis(150);
        round(&mut host);
        // The round's minimum is the base RTT: no backlog, phase 1 growth.
        assert!(host.controller.delay_window() > delay_window);
        assert_eq!(host.controller.snapshot().phase, "delay_growth");
    }

    #[test]
    fn base_rtt_is_the_minimum_and_restarts_after_persistent_congestion() {
        let mut host = in_congestion_avoidance("ctcp");
        assert_eq!(host.controller.base_rtt(), Some(Duration::from_millis(100)));
        host.rtt = Duration::from_millis(90);
        round(&mut host);
        host.rtt = Duration::from_millis(130);
        round(&mut host);
        assert_eq!(host.controller.snapshot().value("base_rtt"), Some(Value::Duration(Duration::from_millis(90))));
        let window = host.controller.window();
        host.controller.on_persistent_congestion(Time::ZERO);
        assert_eq!(host.controller.base_rtt(), None);
        assert_eq!(host.controller.congestion_window(), 2 * MSS);
        assert_eq!(host.controller.delay_window(), 0.0);
        assert_eq!(host.controller.ssthresh(), Some((window * 0.5) as usize));
        assert_eq!(host.controller.counters().persistent_congestion, 1);
        host.send(1);
        ack_all(&mut host);
        assert_eq!(host.controller.base_rtt(), Some(Duration::from_millis(130)));
    }

    #[test]
    fn pacing_and_snapshot_follow_both_windows() {
        let mut host = in_congestion_avoidance("ctcp");
        round(&mut host);
        let controller = &host.controller;
        // 1.25 * window / 0.1 s in congestion avoidance.
        assert_eq!(controller.pacing_rate(), Some((1.25 * controller.window() / 0.1) as u64));
        let snapshot = controller.snapshot();
        assert_eq!(snapshot.algorithm, "ctcp");
        assert_eq!(snapshot.congestion_window, controller.window() as usize);
        assert_eq!(snapshot.value("loss_window"), Some(Value::Integer(controller.loss_window() as u64)));
        assert_eq!(snapshot.value("delay_window"), Some(Value::Integer(controller.delay_window() as u64)));
        assert_eq!(snapshot.value("group_share"), None);
    }

    /// Everything a host reads is finite and the loss window never drops
    /// below two packets.
    pub(crate) fn assert_sane(controller: &Compound) {
        let snapshot = controller.snapshot();
        assert!(controller.window().is_finite() && controller.delay_window() >= 0.0, "{controller:?}");
        assert!(controller.loss_window() >= 2.0 * PACKET, "{controller:?}");
        assert!(controller.thetas().theta1.is_finite() && controller.thetas().theta2.is_finite());
        assert!(snapshot.pacing_rate.is_some_and(|rate| rate > 0), "{controller:?}");
        if let Some(share) = snapshot.number("group_share") {
            assert!((0.0..=1.0).contains(&share), "{share}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        #[test]
        fn no_panic_and_no_nan_for_any_event_sequence(ops in prop::collection::vec(testing::op(), 1..100)) {
            let mut host = ctcp("ctcp:gamma=5,beta=0.3");
            for op in &ops {
                host.apply(op);
                assert_sane(&host.controller);
            }
        }
    }
}
