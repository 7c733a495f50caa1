//! The scorecard: does a weight of N give N flowshares?
//!
//! `flowshare scorecard lab|testbed [--quick] [--shard I/K] --out DIR` runs
//! a grid of cells: every weighted controller at several weights N against
//! each kind of standard peer, on several paths and queues, each cell over
//! seeds until its 95 % interval is narrow enough ([`campaign`]), next to a
//! weight-one control of the same stacks ([`grid`]). It writes
//! `scorecard.json` ([`card`]), the table, the headline and plots
//! ([`report`]). Shards of a grid run on separate machines (a Slurm job
//! array, a Kubernetes indexed Job) and `flowshare scorecard merge` combines
//! their files into the one a single run would have written, byte for byte.
//!
//! This module holds the lab's grids and runs them on the lab's simulator;
//! the testbed runs its own grids through the same campaign and report.

pub mod campaign;
pub mod card;
pub mod grid;
pub mod report;

use std::path::Path as FilePath;
use std::path::PathBuf;

use crate::options::standard_algorithms;
use crate::options::weighted_algorithms;
use crate::options::OptionArgs;
use crate::options::Options;
use crate::report::write_file;
use crate::scenario::FlowConfig;
use crate::scenario::Scenario;
use crate::scenario::LAB_START_SPREAD_S;
use crate::scorecard::campaign::Campaign;
use crate::scorecard::campaign::Job;
use crate::scorecard::campaign::Seeds;
use crate::scorecard::campaign::SEED_LIMIT;
use crate::scorecard::card::Sample;
use crate::scorecard::card::Scorecard;
use crate::scorecard::card::Shard;
use crate::scorecard::grid::Flows;
use crate::scorecard::grid::Path;
use crate::sweep;

/// A control's 95 % interval must be within this fraction of its mean for
/// its group's cells to be judged.
pub const PRECISION: f64 = 0.05;

/// A weighted cell holds its weight within this fraction of N times the
/// control's share.
pub const TOLERANCE: f64 = 0.10;

/// The lab's weights: the testbed's and paper 000's large ones.
const LAB_WEIGHTS: [f64; 6] = [0.5, 2.0, 4.0, 8.0, 16.0, 30.0];

/// The lab's paths: paper 000's scale (200 flowshares on 200 and
/// 400 Mbit/s, 100 ms) and small ones (a handful of flows), with run
/// lengths that make a few seeds enough.
fn lab_paths() -> Vec<Path> {
    let path = |name: &str, rate_mbps, rtt_ms, flows, duration_s| Path {
        name: name.into(),
        rate_mbps,
        rtt_ms,
        flows,
        duration_s,
    };
    vec![
        path("paper-200", 200.0, 100.0, Flows::Total(200), 200.0),
        path("paper-400", 400.0, 100.0, Flows::Total(200), 200.0),
        path("small-20", 20.0, 40.0, Flows::Standard(4), 400.0),
        path("small-10", 10.0, 80.0, Flows::Standard(3), 400.0),
    ]
}

/// The lab's campaign: the full grid, or the quick one (one small path,
/// drop-tail, three weights), narrowed by `options`.
pub fn lab_campaign(options: &Options, shard: Option<Shard>) -> Result<Campaign, String> {
    // The lab's paths fix their flows (no `--m`); `--peer-pacing` says
    // whether its peers pace.
    grid::refuse_unused(options, "the lab's scorecard", &["peer-pacing"])?;
    let quick = options.quick;
    let controllers = options.controllers.clone().unwrap_or_else(weighted_algorithms);
    let peers = options.peers.clone().unwrap_or_else(standard_algorithms);
    let weights = options.n.clone().unwrap_or_else(|| if quick { vec![0.5, 2.0, 8.0] } else { LAB_WEIGHTS.to_vec() });
    let mut paths = lab_paths();
    if quick {
        paths.retain(|path| path.name == "small-20");
    }
    if let Some(duration_s) = options.duration_s {
        paths.iter_mut().for_each(|path| path.duration_s = duration_s);
    }
    grid::check_controllers(&controllers)?;
    let groups = grid::narrowed_groups(&controllers, &peers, paths, &weights, options)?;
    let seeds = match options.seeds {
        Some(seeds) => Seeds { min: seeds, max: seeds, step: 1 },
        None => Seeds { min: 4, max: SEED_LIMIT, step: 4 },
    };
    Ok(Campaign {
        kind: "lab",
        quick,
        groups,
        shard,
        seed: options.seed,
        seeds,
        precision: PRECISION,
        tolerance: TOLERANCE,
        access_jitter_ms: options.access_jitter_ms,
        access_jitter_shape: options.jitter_shape,
        peer_pacing: options.peer_pacing,
        separate: false,
        quic_pacing_slack_us: None,
    })
}

/// The lab's scenario of `job`: every flow with the lab's access delay and
/// the campaign's jitter, the peers paced as the campaign says.
fn lab_scenario(campaign: &Campaign, job: &Job) -> Result<Scenario, String> {
    let access = grid::Access {
        jitter_ms: campaign.access_jitter_ms.unwrap_or(grid::LAB_ACCESS.jitter_ms),
        jitter_shape: campaign.access_jitter_shape.unwrap_or(grid::LAB_ACCESS.jitter_shape),
        ..grid::LAB_ACCESS
    };
    let group = &campaign.groups[job.group];
    group.scenario(job.cell, LAB_START_SPREAD_S, access, &|count| {
        // Unset, the peers pace as the scenario does.
        Ok(FlowConfig { pacing: campaign.peer_pacing, ..grid::lab_peers(&group.peer, count, access) })
    })
}

/// Runs the lab's campaign on all cores.
pub fn run_lab(campaign: &Campaign, threads: usize) -> Result<Scorecard, String> {
    let mut execute = |jobs: &[Job], round: usize| {
        let mut runs = Vec::with_capacity(jobs.len());
        for job in jobs {
            let group = &campaign.groups[job.group];
            let setup = lab_scenario(campaign, job)?.resolve().map_err(|e| format!("{}: {e}", group.key()))?;
            runs.push(sweep::Job { setup, seed: job.seed });
        }
        let label = format!("scorecard round {round}");
        Ok(sweep::run(&label, runs, threads, |_, run| Sample::of(&run, true)))
    };
    campaign.run(&mut execute)
}

/// Writes `scorecard.json`, `scorecard.txt` (every cell), `headline.txt`,
/// the plots (a shard's of its own groups, so that a partial campaign can
/// be looked at before the merge) and, for a whole grid, `scorecard.md`
/// into `dir`; returns the headline.
pub fn write(card: &Scorecard, dir: &FilePath) -> Result<String, String> {
    write_file(dir, "scorecard.json", &card.to_json()?)?;
    write_file(dir, "scorecard.txt", &report::table(card))?;
    let headline = report::headline(card);
    write_file(dir, "headline.txt", &headline)?;
    report::plots(card, dir)?;
    if card.shard.is_none() {
        write_file(dir, "scorecard.md", &report::markdown(card))?;
    }
    Ok(headline)
}

/// What a scorecard grid takes on the command line, the lab's and the
/// testbed's alike.
#[derive(clap::Args, Debug)]
pub struct GridArgs {
    /// The options of the grid: --quick, --controllers, --n, --peers, ...
    #[command(flatten)]
    pub options: OptionArgs,
    /// Run only part I of K of the grid (1 <= I <= K), e.g. as a job array
    /// task; `flowshare scorecard merge` combines the parts.
    #[arg(long)]
    pub shard: Option<String>,
    /// Also run, beside every whole N >= 2, N separate connections of the
    /// controller at weight one against the same peers, and judge the
    /// weighted connection against what each of them gets too: the
    /// reference where one connection's share depends on how many of its
    /// kind share the path (QUIC against Linux TCP, testbed/README.md)
    #[arg(long)]
    pub separate: bool,
    /// The most seeds a cell may take while its 95 % interval is still
    /// wider than ±5 % (default: 16 in a full grid; a quick grid's and
    /// `--seeds` run exactly their count). With `--resume` in the testbed,
    /// a finished campaign given a higher limit runs only the seeds its
    /// imprecise cells add.
    #[arg(long)]
    pub max_seeds: Option<usize>,
}

impl GridArgs {
    /// The shard asked for, if any.
    pub fn shard(&self) -> Result<Option<Shard>, String> {
        self.shard.as_deref().map(Shard::parse).transpose()
    }

    /// `campaign` with the grid's own flags applied: `--separate` and
    /// `--max-seeds`.
    pub fn apply(&self, campaign: Campaign) -> Result<Campaign, String> {
        let mut weights = campaign.groups.iter().flat_map(|group| &group.weights);
        if self.separate && !weights.any(|&n| grid::has_separate_reference(n)) {
            return Err("--separate needs a whole N of 2 or more among the weights (--n)".into());
        }
        let seeds = match self.max_seeds {
            None => campaign.seeds,
            Some(max) if max < campaign.seeds.min => {
                return Err(format!(
                    "--max-seeds {max} is below the {} seeds every cell starts with",
                    campaign.seeds.min
                ));
            }
            Some(max) => Seeds { max, ..campaign.seeds },
        };
        Ok(Campaign { separate: self.separate, seeds, ..campaign })
    }
}

/// `flowshare scorecard lab`.
#[derive(clap::Args, Debug)]
pub struct LabArgs {
    #[command(flatten)]
    grid: GridArgs,
    /// Simulations run in parallel (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Output directory.
    #[arg(long, default_value = "scorecard-lab")]
    out: PathBuf,
}

/// `flowshare scorecard merge`.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// The shards' output directories (or their scorecard.json files).
    #[arg(required = true)]
    shards: Vec<PathBuf>,
    /// Output directory.
    #[arg(long, default_value = "scorecard")]
    out: PathBuf,
}

/// Runs `flowshare scorecard lab`; returns what to print.
pub fn lab_command(args: &LabArgs) -> Result<String, String> {
    let options = args.grid.options.options()?;
    let campaign = args.grid.apply(lab_campaign(&options, args.grid.shard()?)?)?;
    if args.jobs == Some(0) {
        return Err("--jobs 0 is out of range; accepted range [1, ...)".into());
    }
    let card = run_lab(&campaign, args.jobs.unwrap_or_else(sweep::default_threads))?;
    finish(&card, &args.out)
}

/// Runs `flowshare scorecard merge`; returns what to print.
pub fn merge_command(args: &MergeArgs) -> Result<String, String> {
    let read = |path: &PathBuf| {
        let file = if path.is_dir() { path.join("scorecard.json") } else { path.clone() };
        let text = std::fs::read_to_string(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        Scorecard::from_json(&text).map_err(|e| format!("{}: {e}", file.display()))
    };
    let shards = args.shards.iter().map(read).collect::<Result<Vec<_>, _>>()?;
    finish(&Scorecard::merge(shards)?, &args.out)
}

/// Writes the scorecard's files; returns the headline and where it went.
pub fn finish(card: &Scorecard, out: &FilePath) -> Result<String, String> {
    let headline = write(card, out)?;
    Ok(format!("{headline}wrote {}\n", out.join("scorecard.json").display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorecard::grid::Cell;

    fn jitters(options: &Options) -> Vec<f64> {
        let campaign = lab_campaign(options, None).unwrap();
        let job = Job { group: 0, cell: Cell::Weight(8.0), seed: 1 };
        lab_scenario(&campaign, &job).unwrap().flows.iter().map(|flow| flow.jitter_ms).collect()
    }

    #[test]
    fn max_seeds_raises_the_limit_and_refuses_one_below_the_start() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            grid: GridArgs,
        }
        let grid = |args: &[&str]| {
            let cli: Cli = clap::Parser::try_parse_from([&["scorecard", "--quick"][..], args].concat())
                .map_err(|e| e.to_string())?;
            cli.grid.apply(lab_campaign(&cli.grid.options.options()?, None)?)
        };
        assert_eq!(grid(&[]).unwrap().seeds, Seeds { min: 4, max: 16, step: 4 });
        assert_eq!(grid(&["--max-seeds", "40"]).unwrap().seeds, Seeds { min: 4, max: 40, step: 4 });
        assert_eq!(
            grid(&["--max-seeds", "3"]).unwrap_err(),
            "--max-seeds 3 is below the 4 seeds every cell starts with"
        );
    }

    #[test]
    fn the_grid_refuses_what_it_would_ignore() {
        let quick = Options { quick: true, ..Options::default() };
        let refused = |options: Options| lab_campaign(&options, None).map(|_| ()).unwrap_err();
        assert_eq!(
            refused(Options { warmup_s: Some(100.0), standard_flows: Some(2), ..quick.clone() }),
            "the lab's scorecard does not use --m, --warmup: leave them out"
        );
        assert_eq!(
            refused(Options { rtt_ms: Some(80.0), ..quick.clone() }),
            "the options leave no cell of the grid to run"
        );
        let small_10 = lab_campaign(&Options { rtt_ms: Some(80.0), ..Options::default() }, None).unwrap();
        assert!(small_10.groups.iter().all(|group| group.path.name == "small-10"));
        assert_eq!(
            refused(Options { controllers: Some(vec!["multcp:n=3".into()]), ..quick.clone() }),
            "--controllers multcp:n=3: the grid sets n from --n; give the spec without it"
        );
        assert_eq!(
            refused(Options { controllers: Some(vec!["cubic".into()]), ..quick.clone() }),
            "--controllers cubic: not a weighted controller"
        );
        let keyed = Options { controllers: Some(vec!["multcp:pacing=off".into()]), ..quick };
        assert!(lab_campaign(&keyed, None).is_ok());
    }

    #[test]
    fn the_jitter_reaches_the_weighted_connection_and_its_peers() {
        let quick = Options { quick: true, ..Options::default() };
        assert_eq!(jitters(&quick), [grid::LAB_ACCESS.jitter_ms; 2]);
        let jittered = Options { access_jitter_ms: Some(3.0), ..quick };
        assert_eq!(jitters(&jittered), [3.0; 2]);
        assert_eq!(lab_campaign(&jittered, None).unwrap().access_jitter_ms, Some(3.0));
    }

    #[test]
    fn unpaced_peers_leave_the_weighted_connection_as_its_spec_says() {
        let pacing = |options: &Options| -> Vec<Option<bool>> {
            let campaign = lab_campaign(options, None).unwrap();
            let job = Job { group: 0, cell: Cell::Weight(8.0), seed: 1 };
            lab_scenario(&campaign, &job).unwrap().flows.iter().map(|flow| flow.pacing).collect()
        };
        let quick = Options { quick: true, ..Options::default() };
        assert_eq!(pacing(&quick), [None, None]);
        let unpaced = Options { peer_pacing: Some(false), ..quick };
        assert_eq!(pacing(&unpaced), [None, Some(false)]);
        assert_eq!(lab_campaign(&unpaced, None).unwrap().peer_pacing, Some(false));
    }
}
