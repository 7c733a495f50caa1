//! Links and their queues.
//!
//! A link serialises packets at its rate and then delays them by its
//! propagation delay. Its queue is kept as the finish times of the packets
//! it holds, in order: a packet arriving at `now` finds the link busy until
//! the last finish time, so its own transmission finishes `size / rate`
//! after that. The simulator then needs one event per packet per hop (its
//! arrival at the next hop) instead of separate enqueue, start and finish
//! events, and the queue length at any arrival is the number of packets
//! whose transmission has not started.
//!
//! Queue disciplines: drop-tail limited in packets or bytes, and RED in
//! gentle mode with the automatic parameters of ns-2/ns-3 (`RedQueueDisc`
//! with `MinTh = MaxTh = 0`, `QW = -1`), plus an optional random loss rate
//! for validation against the TCP equation.

use std::collections::VecDeque;

use crate::result::LinkStats;
use crate::rng::Rng;
use crate::setup::Discipline;
use crate::setup::Limit;
use crate::setup::LinkSpec;
use crate::Nanos;

/// RED's parameters, derived as ns-3's `RedQueueDisc::InitializeParams`
/// does when `MinTh = MaxTh = 0` and `QW = -1` (the ns-2 settings paper 004
/// section II-C uses: "q_weight = -1, thresh = 0, maxthresh = 0, gentle").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    /// Minimum threshold of the average queue, packets (or bytes).
    pub min_th: f64,
    /// Maximum threshold, `3 min_th`.
    pub max_th: f64,
    /// Weight of the average queue estimator.
    pub q_weight: f64,
    /// Drop probability at `max_th` (1 / LInterm, ns-3 default LInterm 50).
    pub max_p: f64,
    /// Link capacity in packets per second (ns-3's `m_ptc`).
    pub packets_per_second: f64,
}

/// ns-3's default target queueing delay for the automatic thresholds.
pub const RED_TARGET_DELAY_SECONDS: f64 = 0.005;
/// ns-3's default `LInterm`.
pub const RED_LINTERM: f64 = 50.0;

impl RedParams {
    /// The automatic parameters for a link of `rate_bps` and propagation
    /// delay `delay_seconds` carrying packets of `mean_packet_bytes`.
    pub fn automatic(rate_bps: f64, delay_seconds: f64, mean_packet_bytes: usize, limit: Limit) -> RedParams {
        let ptc = rate_bps / (8.0 * mean_packet_bytes as f64);
        // min_th = max(5, target queue / 2) packets; max_th = 3 min_th
        // (Floyd et al., Adaptive RED, section 6).
        let mut min_th = (RED_TARGET_DELAY_SECONDS * ptc / 2.0).max(5.0);
        if let Limit::Bytes(_) = limit {
            min_th *= mean_packet_bytes as f64;
        }
        // QW = -1: an estimator time constant of ten default RTTs, the RTT
        // being three times the link delay plus a packet time, at least 100 ms.
        let rtt = (3.0 * (delay_seconds + 1.0 / ptc)).max(0.1);
        let q_weight = 1.0 - (-1.0 / (10.0 * rtt * ptc)).exp();
        RedParams { min_th, max_th: 3.0 * min_th, q_weight, max_p: 1.0 / RED_LINTERM, packets_per_second: ptc }
    }

    /// The drop probability before the count correction: linear from 0 at
    /// `min_th` to `max_p` at `max_th`, then (gentle) to 1 at `2 max_th`.
    pub fn base_probability(&self, average: f64) -> f64 {
        let p = if average >= self.max_th {
            self.max_p + (1.0 - self.max_p) * (average - self.max_th) / self.max_th
        } else {
            self.max_p * (average - self.min_th) / (self.max_th - self.min_th)
        };
        p.clamp(0.0, 1.0)
    }

    /// The drop probability after `count` packets were accepted since the
    /// last drop, in ns-3's "wait" mode (drops spread out uniformly).
    pub fn count_corrected(base: f64, count: f64) -> f64 {
        let product = count * base;
        if product < 1.0 {
            0.0
        } else if product < 2.0 {
            base / (2.0 - product)
        } else {
            1.0
        }
    }
}

/// RED's running state.
#[derive(Clone, Debug)]
struct RedState {
    params: RedParams,
    /// Average queue length.
    average: f64,
    /// Packets accepted since the last drop while above `min_th`.
    count: f64,
    /// Whether the average was above `min_th` at the last arrival.
    above_min_th: bool,
}

/// What happened to a packet offered to a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// Accepted: its transmission starts at `start` and ends at `finish`;
    /// it reaches the next hop at `finish + delay`.
    Accepted {
        /// When its transmission starts.
        start: Nanos,
        /// When its transmission ends.
        finish: Nanos,
    },
    /// Dropped by the queue or by random loss.
    Dropped,
}

/// A link with its queue.
#[derive(Clone, Debug)]
pub struct Link {
    /// The link's parameters.
    pub spec: LinkSpec,
    /// Transmission time per byte, ns.
    ns_per_byte: f64,
    /// Finish times and sizes of the packets in the queue and in
    /// transmission, oldest first.
    queue: VecDeque<(Nanos, u32)>,
    /// Bytes of the packets in `queue`.
    queued_bytes: usize,
    /// When the last queued transmission ends.
    busy_until: Nanos,
    red: Option<RedState>,
    /// Whether arrivals are counted in `stats` (after the warm-up).
    pub measuring: bool,
    /// Counters.
    pub stats: LinkStats,
}

impl Link {
    /// A link with an empty queue.
    pub fn new(spec: LinkSpec) -> Link {
        let red = match spec.discipline {
            Discipline::DropTail => None,
            Discipline::Red => Some(RedState {
                params: RedParams::automatic(
                    spec.rate_bps,
                    spec.delay as f64 * 1e-9,
                    spec.mean_packet_bytes,
                    spec.limit,
                ),
                average: 0.0,
                count: 0.0,
                above_min_th: false,
            }),
        };
        let capacity = match spec.limit {
            Limit::Packets(packets) => packets + 2,
            Limit::Bytes(bytes) => bytes / spec.mean_packet_bytes.max(1) + 2,
        };
        Link {
            ns_per_byte: 8e9 / spec.rate_bps,
            queue: VecDeque::with_capacity(capacity.min(1 << 20)),
            queued_bytes: 0,
            busy_until: 0,
            red,
            measuring: false,
            stats: LinkStats::default(),
            spec,
        }
    }

    /// Offers a packet of `bytes` arriving at `now`.
    pub fn offer(&mut self, now: Nanos, bytes: u32, rng: &mut Rng) -> Offer {
        while let Some(&(finish, size)) = self.queue.front() {
            if finish > now {
                break;
            }
            self.queue.pop_front();
            self.queued_bytes -= size as usize;
        }
        // The front packet, if any, is in transmission: it left the queue.
        let (waiting_packets, waiting_bytes) = match self.queue.front() {
            Some(&(_, size)) => (self.queue.len() - 1, self.queued_bytes - size as usize),
            None => (0, 0),
        };
        if self.measuring {
            self.stats.arrivals += 1;
            self.stats.max_queue_packets = self.stats.max_queue_packets.max(waiting_packets as u64);
        }
        let fits = match self.spec.limit {
            Limit::Packets(limit) => waiting_packets < limit,
            Limit::Bytes(limit) => waiting_bytes + bytes as usize <= limit,
        };
        let idle_since = (self.queue.is_empty()).then_some(self.busy_until);
        let early_drop = self.red_drop(now, waiting_packets, waiting_bytes, idle_since, rng);
        let random_drop = self.spec.random_loss > 0.0 && rng.uniform() < self.spec.random_loss;
        if !fits || early_drop || random_drop {
            if self.measuring {
                self.stats.drops += 1;
            }
            return Offer::Dropped;
        }
        let start = now.max(self.busy_until);
        let finish = start + (bytes as f64 * self.ns_per_byte).round() as Nanos;
        self.busy_until = finish;
        self.queue.push_back((finish, bytes));
        self.queued_bytes += bytes as usize;
        if self.measuring {
            self.stats.bytes += bytes as u64;
            self.stats.queueing_delay_sum += (start - now) as u128;
        }
        Offer::Accepted { start, finish }
    }

    /// RED's decision for an arrival finding `waiting` packets (bytes) in
    /// the queue; `idle_since` is when the queue emptied, if it is empty.
    fn red_drop(
        &mut self,
        now: Nanos,
        waiting_packets: usize,
        waiting_bytes: usize,
        idle_since: Option<Nanos>,
        rng: &mut Rng,
    ) -> bool {
        let bytes_mode = matches!(self.spec.limit, Limit::Bytes(_));
        let Some(red) = self.red.as_mut() else { return false };
        let params = red.params;
        let current = if bytes_mode { waiting_bytes as f64 } else { waiting_packets as f64 };
        // While the queue was idle, the average decays as if m small packets
        // had arrived to an empty queue.
        let idle_packets = idle_since
            .map_or(0.0, |since| (params.packets_per_second * (now.saturating_sub(since)) as f64 * 1e-9).floor());
        red.average = red.average * (1.0 - params.q_weight).powf(idle_packets + 1.0) + params.q_weight * current;
        red.count += 1.0;
        if red.average < params.min_th || waiting_packets <= 1 {
            red.above_min_th = false;
            return false;
        }
        if red.average >= 2.0 * params.max_th {
            return true;
        }
        if !red.above_min_th {
            red.above_min_th = true;
            red.count = 1.0;
            return false;
        }
        let probability = RedParams::count_corrected(params.base_probability(red.average), red.count);
        if rng.uniform() <= probability {
            red.count = 0.0;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(limit: Limit, discipline: Discipline) -> Link {
        Link::new(LinkSpec {
            name: "l".into(),
            rate_bps: 8e6, // 1 byte per microsecond
            delay: 10_000_000,
            discipline,
            limit,
            random_loss: 0.0,
            mean_packet_bytes: 1000,
        })
    }

    #[test]
    fn packets_are_serialised_at_the_link_rate() {
        let mut link = link(Limit::Packets(10), Discipline::DropTail);
        let mut rng = Rng::new(1);
        // 1000 bytes at 8 Mbit/s take 1 ms.
        assert_eq!(link.offer(0, 1000, &mut rng), Offer::Accepted { start: 0, finish: 1_000_000 });
        assert_eq!(link.offer(0, 1000, &mut rng), Offer::Accepted { start: 1_000_000, finish: 2_000_000 });
        assert_eq!(link.offer(5_000_000, 500, &mut rng), Offer::Accepted { start: 5_000_000, finish: 5_500_000 });
    }

    #[test]
    fn drop_tail_in_packets_counts_waiting_packets_only() {
        let mut link = link(Limit::Packets(2), Discipline::DropTail);
        let mut rng = Rng::new(1);
        // One in transmission, two waiting: the fourth arrival is dropped.
        for _ in 0..3 {
            assert!(matches!(link.offer(0, 1000, &mut rng), Offer::Accepted { .. }));
        }
        assert_eq!(link.offer(0, 1000, &mut rng), Offer::Dropped);
        // Once the first finished there is room again.
        assert!(matches!(link.offer(1_000_000, 1000, &mut rng), Offer::Accepted { .. }));
    }

    #[test]
    fn drop_tail_in_bytes_admits_what_fits() {
        let mut link = link(Limit::Bytes(1500), Discipline::DropTail);
        let mut rng = Rng::new(1);
        assert!(matches!(link.offer(0, 1000, &mut rng), Offer::Accepted { .. })); // in transmission
        assert!(matches!(link.offer(0, 1000, &mut rng), Offer::Accepted { .. })); // 1000 waiting
        assert_eq!(link.offer(0, 1000, &mut rng), Offer::Dropped); // 2000 > 1500
        assert!(matches!(link.offer(0, 500, &mut rng), Offer::Accepted { .. }));
        // 1500 fits
    }

    #[test]
    fn red_automatic_parameters_follow_ns3() {
        // 64 Mbit/s, 1500-byte packets: ptc = 5333.3 packets/s; the 5 ms
        // target queue is 26.7 packets, so min_th = 13.33 and max_th = 40.
        // QW = -1 with 20 ms delay: rtt = max(0.1, 3 (0.02 + 1/ptc)) = 0.1,
        // q_w = 1 - exp(-1 / (10 * 0.1 * 5333.3)) = 1.8748e-4.
        let params = RedParams::automatic(64e6, 0.02, 1500, Limit::Packets(100));
        assert!((params.min_th - 13.3333).abs() < 1e-3);
        assert!((params.max_th - 40.0).abs() < 1e-3);
        assert!((params.q_weight - 1.8748e-4).abs() < 1e-7);
        assert_eq!(params.max_p, 0.02);
        // On slow links the minimum threshold is 5 packets.
        assert_eq!(RedParams::automatic(1e6, 0.02, 1500, Limit::Packets(100)).min_th, 5.0);
    }

    #[test]
    fn red_gentle_probability_rises_from_max_p_to_one_between_max_th_and_twice_it() {
        let params = RedParams::automatic(64e6, 0.02, 1500, Limit::Packets(100));
        assert_eq!(params.base_probability(params.min_th), 0.0);
        assert!((params.base_probability(params.max_th) - 0.02).abs() < 1e-12);
        assert!((params.base_probability(1.5 * params.max_th) - 0.51).abs() < 1e-12);
        assert_eq!(params.base_probability(2.0 * params.max_th), 1.0);
        // Wait mode: no drop until count * p reaches 1.
        assert_eq!(RedParams::count_corrected(0.01, 50.0), 0.0);
        assert!((RedParams::count_corrected(0.01, 150.0) - 0.02).abs() < 1e-12);
    }

    #[test]
    fn red_drops_a_persistent_queue_but_not_a_short_burst() {
        let mut rng = Rng::new(3);
        let mut red = link(Limit::Packets(1000), Discipline::Red);
        // A burst of 30 packets into an idle queue: the average stays far
        // below min_th, so nothing is dropped.
        let burst_drops = (0..30).filter(|_| red.offer(0, 1000, &mut rng) == Offer::Dropped).count();
        assert_eq!(burst_drops, 0);
        // Arrivals at twice the link rate for 20 s build a standing queue
        // that RED keeps down by dropping.
        let mut drops = 0;
        for i in 0..40_000u64 {
            if red.offer(i * 500_000, 1000, &mut rng) == Offer::Dropped {
                drops += 1;
            }
        }
        assert!(drops > 15_000, "{drops}");
    }

    #[test]
    fn random_loss_drops_the_given_fraction() {
        let mut lossy = link(Limit::Packets(1_000_000), Discipline::DropTail);
        lossy.spec.random_loss = 0.1;
        let mut rng = Rng::new(5);
        let drops = (0..100_000u64).filter(|i| lossy.offer(i * 2_000_000, 1000, &mut rng) == Offer::Dropped).count();
        // Binomial(100000, 0.1): standard deviation 95.
        assert!((drops as i64 - 10_000).abs() < 500, "{drops}");
    }
}
