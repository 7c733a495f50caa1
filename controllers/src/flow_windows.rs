//! A window for each flow a connection stands for: MulCUBIC's
//! `decrease=windows`.
//!
//! N CUBIC flows each run their own epoch: a flow that a loss event hits
//! backs off and regrows along its own cubic curve while the others go on
//! along theirs, so the aggregate grows by the sum of N curves, each the
//! larger of its cubic and Reno-friendly windows. One window with N flows'
//! constants ([`crate::mulcubic`]'s `decrease=per-flow`) can only take the
//! larger of the sums: every loss event restarts its one epoch, cutting
//! short the regrowth of the flows earlier events hit. Where CUBIC's epochs
//! last longer than the time between the aggregate's loss events (paper
//! 000's 400 Mbit/s, 100 ms path at a one-BDP drop-tail queue: one flow's
//! `K` about 2.9 s, the aggregate of 8 flows hit every 1.5 s)
//! MulCUBIC(8) took 0.89-0.90 of its share against 192 CUBIC flows where 8
//! separate CUBIC flows took 0.99-1.02 each (the lab, 3 seeds).
//!
//! Here the connection keeps ⌊N⌋ windows with RFC 9438's constants, and
//! one more worth the rest of N when N is not whole (MulCUBIC of that
//! fraction: [`cubic_flow_params`]). The sum of the windows is the
//! connection's window. What each flow would see of the connection's
//! packets is drawn from the packet numbers, so that a run is reproducible:
//!
//! * an acknowledgement is credited to one flow drawn uniformly, scaled by
//!   that flow's window over the mean, so that each flow is acknowledged in
//!   proportion to its window, as its own packets would be, at a constant
//!   cost per acknowledgement (drawing in proportion to the windows instead
//!   gave the same shares within 0.06 in the runs above);
//! * a lost packet falls to a flow drawn in proportion to the windows, and
//!   backs that flow off unless the same loss event already has;
//! * a flow hit by the current loss event does not grow until the event's
//!   recovery ends; the others grow on.
//!
//! Slow start is the connection's, as one flow's: the first loss event
//! splits the window into equal flows, and persistent congestion joins them
//! again until the next loss event.

use std::time::Duration;

use crate::cubic::CubicEpoch;
use crate::equations::cubic_flow_params;
use crate::equations::CubicParams;
use crate::pacing::draw;
use crate::time::Time;
use crate::window::MINIMUM_WINDOW_PACKETS;

/// Mixed into packet numbers so that the flow an acknowledgement is
/// credited to does not repeat another use of [`draw`] on the same numbers.
const ACK_SALT: u64 = 0x2545_F491_4F6C_DD1D;

/// The same for the flow a lost packet falls to.
const LOSS_SALT: u64 = 0x9E6C_63D0_676A_9A99;

/// The smallest fraction of a flow kept as a window of its own: what is
/// left of N below it is dropped (MulCUBIC's constants reach no lower).
const SMALLEST_FRACTION: f64 = 0.01;

/// One flow's window.
#[derive(Clone, Debug, PartialEq)]
struct FlowWindow {
    /// Its constants: RFC 9438's, or MulCUBIC's for a fraction of a flow.
    params: CubicParams,
    /// Its smallest window, bytes: its share of the connection's.
    minimum: f64,
    /// Its window, bytes.
    window: f64,
    epoch: CubicEpoch,
    /// Whether the current loss event has backed it off.
    hit: bool,
}

/// The windows of the flows a connection stands for.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowWindows {
    /// N, what the flows are worth together.
    n: f64,
    flows: Vec<FlowWindow>,
    /// The sum of the flows' windows, bytes.
    total: f64,
}

impl FlowWindows {
    /// `window` bytes split among `n > 1` flows in proportion to what each
    /// is worth, each at the start of its first epoch.
    pub fn split(window: f64, n: f64, mss: f64) -> Self {
        let whole = n.floor();
        let fraction = n - whole;
        let mut shares = vec![(CubicParams::STANDARD, 1.0); whole as usize];
        if fraction >= SMALLEST_FRACTION {
            shares.push((cubic_flow_params(fraction), fraction));
        }
        let worth: f64 = shares.iter().map(|(_, share)| share).sum();
        let flows: Vec<FlowWindow> = shares
            .into_iter()
            .map(|(params, share)| {
                // The connection's minimum window is shared, not multiplied:
                // splitting must not raise the window (N = 256 flows of two
                // packets each would turn 20 packets into 512).
                let minimum = MINIMUM_WINDOW_PACKETS * mss * share / worth;
                let window = (window * share / worth).max(minimum);
                FlowWindow { params, minimum, window, epoch: CubicEpoch::new(window), hit: false }
            })
            .collect();
        let total = flows.iter().map(|flow| flow.window).sum();
        FlowWindows { n, flows, total }
    }

    /// The connection's window: the sum of the flows', bytes.
    pub fn total(&self) -> f64 {
        self.total
    }

    /// N, the flows the windows stand for together.
    pub fn n(&self) -> f64 {
        self.n
    }

    /// Packet `number`'s `acked` bytes were acknowledged at `now`, with
    /// smoothed RTT `rtt`, during the recovery of a loss event or not.
    pub fn on_ack(&mut self, number: u64, acked: f64, now: Time, rtt: Duration, mss: f64, in_recovery: bool) {
        let count = self.flows.len();
        let index = ((draw(number ^ ACK_SALT) * count as f64) as usize).min(count - 1);
        let total = self.total;
        let flow = &mut self.flows[index];
        if flow.hit && in_recovery {
            return;
        }
        let credited = acked * count as f64 * flow.window / total;
        let before = flow.window;
        flow.window = flow.epoch.grow(before, &flow.params, flow.params.c, credited, now, rtt, mss);
        self.total += flow.window - before;
    }

    /// Packet `number` was lost; `began_event` if it began a loss event.
    pub fn on_loss(&mut self, number: u64, began_event: bool) {
        if began_event {
            self.flows.iter_mut().for_each(|flow| flow.hit = false);
        }
        let mut point = draw(number ^ LOSS_SALT) * self.total;
        let last = self.flows.len() - 1;
        let index = self
            .flows
            .iter()
            .position(|flow| {
                point -= flow.window;
                point < 0.0
            })
            .unwrap_or(last);
        let flow = &mut self.flows[index];
        if flow.hit {
            return;
        }
        flow.hit = true;
        let before = flow.window;
        flow.window = flow.epoch.back_off(before, &flow.params).max(flow.minimum);
        self.total += flow.window - before;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: f64 = 1000.0;

    fn windows(flows: &FlowWindows) -> Vec<f64> {
        flows.flows.iter().map(|flow| flow.window).collect()
    }

    #[test]
    fn split_keeps_the_window_and_gives_a_fraction_of_a_flow_its_share() {
        let flows = FlowWindows::split(80_000.0, 8.0, MSS);
        assert_eq!(windows(&flows), vec![10_000.0; 8]);
        assert_eq!(flows.total(), 80_000.0);
        let flows = FlowWindows::split(50_000.0, 2.5, MSS);
        assert_eq!(windows(&flows), vec![20_000.0, 20_000.0, 10_000.0]);
        assert_eq!(flows.flows[2].params, cubic_flow_params(0.5));
        assert_eq!(FlowWindows::split(50_000.0, 2.001, MSS).flows.len(), 2);
    }

    #[test]
    fn splitting_never_raises_the_window_and_the_flows_share_its_minimum() {
        let mut flows = FlowWindows::split(20_000.0, 256.0, MSS);
        assert_eq!(flows.flows.len(), 256);
        assert!((flows.total() - 20_000.0).abs() < 1e-6);
        // Backed off as far as they go, the flows hold the connection's
        // minimum of two packets between them.
        for event in 0..2_000u64 {
            for number in 0..64 {
                flows.on_loss(event * 64 + number, number == 0);
            }
        }
        assert!((flows.total() - 2.0 * MSS).abs() < 1e-6, "{}", flows.total());
    }

    #[test]
    fn a_loss_event_backs_off_each_flow_it_hits_once() {
        let mut flows = FlowWindows::split(80_000.0, 8.0, MSS);
        flows.on_loss(1, true);
        let after_one = windows(&flows);
        assert_eq!(after_one.iter().filter(|&&w| w == 7_000.0).count(), 1);
        assert_eq!(flows.total(), 77_000.0);
        // Every further loss of the event hits a flow not yet hit or none.
        for number in 2..200 {
            flows.on_loss(number, false);
        }
        assert!(windows(&flows).iter().all(|&w| w == 7_000.0), "{:?}", windows(&flows));
        assert_eq!(flows.total(), 56_000.0);
        // A new event may hit them again: the second back-off of a flow.
        flows.on_loss(500, true);
        assert_eq!(windows(&flows).iter().filter(|&&w| w == 4_900.0).count(), 1);
    }

    #[test]
    fn losses_fall_to_flows_in_proportion_to_their_windows() {
        let mut hits = [0u32; 2];
        for number in 0..10_000u64 {
            let mut flows = FlowWindows::split(40_000.0, 2.0, MSS);
            flows.flows[0].window = 30_000.0;
            flows.flows[1].window = 10_000.0;
            flows.on_loss(number, true);
            hits[usize::from(flows.flows[0].window == 30_000.0)] += 1;
        }
        let share = hits[0] as f64 / 10_000.0;
        assert!((share - 0.75).abs() < 0.02, "{hits:?}");
    }

    #[test]
    fn flows_hit_wait_for_the_recovery_and_the_others_grow_alpha_per_window() {
        let rtt = Duration::from_millis(100);
        let mut flows = FlowWindows::split(80_000.0, 8.0, MSS);
        flows.on_loss(1, true);
        let hit = flows.flows.iter().position(|flow| flow.window == 7_000.0).unwrap();
        // One window's worth of acknowledgements in recovery: the 7 flows
        // not hit grow, the one hit does not.
        let mut number = 10;
        let now = Time::from_nanos(1);
        while number < 10 + 77 {
            flows.on_ack(number, MSS, now, rtt, MSS, true);
            number += 1;
        }
        assert_eq!(flows.flows[hit].window, 7_000.0);
        assert!(flows.total() > 77_000.0);
        // After it, each flow grows in its own Reno-friendly region per
        // window acknowledged: the one hit by α below its W_max, the others
        // by 1, being above theirs (the windows they were split at).
        let start = flows.total();
        let acks = (start / MSS) as u64;
        for _ in 0..acks {
            flows.on_ack(number, MSS, now, rtt, MSS, false);
            number += 1;
        }
        let grown = (flows.total() - start) / MSS;
        let expected = 7.0 + CubicParams::STANDARD.alpha;
        assert!((grown / expected - 1.0).abs() < 0.25, "{grown} packets, expected about {expected}");
        let sum: f64 = windows(&flows).iter().sum();
        assert!((flows.total() - sum).abs() < 1e-6);
    }
}
