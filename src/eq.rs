//! `flowshare eq`: the throughput equations the controllers use, evaluated
//! for given conditions, so users can see what MulTFRC will do.
//!
//! Prints one number: the rate in packets per second, or in bytes per second
//! when `--s` gives the packet size. Values are checked against the ranges
//! the controllers accept, and a bad one gives a one-line error naming the
//! flag and the range.

use std::fmt;

use clap::Args;
use clap::Subcommand;
use flowshare_controllers::equations::MulTfrcEquation;
use flowshare_controllers::equations::TcpEquation;
use flowshare_controllers::multfrc::B_RANGE;
use flowshare_controllers::spec::MAX_WEIGHT;

/// Arguments of `flowshare eq`.
#[derive(Args)]
pub struct EqArgs {
    #[command(subcommand)]
    equation: Equation,
}

#[derive(Subcommand)]
enum Equation {
    /// The throughput of n parallel TCP flows that MulTFRC(n) sends at
    /// (paper 004 eqs. 17-25), in packets/s.
    Multfrc(MultfrcArgs),
    /// The throughput of one TCP flow (RFC 5348 section 3.1), in packets/s.
    Tcp(TcpArgs),
}

// Values are taken as text and checked in `run`, so that every bad value,
// negative numbers included, gets the same one-line error.
#[derive(Args)]
#[command(allow_negative_numbers = true)]
struct MultfrcArgs {
    /// Number of flows n, in (0, 256]; 0.5 is half a TCP flow.
    #[arg(long, value_name = "N")]
    n: String,
    /// Round-trip time, seconds.
    #[arg(long, value_name = "S")]
    rtt: String,
    /// Loss event rate p_e, in (0, 1].
    #[arg(long, value_name = "P")]
    pe: String,
    /// Packets lost per loss event, at least 1.
    #[arg(long, value_name = "J")]
    j: String,
    /// Retransmission timeout t_RTO, seconds (TFRC uses 4 RTT).
    #[arg(long, value_name = "S")]
    rto: String,
    /// Packets acknowledged per TCP acknowledgement, in [1, 2].
    #[arg(long, value_name = "B", default_value = "1")]
    b: String,
    /// Packet size in bytes: print bytes/s instead of packets/s.
    #[arg(long, value_name = "BYTES")]
    s: Option<String>,
}

#[derive(Args)]
#[command(allow_negative_numbers = true)]
struct TcpArgs {
    /// Round-trip time, seconds.
    #[arg(long, value_name = "S")]
    rtt: String,
    /// Loss event rate p, in (0, 1].
    #[arg(long, value_name = "P")]
    p: String,
    /// Retransmission timeout t_RTO, seconds (TFRC uses 4 RTT).
    #[arg(long, value_name = "S")]
    rto: String,
    /// Packets acknowledged per TCP acknowledgement, in [1, 2].
    #[arg(long, value_name = "B", default_value = "1")]
    b: String,
    /// Packet size in bytes: print bytes/s instead of packets/s.
    #[arg(long, value_name = "BYTES")]
    s: Option<String>,
}

/// An interval of accepted values, printed in interval notation.
struct Accepted {
    min: f64,
    min_inclusive: bool,
    max: f64,
    max_inclusive: bool,
}

impl Accepted {
    const WEIGHT: Accepted = Accepted { min: 0.0, min_inclusive: false, max: MAX_WEIGHT, max_inclusive: true };
    const POSITIVE: Accepted = Accepted { min: 0.0, min_inclusive: false, max: f64::INFINITY, max_inclusive: false };
    const PROBABILITY: Accepted = Accepted { min: 0.0, min_inclusive: false, max: 1.0, max_inclusive: true };
    const AT_LEAST_ONE: Accepted = Accepted { min: 1.0, min_inclusive: true, max: f64::INFINITY, max_inclusive: false };
    const B: Accepted = Accepted { min: B_RANGE.0, min_inclusive: true, max: B_RANGE.1, max_inclusive: true };
    const PACKET_SIZE: Accepted = Accepted { min: 1.0, min_inclusive: true, max: 65535.0, max_inclusive: true };

    fn contains(&self, value: f64) -> bool {
        let above = if self.min_inclusive { value >= self.min } else { value > self.min };
        let below = if self.max_inclusive { value <= self.max } else { value < self.max };
        above && below
    }
}

impl fmt::Display for Accepted {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let open = if self.min_inclusive { '[' } else { '(' };
        let close = if self.max_inclusive { ']' } else { ')' };
        write!(f, "{open}{}, {}{close}", self.min, self.max)
    }
}

/// Parses `--flag text` as the quantity `name` in `accepted`.
fn value(flag: &str, name: &str, text: &str, accepted: Accepted) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if accepted.contains(value) => Ok(value),
        Ok(_) => Err(format!("--{flag} {text}: {name} must be in {accepted}")),
        Err(_) => Err(format!("--{flag} {text:?} is not a number: {name} must be in {accepted}")),
    }
}

/// The packet size, if given: whole bytes.
fn packet_size(text: Option<&str>) -> Result<Option<f64>, String> {
    let Some(text) = text else { return Ok(None) };
    let size = value("s", "the packet size in bytes", text, Accepted::PACKET_SIZE)?;
    if size.fract() != 0.0 {
        return Err(format!("--s {text}: the packet size must be a whole number of bytes"));
    }
    Ok(Some(size))
}

/// Evaluates the equation and prints the rate.
pub fn run(args: EqArgs) -> Result<(), String> {
    let (packets_per_second, size) = match &args.equation {
        Equation::Multfrc(args) => {
            let n = value("n", "n", &args.n, Accepted::WEIGHT)?;
            let rtt = value("rtt", "the RTT in seconds", &args.rtt, Accepted::POSITIVE)?;
            let p = value("pe", "p_e", &args.pe, Accepted::PROBABILITY)?;
            let j = value("j", "j", &args.j, Accepted::AT_LEAST_ONE)?;
            let rto = value("rto", "t_RTO in seconds", &args.rto, Accepted::POSITIVE)?;
            let b = value("b", "b", &args.b, Accepted::B)?;
            let size = packet_size(args.s.as_deref())?;
            (MulTfrcEquation { n, rtt, rto, b, losses_per_event: j }.packets_per_second(p), size)
        }
        Equation::Tcp(args) => {
            let rtt = value("rtt", "the RTT in seconds", &args.rtt, Accepted::POSITIVE)?;
            let p = value("p", "p", &args.p, Accepted::PROBABILITY)?;
            let rto = value("rto", "t_RTO in seconds", &args.rto, Accepted::POSITIVE)?;
            let b = value("b", "b", &args.b, Accepted::B)?;
            let size = packet_size(args.s.as_deref())?;
            (TcpEquation { rtt, rto, b }.packets_per_second(p), size)
        }
    };
    println!("{}", packets_per_second * size.unwrap_or(1.0));
    Ok(())
}
