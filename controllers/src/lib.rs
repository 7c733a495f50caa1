//! Weighted and aggregate congestion controllers, sans-IO.
//!
//! Every algorithm implements [`Controller`]: hosts report packets sent,
//! acknowledged and lost, with the time as an argument, and read back a
//! congestion window and a pacing rate. Nothing here reads a clock, touches
//! a socket or depends on a QUIC stack, so the quiche adapter and the lab
//! simulator drive the very same objects, and a run is reproducible from its
//! events alone (see [`trace`]).
//!
//! Controllers are chosen with a [`Spec`], parsed from text such as
//! `multcp:n=4`: [`grammar`] is the language, [`registry`] the table of
//! algorithms and what each supports, [`spec`] what a parsed spec offers.
//!
//! | module | algorithm |
//! |---|---|
//! | [`multcp`] | MulTCP(N): AIMD(N, 1/2N) and its eq. (5) family |
//! | [`reno`] | reference RFC 9002 NewReno (= MulTCP(1)) |
//! | [`cubic`] | reference CUBIC, RFC 9438 |
//! | [`pa_multcp`] | PA-MulTCP(N): probe loop + capped adjusting loop (paper 000 section 4), Reno or CUBIC probe |
//! | [`mulcubic`] | MulCUBIC(N): N CUBIC flows' windows in one connection |
//! | [`multfrc`] | MulTFRC(n): TFRC (RFC 5348) with the throughput equation of n flows, a paced rate (paper 004) |
//! | [`ctcp`] | Compound TCP: loss window + delay window (paper 003 section III-A) |
//! | [`mcompound`] | MCompound: Compound TCP subflows coupled in a group (paper 003 section III-B) |
//! | [`bbr`] | `bbr`: a host's own BBR (quiche's BBRv2, Linux's), no implementation here |
//!
//! Shared pieces: [`aimd`] (AIMD equations), [`window`] (the loss-based
//! window loop), [`flow_windows`] (a window for each flow a connection
//! stands for), [`pacing`] (spacing a weighted connection's packets as
//! its flows would arrive), [`ack_delay`] (letting out what its flows'
//! delayed acknowledgements would), [`whole_packets`] (holding back the
//! remainders of the flows it stands for), [`loss_intervals`] (TFRC's loss event rate, measured on the
//! sender), [`thinning`] (what a sender below one flowshare answers),
//! [`equations`] (the TCP and n-flow throughput equations, CUBIC's window
//! and response functions).
//!
//! The modules form layers, each importing only those below it: the
//! grammar, time and events at the bottom ([`grammar`], [`time`],
//! [`controller`], [`spec`]), the shared mechanisms and equations above
//! them, the algorithms above those, and [`registry`], the only module
//! that names every algorithm, at the top.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ack_delay;
pub mod aimd;
pub mod bbr;
pub mod controller;
pub mod ctcp;
pub mod cubic;
pub mod epoch_average;
pub mod equations;
pub mod flow_windows;
pub mod grammar;
pub mod ledger;
pub mod loss_intervals;
pub mod mcompound;
pub mod mulcubic;
pub mod multcp;
pub mod multfrc;
pub mod pa_multcp;
pub mod pacing;
pub mod registry;
pub mod reno;
pub mod separate_loops;
pub mod spec;
#[cfg(test)]
mod testing;
pub mod thinning;
pub mod time;
pub mod trace;
pub mod virtual_flows;
pub mod whole_packets;
pub mod window;

pub use controller::AckedPacket;
pub use controller::CongestionEvent;
pub use controller::Controller;
pub use controller::Counters;
pub use controller::LostPacket;
pub use controller::Params;
pub use controller::RttEstimate;
pub use controller::SentPacket;
pub use controller::Snapshot;
pub use controller::Value;
pub use grammar::SpecError;
pub use spec::Algorithm;
pub use spec::Spec;
pub use spec::Standard;
pub use time::Time;
