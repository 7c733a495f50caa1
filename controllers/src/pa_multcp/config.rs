//! PA-MulTCP's parameters and the spec keys that set them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::PaMulTcp;
use crate::aimd::Aimd;
use crate::controller::Controller;
use crate::controller::Params;
use crate::equations::cubic_reno_flowshares;
use crate::equations::CUBIC_WEIGHT;
use crate::grammar::choice_name;
use crate::grammar::Args;
use crate::grammar::Range;
use crate::grammar::SpecError;
use crate::pacing::Pacing;
use crate::pacing::PACINGS;
use crate::pacing::SPLIT_GAIN;
use crate::spec::AlgorithmConfig;
use crate::thinning::Thinning;
use crate::thinning::YieldBy;
use crate::thinning::THINNINGS;
use crate::thinning::YIELD_BYS;
use crate::whole_packets::WholePackets;
use crate::whole_packets::WHOLE_PACKETS;

/// How packets are assigned to the two loops (section 4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assignment {
    /// Runs of packets on one loop until it is closed (the paper's: it
    /// prefers it under drop-tail, where losses come in bursts).
    Consecutive,
    /// Alternate packets while both loops are open.
    Interleave,
    /// Give each packet to the probe loop with probability
    /// `W_p / (W_p + W_a)` while both loops have room, else to the loop
    /// that has.
    Draw,
    /// Give the probe loop the first packet after its own pacing clock says
    /// a separate flow with its window would send one, so that its packets
    /// are spaced as that flow's are (default).
    Clock,
    /// Give each packet to the probe loop with probability
    /// `W_p / (W_p + W_a)` whichever loop has room: the probe's packets are
    /// a fair sample of the connection's.
    Sample,
    /// Give each packet to the probe loop with probability
    /// `R_p / (R_p + R_a)`, the loops' whole packets of room: the packets an
    /// acknowledgement releases go out in random order whichever loop
    /// they belong to, so the probe's are as often at the front of a
    /// burst as at its tail.
    Room,
}

/// What caps the adjusting loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapRule {
    /// `g (N - 1)` times the probe loop's average window over its last loss
    /// epochs, with `g` corrected so that the adjusting loop's average
    /// tracks `(N - 1)` times the probe's (default).
    Measured,
    /// Eq. (9)'s `W_max` at the probe's loss event rate, as in paper 000.
    Paper,
}

/// Which average of the probe's window the measured cap scales.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapAverage {
    /// The time average over the probe's last four loss epochs, raised by
    /// the open one where that raises it (the default of a paced
    /// connection).
    Epochs,
    /// The probe's window smoothed exponentially over time, with a time
    /// constant of four of its mean loss epochs (the default of an unpaced
    /// one).
    Smoothed,
}

/// The algorithm of the probe loop, and so the kind of flow a flowshare is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// AIMD(1, 1/2), the paper's probe: flowshares of Reno flows.
    Reno,
    /// RFC 9438 CUBIC: flowshares of CUBIC flows (default).
    Cubic,
}

/// The parameters of PA-MulTCP(N).
#[derive(Clone, Debug, PartialEq)]
pub struct PaMulTcpConfig {
    /// N, the number of flowshares of the whole connection.
    pub n: f64,
    /// Packet assignment.
    pub assignment: Assignment,
    /// The probe loop's algorithm.
    pub probe: ProbeKind,
    /// What caps the adjusting loop.
    pub cap: CapRule,
    /// The average of the probe's window the measured cap scales.
    pub average: CapAverage,
    /// How the connection spaces its packets.
    pub pacing: Pacing,
    /// With `pacing=split`, the pacer's rate over the window's.
    pub split_gain: f64,
    /// Which loss event rate the probe answers below one flowshare.
    pub thinning: Thinning,
    /// How the probe gives up the rest of a flow's share below one
    /// flowshare.
    pub yield_by: YieldBy,
    /// Whether the measured cap holds back the remainders of the flows
    /// the adjusting loop stands for ([`crate::whole_packets`]).
    pub whole_packets: WholePackets,
    /// K, the probe loops asked for: each a flow of the peers' kind, the
    /// adjusting loop worth N - K ([`PaMulTcpConfig::active_probes`]).
    pub probes: usize,
}

impl PaMulTcpConfig {
    /// PA-MulTCP(n); `n` must lie in `(0, 256]`, or `[0.01, 256]` with a
    /// CUBIC probe (see [`crate::mulcubic`]).
    pub fn new(n: f64, assignment: Assignment, probe: ProbeKind) -> Result<Self, SpecError> {
        let range = weight_range(probe);
        if !range.contains(n) {
            let with = if probe == ProbeKind::Cubic { " with probe=cubic" } else { "" };
            return Err(SpecError::new(
                "pa-multcp",
                "n",
                format!("= {n} is out of range; accepted range {range}{with}"),
            ));
        }
        Ok(PaMulTcpConfig {
            n,
            assignment,
            probe,
            cap: PaMulTcpConfig::DEFAULT_CAP,
            average: PaMulTcpConfig::default_average(Pacing::DEFAULT),
            pacing: Pacing::DEFAULT,
            split_gain: SPLIT_GAIN,
            thinning: Thinning::Undo,
            yield_by: YieldBy::default_for(Pacing::DEFAULT),
            whole_packets: WholePackets::DEFAULT,
            probes: 1,
        })
    }

    /// The default assignment of a connection that spaces its packets as
    /// `pacing` says: the probe's own clock when it paces, a draw when it
    /// does not (module docs of [`super`]).
    pub fn default_assignment(pacing: Pacing) -> Assignment {
        match pacing {
            Pacing::Even | Pacing::Flows => Assignment::Clock,
            Pacing::Off | Pacing::Split => Assignment::Draw,
        }
    }
    /// The default average of the measured cap of a connection that spaces
    /// its packets as `pacing` says: over loss epochs when it paces,
    /// smoothed over time when acknowledgements clock it (module docs of
    /// [`super`]).
    pub fn default_average(pacing: Pacing) -> CapAverage {
        if pacing.ack_clocked() {
            CapAverage::Smoothed
        } else {
            CapAverage::Epochs
        }
    }
    /// The default probe.
    pub const DEFAULT_PROBE: ProbeKind = ProbeKind::Cubic;
    /// The default cap.
    pub const DEFAULT_CAP: CapRule = CapRule::Measured;

    /// The same config with the adjusting loop capped by `cap`.
    pub fn with_cap(self, cap: CapRule) -> Self {
        PaMulTcpConfig { cap, ..self }
    }

    /// The same config scaling its measured cap to the `average` of the
    /// probe's window.
    pub fn with_average(self, average: CapAverage) -> Self {
        PaMulTcpConfig { average, ..self }
    }

    /// The same config spacing its packets as `pacing` says.
    pub fn with_pacing(self, pacing: Pacing) -> Self {
        PaMulTcpConfig { pacing, ..self }
    }

    /// The same config spreading a burst at `gain` times the window's rate
    /// with `pacing=split`.
    pub fn with_split_gain(self, split_gain: f64) -> Self {
        PaMulTcpConfig { split_gain, ..self }
    }

    /// The same config answering the loss event rate `thinning` says below
    /// one flowshare.
    pub fn with_thinning(self, thinning: Thinning) -> Self {
        PaMulTcpConfig { thinning, ..self }
    }

    /// The same config yielding below one flowshare as `yield_by` says.
    pub fn with_yield_by(self, yield_by: YieldBy) -> Self {
        PaMulTcpConfig { yield_by, ..self }
    }

    /// The same with the measured cap holding back remainders as
    /// `whole_packets` says.
    pub fn with_whole_packets(self, whole_packets: WholePackets) -> Self {
        PaMulTcpConfig { whole_packets, ..self }
    }

    /// The same with `probes` probe loops; more than one needs the
    /// measured cap, the only one that averages several probes.
    pub fn with_probes(self, probes: usize) -> Result<Self, SpecError> {
        if !(1..=MAX_PROBES).contains(&probes) {
            return Err(SpecError::new(
                "pa-multcp",
                "probes",
                format!("= {probes} is out of range; accepted 1 to {MAX_PROBES}"),
            ));
        }
        if probes > 1 && self.cap != CapRule::Measured {
            return Err(SpecError::new("pa-multcp", "probes", "above 1 needs cap=measured"));
        }
        Ok(PaMulTcpConfig { probes, ..self })
    }

    /// The same choices for another weight.
    pub fn reweighted(&self, n: f64) -> Result<Self, SpecError> {
        PaMulTcpConfig::new(n, self.assignment, self.probe)?
            .with_cap(self.cap)
            .with_average(self.average)
            .with_pacing(self.pacing)
            .with_split_gain(self.split_gain)
            .with_thinning(self.thinning)
            .with_yield_by(self.yield_by)
            .with_whole_packets(self.whole_packets)
            .with_probes(self.probes)
    }

    /// The probe loops in use: K, but no more than the whole flowshares
    /// of N (N = 2.5 with K = 4 probes with two), and one below two.
    pub fn active_probes(&self) -> usize {
        self.probes.min(self.n.floor() as usize).max(1)
    }

    /// Whether there is an adjusting loop: N above the probes' flowshares.
    pub fn has_adjusting_loop(&self) -> bool {
        self.adjusting_share() > 0.0
    }

    /// The flowshares the adjusting loop stands for: `N - K`, none when
    /// the probes hold them all.
    pub fn adjusting_share(&self) -> f64 {
        (self.n - self.active_probes() as f64).max(0.0)
    }

    /// Flowshares of the probe loop: 1, or N below one flowshare.
    pub fn probe_flowshares(&self) -> f64 {
        self.n.min(1.0)
    }

    /// The Reno flowshares the adjusting loop targets at loss event rate `p`
    /// (if known) and smoothed RTT `rtt`: `N' = N - K` (K probes, one by
    /// default), times `R` for a CUBIC probe.
    pub fn adjusting_flowshares(&self, loss_event_rate: Option<f64>, rtt: Duration) -> f64 {
        let n = self.adjusting_share();
        match (self.probe, loss_event_rate) {
            (ProbeKind::Cubic, Some(p)) => n * cubic_reno_flowshares(p, rtt),
            _ => n,
        }
    }

    /// `W_max` of eq. (9) in packets at loss event rate `p` and smoothed RTT
    /// `rtt`; `None` without an adjusting loop.
    pub fn w_max(&self, loss_event_rate: f64, rtt: Duration) -> Option<f64> {
        self.has_adjusting_loop().then(|| {
            let pair = loop_pair(self.adjusting_flowshares(Some(loss_event_rate), rtt));
            pair.epoch_window(loss_event_rate)
        })
    }
}

impl AlgorithmConfig for PaMulTcpConfig {
    /// Parses `n`, `assign`, `probe`, `cap`, `pacing`, `split`, `thinning`,
    /// `yield_by`, `whole_packets` and `probes`.
    fn from_args(args: &mut Args) -> Result<Self, SpecError> {
        // Asked for first, so errors list the keys in the spec's order; its
        // default depends on `pacing`, resolved below.
        let assignment = args.choice("assign", &ASSIGNMENTS)?;
        let probe = args.choice("probe", &PROBES)?.unwrap_or(PaMulTcpConfig::DEFAULT_PROBE);
        let cap = args.choice("cap", &CAPS)?.unwrap_or(PaMulTcpConfig::DEFAULT_CAP);
        let average = args.choice("average", &CAP_AVERAGES)?;
        let pacing = args.choice("pacing", &PACINGS)?.unwrap_or(Pacing::DEFAULT);
        if average.is_some() && cap != CapRule::Measured {
            return Err(SpecError::new(
                "pa-multcp",
                "average",
                "is the average the measured cap scales; set cap=measured",
            ));
        }
        let average = average.unwrap_or(PaMulTcpConfig::default_average(pacing));
        let split_gain = args.real("split", SPLIT_GAINS)?;
        if split_gain.is_some() && pacing != Pacing::Split {
            return Err(SpecError::new("pa-multcp", "split", "is the gain of pacing=split; set pacing=split too"));
        }
        let assignment = assignment.unwrap_or(PaMulTcpConfig::default_assignment(pacing));
        let thinning = args.choice("thinning", &THINNINGS)?.unwrap_or(Thinning::Undo);
        let yield_by = args.choice("yield_by", &YIELD_BYS)?.unwrap_or(YieldBy::default_for(pacing));
        let whole_packets = args.choice("whole_packets", &WHOLE_PACKETS)?.unwrap_or(WholePackets::DEFAULT);
        let probes = args.real("probes", PROBES_RANGE)?.unwrap_or(1.0);
        if probes.fract() != 0.0 {
            return Err(SpecError::new("pa-multcp", "probes", format!("= {probes} is not a whole number")));
        }
        let n = args.weight(weight_range(probe))?;
        PaMulTcpConfig::new(n, assignment, probe)?
            .with_cap(cap)
            .with_average(average)
            .with_pacing(pacing)
            .with_split_gain(split_gain.unwrap_or(SPLIT_GAIN))
            .with_thinning(thinning)
            .with_yield_by(yield_by)
            .with_whole_packets(whole_packets)
            .with_probes(probes as usize)
    }

    fn weight(&self) -> f64 {
        self.n
    }

    fn reweighted(&self, n: f64) -> Result<Arc<dyn AlgorithmConfig>, SpecError> {
        Ok(Arc::new(PaMulTcpConfig::reweighted(self, n)?))
    }

    fn build(&self, params: &Params) -> Option<Box<dyn Controller>> {
        Some(Box::new(PaMulTcp::new(self.clone(), params)))
    }
}

impl fmt::Display for PaMulTcpConfig {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "pa-multcp:n={}", self.n)?;
        if self.assignment != PaMulTcpConfig::default_assignment(self.pacing) {
            write!(f, ",assign={}", choice_name(&ASSIGNMENTS, self.assignment))?;
        }
        if self.probe != PaMulTcpConfig::DEFAULT_PROBE {
            write!(f, ",probe={}", choice_name(&PROBES, self.probe))?;
        }
        if self.cap != PaMulTcpConfig::DEFAULT_CAP {
            write!(f, ",cap={}", choice_name(&CAPS, self.cap))?;
        }
        if self.cap == CapRule::Measured && self.average != PaMulTcpConfig::default_average(self.pacing) {
            write!(f, ",average={}", choice_name(&CAP_AVERAGES, self.average))?;
        }
        if self.pacing != Pacing::DEFAULT {
            write!(f, ",pacing={}", self.pacing.name())?;
        }
        if self.split_gain != SPLIT_GAIN {
            write!(f, ",split={}", self.split_gain)?;
        }
        if self.thinning != Thinning::Undo {
            write!(f, ",thinning={}", self.thinning.name())?;
        }
        if self.yield_by != YieldBy::default_for(self.pacing) {
            write!(f, ",yield_by={}", self.yield_by.name())?;
        }
        if self.whole_packets != WholePackets::DEFAULT {
            write!(f, ",whole_packets={}", self.whole_packets.name())?;
        }
        if self.probes != 1 {
            write!(f, ",probes={}", self.probes)?;
        }
        Ok(())
    }
}

/// The values of `assign`.
const ASSIGNMENTS: [(&str, Assignment); 6] = [
    ("consecutive", Assignment::Consecutive),
    ("interleave", Assignment::Interleave),
    ("draw", Assignment::Draw),
    ("clock", Assignment::Clock),
    ("sample", Assignment::Sample),
    ("room", Assignment::Room),
];
/// The accepted `split`: above the window's rate, so that
/// acknowledgements, not the pacer, set the mean rate.
const SPLIT_GAINS: Range = Range::closed(1.5, 64.0);
/// The values of `probe`.
const PROBES: [(&str, ProbeKind); 2] = [("reno", ProbeKind::Reno), ("cubic", ProbeKind::Cubic)];
/// The most probe loops.
pub const MAX_PROBES: usize = 16;
/// The accepted `probes`.
const PROBES_RANGE: Range = Range::closed(1.0, MAX_PROBES as f64);
/// The values of `cap`.
const CAPS: [(&str, CapRule); 2] = [("measured", CapRule::Measured), ("paper", CapRule::Paper)];
/// The values of `average`.
const CAP_AVERAGES: [(&str, CapAverage); 2] = [("epochs", CapAverage::Epochs), ("smoothed", CapAverage::Smoothed)];

/// The accepted N: CUBIC's constants need N >= 0.01 ([`crate::mulcubic`]).
fn weight_range(probe: ProbeKind) -> Range {
    match probe {
        ProbeKind::Reno => Range::WEIGHT,
        ProbeKind::Cubic => CUBIC_WEIGHT,
    }
}

/// The AIMD pair of a loop worth `flowshares` standard flows: the paper's
/// AIMD(√s, 2/(1 + 3s^1.5)) from one flowshare up, eq. (5) with TCP's
/// b = 1/2, AIMD(s², 1/2), below (module docs).
pub fn loop_pair(flowshares: f64) -> Aimd {
    if flowshares >= 1.0 {
        let increase = flowshares.sqrt();
        Aimd { increase, decrease: Aimd::weighted_decrease(flowshares, increase) }
    } else {
        YieldBy::Increase.reno_pair(flowshares)
    }
}
