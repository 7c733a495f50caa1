//! Pacing a connection worth N flowshares as N flows would arrive.
//!
//! N separate connections, each paced evenly, reach a bottleneck with
//! independent phases, so their packets together arrive irregularly; one
//! connection pacing N flows' rate evenly is perfectly regular. At a full
//! drop-tail queue that regularity is an edge: each departure leaves room
//! for one packet, and an even stream finds it before the peers' bunched
//! packets do, so the connection loses a smaller share of its packets than
//! the flows it stands for would, and takes more than N flowshares (the
//! lab, 4 seeds, 20 Mbit/s, 4 Reno peers, drift jitter: MulTCP(8) 1.9 and
//! MulTCP(30) 2.4 times its share; the testbed against Linux TCP CUBIC at
//! N = 8: 2.6-2.7).
//!
//! With `pacing=flows` each gap after a packet is `(1 - s) + s E` times the
//! even gap, `E` exponential with mean one and `s = 1 - 1/N`: the mean rate
//! is the controller's, one flow (N <= 1) is paced evenly as before, and as
//! N grows the gaps approach those of a Poisson stream, the limit of many
//! independent flows. The controller scales the pacing rate it reports
//! after each packet sent, so every host that asks for the rate once per
//! packet (quiche's pacer, the lab's sender) spaces that packet's successor
//! accordingly; `pacing=even` keeps the even gaps.
//!
//! `flows` is every weighted controller's default since the lab's full
//! grid measured it (lab/README.md); the paper reproductions pace evenly.
//!
//! With `pacing=off` a window controller reports no rate and the host
//! sends whenever the window has room, as acknowledgements open it: what
//! Linux TCP without the `fq` qdisc and quiche's own CUBIC and Reno do.
//! Pacing is an edge of its own at a drop-tail queue: a paced connection
//! of weight one took 2.9 to 3.9 times the share of each of two unpaced
//! quiche CUBIC connections through `flowshare demo`'s bottleneck, so
//! against unpaced peers a flowshare is only an unpaced flow's when the
//! weighted connection does not pace either. A rate-based controller
//! (MulTFRC) must pace and does not accept `off`.
//!
//! `pacing=split` sits between `off` and pacing: packets still leave as
//! acknowledgements open the window, but the pacer is given
//! [`SPLIT_GAIN`] times the window's rate, so the packets one
//! acknowledgement releases together follow each other at a fraction of
//! the mean gap instead of back to back. Against Linux TCP the shape of
//! those bursts, not the answer to losses, decides what a QUIC connection
//! of weight one gets (testbed/README.md, "Weight one between stacks":
//! 0.64 of a Linux CUBIC flow's share unpaced, 1.29 paced, 0.95 when its
//! client acknowledges every packet). With the split of [`SPLIT_GAIN`]
//! it took 0.98 there. PA-MulTCP's `split` key sets the multiple.

use crate::grammar::choice_name;

/// How a weighted connection spaces its packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pacing {
    /// Evenly, at the controller's rate.
    Even,
    /// As N independently paced flows would arrive together.
    Flows,
    /// Not at all: packets leave as the window opens (window controllers).
    Off,
    /// As the window opens, the packets one acknowledgement releases
    /// spread at [`SPLIT_GAIN`] times the window's rate (window controllers).
    Split,
}

impl Pacing {
    /// The default of every weighted controller.
    pub const DEFAULT: Pacing = Pacing::Flows;

    /// The name in specs.
    pub fn name(self) -> &'static str {
        choice_name(&PACINGS, self)
    }

    /// Whether acknowledgements clock the packets out (`off`, `split`)
    /// rather than a pacing rate.
    pub fn ack_clocked(self) -> bool {
        matches!(self, Pacing::Off | Pacing::Split)
    }
}

/// With `pacing=split`, the pacer's rate over the window's: the gap between
/// the packets one acknowledgement releases, as a fraction of the mean gap,
/// is about its inverse (the window's rate carries a gain of 1.25). Any
/// value well above one keeps the connection acknowledgement-clocked. 12 is
/// where a connection of weight one took a Linux CUBIC flow's share on the
/// testbed's path (20 Mbit/s, 40 ms, 1 BDP drop-tail, 4 Linux CUBIC flows:
/// unpaced 0.71, `split=16` 0.86, 12 0.98, 8 1.13, 4 1.39;
/// testbed/README.md, "Splitting the bursts"). The gap that is neutral
/// depends on the bottleneck's service time and the connection's rate, so
/// this is a measured setting for that path, not a rule.
pub const SPLIT_GAIN: f64 = 12.0;

/// The values of the `pacing` key of window controllers.
pub const PACINGS: [(&str, Pacing); 4] =
    [("even", Pacing::Even), ("flows", Pacing::Flows), ("off", Pacing::Off), ("split", Pacing::Split)];

/// The values of the `pacing` key of rate-based controllers, which must pace.
pub const RATE_PACINGS: [(&str, Pacing); 2] = [PACINGS[0], PACINGS[1]];

/// A number in [0, 1) drawn from `number`: splitmix64's finaliser, so that
/// neighbouring numbers draw independent-looking values and a run is
/// reproducible from its packet numbers alone.
pub fn draw(number: u64) -> f64 {
    let mut z = number.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Mixed into packet numbers so that the gaps do not repeat another use of
/// [`draw`] on the same numbers (PA-MulTCP's packet assignment).
const GAP_SALT: u64 = 0x5851_F42D_4C95_7F2D;

/// The gap after each packet, as a multiple of the even one.
#[derive(Clone, Debug, PartialEq)]
pub struct Gaps {
    pacing: Pacing,
    /// `s`: the share of each gap drawn exponential.
    random_share: f64,
    /// The multiple for the gap after the last packet sent.
    factor: f64,
    /// The pacer's mean rate over the controller's: 1, or with
    /// `pacing=split` the split multiple, which shortens every gap alike.
    gain: f64,
    /// With `pacing=split`, the weight where it is below one flowshare, and
    /// otherwise 1: the split then spaces a burst as weight one would
    /// (below).
    split_weight: f64,
}

impl Gaps {
    /// The gaps of a connection worth `n` flowshares.
    pub fn new(pacing: Pacing, n: f64) -> Self {
        let gain = if pacing == Pacing::Split { SPLIT_GAIN } else { 1.0 };
        let mut gaps = Gaps { pacing, random_share: 0.0, factor: 1.0, gain, split_weight: 1.0 };
        gaps.set_weight(n);
        gaps
    }

    /// With `pacing=split`, spaces a burst's packets at `gain` times the
    /// window's rate instead of [`SPLIT_GAIN`]; other pacings keep theirs.
    pub fn with_split_gain(mut self, gain: f64) -> Self {
        if self.pacing == Pacing::Split {
            self.gain = gain;
        }
        self
    }

    /// The connection is now worth `n` flowshares.
    ///
    /// With `pacing=split` below one flowshare the pacer gets `gain / n`
    /// times the window's rate, so the packets of a burst leave as far apart
    /// as weight one's do instead of `1 / n` times as far: what a split pair
    /// takes at a full drop-tail queue depends on its gap in the
    /// bottleneck's service times, not in the connection's own mean gap. In
    /// the testbed against 4 Linux CUBIC flows PA-MulTCP at N = 0.5 took
    /// 1.13 of half its control with the same multiple as weight one (12),
    /// 1.09 with 18 and 1.00 with 24 (5 seeds each), and with this rule
    /// 0.99 (16 seeds; testbed/README.md, "Splitting the bursts"). Above one
    /// flowshare the pairs stay as close as the multiple makes them: spaced
    /// as weight one's there too, N = 4 took 1.48 times its control against
    /// the same peers, with the multiple of weight one 1.09 (a 10 µs pacing
    /// slack, 4-5 seeds; "Pairs closer than the slack").
    pub fn set_weight(&mut self, n: f64) {
        self.random_share = match self.pacing {
            Pacing::Flows if n > 1.0 => 1.0 - 1.0 / n,
            _ => 0.0,
        };
        self.split_weight = if self.pacing == Pacing::Split { n.min(1.0) } else { 1.0 };
        if self.random_share == 0.0 {
            self.factor = 1.0;
        }
    }

    /// Packet `number` was sent: draws the gap that follows it.
    pub fn on_sent(&mut self, number: u64) {
        if self.random_share > 0.0 {
            let exponential = -(1.0 - draw(number ^ GAP_SALT)).ln();
            self.factor = 1.0 - self.random_share + self.random_share * exponential;
        }
    }

    /// The pacing rate that spaces the next packet: `rate` times the gain
    /// over the gap's multiple (never zero where `rate` is not); none with
    /// `pacing=off`.
    pub fn rate(&self, rate: u64) -> Option<u64> {
        if self.pacing == Pacing::Off {
            None
        } else if self.factor == 1.0 || rate == 0 {
            self.mean(rate)
        } else {
            Some(((self.scaled(rate) / self.factor) as u64).max(1))
        }
    }

    /// The mean pacing rate for snapshots: what [`Gaps::rate`] gives the
    /// pacer on average, `rate` times the gain (over the weight below one
    /// flowshare with `pacing=split`); none with `pacing=off`.
    pub fn mean(&self, rate: u64) -> Option<u64> {
        (self.pacing != Pacing::Off).then_some(self.scaled(rate) as u64)
    }

    /// `rate` times the gain, over the weight below one flowshare with
    /// `pacing=split`: the pacer's mean rate, before a gap's multiple.
    fn scaled(&self, rate: u64) -> f64 {
        rate as f64 * self.gain / self.split_weight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gaps after packets 0..count, as multiples of the even gap.
    fn gaps(pacing: Pacing, n: f64, count: u64) -> Vec<f64> {
        let mut gaps = Gaps::new(pacing, n);
        (0..count)
            .map(|number| {
                gaps.on_sent(number);
                1e6 / gaps.rate(1_000_000).unwrap() as f64
            })
            .collect()
    }

    #[test]
    fn flows_keep_the_mean_rate_and_vary_the_gaps_more_the_more_flows() {
        let spread = |gaps: &[f64]| {
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let sd = (gaps.iter().map(|gap| (gap - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
            (mean, sd / mean)
        };
        let (mean, cov) = spread(&gaps(Pacing::Flows, 30.0, 100_000));
        assert!((mean - 1.0).abs() < 0.01 && (cov - 29.0 / 30.0).abs() < 0.03, "mean {mean}, cov {cov}");
        let (mean, cov) = spread(&gaps(Pacing::Flows, 2.0, 100_000));
        assert!((mean - 1.0).abs() < 0.01 && (cov - 0.5).abs() < 0.02, "mean {mean}, cov {cov}");
        // No gap is shorter than an even one over N.
        assert!(gaps(Pacing::Flows, 8.0, 10_000).iter().all(|&gap| gap >= 1.0 / 8.0 - 1e-6));
    }

    #[test]
    fn one_flow_and_even_pacing_keep_every_gap() {
        assert!(gaps(Pacing::Flows, 1.0, 1_000).iter().all(|&gap| gap == 1.0));
        assert!(gaps(Pacing::Flows, 0.5, 1_000).iter().all(|&gap| gap == 1.0));
        assert!(gaps(Pacing::Even, 30.0, 1_000).iter().all(|&gap| gap == 1.0));
        let mut gaps = Gaps::new(Pacing::Flows, 8.0);
        gaps.on_sent(3);
        assert_ne!(gaps.rate(1_000_000), Some(1_000_000));
        gaps.set_weight(1.0);
        assert_eq!(gaps.rate(1_000_000), Some(1_000_000));
    }

    #[test]
    fn off_reports_no_rate_at_any_weight() {
        for n in [0.5, 1.0, 8.0] {
            let mut gaps = Gaps::new(Pacing::Off, n);
            gaps.on_sent(3);
            assert_eq!(gaps.rate(1_000_000), None);
            assert_eq!(gaps.mean(1_000_000), None);
        }
        assert_eq!(Gaps::new(Pacing::Flows, 8.0).mean(1_000_000), Some(1_000_000));
    }

    #[test]
    fn split_gives_the_pacer_a_multiple_of_the_rate_and_below_one_flowshare_weight_ones_gap() {
        for n in [1.0, 8.0] {
            let mut gaps = Gaps::new(Pacing::Split, n);
            gaps.on_sent(3);
            assert_eq!(gaps.rate(1_000_000), Some((SPLIT_GAIN * 1e6) as u64));
            assert_eq!(gaps.mean(1_000_000), gaps.rate(1_000_000));
        }
        // Half a flowshare sends at half weight one's rate: twice the multiple
        // keeps a burst's packets as far apart as weight one's.
        let mut gaps = Gaps::new(Pacing::Split, 0.5);
        gaps.on_sent(3);
        assert_eq!(gaps.rate(500_000), Some((SPLIT_GAIN * 1e6) as u64));
        assert_eq!(gaps.mean(500_000), gaps.rate(500_000));
        gaps.set_weight(0.25);
        assert_eq!(gaps.rate(250_000), Some((SPLIT_GAIN * 1e6) as u64));
        gaps.set_weight(2.0);
        assert_eq!(gaps.rate(1_000_000), Some((SPLIT_GAIN * 1e6) as u64));
        // Other pacings keep the rate below one flowshare.
        assert_eq!(Gaps::new(Pacing::Even, 0.5).rate(500_000), Some(500_000));
        let gaps = Gaps::new(Pacing::Split, 4.0).with_split_gain(2.0);
        assert_eq!(gaps.rate(1_000_000), Some(2_000_000));
        assert!(Pacing::Split.ack_clocked() && Pacing::Off.ack_clocked() && !Pacing::Flows.ack_clocked());
    }
}
