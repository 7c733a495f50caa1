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

    fn build(&self, params: &Params) -> Option<Box<dyn Controller>> {
        Some(Box::new(Compound::new(self.clone(), params)))
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
pub(crate) mod tests;
