//! PA-MulTCP's loops: which one sends a packet, the probe loops'
//! algorithm, and the ledger that gives each acknowledgement or loss back to
//! the loop that sent the packet.

use std::time::Duration;

use super::config::Assignment;
use super::config::PaMulTcpConfig;
use super::config::ProbeKind;
use crate::aimd::Aimd;
use crate::controller::Params;
use crate::cubic::CubicWindow;
use crate::equations::cubic_loss_event_rate_at_epoch_window;
use crate::equations::thin_cubic_params;
use crate::equations::CubicParams;
use crate::time::Time;
use crate::window::LossWindow;
use crate::window::WindowLoop;

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

    pub(super) fn other(self) -> Loop {
        match self {
            Loop::Probe => Loop::Adjusting,
            Loop::Adjusting => Loop::Probe,
        }
    }
}

/// The loop a packet in flight belongs to: one of the probe loops, by its
/// index, or the adjusting loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Owner {
    Probe(usize),
    Adjusting,
}

/// The probe whose packets give `p` (its loss intervals) and whose loss
/// events end the measured cap's epochs: with several probes, the others'
/// windows are averaged over the same time.
pub(super) const MEASURING_PROBE: usize = 0;

/// The loop for the next packet, given the loop of the previous one and
/// which loops are open (section 4.3; module docs for the closed case).
/// `probe_due` says, for [`Assignment::Draw`], [`Assignment::Sample`],
/// [`Assignment::Room`] and [`Assignment::Clock`], whether the draw or the
/// probe's clock gave the packet to the probe loop.
pub fn assign(
    assignment: Assignment,
    previous: Option<Loop>,
    probe_open: bool,
    adjusting_open: bool,
    probe_due: bool,
) -> Loop {
    // A fair sample is the draw with every loop counted as having room.
    let open = |which: Loop| {
        assignment == Assignment::Sample
            || match which {
                Loop::Probe => probe_open,
                Loop::Adjusting => adjusting_open,
            }
    };
    // Start on the probe loop, except when alternating.
    let previous = previous.unwrap_or(match assignment {
        Assignment::Interleave => Loop::Adjusting,
        _ => Loop::Probe,
    });
    let (first, second) = match assignment {
        Assignment::Consecutive => (previous, previous.other()),
        Assignment::Interleave => (previous.other(), previous),
        // The rules that draw or clock the probe's packets ask `probe_due`.
        Assignment::Draw | Assignment::Clock | Assignment::Sample | Assignment::Room => match probe_due {
            true => (Loop::Probe, Loop::Adjusting),
            false => (Loop::Adjusting, Loop::Probe),
        },
    };
    if open(first) {
        first
    } else if open(second) {
        second
    } else {
        Loop::Probe
    }
}

/// A probe loop with what the connection keeps for it.
#[derive(Debug)]
pub(super) struct Probe {
    pub(super) window: ProbeLoop,
    /// Its bytes in flight.
    pub(super) in_flight: usize,
    /// When its own pacing clock lets it send again (`assign=clock`).
    pub(super) next: Option<Time>,
}

impl Probe {
    pub(super) fn new(config: &PaMulTcpConfig, params: &Params) -> Self {
        Probe { window: ProbeLoop::new(config, params), in_flight: 0, next: None }
    }

    /// What its window leaves, bytes (negative when more is in flight).
    pub(super) fn room(&self) -> f64 {
        self.window.window() - self.in_flight as f64
    }
}

/// The probe loop: AIMD or CUBIC, used through [`LossWindow`].
#[derive(Clone, Debug)]
pub(super) enum ProbeLoop {
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
    pub(super) fn new(config: &PaMulTcpConfig, params: &Params) -> Self {
        match config.probe {
            ProbeKind::Reno => ProbeLoop::Reno(WindowLoop::new(probe_pair(config, 1.0), params)),
            ProbeKind::Cubic => ProbeLoop::Cubic(CubicWindow::new(probe_cubic_params(config, 1.0), params)),
        }
    }

    /// Follows a weight change, or below one flowshare a change of the
    /// probe's losses per event: the probe is one flow, or N below one.
    pub(super) fn reweight(&mut self, config: &PaMulTcpConfig, losses_per_event: f64) {
        match self {
            ProbeLoop::Reno(window) => window.set_aimd(probe_pair(config, losses_per_event)),
            ProbeLoop::Cubic(window) => {
                let params = probe_cubic_params(config, losses_per_event);
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
    pub(super) fn loss_event_rate_at_epoch_window(&self, window: f64, rtt: Duration) -> f64 {
        match self {
            ProbeLoop::Reno(probe) => {
                let Aimd { increase: a, decrease: b } = probe.aimd();
                2.0 * a / (b * (2.0 - b) * window * window)
            }
            ProbeLoop::Cubic(probe) => cubic_loss_event_rate_at_epoch_window(&probe.params(), window, rtt),
        }
    }
}

/// The Reno probe's pair: one flow, below one flowshare MulTCP(N)'s
/// AIMD(N² R, 1/2) or, with `yield_by=decrease`, a deeper cut and `N R`.
fn probe_pair(config: &PaMulTcpConfig, losses_per_event: f64) -> Aimd {
    let pair = config.yield_by.reno_pair(config.probe_flowshares());
    let ratio = config.thinning.ratio(config.probe_flowshares(), losses_per_event);
    Aimd { increase: pair.increase * ratio, ..pair }
}

/// The probe's CUBIC constants: one flow, MulCUBIC(N) below one flowshare
/// (or its deeper cut, `yield_by=decrease`).
fn probe_cubic_params(config: &PaMulTcpConfig, losses_per_event: f64) -> CubicParams {
    let flowshares = config.probe_flowshares();
    let params = config.yield_by.cubic_params(flowshares);
    thin_cubic_params(params, flowshares, config.thinning.ratio(flowshares, losses_per_event))
}
