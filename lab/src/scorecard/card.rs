//! What a scorecard holds: per cell the fairness index over seeds with its
//! 95 % confidence interval, relative to the group's control, the loss
//! event rates and a verdict; as `scorecard.json` it is the same whether
//! one machine ran the grid or shards of it were merged.

use serde::Deserialize;
use serde::Serialize;

use crate::metrics;
use crate::result::RunResult;
use crate::setup::JitterShape;
use crate::setup::Role;

/// What one run is reduced to (serialised so that a testbed campaign can
/// keep the runs an earlier invocation finished).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Throughput per flowshare of the controller's connections over the
    /// mean standard flow's.
    #[serde(with = "number")]
    pub fairness_index: f64,
    /// The controller's connections' mean loss event rate.
    #[serde(with = "number")]
    pub weighted_loss_event_rate: f64,
    /// The standard flows' mean loss event rate.
    #[serde(with = "number")]
    pub standard_loss_event_rate: f64,
    /// The controller's connections' mean share of their packets lost
    /// over the bottleneck's drop rate ([`metrics::bottleneck_drop_rate`]):
    /// 1 when they lose what an average packet there does. NaN (`null`)
    /// where the bottleneck dropped nothing, and in samples kept before
    /// it was recorded.
    #[serde(default = "number::missing", with = "number")]
    pub weighted_loss_over_drop_rate: f64,
    /// The same for the standard flows.
    #[serde(default = "number::missing", with = "number")]
    pub standard_loss_over_drop_rate: f64,
    /// Utilisation of the bottleneck.
    #[serde(with = "number")]
    pub utilization: f64,
    /// Whether the run can be trusted (the testbed's real-time emulation
    /// kept up and the machine was quiet; always in the lab).
    pub trusted: bool,
}

impl Sample {
    /// The sample of a run; `None` when a role has no throughput.
    pub fn of(run: &RunResult, trusted: bool) -> Option<Sample> {
        let flows = metrics::flow_metrics(run);
        let role = |role| flows.iter().filter(move |flow| flow.role == role);
        let mean = |values: Vec<f64>| (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
        let per_share = mean(role(Role::Weighted).map(|f| f.throughput_bps / f.weight).collect())?;
        let standard = mean(role(Role::Standard).map(|f| f.throughput_bps).collect()).filter(|&s| s > 0.0)?;
        let drop_rate = metrics::bottleneck_drop_rate(run);
        let loss_over_drop_rate = |which| match mean(role(which).map(|f| f.packet_loss_rate).collect()) {
            Some(loss) if drop_rate > 0.0 => loss / drop_rate,
            _ => f64::NAN,
        };
        Some(Sample {
            fairness_index: per_share / standard,
            weighted_loss_event_rate: mean(role(Role::Weighted).map(|f| f.loss_event_rate).collect())?,
            standard_loss_event_rate: mean(role(Role::Standard).map(|f| f.loss_event_rate).collect())?,
            weighted_loss_over_drop_rate: loss_over_drop_rate(Role::Weighted),
            standard_loss_over_drop_rate: loss_over_drop_rate(Role::Standard),
            utilization: metrics::utilization(run),
            trusted,
        })
    }
}

/// Numbers that may not be finite (an interval from one run, a mean of
/// none) are `null` in JSON and NaN when read back.
mod number {
    use serde::Deserialize;
    use serde::Deserializer;
    use serde::Serializer;

    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        match value.is_finite() {
            true => serializer.serialize_f64(*value),
            false => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
    }

    /// A number a file written before it existed does not have.
    pub fn missing() -> f64 {
        f64::NAN
    }
}

/// A mean and the half-width of its 95 % confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Mean.
    #[serde(with = "number")]
    pub mean: f64,
    /// Half-width of the 95 % confidence interval (Student's t); infinite
    /// with one value (`null` in JSON).
    #[serde(with = "number")]
    pub ci95: f64,
}

/// Student's t for a two-sided 95 % interval with `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    TABLE.get(df.wrapping_sub(1)).copied().unwrap_or(1.96)
}

impl Estimate {
    /// The estimate of `values`' mean.
    pub fn of(values: &[f64]) -> Estimate {
        let count = values.len();
        let mean = values.iter().sum::<f64>() / count.max(1) as f64;
        if count < 2 {
            return Estimate { mean, ci95: f64::INFINITY };
        }
        let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (count - 1) as f64;
        Estimate { mean, ci95: t95(count - 1) * (variance / count as f64).sqrt() }
    }

    /// Whether the interval is within `precision` of the mean.
    pub fn within(&self, precision: f64) -> bool {
        self.ci95 <= precision * self.mean.abs()
    }

    /// This estimate over `control`'s, with the relative errors of both
    /// combined.
    pub fn relative_to(&self, control: &Estimate) -> Estimate {
        let mean = self.mean / control.mean;
        let error = ((self.ci95 / self.mean).powi(2) + (control.ci95 / control.mean).powi(2)).sqrt();
        Estimate { mean, ci95: mean.abs() * error }
    }
}

/// How a weighted cell came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The group's control.
    Control,
    /// Within the tolerance of N times the control's share.
    Holds,
    /// Outside it.
    Misses,
    /// The control's interval or the cell's own is wider than the
    /// precision asked for, so the cell cannot be judged.
    Imprecise,
    /// N separate connections at weight one: a reference, not judged.
    Reference,
}

/// A weighted cell judged against N separate connections instead of N
/// times the control.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeparateJudgement {
    /// Fairness index over the separate connections' (each of theirs is
    /// per connection, so 1 is what opening N connections would get).
    pub relative: Estimate,
    /// Within the tolerance of it, outside, or imprecise.
    pub verdict: Verdict,
}

/// `value` over `reference` and whether it is within `tolerance` of 1,
/// judged only when both intervals are within `precision`.
fn judge(value: &Estimate, reference: &Estimate, precision: f64, tolerance: f64) -> (Estimate, Verdict) {
    let relative = value.relative_to(reference);
    let verdict = if !(reference.within(precision) && value.within(precision)) {
        Verdict::Imprecise
    } else if (relative.mean - 1.0).abs() <= tolerance {
        Verdict::Holds
    } else {
        Verdict::Misses
    };
    (relative, verdict)
}

/// One cell of a group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellCard {
    /// Weight (1 for the control).
    pub n: f64,
    /// Runs that gave a sample.
    pub seeds: usize,
    /// Runs the testbed did not trust (lagging emulation, busy machine).
    pub untrusted: usize,
    /// Fairness index per flowshare over the mean standard flow.
    pub fairness_index: Estimate,
    /// Fairness index over the control's.
    pub relative: Estimate,
    /// Mean loss event rate of the controller's connections.
    #[serde(with = "number")]
    pub loss_event_rate_weighted: f64,
    /// Mean loss event rate of the standard flows.
    #[serde(with = "number")]
    pub loss_event_rate_standard: f64,
    /// Mean over the runs of the controller's connections' packet loss
    /// over the bottleneck's drop rate (`null` when a run lacks it).
    #[serde(default = "number::missing", with = "number")]
    pub loss_over_drop_rate_weighted: f64,
    /// The same for the standard flows.
    #[serde(default = "number::missing", with = "number")]
    pub loss_over_drop_rate_standard: f64,
    /// Mean utilisation of the bottleneck.
    #[serde(with = "number")]
    pub utilization: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// A weighted cell against N separate connections, when the scorecard
    /// ran them (`--separate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separate: Option<SeparateJudgement>,
    /// The fairness index of each run, in seed order.
    pub per_seed: Vec<f64>,
}

impl CellCard {
    /// The card of a cell of weight `n` from its samples; `control` is the
    /// group's control card (`None` for the control itself).
    pub fn new(n: f64, samples: &[Sample], control: Option<&CellCard>, precision: f64, tolerance: f64) -> CellCard {
        let per_seed: Vec<f64> = samples.iter().map(|s| s.fairness_index).collect();
        let fairness_index = Estimate::of(&per_seed);
        let mean = |f: fn(&Sample) -> f64| samples.iter().map(f).sum::<f64>() / samples.len().max(1) as f64;
        let (relative, verdict) = match control {
            None => (Estimate { mean: 1.0, ci95: 0.0 }, Verdict::Control),
            Some(control) => judge(&fairness_index, &control.fairness_index, precision, tolerance),
        };
        CellCard {
            n,
            seeds: samples.len(),
            untrusted: samples.iter().filter(|s| !s.trusted).count(),
            fairness_index,
            relative,
            loss_event_rate_weighted: mean(|s| s.weighted_loss_event_rate),
            loss_event_rate_standard: mean(|s| s.standard_loss_event_rate),
            loss_over_drop_rate_weighted: mean(|s| s.weighted_loss_over_drop_rate),
            loss_over_drop_rate_standard: mean(|s| s.standard_loss_over_drop_rate),
            utilization: mean(|s| s.utilization),
            verdict,
            separate: None,
            per_seed,
        }
    }

    /// The card of N separate connections at weight one from their
    /// samples: relative to the control (1 when each of them gets what one
    /// connection alone gets), not judged.
    pub fn separate_reference(n: f64, samples: &[Sample], control: &CellCard) -> CellCard {
        let card = CellCard::new(n, samples, None, 0.0, 0.0);
        let relative = card.fairness_index.relative_to(&control.fairness_index);
        CellCard { relative, verdict: Verdict::Reference, ..card }
    }

    /// This weighted cell judged against `reference`, N separate
    /// connections of the same N.
    pub fn judged_against_separate(self, reference: &CellCard, precision: f64, tolerance: f64) -> CellCard {
        let (relative, verdict) = judge(&self.fairness_index, &reference.fairness_index, precision, tolerance);
        CellCard { separate: Some(SeparateJudgement { relative, verdict }), ..self }
    }
}

/// One group: a controller against one kind of peer on one path and queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupCard {
    /// Position in the grid.
    pub index: usize,
    /// Controller (name or spec without weight).
    pub controller: String,
    /// Peers.
    pub peer: String,
    /// Path name.
    pub path: String,
    /// Bottleneck rate, Mbit/s.
    pub rate_mbps: f64,
    /// Base RTT, ms.
    pub rtt_ms: f64,
    /// Queue name.
    pub queue: String,
    /// The control: the controller at weight one.
    pub control: CellCard,
    /// The weights.
    pub cells: Vec<CellCard>,
    /// N separate connections at weight one for each whole N >= 2, when
    /// the scorecard ran them (`--separate`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub separate: Vec<CellCard>,
}

impl GroupCard {
    /// Every cell of the group, the control first, then the weighted
    /// cells and the N-separate references: one per row of the table.
    pub fn all_cells(&self) -> impl Iterator<Item = &CellCard> {
        std::iter::once(&self.control).chain(&self.cells).chain(&self.separate)
    }
}

/// Which part of a grid a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, from 0.
    pub index: usize,
    /// Shards in all.
    pub count: usize,
}

impl Shard {
    /// Parses `I/K` (1-based on the command line, as job arrays count).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {text:?}: expected I/K with 1 <= I <= K, e.g. 2/8");
        let (index, count) = text.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) =
            (index.trim().parse().map_err(|_| bad())?, count.trim().parse().map_err(|_| bad())?);
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index: index - 1, count })
    }

    /// Whether the group at `index` of the grid is this shard's.
    pub fn owns(&self, index: usize) -> bool {
        index % self.count == self.index
    }
}

/// A scorecard: `scorecard.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scorecard {
    /// `lab` or `testbed`.
    pub kind: String,
    /// The quick grid or the full one.
    pub quick: bool,
    /// The control's interval must be within this fraction of its mean.
    pub precision: f64,
    /// A weighted cell holds within this fraction of N times the control.
    pub tolerance: f64,
    /// The lab's access jitter, ms, when `--jitter` set it (absent: the
    /// default, `grid::LAB_ACCESS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_jitter_ms: Option<f64>,
    /// How the lab's access jitter varies, when `--jitter-shape` set it
    /// (absent: the default, `grid::LAB_ACCESS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_jitter_shape: Option<JitterShape>,
    /// Whether the lab's standard peers pace, when `--peer-pacing` set it
    /// (absent: they pace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_pacing: Option<bool>,
    /// Whether every whole N >= 2 also ran as N separate connections
    /// (`--separate`; absent: not).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub separate: bool,
    /// The testbed's QUIC servers' pacing slack, µs, when `--pacing-slack`
    /// set it (absent: `flowshare serve`'s default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic_pacing_slack_us: Option<u32>,
    /// Groups in the whole grid.
    pub grid_groups: usize,
    /// The shard this file holds; absent for a whole grid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The groups, in grid order.
    pub groups: Vec<GroupCard>,
}

impl Scorecard {
    /// `scorecard.json`'s text.
    pub fn to_json(&self) -> Result<String, String> {
        serde_json::to_string_pretty(self).map(|text| text + "\n").map_err(|e| format!("cannot encode scorecard: {e}"))
    }

    /// Reads `scorecard.json`'s text.
    pub fn from_json(text: &str) -> Result<Scorecard, String> {
        serde_json::from_str(text).map_err(|e| format!("not a scorecard: {e}"))
    }

    /// Combines the shards of one grid into the scorecard of the whole grid:
    /// every shard of the same grid exactly once. A whole grid alone comes
    /// back as it is (so that its files can be written again).
    pub fn merge(mut shards: Vec<Scorecard>) -> Result<Scorecard, String> {
        let first = shards.first().ok_or("no scorecard to merge")?.clone();
        if shards.len() == 1 && first.shard.is_none() {
            return Ok(first);
        }
        let count = first.shard.map_or(1, |shard| shard.count);
        shards.sort_by_key(|card| card.shard.map_or(0, |shard| shard.index));
        let indexes: Vec<Option<usize>> = shards.iter().map(|card| card.shard.map(|shard| shard.index)).collect();
        if indexes != (0..count).map(Some).collect::<Vec<_>>() {
            return Err(format!("expected shards 1 to {count} of one grid once each, got {indexes:?} (0-based)"));
        }
        let same = |card: &Scorecard| {
            (card.kind == first.kind
                && card.quick == first.quick
                && card.precision == first.precision
                && card.tolerance == first.tolerance
                && card.access_jitter_ms == first.access_jitter_ms
                && card.access_jitter_shape == first.access_jitter_shape
                && card.peer_pacing == first.peer_pacing
                && card.separate == first.separate
                && card.quic_pacing_slack_us == first.quic_pacing_slack_us
                && card.grid_groups == first.grid_groups
                && card.shard.map(|shard| shard.count) == Some(count))
            .then_some(())
            .ok_or_else(|| "the scorecards are shards of different grids".to_string())
        };
        shards.iter().try_for_each(same)?;
        let mut groups: Vec<GroupCard> = shards.into_iter().flat_map(|card| card.groups).collect();
        groups.sort_by_key(|group| group.index);
        if groups.iter().map(|group| group.index).ne(0..first.grid_groups) {
            return Err(format!("the shards hold {} groups, not the grid's {}", groups.len(), first.grid_groups));
        }
        Ok(Scorecard { shard: None, groups, ..first })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_use_students_t() {
        // 1, 2, 3: mean 2, sd 1, t(2) = 4.303: 4.303 / sqrt 3 = 2.4843.
        let estimate = Estimate::of(&[1.0, 2.0, 3.0]);
        assert_eq!(estimate.mean, 2.0);
        assert!((estimate.ci95 - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        assert!(Estimate::of(&[1.0]).ci95.is_infinite());
        assert!(estimate.relative_to(&estimate).ci95 > estimate.ci95 / estimate.mean);
    }

    /// A run of one weighted connection (weight 2) and two standard flows,
    /// 400 packets each, through one link that dropped `link_drops` of the
    /// 1,000 packets offered to it.
    fn run(weighted_lost: u64, standard_lost: [u64; 2], link_drops: u64) -> RunResult {
        use crate::result::{ConnectionResult, LinkResult, LinkStats, SenderStats};
        let connection = |role, weight, throughput_bps, packets_lost| ConnectionResult {
            label: String::new(),
            cc: String::new(),
            weight,
            role,
            bins: Vec::new(),
            throughput_bps,
            stats: SenderStats { packets_sent: 400, packets_lost, ..SenderStats::default() },
            completions: Vec::new(),
            controller: None,
        };
        RunResult {
            name: "run".into(),
            seed: 1,
            measured_seconds: 10.0,
            warmup_seconds: 1.0,
            bin_seconds: 0.1,
            connections: vec![
                connection(Role::Weighted, 2.0, 8e6, weighted_lost),
                connection(Role::Standard, 1.0, 5e6, standard_lost[0]),
                connection(Role::Standard, 1.0, 3e6, standard_lost[1]),
            ],
            links: vec![LinkResult {
                name: "bottleneck".into(),
                rate_bps: 16e6,
                stats: LinkStats { arrivals: 1000, drops: link_drops, ..LinkStats::default() },
                utilization: 1.0,
            }],
            packets_sent: 1200,
            events: 0,
        }
    }

    #[test]
    fn a_sample_puts_each_roles_packet_loss_over_the_bottlenecks_drop_rate() {
        // The weighted connection loses 8 of 400 packets (2 %), the standard
        // flows 4 and 20 of 400 (1 % and 5 %, 3 % on average), the link 3 %.
        let sample = Sample::of(&run(8, [4, 20], 30), true).expect("both roles have throughput");
        assert!((sample.fairness_index - 1.0).abs() < 1e-12, "4 Mbit/s a flowshare against 4 on average");
        assert!((sample.weighted_loss_over_drop_rate - 2.0 / 3.0).abs() < 1e-12);
        assert!((sample.standard_loss_over_drop_rate - 1.0).abs() < 1e-12);
        let lossless = Sample::of(&run(0, [0, 0], 0), true).expect("both roles have throughput");
        assert!(lossless.weighted_loss_over_drop_rate.is_nan() && lossless.standard_loss_over_drop_rate.is_nan());
    }

    #[test]
    fn verdicts_need_a_precise_control() {
        let sample = |fi| Sample {
            fairness_index: fi,
            weighted_loss_event_rate: 0.0,
            standard_loss_event_rate: 0.0,
            weighted_loss_over_drop_rate: 1.0,
            standard_loss_over_drop_rate: 1.0,
            utilization: 1.0,
            trusted: true,
        };
        let control = CellCard::new(1.0, &[sample(0.8), sample(0.8), sample(0.8)], None, 0.05, 0.1);
        assert_eq!(control.verdict, Verdict::Control);
        let holds = CellCard::new(4.0, &[sample(0.85), sample(0.85)], Some(&control), 0.05, 0.1);
        assert_eq!(holds.verdict, Verdict::Holds);
        let misses = CellCard::new(4.0, &[sample(1.0), sample(1.0)], Some(&control), 0.05, 0.1);
        assert_eq!(misses.verdict, Verdict::Misses);
        assert!((misses.relative.mean - 1.25).abs() < 1e-12);
        let noisy = CellCard::new(1.0, &[sample(0.5), sample(1.5)], None, 0.05, 0.1);
        assert_eq!(
            CellCard::new(4.0, &[sample(1.0), sample(1.0)], Some(&noisy), 0.05, 0.1).verdict,
            Verdict::Imprecise
        );
        let wide = CellCard::new(4.0, &[sample(0.5), sample(1.5)], Some(&control), 0.05, 0.1);
        assert_eq!(wide.verdict, Verdict::Imprecise);
    }

    #[test]
    fn a_scorecard_reads_back_to_the_same_bytes() {
        // Floats that a parser without exact round trips reads one ulp off.
        let sample = |fi| Sample {
            fairness_index: fi,
            weighted_loss_event_rate: 0.1 + 0.2,
            standard_loss_event_rate: 1.0 / 3.0,
            weighted_loss_over_drop_rate: 0.1 + 0.7,
            standard_loss_over_drop_rate: f64::NAN,
            utilization: 0.9972782499999999,
            trusted: true,
        };
        let samples = [sample(1.2786634769161633), sample(0.9796212447004203), sample(1e-300)];
        let control = CellCard::new(1.0, &samples, None, 0.05, 0.1);
        let reference = CellCard::separate_reference(2.0, &samples[1..], &control);
        let weighted = CellCard::new(2.0, &samples[..2], Some(&control), 0.05, 0.1);
        let card = Scorecard {
            kind: "lab".into(),
            quick: true,
            precision: 0.05,
            tolerance: 0.1,
            access_jitter_ms: Some(3.0),
            access_jitter_shape: Some(JitterShape::PerPacket),
            peer_pacing: Some(false),
            separate: true,
            quic_pacing_slack_us: None,
            grid_groups: 1,
            shard: Some(Shard { index: 0, count: 1 }),
            groups: vec![GroupCard {
                index: 0,
                controller: "pa-multcp".into(),
                peer: "cubic".into(),
                path: "p".into(),
                rate_mbps: 20.0,
                rtt_ms: 40.0,
                queue: "q".into(),
                cells: vec![weighted.judged_against_separate(&reference, 0.05, 0.1)],
                separate: vec![reference],
                control,
            }],
        };
        let text = card.to_json().unwrap();
        assert_eq!(Scorecard::from_json(&text).unwrap().to_json().unwrap(), text);
    }

    #[test]
    fn shards_merge_into_the_whole_grid_once_each() {
        let card = |shard: Option<Shard>, indexes: &[usize]| Scorecard {
            kind: "lab".into(),
            quick: true,
            precision: 0.05,
            tolerance: 0.1,
            access_jitter_ms: None,
            access_jitter_shape: None,
            peer_pacing: None,
            separate: false,
            quic_pacing_slack_us: None,
            grid_groups: 3,
            shard,
            groups: indexes
                .iter()
                .map(|&index| GroupCard {
                    index,
                    controller: "multcp".into(),
                    peer: "reno".into(),
                    path: "p".into(),
                    rate_mbps: 1.0,
                    rtt_ms: 1.0,
                    queue: "q".into(),
                    control: CellCard::new(1.0, &[], None, 0.05, 0.1),
                    cells: Vec::new(),
                    separate: Vec::new(),
                })
                .collect(),
        };
        let whole = card(None, &[0, 1, 2]);
        let a = card(Some(Shard::parse("1/2").unwrap()), &[0, 2]);
        let b = card(Some(Shard::parse("2/2").unwrap()), &[1]);
        let merged = Scorecard::merge(vec![b.clone(), a.clone()]).unwrap();
        assert_eq!(merged.to_json().unwrap(), whole.to_json().unwrap());
        assert!(Scorecard::merge(vec![a.clone()]).unwrap_err().contains("once each"));
        assert_eq!(Scorecard::merge(vec![whole.clone()]).unwrap(), whole);
        assert!(Scorecard::merge(vec![whole.clone(), whole.clone()]).is_err());
        assert!(Scorecard::merge(vec![a.clone(), b.clone(), b.clone()]).is_err());
        let jittered = Scorecard { access_jitter_ms: Some(3.0), ..b.clone() };
        assert_eq!(
            Scorecard::merge(vec![a.clone(), jittered]).unwrap_err(),
            "the scorecards are shards of different grids"
        );
        let clumped = Scorecard { access_jitter_shape: Some(JitterShape::PerPacket), ..b.clone() };
        assert_eq!(
            Scorecard::merge(vec![a.clone(), clumped]).unwrap_err(),
            "the scorecards are shards of different grids"
        );
        let with_separate = Scorecard { separate: true, ..b.clone() };
        assert_eq!(
            Scorecard::merge(vec![a.clone(), with_separate]).unwrap_err(),
            "the scorecards are shards of different grids"
        );
        let slack = Scorecard { quic_pacing_slack_us: Some(10), ..b.clone() };
        assert_eq!(
            Scorecard::merge(vec![a.clone(), slack]).unwrap_err(),
            "the scorecards are shards of different grids"
        );
        let unpaced = Scorecard { peer_pacing: Some(false), ..b };
        assert_eq!(Scorecard::merge(vec![a, unpaced]).unwrap_err(), "the scorecards are shards of different grids");
        assert!(Shard::parse("0/2").is_err() && Shard::parse("3/2").is_err() && Shard::parse("x").is_err());
        assert!(Shard { index: 1, count: 2 }.owns(3));
    }
}
