//! The adapter that lets quiche drive a flowshare [`Controller`].
//!
//! quiche calls [`quiche::congestion::CongestionControl`] on every packet
//! sent, every ACK and every loss-detection timer; [`QuicheController`]
//! translates those calls into the controller's events. Two things quiche's
//! interface does not give directly are derived here:
//!
//! * **Time.** quiche passes `Instant`s; controllers take [`Time`] since an
//!   origin, the instant the adapter was built.
//! * **Persistent congestion.** quiche's gcongestion recovery never declares
//!   it; it only reports probe timeouts. With exponential backoff the second
//!   consecutive PTO fires 3 PTO periods after the last acknowledged send,
//!   which is RFC 9002's persistent congestion duration (section 7.6), so the
//!   adapter declares persistent congestion then, once per episode, and only
//!   after the first RTT sample as the RFC requires.

use std::time::Instant;

use flowshare_controllers::trace::Event;
use flowshare_controllers::AckedPacket;
use flowshare_controllers::CongestionEvent;
use flowshare_controllers::Controller;
use flowshare_controllers::LostPacket;
use flowshare_controllers::Params;
use flowshare_controllers::RttEstimate;
use flowshare_controllers::SentPacket;
use flowshare_controllers::Spec;
use flowshare_controllers::Time;
use quiche::congestion::Acked;
use quiche::congestion::Bandwidth;
use quiche::congestion::CongestionControl;
use quiche::congestion::Lost;
use quiche::congestion::RecoveryStats;
use quiche::congestion::RttStats;

/// Consecutive probe timeouts after which persistent congestion is declared.
const PERSISTENT_CONGESTION_TIMEOUTS: u32 = 2;

/// A flowshare controller inside a quiche connection.
#[derive(Debug)]
pub struct QuicheController {
    /// The algorithm.
    controller: Box<dyn Controller>,
    /// The spec it was built from.
    spec: Spec,
    /// The host parameters it was built with.
    params: Params,
    /// The instant that [`Time::ZERO`] stands for.
    origin: Instant,
    /// Maximum datagram size, bytes.
    max_datagram_size: usize,
    /// Probe timeouts since the last acknowledgement.
    consecutive_timeouts: u32,
    /// Whether an RTT sample has been taken (persistent congestion needs one).
    has_rtt_sample: bool,
    /// Largest bandwidth estimate reported to quiche.
    max_bandwidth: Bandwidth,
    /// Reused buffers for the packets of one congestion event.
    acked: Vec<AckedPacket>,
    lost: Vec<LostPacket>,
    /// Every event given to the controller, when recording is on.
    trace: Option<Vec<Event>>,
}

impl QuicheController {
    /// Builds the controller for `spec` with `params`: one of flowshare's
    /// own algorithms, as [`crate::select::selection`] hands quiche a
    /// factory only for those (quiche runs its own standard algorithms).
    pub fn new(spec: Spec, params: Params) -> Self {
        QuicheController {
            controller: spec.build(&params).expect("only flowshare's own algorithms reach the adapter"),
            spec,
            params,
            origin: Instant::now(),
            max_datagram_size: params.max_datagram_size,
            consecutive_timeouts: 0,
            has_rtt_sample: false,
            max_bandwidth: Bandwidth::zero(),
            acked: Vec::new(),
            lost: Vec::new(),
            trace: None,
        }
    }

    /// Starts recording every event given to the controller, so that it can
    /// be replayed (see [`flowshare_controllers::trace`]).
    pub fn record_trace(&mut self) {
        self.trace.get_or_insert_with(Vec::new);
    }

    /// The events recorded since [`QuicheController::record_trace`].
    pub fn trace(&self) -> Option<&[Event]> {
        self.trace.as_deref()
    }

    /// The flowshare controller.
    pub fn controller(&self) -> &dyn Controller {
        self.controller.as_ref()
    }

    /// Changes the controller's weight (see [`Controller::set_weight`]);
    /// the change is recorded in the trace.
    pub fn set_weight(&mut self, weight: f64) -> Result<(), flowshare_controllers::SpecError> {
        self.controller.set_weight(weight)?;
        self.record(|| Event::Weight(weight));
        Ok(())
    }

    /// The spec the controller was built from.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The host parameters the controller was built with; with the spec and
    /// the trace they reproduce it.
    pub fn params(&self) -> Params {
        self.params
    }

    fn time(&self, instant: Instant) -> Time {
        Time::from_duration(instant.saturating_duration_since(self.origin))
    }

    fn record(&mut self, event: impl FnOnce() -> Event) {
        if let Some(trace) = &mut self.trace {
            trace.push(event());
        }
    }
}

fn rtt_estimate(rtt_stats: &RttStats) -> RttEstimate {
    let smoothed = rtt_stats.rtt();
    let latest = rtt_stats.latest_rtt();
    RttEstimate {
        latest: if latest.is_zero() { smoothed } else { latest },
        smoothed,
        variation: rtt_stats.rttvar(),
        min: rtt_stats.min_rtt().unwrap_or(smoothed),
    }
}

impl CongestionControl for QuicheController {
    fn state_str(&self) -> &'static str {
        self.controller.snapshot().phase
    }

    /// The controller's window in whole datagrams. quiche sizes the next
    /// packet by what the window leaves (`cwnd - bytes_in_flight`), and the
    /// controllers grow their windows by fractions of a datagram per ack: an
    /// unrounded window makes quiche send a runt packet with every fraction.
    /// Measured in the testbed before this rounding: MulTCP(1) averaged 851
    /// bytes per packet where quiche's Reno averaged 1268, and lost twice
    /// the share of packets at a drop-tail queue that counts packets.
    /// quiche's own Reno and CUBIC grow in whole datagrams for the same
    /// reason; Linux counts its window in packets.
    fn get_congestion_window(&self) -> usize {
        whole_datagrams(self.controller.congestion_window(), self.max_datagram_size)
    }

    fn get_congestion_window_in_packets(&self) -> usize {
        self.get_congestion_window() / self.max_datagram_size.max(1)
    }

    /// Gated by the same whole-datagram window quiche fills: gcongestion's
    /// pacer asks `can_send` to tell pacing-limited from window-limited
    /// sending, and a fraction of a datagram must not count as room.
    fn can_send(&self, bytes_in_flight: usize) -> bool {
        self.controller.can_send(bytes_in_flight) && bytes_in_flight < self.get_congestion_window()
    }

    fn on_packet_sent(
        &mut self,
        sent_time: Instant,
        bytes_in_flight: usize,
        packet_number: u64,
        bytes: usize,
        _is_retransmissible: bool,
    ) {
        let packet = SentPacket { number: packet_number, bytes, time: self.time(sent_time), bytes_in_flight };
        self.controller.on_packet_sent(&packet);
        self.record(|| Event::Sent(packet));
    }

    fn on_packet_neutered(&mut self, packet_number: u64) {
        self.controller.on_packet_discarded(packet_number);
        self.record(|| Event::Discarded(packet_number));
    }

    fn on_congestion_event(
        &mut self,
        rtt_updated: bool,
        prior_in_flight: usize,
        bytes_in_flight: usize,
        event_time: Instant,
        acked_packets: &[Acked],
        lost_packets: &[Lost],
        _least_unacked: u64,
        rtt_stats: &RttStats,
        _recovery_stats: &mut RecoveryStats,
    ) {
        let mut acked = std::mem::take(&mut self.acked);
        let mut lost = std::mem::take(&mut self.lost);
        acked.clear();
        lost.clear();
        acked.extend(acked_packets.iter().map(|packet| AckedPacket {
            number: packet.packet_number(),
            sent_time: self.time(packet.time_sent()),
            bytes: packet.bytes_acked(),
        }));
        lost.extend(
            lost_packets.iter().map(|packet| LostPacket { number: packet.packet_number(), bytes: packet.bytes_lost() }),
        );

        if !acked.is_empty() {
            self.consecutive_timeouts = 0;
        }
        self.has_rtt_sample |= rtt_updated;

        let event = CongestionEvent {
            now: self.time(event_time),
            acked: &acked,
            lost: &lost,
            rtt: rtt_estimate(rtt_stats),
            rtt_updated,
            prior_in_flight,
            bytes_in_flight,
        };
        self.controller.on_congestion_event(&event);
        self.record(|| Event::congestion(&event));

        let estimate = self.bandwidth_estimate(rtt_stats);
        self.max_bandwidth = self.max_bandwidth.max(estimate);
        self.acked = acked;
        self.lost = lost;
    }

    fn on_retransmission_timeout(&mut self, _packets_retransmitted: bool) {
        // quiche's interface carries no time here; the timer fires now.
        let now = self.time(Instant::now());
        self.controller.on_retransmission_timeout(now);
        self.record(|| Event::RetransmissionTimeout(now));

        self.consecutive_timeouts += 1;
        if self.consecutive_timeouts == PERSISTENT_CONGESTION_TIMEOUTS && self.has_rtt_sample {
            self.controller.on_persistent_congestion(now);
            self.record(|| Event::PersistentCongestion(now));
        }
    }

    fn is_in_recovery(&self) -> bool {
        self.controller.in_recovery()
    }

    fn pacing_rate(&self, _bytes_in_flight: usize, _rtt_stats: &RttStats) -> Bandwidth {
        match self.controller.pacing_rate() {
            Some(rate) => Bandwidth::from_bytes_per_second(rate),
            None => Bandwidth::infinite(),
        }
    }

    fn bandwidth_estimate(&self, rtt_stats: &RttStats) -> Bandwidth {
        Bandwidth::from_bytes_and_time_delta(self.controller.congestion_window(), rtt_stats.rtt())
    }

    fn max_bandwidth(&self) -> Bandwidth {
        self.max_bandwidth
    }

    fn update_mss(&mut self, new_mss: usize) {
        self.max_datagram_size = new_mss;
        self.controller.set_max_datagram_size(new_mss);
        self.record(|| Event::MaxDatagramSize(new_mss));
    }

    fn on_app_limited(&mut self, bytes_in_flight: usize) {
        self.controller.on_app_limited(bytes_in_flight);
        self.record(|| Event::AppLimited(bytes_in_flight));
    }

    fn ssthresh(&self) -> Option<u64> {
        self.controller.ssthresh().map(|bytes| bytes as u64)
    }
}

/// `window` bytes rounded down to whole datagrams of `datagram_size` bytes,
/// but at least one datagram, so that a controller whose window is below one
/// datagram (a rate-based one at a very low rate) still sends, at its rate.
pub fn whole_datagrams(window: usize, datagram_size: usize) -> usize {
    let datagram_size = datagram_size.max(1);
    (window / datagram_size).max(1) * datagram_size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiche_sees_one_window_in_whole_datagrams_for_sizing_and_for_gating() {
        let params = Params { initial_window_packets: 10, max_datagram_size: 1350, ..Params::default() };
        let mut adapter = QuicheController::new("multcp:n=1".parse().unwrap(), params);
        // The controller keeps its 13 500-byte window when datagrams shrink
        // to 1000 bytes: 13.5 of them, of which quiche may fill 13.
        adapter.update_mss(1000);
        assert_eq!(adapter.controller().congestion_window(), 13_500);
        assert_eq!(adapter.get_congestion_window(), 13_000);
        assert_eq!(adapter.get_congestion_window_in_packets(), 13);
        assert!(adapter.can_send(12_999));
        assert!(!adapter.can_send(13_000));
        assert!(!adapter.can_send(13_499));
    }

    #[test]
    fn windows_round_down_to_whole_datagrams_but_never_below_one() {
        assert_eq!(whole_datagrams(13_500, 1350), 13_500);
        assert_eq!(whole_datagrams(14_849, 1350), 13_500);
        assert_eq!(whole_datagrams(14_850, 1350), 14_850);
        assert_eq!(whole_datagrams(700, 1350), 1350);
        assert_eq!(whole_datagrams(0, 1350), 1350);
        assert_eq!(whole_datagrams(5, 0), 5);
    }
}
