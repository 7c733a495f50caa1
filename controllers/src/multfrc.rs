//! MulTFRC(n): TFRC's equation-based rate control with the throughput
//! equation of n TCP flows, on the sender side of QUIC.
//!
//! Damjanovic and Welzl (paper 004 section III, and the MulTFRC draft
//! draft-irtf-iccrg-multfrc-01) keep TFRC (RFC 5348) and change two things:
//! the rate comes from the equation of n parallel flows
//! ([`MulTfrcEquation`]) instead of one TCP flow's, and `j`, the number of
//! packets lost per loss event, is measured and fed to that equation. n is
//! any positive real; `0 < n < 1` gives a scavenger that takes n of one TCP
//! flow's share.
//!
//! A TFRC receiver measures the loss event rate and the receive rate and
//! reports them once per RTT. A QUIC sender learns the fate of every packet
//! from acknowledgements, so it measures both itself, and an arriving
//! acknowledgement plays the part of a feedback packet.
//!
//! # Rules
//!
//! * **Loss event rate `p`**: TFRC's average loss interval method on the
//!   sender ([`LossIntervals`], RFC 5348 section 5): 8 intervals, the
//!   standard weights, history discounting, and one loss event per timeout
//!   (below).
//! * **Losses per event `j`**: counted exactly in each loss event (the first
//!   excepted, below) and averaged over the same events with the same weights
//!   ([`LossIntervals::losses_per_event`]). The equation turns `j` into the
//!   number of flows hit, with the estimate `max(n (1 - ((n - 1)/n)^j), 1)`
//!   for every `n > 1` ([`crate::equations::flows_hit_per_loss_event`]).
//!   Paper 004 uses it for `1 < n < 13` only and `j` above, a choice made
//!   from RED and random-loss runs; at a drop-tail overflow one window
//!   loses several packets per event, which above 13 then counted as as
//!   many flows halving: MulTFRC(30) took 0.77 of its share against Reno in
//!   the lab at 400 Mbit/s, 0.87 with the estimate. `flows_hit=paper`
//!   restores the bound.
//! * **Receive rate `X_recv`**: the bytes acknowledged over a measurement
//!   interval of at least one smoothed RTT, divided by its length, as a TFRC
//!   receiver measures the rate of the last RTT (RFC 5348 section 6.2). An
//!   interval counts the acknowledgements after its start up to the one that
//!   closes it and starts the next. The first starts with the first
//!   acknowledgement, as a receiver's with the first packet, and so does the
//!   first after an idle period (nothing in flight), so that idle time is
//!   not measured. An interval in which nothing was acknowledged stays open,
//!   as a receiver that received nothing sends no feedback. When an
//!   acknowledged packet of the interval
//!   was sent while the application limited sending, the interval is
//!   data-limited and `X_recv` does not fall (RFC 5348 section 4.3,
//!   "Maximize X_recv_set"). One `X_recv` is kept instead of the RFC's set
//!   of recent values, and the RFC's halving on a loss in a data-limited
//!   interval is left out.
//! * **Rate updates**: once per closed measurement interval (TFRC's
//!   feedback once per RTT) and at once on a new loss event (a TFRC
//!   receiver reports those immediately, section 6.2), as in RFC 5348
//!   section 4.3 step 4:
//!   * before the first loss, slow start: `X = max(min(2 X, 2 X_recv),
//!     W_init / R)`; intervals last at least one smoothed RTT, so this
//!     happens at most once per RTT, as RFC 5348's `tld` ensures. A paced
//!     sender's `X_recv` is the rate of about one RTT ago, so the `2 X_recv`
//!     limit lets the rate double every other RTT while it keeps growing, as
//!     in TFRC;
//!   * after it: `X = max(min(X_calc, 2 X_recv), s / t_mbi)`, where
//!     `X_calc` is the equation's rate for `p`, `j`, `R` (below),
//!     `t_RTO = 4R` and `b`, times `s`.
//! * **RTT `R`**: the host's smoothed RTT without the samples that spanned
//!   a silence. After an outage the first acknowledgement acknowledges
//!   packets sent before it, and RFC 9002 (section 5.3) subtracts at most
//!   `max_ack_delay` of the time the peer held it, so the sample measures
//!   the outage: 2052 ms on a 34 ms path in the interop runner's blackhole
//!   test, which took quiche's smoothed RTT from 36 to 285 ms, and the
//!   equation's rate, the measurement intervals and the nofeedback timer
//!   with it. TFRC's own sample subtracts all the time the receiver held
//!   the feedback (`t_delay`, RFC 5348 section 4.3 step 3), so an outage
//!   never enters its `R`. Here a sample whose packet (the largest one the
//!   event acknowledges) was sent before the path was last found silent (a
//!   nofeedback expiry or persistent congestion) is left out: what it added
//!   to the host's average is kept as an excess, which decays as the host's
//!   average forgets the sample (RFC 9002's gain of 1/8,
//!   [`HOST_RTT_SMOOTHING`]), and `R` is the host's value less the excess,
//!   at least the minimum RTT.
//! * **Rate floor** `s / t_mbi`, with `t_mbi` = 10 s by default
//!   ([`MulTfrcConfig::DEFAULT_T_MBI`]) instead of RFC 5348's 64 s. 64 s is
//!   TCP's longest retransmission backoff (RFC 6298 section 2.5 allows a
//!   maximum RTO of at least 60 s), and a TCP connection waits it out; a
//!   QUIC connection instead ends after its idle timeout (RFC 9000 section
//!   10.1), 30 s at flowshare's endpoints and in many QUIC stacks. At one
//!   packet per 64 s a flow that the loss history has slowed to the floor
//!   goes silent long enough for its peer to close a connection whose path
//!   works: the blackhole test's client gave up after 30 s without a packet
//!   from a server paced at 1350 B / 64 s = 21 B/s. One packet per 10 s is
//!   three per 30 s idle timeout, so two lost in a row still leave the
//!   connection open. `t_mbi` stays configurable (`t_mbi=64` restores the
//!   RFC's value).
//! * **Initial rate**: `W_init / R` with `W_init` the host's initial window
//!   (RFC 9002's 10 packets instead of RFC 5348 section 4.2's TCP-era
//!   `min(4 s, max(2 s, 4380 bytes))`) and `R` the initial RTT, then again
//!   with the first RTT sample (section 4.3, first feedback).
//! * **First loss**: the loss history is seeded with one interval of
//!   `1 / p` packets where the equation gives `X_recv` at `p` (RFC 5348
//!   section 6.3.1, with the n-flow equation in place of TCP's); before a
//!   measurement interval closed, the target is what the first flight
//!   delivered over one RTT, and `s / (2R)`, the RFC's rate when the first
//!   packets are lost, only when nothing has been acknowledged. The event counts as one lost packet in `j`, however
//!   many slow start's overshoot loses in it ([`LossIntervals::seed`] says
//!   why), so that `j` stays what the seed was computed for.
//! * **Nofeedback timer** (RFC 5348 section 4.4): when no acknowledgement
//!   arrives for `max(4R, 2 s / X)` while data is in flight, before the first
//!   loss (or the first RTT sample) `X = max(X / 2, s / t_mbi)`; after it,
//!   `X_recv = max(X_recv / 2, s / (2 t_mbi))` if `X_calc > 2 X_recv`, else
//!   `X_recv = X_calc / 4`, and the rate is recomputed with the new `X_recv`.
//!   The timer then restarts. With nothing in flight the sender is idle and
//!   owes no feedback: the timer stops and starts again with the next packet
//!   sent (the RFC's idle rule, simplified). Controllers keep no timers, so
//!   an expiry takes effect at the next call that brings a time (a packet
//!   sent, a congestion event, a probe timeout, persistent congestion), as
//!   many times as it fell due. The timer allows for packets the host
//!   scheduled at an old pace: quiche fixes each packet's release time when
//!   the packet before it leaves, and reports it as the send time, so after
//!   the rate rises the next one or two packets may still be due at the old
//!   pace (half a second or more after an outage), and the timer would
//!   expire before they could be acknowledged. So a feedback sets the timer
//!   to run from itself or from the latest release time the host has
//!   reported, whichever is later (no feedback is owed for packets not yet
//!   sent, as RFC 5348 spares a sender that has been idle since the timer
//!   was set), and the `X` in
//!   `2 s / X` is the lower of the rates before and after the feedback
//!   (flowshare's endpoints hold each packet until quiche's `SendInfo::at`,
//!   which is the release time of the next one, a pacing interval at the
//!   old rate later than quiche reports). During a 2 s outage the timer
//!   halves `X_recv` about ten times (1.2 MB/s to 1.4 kB/s in the blackhole
//!   test), which keeps the probes into a silent path few; the restart
//!   below undoes it once the path answers.
//! * **Timeouts**: persistent congestion (RFC 9002 section 7.6; the quiche
//!   adapter declares it at the second consecutive probe timeout) is QUIC's
//!   counterpart of TCP's retransmission timeout, and is treated as the TCP
//!   model behind the equation treats a timeout:
//!   * the losses of the packets outstanding then and of the probes sent
//!     until an acknowledgement arrives form one loss event
//!     ([`LossIntervals::begin_timeout`], whose docs give the reasoning),
//!     and `j` counts every packet lost in it. By the RTT rule alone, the
//!     probes quiche sends into a silent path at growing PTO intervals were
//!     one loss event each, with intervals of one or two packets: in the
//!     blackhole test 12 packets lost in one 2 s outage took `p` from 0.018
//!     to 0.096, and three outages took it from 0.0005 to 0.096;
//!   * when feedback resumes, the receive rate is measured afresh from that
//!     acknowledgement (the interval that spans the outage measured the
//!     outage) and `X_recv` restarts at no less than one packet per `R`, so
//!     `X = min(X_calc, 2 s / R)`: RFC 9002's minimum window of two packets
//!     after persistent congestion (section 7.6.2), from which TCP, too,
//!     slow-starts after a timeout (RFC 5681 section 3.1). The restart value
//!     holds until a measurement reaches it, a new loss event or a
//!     nofeedback expiry: the first packets after an outage still leave at
//!     the pace scheduled during it (one per half second), and an interval
//!     that saw only them would undo the restart. Without it the timer's
//!     halvings left `X_recv` near 1 kB/s, and the rate took 2 s of
//!     doubling per outage to recover, at intervals that had to outlast an
//!     RTT the outage had inflated.
//! * **Weight change**: n can change while the connection runs; `X_calc`
//!   and `X` are recomputed at once.
//! * **Delivery**: the pacing rate is `X`. quiche gates sending by the
//!   congestion window only and leaves pacing to the application, so the
//!   window is [`WINDOW_RATE_FACTOR`] (2) times what `X` delivers in one
//!   smoothed RTT, at least 2 packets: with `X R` in flight the window does
//!   not bind, and it still has room while slow start doubles the rate or a
//!   queue lengthens the RTT faster than the smoothed RTT follows.
//!
//! Left out of RFC 5348: the oscillation reduction of section 4.5 (optional
//! there) and the sender's packet size averaging (`s` is the maximum
//! datagram size).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::controller::CongestionEvent;
use crate::controller::Controller;
use crate::controller::Counters;
use crate::controller::Params;
use crate::controller::SentPacket;
use crate::controller::Snapshot;
use crate::controller::Value;
use crate::equations::MulTfrcEquation;
use crate::equations::IMPROVED_FLOWS_HIT_BELOW;
use crate::grammar::choice_name;
use crate::grammar::Args;
use crate::grammar::Range;
use crate::grammar::SpecError;
use crate::loss_intervals::LossIntervals;
use crate::loss_intervals::LossOutcome;
use crate::spec::AlgorithmConfig;
use crate::time::Time;
use crate::window::AppLimitedTracker;
use crate::window::MINIMUM_WINDOW_PACKETS;

/// The congestion window is this many times `X` times the smoothed RTT.
pub const WINDOW_RATE_FACTOR: f64 = 2.0;

/// `t_RTO` in the equation is this many RTTs (RFC 5348 section 3.1).
pub const RTO_RTTS: f64 = 4.0;

/// The nofeedback timer runs at least this many RTTs (RFC 5348 section 4.3
/// step 2).
pub const NOFEEDBACK_RTTS: f64 = 4.0;

/// A new sample has weight `1 / HOST_RTT_SMOOTHING` in the host's smoothed
/// RTT (RFC 9002 section 5.3, as quiche and the lab compute it).
pub const HOST_RTT_SMOOTHING: u32 = 8;

/// The smallest RTT used: the equation and the rates divide by it.
const MIN_RTT: Duration = Duration::from_micros(1);

/// Accepted values of `b`: TCP acknowledges every packet (1) or every
/// second one with delayed acknowledgements (2) (RFC 5348 section 3.1).
pub const B_RANGE: Range = Range::closed(1.0, 2.0);

/// Accepted values of `t_mbi`, seconds: from one packet per second to one
/// per hour at the floor `s / t_mbi`.
pub const T_MBI_RANGE: Range = Range::closed(1.0, 3600.0);

/// Where the equation estimates the flows a loss event hits from `j`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowsHit {
    /// For every n > 1 (default): one connection's loss event of `j`
    /// packets hits `n (1 - ((n - 1)/n)^j)` of its n virtual flows whatever
    /// n is, so the estimate holds above 13 as below.
    All,
    /// For 1 < n < 13 only, `j` flows above, as paper 004 chose from its RED
    /// and random-loss runs (`flows_hit=paper`). Above 13 a loss event of a
    /// drop-tail overflow, several packets of one window, then counts as
    /// several flows halving: the lab's MulTFRC(30) took 0.77 of its share
    /// against Reno at 400 Mbit/s.
    Paper,
}

impl FlowsHit {
    /// The n below which the estimate is used.
    pub fn below(self) -> f64 {
        match self {
            FlowsHit::All => f64::INFINITY,
            FlowsHit::Paper => IMPROVED_FLOWS_HIT_BELOW,
        }
    }
}

/// The values of `flows_hit`.
const FLOWS_HIT: [(&str, FlowsHit); 2] = [("all", FlowsHit::All), ("paper", FlowsHit::Paper)];

/// The parameters of MulTFRC(n).
#[derive(Clone, Debug, PartialEq)]
pub struct MulTfrcConfig {
    /// n, the number of flowshares.
    pub n: f64,
    /// Packets one TCP acknowledgement covers in the equation; RFC 5348
    /// section 3.1 sets 1.
    pub b: f64,
    /// Maximum backoff interval `t_mbi`, seconds: the rate never drops below
    /// one packet per `t_mbi`. RFC 5348 section 4.3 sets 64; the default
    /// here is [`MulTfrcConfig::DEFAULT_T_MBI`].
    pub t_mbi: f64,
    /// Where the equation estimates the flows a loss event hits.
    pub flows_hit: FlowsHit,
}

impl MulTfrcConfig {
    /// The default `b` (RFC 5348 section 3.1).
    pub const DEFAULT_B: f64 = 1.0;
    /// The default `t_mbi`, seconds: a third of a 30 s idle timeout (see
    /// "Rate floor" in the [module docs](self)). RFC 5348 section 4.3 sets
    /// 64 s.
    pub const DEFAULT_T_MBI: f64 = 10.0;

    /// MulTFRC(n) with the defaults.
    pub fn new(n: f64) -> Result<Self, SpecError> {
        check_weight(n)?;
        Ok(MulTfrcConfig { n, b: Self::DEFAULT_B, t_mbi: Self::DEFAULT_T_MBI, flows_hit: FlowsHit::All })
    }

    /// The same parameters for another weight.
    pub fn reweighted(&self, n: f64) -> Result<Self, SpecError> {
        check_weight(n)?;
        Ok(MulTfrcConfig { n, ..self.clone() })
    }
}

impl AlgorithmConfig for MulTfrcConfig {
    /// Parses `n`, `b` and `t_mbi`.
    fn from_args(args: &mut Args) -> Result<Self, SpecError> {
        let n = args.weight(Range::WEIGHT)?;
        let b = args.real("b", B_RANGE)?.unwrap_or(Self::DEFAULT_B);
        let t_mbi = args.real("t_mbi", T_MBI_RANGE)?.unwrap_or(Self::DEFAULT_T_MBI);
        let flows_hit = args.choice("flows_hit", &FLOWS_HIT)?.unwrap_or(FlowsHit::All);
        Ok(MulTfrcConfig { n, b, t_mbi, flows_hit })
    }

    fn weight(&self) -> f64 {
        self.n
    }

    fn reweighted(&self, n: f64) -> Result<Arc<dyn AlgorithmConfig>, SpecError> {
        Ok(Arc::new(MulTfrcConfig::reweighted(self, n)?))
    }

    fn build(&self, params: &Params) -> Box<dyn Controller> {
        Box::new(MulTfrc::new(self.clone(), params))
    }
}

impl fmt::Display for MulTfrcConfig {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "multfrc:n={}", self.n)?;
        if self.b != Self::DEFAULT_B {
            write!(f, ",b={}", self.b)?;
        }
        if self.t_mbi != Self::DEFAULT_T_MBI {
            write!(f, ",t_mbi={}", self.t_mbi)?;
        }
        if self.flows_hit != FlowsHit::All {
            write!(f, ",flows_hit={}", choice_name(&FLOWS_HIT, self.flows_hit))?;
        }
        Ok(())
    }
}

fn check_weight(n: f64) -> Result<(), SpecError> {
    if Range::WEIGHT.contains(n) {
        Ok(())
    } else {
        Err(SpecError::out_of_range("multfrc", "n", n, Range::WEIGHT))
    }
}

/// The MulTFRC(n) controller.
#[derive(Debug)]
pub struct MulTfrc {
    /// Parameters.
    config: MulTfrcConfig,
    /// Loss event rate and losses per event, from every packet sent.
    loss_intervals: LossIntervals,
    /// Packets sent while app-limited.
    app_limited: AppLimitedTracker,
    /// Packet size `s`, bytes: the maximum datagram size.
    packet_size: f64,
    /// Initial window `W_init`, bytes.
    initial_window: f64,
    /// The allowed sending rate `X`, bytes per second; changes at rate
    /// updates, nofeedback expiries and weight changes.
    rate: f64,
    /// The equation's rate `X_calc`, bytes per second, as of the last rate
    /// update; `None` before the first loss.
    calculated_rate: Option<f64>,
    /// The receive rate `X_recv`, bytes per second; `None` until the first
    /// measurement interval closes.
    receive_rate: Option<f64>,
    /// Start of the open measurement interval: the acknowledgement that
    /// closed the previous one, or the first after the start or an idle
    /// period; `None` until that acknowledgement arrives.
    interval_start: Option<Time>,
    /// Bytes acknowledged in the open measurement interval.
    interval_bytes: u64,
    /// Bytes acknowledged before the first measurement interval closed:
    /// the receive rate of the first flight when the first loss comes
    /// before any `X_recv`.
    first_flight_bytes: u64,
    /// Whether a packet acknowledged in the open interval was sent while
    /// app-limited.
    interval_data_limited: bool,
    /// When the nofeedback timer expires; `None` while idle.
    nofeedback_deadline: Option<Time>,
    /// Release time of the latest packet the host reported; ahead of the
    /// host's clock when it schedules packets in advance.
    latest_send: Option<Time>,
    /// Whether the host has reported an RTT sample.
    rtt_sampled: bool,
    /// `R`: the host's smoothed RTT without the samples that spanned a
    /// silence, as of the last congestion event (the initial RTT before).
    smoothed_rtt: Duration,
    /// The host's smoothed RTT as of the last congestion event.
    host_smoothed_rtt: Duration,
    /// What the samples that spanned a silence still add to the host's
    /// smoothed RTT; decays as the host's average forgets them.
    rtt_excess: Duration,
    /// When the path was last found silent: the latest nofeedback expiry or
    /// persistent congestion.
    silence_detected: Option<Time>,
    /// Whether the host declared persistent congestion and no
    /// acknowledgement has arrived since.
    timeout_pending: bool,
    /// The receive rate a restart after a timeout holds, bytes per second,
    /// until a measurement reaches it, a loss event or a nofeedback expiry.
    restart_receive_rate: Option<f64>,
    /// Bytes in flight as the host last reported them.
    in_flight: usize,
    /// Event counts.
    counters: Counters,
}

impl MulTfrc {
    /// MulTFRC(n) as configured, at the initial rate.
    pub fn new(config: MulTfrcConfig, params: &Params) -> Self {
        let packet_size = params.max_datagram_size as f64;
        let initial_window = params.initial_window_packets as f64 * packet_size;
        let smoothed_rtt = params.initial_rtt.max(MIN_RTT);
        MulTfrc {
            config,
            loss_intervals: LossIntervals::new(),
            app_limited: AppLimitedTracker::default(),
            packet_size,
            initial_window,
            rate: initial_window / smoothed_rtt.as_secs_f64(),
            calculated_rate: None,
            receive_rate: None,
            interval_start: None,
            interval_bytes: 0,
            first_flight_bytes: 0,
            interval_data_limited: false,
            nofeedback_deadline: None,
            latest_send: None,
            rtt_sampled: false,
            smoothed_rtt,
            host_smoothed_rtt: smoothed_rtt,
            rtt_excess: Duration::ZERO,
            silence_detected: None,
            timeout_pending: false,
            restart_receive_rate: None,
            in_flight: 0,
            counters: Counters::default(),
        }
    }

    /// The parameters in use.
    pub fn config(&self) -> &MulTfrcConfig {
        &self.config
    }

    fn rtt_seconds(&self) -> f64 {
        self.smoothed_rtt.as_secs_f64()
    }

    /// `W_init / R`.
    fn initial_rate(&self) -> f64 {
        self.initial_window / self.rtt_seconds()
    }

    /// `s / t_mbi`.
    fn minimum_rate(&self) -> f64 {
        self.packet_size / self.config.t_mbi
    }

    /// `max(4R, 2 s / X)`.
    fn nofeedback_interval(&self) -> Duration {
        self.nofeedback_interval_at(self.rate)
    }

    /// `max(4R, 2 s / rate)`.
    fn nofeedback_interval_at(&self, rate: f64) -> Duration {
        let seconds = (NOFEEDBACK_RTTS * self.rtt_seconds()).max(2.0 * self.packet_size / rate);
        Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
    }

    /// The equation for the current path and losses per event.
    fn equation(&self) -> MulTfrcEquation {
        let rtt = self.rtt_seconds();
        MulTfrcEquation {
            n: self.config.n,
            rtt,
            rto: RTO_RTTS * rtt,
            b: self.config.b,
            losses_per_event: self.loss_intervals.losses_per_event().unwrap_or(1.0),
            flows_hit_below: self.config.flows_hit.below(),
        }
    }

    /// Recomputes `X_calc` from the current loss event rate; `None` before
    /// the first loss.
    fn refresh_calculated_rate(&mut self) -> Option<f64> {
        let p = self.loss_intervals.loss_event_rate()?;
        let calculated = self.packet_size * self.equation().packets_per_second(p);
        self.calculated_rate = Some(calculated);
        Some(calculated)
    }

    /// `X = max(min(X_calc, 2 X_recv), s / t_mbi)` once there is an `X_calc`.
    fn apply_equation(&mut self) -> bool {
        let Some(calculated) = self.refresh_calculated_rate() else { return false };
        let receive_limit = self.receive_rate.map_or(f64::INFINITY, |receive| 2.0 * receive);
        self.rate = calculated.min(receive_limit).max(self.minimum_rate());
        true
    }

    /// The rate update of a feedback (RFC 5348 section 4.3 step 4).
    fn update_rate(&mut self) {
        if !self.apply_equation() {
            let receive_limit = self.receive_rate.map_or(f64::INFINITY, |receive| 2.0 * receive);
            self.rate = (2.0 * self.rate).min(receive_limit).max(self.initial_rate());
        }
    }

    /// Closes the measurement interval at `now` if it lasted at least one
    /// smoothed RTT and saw data acknowledged; returns whether it did.
    fn close_interval(&mut self, now: Time) -> bool {
        let Some(start) = self.interval_start else { return false };
        let elapsed = now.saturating_duration_since(start);
        if self.interval_bytes == 0 || elapsed < self.smoothed_rtt {
            return false;
        }
        let measured = self.interval_bytes as f64 / elapsed.as_secs_f64();
        let mut receive = match self.receive_rate {
            Some(previous) if self.interval_data_limited => previous.max(measured),
            _ => measured,
        };
        if let Some(restart) = self.restart_receive_rate {
            if measured >= restart {
                self.restart_receive_rate = None;
            } else {
                receive = receive.max(restart);
            }
        }
        self.receive_rate = Some(receive);
        self.interval_start = Some(now);
        self.interval_bytes = 0;
        self.interval_data_limited = false;
        true
    }

    /// Takes `R` from the host's smoothed RTT, less the samples that spanned
    /// a silence: a sample is taken from the largest packet the event
    /// acknowledges, and one sent before the path was found silent measured
    /// the silence, not the path.
    fn update_rtt(&mut self, event: &CongestionEvent) {
        let host = event.rtt.smoothed;
        if event.rtt_updated {
            let sampled = event.acked.last().map(|packet| packet.sent_time);
            let spans_silence =
                self.rtt_sampled && self.silence_detected.zip(sampled).is_some_and(|(detected, sent)| sent < detected);
            self.rtt_excess = if spans_silence {
                self.rtt_excess + host.saturating_sub(self.host_smoothed_rtt)
            } else {
                self.rtt_excess * (HOST_RTT_SMOOTHING - 1) / HOST_RTT_SMOOTHING
            };
        }
        self.host_smoothed_rtt = host;
        let rtt =
            if self.rtt_excess.is_zero() { host } else { host.saturating_sub(self.rtt_excess).max(event.rtt.min) };
        self.smoothed_rtt = rtt.max(MIN_RTT);
    }

    /// Seeds the loss history after the first loss event from the receive
    /// rate (RFC 5348 section 6.3.1).
    fn seed_loss_history(&mut self) {
        // Before a measurement interval closed, the first flight's
        // acknowledged bytes over one RTT are its receive rate; the RFC's
        // s / (2R) is for when nothing at all has arrived.
        let first_flight = self.first_flight_bytes as f64 / self.rtt_seconds();
        let target = self.receive_rate.unwrap_or(first_flight.max(self.packet_size / (2.0 * self.rtt_seconds())));
        // The seeded event counts as one lost packet (LossIntervals::seed),
        // so p is found with j = 1: with the overshoot's j the equation
        // would give a p for a loss process the history never shows.
        let equation = MulTfrcEquation { losses_per_event: 1.0, ..self.equation() };
        let p = equation.loss_event_rate_for(target / self.packet_size);
        self.loss_intervals.seed(1.0 / p);
    }

    /// The nofeedback timer expired (RFC 5348 section 4.4).
    fn on_nofeedback(&mut self) {
        self.restart_receive_rate = None;
        let floor = self.minimum_rate();
        match self.refresh_calculated_rate().filter(|_| self.rtt_sampled) {
            Some(calculated) => {
                let receive = match self.receive_rate {
                    Some(receive) if calculated > 2.0 * receive => (receive / 2.0).max(floor / 2.0),
                    _ => calculated / 4.0,
                };
                self.receive_rate = Some(receive);
                self.rate = calculated.min(2.0 * receive).max(floor);
            }
            None => self.rate = (self.rate / 2.0).max(floor),
        }
    }

    /// Applies every nofeedback expiry due by `now`.
    fn expire_nofeedback(&mut self, now: Time) {
        while let Some(deadline) = self.nofeedback_deadline.filter(|&deadline| deadline <= now) {
            if self.in_flight == 0 {
                self.nofeedback_deadline = None;
                return;
            }
            let before = (self.rate, self.receive_rate);
            self.silence_detected = Some(deadline);
            self.on_nofeedback();
            if (self.rate, self.receive_rate) == before {
                // At the floor: later expiries change nothing either.
                self.nofeedback_deadline = Some(now + self.nofeedback_interval());
                return;
            }
            self.nofeedback_deadline = Some(deadline + self.nofeedback_interval());
        }
    }
}

impl Controller for MulTfrc {
    fn on_packet_sent(&mut self, packet: &SentPacket) {
        self.counters.record_sent(packet);
        self.loss_intervals.on_sent(packet.number, packet.time);
        self.app_limited.on_sent(packet.number);
        self.in_flight = packet.bytes_in_flight;
        if packet.bytes_in_flight == 0 || self.nofeedback_deadline.is_none() {
            // Sending starts or resumes after an idle period: no feedback was owed.
            self.nofeedback_deadline = Some(packet.time + self.nofeedback_interval());
            // With nothing acknowledged since the interval started, the
            // interval started with the acknowledgement that emptied the
            // network: any time since then was idle.
            if self.interval_bytes == 0 && self.interval_start.is_some_and(|start| packet.time > start) {
                self.interval_start = None;
            }
        } else {
            self.expire_nofeedback(packet.time);
        }
        self.in_flight = packet.bytes_in_flight + packet.bytes;
        self.latest_send = Some(self.latest_send.map_or(packet.time, |latest| latest.max(packet.time)));
    }

    fn on_congestion_event(&mut self, event: &CongestionEvent) {
        self.counters.record_event(event);
        self.in_flight = event.prior_in_flight;
        // Expiries due before this event come first: they may have found
        // the silence that this event's RTT sample spans.
        self.expire_nofeedback(event.now);
        self.update_rtt(event);
        // The host paced the packets it has already scheduled at this rate.
        let paced_rate = self.rate;

        if event.rtt_updated && !self.rtt_sampled {
            self.rtt_sampled = true;
            if !self.loss_intervals.has_history() {
                self.rate = self.initial_rate();
            }
        }

        let mut acked_bytes = 0;
        let mut data_limited = false;
        for packet in event.acked {
            self.loss_intervals.on_acked(packet.number);
            if packet.bytes > 0 {
                acked_bytes += packet.bytes as u64;
                data_limited |= !self.app_limited.may_grow(packet.number);
            }
        }
        let feedback = acked_bytes > 0;
        if self.receive_rate.is_none() {
            self.first_flight_bytes += acked_bytes;
        }
        if !event.acked.is_empty() {
            self.loss_intervals.end_timeout(event.now);
        }
        let resumed = feedback && self.timeout_pending;
        if resumed {
            // What this acknowledgement carries crossed the silence: the
            // receive rate is measured from here.
            self.timeout_pending = false;
            self.interval_start = Some(event.now);
            self.interval_bytes = 0;
            self.interval_data_limited = false;
        } else if self.interval_start.is_some() {
            self.interval_bytes += acked_bytes;
            self.interval_data_limited |= data_limited;
        } else if feedback {
            // This acknowledgement starts the interval; what it carries
            // was delivered before it.
            self.interval_start = Some(event.now);
        }
        let mut new_event = false;
        for packet in event.lost.iter().filter(|packet| packet.bytes > 0) {
            if self.loss_intervals.on_lost(packet.number, self.smoothed_rtt) == LossOutcome::NewEvent {
                self.counters.loss_events += 1;
                new_event = true;
            }
        }

        let closed = self.close_interval(event.now);
        if new_event && !self.loss_intervals.has_history() {
            self.seed_loss_history();
        }
        if new_event {
            self.restart_receive_rate = None;
        }
        if resumed {
            let restart = self.packet_size / self.rtt_seconds();
            self.receive_rate = Some(self.receive_rate.map_or(restart, |receive| receive.max(restart)));
            self.restart_receive_rate = Some(restart);
        }
        if closed || new_event || resumed {
            self.update_rate();
        }
        if feedback {
            // No feedback is owed for packets not yet released.
            let from = self.latest_send.map_or(event.now, |latest| latest.max(event.now));
            let interval = self.nofeedback_interval_at(self.rate.min(paced_rate));
            self.nofeedback_deadline = Some(from + interval);
        }
        self.in_flight = event.bytes_in_flight;
    }

    fn on_retransmission_timeout(&mut self, now: Time) {
        self.counters.timeouts += 1;
        self.expire_nofeedback(now);
    }

    fn on_persistent_congestion(&mut self, now: Time) {
        // The same silence runs the nofeedback timer, whose expiries due by
        // now are applied; the losses the host declares once feedback
        // resumes form one loss event.
        self.counters.persistent_congestion += 1;
        self.expire_nofeedback(now);
        self.silence_detected = Some(now);
        self.loss_intervals.begin_timeout();
        self.timeout_pending = true;
    }

    fn on_app_limited(&mut self, _bytes_in_flight: usize) {
        self.app_limited.on_app_limited();
    }

    fn on_packet_discarded(&mut self, number: u64) {
        // Neither acknowledged nor lost: counted in its interval, like a delivered packet.
        self.loss_intervals.on_acked(number);
    }

    fn set_max_datagram_size(&mut self, bytes: usize) {
        self.packet_size = bytes as f64;
        self.rate = self.rate.max(self.minimum_rate());
    }

    fn set_weight(&mut self, weight: f64) -> Result<(), SpecError> {
        self.config = self.config.reweighted(weight)?;
        self.apply_equation();
        Ok(())
    }

    fn congestion_window(&self) -> usize {
        let window = WINDOW_RATE_FACTOR * self.rate * self.rtt_seconds();
        window.max(MINIMUM_WINDOW_PACKETS * self.packet_size) as usize
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.rate as u64)
    }

    fn in_recovery(&self) -> bool {
        false
    }

    fn ssthresh(&self) -> Option<usize> {
        None
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn snapshot(&self) -> Snapshot {
        let phase = if self.loss_intervals.has_history() { "congestion_avoidance" } else { "slow_start" };
        Snapshot {
            algorithm: "multfrc",
            phase,
            congestion_window: self.congestion_window(),
            ssthresh: None,
            pacing_rate: self.pacing_rate(),
            weight: Some(self.config.n),
            state: [
                self.loss_intervals.loss_event_rate().map(|p| ("loss_event_rate", Value::Real(p))),
                self.calculated_rate.map(|rate| ("calculated_rate", Value::Real(rate))),
                self.receive_rate.map(|rate| ("receive_rate", Value::Real(rate))),
                self.loss_intervals.losses_per_event().map(|j| ("losses_per_event", Value::Real(j))),
            ]
            .into_iter()
            .flatten()
            .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::AckedPacket;
    use crate::controller::LostPacket;
    use crate::controller::RttEstimate;
    use crate::spec::Spec;
    use crate::testing::op;
    use crate::testing::params;
    use crate::testing::Host;
    use proptest::prelude::*;

    fn multfrc(spec: &str) -> MulTfrc {
        MulTfrc::new(crate::testing::config(spec), &params())
    }

    fn at_millis(host: &mut Host<MulTfrc>, millis: u64) {
        host.now = Time::from_nanos(millis * 1_000_000);
    }

    fn assert_close(actual: f64, expected: f64) {
        assert!(((actual - expected) / expected).abs() < 1e-9, "{actual} vs {expected}");
    }

    /// Loss event rate at which MulTFRC(1) with R = 0.1 s, t_RTO = 0.4 s,
    /// b = 1, j = 1 sends 100 packets/s, by bisection in python3 on the
    /// formulas of the equations module: the seed for X_recv = 100 kB/s.
    const P_FOR_100_PACKETS: f64 = 0.013_251_827_857_477_161;

    /// A MulTFRC(1) host after two RTTs of slow start: 10 packets sent at
    /// 0 ms and acknowledged at 100 ms (first RTT sample, the measurement
    /// starts), 10 more sent then and acknowledged at 200 ms (X_recv = 100
    /// kB/s, rate doubled to 200 kB/s).
    fn after_two_rtts(spec: &str) -> Host<MulTfrc> {
        let mut host = Host::new(multfrc(spec));
        let first = host.send(10);
        at_millis(&mut host, 100);
        host.event(&first.collect::<Vec<_>>(), &[]);
        let second = host.send(10);
        at_millis(&mut host, 200);
        host.event(&second.collect::<Vec<_>>(), &[]);
        host
    }

    /// [`after_two_rtts`], then 20 packets (20..40) sent at 200 ms and the
    /// first of them lost at 250 ms: the first loss event.
    fn after_first_loss(spec: &str) -> Host<MulTfrc> {
        let mut host = after_two_rtts(spec);
        host.send(20);
        at_millis(&mut host, 250);
        host.event(&[], &[20]);
        host
    }

    #[test]
    fn initial_rate_is_the_initial_window_per_initial_rtt() {
        // 10 packets of 1000 bytes per 100 ms; window twice that rate's RTT worth.
        let controller = multfrc("multfrc:n=4");
        assert_eq!(controller.pacing_rate(), Some(100_000));
        assert_eq!(controller.congestion_window(), 20_000);
        assert_eq!(controller.snapshot().phase, "slow_start");
    }

    #[test]
    fn slow_start_doubles_per_rtt_up_to_twice_the_receive_rate() {
        let mut host = after_two_rtts("multfrc:n=1");
        // 100 ms: first sample, rate = W_init / R = 100 kB/s; 200 ms: one RTT
        // after that, X_recv = 10 000 B / 0.1 s, rate = min(2 * 100k, 2 * 100k).
        assert_eq!(host.controller.snapshot().number("receive_rate"), Some(100_000.0));
        assert_eq!(host.controller.pacing_rate(), Some(200_000));
        assert_eq!(host.controller.congestion_window(), 40_000);
        // 300 ms: only 5 packets acknowledged in the RTT: X_recv = 50 kB/s, so
        // max(min(400k, 100k), W_init / R = 100k) = 100 kB/s.
        let sent = host.send(20);
        at_millis(&mut host, 300);
        host.event(&sent.take(5).collect::<Vec<_>>(), &[]);
        assert_eq!(host.controller.snapshot().number("receive_rate"), Some(50_000.0));
        assert_eq!(host.controller.pacing_rate(), Some(100_000));
    }

    #[test]
    fn receive_rate_is_measured_from_the_first_acknowledgement_over_an_rtt() {
        // The first acknowledgement (100 ms) starts the interval and is not
        // counted in it; acknowledgements at 150 ms do not close it yet.
        let mut host = Host::new(multfrc("multfrc:n=1"));
        let first = host.send(10);
        at_millis(&mut host, 100);
        host.event(&first.collect::<Vec<_>>(), &[]);
        let sent: Vec<u64> = host.send(10).collect();
        at_millis(&mut host, 150);
        host.event(&sent[..4], &[]);
        assert_eq!(host.controller.snapshot().number("receive_rate"), None);
        assert_eq!(host.controller.pacing_rate(), Some(100_000));
        // 200 ms: 10 packets in (100 ms, 200 ms], and one rate update.
        at_millis(&mut host, 200);
        host.event(&sent[4..], &[]);
        assert_eq!(host.controller.snapshot().number("receive_rate"), Some(100_000.0));
        assert_eq!(host.controller.pacing_rate(), Some(200_000));
    }

    #[test]
    fn first_loss_seeds_the_history_so_the_equation_gives_the_receive_rate() {
        let host = after_first_loss("multfrc:n=1");
        let snapshot = host.controller.snapshot();
        assert_eq!(snapshot.phase, "congestion_avoidance");
        assert_eq!(host.controller.counters().loss_events, 1);
        // X_recv = 100 kB/s = 100 packets/s: p from the inverse of the
        // equation; I_0 = 20 packets is shorter than 1/p = 75.46, so p = 1/I_1.
        assert_close(snapshot.number("loss_event_rate").unwrap(), P_FOR_100_PACKETS);
        assert_close(snapshot.number("calculated_rate").unwrap(), 100_000.0);
        assert_close(host.controller.rate, 100_000.0);
        assert_eq!(snapshot.number("losses_per_event"), Some(1.0));
    }

    #[test]
    fn first_loss_within_the_first_flight_seeds_from_what_that_flight_delivered() {
        // 10 packets sent at 0; at 100 ms the first 9 are acknowledged and
        // the 10th declared lost, before any measurement interval closed:
        // X_target = 9000 bytes / R (100 ms) = 90 kB/s, not s / (2R) = 5 kB/s.
        let mut host = Host::new(multfrc("multfrc:n=1"));
        host.send(10);
        at_millis(&mut host, 100);
        host.event(&[0, 1, 2, 3, 4, 5, 6, 7, 8], &[9]);
        assert!(host.controller.snapshot().number("receive_rate").is_none());
        assert_close(host.controller.snapshot().number("calculated_rate").unwrap(), 90_000.0);
        assert_close(host.controller.rate, 90_000.0);
    }

    #[test]
    fn first_packet_lost_before_any_receive_rate_seeds_from_one_packet_per_two_rtts() {
        // X_target = s / (2R) = 1000 / 0.2 = 5 kB/s. Losing the last of the 10
        // packets keeps I_0 = 1 below the seeded interval.
        let mut host = Host::new(multfrc("multfrc:n=1"));
        host.send(10);
        at_millis(&mut host, 50);
        host.event(&[], &[9]);
        assert_close(host.controller.rate, 5_000.0);
    }

    #[test]
    fn rate_is_the_equation_capped_at_twice_the_receive_rate() {
        // After the first loss X_calc = 100 kB/s; 3 packets acknowledged in
        // the RTT from 200 ms to 300 ms give X_recv = 30 kB/s: X = 60 kB/s.
        let mut host = after_first_loss("multfrc:n=1");
        at_millis(&mut host, 300);
        host.event(&[21, 22, 23], &[]);
        assert_close(host.controller.snapshot().number("receive_rate").unwrap(), 30_000.0);
        assert_close(host.controller.rate, 60_000.0);
    }

    #[test]
    fn nofeedback_timer_halves_the_rate_in_slow_start() {
        // Sent at 0 with R = 100 ms: the timer runs max(4R, 2s/X) = 400 ms.
        let mut host = Host::new(multfrc("multfrc:n=1"));
        host.send(10);
        host.controller.on_retransmission_timeout(Time::from_nanos(500_000_000));
        assert_eq!(host.controller.pacing_rate(), Some(50_000));
        // Expiries at 800, 1200 and 1600 ms are all applied at 1700 ms.
        host.controller.on_retransmission_timeout(Time::from_nanos(1_700_000_000));
        assert_eq!(host.controller.pacing_rate(), Some(6_250));
        assert_eq!(host.controller.counters().timeouts, 2);
    }

    #[test]
    fn nofeedback_timer_never_takes_the_rate_below_one_packet_per_t_mbi() {
        // s / t_mbi = 1000 / 10 = 100 B/s, however long nothing comes back:
        // one packet per 10 s, three in a 30 s idle timeout.
        let mut host = Host::new(multfrc("multfrc:n=1"));
        host.send(10);
        host.controller.on_retransmission_timeout(Time::from_nanos(100_000 * 1_000_000_000));
        assert_eq!(host.controller.rate, 100.0);
        // The window stays at the 2-packet minimum.
        assert_eq!(host.controller.congestion_window(), 2_000);
        // t_mbi = 8 s: 125 B/s.
        let mut host = Host::new(multfrc("multfrc:n=1,t_mbi=8"));
        host.send(10);
        host.controller.on_persistent_congestion(Time::from_nanos(100_000 * 1_000_000_000));
        assert_eq!(host.controller.rate, 125.0);
    }

    /// Reports a congestion event at the host's time: `acked` as (number,
    /// send time in ms), `lost`, and the host's RTT estimate with a new
    /// sample `latest` that moved the smoothed RTT to `smoothed`.
    fn report(host: &mut Host<MulTfrc>, acked: &[(u64, u64)], lost: &[u64], latest: u64, smoothed: Duration) {
        let mut take = |number: u64| match host.outstanding.iter().position(|&(n, _)| n == number) {
            Some(index) => host.outstanding.remove(index).1,
            None => 0,
        };
        let acked: Vec<_> = acked
            .iter()
            .map(|&(number, sent)| AckedPacket {
                number,
                sent_time: Time::from_nanos(sent * 1_000_000),
                bytes: take(number),
            })
            .collect();
        let lost: Vec<_> = lost.iter().map(|&number| LostPacket { number, bytes: take(number) }).collect();
        let prior = host.in_flight;
        host.in_flight -= acked.iter().map(|p| p.bytes).chain(lost.iter().map(|p| p.bytes)).sum::<usize>();
        let rtt = RttEstimate {
            latest: Duration::from_millis(latest),
            smoothed,
            variation: smoothed / 2,
            min: Duration::from_millis(100),
        };
        host.controller.on_congestion_event(&CongestionEvent {
            now: host.now,
            acked: &acked,
            lost: &lost,
            rtt,
            rtt_updated: true,
            prior_in_flight: prior,
            bytes_in_flight: host.in_flight,
        });
    }

    /// [`after_first_loss`], then the rest of its packets (21..40, sent at
    /// 200 ms) acknowledged at 300 ms, 10 more (40..50) sent at 400 ms, and
    /// silence: persistent congestion at 900 ms, probes 50 at 900 ms and 51
    /// at 1700 ms, 52 at 2300 ms, and feedback again at 2400 ms, when the
    /// host acknowledges 51 and declares 40..=50 lost; 52 is in flight.
    fn after_a_timeout(spec: &str) -> Host<MulTfrc> {
        after_a_timeout_with_last_release(spec, 2300)
    }

    /// [`after_a_timeout`] with probe 52 released at `release` ms instead,
    /// as a host reports a packet it scheduled in advance.
    fn after_a_timeout_with_last_release(spec: &str, release: u64) -> Host<MulTfrc> {
        let mut host = after_first_loss(spec);
        at_millis(&mut host, 300);
        report(&mut host, &(21..40).map(|number| (number, 200)).collect::<Vec<_>>(), &[], 100, RTT);
        at_millis(&mut host, 400);
        host.send(10);
        at_millis(&mut host, 900);
        host.controller.on_persistent_congestion(host.now);
        host.send(1);
        at_millis(&mut host, 1700);
        host.send(1);
        at_millis(&mut host, release);
        host.send(1);
        at_millis(&mut host, 2400);
        report(&mut host, &[(51, 1700)], &(40..=50).collect::<Vec<_>>(), 700, RTT);
        host
    }

    const RTT: Duration = Duration::from_millis(100);

    #[test]
    fn a_timeouts_losses_are_one_loss_event() {
        let host = after_a_timeout("multfrc:n=1");
        // 40..=49 were sent together, but the probe 50 was sent 500 ms after
        // them: by the RTT rule alone it would be a third event.
        assert_eq!(host.controller.counters().loss_events, 2);
        let snapshot = host.controller.snapshot();
        // Closed intervals: 20 packets (20 up to 40) and the seeded 1/p_0;
        // I_0 = 53 - 40 = 13 is shorter, so p = 2 / (20 + 1/p_0) = 0.02095.
        assert_close(snapshot.number("loss_event_rate").unwrap(), 2.0 / (20.0 + 1.0 / P_FOR_100_PACKETS));
        // The timeout lost 11 packets, the first event and the seed 1 each.
        assert_close(snapshot.number("losses_per_event").unwrap(), 13.0 / 3.0);
    }

    #[test]
    fn after_a_timeout_the_rate_restarts_at_two_packets_per_rtt() {
        // The nofeedback timer cut X_recv to X_calc / 4 = 25 kB/s at 700 ms
        // and halved it at 1100, 1500, 1900 and 2300 ms, to 1.5625 kB/s (X =
        // 3.125 kB/s); feedback restarts it at one packet per R = 10 kB/s,
        // and X = min(X_calc, 2 X_recv) = 20 kB/s (X_calc = 32.07 kB/s, by
        // python3 from the equations module's formulas, for p = 0.02095,
        // j = 13/3, R = 0.1 s).
        let mut host = after_a_timeout("multfrc:n=1");
        assert_close(host.controller.snapshot().number("receive_rate").unwrap(), 10_000.0);
        assert_close(host.controller.snapshot().number("calculated_rate").unwrap(), 32_066.945_249_931_316);
        assert_close(host.controller.rate, 20_000.0);
        // The acknowledgement that ended the silence starts the next
        // measurement interval. A packet paced at the old rate, alone in
        // it (1000 B in 200 ms), does not undo the restart.
        let sent = host.send(11).start;
        at_millis(&mut host, 2600);
        report(&mut host, &[(sent, 2400)], &[], 100, RTT);
        assert_close(host.controller.snapshot().number("receive_rate").unwrap(), 10_000.0);
        assert_close(host.controller.rate, 20_000.0);
        // 10 packets in the next 100 ms reach it: X_recv = 100 kB/s, X = X_calc.
        at_millis(&mut host, 2700);
        report(&mut host, &(sent + 1..sent + 11).map(|number| (number, 2400)).collect::<Vec<_>>(), &[], 100, RTT);
        assert_close(host.controller.snapshot().number("receive_rate").unwrap(), 100_000.0);
        assert_close(host.controller.rate, 32_066.945_249_931_316);
    }

    #[test]
    fn after_a_rate_increase_the_nofeedback_timer_waits_for_packets_paced_at_the_old_rate() {
        // The host scheduled its next packet at X = 3.125 kB/s: the timer
        // set at 2400 ms runs max(4R, 2 s / 3.125 kB/s) = 640 ms, not
        // max(4R, 2 s / 20 kB/s) = 400 ms, so nothing expires by 3000 ms.
        let mut host = after_a_timeout("multfrc:n=1");
        host.controller.on_retransmission_timeout(Time::from_nanos(3_000_000_000));
        assert_close(host.controller.rate, 20_000.0);
        // At 3040 ms it does: X_calc > 2 X_recv, so X_recv = 5 kB/s, X = 10 kB/s.
        host.controller.on_retransmission_timeout(Time::from_nanos(3_040_000_000));
        assert_close(host.controller.rate, 10_000.0);
    }

    #[test]
    fn nofeedback_timer_runs_from_the_release_of_the_last_scheduled_packet() {
        // Probe 52, reported at 2300 ms, is due at 3500 ms; reporting it
        // applied the expiries due by then (2300 and 2940 ms: X = 1562.5 B/s).
        // The timer set by the feedback at 2400 ms runs max(4R, 2 s / 1562.5
        // B/s) = 1280 ms from 3500 ms, not from 2400 ms.
        let mut host = after_a_timeout_with_last_release("multfrc:n=1", 3500);
        assert_close(host.controller.rate, 20_000.0);
        host.controller.on_retransmission_timeout(Time::from_nanos(4_700_000_000));
        assert_close(host.controller.rate, 20_000.0);
        // At 4780 ms it expires: X_calc > 2 X_recv, so X_recv = 5 kB/s, X = 10 kB/s.
        host.controller.on_retransmission_timeout(Time::from_nanos(4_780_000_000));
        assert_close(host.controller.rate, 10_000.0);
    }

    #[test]
    fn rtt_samples_that_span_a_silence_are_left_out() {
        // 10 packets sent at 200 ms; the nofeedback timer expires at 600 ms
        // (found at 700 ms); feedback at 2200 ms acknowledges one of them: a
        // 2 s sample, which takes the host's smoothed RTT from 100 ms to
        // 7/8 * 100 + 2000/8 = 337.5 ms. R stays 100 ms.
        let mut host = after_two_rtts("multfrc:n=1");
        let sent = host.send(10);
        host.controller.on_retransmission_timeout(Time::from_nanos(700_000_000));
        at_millis(&mut host, 2200);
        report(&mut host, &[(sent.start, 200)], &[], 2000, Duration::from_micros(337_500));
        assert_eq!(host.controller.smoothed_rtt, RTT);
        // A 100 ms sample of a packet sent after the silence: the host has
        // 7/8 * 337.5 + 100/8 = 307.8125 ms, of which the left-out sample
        // still makes 7/8 * 237.5 = 207.8125 ms.
        host.send(1);
        at_millis(&mut host, 2300);
        report(&mut host, &[(sent.end, 2200)], &[], 100, Duration::from_nanos(307_812_500));
        assert_eq!(host.controller.smoothed_rtt, RTT);
        // Samples of packets sent after the silence count in full: 300 ms
        // move the host to 7/8 * 307.8125 + 37.5 = 306.836 ms, R to 7/8 * 100
        // + 37.5 = 125 ms.
        host.send(1);
        at_millis(&mut host, 2600);
        report(&mut host, &[(sent.end + 1, 2300)], &[], 300, Duration::from_nanos(306_835_937));
        assert_eq!(host.controller.smoothed_rtt, Duration::from_millis(125));
    }

    #[test]
    fn nofeedback_timer_after_a_loss_cuts_the_receive_rate() {
        // After the first loss X_calc = X_recv = 100 kB/s; the last feedback
        // was at 200 ms, so the timer expires at 600 ms. X_calc > 2 X_recv
        // does not hold: X_recv = X_calc / 4, X = min(X_calc, 2 X_recv).
        let mut host = after_first_loss("multfrc:n=1");
        host.controller.on_retransmission_timeout(Time::from_nanos(650_000_000));
        assert_close(host.controller.snapshot().number("receive_rate").unwrap(), 25_000.0);
        assert_close(host.controller.rate, 50_000.0);
        // Next expiry at 600 + max(400, 2000/50000 s) = 1000 ms: now X_calc >
        // 2 X_recv, so X_recv halves to 12.5 kB/s and X = 25 kB/s.
        host.controller.on_retransmission_timeout(Time::from_nanos(1_050_000_000));
        assert_close(host.controller.snapshot().number("receive_rate").unwrap(), 12_500.0);
        assert_close(host.controller.rate, 25_000.0);
    }

    #[test]
    fn idle_sender_is_not_halved_by_the_nofeedback_timer() {
        // Everything acknowledged at 100 ms, then nothing sent until 5 s.
        let mut host = Host::new(multfrc("multfrc:n=1"));
        let sent = host.send(10);
        at_millis(&mut host, 100);
        host.event(&sent.collect::<Vec<_>>(), &[]);
        assert_eq!(host.controller.pacing_rate(), Some(100_000));
        at_millis(&mut host, 5_000);
        host.send(1);
        host.controller.on_retransmission_timeout(Time::from_nanos(5_300_000_000));
        assert_eq!(host.controller.pacing_rate(), Some(100_000));
        // The timer runs again from the send at 5 s: expired at 5.4 s.
        host.controller.on_retransmission_timeout(Time::from_nanos(5_450_000_000));
        assert_eq!(host.controller.pacing_rate(), Some(50_000));
    }

    #[test]
    fn app_limited_interval_does_not_lower_the_receive_rate() {
        // X_recv = 100 kB/s at 200 ms; then the application has 2 packets.
        for app_limited in [true, false] {
            let mut host = after_two_rtts("multfrc:n=1");
            if app_limited {
                host.controller.on_app_limited(0);
            }
            let sent = host.send(2);
            at_millis(&mut host, 300);
            host.event(&sent.collect::<Vec<_>>(), &[]);
            // 2000 B / 0.1 s = 20 kB/s measured. Data-limited: X_recv stays,
            // X = min(2 * 200k, 2 * 100k). Otherwise max(min(400k, 40k), 100k).
            let (receive, rate) = if app_limited { (100_000.0, 200_000) } else { (20_000.0, 100_000) };
            assert_eq!(host.controller.snapshot().number("receive_rate"), Some(receive));
            assert_eq!(host.controller.pacing_rate(), Some(rate));
        }
    }

    #[test]
    fn losses_per_event_are_counted_exactly_and_averaged() {
        let mut host = Host::new(multfrc("multfrc:n=1"));
        host.send(100);
        at_millis(&mut host, 100);
        // Three packets sent within one RTT of the first lost: one event, the
        // one that ends slow start, which counts as one lost packet like the
        // seeded interval (see LossIntervals::seed): (1 + 1) / 2.
        host.event(&(0..50).collect::<Vec<_>>(), &[50, 51, 52]);
        assert_eq!(host.controller.snapshot().number("losses_per_event"), Some(1.0));
        host.event(&[], &[53]);
        assert_eq!(host.controller.snapshot().number("losses_per_event"), Some(1.0));
        // Later events count every loss: 3 packets sent together, lost at 400 ms.
        at_millis(&mut host, 300);
        let sent = host.send(10);
        at_millis(&mut host, 400);
        host.event(&[], &[sent.start, sent.start + 1, sent.start + 2]);
        // Events of 3, 1 and the seed's 1, weights 1, 1, 1.
        assert_close(host.controller.snapshot().number("losses_per_event").unwrap(), 5.0 / 3.0);
        assert_eq!(host.controller.counters().loss_events, 2);
    }

    #[test]
    fn weight_change_recomputes_the_rate_at_once() {
        let mut host = after_first_loss("multfrc:n=1");
        host.controller.set_weight(4.0).unwrap();
        let snapshot = host.controller.snapshot();
        let equation = MulTfrcEquation {
            n: 4.0,
            rtt: 0.1,
            rto: 0.4,
            b: 1.0,
            losses_per_event: 1.0,
            flows_hit_below: IMPROVED_FLOWS_HIT_BELOW,
        };
        let expected = 1000.0 * equation.packets_per_second(P_FOR_100_PACKETS);
        // 409.1 kB/s by python3 from the same formulas.
        assert_close(expected, 409_121.371_431_692_7);
        assert_close(snapshot.number("calculated_rate").unwrap(), expected);
        assert_eq!(snapshot.weight, Some(4.0));
        // Capped at 2 X_recv = 200 kB/s.
        assert_eq!(host.controller.pacing_rate(), Some(200_000));
        // A scavenger weight takes effect the same way.
        host.controller.set_weight(0.5).unwrap();
        assert!(host.controller.rate < 60_000.0, "{}", host.controller.rate);
        let error = host.controller.set_weight(0.0).unwrap_err().to_string();
        assert_eq!(error, "multfrc: n = 0 is out of range; accepted range (0, 256]");
        assert!(host.controller.set_weight(f64::NAN).is_err());
        assert_eq!(host.controller.config().n, 0.5);
    }

    #[test]
    fn spec_keys_parse_and_print_back() {
        let canonical =
            ["multfrc:n=0.5", "multfrc:n=4", "multfrc:n=4,b=2", "multfrc:n=2.5,t_mbi=8", "multfrc:n=1,b=2,t_mbi=60"];
        for text in canonical {
            let spec: Spec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
            assert_eq!(spec.to_string().parse::<Spec>().unwrap(), spec);
        }
        let spec: Spec = "multfrc".parse().unwrap();
        assert_eq!(spec.weight(), 1.0);
        assert_eq!(spec.build(&params()).snapshot().algorithm, "multfrc");
    }

    #[test]
    fn bad_specs_name_the_key_and_the_accepted_range() {
        let error = |text: &str| text.parse::<Spec>().unwrap_err().to_string();
        assert!(error("multfrc:n=0").contains("multfrc: n = 0 is out of range; accepted range (0, 256]"));
        assert!(error("multfrc:n=300").contains("accepted range (0, 256]"));
        assert!(error("multfrc:b=3").contains("b = 3 is out of range; accepted range [1, 2]"));
        assert!(error("multfrc:t_mbi=0.5").contains("t_mbi = 0.5 is out of range; accepted range [1, 3600]"));
        assert!(error("multfrc:j=2").contains("j is not a known key (accepted: n, b, t_mbi, flows_hit)"));
    }

    fn check_rate(controller: &MulTfrc) -> Result<(), TestCaseError> {
        let floor = controller.packet_size / controller.config.t_mbi;
        prop_assert!(controller.rate.is_finite() && controller.rate >= floor, "rate {} floor {floor}", controller.rate);
        prop_assert!(controller.congestion_window() >= 2 * controller.packet_size as usize);
        let snapshot = controller.snapshot();
        for value in snapshot.state.iter().filter_map(|(_, value)| value.as_f64()) {
            prop_assert!(value.is_finite() && value >= 0.0, "{snapshot:?}");
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        #[test]
        fn random_acks_and_losses_keep_a_finite_rate_above_the_floor(
            spec in prop_oneof![
                Just("multfrc:n=1"),
                Just("multfrc:n=0.5"),
                Just("multfrc:n=4"),
                Just("multfrc:n=200,b=2,t_mbi=1"),
            ],
            ops in prop::collection::vec(op(), 1..60),
        ) {
            let mut host = Host::new(multfrc(spec));
            check_rate(&host.controller)?;
            for op in &ops {
                host.apply(op);
                check_rate(&host.controller)?;
            }
        }
    }
}
