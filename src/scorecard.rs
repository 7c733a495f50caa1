//! `flowshare scorecard`: does a weight of N give N flowshares, in the lab
//! and in the testbed, and `merge` for grids run in shards.

use std::path::PathBuf;

use flowshare_lab::scorecard;
use flowshare_lab::scorecard::GridArgs;
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
    Lab(scorecard::LabArgs),
    /// The testbed's grid (as root): PA-MulTCP and MulTFRC at N = 0.5..8
    /// against Linux TCP and quiche CUBIC and Reno through ns-3.
    Testbed(TestbedArgs),
    /// Combines the scorecards of a grid's shards into the whole grid's.
    Merge(scorecard::MergeArgs),
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
    /// Keep the runs an earlier invocation finished in --out (the same
    /// scenario and seed) and run only the rest: an interrupted campaign
    /// goes on where it stopped, a larger --seeds adds runs to a finished
    /// one. The kept runs are taken as they are: after a rebuild that
    /// changes the endpoints, or on another machine, start afresh in
    /// another --out.
    #[arg(long)]
    resume: bool,
    /// Runs at the same time, each with namespaces and an ns-3 of its own.
    /// One run of the grid's paths takes about 0.4 of a core; at 2 on two
    /// cores ns-3's wait for a CPU rises from about 12 to 18 µs per wake-up
    /// and real time holds (testbed/README.md). The load gate sees the
    /// campaign's own runs too (about 1 each): raise --max-load by
    /// jobs - 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=16))]
    jobs: u64,
    /// Every QUIC server's `flowshare serve --pacing-slack` (to the
    /// microsecond; at most 1ms; default: serve's). Below serve's 100us
    /// default the pairs of `pa-multcp:pacing=split` at N >= 2 leave apart
    /// instead of back to back (testbed/README.md, "Pairs closer than the
    /// slack"). Recorded in scorecard.json; shards must agree.
    #[arg(long, value_parser = pacing_slack_us)]
    pacing_slack: Option<u32>,
}

/// `--pacing-slack` in whole microseconds, as the testbed's scenarios take
/// it: serve's parser, so at most 1ms, which a `u32` holds. Rounded, since
/// a parsed `10us` may come out a nanosecond short.
fn pacing_slack_us(text: &str) -> Result<u32, String> {
    crate::h3::pacing_slack(text).map(|slack| (slack.as_secs_f64() * 1e6).round() as u32)
}

/// Runs `flowshare scorecard ...`.
pub fn run(args: ScorecardArgs) -> Result<(), String> {
    let printed = match args.command {
        ScorecardCommand::Lab(args) => scorecard::lab_command(&args)?,
        ScorecardCommand::Testbed(args) => {
            let options = args.grid.options.options()?;
            let campaign = args.grid.apply(flowshare_testbed::scorecard::campaign(&options, args.grid.shard()?)?)?;
            let campaign =
                flowshare_lab::scorecard::campaign::Campaign { quic_pacing_slack_us: args.pacing_slack, ..campaign };
            let execution = flowshare_testbed::scorecard::Execution { resume: args.resume, jobs: args.jobs as usize };
            let card = flowshare_testbed::scorecard::run_checked(&campaign, &args.machine, &args.out, execution)?;
            scorecard::finish(&card, &args.out)?
        }
        ScorecardCommand::Merge(args) => scorecard::merge_command(&args)?,
    };
    print!("{printed}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scorecards_pacing_slack_is_serves_in_whole_microseconds() {
        assert_eq!(pacing_slack_us("10us"), Ok(10));
        assert_eq!(pacing_slack_us("0.5ms"), Ok(500));
        assert_eq!(pacing_slack_us("0"), Ok(0));
        assert_eq!(pacing_slack_us("2ms"), Err("2ms: the pacing slack is at most 1000us".to_string()));
        assert!(pacing_slack_us("soon").is_err());
    }
}
