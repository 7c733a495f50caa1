//! MulTFRC's parameters and the spec keys that set them.

use crate::pacing::Pacing;
use crate::pacing::RATE_PACINGS;
use std::fmt;
use std::sync::Arc;

use super::MulTfrc;
use crate::controller::Controller;
use crate::controller::Params;
use crate::equations::IMPROVED_FLOWS_HIT_BELOW;
use crate::grammar::choice_name;
use crate::grammar::Args;
use crate::grammar::Range;
use crate::grammar::SpecError;
use crate::spec::AlgorithmConfig;
use crate::thinning::Thinning;
use crate::thinning::THINNINGS;

/// Accepted values of `b`: TCP acknowledges every packet (1) or every
/// second one with delayed acknowledgements (2) (RFC 5348 section 3.1).
pub const B_RANGE: Range = Range::closed(1.0, 2.0);

/// Accepted values of `t_mbi`, seconds: from one packet per second to one
/// per hour at the floor `s / t_mbi`.
pub const T_MBI_RANGE: Range = Range::closed(1.0, 3600.0);

/// The accepted `t_rto`, RTTs.
pub const T_RTO_RANGE: Range = Range::closed(1.0, 16.0);

/// The accepted `thin_exponent`.
pub const THIN_EXPONENT_RANGE: Range = Range::closed(0.0, 1.0);

/// Where the equation estimates the flows a loss event hits from `j`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowsHit {
    /// For every n > 1 (default): one connection's loss event of `j`
    /// packets hits `n (1 - ((n - 1)/n)^j)` of its n virtual flows whatever
    /// n is, so the estimate holds above 13 as below.
    All,
    /// For 1 < n < 13 only, `j` flows above, as paper 004 chose from its RED
    /// and random-loss runs (`flows_hit=paper`). Above 13 a loss event of a
    /// drop-tail overflow, several packets of one window, then counts as
    /// several flows halving: the lab's MulTFRC(30) took 0.77 of its share
    /// against Reno at 400 Mbit/s.
    Paper,
}

impl FlowsHit {
    /// The n below which the estimate is used.
    pub fn below(self) -> f64 {
        match self {
            FlowsHit::All => f64::INFINITY,
            FlowsHit::Paper => IMPROVED_FLOWS_HIT_BELOW,
        }
    }
}

/// The values of `flows_hit`.
const FLOWS_HIT: [(&str, FlowsHit); 2] = [("all", FlowsHit::All), ("paper", FlowsHit::Paper)];

/// The parameters of MulTFRC(n).
#[derive(Clone, Debug, PartialEq)]
pub struct MulTfrcConfig {
    /// n, the number of flowshares.
    pub n: f64,
    /// Packets one TCP acknowledgement covers in the equation; RFC 5348
    /// section 3.1 sets 1.
    pub b: f64,
    /// Maximum backoff interval `t_mbi`, seconds: the rate never drops below
    /// one packet per `t_mbi`. RFC 5348 section 4.3 sets 64; the default
    /// here is [`MulTfrcConfig::DEFAULT_T_MBI`].
    pub t_mbi: f64,
    /// `t_RTO` in the equation, RTTs; RFC 5348 section 3.1 sets 4.
    pub t_rto: f64,
    /// Where the equation estimates the flows a loss event hits.
    pub flows_hit: FlowsHit,
    /// Which loss event rate the equation takes below one flowshare.
    pub thinning: Thinning,
    /// Below one flowshare with `thinning=undo`, the exponent of n by which
    /// the full flow's loss event rate is scaled for a drop-tail queue's
    /// crowding ([`crate::equations::crowded_loss_event_rate`]); 0 leaves it.
    pub thin_exponent: f64,
    /// How the rate is spaced into packets.
    pub pacing: Pacing,
}

impl MulTfrcConfig {
    /// The default `b` (RFC 5348 section 3.1).
    pub const DEFAULT_B: f64 = 1.0;
    /// The default `t_mbi`, seconds: a third of a 30 s idle timeout (see
    /// "Rate floor" in the [module docs](crate::multfrc)). RFC 5348
    /// section 4.3 sets 64 s.
    pub const DEFAULT_T_MBI: f64 = 10.0;
    /// The default `t_rto`, RTTs, where RFC 5348 sets 4. A QUIC sender
    /// (RFC 9002) detects most losses of a small window by time instead of
    /// waiting for a retransmission timeout, and does not collapse its
    /// window when its probe timeout fires, so at the loss event rates of
    /// many flows on a small path TCP's 4 RTTs charge it too much. The
    /// lab's grid chose 2 (controllers/README.md has the sweeps): with
    /// whole-packet windows, on the small paths 61 of 70 judged cells hold
    /// against paced peers and 54 of 70 against unpaced ones, where 1.25
    /// held 48 and 43 and 4 held 41 and 44; at paper scale 67 of 68 (1.25:
    /// 69 of 70). Real stacks at 40 ms fall further below the equation as
    /// their loss event rate rises (testbed/README.md), which a larger
    /// charge would match and the lab's peers do not.
    pub const DEFAULT_T_RTO: f64 = 2.0;
    /// The default `thin_exponent`, measured on the testbed's path in the
    /// lab ([`crate::equations::crowded_loss_event_rate`]); among the
    /// paper's 200 flows it overshoots (controllers/README.md,
    /// `thin_exponent`).
    pub const DEFAULT_THIN_EXPONENT: f64 = 0.2;

    /// MulTFRC(n) with the defaults.
    pub fn new(n: f64) -> Result<Self, SpecError> {
        check_weight(n)?;
        Ok(MulTfrcConfig {
            n,
            b: Self::DEFAULT_B,
            t_mbi: Self::DEFAULT_T_MBI,
            t_rto: Self::DEFAULT_T_RTO,
            flows_hit: FlowsHit::All,
            thinning: Thinning::Undo,
            thin_exponent: Self::DEFAULT_THIN_EXPONENT,
            pacing: Pacing::DEFAULT,
        })
    }

    /// The same parameters for another weight.
    pub fn reweighted(&self, n: f64) -> Result<Self, SpecError> {
        check_weight(n)?;
        Ok(MulTfrcConfig { n, ..self.clone() })
    }
}

impl AlgorithmConfig for MulTfrcConfig {
    /// Parses `n`, `b`, `t_mbi`, `t_rto`, `flows_hit`, `thinning`,
    /// `thin_exponent` and `pacing`.
    fn from_args(args: &mut Args) -> Result<Self, SpecError> {
        let n = args.weight(Range::WEIGHT)?;
        let b = args.real("b", B_RANGE)?.unwrap_or(Self::DEFAULT_B);
        let t_mbi = args.real("t_mbi", T_MBI_RANGE)?.unwrap_or(Self::DEFAULT_T_MBI);
        let t_rto = args.real("t_rto", T_RTO_RANGE)?.unwrap_or(Self::DEFAULT_T_RTO);
        let flows_hit = args.choice("flows_hit", &FLOWS_HIT)?.unwrap_or(FlowsHit::All);
        let thinning = args.choice("thinning", &THINNINGS)?.unwrap_or(Thinning::Undo);
        let thin_exponent = args.real("thin_exponent", THIN_EXPONENT_RANGE)?.unwrap_or(Self::DEFAULT_THIN_EXPONENT);
        let pacing = args.choice("pacing", &RATE_PACINGS)?.unwrap_or(Pacing::DEFAULT);
        Ok(MulTfrcConfig { n, b, t_mbi, t_rto, flows_hit, thinning, thin_exponent, pacing })
    }

    fn weight(&self) -> f64 {
        self.n
    }

    fn reweighted(&self, n: f64) -> Result<Arc<dyn AlgorithmConfig>, SpecError> {
        Ok(Arc::new(MulTfrcConfig::reweighted(self, n)?))
    }

    fn build(&self, params: &Params) -> Option<Box<dyn Controller>> {
        Some(Box::new(MulTfrc::new(self.clone(), params)))
    }
}

impl fmt::Display for MulTfrcConfig {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "multfrc:n={}", self.n)?;
        if self.b != Self::DEFAULT_B {
            write!(f, ",b={}", self.b)?;
        }
        if self.t_mbi != Self::DEFAULT_T_MBI {
            write!(f, ",t_mbi={}", self.t_mbi)?;
        }
        if self.t_rto != Self::DEFAULT_T_RTO {
            write!(f, ",t_rto={}", self.t_rto)?;
        }
        if self.flows_hit != FlowsHit::All {
            write!(f, ",flows_hit={}", choice_name(&FLOWS_HIT, self.flows_hit))?;
        }
        if self.thinning != Thinning::Undo {
            write!(f, ",thinning={}", self.thinning.name())?;
        }
        if self.thin_exponent != Self::DEFAULT_THIN_EXPONENT {
            write!(f, ",thin_exponent={}", self.thin_exponent)?;
        }
        if self.pacing != Pacing::DEFAULT {
            write!(f, ",pacing={}", self.pacing.name())?;
        }
        Ok(())
    }
}

fn check_weight(n: f64) -> Result<(), SpecError> {
    if Range::WEIGHT.contains(n) {
        Ok(())
    } else {
        Err(SpecError::out_of_range("multfrc", "n", n, Range::WEIGHT))
    }
}
