//! The flowshare lab: a deterministic packet-level simulator that drives the
//! very controllers of `flowshare-controllers` through the papers'
//! experiments.
//!
//! | module | what |
//! |---|---|
//! | [`scenario`] | the scenario vocabulary: TOML files, and the constructors the built-in scenarios use |
//! | [`setup`] | a validated run: links, connections, traffic |
//! | [`sim`] | the discrete-event engine, with its event queue (`events`) and per-flow state (`flow`) |
//! | [`network`] | links, drop-tail and RED queues |
//! | [`sender`] | the QUIC-like sender: RFC 9002 loss detection, PTO, pacing |
//! | [`result`] | what a run measured |
//! | [`metrics`] | fairness index, CoV, utilisation, loss and delay |
//! | [`options`] | the options of the built-in scenarios, shared with the testbed |
//! | [`experiments`] | the papers' experiments, one module each |
//! | [`scorecard`] | does a weight of N give N flowshares: the grid, its campaign and report |
//!
//! Time is virtual (`Nanos`, nanoseconds since the start of the run), the
//! only randomness is one seeded stream per run ([`rng`]), and nothing reads
//! the wall clock, so a setup and a seed determine a run bit for bit.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cli;
mod events;
pub mod experiments;
mod flow;
pub mod metrics;
pub mod network;
pub mod options;
pub mod report;
pub mod result;
pub mod rng;
pub mod scenario;
pub mod scorecard;
pub mod sender;
pub mod setup;
pub mod sim;
pub mod sweep;

/// Virtual time and durations, nanoseconds.
pub type Nanos = u64;
