//! `flowshare scorecard`: does a weight of N give N flowshares, in the lab
//! and in the testbed, and `merge` for grids run in shards.

use std::path::PathBuf;

use flowshare_lab::options::OptionArgs;
use flowshare_lab::scorecard;
use flowshare_lab::scorecard::card::Scorecard;
use flowshare_lab::scorecard::card::Shard;
use flowshare_lab::sweep;
use flowshare_testbed::cli::MachineArgs;

/// `flowshare scorecard ...`.
#[derive(clap::Args, Debug)]
pub struct ScorecardArgs {
    #[command(subcommand)]
    command: ScorecardCommand,
}

#[derive(clap::Subcommand, Debug)]
enum ScorecardCommand {
    /// The lab's grid: every weighted controller at N = 0.5..30 against Reno
    /// and CUBIC, at paper 000's scale and on small paths, drop-tail (1 and
    /// 0.5 BDP) and RED, with weight-one controls.
    Lab(LabArgs),
    /// The testbed's grid (as root): PA-MulTCP and MulTFRC at N = 0.5..8
    /// against Linux TCP and quiche CUBIC and Reno through ns-3.
    Testbed(TestbedArgs),
    /// Combines the scorecards of a grid's shards into the whole grid's.
    Merge(MergeArgs),
}

/// What both grids take.
#[derive(clap::Args, Debug)]
struct GridArgs {
    #[command(flatten)]
    options: OptionArgs,
    /// Run only part I of K of the grid (1 <= I <= K), e.g. as a job array
    /// task; `flowshare scorecard merge` combines the parts.
    #[arg(long)]
    shard: Option<String>,
}

#[derive(clap::Args, Debug)]
struct LabArgs {
    #[command(flatten)]
    grid: GridArgs,
    /// Simulations run in parallel (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Output directory.
    #[arg(long, default_value = "scorecard-lab")]
    out: PathBuf,
}

#[derive(clap::Args, Debug)]
struct TestbedArgs {
    #[command(flatten)]
    grid: GridArgs,
    #[command(flatten)]
    machine: MachineArgs,
    /// Output directory.
    #[arg(long, default_value = "scorecard-testbed")]
    out: PathBuf,
}

#[derive(clap::Args, Debug)]
struct MergeArgs {
    /// The shards' output directories (or their scorecard.json files).
    #[arg(required = true)]
    shards: Vec<PathBuf>,
    /// Output directory.
    #[arg(long, default_value = "scorecard")]
    out: PathBuf,
}

/// Runs `flowshare scorecard ...`.
pub fn run(args: ScorecardArgs) -> Result<(), String> {
    let card = match args.command {
        ScorecardCommand::Lab(args) => {
            let options = args.grid.options.options()?;
            let campaign = scorecard::lab_campaign(&options, shard(&args.grid)?)?;
            if args.jobs == Some(0) {
                return Err("--jobs 0 is out of range; accepted range [1, ...)".into());
            }
            let threads = args.jobs.unwrap_or_else(sweep::default_threads);
            let card = scorecard::run_lab(&campaign, threads)?;
            finish(&card, &args.out)?
        }
        ScorecardCommand::Testbed(args) => {
            let options = args.grid.options.options()?;
            let campaign = flowshare_testbed::scorecard::campaign(&options, shard(&args.grid)?)?;
            let card = flowshare_testbed::scorecard::run_checked(&campaign, &args.machine, &args.out)?;
            finish(&card, &args.out)?
        }
        ScorecardCommand::Merge(args) => {
            let shards = args.shards.iter().map(|path| read(path)).collect::<Result<Vec<_>, _>>()?;
            finish(&Scorecard::merge(shards)?, &args.out)?
        }
    };
    print!("{card}");
    Ok(())
}

fn shard(grid: &GridArgs) -> Result<Option<Shard>, String> {
    grid.shard.as_deref().map(Shard::parse).transpose()
}

fn read(path: &PathBuf) -> Result<Scorecard, String> {
    let file = if path.is_dir() { path.join("scorecard.json") } else { path.clone() };
    let text = std::fs::read_to_string(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    Scorecard::from_json(&text).map_err(|e| format!("{}: {e}", file.display()))
}

/// Writes the scorecard's files and returns the headline to print.
fn finish(card: &Scorecard, out: &PathBuf) -> Result<String, String> {
    let headline = scorecard::write(card, out)?;
    Ok(format!("{headline}wrote {}\n", out.join("scorecard.json").display()))
}
