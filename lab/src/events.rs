//! The engine's events and their queue: small `Copy` values in one binary
//! heap ordered by time and then by insertion, so that simultaneous events
//! run in the order they were scheduled.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::Nanos;

/// A data or CBR packet in the network.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Packet {
    pub(crate) number: u64,
    pub(crate) flow: u32,
    pub(crate) segment: u32,
    pub(crate) bytes: u32,
    pub(crate) epoch: u16,
    pub(crate) hop: u8,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    /// A packet arrives at hop `hop` of its path (the receiver past the last).
    Arrive(Packet),
    /// An acknowledgement reaches the sender: the receiver's log up to
    /// `log_end` is acknowledged.
    Ack {
        flow: u32,
        epoch: u16,
        log_end: u64,
        largest: u64,
        ack_delay: Nanos,
    },
    LossTimer {
        flow: u32,
    },
    PacingWake {
        flow: u32,
    },
    AckTimer {
        flow: u32,
    },
    Start {
        flow: u32,
    },
    Stop {
        flow: u32,
    },
    Join {
        flow: u32,
    },
    CbrSend {
        flow: u32,
    },
    CbrToggle {
        flow: u32,
    },
    WebObject {
        flow: u32,
    },
    /// The warm-up ends.
    Measure,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Scheduled {
    pub(crate) time: Nanos,
    pub(crate) seq: u64,
    pub(crate) event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}

impl Eq for Scheduled {}

impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scheduled {
    /// Reversed: the heap's greatest element is the earliest event.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    pub(crate) heap: BinaryHeap<Scheduled>,
    pub(crate) seq: u64,
    pub(crate) processed: u64,
}

impl EventQueue {
    pub(crate) fn push(&mut self, time: Nanos, event: Event) {
        self.seq += 1;
        self.heap.push(Scheduled { time, seq: self.seq, event });
    }
}
