//! The flowshare testbed: real quiche endpoints (`flowshare serve` /
//! `flowshare get`), quiche's own CUBIC and Reno, and Linux TCP peers
//! (iperf3) through a bottleneck that ns-3 emulates in real time between
//! network namespaces.
//!
//! | module | what |
//! |---|---|
//! | [`requirements`] | root, ns-3, iperf3 and tools, checked first |
//! | [`netns`] | the client, sim and server namespaces and their veths |
//! | [`emulator`] | the ns-3 program (`ns3/bottleneck.cc`): build, run, control, read |
//! | [`scenario`] | the lab's scenario vocabulary plus `transport` and `blackhole`; plans |
//! | [`builtin`] | the built-in scenarios: crosstraffic, weighted, transient, multipath, utilization, headroom |
//! | [`endpoints`] | `flowshare serve`/`get` and iperf3 per flow |
//! | [`process`] | child processes, ended by PID, never left behind |
//! | [`run`] | one run on its timeline, torn down on success, failure and Ctrl-C |
//! | [`results`] | measurements to the lab's `RunResult`, table, summary, plots |
//! | [`episodes`] | a queue's overflow episodes and the share of them that caught each flow |
//! | [`arrivals`] | per flow, how its packets reached the bottleneck and which it dropped (`--pcap` traces) |
//! | [`windows`] | per QUIC sender, its window and PA-MulTCP's loops over the standard flows' (qlogs) |
//! | [`loss_law`] | per cell, PA-MulTCP's share per flowshare against its probe's loss over its peers' (qlogs) |
//! | [`equation`] | per cell, both sides of the pair against the TCP throughput equation |
//! | [`scorecard`] | the lab's scorecard grid through the testbed |
//! | [`cli`] | `flowshare testbed` and `flowshare compare` |

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod arrivals;
pub mod builtin;
pub mod cli;
pub mod emulator;
pub mod endpoints;
pub mod episodes;
pub mod equation;
pub mod loss_law;
pub mod netns;
pub mod process;
pub mod requirements;
pub mod results;
pub mod run;
pub mod scenario;
pub mod scorecard;
pub mod windows;
