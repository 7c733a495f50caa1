//! A connection worth N flowshares gets its acknowledgements back sooner
//! than the N flows it stands for would.
//!
//! A QUIC receiver acknowledges every second ack-eliciting packet at once
//! and holds a lone one for up to its `max_ack_delay` (RFC 9000, section
//! 13.2; TCP's delayed acknowledgements likewise). A flow whose packets
//! arrive `g` apart therefore gets each group of `k` packets acknowledged
//! `k - 1` gaps after the group's first packet arrived, at most
//! `max_ack_delay` later, and until then the group counts against its
//! window. N flows of window `W / N` have their packets `N` times as far
//! apart as one connection of window `W`, so they wait up to N times as
//! long: where each flow's window is a few packets the connection's window
//! turns over faster than theirs, and it takes more than N flowshares at
//! the same loss rate. In the lab (small-20, RED, 4 Reno peers, 3 seeds,
//! 2026-11-25) MulTCP(30) took 1.18-1.19 of its share, thirty separate
//! `multcp:n=1` flows 0.99-1.00 each; with the receivers acknowledging
//! every packet both took 1.00, and the Reno peers' RTT samples beside the
//! aggregate were 61.4 ms against its 54.5 ms.
//!
//! With `ack_delay=flows` (the default of MulTCP and MulCUBIC) the
//! connection keeps in flight what its flows would: its window times
//! `(srtt + d(g)) / (srtt + d(N g))`, where `g` is the connection's mean
//! gap, `srtt / W` in packets, and `d(g) = (k - 1) min(g, max_ack_delay)`
//! the wait of a group's first packet, with `k` the packets per
//! acknowledgement the connection measures (one for a receiver that
//! acknowledges every packet, and then nothing changes). The window itself
//! evolves as before: per packet, N flows at the same loss event rate keep
//! the same windows whatever their acknowledgements wait, so only what the
//! window lets out changes. In slow start, at N <= 1 (a connection that is
//! one flow, or part of one, is acknowledged as a flow is) and unpaced
//! (`pacing=off`: flows that do not pace send the packets an
//! acknowledgement releases back to back, and those are acknowledged
//! together at once) the window is kept whole. `ack_delay=paper` keeps it
//! whole always, as the papers do.
//!
//! The receiver's `max_ack_delay` is taken at RFC 9000's default, 25 ms,
//! which is also quiche's; the lab's receivers use the same.

use std::time::Duration;

use crate::controller::AckedPacket;
use crate::grammar::choice_name;
use crate::pacing::Pacing;

/// Whether a weighted connection lets out what its flows would, given the
/// receiver's delayed acknowledgements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckDelay {
    /// As its flows would (module docs), the default of MulTCP and MulCUBIC.
    Flows,
    /// Its whole window, as the papers' windows do.
    Paper,
}

/// The values of the `ack_delay` key.
pub const ACK_DELAYS: [(&str, AckDelay); 2] = [("flows", AckDelay::Flows), ("paper", AckDelay::Paper)];

impl AckDelay {
    /// The default of the window controllers that take the key.
    pub const DEFAULT: AckDelay = AckDelay::Flows;

    /// The key's text, for specs.
    pub fn name(self) -> &'static str {
        choice_name(&ACK_DELAYS, self)
    }
}

/// The receiver's maximum acknowledgement delay a controller assumes: RFC
/// 9000's default of the `max_ack_delay` transport parameter, quiche's, and
/// the one `flowshare get` advertises and holds an acknowledgement for.
pub const ASSUMED_MAX_ACK_DELAY: Duration = Duration::from_millis(25);

/// Packets per acknowledgement before any is measured: RFC 9000's
/// recommendation (section 13.2.2).
const INITIAL_PACKETS_PER_ACK: f64 = 2.0;

/// Weight of each new sample in the mean of packets per acknowledgement.
const PACKETS_PER_ACK_GAIN: f64 = 1.0 / 16.0;

/// What the flows of a weighted connection would have in flight: the
/// measured packets per acknowledgement and the rule of [`AckDelay`].
#[derive(Clone, Debug, PartialEq)]
pub struct FlowAcks {
    mode: AckDelay,
    /// Mean of in-flight packets newly acknowledged per congestion event
    /// that acknowledged any.
    packets_per_ack: f64,
}

impl FlowAcks {
    /// Acknowledgements handled by `mode`.
    pub fn new(mode: AckDelay) -> Self {
        FlowAcks { mode, packets_per_ack: INITIAL_PACKETS_PER_ACK }
    }

    /// A congestion event acknowledged `acked`.
    pub fn on_acked(&mut self, acked: &[AckedPacket]) {
        if self.mode == AckDelay::Paper {
            return;
        }
        let packets = acked.iter().filter(|packet| packet.bytes > 0).count();
        if packets > 0 {
            self.packets_per_ack += (packets as f64 - self.packets_per_ack) * PACKETS_PER_ACK_GAIN;
        }
    }

    /// The measured packets per acknowledgement.
    pub fn packets_per_ack(&self) -> f64 {
        self.packets_per_ack
    }

    /// The share of its window a connection of `window_packets` standing
    /// for `n` flows lets out (module docs): 1 with `ack_delay=paper`, at
    /// `n <= 1`, in slow start or unpaced.
    pub fn window_factor(
        &self,
        n: f64,
        pacing: Pacing,
        in_slow_start: bool,
        window_packets: f64,
        smoothed_rtt: Duration,
    ) -> f64 {
        if self.mode == AckDelay::Paper || n <= 1.0 || pacing.ack_clocked() || in_slow_start {
            return 1.0;
        }
        let rtt = smoothed_rtt.as_secs_f64();
        if rtt <= 0.0 {
            return 1.0;
        }
        let gap = rtt / window_packets.max(1.0);
        let extra = (self.packets_per_ack - 1.0).max(0.0);
        let wait = |gap: f64| extra * gap.min(ASSUMED_MAX_ACK_DELAY.as_secs_f64());
        (rtt + wait(gap)) / (rtt + wait(n * gap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Time;

    const RTT: Duration = Duration::from_millis(50);

    fn acked(count: u64) -> Vec<AckedPacket> {
        (0..count).map(|number| AckedPacket { number, sent_time: Time::ZERO, bytes: 1200 }).collect()
    }

    #[test]
    fn thirty_flows_of_three_packets_let_out_what_their_acknowledgements_allow() {
        let acks = FlowAcks::new(AckDelay::Flows);
        // 90 packets over 50 ms: the connection's gap is 0.56 ms, each
        // flow's 16.7 ms, so a flow's first packet of each pair waits
        // 16.7 ms where the connection's waits 0.56.
        let factor = acks.window_factor(30.0, Pacing::Flows, false, 90.0, RTT);
        let expected = (50.0 + 50.0 / 90.0) / (50.0 + 50.0 / 3.0);
        assert!((factor - expected).abs() < 1e-9, "{factor} against {expected}");
        // Large windows per flow are nearly untouched; waits stop at the
        // receiver's maximum delay.
        let large = acks.window_factor(2.0, Pacing::Flows, false, 2000.0, RTT);
        assert!(large > 0.999 && large < 1.0, "{large}");
        let capped = acks.window_factor(200.0, Pacing::Flows, false, 20.0, RTT);
        assert!((capped - (50.0 + 2.5) / (50.0 + 25.0)).abs() < 1e-9, "{capped}");
    }

    #[test]
    fn one_flow_slow_start_no_pacing_and_the_paper_keep_the_whole_window() {
        let acks = FlowAcks::new(AckDelay::Flows);
        assert_eq!(acks.window_factor(1.0, Pacing::Flows, false, 10.0, RTT), 1.0);
        assert_eq!(acks.window_factor(0.5, Pacing::Flows, false, 10.0, RTT), 1.0);
        assert_eq!(acks.window_factor(8.0, Pacing::Flows, true, 10.0, RTT), 1.0);
        assert_eq!(acks.window_factor(8.0, Pacing::Off, false, 10.0, RTT), 1.0);
        assert_eq!(FlowAcks::new(AckDelay::Paper).window_factor(8.0, Pacing::Even, false, 10.0, RTT), 1.0);
        assert!(acks.window_factor(8.0, Pacing::Even, false, 10.0, RTT) < 1.0);
    }

    #[test]
    fn a_receiver_that_acknowledges_every_packet_changes_nothing() {
        let mut acks = FlowAcks::new(AckDelay::Flows);
        for _ in 0..200 {
            acks.on_acked(&acked(1));
        }
        assert!(acks.packets_per_ack() < 1.001, "{}", acks.packets_per_ack());
        assert!(acks.window_factor(30.0, Pacing::Flows, false, 90.0, RTT) > 0.999);
        // Acknowledgements of packets not in flight are not counted.
        let mut pure = FlowAcks::new(AckDelay::Flows);
        pure.on_acked(&[AckedPacket { number: 1, sent_time: Time::ZERO, bytes: 0 }]);
        assert_eq!(pure.packets_per_ack(), INITIAL_PACKETS_PER_ACK);
    }
}
