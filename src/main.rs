//! `flowshare`: weighted and aggregate congestion control for QUIC.
//!
//! One command with a subcommand per job; each lives in its own module or
//! crate and this file only dispatches.

use std::process::ExitCode;

use clap::Parser;
use clap::Subcommand;

mod bench;
mod demo;
mod eq;
mod h3;
mod scorecard;
mod units;

#[derive(Parser)]
#[command(name = "flowshare", version, about = "Weighted and aggregate congestion control for QUIC")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Transfer data between a quiche client and server on loopback with a
    /// chosen controller, printing its window and rate as it goes.
    Demo(demo::DemoArgs),
    /// Benchmarks that need the whole stack (controller costs are criterion
    /// benchmarks: `cargo bench`).
    Bench(bench::BenchArgs),
    /// Deterministic simulations of the papers' experiments (fairness,
    /// transient, short-transfer, ...), scenario files, benchmarks.
    Lab(flowshare_lab::cli::LabArgs),
    /// Evaluate a throughput equation (MulTFRC's n-flow one or TCP's) for
    /// given conditions and print the rate in packets/s.
    Eq(eq::EqArgs),
    /// Write a self-signed certificate and key (cert.pem, key.pem) for
    /// `serve`.
    Cert(h3::CertArgs),
    /// HTTP/3 file server that gives each connection the controller its
    /// policy chooses (by SNI, ALPN, client address), with qlog and stats.
    Serve(h3::ServeArgs),
    /// HTTP/3 client: download (or upload) URLs over one or several
    /// connections with a chosen controller, printing throughput.
    Get(h3::GetArgs),
    /// Benchmark: many concurrent connections with mixed controllers
    /// against a `serve` child process.
    Loadtest(h3::LoadtestArgs),
    /// Real endpoints and Linux TCP peers through an ns-3 emulated
    /// bottleneck between network namespaces (as root).
    Testbed(flowshare_testbed::cli::TestbedArgs),
    /// Run a scenario in the lab and in the testbed and print both.
    Compare(flowshare_testbed::cli::CompareArgs),
    /// Does a weight of N give N flowshares? A grid of weights, peers,
    /// paths and queues with weight-one controls, in the lab or the testbed.
    Scorecard(scorecard::ScorecardArgs),
    /// The QUIC interop runner's test matrix through the simulator
    /// containers (docker/build.sh): flowshare and aioquic, each
    /// controller, crosstraffic against iperf3 (`matrix clean` removes
    /// leftovers).
    Matrix(flowshare_matrix::MatrixArgs),
}

fn main() -> ExitCode {
    restore_default_sigpipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Lab(args) => flowshare_lab::cli::run(args),
        Command::Eq(args) => eq::run(args),
        Command::Cert(args) => h3::cert(args),
        Command::Serve(args) => h3::serve(args),
        Command::Get(args) => h3::get(args),
        Command::Loadtest(args) => h3::loadtest(args),
        Command::Testbed(args) => flowshare_testbed::cli::run(args),
        Command::Compare(args) => flowshare_testbed::cli::compare(args),
        Command::Scorecard(args) => scorecard::run(args),
        Command::Matrix(args) => flowshare_matrix::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("flowshare: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Rust ignores SIGPIPE, so printing into a closed pipe (`flowshare lab ...
/// | head`) panics. A command-line tool should end quietly instead, as the
/// default disposition does.
fn restore_default_sigpipe() {
    // SAFETY: called first in main, before any other thread exists; setting
    // a signal's disposition to the default has no other effect.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
