//! `flowshare matrix`: the QUIC interop runner's test matrix through
//! flowshare's own containers (docker/): the ns-3 simulator image, the
//! flowshare endpoint, the aioquic peer and iperf3 cross traffic, in the
//! runner's network layout on 198.18.0.0/24 (client side) and
//! 198.19.0.0/24 (server side).
//!
//! Each test case runs for each server x client pair and, for flowshare
//! servers, each controller; outcomes are checked the way the runner checks
//! them (files complete and identical, handshake counts and versions from
//! the simulator's pcaps with tshark), measurements repeat and report mean
//! and spread. Every container and network it creates is named
//! `flowshare-matrix-*` and removed whatever happens; a run refuses to
//! start while an earlier run's are still there (`flowshare matrix clean`).

mod cases;
mod docker;
mod one_test;
mod report;
mod run;
mod sim;
mod trace;

use std::path::PathBuf;

use clap::Args;
use clap::Subcommand;

pub use run::run;

/// Default test cases: the runner's functional tests and measurements that
/// issue 13 asks for (handshakecorruption and transfercorruption exist too).
const ALL_TESTCASES: &str =
    "handshake,transfer,multiplexing,http3,longrtt,blackhole,handshakeloss,transferloss,goodput,crosstraffic";

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct MatrixArgs {
    #[command(subcommand)]
    pub action: Option<MatrixAction>,
    /// Server implementations, comma-separated: flowshare, aioquic.
    #[arg(long, default_value = "flowshare,aioquic")]
    pub servers: String,
    /// Client implementations, comma-separated: flowshare, aioquic.
    #[arg(long, default_value = "flowshare,aioquic")]
    pub clients: String,
    /// Controller specs for flowshare servers, separated by spaces or
    /// commas between specs (a spec's own commas stay with it:
    /// `cubic,multcp:n=2,a=1` is two specs).
    #[arg(long, default_value = "cubic")]
    pub controllers: String,
    /// Test cases, comma-separated (the runner's names; also
    /// handshakecorruption, transfercorruption).
    #[arg(long, default_value = ALL_TESTCASES)]
    pub testcases: String,
    /// Repetitions of each measurement (goodput, crosstraffic); the runner's 5 by default.
    #[arg(long)]
    pub repetitions: Option<usize>,
    /// Congestion control of aioquic servers and clients: cubic or reno.
    #[arg(long, default_value = "cubic")]
    pub aioquic_cc: String,
    /// Congestion control of the iperf3 cross traffic: cubic or reno.
    #[arg(long, default_value = "cubic")]
    pub iperf_congestion: String,
    /// Bottleneck rate in every scenario (the runner's 10Mbps); measurement
    /// files grow with it so that a transfer lasts as long as at 10Mbps.
    #[arg(long, default_value = "10Mbps")]
    pub bandwidth: String,
    /// Exit non-zero if a test of these pairs fails (SERVER:CLIENT, comma-separated).
    #[arg(long, value_name = "PAIRS")]
    pub must_pass: Option<String>,
    /// Directory for matrix.json and each test's logs and pcaps.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum MatrixAction {
    /// Remove every container and network a matrix run left behind.
    Clean,
}
