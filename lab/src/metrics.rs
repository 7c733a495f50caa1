//! The metrics of paper 000 section 5.1 and the usual ones, computed from a
//! [`RunResult`].

use serde::Serialize;

use crate::result::RunResult;
use crate::setup::Role;

/// Jain's fairness index of `values`: 1 when all are equal, 1/n when one
/// takes everything.
pub fn jain_index(values: &[f64]) -> f64 {
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|v| v * v).sum();
    if squares == 0.0 {
        return 1.0;
    }
    sum * sum / (values.len() as f64 * squares)
}

/// Mean and population standard deviation.
pub fn mean_and_deviation(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / values.len() as f64;
    (mean, variance.sqrt())
}

/// Paper 000 eq. (11): the weighted connections' throughput per flowshare
/// over the mean throughput of the standard ones. `None` without either.
pub fn fairness_index(run: &RunResult) -> Option<f64> {
    let (mut weighted, mut weight) = (0.0, 0.0);
    let mut standard = Vec::new();
    for connection in &run.connections {
        match connection.role {
            Role::Weighted => {
                weighted += connection.throughput_bps;
                weight += connection.weight;
            }
            Role::Standard => standard.push(connection.throughput_bps),
            Role::Other => {}
        }
    }
    let standard_mean = standard.iter().sum::<f64>() / standard.len() as f64;
    (weight > 0.0 && !standard.is_empty() && standard_mean > 0.0).then(|| weighted / weight / standard_mean)
}

/// The measured bins of the connections with `role`, summed, in bits per
/// second.
pub fn role_series(run: &RunResult, role: Role) -> Vec<f64> {
    let first = (run.warmup_seconds / run.bin_seconds).round() as usize;
    let count = (run.measured_seconds / run.bin_seconds).round() as usize;
    let mut series = vec![0.0; count];
    for connection in run.connections.iter().filter(|c| c.role == role) {
        for (slot, bytes) in series.iter_mut().zip(connection.bins.iter().skip(first)) {
            *slot += *bytes as f64 * 8.0 / run.bin_seconds;
        }
    }
    series
}

/// Paper 000 eq. (12): the coefficient of variation of the weighted
/// aggregate's rate over the bins after the warm-up (0.1 s in the paper).
pub fn cov(run: &RunResult) -> Option<f64> {
    if !run.connections.iter().any(|c| c.role == Role::Weighted) {
        return None;
    }
    let series = role_series(run, Role::Weighted);
    let (mean, deviation) = mean_and_deviation(&series);
    (mean > 0.0).then(|| deviation / mean)
}

/// Utilisation of the busiest link.
pub fn utilization(run: &RunResult) -> f64 {
    run.links.iter().map(|link| link.utilization).fold(0.0, f64::max)
}

/// The drop rate of the link that dropped most: its drops over the packets
/// offered to it (0 when no link dropped). A flow's share of its packets
/// lost over this says whether it loses what an average packet at the
/// bottleneck does (1), less (a paced flow among bursty ones) or more.
pub fn bottleneck_drop_rate(run: &RunResult) -> f64 {
    run.links.iter().max_by_key(|link| link.stats.drops).map_or(0.0, |link| link.stats.drop_rate())
}

/// Per-connection measurements for reports.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlowMetrics {
    /// Index of the connection.
    pub id: usize,
    /// Label.
    pub label: String,
    /// Controller spec.
    pub cc: String,
    /// Flowshares.
    pub weight: f64,
    /// Role.
    pub role: Role,
    /// Throughput after the warm-up, bit/s.
    pub throughput_bps: f64,
    /// Packets declared lost per packet sent.
    pub packet_loss_rate: f64,
    /// Loss events per packet sent.
    pub loss_event_rate: f64,
    /// Mean RTT sample, ms.
    pub mean_rtt_ms: f64,
    /// PTOs.
    pub timeouts: u64,
    /// Completion times of timed transfers, seconds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub completion_times_s: Vec<f64>,
}

/// Per-link measurements for reports.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LinkMetrics {
    /// Name.
    pub name: String,
    /// Utilisation.
    pub utilization: f64,
    /// Dropped per offered packet.
    pub drop_rate: f64,
    /// Mean queueing delay of accepted packets, ms.
    pub mean_queueing_delay_ms: f64,
    /// Largest queue, packets.
    pub max_queue_packets: u64,
}

/// The per-connection metrics of a run.
pub fn flow_metrics(run: &RunResult) -> Vec<FlowMetrics> {
    run.connections
        .iter()
        .enumerate()
        .map(|(id, c)| {
            let sent = c.stats.packets_sent.max(1) as f64;
            FlowMetrics {
                id,
                label: c.label.clone(),
                cc: c.cc.clone(),
                weight: c.weight,
                role: c.role,
                throughput_bps: c.throughput_bps,
                packet_loss_rate: c.stats.packets_lost as f64 / sent,
                loss_event_rate: c.stats.loss_events as f64 / sent,
                mean_rtt_ms: if c.stats.rtt_samples > 0 {
                    c.stats.rtt_sum as f64 / c.stats.rtt_samples as f64 * 1e-6
                } else {
                    0.0
                },
                timeouts: c.stats.timeouts,
                completion_times_s: c.completions.iter().map(|done| done.duration_s).collect(),
            }
        })
        .collect()
}

/// The per-link metrics of a run.
pub fn link_metrics(run: &RunResult) -> Vec<LinkMetrics> {
    run.links
        .iter()
        .map(|link| LinkMetrics {
            name: link.name.clone(),
            utilization: link.utilization,
            drop_rate: link.stats.drop_rate(),
            mean_queueing_delay_ms: link.stats.queueing_delay_sum as f64
                / (link.stats.arrivals - link.stats.drops).max(1) as f64
                * 1e-6,
            max_queue_packets: link.stats.max_queue_packets,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_is_one_for_equal_shares_and_one_over_n_for_a_monopoly() {
        assert_eq!(jain_index(&[3.0, 3.0, 3.0]), 1.0);
        assert_eq!(jain_index(&[1.0, 0.0, 0.0, 0.0]), 0.25);
        // (1 + 2)^2 / (2 * 5) = 0.9
        assert!((jain_index(&[1.0, 2.0]) - 0.9).abs() < 1e-12);
    }

    #[test]
    fn deviation_is_the_population_one() {
        let (mean, deviation) = mean_and_deviation(&[1.0, 3.0]);
        assert_eq!((mean, deviation), (2.0, 1.0));
    }
}
