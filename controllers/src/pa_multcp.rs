//! PA-MulTCP(N): Probe-Aided MulTCP, two window loops in one connection.
//!
//! Kuo and Fu, paper 000 section 4. MulTCP(N) sees a lower loss event rate
//! than a standard flow and so takes more than N flowshares (section 3.2).
//! PA-MulTCP measures the loss event rate of a standard flow with a *probe
//! loop* that carries real data, and caps a MulTCP-like *adjusting loop* at
//! the window N flows would have at that rate.
//!
//! # Defaults and the paper
//!
//! The paper's PA-MulTCP caps the adjusting loop at eq. (9)'s `W_max` for
//! the probe's loss event rate, assigns packets to the loops in runs, and
//! probes with Reno: `pa-multcp:n=N,probe=reno,assign=consecutive,cap=paper`
//! is exactly that, and the lab's reproduction of paper 000 uses it. The
//! defaults differ where the lab and the testbed showed the weight not
//! holding (`cap`, `assign` and `probe` below):
//!
//! * **`cap=measured`** (default): the adjusting loop is capped at
//!   `g (N - 1) W̄_p`, with `W̄_p` the probe loop's window averaged over
//!   its last four loss epochs ([`EpochAverage`]). The probe is a real flow
//!   of the peers' kind, so its average window *is* one flowshare on this
//!   path, whatever the peers' response function, queue or loss pattern:
//!   W_max from a model cannot see that CUBIC's β = 0.7 beats halving at a
//!   drop-tail queue (the lab's PA-MulTCP took 0.69 to 0.94 of its share
//!   against CUBIC with `cap=paper`). `g >= 1` makes up for the adjusting
//!   loop not sitting at its cap all the time: at every probe loss event
//!   it becomes the ratio of the cap's average to the adjusting loop's over
//!   the closed epochs, so the adjusting loop's *average* is `(N - 1) W̄_p`
//!   (at most 2). Before the probe's first epoch ends the cap is
//!   `(N - 1)` times the probe's window, so both loops slow-start together.
//!   The adjusting loop runs the pair of a loop worth 3 (N - 1) flowshares
//!   ([`loop_pair`]), stiff enough that its cap, not its own losses, sets
//!   its rate, also where N - 1 is one flowshare of a CUBIC probe.
//! * **`assign=draw`** (default): each packet goes to the probe loop with
//!   probability `W_p / (W_p + W_a)`, drawn from a hash of its packet number
//!   (deterministic, and uncorrelated with the loops' windows), so that a
//!   burst of drops hits both loops in proportion; runs of packets
//!   (`assign=consecutive`) let the adjusting loop's own overflows fall on
//!   adjusting packets and hide them from the probe. Against 170 CUBIC
//!   flows at 200 Mbit/s the lab gave PA-MulTCP(30) 0.88 of its share with
//!   packets interleaved in proportion (a running credit) and 0.93 with
//!   the draw, 1.07 with runs (6 seeds each).
//! * **`probe=cubic`** (default): a flowshare is a CUBIC flow's, the traffic
//!   a server meets (Linux TCP, quiche); `probe=reno` makes it a Reno
//!   flow's. Against the other kind one flowshare is worth what that probe
//!   gets there (in the lab a CUBIC flow takes 1.2 to 1.4 times a Reno
//!   flow's share), and N flowshares N times that.
//!
//! # Rules (paper 000, `cap=paper`)
//!
//! * **Probe loop** (section 4.1): TCP-friendly AIMD(1, 1/2) with its own
//!   slow start. Its loss event rate `p` is measured on the sender with
//!   TFRC's average loss interval method ([`LossIntervals`], RFC 5348
//!   section 5) over the probe loop's packets only.
//! * **Adjusting loop** (section 4.2): AIMD(√N', 2/(1 + 3N'^1.5)), a pair on
//!   eq. (5)'s curve, with its window and slow start threshold capped at
//!   eq. (9)'s `W_max = sqrt(2a / (b (2 - b) p))` packets
//!   ([`WindowLoop::set_cap`]). N' is what the adjusting loop targets (next
//!   section). Slow start is standard: once `p` is known the cap ends it.
//! * **Packet assignment** (section 4.3): the congestion window is the sum of
//!   both loops' windows. A loop is *open* while its own bytes in flight are
//!   below its window. Each packet is assigned when the host reports it sent:
//!   *consecutive* (default) keeps sending on the loop of the previous packet
//!   until it is closed, then switches; *interleave* (`assign=interleave`)
//!   alternates while both are open. A packet the host sends with both loops
//!   closed (a PTO probe) goes to the probe loop: a standard flow would send
//!   it too, and its fate belongs in what the probe measures. The loop of
//!   every packet in flight is remembered, so its acknowledgement or loss
//!   goes back to the loop that sent it; recovery periods are per loop. If
//!   the host reports nothing in flight while packets are still recorded
//!   (dropped without [`Controller::on_packet_discarded`]), they are
//!   forgotten, so that neither loop stays closed for good.
//! * **Weight changes** (section 4.2): [`Controller::set_weight`] updates the
//!   pair and `W_max` at once, clamping window and slow start threshold.
//! * **Persistent congestion**: both loops collapse to the minimum window;
//!   each loop's slow start threshold becomes what one loss event would have
//!   left, `(1 - b)` of its window (CUBIC's β for a CUBIC probe), at most
//!   `W_max`.
//!
//! # How N flowshares are split between the loops
//!
//! The probe loop is not capped: at its loss event rate `p` it sends eq. (3)'s
//! `sqrt(3 / (2p))` packets per RTT, one flowshare. So the adjusting loop
//! targets **N' = N - 1**: with the eq. (5) pair for N' and eq. (9)'s cap,
//! eq. (10) gives it `(2 - b)/2 · W_max = N' sqrt(3 / (2p))` packets per RTT,
//! and the connection `(1 + N') sqrt(3 / (2p)) = N` flowshares. (Targeting N,
//! as the paper's adjusting loop alone does, makes N + 1: 50% too much at
//! N = 2.) For N = 4 and p = 0.01: the probe sends 12.247 packets per RTT;
//! the adjusting loop is AIMD(√3 = 1.7321, 2/(1 + 3·3^1.5) = 0.12057),
//! `W_max = 39.099` packets, and it sends 0.93972 · 39.099 = 36.742 =
//! 3 × 12.247 packets per RTT; together 48.990 = 4 × 12.247.
//!
//! A capped loop that sits at its cap between losses sends up to `W_max`
//! rather than eq. (10)'s `(2 - b)/2 · W_max`, at most `2/(2 - b)` times its
//! target (1.064 for N' = 3); the paper accepts the same approximation.
//!
//! * **1 < N < 2**: `N' < 1`. AIMD(√N', 2/(1 + 3N'^1.5)) would need `b >= 1`
//!   below N' = (1/3)^(2/3) = 0.48, so below N' = 1 the adjusting loop uses
//!   eq. (5) with TCP's b = 1/2: AIMD(N'², 1/2) (MulTCP's pair below one
//!   flowshare; both pairs are AIMD(1, 1/2) at N' = 1). The loop never drops
//!   below 2 packets, so just above N = 1 the connection gets slightly more
//!   than N.
//! * **N = 1**: no adjusting loop; the probe loop alone is RFC 9002 NewReno,
//!   and `p` is still measured and reported.
//! * **N < 1** (scavenger): no adjusting loop, and the probe loop itself is
//!   AIMD(N², 1/2), worth N flowshares by eq. (5). Its `p` is that of a
//!   smaller-than-standard flow: it is reported, and used again if N rises.
//!
//! Initial windows: the probe loop starts at the host's IW, the adjusting
//! loop at `IW · min(N', 1)` (at least 2 packets), so the connection never
//! starts above the `N · IW` of N separate flows.
//!
//! # Before the first loss interval closes
//!
//! `p` needs a closed loss interval. Like TFRC after its first loss event
//! (RFC 5348 section 6.3.1), the history is then seeded with one synthetic
//! interval ([`LossIntervals::seed`]), from the probe window `W_d` when the
//! probe's first loss event is detected. Slow start doubles the window in
//! the RTT it takes to detect a loss, so the path held about `W = W_d / 2`
//! (for the Reno probe: the window after the decrease). Eq. (1) inverted for
//! the probe pair gives `p₀ = 2a / (b (2 - b) W²)` = `8 / (3W²)` for
//! AIMD(1, 1/2), and the seeded interval `1/p₀ = 3W²/8` packets: one
//! congestion epoch ending at W. `W_d` = 20 packets gives W = 10 and a
//! 37.5-packet interval. Until the probe's first loss event there is no cap:
//! both loops are in slow start, which losses end anyway.
//!
//! # `probe=cubic`: holding N flowshares among CUBIC flows
//!
//! The probe loop is RFC 9438 CUBIC ([`CubicWindow`], MulCUBIC(N) below one
//! flowshare), so `p` approximates what a CUBIC flow sees. One CUBIC
//! flowshare at `p` and RTT is CUBIC's average window
//! `W̄_c = max(AVG_W_cubic, sqrt(3 / (2p)))` (RFC 9438 section 5, derived in
//! [`crate::mulcubic`]), which is `R = W̄_c / sqrt(3 / (2p)) >= 1` Reno
//! flowshares. The adjusting loop keeps its AIMD form but targets
//! **N' · R** Reno flowshares: AIMD(√(N'R), 2/(1 + 3(N'R)^1.5)) capped at
//! eq. (9) for that pair, which is `W_max = 2 N' W̄_c / (2 - b)`, so by
//! eq. (10) it sends N' CUBIC flowshares and the connection N. The eq. (5)
//! pair for N' alone would not do: it is worth N' *Reno* flows, below a cap
//! sized for CUBIC, so the cap would never bind and the connection would
//! get one CUBIC plus N' Reno flowshares. `R` follows `p` and the smoothed
//! RTT at every congestion event. For N = 4, p = 10⁻⁴, RTT 100 ms:
//! `W̄_c` = 187.40 packets against Reno's 122.47, R = 1.5301, the adjusting
//! loop is AIMD(2.1425, 0.065564) and `W_max` = 581.26 packets. The seed
//! inverts CUBIC's epoch window instead of eq. (1)
//! ([`cubic_loss_event_rate_at_epoch_window`]).
//!
//! `W_max` decreases with `p` in both modes (for CUBIC the pair's `2/(2 - b)`
//! grows as R falls, but `W̄_c` falls faster); a property test checks it.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::aimd::Aimd;
use crate::controller::CongestionEvent;
use crate::controller::Controller;
use crate::controller::Counters;
use crate::controller::Params;
use crate::controller::SentPacket;
use crate::controller::Snapshot;
use crate::controller::Value;
use crate::cubic::CubicWindow;
use crate::epoch_average::EpochAverage;
use crate::equations::cubic_flow_params;
use crate::equations::cubic_loss_event_rate_at_epoch_window;
use crate::equations::cubic_reno_flowshares;
use crate::equations::CubicParams;
use crate::equations::CUBIC_WEIGHT;
use crate::grammar::choice_name;
use crate::grammar::Args;
use crate::grammar::Range;
use crate::grammar::SpecError;
use crate::loss_intervals::LossIntervals;
use crate::loss_intervals::LossOutcome;
use crate::spec::AlgorithmConfig;
use crate::time::Time;
use crate::window;
use crate::window::AppLimitedTracker;
use crate::window::LossWindow;
use crate::window::WindowLoop;
use crate::window::MINIMUM_WINDOW_PACKETS;

/// How packets are assigned to the two loops (section 4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assignment {
    /// Runs of packets on one loop until it is closed (default: the paper
    /// prefers it under drop-tail, where losses come in bursts).
    Consecutive,
    /// Alternate packets while both loops are open.
    Interleave,
    /// Give each packet to the probe loop with probability
    /// `W_p / (W_p + W_a)`, so that a burst of drops hits both loops in
    /// proportion to their windows.
    Draw,
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

/// The algorithm of the probe loop, and so the kind of flow a flowshare is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// AIMD(1, 1/2), the paper's probe: flowshares of Reno flows (default).
    Reno,
    /// RFC 9438 CUBIC: flowshares of CUBIC flows.
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
        Ok(PaMulTcpConfig { n, assignment, probe, cap: PaMulTcpConfig::DEFAULT_CAP })
    }

    /// The default assignment.
    pub const DEFAULT_ASSIGNMENT: Assignment = Assignment::Draw;
    /// The default probe.
    pub const DEFAULT_PROBE: ProbeKind = ProbeKind::Cubic;
    /// The default cap.
    pub const DEFAULT_CAP: CapRule = CapRule::Measured;

    /// The same config with the adjusting loop capped by `cap`.
    pub fn with_cap(self, cap: CapRule) -> Self {
        PaMulTcpConfig { cap, ..self }
    }

    /// The same choices for another weight.
    pub fn reweighted(&self, n: f64) -> Result<Self, SpecError> {
        Ok(PaMulTcpConfig::new(n, self.assignment, self.probe)?.with_cap(self.cap))
    }

    /// Whether there is an adjusting loop: N > 1.
    pub fn has_adjusting_loop(&self) -> bool {
        self.n > 1.0
    }

    /// Flowshares of the probe loop: 1, or N below one flowshare.
    pub fn probe_flowshares(&self) -> f64 {
        self.n.min(1.0)
    }

    /// The Reno flowshares the adjusting loop targets at loss event rate `p`
    /// (if known) and smoothed RTT `rtt`: `N' = N - 1`, times `R` for a
    /// CUBIC probe.
    pub fn adjusting_flowshares(&self, loss_event_rate: Option<f64>, rtt: Duration) -> f64 {
        let n = (self.n - 1.0).max(0.0);
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
    /// Parses `n`, `assign` and `probe`.
    fn from_args(args: &mut Args) -> Result<Self, SpecError> {
        let assignment = args.choice("assign", &ASSIGNMENTS)?.unwrap_or(PaMulTcpConfig::DEFAULT_ASSIGNMENT);
        let probe = args.choice("probe", &PROBES)?.unwrap_or(PaMulTcpConfig::DEFAULT_PROBE);
        let cap = args.choice("cap", &CAPS)?.unwrap_or(PaMulTcpConfig::DEFAULT_CAP);
        let n = args.weight(weight_range(probe))?;
        Ok(PaMulTcpConfig::new(n, assignment, probe)?.with_cap(cap))
    }

    fn weight(&self) -> f64 {
        self.n
    }

    fn reweighted(&self, n: f64) -> Result<Arc<dyn AlgorithmConfig>, SpecError> {
        Ok(Arc::new(PaMulTcpConfig::reweighted(self, n)?))
    }

    fn build(&self, params: &Params) -> Box<dyn Controller> {
        Box::new(PaMulTcp::new(self.clone(), params))
    }
}

impl fmt::Display for PaMulTcpConfig {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "pa-multcp:n={}", self.n)?;
        if self.assignment != PaMulTcpConfig::DEFAULT_ASSIGNMENT {
            write!(f, ",assign={}", choice_name(&ASSIGNMENTS, self.assignment))?;
        }
        if self.probe != PaMulTcpConfig::DEFAULT_PROBE {
            write!(f, ",probe={}", choice_name(&PROBES, self.probe))?;
        }
        if self.cap != PaMulTcpConfig::DEFAULT_CAP {
            write!(f, ",cap={}", choice_name(&CAPS, self.cap))?;
        }
        Ok(())
    }
}

/// With the measured cap, the adjusting loop runs the pair of a loop worth
/// this many times its target flowshares, so that on its own it would take
/// more than its target against Reno or CUBIC flows and its cap, not its
/// losses, sets its rate. With 1 (the pair of `cap=paper`) an adjusting
/// loop of one flowshare (N = 2) is a Reno loop that a CUBIC probe's cap
/// never binds: the lab gave 0.89 flowshares against CUBIC at N = 2; with
/// 3, 0.99.
const ADJUSTING_STIFFNESS: f64 = 3.0;

/// The largest `g` of the measured cap: an adjusting loop that cannot
/// reach its cap on average (it loses too often) may be capped at up to
/// twice its target.
const MAX_CAP_GAIN: f64 = 2.0;

/// A number in [0, 1) drawn from a packet number: splitmix64's finaliser,
/// so that neighbouring numbers draw independent-looking values.
fn draw(number: u64) -> f64 {
    let mut z = number.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The values of `assign`.
const ASSIGNMENTS: [(&str, Assignment); 3] =
    [("consecutive", Assignment::Consecutive), ("interleave", Assignment::Interleave), ("draw", Assignment::Draw)];
/// The values of `probe`.
const PROBES: [(&str, ProbeKind); 2] = [("reno", ProbeKind::Reno), ("cubic", ProbeKind::Cubic)];
/// The values of `cap`.
const CAPS: [(&str, CapRule); 2] = [("measured", CapRule::Measured), ("paper", CapRule::Paper)];

/// The accepted N: CUBIC's constants need N >= 0.01 ([`crate::mulcubic`]).
fn weight_range(probe: ProbeKind) -> Range {
    match probe {
        ProbeKind::Reno => Range::WEIGHT,
        ProbeKind::Cubic => CUBIC_WEIGHT,
    }
}

/// One of the two window loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loop {
    /// The probe loop.
    Probe,
    /// The adjusting loop.
    Adjusting,
}

impl Loop {
    /// The name in snapshots.
    pub fn name(self) -> &'static str {
        match self {
            Loop::Probe => "probe",
            Loop::Adjusting => "adjusting",
        }
    }

    fn other(self) -> Loop {
        match self {
            Loop::Probe => Loop::Adjusting,
            Loop::Adjusting => Loop::Probe,
        }
    }
}

/// The loop for the next packet, given the loop of the previous one and
/// which loops are open (section 4.3; module docs for the closed case).
/// `probe_due` says, for [`Assignment::Draw`], whether the draw gave the
/// packet to the probe loop.
pub fn assign(
    assignment: Assignment,
    previous: Option<Loop>,
    probe_open: bool,
    adjusting_open: bool,
    probe_due: bool,
) -> Loop {
    let open = |which: Loop| match which {
        Loop::Probe => probe_open,
        Loop::Adjusting => adjusting_open,
    };
    let previous = previous.unwrap_or(match assignment {
        // Start on the probe loop in both modes.
        Assignment::Consecutive | Assignment::Draw => Loop::Probe,
        Assignment::Interleave => Loop::Adjusting,
    });
    let (first, second) = match assignment {
        Assignment::Consecutive => (previous, previous.other()),
        Assignment::Interleave => (previous.other(), previous),
        Assignment::Draw if probe_due => (Loop::Probe, Loop::Adjusting),
        Assignment::Draw => (Loop::Adjusting, Loop::Probe),
    };
    if open(first) {
        first
    } else if open(second) {
        second
    } else {
        Loop::Probe
    }
}

/// The probe loop: AIMD or CUBIC, used through [`LossWindow`].
#[derive(Clone, Debug)]
enum ProbeLoop {
    Reno(WindowLoop),
    Cubic(CubicWindow),
}

impl std::ops::Deref for ProbeLoop {
    type Target = dyn LossWindow;

    fn deref(&self) -> &Self::Target {
        match self {
            ProbeLoop::Reno(window) => window,
            ProbeLoop::Cubic(window) => window,
        }
    }
}

impl std::ops::DerefMut for ProbeLoop {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            ProbeLoop::Reno(window) => window,
            ProbeLoop::Cubic(window) => window,
        }
    }
}

impl ProbeLoop {
    fn new(config: &PaMulTcpConfig, params: &Params) -> Self {
        match config.probe {
            ProbeKind::Reno => ProbeLoop::Reno(WindowLoop::new(loop_pair(config.probe_flowshares()), params)),
            ProbeKind::Cubic => ProbeLoop::Cubic(CubicWindow::new(probe_cubic_params(config), params)),
        }
    }

    /// Follows a weight change: the probe is one flow, or N below one.
    fn reweight(&mut self, config: &PaMulTcpConfig) {
        match self {
            ProbeLoop::Reno(window) => window.set_aimd(loop_pair(config.probe_flowshares())),
            ProbeLoop::Cubic(window) => {
                let params = probe_cubic_params(config);
                // Changing the constants restarts the CUBIC epoch; only do it
                // when they change.
                if window.params() != params {
                    window.set_params(params);
                }
            }
        }
    }

    /// The loss event rate at which this loop's epochs end at `window`
    /// segments: eq. (1) inverted, or CUBIC's epoch window inverted.
    fn loss_event_rate_at_epoch_window(&self, window: f64, rtt: Duration) -> f64 {
        match self {
            ProbeLoop::Reno(probe) => {
                let Aimd { increase: a, decrease: b } = probe.aimd();
                2.0 * a / (b * (2.0 - b) * window * window)
            }
            ProbeLoop::Cubic(probe) => cubic_loss_event_rate_at_epoch_window(&probe.params(), window, rtt),
        }
    }
}

/// The loop and size of each packet in flight, in packet number order.
/// Entries are freed once every older packet is resolved too, so the
/// structure spans the packets in flight and its capacity is reused: no
/// allocation per packet in steady state.
#[derive(Clone, Debug, Default)]
struct Ledger {
    packets: VecDeque<LedgerEntry>,
}

#[derive(Clone, Copy, Debug)]
struct LedgerEntry {
    number: u64,
    bytes: usize,
    owner: Loop,
    /// Acknowledged, lost or discarded; removed once at the front.
    resolved: bool,
}

impl Ledger {
    /// Records packet `number`; numbers must increase.
    fn push(&mut self, number: u64, bytes: usize, owner: Loop) {
        self.packets.push_back(LedgerEntry { number, bytes, owner, resolved: false });
    }

    /// The loop and size of packet `number`, if it is in flight; it no
    /// longer is afterwards.
    fn resolve(&mut self, number: u64) -> Option<(Loop, usize)> {
        let index = self.packets.binary_search_by_key(&number, |entry| entry.number).ok()?;
        let entry = &mut self.packets[index];
        if entry.resolved {
            return None;
        }
        entry.resolved = true;
        let found = (entry.owner, entry.bytes);
        while self.packets.front().is_some_and(|entry| entry.resolved) {
            self.packets.pop_front();
        }
        Some(found)
    }

    /// Forgets every packet, returning those not resolved yet.
    fn drain_unresolved(&mut self) -> impl Iterator<Item = LedgerEntry> + '_ {
        self.packets.drain(..).filter(|entry| !entry.resolved)
    }

    fn len(&self) -> usize {
        self.packets.len()
    }
}

/// The PA-MulTCP(N) controller.
#[derive(Debug)]
pub struct PaMulTcp {
    /// Parameters; N changes with [`Controller::set_weight`].
    config: PaMulTcpConfig,
    /// The probe loop: one standard flow (N below one flowshare).
    probe: ProbeLoop,
    /// The adjusting loop; used while N > 1, kept as it was while N <= 1.
    adjusting: WindowLoop,
    /// Loss intervals of the probe loop's packets: `p`.
    loss_intervals: LossIntervals,
    /// The loop of every packet in flight.
    ledger: Ledger,
    /// Bytes in flight of the probe loop.
    probe_in_flight: usize,
    /// Bytes in flight of the adjusting loop.
    adjusting_in_flight: usize,
    /// The loop of the last packet sent.
    last_loop: Option<Loop>,
    /// Largest packet number sent: packets must be numbered in increasing
    /// order to be tracked.
    largest_sent: Option<u64>,
    /// `W_max` in packets, while the adjusting loop is used and `p` is known
    /// (`cap=paper`), or the measured cap in packets (`cap=measured`).
    w_max: Option<f64>,
    /// The windows of both loops averaged over the probe's last loss
    /// epochs (`cap=measured`).
    averages: EpochAverage<3>,
    /// `g`: the measured cap is `g (N - 1)` times the probe's average
    /// window; corrected at every probe loss event so that the adjusting
    /// loop's average tracks `(N - 1)` times the probe's.
    cap_gain: f64,
    /// Whether the application limited sending in the current probe epoch:
    /// then the epoch says nothing about the cap and `g` is left alone.
    epoch_app_limited: bool,
    /// Whether the probe had a loss event since the start.
    probe_left_slow_start: bool,
    /// Packets sent while app-limited.
    app_limited: AppLimitedTracker,
    /// Smoothed RTT of the last congestion event: pacing, loss events and
    /// CUBIC's response function.
    smoothed_rtt: Duration,
    /// Maximum datagram size, bytes: `W_max` is in packets of it.
    max_datagram_size: usize,
    /// Event counts.
    counters: Counters,
}

impl PaMulTcp {
    /// PA-MulTCP(N) as configured.
    pub fn new(config: PaMulTcpConfig, params: &Params) -> Self {
        let adjusting_share = (config.n - 1.0).clamp(0.0, 1.0);
        let adjusting_params = Params {
            initial_window_packets: (params.initial_window_packets as f64 * adjusting_share)
                .round()
                .max(MINIMUM_WINDOW_PACKETS) as usize,
            ..*params
        };
        let adjusting =
            WindowLoop::new(loop_pair(config.adjusting_flowshares(None, params.initial_rtt)), &adjusting_params);
        PaMulTcp {
            probe: ProbeLoop::new(&config, params),
            adjusting,
            config,
            loss_intervals: LossIntervals::new(),
            ledger: Ledger::default(),
            probe_in_flight: 0,
            adjusting_in_flight: 0,
            last_loop: None,
            largest_sent: None,
            w_max: None,
            averages: EpochAverage::new(),
            cap_gain: 1.0,
            epoch_app_limited: false,
            probe_left_slow_start: false,
            app_limited: AppLimitedTracker::default(),
            smoothed_rtt: params.initial_rtt,
            max_datagram_size: params.max_datagram_size,
            counters: Counters::default(),
        }
    }

    /// The parameters in use.
    pub fn config(&self) -> &PaMulTcpConfig {
        &self.config
    }

    /// The probe loop's window, bytes.
    pub fn probe_window(&self) -> f64 {
        self.probe.window()
    }

    /// The adjusting loop, whose state is kept while N <= 1.
    pub fn adjusting_loop(&self) -> &WindowLoop {
        &self.adjusting
    }

    /// The loss event rate `p` of the probe loop, once known.
    pub fn loss_event_rate(&self) -> Option<f64> {
        self.loss_intervals.loss_event_rate()
    }

    /// `W_max` in packets, while there is one.
    pub fn w_max(&self) -> Option<f64> {
        self.w_max
    }

    /// The loop of the last packet sent.
    pub fn last_loop(&self) -> Option<Loop> {
        self.last_loop
    }

    fn in_flight_mut(&mut self, owner: Loop) -> &mut usize {
        match owner {
            Loop::Probe => &mut self.probe_in_flight,
            Loop::Adjusting => &mut self.adjusting_in_flight,
        }
    }

    fn adjusting_window(&self) -> f64 {
        if self.config.has_adjusting_loop() {
            self.adjusting.window()
        } else {
            0.0
        }
    }

    /// Recomputes the adjusting loop's pair and cap from N, `p`, the RTT
    /// and the datagram size.
    fn update_adjusting(&mut self) {
        if !self.config.has_adjusting_loop() {
            self.w_max = None;
            return;
        }
        if self.config.cap == CapRule::Measured {
            let share = self.config.n - 1.0;
            // Stiff enough that its cap, not its own losses, sets its rate.
            self.adjusting.set_aimd(loop_pair(ADJUSTING_STIFFNESS * share));
            // Until a whole epoch has been seen (slow start, and the epoch
            // after the first loss), the probe's window stands for its
            // average.
            let probe = match self.averages.mean() {
                Some([probe, _, _]) if self.averages.closed_epochs() > 0 => probe,
                _ => self.probe.window(),
            };
            let cap = self.cap_gain * share * probe;
            self.w_max = Some(cap / self.max_datagram_size as f64);
            self.adjusting.set_cap(cap);
            return;
        }
        let p = self.loss_intervals.loss_event_rate();
        let pair = loop_pair(self.config.adjusting_flowshares(p, self.smoothed_rtt));
        self.adjusting.set_aimd(pair);
        self.w_max = p.map(|p| pair.epoch_window(p));
        self.adjusting.set_cap(self.w_max.map_or(f64::INFINITY, |w_max| w_max * self.max_datagram_size as f64));
    }

    fn on_probe_loss(&mut self, number: u64, now: Time) {
        let window = self.probe.window();
        if self.probe.on_lost(number) {
            self.counters.loss_events += 1;
            self.on_probe_epoch_end(now);
        }
        let first = !self.loss_intervals.has_history();
        if self.loss_intervals.on_lost(number, self.smoothed_rtt) == LossOutcome::NewEvent && first {
            // The path held about half the window slow start reached by the
            // time the loss was detected.
            let segments = (window / self.max_datagram_size as f64 / 2.0).max(MINIMUM_WINDOW_PACKETS);
            let p = self.probe.loss_event_rate_at_epoch_window(segments, self.smoothed_rtt);
            self.loss_intervals.seed(1.0 / p);
        }
    }

    /// A probe loss event ended the probe's epoch: the averages move on and
    /// `g` is corrected from the closed epochs (`cap=measured`).
    fn on_probe_epoch_end(&mut self, now: Time) {
        if self.config.cap != CapRule::Measured {
            return;
        }
        if !self.probe_left_slow_start {
            // Slow start is not an epoch of the steady state.
            self.probe_left_slow_start = true;
            self.averages = EpochAverage::new();
        } else {
            self.averages.close_epoch(now);
        }
        // The adjusting loop fills `u` of its cap on average, so a cap of
        // `1/u` times the target gives it the target on average.
        if let Some([_, adjusting, cap]) = self.averages.closed_mean().filter(|_| !self.epoch_app_limited) {
            if adjusting > 0.0 && cap.is_finite() && cap > 0.0 {
                self.cap_gain = (cap / adjusting).clamp(1.0, MAX_CAP_GAIN);
            }
        }
        self.epoch_app_limited = false;
    }

    /// The host no longer has packets in flight that the ledger still holds:
    /// forget them so the loops do not stay closed.
    fn forget_in_flight(&mut self) {
        for entry in self.ledger.drain_unresolved() {
            if entry.owner == Loop::Probe {
                // Neither acknowledged nor lost: counted in its interval, like a delivered packet.
                self.loss_intervals.on_acked(entry.number);
            }
        }
        self.probe_in_flight = 0;
        self.adjusting_in_flight = 0;
    }
}

impl Controller for PaMulTcp {
    fn on_packet_sent(&mut self, packet: &SentPacket) {
        self.counters.record_sent(packet);
        if self.largest_sent.is_some_and(|largest| packet.number <= largest) {
            // Out of order: the ledger, the loops and the loss intervals
            // rely on increasing numbers, so the packet is not tracked.
            return;
        }
        self.largest_sent = Some(packet.number);
        self.app_limited.on_sent(packet.number);
        let probe_open = (self.probe_in_flight as f64) < self.probe.window();
        let adjusting_open =
            self.config.has_adjusting_loop() && (self.adjusting_in_flight as f64) < self.adjusting.window();
        let probe_due = if self.config.has_adjusting_loop() {
            let probe = self.probe.window();
            draw(packet.number) < probe / (probe + self.adjusting.window())
        } else {
            true
        };
        let owner = assign(self.config.assignment, self.last_loop, probe_open, adjusting_open, probe_due);
        self.ledger.push(packet.number, packet.bytes, owner);
        *self.in_flight_mut(owner) += packet.bytes;
        match owner {
            Loop::Probe => {
                self.probe.on_sent(packet.number);
                self.loss_intervals.on_sent(packet.number, packet.time);
            }
            Loop::Adjusting => self.adjusting.on_sent(packet.number),
        }
        self.last_loop = Some(owner);
    }

    fn on_congestion_event(&mut self, event: &CongestionEvent) {
        self.counters.record_event(event);
        self.smoothed_rtt = event.rtt.smoothed;
        for packet in event.acked {
            let Some((owner, bytes)) = self.ledger.resolve(packet.number) else { continue };
            let in_flight = self.in_flight_mut(owner);
            *in_flight = in_flight.saturating_sub(bytes);
            let may_grow = self.app_limited.may_grow(packet.number);
            match owner {
                Loop::Probe => {
                    self.probe.on_acked(packet.number, packet.bytes, event.now, event.rtt.smoothed, may_grow);
                    self.loss_intervals.on_acked(packet.number);
                }
                Loop::Adjusting => self.adjusting.on_ack(packet.number, packet.bytes, may_grow),
            }
        }
        for packet in event.lost {
            let Some((owner, bytes)) = self.ledger.resolve(packet.number) else { continue };
            let in_flight = self.in_flight_mut(owner);
            *in_flight = in_flight.saturating_sub(bytes);
            match owner {
                Loop::Probe if packet.bytes > 0 => self.on_probe_loss(packet.number, event.now),
                Loop::Probe => self.loss_intervals.on_acked(packet.number),
                Loop::Adjusting if packet.bytes > 0 => {
                    if self.adjusting.on_loss(packet.number) {
                        self.counters.loss_events += 1;
                    }
                }
                Loop::Adjusting => {}
            }
        }
        if event.bytes_in_flight == 0 && self.ledger.len() > 0 {
            self.forget_in_flight();
        }
        self.update_adjusting();
        let cap = self.adjusting.cap().min(f64::MAX);
        self.averages.observe(event.now, [self.probe.window(), self.adjusting.window(), cap]);
    }

    fn on_retransmission_timeout(&mut self, _now: Time) {
        self.counters.timeouts += 1;
    }

    fn on_persistent_congestion(&mut self, _now: Time) {
        self.counters.persistent_congestion += 1;
        self.probe.collapse();
        self.adjusting.on_persistent_congestion(1.0 - self.adjusting.aimd().decrease);
    }

    fn on_app_limited(&mut self, _bytes_in_flight: usize) {
        self.app_limited.on_app_limited();
        self.epoch_app_limited = true;
    }

    fn on_packet_discarded(&mut self, number: u64) {
        let Some((owner, bytes)) = self.ledger.resolve(number) else { return };
        let in_flight = self.in_flight_mut(owner);
        *in_flight = in_flight.saturating_sub(bytes);
        if owner == Loop::Probe {
            // Neither acknowledged nor lost: counted in its interval, like a delivered packet.
            self.loss_intervals.on_acked(number);
        }
    }

    fn set_max_datagram_size(&mut self, bytes: usize) {
        self.max_datagram_size = bytes;
        self.probe.set_max_datagram_size(bytes);
        self.adjusting.set_max_datagram_size(bytes);
        self.update_adjusting();
    }

    fn set_weight(&mut self, weight: f64) -> Result<(), SpecError> {
        self.config = self.config.reweighted(weight)?;
        self.probe.reweight(&self.config);
        self.update_adjusting();
        Ok(())
    }

    fn congestion_window(&self) -> usize {
        (self.probe.window() + self.adjusting_window()) as usize
    }

    fn pacing_rate(&self) -> Option<u64> {
        let rtt = self.smoothed_rtt.as_secs_f64();
        let probe = window::pacing_rate(self.probe.window(), self.probe.in_slow_start(), rtt);
        let adjusting = if self.config.has_adjusting_loop() { self.adjusting.pacing_rate(rtt) } else { 0 };
        Some(probe.saturating_add(adjusting))
    }

    fn in_recovery(&self) -> bool {
        self.probe.recovery().in_recovery() || (self.config.has_adjusting_loop() && self.adjusting.in_recovery())
    }

    fn ssthresh(&self) -> Option<usize> {
        let adjusting = if self.config.has_adjusting_loop() { self.adjusting.ssthresh() } else { 0.0 };
        let ssthresh = self.probe.ssthresh() + adjusting;
        ssthresh.is_finite().then_some(ssthresh as usize)
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn snapshot(&self) -> Snapshot {
        let adjusting = self.config.has_adjusting_loop();
        let phase = if self.in_recovery() {
            "recovery"
        } else if self.probe.in_slow_start() || (adjusting && self.adjusting.in_slow_start()) {
            "slow_start"
        } else {
            "congestion_avoidance"
        };
        Snapshot {
            algorithm: "pa-multcp",
            phase,
            congestion_window: self.congestion_window(),
            ssthresh: self.ssthresh(),
            pacing_rate: self.pacing_rate(),
            weight: Some(self.config.n),
            state: [
                self.loss_event_rate().map(|p| ("loss_event_rate", Value::Real(p))),
                self.w_max.map(|w_max| ("w_max", Value::Real(w_max * self.max_datagram_size as f64))),
                Some(("probe_window", Value::Integer(self.probe.window() as u64))),
                adjusting.then(|| ("adjusting_window", Value::Integer(self.adjusting.window() as u64))),
                self.last_loop.map(|which| ("last_loop", Value::Name(which.name()))),
                (self.config.cap == CapRule::Measured && adjusting).then(|| ("cap_gain", Value::Real(self.cap_gain))),
                self.averages
                    .mean()
                    .filter(|_| self.config.cap == CapRule::Measured)
                    .map(|[probe, _, _]| ("probe_average", Value::Real(probe))),
            ]
            .into_iter()
            .flatten()
            .collect(),
        }
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
        Aimd { increase: Aimd::weighted_increase(flowshares, 0.5), decrease: 0.5 }
    }
}

/// The probe's CUBIC constants: one flow, MulCUBIC(N) below one flowshare.
fn probe_cubic_params(config: &PaMulTcpConfig) -> CubicParams {
    cubic_flow_params(config.probe_flowshares())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;
    use crate::testing;
    use crate::testing::Host;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, relative: f64) -> bool {
        (a - b).abs() <= relative * a.abs().max(b.abs())
    }

    fn pa_multcp(spec: &str) -> PaMulTcp {
        PaMulTcp::new(crate::testing::config(spec), &testing::params())
    }

    /// Ledger of the test host: which loop carried each packet.
    fn loops_of(host: &mut Host<PaMulTcp>, count: usize) -> Vec<Loop> {
        (0..count)
            .map(|_| {
                host.send(1);
                host.controller.last_loop().unwrap()
            })
            .collect()
    }

    /// PA-MulTCP(4) after one round of slow start in both loops (20 packets
    /// each) and a probe loss among the next window: the probe's first loss
    /// event at a window of 20 packets.
    fn after_first_probe_loss(spec: &str) -> Host<PaMulTcp> {
        let mut host = Host::new(pa_multcp(spec));
        host.round(); // packets 0..9 probe, 10..19 adjusting; both 10 -> 20
        assert_eq!(host.controller.probe_window(), 20_000.0);
        assert_eq!(host.controller.adjusting_loop().window(), 20_000.0);
        // Consecutive assignment goes on with the adjusting loop, which sent
        // the last packet: 20..39 adjusting, 40..59 probe.
        let sent = host.send_allowed(usize::MAX);
        assert_eq!(sent, 20..60);
        assert_eq!(host.controller.last_loop(), Some(Loop::Probe));
        host.event(&[], &[40]);
        host
    }

    #[test]
    fn drawn_assignment_gives_the_probe_its_share_of_the_packets() {
        // The draw is uniform: a fifth of 10 000 numbers fall below 0.2.
        let below = (0..10_000).filter(|&n| draw(n) < 0.2).count();
        assert!((1_900..2_100).contains(&below), "{below}");
        // PA-MulTCP(4) at the start, probe 10 packets and adjusting 10
        // while both are open: each packet goes to either, about half each.
        let mut host = Host::new(pa_multcp("pa-multcp:n=4"));
        let loops = loops_of(&mut host, 16);
        let probe = loops.iter().filter(|&&l| l == Loop::Probe).count();
        assert!((4..=12).contains(&probe), "{loops:?}");
    }

    #[test]
    fn measured_cap_is_n_minus_one_times_the_probe_window_in_slow_start() {
        let mut host = Host::new(pa_multcp("pa-multcp:n=4"));
        host.round();
        let controller = &host.controller;
        let probe = controller.probe_window();
        assert_eq!(controller.w_max().map(|packets| packets * 1000.0), Some(3.0 * probe));
        assert!(controller.adjusting_loop().window() <= 3.0 * probe);
    }

    #[test]
    fn measured_cap_follows_the_probes_average_over_its_epochs() {
        // Probe loss events every 4 rounds of 100 ms; the cap is g (N - 1)
        // times the probe's time-averaged window, and g is 1 or more.
        let mut host = Host::new(pa_multcp("pa-multcp:n=4"));
        for _ in 0..8 {
            for _ in 0..4 {
                host.round();
                host.now = host.now + Duration::from_millis(100);
            }
            let sent = host.send_allowed(usize::MAX);
            let probe_packet = sent
                .clone()
                .find(|&n| host.controller.ledger.packets.iter().any(|e| e.number == n && e.owner == Loop::Probe));
            let others: Vec<u64> = sent.filter(|&n| Some(n) != probe_packet).collect();
            host.event(&others, &probe_packet.into_iter().collect::<Vec<_>>());
        }
        let snapshot = host.controller.snapshot();
        let (gain, average) = (snapshot.number("cap_gain").unwrap(), snapshot.number("probe_average").unwrap());
        assert!(gain >= 1.0 && gain <= 2.0, "{snapshot:?}");
        assert!(close(snapshot.number("w_max").unwrap(), gain * 3.0 * average, 1e-9), "{snapshot:?}");
        assert!(host.controller.adjusting_loop().window() <= gain * 3.0 * average + 1e-6);
    }

    #[test]
    fn adjusting_pair_is_sqrt_n_and_two_over_one_plus_three_n_to_the_1_5() {
        // N' = 3: AIMD(√3, 2/(1 + 3·3^1.5)) = AIMD(1.7321, 0.12057).
        let pair = loop_pair(3.0);
        assert_eq!(pair.increase, 3f64.sqrt());
        assert!(close(pair.decrease, 2.0 / (1.0 + 3.0 * 3f64.powf(1.5)), 1e-15));
        assert!(close(pair.flowshares(), 3.0, 1e-12));
        assert_eq!(loop_pair(1.0), Aimd::STANDARD);
        // Below one flowshare: AIMD(s², 1/2).
        assert_eq!(loop_pair(0.5), Aimd { increase: 0.25, decrease: 0.5 });
    }

    #[test]
    fn w_max_for_a_given_p_is_eq9_for_n_minus_one_flowshares() {
        // N = 4, p = 0.01: W_max = sqrt(2√3 / (0.12057 · 1.87943 · 0.01)) = 39.099
        // packets, and eq. (10): 0.93972 · 39.099 = 3 · sqrt(150) packets per RTT.
        let config = PaMulTcpConfig::new(4.0, Assignment::Consecutive, ProbeKind::Reno).unwrap();
        let w_max = config.w_max(0.01, Duration::from_millis(100)).unwrap();
        assert!(close(w_max, 39.099368745702826, 1e-14), "{w_max}");
        let b = loop_pair(3.0).decrease;
        assert!(close((2.0 - b) / 2.0 * w_max, 3.0 * 150f64.sqrt(), 1e-14));
        assert_eq!(
            PaMulTcpConfig::new(1.0, Assignment::Consecutive, ProbeKind::Reno).unwrap().w_max(0.01, Duration::ZERO),
            None
        );
    }

    #[test]
    fn cubic_probe_targets_n_minus_one_cubic_reno_flowshares() {
        // N = 4, p = 1e-4, RTT 100 ms: W̄_c = 187.40, R = 187.40 / 122.47 =
        // 1.5301, the pair is for 4.5903 Reno flowshares, W_max = 581.26 packets
        // = 2 · 3 · W̄_c / (2 - b).
        let config = PaMulTcpConfig::new(4.0, Assignment::Consecutive, ProbeKind::Cubic).unwrap();
        let rtt = Duration::from_millis(100);
        assert!(close(cubic_reno_flowshares(1e-4, rtt), 1.5301164627317854, 1e-14));
        let w_max = config.w_max(1e-4, rtt).unwrap();
        assert!(close(w_max, 581.2553602562923, 1e-14), "{w_max}");
        let b = loop_pair(config.adjusting_flowshares(Some(1e-4), rtt)).decrease;
        let cubic = crate::equations::cubic_average_window(&CubicParams::STANDARD, 1e-4, rtt);
        assert!(close((2.0 - b) / 2.0 * w_max, 3.0 * cubic, 1e-14));
        // Where CUBIC is Reno-friendly (p = 0.01, RTT 10 ms) it is Reno's W_max.
        let reno = PaMulTcpConfig::new(4.0, Assignment::Consecutive, ProbeKind::Reno).unwrap();
        let rtt = Duration::from_millis(10);
        assert_eq!(config.w_max(0.01, rtt), reno.w_max(0.01, rtt));
    }

    #[test]
    fn slow_start_exit_seeds_p_from_half_the_probe_window() {
        // The probe loses at 20 packets: window 10, and the seeded interval is
        // 3 · 10² / 8 = 37.5 packets. The open interval (20 packets since the
        // loss) is shorter, so p = 1/37.5.
        let host = after_first_probe_loss("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper");
        let controller = &host.controller;
        assert_eq!(controller.probe_window(), 10_000.0);
        assert!(close(controller.loss_event_rate().unwrap(), 1.0 / 37.5, 1e-15));
        // W_max for N' = 3 at p = 1/37.5: 23.943 packets; the adjusting loop
        // (20 packets, still in slow start) keeps its window and its slow start
        // ends at W_max.
        let w_max = controller.w_max().unwrap();
        assert!(close(w_max, 23.943375672974064, 1e-14), "{w_max}");
        assert_eq!(controller.adjusting_loop().window(), 20_000.0);
        assert_eq!(controller.adjusting_loop().ssthresh(), w_max * 1000.0);
        assert_eq!(controller.counters().loss_events, 1);
        let snapshot = controller.snapshot();
        assert_eq!(snapshot.number("w_max"), Some(w_max * 1000.0));
        assert_eq!(snapshot.number("probe_window"), Some(10_000.0));
        assert_eq!(snapshot.number("adjusting_window"), Some(20_000.0));
        assert_eq!(snapshot.congestion_window, 30_000);
        assert_eq!(snapshot.number("loss_event_rate"), controller.loss_event_rate());
        assert_eq!(snapshot.phase, "recovery");
    }

    #[test]
    fn adjusting_window_is_clamped_to_w_max_and_stops_there() {
        let mut host = after_first_probe_loss("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper");
        // Acknowledge the adjusting loop's 20 packets: slow start would reach 40.
        let adjusting: Vec<u64> = (20..40).collect();
        host.event(&adjusting, &[]);
        let w_max = host.controller.w_max().unwrap();
        assert_eq!(host.controller.adjusting_loop().window(), w_max * 1000.0);
    }

    #[test]
    fn window_after_loss_is_one_minus_b_times_w_in_each_loop() {
        let mut host = after_first_probe_loss("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper");
        // Probe: 20 -> 10 packets (b = 1/2). Adjusting: a loss at 20 packets
        // leaves (1 - 0.12057) · 20 = 17.589 packets.
        host.event(&[], &[20]);
        let b = loop_pair(3.0).decrease;
        assert_eq!(host.controller.adjusting_loop().window(), 20_000.0 * (1.0 - b));
        assert_eq!(host.controller.adjusting_loop().ssthresh(), 20_000.0 * (1.0 - b));
        assert_eq!(host.controller.probe_window(), 10_000.0);
        // Another loss of a packet sent before the decrease: same event.
        host.event(&[], &[21]);
        assert_eq!(host.controller.adjusting_loop().window(), 20_000.0 * (1.0 - b));
        assert_eq!(host.controller.counters().loss_events, 2);
    }

    #[test]
    fn growth_per_rtt_is_one_packet_in_the_probe_and_sqrt_n_prime_in_the_adjusting_loop() {
        let mut host = after_first_probe_loss("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper");
        host.event(&[], &[20]); // adjusting: 20 -> 17.589 packets
        let outstanding: Vec<u64> = host.outstanding.iter().map(|&(n, _)| n).collect();
        host.event(&outstanding, &[]); // sent before the decreases: no growth
        assert_eq!(host.controller.probe_window(), 10_000.0);
        let b = loop_pair(3.0).decrease;
        assert_eq!(host.controller.adjusting_loop().window(), 20_000.0 * (1.0 - b));
        // Send what the windows allow: consecutive assignment continues on the
        // probe loop (it sent the last packet), 10 packets, then 18 on the
        // adjusting loop: it is open while less than its 17 589 bytes are in flight.
        let mut sent = Vec::new();
        while host.controller.can_send(host.in_flight) {
            host.send(1);
            sent.push((host.next_number - 1, host.controller.last_loop().unwrap()));
        }
        let on = |which: Loop| sent.iter().filter(|&&(_, l)| l == which).count();
        assert_eq!((on(Loop::Adjusting), on(Loop::Probe)), (18, 10));
        // Acknowledged one by one, every ack adds a · 1000 · 1000 / w to its
        // loop's window: a = 1 in the probe, √3 in the adjusting loop.
        let mut probe = 10_000.0f64;
        let mut adjusting = 20_000.0 * (1.0 - b);
        for (number, owner) in sent {
            host.event(&[number], &[]);
            match owner {
                Loop::Probe => probe += 1_000_000.0 / probe,
                Loop::Adjusting => adjusting += 3f64.sqrt() * 1_000_000.0 / adjusting,
            }
        }
        assert!(close(host.controller.probe_window(), probe, 1e-12), "{} {probe}", host.controller.probe_window());
        assert!(close(host.controller.adjusting_loop().window(), adjusting, 1e-12));
        // One window of acks adds about a packets per loop: 10 acks to a
        // 10-packet window add 0.959, 18 acks to 17.589 packets add 1.695
        // (√3 = 1.732 for a full window).
        assert_eq!(probe as u64, 10_958);
        assert_eq!(adjusting as u64, 19_284);
    }

    #[test]
    fn consecutive_assignment_fills_one_loop_then_the_other() {
        let mut host = Host::new(pa_multcp("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper"));
        let loops = loops_of(&mut host, 20);
        assert!(loops[..10].iter().all(|&l| l == Loop::Probe));
        assert!(loops[10..].iter().all(|&l| l == Loop::Adjusting));
        // Both loops are full: a packet the host sends anyway (a PTO probe)
        // goes to the probe loop, although the last one went to the adjusting loop.
        assert!(!host.controller.can_send(host.in_flight));
        assert_eq!(loops_of(&mut host, 1), [Loop::Probe]);
        assert_eq!(host.controller.snapshot().value("last_loop"), Some(Value::Name("probe")));
        // Ack one packet of each loop: both windows grow to 11 packets, the
        // probe has 10 in flight and the adjusting loop 9. The probe loop
        // (last used) takes one packet, then the adjusting loop two.
        host.event(&[0, 10], &[]);
        assert_eq!(loops_of(&mut host, 3), [Loop::Probe, Loop::Adjusting, Loop::Adjusting]);
        assert!(!host.controller.can_send(host.in_flight));
        // Then the adjusting loop stays in use while it is open: ack two of its packets.
        host.event(&[11, 12], &[]);
        assert_eq!(loops_of(&mut host, 4), [Loop::Adjusting; 4]);
        assert!(!host.controller.can_send(host.in_flight));
    }

    #[test]
    fn interleaved_assignment_alternates_while_both_loops_are_open() {
        let mut host = Host::new(pa_multcp("pa-multcp:n=4,assign=interleave,probe=reno,cap=paper"));
        let loops = loops_of(&mut host, 20);
        let alternating: Vec<Loop> = (0..20).map(|i| if i % 2 == 0 { Loop::Probe } else { Loop::Adjusting }).collect();
        assert_eq!(loops, alternating);
        // Only the probe loop has room: it takes consecutive packets.
        host.event(&[0, 2], &[]);
        assert_eq!(loops_of(&mut host, 2), [Loop::Probe, Loop::Probe]);
    }

    #[test]
    fn assignment_rules() {
        use Assignment::*;
        use Loop::*;
        // The fifth argument (probe due) matters for the draw only.
        for due in [true, false] {
            assert_eq!(assign(Consecutive, None, true, true, due), Probe);
            assert_eq!(assign(Consecutive, Some(Adjusting), true, true, due), Adjusting);
            assert_eq!(assign(Consecutive, Some(Adjusting), true, false, due), Probe);
            assert_eq!(assign(Interleave, None, true, true, due), Probe);
            assert_eq!(assign(Interleave, Some(Probe), true, true, due), Adjusting);
            assert_eq!(assign(Interleave, Some(Probe), true, false, due), Probe);
        }
        assert_eq!(assign(Draw, Some(Probe), true, true, true), Probe);
        assert_eq!(assign(Draw, Some(Probe), true, true, false), Adjusting);
        assert_eq!(assign(Draw, Some(Adjusting), false, true, true), Adjusting);
        for mode in [Consecutive, Interleave, Draw] {
            for previous in [None, Some(Probe), Some(Adjusting)] {
                assert_eq!(assign(mode, previous, false, false, true), Probe);
            }
        }
    }

    #[test]
    fn acks_and_losses_go_back_to_the_loop_that_sent_the_packet() {
        let mut host = Host::new(pa_multcp("pa-multcp:n=4,assign=interleave,probe=reno,cap=paper"));
        host.send(20); // even numbers probe, odd adjusting
        host.event(&[1, 3, 5], &[]);
        assert_eq!(host.controller.adjusting_loop().window(), 13_000.0);
        assert_eq!(host.controller.probe_window(), 10_000.0);
        host.event(&[], &[7]);
        assert_eq!(host.controller.probe_window(), 10_000.0);
        assert_eq!(host.controller.loss_event_rate(), None); // probe saw no loss
        assert!(host.controller.adjusting_loop().in_recovery());
    }

    #[test]
    fn weight_change_mid_flight_updates_the_pair_and_w_max_at_once() {
        let mut host = after_first_probe_loss("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper");
        // N = 8: N' = 7, AIMD(√7, 0.035360), W_max at p = 1/37.5 is 53.445 packets.
        host.controller.set_weight(8.0).unwrap();
        assert_eq!(host.controller.adjusting_loop().aimd(), loop_pair(7.0));
        assert!(close(host.controller.w_max().unwrap(), 53.444911182523064, 1e-14));
        assert_eq!(host.controller.adjusting_loop().window(), 20_000.0);
        // N = 2: N' = 1, AIMD(1, 1/2), W_max = sqrt(8/3 · 37.5) = 10 packets:
        // window and slow start threshold are clamped at once.
        host.controller.set_weight(2.0).unwrap();
        assert_eq!(host.controller.adjusting_loop().aimd(), Aimd::STANDARD);
        assert!(close(host.controller.w_max().unwrap(), 10.0, 1e-14));
        assert!(close(host.controller.adjusting_loop().window(), 10_000.0, 1e-14));
        assert!(close(host.controller.adjusting_loop().ssthresh(), 10_000.0, 1e-14));
        // N = 1: no adjusting loop; its packets in flight still resolve to it.
        host.controller.set_weight(1.0).unwrap();
        assert_eq!(host.controller.congestion_window(), 10_000);
        assert_eq!(host.controller.w_max(), None);
        assert_eq!(host.controller.snapshot().number("adjusting_window"), None);
        let adjusting: Vec<u64> = (20..40).collect();
        host.event(&adjusting, &[]);
        assert_eq!(host.controller.adjusting_in_flight, 0);
        assert!(host.controller.set_weight(0.0).is_err());
        assert_eq!(host.controller.config().n, 1.0);
    }

    #[test]
    fn one_flowshare_is_the_probe_loop_alone() {
        let mut host = Host::new(pa_multcp("pa-multcp:n=1,probe=reno,assign=consecutive,cap=paper"));
        assert_eq!(host.controller.congestion_window(), 10_000);
        assert!(loops_of(&mut host, 12).iter().all(|&l| l == Loop::Probe));
    }

    #[test]
    fn scavenger_probe_is_aimd_n_squared_one_half() {
        let controller = pa_multcp("pa-multcp:n=0.5,probe=reno,assign=consecutive,cap=paper");
        match &controller.probe {
            ProbeLoop::Reno(window) => assert_eq!(window.aimd(), Aimd { increase: 0.25, decrease: 0.5 }),
            other => panic!("{other:?}"),
        }
        let cubic = pa_multcp("pa-multcp:n=0.5,probe=cubic");
        match &cubic.probe {
            ProbeLoop::Cubic(window) => assert_eq!(window.params(), cubic_flow_params(0.5)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn adjusting_loop_starts_at_a_share_of_the_initial_window() {
        // 1 < N < 2: IW · (N - 1); never below 2 packets.
        assert_eq!(pa_multcp("pa-multcp:n=1.5").congestion_window(), 15_000);
        assert_eq!(pa_multcp("pa-multcp:n=1.01").congestion_window(), 12_000);
        assert_eq!(pa_multcp("pa-multcp:n=4").congestion_window(), 20_000);
    }

    #[test]
    fn cubic_probe_seeds_p_from_cubics_epoch_window() {
        // W = 10 segments at RTT 100 ms is Reno-friendly for CUBIC: p is
        // AIMD(α, 0.3)'s eq. (1) inverted, 2α / (0.3 · 1.7 · 100).
        let host = after_first_probe_loss("pa-multcp:n=4,probe=cubic,assign=consecutive,cap=paper");
        let alpha = CubicParams::STANDARD.alpha;
        let seed = 0.3 * 1.7 * 100.0 / (2.0 * alpha);
        assert!(close(host.controller.loss_event_rate().unwrap(), 1.0 / seed, 1e-14));
        assert_eq!(host.controller.probe_window(), 14_000.0); // β = 0.7
    }

    #[test]
    fn host_with_nothing_in_flight_reopens_both_loops() {
        let mut host = Host::new(pa_multcp("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper"));
        host.send(20);
        // The host dropped the packets without telling: it reports nothing in flight.
        host.outstanding.clear();
        host.in_flight = 0;
        host.event(&[], &[]);
        assert_eq!(host.controller.ledger.len(), 0);
        // Without forgetting, both loops would look full and the packet would
        // go to the probe loop; the adjusting loop (last used) has room again.
        assert_eq!(loops_of(&mut host, 1), [Loop::Adjusting]);
    }

    #[test]
    fn ledger_memory_is_released_as_packets_resolve() {
        let mut host = Host::new(pa_multcp("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper"));
        host.send(20);
        let numbers: Vec<u64> = (0..20).rev().collect();
        for number in numbers {
            host.event(&[number], &[]);
        }
        assert_eq!(host.controller.ledger.len(), 0);
        assert_eq!((host.controller.probe_in_flight, host.controller.adjusting_in_flight), (0, 0));
    }

    #[test]
    fn canonical_spec_parses_back_to_the_same_spec() {
        for text in [
            "pa-multcp",
            "pa-multcp:n=4",
            "pa-multcp:n=0.5,assign=interleave",
            "pa-multcp:probe=cubic,n=2.5",
            "pa-multcp:n=8,assign=consecutive,probe=reno",
        ] {
            let spec: Spec = text.parse().unwrap();
            let again: Spec = spec.to_string().parse().unwrap();
            assert_eq!(spec, again, "{text} -> {spec}");
        }
        let spec: Spec = "pa-multcp:probe=cubic,assign=interleave,n=4".parse().unwrap();
        assert_eq!(spec.to_string(), "pa-multcp:n=4,assign=interleave");
        assert_eq!(spec.weight(), 4.0);
        assert_eq!(spec.build(&testing::params()).snapshot().algorithm, "pa-multcp");
    }

    #[test]
    fn spec_keys_and_errors() {
        let error = |text: &str| text.parse::<Spec>().unwrap_err().to_string();
        assert!(error("pa-multcp:n=4,assign=random")
            .contains("assign = \"random\" is not accepted (accepted: consecutive, interleave, draw)"));
        assert!(error("pa-multcp:n=4,probe=bbr").contains("probe = \"bbr\" is not accepted (accepted: reno, cubic)"));
        assert!(error("pa-multcp:n=300").contains("n = 300 is out of range; accepted range [0.01, 256]"));
        assert!(
            error("pa-multcp:n=0.001,probe=cubic").contains("n = 0.001 is out of range; accepted range [0.01, 256]")
        );
        assert!(error("pa-multcp:m=1").contains("m is not a known key (accepted: assign, probe, cap, n)"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        #[test]
        fn random_event_sequences_keep_both_loops_sane(
            n in prop_oneof![0.01f64..=256.0, 0.01f64..4.0],
            interleave in any::<bool>(),
            cubic in any::<bool>(),
            ops in proptest::collection::vec(testing::op(), 1..40),
        ) {
            let assignment = if interleave { Assignment::Interleave } else { Assignment::Consecutive };
            let probe = if cubic { ProbeKind::Cubic } else { ProbeKind::Reno };
            let config = PaMulTcpConfig::new(n, assignment, probe).unwrap();
            let mut host = Host::new(PaMulTcp::new(config, &testing::params()));
            for op in &ops {
                host.apply(op);
                let controller = &host.controller;
                let snapshot = controller.snapshot();
                let minimum = 2 * host.mss;
                let probe = snapshot.number("probe_window").unwrap() as usize;
                prop_assert!(probe >= minimum, "{op:?}: {snapshot:?}");
                prop_assert!(controller.probe.window().is_finite());
                let adjusting = controller.adjusting.window();
                prop_assert!(adjusting.is_finite() && adjusting >= minimum as f64, "{op:?}: {snapshot:?}");
                let adjusting_window = snapshot.number("adjusting_window").map(|window| window as usize);
                prop_assert_eq!(adjusting_window.is_some(), controller.config.n > 1.0);
                let total = probe + adjusting_window.unwrap_or(0);
                prop_assert!(snapshot.congestion_window.abs_diff(total) <= 1, "{op:?}: {snapshot:?}");
                if let Some(p) = snapshot.number("loss_event_rate") {
                    prop_assert!(p > 0.0 && p <= 1.0, "{op:?}: {snapshot:?}");
                }
                if let Some(w_max) = snapshot.number("w_max") {
                    prop_assert!(w_max.is_finite() && w_max > 0.0, "{op:?}: {snapshot:?}");
                }
                let aimd = controller.adjusting.aimd();
                prop_assert!(aimd.increase.is_finite() && aimd.decrease > 0.0 && aimd.decrease < 1.0, "{aimd:?}");
                prop_assert!(snapshot.pacing_rate.is_some());
                let in_flight = controller.probe_in_flight + controller.adjusting_in_flight;
                prop_assert_eq!(in_flight, host.in_flight, "{:?}", op);
            }
        }

        #[test]
        fn w_max_decreases_as_p_grows(
            n in 1.01f64..=256.0,
            cubic in any::<bool>(),
            p in 1e-9f64..1.0,
            factor in 1.0001f64..100.0,
            rtt_ms in 0u64..2000,
        ) {
            let probe = if cubic { ProbeKind::Cubic } else { ProbeKind::Reno };
            let config = PaMulTcpConfig::new(n, Assignment::Consecutive, probe).unwrap();
            let rtt = Duration::from_millis(rtt_ms);
            let higher = (p * factor).min(1.0);
            let (low, high) = (config.w_max(p, rtt).unwrap(), config.w_max(higher, rtt).unwrap());
            prop_assert!(low.is_finite() && high.is_finite());
            prop_assert!(high <= low, "n={n} p={p}: W_max {low} -> {high} at p={higher}");
        }
    }
}
