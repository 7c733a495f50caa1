//! Reference CUBIC (RFC 9438), the standard peer of hosts that have no
//! built-in one, such as the lab simulator.
//!
//! # Rules (RFC 9438 section 4, windows in segments, time in seconds)
//!
//! * Window growth in congestion avoidance follows
//!   `W_cubic(t) = C (t - K)³ + W_max` from the start of the epoch (the
//!   first acknowledgement after a loss event), with
//!   `K = ∛((W_max - cwnd_epoch) / C)`. Each acknowledged segment moves the
//!   window by `(target - cwnd) / cwnd` towards
//!   `target = W_cubic(t + RTT)`, clamped to `[cwnd, 1.5 cwnd]`.
//! * Reno-friendly region: `W_est` grows by `α_cubic` segments per window
//!   acknowledged, `α_cubic = 3 (1 - β) / (1 + β)`, and by 1 once it passes
//!   W_max; when `W_cubic(t) < W_est` the window is `W_est`.
//! * On a loss event `W_max` is the window (or `cwnd (1 + β) / 2` with fast
//!   convergence, when the window is below the previous `W_max`), and the
//!   window and slow start threshold become `β cwnd`.
//! * On persistent congestion the slow start threshold becomes `β cwnd`, the
//!   window collapses to the minimum and the epoch restarts.
//! * Slow start is standard (HyStart++ is not implemented; quiche's CUBIC
//!   enables it by default, which the lab's validation notes).
//!
//! The constants are parameters ([`CubicParams`], with the window function
//! and the response function in [`crate::equations`]) so that weighted
//! variants can reuse the same state machine.

use std::fmt;
use std::time::Duration;

use crate::controller::Controller;
use crate::controller::Params;
use crate::equations::CubicParams;
use crate::flow_windows::FlowWindows;
use crate::grammar::Args;
use crate::grammar::SpecError;
use crate::spec::AlgorithmConfig;
use crate::time::Time;
use crate::virtual_flows::LossEvent;
use crate::window::LossWindow;
use crate::window::Named;
use crate::window::RecoveryPeriod;
use crate::window::SingleWindow;
use crate::window::MINIMUM_WINDOW_PACKETS;

/// CUBIC's window state machine, windows in bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct CubicWindow {
    /// Constants.
    params: CubicParams,
    /// Congestion window, bytes.
    window: f64,
    /// Slow start threshold, bytes.
    ssthresh: f64,
    /// The congestion avoidance epoch.
    epoch: CubicEpoch,
    /// Maximum datagram size, bytes.
    max_datagram_size: f64,
    /// Which packets were sent before the last decrease.
    recovery: RecoveryPeriod,
    /// The number of equal flows the window stands for when it attributes
    /// losses to flows (MulCUBIC's per-flow decrease); 1 for one decrease
    /// per loss event.
    virtual_flows: f64,
    /// The current loss event of a window standing for several flows.
    event: Option<LossEvent>,
    /// Whether the window stands for flows with a window each.
    flow_windows: FlowWindowState,
}

/// The flows a window stands for with a window each ([`FlowWindows`],
/// MulCUBIC's `decrease=windows`).
#[derive(Clone, Debug, PartialEq)]
enum FlowWindowState {
    /// None: one window (for one flow, or for several by `virtual_flows`).
    Off,
    /// `n` flows, in slow start, which is one flow's, until the next loss
    /// event splits the window among them.
    Joined(f64),
    /// The flows' windows.
    Split(FlowWindows),
}

/// One CUBIC flow's congestion avoidance (RFC 9438 section 4): the epoch a
/// loss event starts and the window's growth through it. [`CubicWindow`]
/// runs one; [`FlowWindows`] one for each flow it stands for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CubicEpoch {
    /// Window before the last decrease, bytes (`W_max`).
    w_max: f64,
    /// `W_max` before the last decrease, for fast convergence (bytes).
    previous_w_max: f64,
    /// Start of the current epoch: the first acknowledgement after a decrease.
    start: Option<Time>,
    /// `K` of the current epoch, seconds.
    k: f64,
    /// Reno-friendly window estimate, bytes.
    w_est: f64,
}

impl CubicEpoch {
    /// Before any loss, for a window of `window` bytes.
    pub(crate) fn new(window: f64) -> Self {
        CubicEpoch { w_max: 0.0, previous_w_max: 0.0, start: None, k: 0.0, w_est: window }
    }

    /// The next acknowledgement starts a new epoch.
    pub(crate) fn restart(&mut self) {
        self.start = None;
    }

    /// The window, `window` bytes now, after `acked` bytes were acknowledged
    /// at `now` in congestion avoidance with smoothed RTT `rtt`: it moves
    /// towards `W_cubic(t + RTT)` with `params` but `C` = `cubic_c`, or
    /// follows `W_est` where that is larger.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn grow(
        &mut self,
        window: f64,
        params: &CubicParams,
        cubic_c: f64,
        acked: f64,
        now: Time,
        rtt: Duration,
        mss: f64,
    ) -> f64 {
        let cubic = CubicParams { c: cubic_c, ..*params };
        let epoch_start = *self.start.get_or_insert_with(|| {
            // A new epoch starts at the current window.
            if self.w_max < window {
                self.w_max = window;
            }
            self.k = cubic.k(self.w_max / mss, window / mss);
            self.w_est = window;
            now
        });
        let t = now.saturating_duration_since(epoch_start).as_secs_f64();
        let w_max_segments = self.w_max / mss;
        let cubic_now = cubic.w_cubic(t, self.k, w_max_segments) * mss;
        let target = (cubic.w_cubic(t + rtt.as_secs_f64(), self.k, w_max_segments) * mss).clamp(window, 1.5 * window);

        let alpha = if self.w_est < self.w_max { params.alpha } else { params.alpha_above_w_max };
        self.w_est += alpha * mss * acked / window;

        if cubic_now < self.w_est {
            self.w_est.max(window)
        } else {
            window + (target - window) * acked / window
        }
    }

    /// A loss event at a window of `window` bytes: remembers `W_max`
    /// (lowered by fast convergence below the previous one) and ends the
    /// epoch. Returns the window the decrease leaves, `β` of it.
    pub(crate) fn back_off(&mut self, window: f64, params: &CubicParams) -> f64 {
        self.w_max = if params.fast_convergence && window < self.previous_w_max {
            window * (1.0 + params.beta) / 2.0
        } else {
            window
        };
        self.previous_w_max = self.w_max;
        self.start = None;
        window * params.beta
    }

    /// Persistent congestion at a window of `window` bytes: it becomes
    /// `W_max` and the epoch ends.
    pub(crate) fn collapse(&mut self, window: f64) {
        self.w_max = window;
        self.previous_w_max = window;
        self.start = None;
    }
}

impl CubicWindow {
    /// A window in slow start at the initial window.
    pub fn new(params: CubicParams, host: &Params) -> Self {
        let max_datagram_size = host.max_datagram_size as f64;
        let window = host.initial_window_packets as f64 * max_datagram_size;
        CubicWindow {
            params,
            window,
            ssthresh: f64::INFINITY,
            epoch: CubicEpoch::new(window),
            max_datagram_size,
            recovery: RecoveryPeriod::default(),
            virtual_flows: 1.0,
            event: None,
            flow_windows: FlowWindowState::Off,
        }
    }

    /// Makes the window stand for `n` equal flows: a loss event removes
    /// `1 - β` of the window for each virtual flow its losses hit, and the
    /// flows hit regrow together ([`crate::mulcubic`]); `n <= 1` is one
    /// decrease per loss event.
    pub fn set_virtual_flows(&mut self, n: f64) {
        self.virtual_flows = n.max(1.0);
    }

    /// Makes the window stand for `n` flows with a window each (`Some`),
    /// from the next loss event on, or for one (`None`). Windows already
    /// split are split again among the new number of flows.
    pub fn set_flow_windows(&mut self, n: Option<f64>) {
        self.flow_windows = match (n, &self.flow_windows) {
            (None, _) => FlowWindowState::Off,
            (Some(n), FlowWindowState::Split(windows)) => {
                FlowWindowState::Split(FlowWindows::split(windows.total(), n, self.max_datagram_size))
            }
            (Some(n), _) => FlowWindowState::Joined(n),
        };
    }

    /// The constants.
    pub fn params(&self) -> CubicParams {
        self.params
    }

    /// Replaces the constants; the window is kept and the epoch restarts.
    pub fn set_params(&mut self, params: CubicParams) {
        self.params = params;
        self.epoch.restart();
    }

    /// Congestion window, bytes.
    pub fn window(&self) -> f64 {
        self.window
    }

    /// Slow start threshold, bytes.
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    /// `W_max`, bytes.
    pub fn w_max(&self) -> f64 {
        self.epoch.w_max
    }

    /// `K` of the current epoch, seconds.
    pub fn k(&self) -> f64 {
        self.epoch.k
    }

    /// Whether the window is in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.window < self.ssthresh
    }

    /// Whether no packet sent since the last decrease was acknowledged.
    pub fn in_recovery(&self) -> bool {
        self.recovery.in_recovery()
    }

    /// Phase name for logs.
    pub fn phase(&self) -> &'static str {
        self.recovery.phase(self.in_slow_start())
    }

    fn minimum_window(&self) -> f64 {
        MINIMUM_WINDOW_PACKETS * self.max_datagram_size
    }

    /// Changes the segment size.
    pub fn set_max_datagram_size(&mut self, bytes: usize) {
        self.max_datagram_size = bytes as f64;
        self.window = self.window.max(self.minimum_window());
    }

    /// Packet `number` was sent.
    pub fn on_sent(&mut self, number: u64) {
        self.recovery.on_sent(number);
    }

    /// Packet `number` of `bytes` was acknowledged at `now` with smoothed RTT
    /// `rtt`; `may_grow` is false for app-limited packets.
    pub fn on_ack(&mut self, number: u64, bytes: usize, now: Time, rtt: Duration, may_grow: bool) {
        self.recovery.on_acked(number);
        if !may_grow || bytes == 0 {
            return;
        }
        let acked = bytes as f64;
        if let FlowWindowState::Split(windows) = &mut self.flow_windows {
            let mss = self.max_datagram_size;
            windows.on_ack(number, acked, now, rtt, mss, self.recovery.in_recovery());
            self.window = windows.total().max(self.minimum_window());
            return;
        }
        if self.recovery.sent_before_decrease(number) {
            // Of the virtual flows, only those the event hit are in
            // recovery: the others grow on, at their Reno-friendly pace.
            if let Some(event) = &self.event {
                let unhit = event.unhit();
                self.window += unhit * self.params.alpha * self.max_datagram_size * acked / self.window;
            }
            return;
        }
        if self.in_slow_start() {
            self.window += acked;
            return;
        }

        // The flows the last event hit regrow together: `C` times as many.
        let cubic_c = self.params.c * self.flows_hit();
        self.window = self.epoch.grow(self.window, &self.params, cubic_c, acked, now, rtt, self.max_datagram_size);
    }

    /// Packet `number` was lost; returns whether a loss event began.
    pub fn on_loss(&mut self, number: u64) -> bool {
        if !matches!(self.flow_windows, FlowWindowState::Off) {
            return self.on_flow_window_loss(number);
        }
        if self.recovery.sent_before_decrease(number) {
            // Another loss of the event: with virtual flows it may hit one
            // more of them, while the event's recovery lasts.
            let beta = self.params.beta;
            if let Some(event) = self.event.as_mut().filter(|_| self.recovery.in_recovery()) {
                // (Recomputing the window from its size before the event
                // instead gave back the growth of the flows not hit and left
                // MulCUBIC(30) 0.56-0.78 of its share on RED.)
                let taken = event.add_loss(|hits| (hits * (1.0 - beta)).min(0.5_f64.max(1.0 - beta)));
                self.window = (self.window - taken).max(self.minimum_window());
                self.ssthresh = self.window;
            }
            return false;
        }
        self.event = (self.virtual_flows > 1.0).then(|| LossEvent::start(self.window, self.virtual_flows));
        self.window = self.epoch.back_off(self.window, &self.params).max(self.minimum_window());
        self.ssthresh = self.window;
        self.recovery.start(Some(number));
        true
    }

    /// A loss with a window for each flow: the first loss event splits the
    /// window among them, and each loss backs off the flow it falls to,
    /// once per event. Returns whether a loss event began.
    fn on_flow_window_loss(&mut self, number: u64) -> bool {
        let began = !self.recovery.sent_before_decrease(number);
        if !began && !self.recovery.in_recovery() {
            return false;
        }
        if let FlowWindowState::Joined(n) = self.flow_windows {
            self.flow_windows = FlowWindowState::Split(FlowWindows::split(self.window, n, self.max_datagram_size));
        }
        if let FlowWindowState::Split(windows) = &mut self.flow_windows {
            windows.on_loss(number, began);
            self.window = windows.total().max(self.minimum_window());
        }
        self.ssthresh = self.window;
        if began {
            self.recovery.start(Some(number));
        }
        began
    }

    /// Persistent congestion: collapse to the minimum window.
    pub fn on_persistent_congestion(&mut self) {
        self.epoch.collapse(self.window);
        self.ssthresh = (self.window * self.params.beta).max(self.minimum_window());
        self.window = self.minimum_window();
        self.recovery.start(None);
        self.event = None;
        // Slow start is one flow's; the next loss event splits the window again.
        if let FlowWindowState::Split(windows) = &self.flow_windows {
            self.flow_windows = FlowWindowState::Joined(windows.n());
        }
    }

    /// The virtual flows the last loss event hit (1 with none): they regrow
    /// together, so the epoch's cubic grows that many times faster.
    fn flows_hit(&self) -> f64 {
        self.event.as_ref().map_or(1.0, LossEvent::flows_hit)
    }
}

impl LossWindow for CubicWindow {
    fn on_sent(&mut self, number: u64) {
        CubicWindow::on_sent(self, number);
    }

    fn on_acked(&mut self, number: u64, bytes: usize, now: Time, smoothed_rtt: Duration, may_grow: bool) {
        self.on_ack(number, bytes, now, smoothed_rtt, may_grow);
    }

    fn on_lost(&mut self, number: u64) -> bool {
        self.on_loss(number)
    }

    fn collapse(&mut self) {
        self.on_persistent_congestion();
    }

    fn set_max_datagram_size(&mut self, bytes: usize) {
        CubicWindow::set_max_datagram_size(self, bytes);
    }

    fn max_datagram_size(&self) -> f64 {
        self.max_datagram_size
    }

    fn window(&self) -> f64 {
        self.window
    }

    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    fn in_slow_start(&self) -> bool {
        CubicWindow::in_slow_start(self)
    }

    fn recovery(&self) -> &RecoveryPeriod {
        &self.recovery
    }
}

/// The CUBIC controller.
pub type Cubic = SingleWindow<CubicWindow, Named>;

impl Cubic {
    /// CUBIC with RFC 9438's constants.
    pub fn new(params: &Params) -> Self {
        SingleWindow::around(CubicWindow::new(CubicParams::STANDARD, params), Named("cubic"), params)
    }
}

/// The spec `cubic`: no parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubicConfig;

impl AlgorithmConfig for CubicConfig {
    fn from_args(_args: &mut Args) -> Result<Self, SpecError> {
        Ok(CubicConfig)
    }

    fn build(&self, params: &Params) -> Option<Box<dyn Controller>> {
        Some(Box::new(Cubic::new(params)))
    }
}

impl fmt::Display for CubicConfig {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("cubic")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: usize = 1000;

    fn host() -> Params {
        Params { initial_window_packets: 10, max_datagram_size: MSS, initial_rtt: Duration::from_millis(100) }
    }

    /// A CUBIC window grown in slow start to `packets` and then decreased once.
    fn after_loss_at(packets: u64) -> CubicWindow {
        let mut window = CubicWindow::new(CubicParams::STANDARD, &host());
        for n in 0..packets - 10 {
            window.on_sent(n);
            window.on_ack(n, MSS, Time::ZERO, Duration::from_millis(100), true);
        }
        assert_eq!(window.window(), packets as f64 * 1000.0);
        window.on_sent(packets);
        assert!(window.on_loss(packets));
        window
    }

    /// β = 0.925 (MulCUBIC(4)'s β_N) standing for 4 flows, packets 0..30 in
    /// flight.
    fn four_flows_with_30_packets_sent() -> CubicWindow {
        let params = CubicParams { beta: 0.925, ..CubicParams::STANDARD };
        let mut window = CubicWindow::new(params, &host());
        window.set_virtual_flows(4.0);
        for n in 0..30 {
            window.on_sent(n);
        }
        window
    }

    #[test]
    fn per_flow_decrease_takes_one_minus_beta_for_each_flow_hit_and_regrows_them_together() {
        // Two losses in one event hit 1.75 of the 4 flows.
        let mut window = four_flows_with_30_packets_sent();
        let before = window.window();
        assert!(window.on_loss(3));
        assert!(!window.on_loss(4));
        assert!((window.window() - before * (1.0 - 1.75 * 0.075)).abs() < 1e-9);
        assert_eq!(window.w_max(), before);
        // The epoch's K is that of C times the flows hit.
        window.on_sent(30);
        window.on_ack(30, 1000, Time::ZERO, Duration::from_millis(100), true);
        let drop = (before - before * (1.0 - 1.75 * 0.075)) / 1000.0;
        assert!((window.k() - (drop / (1.75 * 0.4)).cbrt()).abs() < 1e-9, "{}", window.k());
    }

    #[test]
    fn a_later_loss_of_the_event_keeps_what_the_flows_not_hit_grew() {
        let mut window = four_flows_with_30_packets_sent();
        let before = window.window();
        assert!(window.on_loss(3));
        // Acks of packets sent before the decrease: the three flows not hit
        // grow on.
        for n in 4..10 {
            window.on_ack(n, MSS, Time::ZERO, Duration::from_millis(100), true);
        }
        let grown = window.window();
        assert!(grown > before * 0.925);
        // The second loss hits 0.75 more flows: it removes their share of the
        // window before the event from the window as it is now.
        assert!(!window.on_loss(10));
        assert!((window.window() - (grown - before * 0.75 * 0.075)).abs() < 1e-9);
        assert_eq!(window.ssthresh(), window.window());
    }

    #[test]
    fn loss_keeps_beta_of_the_window_and_remembers_w_max() {
        let window = after_loss_at(100);
        assert_eq!(window.window(), 70_000.0);
        assert_eq!(window.ssthresh(), 70_000.0);
        assert_eq!(window.w_max(), 100_000.0);
    }

    #[test]
    fn fast_convergence_lowers_w_max_below_the_previous_one() {
        let mut window = after_loss_at(100);
        window.on_sent(200);
        window.on_sent(201);
        window.on_ack(201, MSS, Time::ZERO, Duration::from_millis(100), true);
        // The window is about 70 packets < previous W_max 100: W_max = w (1 + 0.7) / 2.
        let w = window.window();
        assert!(window.on_loss(201));
        assert!((window.w_max() - w * 0.85).abs() < 1e-9);
    }

    #[test]
    fn k_is_the_time_to_return_to_w_max() {
        // W_max 100, cwnd_epoch 70 segments: K = cbrt(30 / 0.4) = cbrt(75) = 4.2172 s.
        let params = CubicParams::STANDARD;
        let k = params.k(100.0, 70.0);
        assert!((k - 75f64.cbrt()).abs() < 1e-12);
        assert!((k - 4.217163326508746).abs() < 1e-12);
        assert!((params.w_cubic(k, k, 100.0) - 100.0).abs() < 1e-12);
        assert!((params.w_cubic(0.0, k, 100.0) - 70.0).abs() < 1e-9);
    }

    #[test]
    fn window_follows_w_cubic_after_the_concave_region() {
        // Long after the loss, at t = 8 s, one acked segment moves the window
        // towards W_cubic(t + RTT), clamped to 1.5 cwnd.
        let mut window = after_loss_at(100);
        let start = Time::from_nanos(1_000_000_000);
        window.on_sent(101);
        window.on_ack(101, MSS, start, Duration::from_millis(100), true); // starts the epoch
        let before = window.window();
        window.on_sent(102);
        window.on_ack(102, MSS, start + Duration::from_secs(8), Duration::from_millis(100), true);
        let target = (CubicParams::STANDARD.w_cubic(8.1, 75f64.cbrt(), 100.0) * 1000.0).clamp(before, 1.5 * before);
        assert!((window.window() - (before + (target - before) * 1000.0 / before)).abs() < 1e-6);
    }

    #[test]
    fn reno_friendly_region_grows_alpha_per_window() {
        // Right after the loss W_cubic is flat near cwnd_epoch; W_est grows by
        // alpha = 0.9/1.7 segments per window acknowledged and wins.
        let mut window = after_loss_at(100);
        let now = Time::from_nanos(1);
        for number in 101..171 {
            window.on_sent(number);
            window.on_ack(number, MSS, now, Duration::from_millis(1), true);
        }
        let alpha = 0.9 / 1.7;
        assert!((window.window() - 70_000.0 - alpha * 1000.0).abs() < 20.0, "{}", window.window());
    }

    #[test]
    fn persistent_congestion_collapses_to_two_packets() {
        let mut window = after_loss_at(100);
        window.on_persistent_congestion();
        assert_eq!(window.window(), 2_000.0);
        assert_eq!(window.ssthresh(), 49_000.0);
    }
}
