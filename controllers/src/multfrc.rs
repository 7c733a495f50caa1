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
//! * **Below one flowshare** (`n < 1`) the equation takes the loss event
//!   rate of the full flow the sender is a fraction `n` of, not its own: a
//!   loss event that loses several of a full flow's packets hits the
//!   sender's thinner stream less often, so per packet the sender counts
//!   more loss events than the full flow
//!   ([`crate::equations::full_flow_loss_event_rate`], from `p` and `j`).
//!   With its own rate, as paper 004 (`thinning=paper`), MulTFRC(0.5) took
//!   0.79-0.87 of its share in the lab's scorecard.
//!   A full drop-tail queue drops a thin paced stream more often per
//!   packet than that model assumes, so the full flow's rate is further
//!   scaled by `n^thin_exponent`, 0.2 by default, a measured factor
//!   ([`crate::equations::crowded_loss_event_rate`] has the measurements);
//!   `thin_exponent=0` leaves the model alone.
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
//!     `t_RTO = t_rto R` and `b`, times `s`. RFC 5348 sets `t_rto` = 4;
//!     the default is 2 ([`MulTfrcConfig::DEFAULT_T_RTO`] says why), and
//!     the paper reproductions keep 4.
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

use std::time::Duration;

use crate::controller::CongestionEvent;
use crate::controller::Controller;
use crate::controller::Counters;
use crate::controller::Params;
use crate::controller::SentPacket;
use crate::controller::Snapshot;
use crate::controller::Value;
use crate::equations::crowded_loss_event_rate;
use crate::equations::full_flow_loss_event_rate;
use crate::equations::MulTfrcEquation;
use crate::grammar::SpecError;
use crate::loss_intervals::LossIntervals;
use crate::loss_intervals::LossOutcome;
use crate::pacing::Gaps;
use crate::time::Time;
use crate::window::AppLimitedTracker;
use crate::window::MINIMUM_WINDOW_PACKETS;

mod config;

pub use crate::thinning::Thinning;
pub use config::FlowsHit;
pub use config::MulTfrcConfig;
pub use config::B_RANGE;
pub use config::T_MBI_RANGE;

/// The congestion window is this many times `X` times the smoothed RTT.
pub const WINDOW_RATE_FACTOR: f64 = 2.0;

/// The nofeedback timer runs at least this many RTTs (RFC 5348 section 4.3
/// step 2).
pub const NOFEEDBACK_RTTS: f64 = 4.0;

/// A new sample has weight `1 / HOST_RTT_SMOOTHING` in the host's smoothed
/// RTT (RFC 9002 section 5.3, as quiche and the lab compute it).
pub const HOST_RTT_SMOOTHING: u32 = 8;

/// The smallest RTT used: the equation and the rates divide by it.
const MIN_RTT: Duration = Duration::from_micros(1);

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
    /// The gap after each packet.
    gaps: Gaps,
    /// Event counts.
    counters: Counters,
}

impl MulTfrc {
    /// MulTFRC(n) as configured, at the initial rate.
    pub fn new(config: MulTfrcConfig, params: &Params) -> Self {
        let packet_size = params.max_datagram_size as f64;
        let initial_window = params.initial_window_packets as f64 * packet_size;
        let smoothed_rtt = params.initial_rtt.max(MIN_RTT);
        let gaps = Gaps::new(config.pacing, config.n);
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
            gaps,
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
            rto: self.config.t_rto * rtt,
            b: self.config.b,
            losses_per_event: self.loss_intervals.losses_per_event().unwrap_or(1.0),
            flows_hit_below: self.config.flows_hit.below(),
        }
    }

    /// Recomputes `X_calc` from the current loss event rate; `None` before
    /// the first loss.
    fn refresh_calculated_rate(&mut self) -> Option<f64> {
        let mut p = self.loss_intervals.loss_event_rate()?;
        if self.config.thinning == Thinning::Undo {
            let j = self.loss_intervals.losses_per_event().unwrap_or(1.0);
            p = crowded_loss_event_rate(
                self.config.n,
                full_flow_loss_event_rate(self.config.n, p, j),
                self.config.thin_exponent,
            );
        }
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
        self.gaps.on_sent(packet.number);
        self.in_flight = packet.bytes_in_flight;
        if packet.bytes_in_flight == 0 || self.nofeedback_deadline.is_none() {
            // Sending starts or resumes after an idle period: no feedback was owed.
            self.nofeedback_deadline = Some(packet.time + self.nofeedback_interval());
            // With nothing acknowledged since the interval started, the
            // interval started with the acknowledgement that emptied the
            // network: the time since then was idle if it was longer than
            // the sender would have waited for its next packet anyway. A
            // window that each acknowledgement empties sends again at once
            // and keeps its interval; dropping it at every such send left
            // X_recv, and X = 2 X_recv, where they were for good.
            let idle_since =
                |start: Time| packet.time.saturating_duration_since(start).as_secs_f64() > self.packet_size / self.rate;
            if self.interval_bytes == 0 && self.interval_start.is_some_and(idle_since) {
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
        self.gaps.set_weight(weight);
        self.apply_equation();
        Ok(())
    }

    fn congestion_window(&self) -> usize {
        let window = WINDOW_RATE_FACTOR * self.rate * self.rtt_seconds();
        window.max(MINIMUM_WINDOW_PACKETS * self.packet_size) as usize
    }

    fn pacing_rate(&self) -> Option<u64> {
        self.gaps.rate(self.rate as u64)
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
            pacing_rate: Some(self.rate as u64),
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
mod tests;
