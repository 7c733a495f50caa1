//! `flowshare eq`: the throughput equations the controllers use, evaluated
//! for given conditions, so users can see what MulTFRC will do.
//!
//! Prints one number: the rate in packets per second, or in bytes per second
//! when `--s` gives the packet size. Values are checked against the ranges
//! the controllers accept, and a bad one gives a one-line error naming the
//! flag and the range.

use clap::Args;
use clap::Subcommand;
use flowshare_controllers::equations::MulTfrcEquation;
use flowshare_controllers::equations::TcpEquation;
use flowshare_controllers::equations::IMPROVED_FLOWS_HIT_BELOW;
use flowshare_controllers::grammar::Range;

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

/// The accepted values of the equations' inputs.
mod accepted {
    use flowshare_controllers::grammar::Range;

    pub const WEIGHT: Range = Range::WEIGHT;
    pub const POSITIVE: Range = Range::open(0.0, f64::INFINITY);
    pub const PROBABILITY: Range = Range::above_up_to(0.0, 1.0);
    pub const AT_LEAST_ONE: Range = Range::from_up_to(1.0, f64::INFINITY);
    pub const B: Range = flowshare_controllers::multfrc::B_RANGE;
    pub const PACKET_SIZE: Range = Range::closed(1.0, 65535.0);
}

/// Parses `--flag text` as the quantity `name` in `accepted`.
fn value(flag: &str, name: &str, text: &str, accepted: Range) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if accepted.contains(value) => Ok(value),
        Ok(_) => Err(format!("--{flag} {text}: {name} must be in {accepted}")),
        Err(_) => Err(format!("--{flag} {text:?} is not a number: {name} must be in {accepted}")),
    }
}

/// The packet size, if given: whole bytes.
fn packet_size(text: Option<&str>) -> Result<Option<f64>, String> {
    let Some(text) = text else { return Ok(None) };
    let size = value("s", "the packet size in bytes", text, accepted::PACKET_SIZE)?;
    if size.fract() != 0.0 {
        return Err(format!("--s {text}: the packet size must be a whole number of bytes"));
    }
    Ok(Some(size))
}

/// Evaluates the equation and prints the rate.
pub fn run(args: EqArgs) -> Result<(), String> {
    let (packets_per_second, size) = match &args.equation {
        Equation::Multfrc(args) => {
            let n = value("n", "n", &args.n, accepted::WEIGHT)?;
            let rtt = value("rtt", "the RTT in seconds", &args.rtt, accepted::POSITIVE)?;
            let p = value("pe", "p_e", &args.pe, accepted::PROBABILITY)?;
            let j = value("j", "j", &args.j, accepted::AT_LEAST_ONE)?;
            let rto = value("rto", "t_RTO in seconds", &args.rto, accepted::POSITIVE)?;
            let b = value("b", "b", &args.b, accepted::B)?;
            let size = packet_size(args.s.as_deref())?;
            (
                MulTfrcEquation { n, rtt, rto, b, losses_per_event: j, flows_hit_below: IMPROVED_FLOWS_HIT_BELOW }
                    .packets_per_second(p),
                size,
            )
        }
        Equation::Tcp(args) => {
            let rtt = value("rtt", "the RTT in seconds", &args.rtt, accepted::POSITIVE)?;
            let p = value("p", "p", &args.p, accepted::PROBABILITY)?;
            let rto = value("rto", "t_RTO in seconds", &args.rto, accepted::POSITIVE)?;
            let b = value("b", "b", &args.b, accepted::B)?;
            let size = packet_size(args.s.as_deref())?;
            (TcpEquation { rtt, rto, b }.packets_per_second(p), size)
        }
    };
    println!("{}", packets_per_second * size.unwrap_or(1.0));
    Ok(())
}
