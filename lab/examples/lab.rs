//! `flowshare lab` and `flowshare scorecard lab|merge` on their own, for
//! machines that cannot build the rest of the `flowshare` command (which
//! needs quiche), such as the nodes of a cluster that runs the scorecard's
//! shards:
//!
//! ```text
//! cargo run --release -p flowshare-lab --example lab -- fairness --quick --out DIR
//! cargo run --release -p flowshare-lab --example lab -- scorecard lab --shard 3/8 --out DIR
//! cargo run --release -p flowshare-lab --example lab -- scorecard merge DIR1 DIR2 ... --out DIR
//! ```

use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
#[command(name = "flowshare lab", about = "Deterministic simulations of the papers' experiments")]
struct Cli {
    #[command(flatten)]
    lab: flowshare_lab::cli::LabArgs,
}

#[derive(Parser)]
#[command(name = "flowshare scorecard", about = "Does a weight of N give N flowshares? The lab's grid")]
enum Scorecard {
    /// Runs the lab's grid (or a shard of it).
    Lab(Box<flowshare_lab::scorecard::LabArgs>),
    /// Combines the scorecards of a grid's shards.
    Merge(flowshare_lab::scorecard::MergeArgs),
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().collect();
    let result = if args.get(1).is_some_and(|command| command == "scorecard") {
        args.remove(1);
        match Scorecard::parse_from(args) {
            Scorecard::Lab(args) => flowshare_lab::scorecard::lab_command(&args),
            Scorecard::Merge(args) => flowshare_lab::scorecard::merge_command(&args),
        }
        .map(|text| print!("{text}"))
    } else {
        flowshare_lab::cli::run(Cli::parse_from(args).lab)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("flowshare: {message}");
            ExitCode::FAILURE
        }
    }
}
