//! Running a scorecard's cells until their intervals are narrow enough.
//!
//! Every cell starts with `min` seeds; a cell whose 95 % interval is still
//! wider than the precision asked for gets `step` more, up to `max`. A
//! cell's seeds are `derive_seed(seed, 0)`, `derive_seed(seed, 1)`, ... in
//! that order whatever else runs, and whether it needs more depends on its
//! own samples only, so a cell comes out the same in a whole grid and in
//! any shard of it: merged shards are byte-identical to one run. The
//! control and the weighted cells of a group use the same seeds (common
//! random numbers), which narrows the interval of their ratio.

use crate::rng::derive_seed;
use crate::scorecard::card::CellCard;
use crate::scorecard::card::Estimate;
use crate::scorecard::card::GroupCard;
use crate::scorecard::card::Sample;
use crate::scorecard::card::Scorecard;
use crate::scorecard::card::Shard;
use crate::scorecard::grid::Cell;
use crate::scorecard::grid::Group;
use crate::setup::JitterShape;

/// The most seeds a cell of a full grid takes, the lab's and the
/// testbed's, unless `--max-seeds` raises it.
pub const SEED_LIMIT: usize = 16;

/// How many seeds a cell runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seeds {
    /// Every cell runs at least this many.
    pub min: usize,
    /// No cell runs more.
    pub max: usize,
    /// Seeds added at a time to a cell that is not precise enough yet.
    pub step: usize,
}

/// A scorecard to run.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// `lab` or `testbed`.
    pub kind: &'static str,
    /// The quick grid.
    pub quick: bool,
    /// The whole grid.
    pub groups: Vec<Group>,
    /// The part of it to run here; `None` for all.
    pub shard: Option<Shard>,
    /// The base seed.
    pub seed: u64,
    /// Seeds per cell.
    pub seeds: Seeds,
    /// A cell is precise when its 95 % interval is within this fraction of
    /// its mean.
    pub precision: f64,
    /// A weighted cell holds within this fraction of N times the control.
    pub tolerance: f64,
    /// The lab's access jitter, ms, when `--jitter` set it.
    pub access_jitter_ms: Option<f64>,
    /// How the lab's access jitter varies, when `--jitter-shape` set it.
    pub access_jitter_shape: Option<JitterShape>,
    /// Whether the lab's standard peers pace, when `--peer-pacing` set it.
    pub peer_pacing: Option<bool>,
    /// Whether every whole N >= 2 also runs as N separate connections at
    /// weight one, the weighted cell judged against them too.
    pub separate: bool,
    /// The testbed's QUIC servers' pacing slack, µs, when `--pacing-slack`
    /// set it (none: `flowshare serve`'s default).
    pub quic_pacing_slack_us: Option<u32>,
}

/// One run to do: the group (its position in [`Campaign::groups`]), the
/// cell and the seed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Job {
    /// Position of the group in the campaign's grid.
    pub group: usize,
    /// The cell.
    pub cell: Cell,
    /// The seed.
    pub seed: u64,
}

/// What running a batch of jobs gives: each job's sample in job order,
/// `None` for a run that measured nothing.
pub type BatchSamples = Result<Vec<Option<Sample>>, String>;

impl Campaign {
    /// The groups this shard runs.
    pub fn own_groups(&self) -> impl Iterator<Item = (usize, &Group)> {
        self.groups.iter().enumerate().filter(|(_, group)| self.shard.is_none_or(|shard| shard.owns(group.index)))
    }

    /// Runs the campaign: `execute` runs a batch of jobs (in any order or in
    /// parallel) and gives each job's sample in job order, `None` for a run
    /// that measured nothing.
    ///
    /// A round's jobs go seed by seed across the cells (every cell's first
    /// seed of the round, then every cell's second), so that a host that
    /// runs them in job order measures a control and its cells side by side
    /// through the round. The testbed is not steady over an hour: on
    /// 2026-12-07 one machine's paced control against Linux CUBIC took
    /// 4.27-4.79 Mbit/s over its first 40 minutes and 4.66-5.19 an hour
    /// later on the same seeds, while the N = 2 cell beside it stayed at
    /// 7.6-8.6; run cell after cell, such a drift falls between a control and
    /// its cells and biases their ratio, where interleaved it only widens
    /// both intervals. The lab is deterministic and gets the same samples
    /// in either order.
    pub fn run(&self, execute: &mut dyn FnMut(&[Job], usize) -> BatchSamples) -> Result<Scorecard, String> {
        let cells: Vec<(usize, Cell)> = self
            .own_groups()
            .flat_map(|(position, group)| group.cells(self.separate).into_iter().map(move |c| (position, c)))
            .collect();
        let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); cells.len()];
        let mut tried = vec![0usize; cells.len()];
        for round in 1.. {
            let wanted: Vec<usize> = (0..cells.len()).map(|index| self.wanted(tried[index], &samples[index])).collect();
            let mut jobs = Vec::new();
            let mut owners = Vec::new();
            for offset in 0..wanted.iter().copied().max().unwrap_or(0) {
                for (index, &(group, cell)) in cells.iter().enumerate().filter(|&(index, _)| offset < wanted[index]) {
                    jobs.push(Job { group, cell, seed: derive_seed(self.seed, (tried[index] + offset) as u64) });
                    owners.push(index);
                }
            }
            tried.iter_mut().zip(&wanted).for_each(|(tried, wanted)| *tried += wanted);
            if jobs.is_empty() {
                break;
            }
            let results = execute(&jobs, round)?;
            for (owner, sample) in owners.into_iter().zip(results) {
                samples[owner].extend(sample);
            }
        }
        Ok(self.card(&cells, &samples))
    }

    /// How many more seeds a cell needs after `tried` with `samples`.
    fn wanted(&self, tried: usize, samples: &[Sample]) -> usize {
        let Seeds { min, max, step } = self.seeds;
        if tried < min {
            return min - tried;
        }
        let values: Vec<f64> = samples.iter().map(|s| s.fairness_index).collect();
        if tried >= max || Estimate::of(&values).within(self.precision) {
            0
        } else {
            step.min(max - tried)
        }
    }

    fn card(&self, cells: &[(usize, Cell)], samples: &[Vec<Sample>]) -> Scorecard {
        let mut groups = Vec::new();
        for (position, group) in self.own_groups() {
            let of = |wanted: Cell| {
                cells.iter().position(|&(g, cell)| g == position && cell == wanted).map_or(&[][..], |i| &samples[i][..])
            };
            let control = CellCard::new(1.0, of(Cell::Control), None, self.precision, self.tolerance);
            let separate: Vec<CellCard> = group
                .separate_weights(self.separate)
                .map(|n| CellCard::separate_reference(n, of(Cell::Separate(n)), &control))
                .collect();
            let cells = group
                .weights
                .iter()
                .map(|&n| {
                    let cell = CellCard::new(n, of(Cell::Weight(n)), Some(&control), self.precision, self.tolerance);
                    match separate.iter().find(|reference| reference.n == n) {
                        Some(reference) => cell.judged_against_separate(reference, self.precision, self.tolerance),
                        None => cell,
                    }
                })
                .collect();
            groups.push(GroupCard {
                index: group.index,
                controller: group.controller.clone(),
                peer: group.peer.clone(),
                path: group.path.name.clone(),
                rate_mbps: group.path.rate_mbps,
                rtt_ms: group.path.rtt_ms,
                queue: group.queue.name.to_string(),
                control,
                cells,
                separate,
            });
        }
        Scorecard {
            kind: self.kind.to_string(),
            quick: self.quick,
            precision: self.precision,
            tolerance: self.tolerance,
            access_jitter_ms: self.access_jitter_ms,
            access_jitter_shape: self.access_jitter_shape,
            peer_pacing: self.peer_pacing,
            separate: self.separate,
            quic_pacing_slack_us: self.quic_pacing_slack_us,
            grid_groups: self.groups.len(),
            shard: self.shard,
            groups,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorecard::card::Verdict;
    use crate::scorecard::grid::groups;
    use crate::scorecard::grid::Flows;
    use crate::scorecard::grid::Path;
    use crate::scorecard::grid::QUEUES;

    fn campaign(shard: Option<Shard>) -> Campaign {
        let path = Path { name: "p".into(), rate_mbps: 20.0, rtt_ms: 40.0, flows: Flows::Standard(4), duration_s: 1.0 };
        Campaign {
            kind: "lab",
            quick: true,
            groups: groups(&["multcp".into(), "multfrc".into()], &["reno".into()], &[path], &QUEUES, &[2.0]),
            shard,
            seed: 1,
            seeds: Seeds { min: 2, max: 6, step: 2 },
            precision: 0.05,
            tolerance: 0.1,
            access_jitter_ms: None,
            access_jitter_shape: None,
            peer_pacing: None,
            separate: false,
            quic_pacing_slack_us: None,
        }
    }

    /// A fake run: the fairness index is 0.9, plus noise of up to 1 that the
    /// seed sets for group 1's control, so that only that cell stays
    /// imprecise.
    fn fake(jobs: &[Job], _round: usize) -> Result<Vec<Option<Sample>>, String> {
        Ok(jobs
            .iter()
            .map(|job| {
                let noise =
                    if job.group == 1 && job.cell == Cell::Control { (job.seed % 1000) as f64 / 1000.0 } else { 0.0 };
                Some(Sample {
                    fairness_index: 0.9 + noise,
                    weighted_loss_event_rate: 0.01,
                    standard_loss_event_rate: 0.01,
                    weighted_loss_over_drop_rate: 0.8,
                    standard_loss_over_drop_rate: 1.05,
                    utilization: 1.0,
                    trusted: true,
                })
            })
            .collect())
    }

    #[test]
    fn imprecise_cells_get_more_seeds_up_to_the_maximum() {
        let card = campaign(None).run(&mut fake).unwrap();
        assert_eq!(card.groups.len(), 6);
        assert_eq!(card.groups[0].control.seeds, 2);
        assert_eq!(card.groups[1].control.seeds, 6);
        assert_eq!(card.groups[1].cells[0].seeds, 2);
    }

    #[test]
    fn a_round_runs_every_cell_s_first_seed_before_any_cell_s_second() {
        let mut first_round = Vec::new();
        campaign(None)
            .run(&mut |jobs: &[Job], round| {
                if round == 1 {
                    first_round = jobs.to_vec();
                }
                fake(jobs, round)
            })
            .unwrap();
        // Every cell starts with two seeds: the first half of the round is
        // each cell's first, the second half each cell's second.
        let cells = first_round.len() / 2;
        assert!(cells > 1 && first_round.len() == 2 * cells);
        let seeds = [derive_seed(campaign(None).seed, 0), derive_seed(campaign(None).seed, 1)];
        assert!(first_round[..cells].iter().all(|job| job.seed == seeds[0]));
        assert!(first_round[cells..].iter().all(|job| job.seed == seeds[1]));
        let cell_of = |job: &Job| (job.group, job.cell);
        assert!(first_round[..cells].iter().map(cell_of).eq(first_round[cells..].iter().map(cell_of)));
    }

    #[test]
    fn separate_connections_stand_beside_whole_weights_and_judge_them_too() {
        // N separate connections get 0.8 of a flowshare each where the
        // control and the weighted connection get 0.9.
        let mut fake_separate = |jobs: &[Job], round| {
            let mut samples = fake(jobs, round)?;
            for (job, sample) in jobs.iter().zip(&mut samples) {
                if let (Cell::Separate(_), Some(sample)) = (job.cell, sample.as_mut()) {
                    sample.fairness_index = 0.8;
                }
            }
            Ok(samples)
        };
        let card = Campaign { separate: true, ..campaign(None) }.run(&mut fake_separate).unwrap();
        let group = &card.groups[0];
        assert_eq!((group.separate.len(), group.separate[0].n), (1, 2.0));
        assert_eq!(group.separate[0].verdict, Verdict::Reference);
        assert_eq!(group.cells[0].verdict, Verdict::Holds);
        let judgement = group.cells[0].separate.expect("judged against the separate connections");
        assert_eq!(judgement.verdict, Verdict::Misses);
        assert!((judgement.relative.mean - 1.125).abs() < 1e-12);
        assert!(card.to_json().unwrap().contains("\"separate\": true"));
        assert!(!campaign(None).run(&mut fake).unwrap().to_json().unwrap().contains("separate"));
    }

    #[test]
    fn shards_run_their_groups_alike_and_merge_into_the_whole_grid() {
        let whole = campaign(None).run(&mut fake).unwrap().to_json().unwrap();
        let shards: Vec<Scorecard> =
            (1..=4).map(|i| campaign(Some(Shard::parse(&format!("{i}/4")).unwrap())).run(&mut fake).unwrap()).collect();
        assert_eq!(Scorecard::merge(shards).unwrap().to_json().unwrap(), whole);
    }

    #[test]
    fn a_shard_draws_its_own_groups_and_leaves_the_grids_table_to_the_merge() {
        let dir = std::env::temp_dir().join(format!("flowshare-scorecard-shard-plots-{}", std::process::id()));
        let shard = campaign(Some(Shard::parse("1/4").unwrap())).run(&mut fake).unwrap();
        crate::scorecard::write(&shard, &dir).unwrap();
        let written = |name: &str| dir.join(name).is_file();
        assert!(written("fi-reno-p-droptail-1bdp.png"), "{:?}", std::fs::read_dir(&dir).unwrap().collect::<Vec<_>>());
        assert!(written("scorecard.json") && !written("scorecard.md"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
