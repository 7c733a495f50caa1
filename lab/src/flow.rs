//! The state the engine keeps per flow: its route through the links, the
//! receiving end, and the sender or CBR source.

use std::collections::VecDeque;

use flowshare_controllers::mcompound::McompoundGroup;
use flowshare_controllers::Spec;

use crate::result::SenderStats;
use crate::rng::Rng;
use crate::sender::Sender;
use crate::Nanos;

/// How a flow's packets reach the network and its acknowledgements return.
#[derive(Clone, Debug)]
pub(crate) struct Route {
    /// Index of the first link of the path in `Simulation::path_links`.
    pub(crate) path_start: u32,
    /// Number of links on the path.
    pub(crate) path_len: u8,
    pub(crate) access_delay: Nanos,
    pub(crate) jitter: Nanos,
    /// One-way delay of acknowledgements: access plus link delays.
    pub(crate) return_delay: Nanos,
    /// Latest arrival scheduled at the first link: jitter never reorders a
    /// flow's packets on its access link.
    pub(crate) last_out: Nanos,
    /// Latest acknowledgement arrival scheduled.
    pub(crate) last_back: Nanos,
}

impl Route {
    fn jittered(&self, base: Nanos, rng: &mut Rng) -> Nanos {
        if self.jitter == 0 {
            base
        } else {
            base + rng.below(self.jitter as f64) as Nanos
        }
    }

    pub(crate) fn outbound(&mut self, now: Nanos, rng: &mut Rng) -> Nanos {
        let at = self.jittered(now + self.access_delay, rng).max(self.last_out);
        self.last_out = at;
        at
    }

    pub(crate) fn inbound(&mut self, now: Nanos, rng: &mut Rng) -> Nanos {
        let at = self.jittered(now + self.return_delay, rng).max(self.last_back);
        self.last_back = at;
        at
    }
}

/// Which packets of a timed transfer arrived.
#[derive(Clone, Debug)]
pub(crate) struct Segments {
    bits: Vec<u64>,
    received: u32,
    total: u32,
    pub(crate) started: Nanos,
    /// Bytes the transfer is, for the report.
    pub(crate) bytes: u64,
}

impl Segments {
    pub(crate) fn new(total: u32, started: Nanos, bytes: u64) -> Segments {
        Segments { bits: vec![0; (total as usize).div_ceil(64)], received: 0, total, started, bytes }
    }

    /// Records `segment`; returns whether that completed the transfer.
    pub(crate) fn receive(&mut self, segment: u32) -> bool {
        let (word, bit) = ((segment / 64) as usize, segment % 64);
        let Some(slot) = self.bits.get_mut(word) else { return false };
        if *slot & (1 << bit) != 0 {
            return false;
        }
        *slot |= 1 << bit;
        self.received += 1;
        self.received == self.total
    }
}

/// The receiving end of a transport flow.
#[derive(Debug)]
pub(crate) struct Receiver {
    pub(crate) largest: Option<u64>,
    pub(crate) largest_at: Nanos,
    pub(crate) unacknowledged: u32,
    /// Packet numbers received and not yet acknowledged to the sender, from
    /// absolute position `log_base`: an acknowledgement carries the position
    /// it covers, which is what a QUIC ACK frame's ranges tell.
    pub(crate) log: VecDeque<u64>,
    pub(crate) log_base: u64,
    pub(crate) ack_deadline: Option<Nanos>,
    pub(crate) ack_timer_scheduled: Option<Nanos>,
    pub(crate) transfer: Option<Segments>,
}

impl Receiver {
    pub(crate) fn new() -> Receiver {
        Receiver {
            largest: None,
            largest_at: 0,
            unacknowledged: 0,
            log: VecDeque::with_capacity(16),
            log_base: 0,
            ack_deadline: None,
            ack_timer_scheduled: None,
            transfer: None,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Transport {
    pub(crate) spec: Spec,
    /// The MCompound group of the connection's subflows.
    pub(crate) group: Option<McompoundGroup>,
    pub(crate) sender: Sender,
    pub(crate) receiver: Receiver,
    /// Incremented for every new connection of a web source; packets and
    /// acknowledgements of earlier ones are ignored.
    pub(crate) epoch: u16,
    pub(crate) timer_scheduled: Option<Nanos>,
    pub(crate) pacing_scheduled: Option<Nanos>,
    /// Sender counters at the end of the warm-up.
    pub(crate) stats_at_warmup: SenderStats,
    /// Sender counters of the finished connections of a web source.
    pub(crate) finished_stats: SenderStats,
}

#[derive(Debug)]
pub(crate) struct Cbr {
    pub(crate) rate_bps: f64,
    pub(crate) on_off: Option<(f64, f64)>,
    pub(crate) on: bool,
    pub(crate) next_number: u64,
}

#[derive(Debug)]
pub(crate) enum Endpoint {
    Transport(Box<Transport>),
    Cbr(Cbr),
}

/// A flow: one subflow of a connection, or a CBR source.
#[derive(Debug)]
pub(crate) struct Flow {
    pub(crate) connection: u32,
    pub(crate) route: Route,
    pub(crate) endpoint: Endpoint,
    pub(crate) stopped: bool,
}
