//! The controller trait that every algorithm implements and every host drives.
//!
//! A host (the quiche adapter, the lab simulator) owns loss detection: it
//! decides when a packet is acknowledged or lost, keeps the RTT estimates and
//! reports them here. A controller only turns those events into a congestion
//! window and, if it wants one, a pacing rate. Hosts call the methods in the
//! order the events happened, with non-decreasing times.

use std::fmt::Debug;
use std::time::Duration;

use crate::grammar::SpecError;
use crate::time::Time;

/// What a host tells a controller when it creates it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Initial congestion window, in packets (RFC 9002 recommends 10).
    pub initial_window_packets: usize,
    /// Maximum datagram size in bytes; windows are kept in bytes and grow in
    /// units of it.
    pub max_datagram_size: usize,
    /// RTT assumed before the first sample (RFC 9002: 333 ms).
    pub initial_rtt: Duration,
}

impl Default for Params {
    fn default() -> Self {
        Params { initial_window_packets: 10, max_datagram_size: 1200, initial_rtt: Duration::from_millis(333) }
    }
}

/// A packet the host put on the wire that counts towards bytes in flight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SentPacket {
    /// Packet number: increasing, possibly with gaps.
    pub number: u64,
    /// Size in bytes.
    pub bytes: usize,
    /// When it was (or will be, when paced) released.
    pub time: Time,
    /// Bytes in flight before this packet was sent.
    pub bytes_in_flight: usize,
}

/// A newly acknowledged packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckedPacket {
    /// Packet number.
    pub number: u64,
    /// The `time` it was reported with in [`SentPacket`].
    pub sent_time: Time,
    /// Size in bytes; 0 for packets that were not in flight (ACK-only).
    pub bytes: usize,
}

/// A packet the host declared lost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LostPacket {
    /// Packet number.
    pub number: u64,
    /// Size in bytes; 0 for packets that were not in flight.
    pub bytes: usize,
}

/// The host's RTT estimates (RFC 9002, section 5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RttEstimate {
    /// Most recent sample; equal to `smoothed` before the first sample.
    pub latest: Duration,
    /// Exponentially weighted moving average of the samples.
    pub smoothed: Duration,
    /// Mean deviation of the samples.
    pub variation: Duration,
    /// Minimum sample over the host's window; the initial RTT before the
    /// first sample.
    pub min: Duration,
}

impl RttEstimate {
    /// The estimate before any sample was taken (RFC 9002, section 6.2.2).
    pub fn initial(initial_rtt: Duration) -> Self {
        RttEstimate { latest: initial_rtt, smoothed: initial_rtt, variation: initial_rtt / 2, min: initial_rtt }
    }
}

/// Acknowledgements and losses the host processed at one moment, typically
/// one ACK frame or one loss-detection timer.
#[derive(Clone, Copy, Debug)]
pub struct CongestionEvent<'a> {
    /// When the host processed the event.
    pub now: Time,
    /// Newly acknowledged packets, in increasing packet-number order.
    pub acked: &'a [AckedPacket],
    /// Newly lost packets, in increasing packet-number order.
    pub lost: &'a [LostPacket],
    /// RTT estimates after the event.
    pub rtt: RttEstimate,
    /// Whether the event produced a new RTT sample.
    pub rtt_updated: bool,
    /// Bytes in flight before the event.
    pub prior_in_flight: usize,
    /// Bytes in flight after the event.
    pub bytes_in_flight: usize,
}

/// Counts of the events a controller was given, for hosts to log and for
/// tests to prove that a controller was driven.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Packets reported through [`Controller::on_packet_sent`].
    pub packets_sent: u64,
    /// Bytes of those packets.
    pub bytes_sent: u64,
    /// Congestion events received.
    pub congestion_events: u64,
    /// Packets acknowledged.
    pub packets_acked: u64,
    /// Bytes acknowledged.
    pub bytes_acked: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Bytes declared lost.
    pub bytes_lost: u64,
    /// Loss events the controller reacted to (window or rate reductions).
    pub loss_events: u64,
    /// Retransmission timeouts (PTOs).
    pub timeouts: u64,
    /// Persistent congestion episodes.
    pub persistent_congestion: u64,
}

impl Counters {
    /// Records a sent packet.
    pub fn record_sent(&mut self, packet: &SentPacket) {
        self.packets_sent += 1;
        self.bytes_sent += packet.bytes as u64;
    }

    /// Records the acknowledgements and losses of a congestion event.
    pub fn record_event(&mut self, event: &CongestionEvent) {
        self.congestion_events += 1;
        for packet in event.acked {
            self.packets_acked += 1;
            self.bytes_acked += packet.bytes as u64;
        }
        for packet in event.lost {
            self.packets_lost += 1;
            self.bytes_lost += packet.bytes as u64;
        }
    }
}

/// A read-only view of a controller's state for logs and qlog: what every
/// algorithm has, and an open list of the algorithm's own values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Algorithm name as in the spec language (`multcp`, `reno`, ...).
    pub algorithm: &'static str,
    /// Current phase (`slow_start`, `congestion_avoidance`, `recovery`, ...).
    pub phase: &'static str,
    /// Congestion window in bytes.
    pub congestion_window: usize,
    /// Slow start threshold in bytes.
    pub ssthresh: Option<usize>,
    /// Pacing rate in bytes per second: the mean rate (with `pacing=flows`
    /// the rate reported to the host after each packet varies around it).
    pub pacing_rate: Option<u64>,
    /// Number of flowshares the controller aims for (weighted algorithms).
    pub weight: Option<f64>,
    /// The algorithm's own state by name, in the order the algorithm
    /// documents: e.g. PA-MulTCP's `w_max` and `probe_window`, MulTFRC's
    /// `calculated_rate`. Windows are in bytes, rates in bytes per second.
    pub state: Vec<(&'static str, Value)>,
}

impl Snapshot {
    /// The algorithm's own value called `name`.
    pub fn value(&self, name: &str) -> Option<Value> {
        self.state.iter().find(|(key, _)| *key == name).map(|&(_, value)| value)
    }

    /// The algorithm's own value called `name` as a number
    /// ([`Value::as_f64`]).
    pub fn number(&self, name: &str) -> Option<f64> {
        self.value(name).and_then(|value| value.as_f64())
    }
}

/// One value of an algorithm's own state in a [`Snapshot`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A count or a size (windows in bytes).
    Integer(u64),
    /// A real number (rates, probabilities, factors).
    Real(f64),
    /// A time (RTTs).
    Duration(Duration),
    /// A name (which loop carried the last packet).
    Name(&'static str),
}

impl Value {
    /// The value as a number: sizes and counts as they are, times in
    /// seconds; `None` for names.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Integer(value) => Some(value as f64),
            Value::Real(value) => Some(value),
            Value::Duration(value) => Some(value.as_secs_f64()),
            Value::Name(_) => None,
        }
    }

    /// Whether the value is a finite number, or a name.
    pub fn is_finite(&self) -> bool {
        self.as_f64().is_none_or(f64::is_finite)
    }
}

/// A congestion controller: turns the host's events into a congestion window
/// and, optionally, a pacing rate.
///
/// Controllers are `Send + Sync` because quiche moves connections between
/// threads and requires its controllers to be both.
pub trait Controller: Debug + Send + Sync {
    /// A packet that counts towards bytes in flight was sent.
    fn on_packet_sent(&mut self, packet: &SentPacket);

    /// Packets were acknowledged or declared lost.
    fn on_congestion_event(&mut self, event: &CongestionEvent);

    /// A probe timeout fired without any packet being declared lost.
    fn on_retransmission_timeout(&mut self, now: Time);

    /// The host established persistent congestion (RFC 9002, section 7.6).
    /// Hosts report it before the congestion event that declares the lost
    /// packets, so the rule sees the window the losses found.
    fn on_persistent_congestion(&mut self, now: Time);

    /// The application had nothing more to send although the window had
    /// room: acknowledgements of the packets sent so far must not grow the
    /// window (RFC 9002, section 7.8).
    fn on_app_limited(&mut self, bytes_in_flight: usize);

    /// The packet will be neither acknowledged nor declared lost (its packet
    /// number space was discarded).
    fn on_packet_discarded(&mut self, _number: u64) {}

    /// The maximum datagram size changed (path MTU discovery).
    fn set_max_datagram_size(&mut self, bytes: usize);

    /// Changes the number of flowshares while the connection runs. Fails for
    /// controllers without a weight, and for weights out of range.
    fn set_weight(&mut self, weight: f64) -> Result<(), SpecError> {
        let _ = weight;
        Err(SpecError::not_settable(self.snapshot().algorithm, "n"))
    }

    /// Congestion window in bytes.
    fn congestion_window(&self) -> usize;

    /// Pacing rate in bytes per second, or `None` to leave pacing to the host.
    fn pacing_rate(&self) -> Option<u64>;

    /// Whether a packet may be sent with `bytes_in_flight` outstanding.
    fn can_send(&self, bytes_in_flight: usize) -> bool {
        bytes_in_flight < self.congestion_window()
    }

    /// Whether the controller is in a loss recovery period.
    fn in_recovery(&self) -> bool;

    /// Slow start threshold in bytes, if the algorithm has one.
    fn ssthresh(&self) -> Option<usize>;

    /// Event counts.
    fn counters(&self) -> &Counters;

    /// The controller's state.
    fn snapshot(&self) -> Snapshot;
}

/// A boxed controller is a controller, so that hosts can hold whatever a
/// [`crate::Spec`] builds where a concrete type is expected.
impl<C: Controller + ?Sized> Controller for Box<C> {
    fn on_packet_sent(&mut self, packet: &SentPacket) {
        (**self).on_packet_sent(packet)
    }

    fn on_congestion_event(&mut self, event: &CongestionEvent) {
        (**self).on_congestion_event(event)
    }

    fn on_retransmission_timeout(&mut self, now: Time) {
        (**self).on_retransmission_timeout(now)
    }

    fn on_persistent_congestion(&mut self, now: Time) {
        (**self).on_persistent_congestion(now)
    }

    fn on_app_limited(&mut self, bytes_in_flight: usize) {
        (**self).on_app_limited(bytes_in_flight)
    }

    fn on_packet_discarded(&mut self, number: u64) {
        (**self).on_packet_discarded(number)
    }

    fn set_max_datagram_size(&mut self, bytes: usize) {
        (**self).set_max_datagram_size(bytes)
    }

    fn set_weight(&mut self, weight: f64) -> Result<(), SpecError> {
        (**self).set_weight(weight)
    }

    fn congestion_window(&self) -> usize {
        (**self).congestion_window()
    }

    fn pacing_rate(&self) -> Option<u64> {
        (**self).pacing_rate()
    }

    fn can_send(&self, bytes_in_flight: usize) -> bool {
        (**self).can_send(bytes_in_flight)
    }

    fn in_recovery(&self) -> bool {
        (**self).in_recovery()
    }

    fn ssthresh(&self) -> Option<usize> {
        (**self).ssthresh()
    }

    fn counters(&self) -> &Counters {
        (**self).counters()
    }

    fn snapshot(&self) -> Snapshot {
        (**self).snapshot()
    }
}
