//! The state the engine keeps per flow: its route through the links, the
//! receiving end, and the sender or CBR source.

use std::collections::VecDeque;

use flowshare_controllers::mcompound::McompoundGroup;
use flowshare_controllers::Snapshot;
use flowshare_controllers::Spec;

use crate::result::SenderStats;
use crate::rng::Rng;
use crate::sender::Sender;
use crate::setup::JitterShape;
use crate::setup::DRIFT_PERIODS;
use crate::Nanos;

/// How a flow's packets reach the network and its acknowledgements return.
#[derive(Clone, Debug)]
pub(crate) struct Route {
    /// Index of the first link of the path in `Simulation::path_links`.
    pub(crate) path_start: u32,
    /// Number of links on the path.
    pub(crate) path_len: u8,
    pub(crate) access_delay: Nanos,
    /// One-way delay of acknowledgements: access plus link delays.
    pub(crate) return_delay: Nanos,
    /// The extra access delay of packets on their way out.
    pub(crate) outbound_jitter: Jitter,
    /// The same for acknowledgements on their way back.
    pub(crate) inbound_jitter: Jitter,
    /// Latest arrival scheduled at the first link: jitter never reorders a
    /// flow's packets on its access link.
    pub(crate) last_out: Nanos,
    /// Latest acknowledgement arrival scheduled.
    pub(crate) last_back: Nanos,
}

impl Route {
    pub(crate) fn outbound(&mut self, now: Nanos, rng: &mut Rng) -> Nanos {
        let at = (now + self.access_delay + self.outbound_jitter.delay(now, rng)).max(self.last_out);
        self.last_out = at;
        at
    }

    pub(crate) fn inbound(&mut self, now: Nanos, rng: &mut Rng) -> Nanos {
        let at = (now + self.return_delay + self.inbound_jitter.delay(now, rng)).max(self.last_back);
        self.last_back = at;
        at
    }
}

/// The extra access delay of one direction of a flow, up to `max`.
#[derive(Clone, Debug)]
pub(crate) struct Jitter {
    max: Nanos,
    shape: JitterShape,
    /// For [`JitterShape::Drift`]: the index of the current period and the
    /// delays drawn for its start and its end.
    drift: Option<(u64, f64, f64)>,
}

impl Jitter {
    pub(crate) fn new(max: Nanos, shape: JitterShape) -> Jitter {
        Jitter { max, shape, drift: None }
    }

    /// The extra delay of a packet leaving at `now`.
    fn delay(&mut self, now: Nanos, rng: &mut Rng) -> Nanos {
        if self.max == 0 {
            return 0;
        }
        let max = self.max as f64;
        match self.shape {
            JitterShape::PerPacket => rng.below(max) as Nanos,
            JitterShape::Drift => {
                let period = self.max * DRIFT_PERIODS;
                let index = now / period;
                let (start, end) = match self.drift {
                    Some((current, start, end)) if current == index => (start, end),
                    // The next period starts where this one ends.
                    Some((current, _, end)) if current + 1 == index => (end, rng.below(max)),
                    _ => (rng.below(max), rng.below(max)),
                };
                self.drift = Some((index, start, end));
                let along = (now - index * period) as f64 / period as f64;
                (start + (end - start) * along) as Nanos
            }
        }
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
    /// The controller's snapshot at the end of the warm-up.
    pub(crate) snapshot_at_warmup: Option<Snapshot>,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Arrival gaps of a flow sending a packet every `spacing` for a second
    /// through a route with up to 1 ms of jitter of `shape`.
    fn arrival_gaps(shape: JitterShape, spacing: Nanos) -> Vec<Nanos> {
        let jitter = Jitter::new(1_000_000, shape);
        let mut route = Route {
            path_start: 0,
            path_len: 1,
            access_delay: 1_000_000,
            return_delay: 51_000_000,
            outbound_jitter: jitter.clone(),
            inbound_jitter: jitter,
            last_out: 0,
            last_back: 0,
        };
        let mut rng = Rng::new(7);
        let arrivals: Vec<Nanos> =
            (0..1_000_000_000 / spacing).map(|k| route.outbound(k * spacing, &mut rng)).collect();
        arrivals.windows(2).map(|pair| pair[1] - pair[0]).collect()
    }

    #[test]
    fn a_per_packet_draw_clumps_a_fast_flow_and_a_drift_keeps_its_spacing() {
        let spacing = 200_000; // 0.2 ms: 30 flowshares of paper 000 at 400 Mbit/s
        let clumped = arrival_gaps(JitterShape::PerPacket, spacing);
        let together = clumped.iter().filter(|&&gap| gap == 0).count();
        assert!(together > clumped.len() / 3, "{together} of {} packets arrive with the one before", clumped.len());
        let drifting = arrival_gaps(JitterShape::Drift, spacing);
        let (least, most) = (drifting.iter().min().unwrap(), drifting.iter().max().unwrap());
        assert!(*least >= spacing * 9 / 10 - 1 && *most <= spacing * 11 / 10 + 1, "gaps {least}..{most}");
    }

    #[test]
    fn a_drifting_delay_moves_across_its_range() {
        let mut jitter = Jitter::new(1_000_000, JitterShape::Drift);
        let mut rng = Rng::new(3);
        let delays: Vec<Nanos> = (0..10_000).map(|k| jitter.delay(k * 1_000_000, &mut rng)).collect();
        assert!(delays.iter().all(|&delay| delay < 1_000_000));
        assert!(delays.iter().any(|&delay| delay < 200_000) && delays.iter().any(|&delay| delay > 800_000));
        // Continuous: from one millisecond to the next it moves at most a tenth of one.
        assert!(delays.windows(2).all(|pair| pair[0].abs_diff(pair[1]) <= 100_001));
    }
}
