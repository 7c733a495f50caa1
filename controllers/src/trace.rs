//! Recording and replaying the events a controller was given.
//!
//! Controllers are deterministic functions of their events, so a recorded
//! trace replayed into a fresh controller built from the same spec must end
//! in the same state. Hosts record traces for debugging and tests use them to
//! prove that a live controller's window is what its events imply.

use crate::controller::AckedPacket;
use crate::controller::CongestionEvent;
use crate::controller::Controller;
use crate::controller::LostPacket;
use crate::controller::RttEstimate;
use crate::controller::SentPacket;
use crate::time::Time;

/// One call a host made on a controller.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// [`Controller::on_packet_sent`].
    Sent(SentPacket),
    /// [`Controller::on_congestion_event`], with owned packet lists.
    Congestion {
        /// [`CongestionEvent::now`].
        now: Time,
        /// [`CongestionEvent::acked`].
        acked: Vec<AckedPacket>,
        /// [`CongestionEvent::lost`].
        lost: Vec<LostPacket>,
        /// [`CongestionEvent::rtt`].
        rtt: RttEstimate,
        /// [`CongestionEvent::rtt_updated`].
        rtt_updated: bool,
        /// [`CongestionEvent::prior_in_flight`].
        prior_in_flight: usize,
        /// [`CongestionEvent::bytes_in_flight`].
        bytes_in_flight: usize,
    },
    /// [`Controller::on_retransmission_timeout`].
    RetransmissionTimeout(Time),
    /// [`Controller::on_persistent_congestion`].
    PersistentCongestion(Time),
    /// [`Controller::on_app_limited`].
    AppLimited(usize),
    /// [`Controller::on_packet_discarded`].
    Discarded(u64),
    /// [`Controller::set_max_datagram_size`].
    MaxDatagramSize(usize),
    /// A successful [`Controller::set_weight`].
    Weight(f64),
}

impl Event {
    /// The record of a congestion event.
    pub fn congestion(event: &CongestionEvent) -> Event {
        Event::Congestion {
            now: event.now,
            acked: event.acked.to_vec(),
            lost: event.lost.to_vec(),
            rtt: event.rtt,
            rtt_updated: event.rtt_updated,
            prior_in_flight: event.prior_in_flight,
            bytes_in_flight: event.bytes_in_flight,
        }
    }

    /// Makes the same call on `controller`.
    pub fn apply(&self, controller: &mut dyn Controller) {
        match self {
            Event::Sent(packet) => controller.on_packet_sent(packet),
            Event::Congestion { now, acked, lost, rtt, rtt_updated, prior_in_flight, bytes_in_flight } => controller
                .on_congestion_event(&CongestionEvent {
                    now: *now,
                    acked,
                    lost,
                    rtt: *rtt,
                    rtt_updated: *rtt_updated,
                    prior_in_flight: *prior_in_flight,
                    bytes_in_flight: *bytes_in_flight,
                }),
            Event::RetransmissionTimeout(now) => controller.on_retransmission_timeout(*now),
            Event::PersistentCongestion(now) => controller.on_persistent_congestion(*now),
            Event::AppLimited(bytes_in_flight) => controller.on_app_limited(*bytes_in_flight),
            Event::Discarded(number) => controller.on_packet_discarded(*number),
            Event::MaxDatagramSize(bytes) => controller.set_max_datagram_size(*bytes),
            Event::Weight(weight) => {
                // The weight was accepted when recorded, so it is accepted again.
                let _ = controller.set_weight(*weight);
            }
        }
    }
}

/// Makes every call of `events` on `controller`, in order.
pub fn replay(events: &[Event], controller: &mut dyn Controller) {
    for event in events {
        event.apply(controller);
    }
}
