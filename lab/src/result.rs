//! What a run measured: per connection, per link and overall. The engine
//! ([`crate::sim`]) fills a [`RunResult`]; the testbed fills the same type
//! from its measurements, so that the metrics and reports serve both.

use flowshare_controllers::Snapshot;

use crate::setup::Role;

/// A completed timed transfer.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Completion {
    /// When it started, seconds.
    pub start_s: f64,
    /// How long it took until the receiver had every byte, seconds.
    pub duration_s: f64,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Everything measured about one connection.
#[derive(Clone, Debug)]
pub struct ConnectionResult {
    /// Label.
    pub label: String,
    /// Controller spec (`cbr` for CBR).
    pub cc: String,
    /// Flowshares the spec asks for.
    pub weight: f64,
    /// Role in the metrics.
    pub role: Role,
    /// Bytes delivered per bin over the whole run.
    pub bins: Vec<u64>,
    /// Throughput after the warm-up, bits per second.
    pub throughput_bps: f64,
    /// Sender counters after the warm-up, summed over subflows.
    pub stats: SenderStats,
    /// Timed transfers that completed.
    pub completions: Vec<Completion>,
    /// The controller's state at the end of the warm-up and of the run
    /// (the first subflow's; the lab only: the testbed's are in its qlogs).
    pub controller: Option<ControllerStates>,
}

/// A controller's snapshot at the end of the warm-up and of the run, so
/// that its counters can be taken over the measured time.
#[derive(Clone, Debug, PartialEq)]
pub struct ControllerStates {
    /// When the measurement started.
    pub at_warmup: Snapshot,
    /// When the run ended.
    pub at_end: Snapshot,
}

/// Everything measured about one link.
#[derive(Clone, Debug)]
pub struct LinkResult {
    /// Name.
    pub name: String,
    /// Rate, bits per second.
    pub rate_bps: f64,
    /// Counters after the warm-up.
    pub stats: LinkStats,
    /// Bytes sent over the measured time per byte the link could send.
    pub utilization: f64,
}

/// The outcome of a run.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Scenario name.
    pub name: String,
    /// Seed.
    pub seed: u64,
    /// Measured time (duration minus warm-up), seconds.
    pub measured_seconds: f64,
    /// Warm-up, seconds.
    pub warmup_seconds: f64,
    /// Bin width, seconds.
    pub bin_seconds: f64,
    /// Per connection.
    pub connections: Vec<ConnectionResult>,
    /// Per link.
    pub links: Vec<LinkResult>,
    /// Data packets sent by all flows over the whole run.
    pub packets_sent: u64,
    /// Events processed.
    pub events: u64,
}

/// Counters of a link, accumulated while the link is measuring.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkStats {
    /// Packets offered.
    pub arrivals: u64,
    /// Packets dropped.
    pub drops: u64,
    /// Bytes accepted for transmission.
    pub bytes: u64,
    /// Sum of the queueing delays of accepted packets, ns.
    pub queueing_delay_sum: u128,
    /// Largest queue seen, packets.
    pub max_queue_packets: u64,
}

impl LinkStats {
    /// Drops over packets offered (0 when none were offered).
    pub fn drop_rate(&self) -> f64 {
        self.drops as f64 / self.arrivals.max(1) as f64
    }
}

/// The sender's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SenderStats {
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Loss events: congestion events that declared at least one packet
    /// lost after the previous event's recovery period ended, counted by the
    /// controller (`Counters::loss_events`) and mirrored here.
    pub loss_events: u64,
    /// PTOs that fired.
    pub timeouts: u64,
    /// Persistent congestion episodes.
    pub persistent_congestion: u64,
    /// Sum of RTT samples, ns, and their number.
    pub rtt_sum: u128,
    /// Number of RTT samples.
    pub rtt_samples: u64,
}

impl SenderStats {
    /// Adds `more`'s counters to these.
    pub fn add(&mut self, more: &SenderStats) {
        self.packets_sent += more.packets_sent;
        self.packets_lost += more.packets_lost;
        self.loss_events += more.loss_events;
        self.timeouts += more.timeouts;
        self.persistent_congestion += more.persistent_congestion;
        self.rtt_sum += more.rtt_sum;
        self.rtt_samples += more.rtt_samples;
    }

    /// The counts since `before`, an earlier reading of these counters.
    pub fn since(&self, before: &SenderStats) -> SenderStats {
        SenderStats {
            packets_sent: self.packets_sent - before.packets_sent,
            packets_lost: self.packets_lost - before.packets_lost,
            loss_events: self.loss_events - before.loss_events,
            timeouts: self.timeouts - before.timeouts,
            persistent_congestion: self.persistent_congestion - before.persistent_congestion,
            rtt_sum: self.rtt_sum - before.rtt_sum,
            rtt_samples: self.rtt_samples - before.rtt_samples,
        }
    }
}
