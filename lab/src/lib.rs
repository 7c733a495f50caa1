//! The flowshare lab: a deterministic packet-level simulator that drives the
//! very controllers of `flowshare-controllers` through the papers'
//! experiments.
//!
//! | module | what |
//! |---|---|
//! | [`sim`] | the discrete-event engine: events, flows, receivers, traffic |
//! | [`network`] | links, drop-tail and RED queues |
//! | [`sender`] | the QUIC-like sender: RFC 9002 loss detection, PTO, pacing |
//! | [`scenario`] | the scenario vocabulary (TOML files and built-in experiments) |
//! | [`metrics`] | fairness index, CoV, utilisation, loss and delay |
//!
//! Time is virtual (`Nanos`, nanoseconds since the start of the run), the
//! only randomness is one seeded stream per run ([`rng`]), and nothing reads
//! the wall clock, so a setup and a seed determine a run bit for bit.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cli;
pub mod experiments;
pub mod metrics;
pub mod network;
pub mod report;
pub mod rng;
pub mod scenario;
pub mod sender;
pub mod sim;
pub mod sweep;

/// Virtual time and durations, nanoseconds.
pub type Nanos = u64;
