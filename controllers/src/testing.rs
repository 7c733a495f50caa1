//! Test support: a host that drives a controller the way quiche and the lab
//! do, and random event sequences for property tests.

use std::ops::Range;
use std::time::Duration;

use proptest::prelude::*;

use crate::controller::AckedPacket;
use crate::controller::CongestionEvent;
use crate::controller::Controller;
use crate::controller::LostPacket;
use crate::controller::Params;
use crate::controller::RttEstimate;
use crate::controller::SentPacket;
use crate::spec::AlgorithmConfig;
use crate::spec::Spec;
use crate::time::Time;

/// Datagram size of the tests: 1000 bytes keeps byte counts readable.
pub(crate) const MSS: usize = 1000;

/// Initial window 10 packets of [`MSS`], initial RTT 100 ms.
pub(crate) fn params() -> Params {
    Params { initial_window_packets: 10, max_datagram_size: MSS, initial_rtt: Duration::from_millis(100) }
}

/// The config of algorithm `T` that `spec` parses to; panics for another
/// algorithm's spec.
pub(crate) fn config<T: AlgorithmConfig + Clone>(spec: &str) -> T {
    let parsed: Spec = spec.parse().unwrap_or_else(|e| panic!("{e}"));
    parsed.config::<T>().unwrap_or_else(|| panic!("{spec} is not a {}", std::any::type_name::<T>())).clone()
}

/// Each `(text, canonical)`: `text` prints as `canonical`, which parses
/// back to the same spec.
pub(crate) fn assert_canonical(pairs: &[(&str, &str)]) {
    for &(text, canonical) in pairs {
        let spec: Spec = text.parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(spec.to_string(), canonical);
        assert_eq!(spec, canonical.parse().unwrap());
    }
}

/// A host: numbers packets, keeps what is in flight, reports events.
pub(crate) struct Host<C: Controller> {
    pub(crate) controller: C,
    pub(crate) next_number: u64,
    /// Packets in flight (number, bytes), in send order.
    pub(crate) outstanding: Vec<(u64, usize)>,
    pub(crate) in_flight: usize,
    pub(crate) now: Time,
    /// Smoothed RTT reported with every congestion event.
    pub(crate) rtt: Duration,
    /// Size of the packets sent next.
    pub(crate) mss: usize,
}

impl<C: Controller> Host<C> {
    pub(crate) fn new(controller: C) -> Self {
        Host {
            controller,
            next_number: 0,
            outstanding: Vec::new(),
            in_flight: 0,
            now: Time::ZERO,
            rtt: Duration::from_millis(100),
            mss: MSS,
        }
    }

    /// Sends `count` packets whether or not the window allows them.
    pub(crate) fn send(&mut self, count: usize) -> Range<u64> {
        let first = self.next_number;
        for _ in 0..count {
            self.send_one();
        }
        first..self.next_number
    }

    fn send_one(&mut self) {
        let packet =
            SentPacket { number: self.next_number, bytes: self.mss, time: self.now, bytes_in_flight: self.in_flight };
        self.controller.on_packet_sent(&packet);
        self.outstanding.push((self.next_number, self.mss));
        self.in_flight += self.mss;
        self.next_number += 1;
    }

    /// Sends while the controller allows it, at most `limit` packets.
    pub(crate) fn send_allowed(&mut self, limit: usize) -> Range<u64> {
        let first = self.next_number;
        for _ in 0..limit {
            if !self.controller.can_send(self.in_flight) {
                break;
            }
            self.send_one();
        }
        first..self.next_number
    }

    /// Reports packets `acked` and `lost` (each in increasing order) in one
    /// congestion event; numbers not in flight are reported with 0 bytes.
    pub(crate) fn event(&mut self, acked: &[u64], lost: &[u64]) {
        let prior = self.in_flight;
        let mut take = |number: u64| match self.outstanding.iter().position(|&(n, _)| n == number) {
            Some(index) => self.outstanding.remove(index).1,
            None => 0,
        };
        let acked: Vec<_> =
            acked.iter().map(|&number| AckedPacket { number, sent_time: Time::ZERO, bytes: take(number) }).collect();
        let lost: Vec<_> = lost.iter().map(|&number| LostPacket { number, bytes: take(number) }).collect();
        let resolved: usize = acked.iter().map(|p| p.bytes).chain(lost.iter().map(|p| p.bytes)).sum();
        self.in_flight -= resolved;
        self.controller.on_congestion_event(&CongestionEvent {
            now: self.now,
            acked: &acked,
            lost: &lost,
            rtt: RttEstimate { latest: self.rtt, smoothed: self.rtt, variation: self.rtt / 2, min: self.rtt },
            rtt_updated: true,
            prior_in_flight: prior,
            bytes_in_flight: self.in_flight,
        });
    }

    /// Sends what the window allows and acknowledges it packet by packet.
    pub(crate) fn round(&mut self) {
        for number in self.send_allowed(usize::MAX) {
            self.event(&[number], &[]);
        }
    }

    /// Makes the host call that `op` stands for.
    pub(crate) fn apply(&mut self, op: &Op) {
        let pick = |outstanding: &Vec<(u64, usize)>, from: u16, count: u8| -> Vec<u64> {
            if outstanding.is_empty() {
                return Vec::new();
            }
            let start = from as usize % outstanding.len();
            outstanding[start..].iter().take(count as usize).map(|&(number, _)| number).collect()
        };
        match *op {
            Op::Send(count) => {
                self.send(count as usize);
            }
            Op::SendAllowed => {
                self.send_allowed(64);
            }
            Op::Ack { from, count } => {
                let numbers = pick(&self.outstanding, from, count);
                self.event(&numbers, &[]);
            }
            Op::Lose { from, count } => {
                let numbers = pick(&self.outstanding, from, count);
                self.event(&[], &numbers);
            }
            Op::AckAndLose { from, count } => {
                let numbers = pick(&self.outstanding, from, count);
                let (lost, acked) = numbers.split_at(numbers.len() / 2);
                self.event(acked, lost);
            }
            Op::AckUnknown => self.event(&[self.next_number + 1_000_000], &[]),
            Op::Advance(millis) => self.now = self.now + Duration::from_millis(millis as u64),
            Op::Rtt(millis) => self.rtt = Duration::from_millis(millis as u64),
            Op::AppLimited => self.controller.on_app_limited(self.in_flight),
            Op::Timeout => self.controller.on_retransmission_timeout(self.now),
            Op::PersistentCongestion => self.controller.on_persistent_congestion(self.now),
            Op::Discard(from) => {
                if let Some(&number) = pick(&self.outstanding, from, 1).first() {
                    let bytes = self.outstanding.iter().find(|&&(n, _)| n == number).map_or(0, |&(_, bytes)| bytes);
                    self.outstanding.retain(|&(n, _)| n != number);
                    self.in_flight -= bytes;
                    self.controller.on_packet_discarded(number);
                }
            }
            Op::MaxDatagramSize(bytes) => {
                self.mss = bytes as usize;
                self.controller.set_max_datagram_size(self.mss);
            }
            Op::Weight(weight) => {
                // Out-of-range weights must be refused, never panic.
                let _ = self.controller.set_weight(weight);
            }
        }
    }
}

/// One host call in a random event sequence.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// Send this many packets regardless of the window (PTO probes).
    Send(u8),
    /// Send what the window allows (up to 64 packets).
    SendAllowed,
    /// Acknowledge up to `count` packets in flight from position `from`.
    Ack {
        from: u16,
        count: u8,
    },
    /// Declare them lost.
    Lose {
        from: u16,
        count: u8,
    },
    /// Lose the first half of them and acknowledge the rest.
    AckAndLose {
        from: u16,
        count: u8,
    },
    /// Acknowledge a packet the controller never saw (ACK-only).
    AckUnknown,
    /// Let time pass.
    Advance(u16),
    /// Change the smoothed RTT, milliseconds (0 included).
    Rtt(u16),
    AppLimited,
    Timeout,
    PersistentCongestion,
    /// Discard the packet in flight at this position.
    Discard(u16),
    MaxDatagramSize(u16),
    /// Change the weight, sometimes out of range.
    Weight(f64),
}

/// A random host call. Decoded from one random number: proptest's
/// combinators cost far more per value in unoptimised test builds, and
/// every controller's property test runs 10 000 sequences.
pub(crate) fn op() -> impl Strategy<Value = Op> {
    any::<u64>().prop_map(Op::decode)
}

impl Op {
    /// The call that `bits` stands for: the low byte picks the kind (with
    /// the weights below, out of 256), the rest gives its arguments.
    fn decode(bits: u64) -> Op {
        let from = (bits >> 8) as u16;
        let small = (bits >> 24) as u8;
        match bits as u8 {
            0..=29 => Op::Send(1 + small % 7),
            30..=89 => Op::SendAllowed,
            90..=149 => Op::Ack { from, count: 1 + small % 40 },
            150..=174 => Op::Lose { from, count: 1 + small % 5 },
            175..=189 => Op::AckAndLose { from, count: 2 + small % 8 },
            190..=194 => Op::AckUnknown,
            195..=219 => Op::Advance(from % 2000),
            220..=229 => Op::Rtt(from % 500),
            230..=234 => Op::AppLimited,
            235..=239 => Op::Timeout,
            240..=243 => Op::PersistentCongestion,
            244..=246 => Op::Discard(from),
            247..=249 => Op::MaxDatagramSize([1200, 1350, 1500][small as usize % 3]),
            250..=255 => Op::Weight(match small % 4 {
                0 => 1.0,
                1 => 2.0,
                2 => 0.5,
                _ => (bits >> 32) as u32 as f64 / u32::MAX as f64 * 300.0,
            }),
        }
    }
}
