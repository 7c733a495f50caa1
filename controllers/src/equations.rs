//! Steady-state throughput equations: one TCP flow (Padhye et al., in the
//! form TFRC uses), n parallel TCP flows (MulTFRC), and CUBIC's window and
//! response functions with the constants that make one window worth N
//! CUBIC flows (RFC 9438, derived in [`crate::mulcubic`]).
//!
//! Both give a sending rate in **packets per second** as a function of the
//! loss event rate `p` for a path described by its round-trip time `R`, the
//! retransmission timeout `t_RTO` and `b`, the number of packets one TCP
//! acknowledgement covers. Multiply by the packet size `s` for bytes per
//! second. All times are in seconds.
//!
//! # One flow (RFC 5348 section 3.1)
//!
//! ```text
//! X = 1 / (R sqrt(2 b p / 3) + t_RTO (3 sqrt(3 b p / 8)) p (1 + 32 p^2))
//! ```
//!
//! # n flows (paper 004 section II, eqs. 17-25 and Algorithm 1)
//!
//! Damjanovic and Welzl repeat Padhye's derivation for n flows that share
//! one loss-event process: a loss event of the aggregate hits `j` of the n
//! flows. The extracted Algorithm 1 is garbled; reconstructed from the
//! equations it implements and cross-checked against the draft's version
//! of it (draft-irtf-iccrg-multfrc-01, as public implementations reproduce
//! it) and an ns-2 implementation of eqs. (17)-(25), it reads
//!
//! ```text
//! j_af = n (1 - ((n - 1) / n)^j)   for 1 < n < 13 (section III), else j
//! j_af = max(min(j_af, ceil(n)), 1)
//! a    = p b j_af (24 n^2 + p b j_af (n - 2 j_af)^2)
//! x    = (j_af p b (2 j_af - n) + sqrt(a)) / (6 n^2 p)          E[X], eq. (17)
//! z    = t_RTO (1 + 32 p^2) / (1 - p)                           E[Z^TO], eq. (23)
//! q    = min(2 j b z / (R (1 + 3 n / j) x^2), n z / (x R), n)   E[nTO], eq. (24)
//! B    = (1 - q / n) / (p x R) + q / (z (1 - p))                eq. (25)
//! ```
//!
//! * `x`, the mean number of rounds between two loss events of the
//!   aggregate, is the positive root of eq. (16), `3 n^2 p x^2 + (n - 2j)
//!   b j p x - 2 b j = 0`, whose discriminant is eq. (17)'s root term
//!   `p b j (24 n^2 + p b j (n - 2j)^2)`. The extraction's `p_e * b * a * f`
//!   there is `p_e * b * j_af`.
//! * `q`, the mean number of flows in a timeout, is eq. (24) with the mean
//!   aggregate window of eq. (14), `E[W] = (n x / 2b) (1 + 3n / j)`: the
//!   flows a loss event sends into timeout, `min(n j / E[W], n)`, times the
//!   rounds a timeout lasts, `z / (x R)`, at most all n flows. The
//!   extraction's `N` is n. Both the paper and the draft write the measured
//!   `j` (not `j_af`) in this term, and so does this module; the ns-2 code
//!   uses `j_af` in `E[W]` and the full `f(p)` below.
//! * `z` approximates the timeout polynomial `f(p) = 1 + p + 2p^2 + ... +
//!   32p^6` of eq. (23) by TFRC's `1 + 32 p^2`, as Algorithm 1 and the draft
//!   do; `z (1 - p) = t_RTO (1 + 32 p^2)` is what eq. (25) divides by, and
//!   is computed in that form so that `p = 1` gives `n / (33 t_RTO)` instead
//!   of infinity times zero.
//! * `j_af`, the number of flows a loss event hits, is where the sources
//!   differ. The paper clamps it to `[1, n]`; the draft and the ns-2 code
//!   to `[1, ceil(n)]`.
//!   They agree for integer n > 1 but not below 1: the paper's clamp gives
//!   `j_af = n` there, and since at small `p` the equation tends to `n /
//!   sqrt(j_af)` times TCP's `1 / (R sqrt(2bp/3))`, a flow with n = 0.5 would
//!   get `sqrt(0.5)` = 71% of a TCP flow instead of the 50% section III
//!   reports for MulTFRC. This module follows the draft.
//! * The estimate of flows hit for 1 < n < 13 assumes each of the `j` lost
//!   packets belongs to any of the n flows with probability `1/n` (section
//!   III). The bound 13 is the paper's and the ns-2 code's; a reproduction
//!   of the draft's pseudo-code writes `N < 12`. Above the bound every lost
//!   packet is taken
//!   to hit a different flow. For `j > 1` the rate therefore drops where the
//!   estimate switches off: n = 12.99 and n = 13 with `j = 2`, `R` = 0.1 s,
//!   `t_RTO` = 0.4 s, `p` = 0.01 give 1075.4 and 1059.0 packets/s.
//!
//! With `n = 1` and `j = 1` the equation is a second model of one TCP flow.
//! Its congestion avoidance term matches Padhye's to first order, but the
//! timeout terms are built differently, so the two part ways as `p` grows
//! (`t_RTO = 4R`, `b = 1`, computed by hand with the formulas above):
//!
//! | p | TCP, packets/s at R = 0.1 s | MulTFRC n = 1, j = 1 | difference |
//! |---|---|---|---|
//! | 0.0001 | 1223.64 | 1221.88 | -0.14% |
//! | 0.001 | 383.844 | 383.673 | -0.04% |
//! | 0.005 | 165.741 | 168.257 | +1.5% |
//! | 0.01 | 112.332 | 116.571 | +3.8% |
//! | 0.02 | 73.249 | 79.359 | +8.3% |
//! | 0.05 | 36.859 | 44.544 | +21% |
//! | 0.1 | 17.701 | 23.000 | +30% |
//! | 0.2 | 5.366 | 1.096 | -80% |
//! | 0.5 | 0.4174 | 0.2778 | -33% |
//! | 1 | 0.04110 | 0.07576 | +84% |
//!
//! The 5% agreement up to `p = 1%` holds for `t_RTO <= 4R` (TFRC's choice);
//! with `t_RTO = 8R` the difference at `p = 1%` is 9%.
//!
//! # Where the n-flow equation is monotone
//!
//! With `t_RTO = 4R` (how TFRC and the controllers call it) the rate is
//! exactly proportional to `1/R`, and for `n >= 0.01` it decreases with `p`
//! over all of `(0, 1]`. For smaller n it rises again as `p` nears 1, where
//! the modelled flows in timeout jump to all n: n = 0.001 at `R` = 0.1 s
//! gives 1.506e-5 packets/s at `p` = 0.999 and 7.58e-5 at `p` = 1.
//! With `t_RTO` held fixed it is *not* monotone in `R` everywhere: fewer
//! flows are modelled in timeout as `R` grows. It increases with n for
//! `j = 1` and `p <= 0.1`; for `j <= 3` it does so for `p <= 0.05` on either
//! side of the switch at n = 13 as long as `n >= 1`, and for `p <= 0.03`
//! below one flow. There `j_af` is clamped to 1 but the timeout term keeps
//! the measured `j`, so with several losses per event a fraction of a flow
//! is modelled in timeout more often as it grows: at `p` = 0.05, `j` = 2.77,
//! `t_RTO = 4R`, n = 0.5 gets 1.329/R packets/s and n = 0.9 only 1.232/R
//! (the limit lies between `p` = 0.035 and 0.04, found on a grid with
//! python3). Near the cliff where timeouts take over (`p` around 0.14 at
//! `t_RTO = 4R`), or when `j` is large compared with n, more flows can give a
//! lower rate.

use std::time::Duration;

use crate::aimd::Aimd;
use crate::grammar::Range;
use crate::grammar::MAX_WEIGHT;

/// Below this number of flows (and above 1) a loss event of `j` packets is
/// taken to hit `n (1 - ((n - 1)/n)^j)` flows (paper 004 section III).
pub const IMPROVED_FLOWS_HIT_BELOW: f64 = 13.0;

/// The smallest loss event rate [`MulTfrcEquation::loss_event_rate_for`]
/// returns: a loss interval of 10^12 packets, longer than any transfer.
pub const MIN_LOSS_EVENT_RATE: f64 = 1e-12;

/// The TCP throughput equation for one path (RFC 5348 section 3.1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpEquation {
    /// Round-trip time `R`, seconds; positive.
    pub rtt: f64,
    /// Retransmission timeout `t_RTO`, seconds; TFRC uses `4R`.
    pub rto: f64,
    /// Packets acknowledged by one TCP acknowledgement; TFRC uses 1.
    pub b: f64,
}

impl TcpEquation {
    /// The sending rate, packets per second, at loss event rate `p` in
    /// `(0, 1]`.
    pub fn packets_per_second(&self, p: f64) -> f64 {
        let TcpEquation { rtt, rto, b } = *self;
        let congestion_avoidance = rtt * (2.0 * b * p / 3.0).sqrt();
        let timeouts = rto * (3.0 * (3.0 * b * p / 8.0).sqrt()) * p * (1.0 + 32.0 * p * p);
        1.0 / (congestion_avoidance + timeouts)
    }
}

/// The throughput equation of n parallel TCP flows for one path (paper 004
/// eqs. 17-25, Algorithm 1 as reconstructed in the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MulTfrcEquation {
    /// Number of flows `n`, any positive real.
    pub n: f64,
    /// Round-trip time `R`, seconds; positive.
    pub rtt: f64,
    /// Retransmission timeout `t_RTO`, seconds; TFRC uses `4R`.
    pub rto: f64,
    /// Packets acknowledged by one TCP acknowledgement; TFRC uses 1.
    pub b: f64,
    /// `j`: packets lost per loss event, at least 1.
    pub losses_per_event: f64,
    /// The number of flows below which a loss event of `j` packets is
    /// taken to hit `n (1 - ((n - 1)/n)^j)` of them, and at or above which
    /// `j` (see [`flows_hit_per_loss_event`]): paper 004's
    /// [`IMPROVED_FLOWS_HIT_BELOW`], or infinity for the estimate at every n.
    pub flows_hit_below: f64,
}

impl MulTfrcEquation {
    /// The sending rate of the n flows together, packets per second, at loss
    /// event rate `p` in `(0, 1]`.
    pub fn packets_per_second(&self, p: f64) -> f64 {
        let MulTfrcEquation { n, rtt, rto, b, losses_per_event: j, flows_hit_below } = *self;
        let j_af = flows_hit_per_loss_event(n, j, flows_hit_below);
        let a = p * b * j_af * (24.0 * n * n + p * b * j_af * (n - 2.0 * j_af).powi(2));
        let x = (j_af * p * b * (2.0 * j_af - n) + a.sqrt()) / (6.0 * n * n * p);
        let timeout_round = rto * (1.0 + 32.0 * p * p);
        let z = timeout_round / (1.0 - p);
        let q = (2.0 * j * b * z / (rtt * (1.0 + 3.0 * n / j) * x * x)).min(n * z / (x * rtt)).min(n);
        (1.0 - q / n) / (p * x * rtt) + q / timeout_round
    }

    /// The loss event rate at which the equation gives `packets_per_second`
    /// (to within the precision of f64), clamped to
    /// `[MIN_LOSS_EVENT_RATE, 1]`. TFRC finds the first loss interval this
    /// way from the rate the flow achieved (RFC 5348 section 6.3.1).
    ///
    /// The rate decreases with `p` for `t_RTO >= 1.5R` and `n >= 0.01`;
    /// elsewhere this returns one of the loss event rates where the equation
    /// crosses the target, or 1.
    pub fn loss_event_rate_for(&self, packets_per_second: f64) -> f64 {
        if self.packets_per_second(1.0) >= packets_per_second {
            return 1.0;
        }
        if self.packets_per_second(MIN_LOSS_EVENT_RATE) <= packets_per_second {
            return MIN_LOSS_EVENT_RATE;
        }
        // Bisection on ln p: the rate at `low` is above the target, at
        // `high` below it. 64 halvings of 12 decades leave the interval
        // narrower than an f64 can tell apart.
        let (mut low, mut high) = (MIN_LOSS_EVENT_RATE.ln(), 0.0f64);
        for _ in 0..64 {
            let middle = 0.5 * (low + high);
            if self.packets_per_second(middle.exp()) > packets_per_second {
                low = middle;
            } else {
                high = middle;
            }
        }
        high.exp()
    }
}

/// The number of flows a loss event of `j` lost packets hits among `n`:
/// `n (1 - ((n - 1)/n)^j)` for `1 < n < below` (paper 004 section III uses
/// `below` = 13), `j` otherwise, and always within `[1, ceil(n)]` (the
/// draft's clamp; see the [module docs](self)).
pub fn flows_hit_per_loss_event(n: f64, j: f64, below: f64) -> f64 {
    let estimate = if n < below { flows_hit(n, j) } else { j };
    estimate.min(n.ceil()).max(1.0)
}

/// Below one flowshare (`0 < n < 1`): the loss event rate of the full flow
/// whose packets this sender's are a fraction `n` of, where the sender sees
/// loss event rate `p` with `j` lost packets per event.
///
/// A full flow's loss event that loses `K` packets reaches a sender holding
/// a random `n` of its packets with probability `1 - (1 - n)^K`, and then
/// with `n K / (1 - (1 - n)^K)` losses on average; per packet sent the
/// sender therefore sees `(1 - (1 - n)^K) / n` times the full flow's loss
/// event rate, more the more packets an event loses. `K` is found from the
/// sender's own `j` (`K = 1` for `j <= 1`: no correction). The lab's
/// MulTFRC(0.5) against Reno saw `p` = 0.0033 with `j` = 1.24, which this
/// turns into 0.0023, the loss event rate MulTFRC(1) saw on the same path.
pub fn full_flow_loss_event_rate(n: f64, p: f64, j: f64) -> f64 {
    if !(n > 0.0 && n < 1.0) || j <= 1.0 {
        return p;
    }
    let miss = 1.0 - n;
    // Losses per event the sender sees when the full flow's lose `k`:
    // 1 at k = 1, growing without bound.
    let seen = |k: f64| n * k / (1.0 - miss.powf(k));
    let k = solve_increasing(seen, j, 1.0, 2.0);
    p * n / (1.0 - miss.powf(k))
}

/// Below one flowshare (`0 < n < 1`): the loss event rate a sender answers
/// once it allows for a full drop-tail queue dropping its thin paced stream
/// more often per packet than the full flow's: `p n^exponent`, where `p`
/// is the full flow's rate as [`full_flow_loss_event_rate`] finds it.
///
/// [`full_flow_loss_event_rate`] takes the sender's packets for a random
/// fraction `n` of the full flow's, each as likely to be dropped. At a
/// full drop-tail queue among ack-clocked peers they are not: in the lab,
/// on the testbed's path (20 Mbit/s, 40 ms, 1 BDP, 4 unpaced Reno peers),
/// MulTFRC lost 0.61 of its peers' share of packets at weight one, 0.69 at
/// n = 0.75, 0.77 at 0.5, 0.98 at 0.35 and 1.13 at 0.25, about `n^-0.4`,
/// and took 0.98, 0.935, 0.85 and 0.72 of n times its control; at RED,
/// which drops every packet alike, it lost what its peers did and held.
/// The exponent is measured, not derived: 0.2 brings those drop-tail cells
/// to 0.98-1.02 (lab/README.md, "The scavenger's crowding, and
/// `thin_exponent`"). 0 (or `n >= 1`) leaves `p` as it is.
pub fn crowded_loss_event_rate(n: f64, p: f64, exponent: f64) -> f64 {
    if !(n > 0.0 && n < 1.0) {
        return p;
    }
    p * n.powf(exponent)
}

/// Below one flowshare (`0 < n < 1`): how many times the full flow's loss
/// event rate a window holding a random fraction `n` of its packets sees,
/// when the window's loss events lose `j` packets each on average
/// ([`crate::thinning`]).
///
/// The packets a full flow's loss event loses are taken as Poisson with
/// mean `λ`: the event reaches the sender with probability `1 - e^(-nλ)`
/// (the full flow itself: `1 - e^(-λ)`) and then with `nλ / (1 - e^(-nλ))`
/// losses on average, which `j` inverts. Per packet sent the sender sees
/// `R = (1 - e^(-nλ)) / (n (1 - e^(-λ)))` times the full flow's loss event
/// rate: 1 for `j <= 1` (single losses thin evenly) and for `n >= 1`,
/// towards `1/n` as events lose more. (MulTFRC's equation takes a fixed
/// `K` instead, [`full_flow_loss_event_rate`], which gives a larger ratio
/// for the same `j`: the lab's window controllers then overshot at N =
/// 0.5, 1.02-1.19 of their share on small drop-tail paths, where this
/// model gives 0.93-1.05.)
pub fn thinning_ratio(n: f64, j: f64) -> f64 {
    if !(n > 0.0 && n < 1.0) || j <= 1.0 {
        return 1.0;
    }
    // Losses per event the sender sees when it holds `x = nλ` on average:
    // 1 as x tends to 0, growing without bound.
    let seen = |x: f64| x / (1.0 - (-x).exp());
    let x = solve_increasing(seen, j, 0.0, 1.0);
    (1.0 - (-x).exp()) / (n * (1.0 - (-x / n).exp()))
}

/// Where the increasing function `f` reaches `target` above `low`, by
/// bisection: the upper end starts at `high` and doubles until `f` passes
/// the target (or reaches 10⁹).
fn solve_increasing(f: impl Fn(f64) -> f64, target: f64, mut low: f64, mut high: f64) -> f64 {
    while f(high) < target && high < 1e9 {
        high *= 2.0;
    }
    for _ in 0..100 {
        let middle = 0.5 * (low + high);
        if f(middle) < target {
            low = middle;
        } else {
            high = middle;
        }
    }
    0.5 * (low + high)
}

/// The expected number of `n` equal flows that `k` lost packets hit when
/// each packet belongs to any flow with probability `1/n`:
/// `n (1 - ((n - 1)/n)^k)` (paper 004 section III), at least 1 and at most
/// `n`; 1 for `n <= 1` (one flow, or less than one). `k = 1` gives 1, and
/// as `k` grows it tends to `n`.
pub fn flows_hit(n: f64, k: f64) -> f64 {
    if n <= 1.0 {
        return 1.0;
    }
    (n * (1.0 - ((n - 1.0) / n).powf(k))).clamp(1.0, n)
}

// ---------------------------------------------------------------------------
// CUBIC (RFC 9438): the window function, its response function, and the
// constants that make one window worth N flows. Derived in the docs of
// [`crate::mulcubic`].

/// The constants of CUBIC.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicParams {
    /// `C`, segments per second³ (RFC 9438: 0.4).
    pub c: f64,
    /// `β_cubic`, the window kept on a loss event (RFC 9438: 0.7).
    pub beta: f64,
    /// `α_cubic`, the Reno-friendly increase in segments per RTT below W_max
    /// (RFC 9438: 3 (1 - β) / (1 + β)).
    pub alpha: f64,
    /// The Reno-friendly increase above W_max (RFC 9438: 1).
    pub alpha_above_w_max: f64,
    /// Whether fast convergence releases bandwidth to newer flows.
    pub fast_convergence: bool,
}

impl CubicParams {
    /// RFC 9438's constants.
    pub const STANDARD: CubicParams = CubicParams {
        c: 0.4,
        beta: 0.7,
        alpha: 3.0 * (1.0 - 0.7) / (1.0 + 0.7),
        alpha_above_w_max: 1.0,
        fast_convergence: true,
    };

    /// `W_cubic(t)` in segments for a given `W_max` and `K`.
    pub fn w_cubic(&self, t: f64, k: f64, w_max: f64) -> f64 {
        self.c * (t - k).powi(3) + w_max
    }

    /// `K`, seconds until `W_cubic` returns from `cwnd_epoch` to `W_max`.
    pub fn k(&self, w_max: f64, cwnd_epoch: f64) -> f64 {
        ((w_max - cwnd_epoch).max(0.0) / self.c).cbrt()
    }
}

/// The number of flowshares a CUBIC-based weighted controller accepts:
/// `[0.01, MAX_WEIGHT]` (see [`crate::mulcubic`] for the lower bound).
pub const CUBIC_WEIGHT: Range = Range::closed(0.01, MAX_WEIGHT);

/// CUBIC's constants for `n` flows in one window ([`crate::mulcubic`]): for n >= 1
/// `β_N = (N - 1 + β)/N`, `C_N = N³ C (3 + β)/(3 + β_N)`, `α_N = 3N²(1 -
/// β_N)/(1 + β_N)` and N above `W_max`; below, β, `N⁴ C`, `N² α` and N².
pub fn cubic_flow_params(n: f64) -> CubicParams {
    let one = CubicParams::STANDARD;
    let (c, beta, alpha_above_w_max) = if n >= 1.0 {
        let beta = (n - 1.0 + one.beta) / n;
        (n * n * n * one.c * ((3.0 + one.beta) / (3.0 + beta)), beta, n)
    } else {
        (n * n * n * n * one.c, one.beta, n * n)
    };
    CubicParams {
        c,
        beta,
        alpha: 3.0 * n * n * (1.0 - beta) / (1.0 + beta),
        alpha_above_w_max,
        fast_convergence: one.fast_convergence,
    }
}

/// The largest share of its window a window below one flowshare gives up
/// at a loss event when it yields by its decrease (`yield_by=decrease`,
/// [`crate::thinning::YieldBy`]).
pub const DEEPEST_DECREASE: f64 = 0.8;

/// The decrease of a window of `n < 1` flowshares that yields by its
/// decrease as much as it can: an AIMD window of increase `a` and decrease
/// `b` is worth `sqrt(a (2 - b) / b)`, so growing `n` times as fast as a
/// flow of decrease `b` (where the papers grow `n²` times as fast) it must
/// keep `(2 - b') / b' = n (2 - b) / b`, `b' = 2 / (1 + n (2 - b) / b)`, at
/// most [`DEEPEST_DECREASE`]; `b` itself at `n >= 1`.
pub fn yielding_decrease(n: f64, b: f64) -> f64 {
    if n >= 1.0 {
        return b;
    }
    (2.0 / (1.0 + n * (2.0 - b) / b)).min(DEEPEST_DECREASE).max(b)
}

/// CUBIC's constants for `n < 1` flowshares that yield by a deeper cut
/// ([`yielding_decrease`] of `1 - β`) rather than by slower growth: `β'`,
/// `α' = 3 n² (1 - β') / (1 + β')` (RFC 9438's Reno-friendly rule for
/// `n²` flows' share, as in [`cubic_flow_params`]; eq. (5)'s
/// [`Aimd::weighted_increase`] with `b = 1 - β'`), `C'` such that
/// `C' (3 + β') / (1 - β') = n⁴ C (3 + β) / (1 - β)` (the cubic region's
/// average window goes with the fourth root of that), and the growth above
/// `W_max` scaled as `α'`. Unchanged at `n >= 1`.
pub fn yielding_cubic_flow_params(n: f64) -> CubicParams {
    if n >= 1.0 {
        return cubic_flow_params(n);
    }
    let one = CubicParams::STANDARD;
    let decrease = yielding_decrease(n, 1.0 - one.beta);
    let beta = 1.0 - decrease;
    let alpha = Aimd::weighted_increase(n, decrease);
    CubicParams {
        c: n.powi(4) * one.c * (3.0 + one.beta) * (1.0 - beta) / ((1.0 - one.beta) * (3.0 + beta)),
        beta,
        alpha,
        alpha_above_w_max: one.alpha_above_w_max * alpha / one.alpha,
        fast_convergence: one.fast_convergence,
    }
}

/// `params`, the constants of a window of `n < 1` flowshares
/// ([`cubic_flow_params`] or [`yielding_cubic_flow_params`]), at a sender
/// that sees `ratio` times the full flow's loss event rate
/// ([`thinning_ratio`]): the Reno-friendly `α` (and the growth above
/// `W_max`) times `ratio`, whose share goes with `sqrt(α / p)`, and `C`
/// times `ratio³`, whose share goes with `C^(1/4) p^(-3/4)`. `ratio = 1`
/// leaves them as they are; at one flowshare or more nothing is thinned.
pub fn thin_cubic_params(params: CubicParams, n: f64, ratio: f64) -> CubicParams {
    if n >= 1.0 {
        return params;
    }
    CubicParams {
        c: params.c * ratio.powi(3),
        alpha: params.alpha * ratio,
        alpha_above_w_max: params.alpha_above_w_max * ratio,
        ..params
    }
}

/// The average window, segments, of CUBIC with constants `params` at loss
/// event rate `p` and RTT `rtt`: the larger of RFC 9438's `AVG_W_cubic` and
/// the Reno-friendly AIMD(α, 1 - β) average ([`crate::mulcubic`]).
pub fn cubic_average_window(params: &CubicParams, loss_event_rate: f64, rtt: Duration) -> f64 {
    let CubicParams { c, beta, alpha, .. } = *params;
    let p = loss_event_rate;
    let cubic = (c * (3.0 + beta) / (4.0 * (1.0 - beta))).powf(0.25) * (rtt.as_secs_f64() / p).powf(0.75);
    let reno_friendly = (1.0 + beta) / 2.0 * (2.0 * alpha / ((1.0 - beta) * (1.0 + beta) * p)).sqrt();
    cubic.max(reno_friendly)
}

/// The loss event rate at which CUBIC with constants `params` ends its
/// epochs at `window` segments with RTT `rtt`: the larger of the cubic and
/// the Reno-friendly inverses ([`crate::mulcubic`]).
pub fn cubic_loss_event_rate_at_epoch_window(params: &CubicParams, window: f64, rtt: Duration) -> f64 {
    let CubicParams { c, beta, alpha, .. } = *params;
    let cubic = 4.0 * rtt.as_secs_f64() / (3.0 + beta) * (c / (1.0 - beta)).cbrt() / window.powf(4.0 / 3.0);
    let reno_friendly = 2.0 * alpha / ((1.0 - beta) * (1.0 + beta) * window * window);
    cubic.max(reno_friendly)
}

/// How many Reno flowshares one CUBIC flow is worth at loss event rate `p`
/// and RTT `rtt`: `R = W̄_c / sqrt(3 / (2p)) >= 1`.
pub fn cubic_reno_flowshares(loss_event_rate: f64, rtt: Duration) -> f64 {
    let cubic = cubic_average_window(&CubicParams::STANDARD, loss_event_rate, rtt);
    (cubic / Aimd::STANDARD.packets_per_rtt(loss_event_rate)).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Relative difference.
    fn relative(actual: f64, expected: f64) -> f64 {
        ((actual - expected) / expected).abs()
    }

    fn multfrc(n: f64, rtt: f64, b: f64, p: f64, j: f64, rto: f64) -> f64 {
        MulTfrcEquation { n, rtt, rto, b, losses_per_event: j, flows_hit_below: IMPROVED_FLOWS_HIT_BELOW }
            .packets_per_second(p)
    }

    #[test]
    fn yielding_by_the_decrease_keeps_the_response_function() {
        // Reno: (2 - b') / b' = n (2 - b) / b, at most 80 % per event.
        assert_eq!(yielding_decrease(1.0, 0.5), 0.5);
        assert!(relative(yielding_decrease(0.5, 0.5), 0.8) < 1e-12);
        assert_eq!(yielding_decrease(0.1, 0.5), DEEPEST_DECREASE);
        assert!(relative(yielding_decrease(0.5, 0.3), 1.0 - 0.478_260_869_565_217_4) < 1e-12);
        assert_eq!(yielding_cubic_flow_params(2.0), cubic_flow_params(2.0));
        let rtt = Duration::from_millis(70);
        for n in [0.05, 0.2, 0.5, 0.8, 0.99] {
            let (paper, deeper) = (cubic_flow_params(n), yielding_cubic_flow_params(n));
            assert!(deeper.beta < paper.beta && deeper.beta >= 1.0 - DEEPEST_DECREASE - 1e-12, "n={n} {deeper:?}");
            assert!(deeper.alpha > paper.alpha, "n={n}");
            // Worth the same n flowshares in both of CUBIC's regions.
            for p in [1e-6, 1e-4, 1e-3, 1e-2, 0.1] {
                let (a, b) = (cubic_average_window(&paper, p, rtt), cubic_average_window(&deeper, p, rtt));
                assert!(relative(b, a) < 1e-9, "n={n} p={p}: {a} {b}");
            }
        }
    }

    #[test]
    fn tcp_equation_matches_rfc5348_by_hand() {
        // R = 0.1, p = 0.01, b = 1, t_RTO = 0.4:
        // R sqrt(2/300) = 0.1 * 0.0816497 = 0.00816497;
        // 0.4 * 3 sqrt(3/800) * 0.01 * 1.0032 = 0.4 * 0.183712 * 0.010032 = 0.000737200;
        // 1 / 0.00890217 = 112.332 packets/s.
        let rate = TcpEquation { rtt: 0.1, rto: 0.4, b: 1.0 }.packets_per_second(0.01);
        assert!(relative(rate, 112.332_234_362_993) < 1e-9, "{rate}");
    }

    #[test]
    fn a_crowded_scavenger_answers_a_lower_loss_event_rate_and_a_flow_its_own() {
        // 0.5^0.2 = 0.870 55..: the rate then rises by about 0.5^-0.1 = 1.072.
        assert!(relative(crowded_loss_event_rate(0.5, 0.01, 0.2), 0.01 * 0.870_550_563_296_124) < 1e-12);
        assert!(crowded_loss_event_rate(0.25, 0.01, 0.2) < crowded_loss_event_rate(0.5, 0.01, 0.2));
        for (n, exponent) in [(0.5, 0.0), (1.0, 0.2), (4.0, 0.2)] {
            assert_eq!(crowded_loss_event_rate(n, 0.01, exponent), 0.01, "n={n} exponent={exponent}");
        }
    }

    #[test]
    fn a_fraction_of_a_flow_sees_the_full_flows_loss_event_rate_once_thinning_is_undone() {
        // A full flow losing K = 2 packets per event; a sender with half
        // its packets is hit by 3/4 of the events, with 2/3 losses each...
        let (n, k) = (0.5, 2.0);
        let hit = 1.0 - (1.0f64 - n).powf(k);
        let j = n * k / hit;
        assert!(relative(j, 4.0 / 3.0) < 1e-12, "{j}");
        // ... and per packet sees hit / n = 1.5 times the full flow's rate.
        let full = 0.002;
        let seen = full * hit / n;
        assert!(relative(full_flow_loss_event_rate(n, seen, j), full) < 1e-9);
        // One loss per event, a full flow or more: nothing to undo.
        assert_eq!(full_flow_loss_event_rate(0.5, 0.01, 1.0), 0.01);
        assert_eq!(full_flow_loss_event_rate(1.0, 0.01, 3.0), 0.01);
        assert_eq!(full_flow_loss_event_rate(4.0, 0.01, 3.0), 0.01);
        // The smaller the fraction, the larger the correction for the same j.
        assert!(full_flow_loss_event_rate(0.1, 0.01, 1.2) < full_flow_loss_event_rate(0.5, 0.01, 1.2));
    }

    #[test]
    fn multfrc_matches_algorithm_1_step_by_step() {
        // n = 1, j = 1, b = 1, p = 0.01, R = 0.1, t_RTO = 0.4, by hand:
        // j_af = 1; a = 0.01 (24 + 0.01) = 0.2401; sqrt(a) = 0.49;
        // x = (0.01 + 0.49) / 0.06 = 8.3333; z = 0.4 * 1.0032 / 0.99 = 0.405333;
        // q = min(2 * 0.405333 / (0.1 * 4 * 69.4444), 0.405333 / 0.833333, 1)
        //   = min(0.0291840, 0.486400, 1) = 0.0291840;
        // B = 0.970816 / (0.01 * 8.3333 * 0.1) + 0.0291840 / 0.40128 = 116.4979 + 0.0727 = 116.5706
        // (116.570647 in float64).
        let rate = multfrc(1.0, 0.1, 1.0, 0.01, 1.0, 0.4);
        assert!(relative(rate, 116.570_647_272_727) < 1e-9, "{rate}");
    }

    /// Inputs `(n, R, b, p, j, t_RTO)` and the rate in packets/s, computed
    /// independently with python3 from the formulas in the module docs
    /// (`/tmp/multfrc/eq.py` during development, not part of the build):
    /// `j_af` from `flows_hit`, then `a, x, z, q, B` in float64.
    const MULTFRC_TABLE: [(f64, f64, f64, f64, f64, f64, f64); 14] = [
        (1.0, 0.1, 1.0, 0.01, 1.0, 0.4, 116.570_647_272_727),
        (4.0, 0.1, 1.0, 0.01, 1.0, 0.4, 476.404_493_586_909),
        (0.5, 0.1, 1.0, 0.01, 1.0, 0.4, 56.389_275_199_251_6),
        (0.1, 0.05, 1.0, 0.001, 1.0, 0.2, 68.490_828_482_998_0),
        (2.0, 0.02, 2.0, 0.0001, 1.5, 0.08, 7_604.857_638_577_11),
        (2.0, 0.1, 1.0, 0.05, 3.0, 0.4, 26.084_241_589_984_0),
        (12.0, 0.25, 1.0, 0.02, 2.0, 1.0, 257.329_678_138_989),
        (13.0, 0.25, 1.0, 0.02, 2.0, 1.0, 275.179_592_506_183),
        (50.0, 0.1, 1.0, 0.005, 4.0, 0.4, 4_081.690_069_225_66),
        (256.0, 0.1, 1.0, 0.1, 10.0, 0.4, 484.848_484_848_485),
        (4.0, 0.1, 1.0, 0.3, 1.0, 0.4, 2.577_319_587_628_87),
        (4.0, 0.1, 1.0, 1.0, 1.0, 0.4, 0.303_030_303_030_303),
        (1.0, 0.1, 1.0, 0.01, 2.0, 1.0, 92.216_087_272_727_3),
        (2.5, 0.1, 1.0, 0.01, 5.0, 0.4, 148.837_702_256_432),
    ];

    #[test]
    fn multfrc_matches_independently_computed_table() {
        for (n, rtt, b, p, j, rto, expected) in MULTFRC_TABLE {
            let rate = multfrc(n, rtt, b, p, j, rto);
            assert!(relative(rate, expected) < 1e-9, "n={n} R={rtt} b={b} p={p} j={j} rto={rto}: {rate} vs {expected}");
        }
    }

    #[test]
    fn a_window_below_one_flowshare_sees_more_loss_events_the_more_an_event_loses() {
        // Single losses, or a full flow or more: nothing thinned.
        assert_eq!(thinning_ratio(0.5, 1.0), 1.0);
        assert_eq!(thinning_ratio(1.0, 3.0), 1.0);
        // The ratio inverts the model: events of x = nλ losses on average,
        // seen ones losing x / (1 - e^-x).
        let (n, lambda) = (0.5f64, 1.6f64);
        let x = n * lambda;
        let j = x / (1.0 - (-x).exp());
        let expected = (1.0 - (-x).exp()) / (n * (1.0 - (-lambda).exp()));
        assert!(relative(thinning_ratio(n, j), expected) < 1e-9, "{}", thinning_ratio(n, j));
        // Rising with j, never beyond 1/n.
        let ratios: Vec<f64> = [1.1, 1.5, 3.0, 30.0].iter().map(|&j| thinning_ratio(0.25, j)).collect();
        assert!(ratios.windows(2).all(|pair| pair[0] < pair[1]) && ratios[3] <= 4.0, "{ratios:?}");
    }

    #[test]
    fn one_flow_one_loss_stays_within_5_percent_of_tcp_up_to_p_1_percent() {
        // TFRC's t_RTO = 4R with b = 1 and b = 2, p from 10^-7 to 10^-2.
        for b in [1.0, 2.0] {
            for rtt in [0.001, 0.1, 2.0] {
                let tcp = TcpEquation { rtt, rto: 4.0 * rtt, b };
                for step in 0..=500 {
                    let p = 10f64.powf(-7.0 + 5.0 * step as f64 / 500.0);
                    let ratio = multfrc(1.0, rtt, b, p, 1.0, 4.0 * rtt) / tcp.packets_per_second(p);
                    assert!((ratio - 1.0).abs() < 0.05, "b={b} R={rtt} p={p}: ratio {ratio}");
                }
            }
        }
    }

    #[test]
    fn one_flow_parts_from_tcp_above_1_percent_as_documented() {
        // The module docs' table: +8.3% at p = 2%, +30% at 10%, -80% at 20%.
        let tcp = TcpEquation { rtt: 0.1, rto: 0.4, b: 1.0 };
        for (p, difference) in [(0.02, 0.083_407), (0.1, 0.299_362), (0.2, -0.795_645)] {
            let ratio = multfrc(1.0, 0.1, 1.0, p, 1.0, 0.4) / tcp.packets_per_second(p);
            assert!((ratio - 1.0 - difference).abs() < 1e-5, "p={p}: {ratio}");
        }
    }

    #[test]
    fn at_low_loss_n_flows_send_n_over_sqrt_flows_hit_times_one_tcp() {
        // Leading term of eq. (19) as p -> 0: n / (R sqrt(2 b j_af p / 3)).
        for (n, j) in [(4.0, 1.0), (0.5, 1.0), (2.0, 3.0), (20.0, 4.0)] {
            let p = 1e-9;
            let leading = 1.0 / (0.1 * (2.0 * p / 3.0f64).sqrt());
            let expected = n / flows_hit_per_loss_event(n, j, IMPROVED_FLOWS_HIT_BELOW).sqrt();
            let ratio = multfrc(n, 0.1, 1.0, p, j, 0.4) / leading;
            assert!(relative(ratio, expected) < 1e-4, "n={n} j={j}: {ratio} vs {expected}");
        }
    }

    #[test]
    fn flows_hit_follows_section_iii_below_13_and_j_above() {
        // n = 4, j = 2: 4 (1 - (3/4)^2) = 1.75.
        assert_eq!(flows_hit_per_loss_event(4.0, 2.0, IMPROVED_FLOWS_HIT_BELOW), 1.75);
        // One lost packet hits one flow.
        assert!(relative(flows_hit_per_loss_event(12.5, 1.0, IMPROVED_FLOWS_HIT_BELOW), 1.0) < 1e-12);
        // n = 13: no estimate, j itself, at most ceil(n).
        assert_eq!(flows_hit_per_loss_event(13.0, 2.0, IMPROVED_FLOWS_HIT_BELOW), 2.0);
        assert_eq!(flows_hit_per_loss_event(20.0, 30.0, IMPROVED_FLOWS_HIT_BELOW), 20.0);
        assert_eq!(flows_hit_per_loss_event(20.5, 30.0, IMPROVED_FLOWS_HIT_BELOW), 21.0);
        // n <= 1: always one flow, so the rate scales with n.
        assert_eq!(flows_hit_per_loss_event(0.5, 3.0, IMPROVED_FLOWS_HIT_BELOW), 1.0);
        assert_eq!(flows_hit_per_loss_event(1.0, 3.0, IMPROVED_FLOWS_HIT_BELOW), 1.0);
    }

    #[test]
    fn without_the_bound_the_estimate_holds_above_13_too() {
        // n = 20, j = 3: 20 (1 - (19/20)^3) = 2.8525 flows hit, not 3.
        assert!(relative(flows_hit_per_loss_event(20.0, 3.0, f64::INFINITY), 2.8525) < 1e-12);
        assert_eq!(flows_hit_per_loss_event(20.0, 3.0, IMPROVED_FLOWS_HIT_BELOW), 3.0);
        // And so the rate is continuous across n = 13.
        let at = |n: f64| {
            MulTfrcEquation { n, rtt: 0.1, rto: 0.4, b: 1.0, losses_per_event: 2.0, flows_hit_below: f64::INFINITY }
                .packets_per_second(0.01)
        };
        assert!(relative(at(12.999), at(13.0)) < 1e-3);
    }

    #[test]
    fn rate_drops_where_the_flows_hit_estimate_switches_off() {
        let below = multfrc(12.99, 0.1, 1.0, 0.01, 2.0, 0.4);
        let at = multfrc(13.0, 0.1, 1.0, 0.01, 2.0, 0.4);
        assert!(relative(below, 1_075.379_391_320_05) < 1e-9, "{below}");
        assert!(relative(at, 1_058.978_492_288_04) < 1e-9, "{at}");
    }

    #[test]
    fn below_a_hundredth_of_a_flow_the_rate_rises_again_near_p_1() {
        // The documented exception to monotonicity in p (python3 values).
        let near = multfrc(0.001, 0.1, 1.0, 0.999, 1.0, 0.4);
        let at = multfrc(0.001, 0.1, 1.0, 1.0, 1.0, 0.4);
        assert!(relative(near, 1.505_852_557_615_803e-5) < 1e-9, "{near}");
        assert!(relative(at, 7.575_757_575_757_576e-5) < 1e-9, "{at}");
    }

    #[test]
    fn below_one_flow_with_several_losses_per_event_the_rate_can_fall_with_n() {
        // The documented exception to monotonicity in n (python3 values).
        let half = multfrc(0.5, 0.1, 1.0, 0.05, 2.77, 0.4);
        let most = multfrc(0.9, 0.1, 1.0, 0.05, 2.77, 0.4);
        assert!(relative(half, 13.287_764_623_376_68) < 1e-9, "{half}");
        assert!(relative(most, 12.315_707_725_509_61) < 1e-9, "{most}");
    }

    #[test]
    fn every_packet_lost_is_finite() {
        // p = 1: q = n, B = n / (33 t_RTO).
        let rate = multfrc(4.0, 0.1, 1.0, 1.0, 1.0, 0.4);
        assert!(relative(rate, 4.0 / (33.0 * 0.4)) < 1e-12, "{rate}");
    }

    #[test]
    fn inverse_gives_back_the_rate() {
        let equation = MulTfrcEquation {
            n: 4.0,
            rtt: 0.1,
            rto: 0.4,
            b: 1.0,
            losses_per_event: 1.0,
            flows_hit_below: IMPROVED_FLOWS_HIT_BELOW,
        };
        let p = equation.loss_event_rate_for(476.404_493_586_909);
        assert!(relative(p, 0.01) < 1e-9, "{p}");
        // Rates below the equation's at p = 1 give p = 1, above its at 10^-12 the minimum.
        assert_eq!(equation.loss_event_rate_for(0.01), 1.0);
        assert_eq!(equation.loss_event_rate_for(1e300), MIN_LOSS_EVENT_RATE);
    }

    fn weight() -> impl Strategy<Value = f64> {
        prop_oneof![0.01f64..1.0, 1.0f64..13.0, 13.0f64..=256.0]
    }

    /// Loss event rates spread evenly over 12 decades.
    fn loss_event_rate() -> impl Strategy<Value = f64> {
        (-12.0f64..=0.0).prop_map(|exponent| 10f64.powf(exponent))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn rate_is_positive_and_finite(n in prop_oneof![1e-6f64..0.01, weight()], rtt in 1e-6f64..100.0,
                                       b in 1.0f64..=2.0,
                                       p in loss_event_rate(), j in 1.0f64..1000.0, rto_rtts in 0.1f64..100.0) {
            let rate = multfrc(n, rtt, b, p, j, rto_rtts * rtt);
            prop_assert!(rate.is_finite() && rate > 0.0, "{rate}");
            let tcp = TcpEquation { rtt, rto: rto_rtts * rtt, b }.packets_per_second(p);
            prop_assert!(tcp.is_finite() && tcp > 0.0, "{tcp}");
        }

        #[test]
        fn rate_decreases_with_the_loss_event_rate(n in weight(), rtt in 1e-6f64..100.0, b in 1.0f64..=2.0,
                                                   p in loss_event_rate(), more in 1e-6f64..10.0, j in 1.0f64..100.0) {
            let higher = (p * (1.0 + more)).min(1.0);
            prop_assume!(higher > p);
            prop_assert!(multfrc(n, rtt, b, higher, j, 4.0 * rtt) < multfrc(n, rtt, b, p, j, 4.0 * rtt));
        }

        #[test]
        fn rate_decreases_with_the_rtt(n in weight(), rtt in 1e-6f64..100.0, longer in 1e-6f64..10.0,
                                       b in 1.0f64..=2.0, p in loss_event_rate(), j in 1.0f64..100.0) {
            let slower = rtt * (1.0 + longer);
            prop_assert!(multfrc(n, slower, b, p, j, 4.0 * slower) < multfrc(n, rtt, b, p, j, 4.0 * rtt));
        }

        #[test]
        fn rate_increases_with_n_for_one_loss_per_event(n in 0.001f64..256.0, more in 1e-6f64..10.0,
                                                        rtt in 1e-6f64..100.0, b in 1.0f64..=2.0, p in 1e-12f64..0.1) {
            let bigger = (n * (1.0 + more)).min(256.0);
            prop_assume!(bigger > n);
            prop_assert!(multfrc(bigger, rtt, b, p, 1.0, 4.0 * rtt) > multfrc(n, rtt, b, p, 1.0, 4.0 * rtt));
        }

        #[test]
        fn rate_increases_with_n_for_a_few_losses_per_event(
            (low, high, highest_p) in prop_oneof![Just((0.001, 1.0, 0.03)), Just((1.0, 13.0 - 1e-9, 0.05)),
                                                  Just((13.0, 256.0, 0.05))],
            from in 0.0f64..1.0, to in 0.0f64..1.0, rtt in 1e-6f64..100.0, b in 1.0f64..=2.0,
            p_fraction in 1e-12f64..=1.0, j in 1.0f64..=3.0) {
            // The ranges of the module docs: below one flow only up to p = 0.03.
            let p = highest_p * p_fraction;
            let (from, to) = (from.min(to), from.max(to));
            let (small, big) = (low + (high - low) * from, low + (high - low) * to);
            prop_assume!(big > small * (1.0 + 1e-9));
            prop_assert!(multfrc(big, rtt, b, p, j, 4.0 * rtt) > multfrc(small, rtt, b, p, j, 4.0 * rtt));
        }

        #[test]
        fn inverse_round_trips(n in weight(), rtt in 1e-4f64..10.0, p in 1e-9f64..=1.0, j in 1.0f64..10.0) {
            let equation = MulTfrcEquation { n, rtt, rto: 4.0 * rtt, b: 1.0, losses_per_event: j, flows_hit_below: IMPROVED_FLOWS_HIT_BELOW };
            let rate = equation.packets_per_second(p);
            let found = equation.loss_event_rate_for(rate);
            prop_assert!(relative(equation.packets_per_second(found), rate) < 1e-9, "p={p} found={found}");
        }
    }
}
