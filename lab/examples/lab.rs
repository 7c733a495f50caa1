//! `flowshare lab` on its own, for machines that cannot build the rest of
//! the `flowshare` command (which needs quiche):
//!
//! ```text
//! cargo run --release -p flowshare-lab --example lab -- fairness --quick --out DIR
//! ```

use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
#[command(name = "flowshare lab", about = "Deterministic simulations of the papers' experiments")]
struct Cli {
    #[command(flatten)]
    lab: flowshare_lab::cli::LabArgs,
}

fn main() -> ExitCode {
    match flowshare_lab::cli::run(Cli::parse().lab) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("flowshare lab: {message}");
            ExitCode::FAILURE
        }
    }
}
