//! Below one flowshare: a sender whose packets are a fraction `n < 1` of a
//! full flow's sees more loss events per packet than the full flow does.
//!
//! An overflow that drops several of a full flow's packets is one loss
//! event for it; a sender holding a random `n` of those packets misses the
//! event only if it loses none of them, so it sees more than `n` of the
//! full flow's events while sending `n` of its packets: `R` times the full
//! flow's loss event rate per packet, 1 when every event loses one packet,
//! towards `1/n` when events lose many ([`crate::equations::thinning_ratio`]).
//! Response functions that make a window worth `n` flowshares at the full
//! flow's loss event rate (MulTCP's AIMD(n², 1/2), MulCUBIC's `n⁴ C` and
//! `n² α`) then give it less than `n` wherever overflows drop several
//! packets at once, as at a drop-tail queue. In the lab scorecard (small
//! paths, drop-tail, 2026-11-25) MulTCP(0.5) saw a loss event rate 1.47
//! times its Reno peers' and took 0.84 of its share; PA-MulTCP and
//! MulCUBIC, whose probe or window is a CUBIC window at n below one,
//! 0.85-0.90.
//!
//! With `thinning=undo` (the default) the window controllers count the
//! packets each of their loss events loses, `j`, averaged over the last
//! eight events with TFRC's weights ([`LossesPerEvent`]; PA-MulTCP's probe
//! takes the same mean from its loss intervals), find `R` from `j`, and
//! grow so that at their own loss event rate they are worth `n` full flows
//! at theirs: AIMD(n² R, 1/2) for a Reno window (its share goes with
//! `sqrt(a / p)`), `R α` and `R³ C` for a CUBIC one (`sqrt(α / p)` in the
//! Reno-friendly region, `C^(1/4) p^(-3/4)` in the cubic one). MulTFRC
//! undoes the same thinning in its equation's loss event rate
//! ([`crate::equations::full_flow_loss_event_rate`]) with a model that
//! takes a fixed number of losses per full-flow event; it gives a larger
//! `R` for the same `j`, and the windows with it overshot (1.02-1.19 of
//! their share at N = 0.5 on the small paths, 4 seeds), where MulTFRC(0.5)
//! still falls a little short (0.80-0.97).

use crate::aimd::Aimd;
use crate::equations::cubic_flow_params;
use crate::equations::thinning_ratio;
use crate::equations::yielding_cubic_flow_params;
use crate::equations::yielding_decrease;
use crate::equations::CubicParams;
use crate::grammar::choice_name;
use crate::loss_intervals::weighted_mean;
use crate::loss_intervals::INTERVALS;
use crate::pacing::Pacing;

/// Which loss event rate a sender below one flowshare (n < 1) answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Thinning {
    /// The full flow's (default): the sender's packets are a fraction n of
    /// a full flow's, which sees fewer loss events per packet than the
    /// sender does when an event loses several packets (module docs).
    Undo,
    /// The sender's own, as the papers' response functions assume
    /// (`thinning=paper`).
    Paper,
}

/// The values of the `thinning` key.
pub const THINNINGS: [(&str, Thinning); 2] = [("undo", Thinning::Undo), ("paper", Thinning::Paper)];

impl Thinning {
    /// The key's text, for specs.
    pub fn name(self) -> &'static str {
        choice_name(&THINNINGS, self)
    }

    /// How many times the full flow's loss event rate a window of `n`
    /// flowshares answers when its loss events lose `losses_per_event`
    /// packets: [`thinning_ratio`] with `Undo` (1 at `n >= 1`), 1 with
    /// `Paper`.
    pub fn ratio(self, n: f64, losses_per_event: f64) -> f64 {
        match self {
            Thinning::Undo => thinning_ratio(n, losses_per_event),
            Thinning::Paper => 1.0,
        }
    }
}

/// How a window below one flowshare (n < 1) gives up the rest of a flow's
/// share: by growing more slowly or by cutting deeper. Both are worth `n`
/// flowshares where every packet is as likely to be dropped as any other.
/// At a full drop-tail queue they are not, and which packets it drops
/// depends on how the connection spaces them ([`YieldBy::default_for`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YieldBy {
    /// The papers': the flow's decrease, `n²` times its increase (MulTCP's
    /// AIMD(n², 1/2), MulCUBIC's `n² α` and `n⁴ C`) (`yield_by=increase`;
    /// the default of a connection that paces).
    Increase,
    /// A deeper decrease and `n` times the increase
    /// ([`yielding_decrease`], at most 80 % of the window per loss event,
    /// below which the increase falls further) (`yield_by=decrease`; the
    /// default of a connection whose acknowledgements clock its packets).
    Decrease,
}

/// The values of the `yield_by` key.
pub const YIELD_BYS: [(&str, YieldBy); 2] = [("increase", YieldBy::Increase), ("decrease", YieldBy::Decrease)];

impl YieldBy {
    /// The key's text, for specs.
    pub fn name(self) -> &'static str {
        choice_name(&YIELD_BYS, self)
    }

    /// The default of a window controller that spaces its packets as
    /// `pacing` says; every window controller takes it from here.
    ///
    /// Unpaced (`pacing=off`, `split`), an acknowledgement releases a burst
    /// whose last packet, the one that grows the window, is the one a full
    /// drop-tail queue drops most (testbed/README.md, "Weight one between
    /// stacks"); a window that grows `n²` times as fast as a flow sends few
    /// of those, loses fewer packets than its peers and overshoots, where
    /// the deeper cut holds. Paced, the deeper cut loses more packets than
    /// its peers and falls short, where the papers' rule holds; likely
    /// because an overflow drops whoever sends into it, and a window that
    /// keeps its mean under a deeper cut peaks higher above it. The
    /// lab's small paths at N = 0.5 with both rules and both kinds of
    /// peers: lab/README.md, "Yielding by the cut".
    pub fn default_for(pacing: Pacing) -> YieldBy {
        if pacing.ack_clocked() {
            YieldBy::Decrease
        } else {
            YieldBy::Increase
        }
    }

    /// The AIMD pair of a Reno window worth `n <= 1` flowshares.
    pub fn reno_pair(self, n: f64) -> Aimd {
        let decrease = match self {
            YieldBy::Increase => Aimd::STANDARD.decrease,
            YieldBy::Decrease => yielding_decrease(n, Aimd::STANDARD.decrease),
        };
        Aimd { increase: Aimd::weighted_increase(n, decrease), decrease }
    }

    /// CUBIC's constants for a window worth `n < 1` flowshares
    /// ([`cubic_flow_params`] or [`yielding_cubic_flow_params`]); both give
    /// [`cubic_flow_params`] at `n >= 1`.
    pub fn cubic_params(self, n: f64) -> CubicParams {
        match self {
            YieldBy::Increase => cubic_flow_params(n),
            YieldBy::Decrease => yielding_cubic_flow_params(n),
        }
    }
}

/// The packets lost per loss event, over the last [`INTERVALS`] events with
/// TFRC's weights (RFC 5348 section 5.4), the most recent first and the
/// one in progress with its losses so far (the windows read the mean as an
/// event begins, when it has lost one). The event that ends slow start
/// counts as one loss, as in [`crate::loss_intervals`]: its losses are slow
/// start's overshoot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LossesPerEvent {
    /// Losses of the event in progress, then of the closed ones, most
    /// recent first; the first `len` are in use.
    events: [u32; INTERVALS],
    len: usize,
    /// Whether the event in progress ended slow start.
    slow_start_event: bool,
}

impl LossesPerEvent {
    /// A loss started an event; `ended_slow_start` when the window was in
    /// slow start until it.
    pub fn on_event(&mut self, ended_slow_start: bool) {
        self.events.rotate_right(1);
        self.events[0] = 1;
        self.len = (self.len + 1).min(INTERVALS);
        self.slow_start_event = ended_slow_start;
    }

    /// Another packet of the event in progress was lost.
    pub fn on_further_loss(&mut self) {
        if self.len > 0 && !self.slow_start_event {
            self.events[0] += 1;
        }
    }

    /// The weighted mean of the losses per event, 1 before any.
    pub fn mean(&self) -> f64 {
        weighted_mean(self.events[..self.len].iter().map(|&losses| losses as f64)).unwrap_or(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ways_of_yielding_are_worth_n_flowshares() {
        for n in [0.05, 0.3, 0.5, 0.9, 1.0] {
            let (slower, deeper) = (YieldBy::Increase.reno_pair(n), YieldBy::Decrease.reno_pair(n));
            for p in [1e-4, 1e-2] {
                let (a, b) = (slower.packets_per_rtt(p), deeper.packets_per_rtt(p));
                assert!(
                    ((a - b) / a).abs() < 1e-12 && (a / Aimd::STANDARD.packets_per_rtt(p) - n).abs() < 1e-12,
                    "n={n}"
                );
            }
            assert!(deeper.decrease >= slower.decrease && deeper.increase >= slower.increase, "n={n}");
        }
        assert_eq!(YieldBy::Decrease.reno_pair(1.0), Aimd::STANDARD);
        assert_eq!(YieldBy::Increase.cubic_params(0.5), cubic_flow_params(0.5));
        assert_eq!(YieldBy::Decrease.cubic_params(0.5), yielding_cubic_flow_params(0.5));
    }

    #[test]
    fn losses_are_averaged_per_event_with_tfrc_weights() {
        let mut losses = LossesPerEvent::default();
        assert_eq!(losses.mean(), 1.0);
        // Slow start's event loses five packets and counts one.
        losses.on_event(true);
        (0..4).for_each(|_| losses.on_further_loss());
        assert_eq!(losses.mean(), 1.0);
        // Then an event of 3 losses, and one that has lost 1 so far.
        losses.on_event(false);
        (0..2).for_each(|_| losses.on_further_loss());
        losses.on_event(false);
        assert!((losses.mean() - 5.0 / 3.0).abs() < 1e-12);
        // Only the last eight events count, weighted 1, 1, 1, 1, 0.8, 0.6,
        // 0.4, 0.2 from the most recent: four of two losses after four of one.
        for losses_in_event in [1, 1, 1, 1, 2, 2, 2, 2] {
            losses.on_event(false);
            (1..losses_in_event).for_each(|_| losses.on_further_loss());
        }
        assert!((losses.mean() - (4.0 * 2.0 + 2.0) / 6.0).abs() < 1e-12, "{}", losses.mean());
    }
}
