//! The loss event rate by TFRC's average loss interval method, measured on
//! the sender (RFC 5348 section 5, as PA-MulTCP and MulTFRC use it).
//!
//! # Method
//!
//! * **Loss events** (RFC 5348 section 5.2): a lost packet starts a new loss
//!   event unless it was sent within one RTT after the first lost packet of
//!   the current event. The sender knows when it sent every packet, so send
//!   times replace the receiver's interpolated arrival times.
//! * **Loss intervals** (section 5.3): the number of packets sent from the
//!   first lost packet of one event up to, not including, the first lost
//!   packet of the next. `I_0`, the open interval, counts the packets sent
//!   since the start of the latest event. Only packets given to this
//!   estimator count, so each window loop of PA-MulTCP measures its own.
//! * **Average** (section 5.4): with `n = 8` intervals and weights
//!   `w = 1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2`,
//!   `I_tot0 = Σ_{i=0}^{k-1} w_i I_i`, `I_tot1 = Σ_{i=1}^{k} w_{i-1} I_i`,
//!   and `p = 1 / (max(I_tot0, I_tot1) / W_tot)`. Taking the larger sum
//!   lets a long open interval lower `p` without a short one raising it.
//! * **History discounting** (section 5.5): when `I_0` exceeds twice the
//!   average of the closed intervals, the closed intervals are weighted down
//!   by `DF = max(0.5, 2 I_mean / I_0)`, so a long loss-free period lowers `p`
//!   faster. When the next loss event closes `I_0`, the discount in force is
//!   kept in the older intervals' weights. With discount factors `d_i` the
//!   sums become `I_tot0 = w_0 I_0 + Σ w_i d_i I_i` over `W_tot0 = w_0 + Σ
//!   w_i d_i` and likewise for `I_tot1`, and `p = min(W_tot0 / I_tot0,
//!   W_tot1 / I_tot1)`.
//! * **Timeouts** (opt-in, [`LossIntervals::begin_timeout`]): when the host
//!   declares persistent congestion (RFC 9002 section 7.6, QUIC's
//!   counterpart of TCP's retransmission timeout), the losses of the packets
//!   outstanding then and of those sent until feedback resumes
//!   ([`LossIntervals::end_timeout`]) form one loss event, however far apart
//!   they were sent. The RTT rule above cannot see this: a QUIC sender keeps
//!   sending probes at growing PTO intervals into a silent path, each more
//!   than an RTT after the last, so a 2 s outage would count as one event
//!   per probe, with intervals of one or two packets, and `p` would jump
//!   from 0.0005 to 0.1 in three outages (the interop runner's blackhole
//!   test, 2 s every 7 s). This departs from RFC 5348 on purpose: its
//!   receiver interpolates the arrival times of the packets lost in a gap
//!   (section 5.2), so it, too, would split an outage into one event per
//!   RTT that lost a packet. The TCP model behind TFRC's equation (Padhye
//!   et al., RFC 5348 section 3.1; paper 004 section II-A) counts a timeout
//!   sequence, retransmissions lost during the backoff included, as one
//!   loss indication and charges its cost through the `t_RTO` term, and
//!   that is the loss process the equation's rate assumes. Hosts that never
//!   call it get RFC 5348's rule alone, as PA-MulTCP does.
//!
//! The number of packets lost in each event (MulTFRC's `j`) is counted
//! exactly and averaged over the same events with the same weights; a
//! timeout's event counts every packet lost in it, the event that ended
//! slow start one ([`LossIntervals::seed`]).

use std::collections::VecDeque;
use std::time::Duration;

use crate::time::Time;

/// Number of loss intervals averaged (RFC 5348: n = 8).
pub const INTERVALS: usize = 8;

/// The interval weights of RFC 5348 section 5.4 for n = 8.
pub const WEIGHTS: [f64; INTERVALS] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

/// The smallest discount factor one loss-free period can apply (RFC 5348
/// section 5.5).
pub const MIN_DISCOUNT: f64 = 0.5;

/// A closed loss interval.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Interval {
    /// Packets in the interval.
    length: f64,
    /// Accumulated history discount of the interval, in (0, 1].
    discount: f64,
    /// Packets lost in the loss event that started the interval.
    losses: u64,
}

/// The loss event that started the open interval.
#[derive(Clone, Copy, Debug, PartialEq)]
struct CurrentEvent {
    /// Send time of its first lost packet.
    start_time: Time,
    /// Sequence index of its first lost packet.
    start_index: u64,
    /// Packets lost in it so far.
    losses: u64,
    /// Send time of its most recently sent lost packet.
    latest_sent: Time,
    /// Whether it ended slow start and counts as one lost packet (see
    /// [`LossIntervals::seed`]).
    ended_slow_start: bool,
}

/// A sent packet whose fate is not known yet.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Outstanding {
    number: u64,
    sent: Time,
    /// Position among the packets given to this estimator.
    index: u64,
    /// Acknowledged or lost; removed once it reaches the front.
    resolved: bool,
}

/// The send times whose losses form one timeout loss event.
#[derive(Clone, Copy, Debug, PartialEq)]
struct TimeoutSpan {
    /// Send time of the oldest packet outstanding when the timeout began.
    from: Time,
    /// When feedback resumed; `None` while the path is still silent.
    until: Option<Time>,
}

impl TimeoutSpan {
    fn contains(&self, sent: Time) -> bool {
        sent >= self.from && self.until.is_none_or(|until| sent <= until)
    }
}

/// What a loss meant for the loss event history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossOutcome {
    /// The loss started a new loss event.
    NewEvent,
    /// The loss belongs to the current loss event.
    SameEvent,
    /// The packet was not (or no longer) tracked by this estimator.
    Unknown,
}

/// The average loss interval estimator.
#[derive(Clone, Debug, Default)]
pub struct LossIntervals {
    /// Closed intervals, most recent first.
    closed: VecDeque<Interval>,
    /// The loss event of the open interval, once there has been one.
    current: Option<CurrentEvent>,
    /// Packets given to [`LossIntervals::on_sent`] so far.
    sent: u64,
    /// Packets sent whose fate is unknown, in packet number order.
    outstanding: VecDeque<Outstanding>,
    /// Loss events so far.
    events: u64,
    /// The latest timeout, until every packet sent in it is resolved.
    timeout: Option<TimeoutSpan>,
}

impl LossIntervals {
    /// An estimator that has seen no loss.
    pub fn new() -> Self {
        LossIntervals::default()
    }

    /// Packet `number` was sent at `time`. Numbers must increase.
    pub fn on_sent(&mut self, number: u64, time: Time) {
        self.outstanding.push_back(Outstanding { number, sent: time, index: self.sent, resolved: false });
        self.sent += 1;
    }

    fn resolve(&mut self, number: u64) -> Option<Outstanding> {
        let position = self.outstanding.binary_search_by_key(&number, |packet| packet.number).ok()?;
        let packet = &mut self.outstanding[position];
        if packet.resolved {
            return None;
        }
        packet.resolved = true;
        let packet = *packet;
        while self.outstanding.front().is_some_and(|packet| packet.resolved) {
            self.outstanding.pop_front();
        }
        if let Some(TimeoutSpan { until: Some(until), .. }) = self.timeout {
            if self.outstanding.front().is_none_or(|oldest| oldest.sent > until) {
                // Every packet sent in the timeout is resolved.
                self.timeout = None;
            }
        }
        Some(packet)
    }

    /// Packet `number` was acknowledged.
    pub fn on_acked(&mut self, number: u64) {
        self.resolve(number);
    }

    /// Packet `number` was declared lost; `rtt` is the smoothed RTT that
    /// separates loss events.
    pub fn on_lost(&mut self, number: u64, rtt: Duration) -> LossOutcome {
        let timeout = self.timeout;
        let Some(packet) = self.resolve(number) else { return LossOutcome::Unknown };
        // The current event is the timeout's once it holds one of its losses.
        let in_timeout = |event: &CurrentEvent| {
            timeout.is_some_and(|span| span.contains(packet.sent) && span.contains(event.latest_sent))
        };
        match &mut self.current {
            Some(event)
                if packet.index >= event.start_index
                    && (packet.sent <= event.start_time + rtt || in_timeout(event)) =>
            {
                if !event.ended_slow_start {
                    event.losses += 1;
                }
                event.latest_sent = event.latest_sent.max(packet.sent);
                LossOutcome::SameEvent
            }
            _ => {
                if let Some(event) = self.current {
                    let length = packet.index.saturating_sub(event.start_index).max(1) as f64;
                    let discount = self.discount_for(length);
                    for interval in &mut self.closed {
                        interval.discount *= discount;
                    }
                    self.closed.push_front(Interval { length, discount: 1.0, losses: event.losses });
                    self.closed.truncate(INTERVALS);
                }
                self.current = Some(CurrentEvent {
                    start_time: packet.sent,
                    start_index: packet.index,
                    losses: 1,
                    latest_sent: packet.sent,
                    ended_slow_start: false,
                });
                self.events += 1;
                LossOutcome::NewEvent
            }
        }
    }

    /// The host declared persistent congestion: the losses of the packets
    /// outstanding now and of those sent until [`LossIntervals::end_timeout`]
    /// form one loss event (see the [module docs](self)). A timeout that
    /// begins before the previous one ended continues it.
    pub fn begin_timeout(&mut self) {
        if self.timeout.is_some_and(|span| span.until.is_none()) {
            return;
        }
        let Some(oldest) = self.outstanding.front() else { return };
        // Packets of an earlier timeout still outstanding keep to its event.
        let from = self.timeout.and_then(|span| span.until).map_or(oldest.sent, |until| oldest.sent.max(until));
        self.timeout = Some(TimeoutSpan { from, until: None });
    }

    /// Feedback resumed at `now` after [`LossIntervals::begin_timeout`]:
    /// packets sent later are grouped by the RTT rule again.
    pub fn end_timeout(&mut self, now: Time) {
        if let Some(span) = &mut self.timeout {
            span.until.get_or_insert(now);
        }
    }

    /// Replaces the whole closed history by one synthetic interval of
    /// `length` packets, as TFRC does after the first loss event (RFC 5348
    /// section 6.3.1) from the rate the flow achieved.
    ///
    /// The current event, the one that ended slow start, then counts as one
    /// lost packet however many it loses. Slow start doubles the rate each
    /// round trip and overshoots the path by up to a window in its last
    /// one: in the interop runner's blackhole test it lost 20 to 55 packets
    /// in one event. That count says how far slow start overshot, as the
    /// interval before it says nothing of the steady state (section 6.3.1),
    /// and MulTFRC computes the synthetic interval for the losses counted
    /// so far, one or a few. Left in `j` for the next eight loss events, it
    /// put MulTFRC(4)'s equation, in which a large `j` means that every flow
    /// times out, at `n / t_RTO` = 41 kB/s instead of the 1.25 MB/s the flow
    /// had reached.
    pub fn seed(&mut self, length: f64) {
        self.closed.clear();
        self.closed.push_front(Interval { length: length.max(1.0), discount: 1.0, losses: 1 });
        if let Some(event) = &mut self.current {
            event.losses = 1;
            event.ended_slow_start = true;
        }
    }

    /// Loss events seen.
    pub fn loss_events(&self) -> u64 {
        self.events
    }

    /// Whether there is at least one closed or seeded interval, i.e. whether
    /// [`LossIntervals::loss_event_rate`] has a value.
    pub fn has_history(&self) -> bool {
        !self.closed.is_empty()
    }

    /// The open interval `I_0`, packets (0 before the first loss event).
    pub fn open_interval(&self) -> f64 {
        self.current.map_or(0.0, |event| self.sent.saturating_sub(event.start_index) as f64)
    }

    /// The weighted mean of the closed intervals alone, with their discounts.
    fn closed_mean(&self) -> f64 {
        let (total, weights) = self.closed.iter().zip(WEIGHTS).fold((0.0, 0.0), |(total, weights), (interval, w)| {
            (total + w * interval.discount * interval.length, weights + w * interval.discount)
        });
        total / weights
    }

    /// The discount the open interval applies to the closed ones now.
    pub fn discount_factor(&self) -> f64 {
        self.discount_for(self.open_interval())
    }

    /// The discount an open interval of `open` packets applies.
    fn discount_for(&self, open: f64) -> f64 {
        if self.closed.is_empty() {
            return 1.0;
        }
        let mean = self.closed_mean();
        if open > 2.0 * mean {
            (2.0 * mean / open).max(MIN_DISCOUNT)
        } else {
            1.0
        }
    }

    /// The loss event rate `p`, once there is a closed (or seeded) interval.
    pub fn loss_event_rate(&self) -> Option<f64> {
        if self.closed.is_empty() {
            return None;
        }
        let discount = self.discount_factor();
        // With the open interval: I_0 at w_0, closed intervals at w_1.. .
        let with_open = self.closed.iter().take(INTERVALS - 1).zip(&WEIGHTS[1..]).fold(
            (WEIGHTS[0] * self.open_interval(), WEIGHTS[0]),
            |(total, weights), (interval, w)| {
                let weight = w * interval.discount * discount;
                (total + weight * interval.length, weights + weight)
            },
        );
        // Without it: closed intervals at w_0.. .
        let closed_only = self.closed.iter().zip(WEIGHTS).fold((0.0, 0.0), |(total, weights), (interval, w)| {
            let weight = w * interval.discount * discount;
            (total + weight * interval.length, weights + weight)
        });
        let rate_with_open = with_open.1 / with_open.0;
        let rate_closed_only = closed_only.1 / closed_only.0;
        Some(rate_with_open.min(rate_closed_only))
    }

    /// Packets lost per loss event (`j`): the weighted average over the
    /// current event and the closed ones, once there has been a loss event.
    pub fn losses_per_event(&self) -> Option<f64> {
        let current = self.current?;
        weighted_mean(std::iter::once(current.losses as f64).chain(self.closed.iter().map(|i| i.losses as f64)))
    }
}

/// The mean of per-event loss counts, most recent first, with [`WEIGHTS`]
/// (counts beyond the eighth are ignored); `None` without any.
pub fn weighted_mean(losses: impl Iterator<Item = f64>) -> Option<f64> {
    let (total, weights) =
        losses.zip(WEIGHTS).fold((0.0, 0.0), |(total, weights), (losses, w)| (total + w * losses, weights + w));
    (weights > 0.0).then(|| total / weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTT: Duration = Duration::from_millis(100);

    /// Sends packets `numbers`, packet n at n milliseconds.
    fn send(estimator: &mut LossIntervals, numbers: std::ops::Range<u64>) {
        for number in numbers.clone() {
            estimator.on_sent(number, Time::from_nanos(number * 1_000_000));
        }
    }

    /// A history with a loss event every `period` packets, `events` times;
    /// the RTT (10 ms) is shorter than the time between losses.
    fn periodic(period: u64, events: u64) -> LossIntervals {
        let mut estimator = LossIntervals::new();
        send(&mut estimator, 0..period * events + 1);
        for event in 1..=events {
            for number in event * period - period..event * period {
                estimator.on_acked(number);
            }
            assert_eq!(estimator.on_lost(event * period, Duration::from_millis(10)), LossOutcome::NewEvent);
        }
        estimator
    }

    #[test]
    fn no_rate_before_an_interval_closes() {
        let estimator = periodic(100, 1);
        assert_eq!(estimator.loss_events(), 1);
        assert_eq!(estimator.loss_event_rate(), None);
        assert!(!estimator.has_history());
    }

    #[test]
    fn periodic_losses_give_one_over_the_period() {
        // Losses every 100 packets: every closed interval is 100 packets; the
        // open one (1 packet sent since) is shorter, so I_tot1 wins: p = 1/100.
        let estimator = periodic(100, 9);
        assert!((estimator.loss_event_rate().unwrap() - 0.01).abs() < 1e-15);
    }

    #[test]
    fn losses_within_one_rtt_of_the_first_are_one_event() {
        let mut estimator = LossIntervals::new();
        send(&mut estimator, 0..400);
        assert_eq!(estimator.on_lost(100, RTT), LossOutcome::NewEvent);
        // Sent 50 ms and 100 ms after packet 100: same event.
        assert_eq!(estimator.on_lost(150, RTT), LossOutcome::SameEvent);
        assert_eq!(estimator.on_lost(200, RTT), LossOutcome::SameEvent);
        // Sent 101 ms after it: a new event; the interval is 201 - 100 = 101 packets.
        assert_eq!(estimator.on_lost(201, RTT), LossOutcome::NewEvent);
        assert_eq!(estimator.loss_events(), 2);
        assert_eq!(estimator.on_lost(201, RTT), LossOutcome::Unknown);
        // I_0 = 400 - 201 = 199 > I_1 = 101 but below twice it, so no discount:
        // I_tot0 = 199 + 101 over W_tot 2 -> mean 150, p = 1/150.
        assert!((estimator.loss_event_rate().unwrap() - 1.0 / 150.0).abs() < 1e-15);
        // The first event lost 3 packets, the current one 1: j = (1 + 3) / 2.
        assert_eq!(estimator.losses_per_event(), Some(2.0));
    }

    #[test]
    fn weights_follow_rfc5348_for_eight_intervals() {
        // Intervals (most recent first) 10, 20, ..., 80 packets, I_0 small:
        // I_tot1 = 10+20+30+40 + 0.8*50 + 0.6*60 + 0.4*70 + 0.2*80 = 220,
        // W_tot = 6, so p = 6/220.
        // Packets are sent 1 ms apart and the RTT is 5 ms, so every loss
        // below starts a new event.
        let rtt = Duration::from_millis(5);
        let mut estimator = LossIntervals::new();
        let lengths = [80u64, 70, 60, 50, 40, 30, 20, 10];
        let mut number = 0;
        send(&mut estimator, 0..400);
        assert_eq!(estimator.on_lost(0, rtt), LossOutcome::NewEvent);
        for length in lengths {
            number += length;
            assert_eq!(estimator.on_lost(number, rtt), LossOutcome::NewEvent);
        }
        let expected = 6.0 / 220.0;
        // I_0 = 400 - 360 = 40: I_tot0 = 40 + 10+20+30 + 0.8*40 + 0.6*50 + 0.4*60 + 0.2*70 = 200 < 220.
        assert!((estimator.loss_event_rate().unwrap() - expected).abs() < 1e-12 * expected);
    }

    #[test]
    fn only_the_last_eight_intervals_count() {
        let estimator = periodic(100, 30);
        assert_eq!(estimator.closed.len(), INTERVALS);
    }

    #[test]
    fn long_open_interval_lowers_p_with_discounting() {
        // Closed intervals of 100; then 1000 packets without loss: I_0 = 1001
        // > 2 * 100, so DF = max(0.5, 200/1001) = 0.5. With the open interval:
        // I_tot0 = 1001 + 0.5 * (100+100+100 + 0.8*100 + 0.6*100 + 0.4*100 +
        // 0.2*100) over W_tot0 = 1 + 0.5 * 5 = 3.5.
        let mut estimator = periodic(100, 9);
        send(&mut estimator, 901..1901);
        assert_eq!(estimator.open_interval(), 1001.0);
        assert_eq!(estimator.discount_factor(), 0.5);
        let expected = 3.5 / (1001.0 + 0.5 * 500.0);
        assert!((estimator.loss_event_rate().unwrap() - expected).abs() < 1e-12 * expected);
        // Without discounting it would be 6 / (1001 + 500) = 0.003997 > 0.002797.
        assert!(expected < 6.0 / 1501.0);
    }

    #[test]
    fn discount_in_force_when_an_event_closes_is_kept() {
        let mut estimator = periodic(100, 9);
        send(&mut estimator, 901..1901);
        assert_eq!(estimator.on_lost(1900, Duration::from_millis(10)), LossOutcome::NewEvent);
        assert_eq!(estimator.closed[0].discount, 1.0);
        assert!(estimator.closed.iter().skip(1).all(|interval| interval.discount == 0.5));
    }

    #[test]
    fn seed_replaces_the_history() {
        let mut estimator = periodic(100, 1);
        estimator.seed(250.0);
        // I_0 = 1 packet: p = 1/250 from the seeded interval alone.
        assert_eq!(estimator.loss_event_rate(), Some(1.0 / 250.0));
    }

    fn ms(millis: u64) -> Time {
        Time::from_nanos(millis * 1_000_000)
    }

    /// An outage as quiche meets it: packet 0 lost (the first loss event),
    /// 1..=99 sent 10 ms apart and 1..=89 acknowledged; 90..=99 (sent at
    /// 900..=990 ms) are outstanding when the path goes silent, and probes
    /// follow at growing PTO intervals: 100 at 1300 ms, 101 at 1700 ms, 102
    /// at 2500 ms. Feedback resumes at 3000 ms; 103 is sent at 3010 ms.
    /// With `timeout` the host declares persistent congestion once 90..=99
    /// are outstanding.
    fn outage(timeout: bool) -> LossIntervals {
        let mut estimator = LossIntervals::new();
        for number in 0..100 {
            estimator.on_sent(number, ms(number * 10));
        }
        assert_eq!(estimator.on_lost(0, RTT), LossOutcome::NewEvent);
        for number in 1..90 {
            estimator.on_acked(number);
        }
        if timeout {
            estimator.begin_timeout();
        }
        for (number, millis) in [(100, 1300), (101, 1700), (102, 2500)] {
            estimator.on_sent(number, ms(millis));
        }
        if timeout {
            estimator.end_timeout(ms(3000));
        }
        estimator.on_sent(103, ms(3010));
        estimator
    }

    #[test]
    fn without_a_timeout_an_outage_counts_one_loss_event_per_probe() {
        // RFC 5348's rule alone: 91..=99 were sent within one RTT (100 ms)
        // of 90, and each probe more than an RTT after the event before.
        let mut estimator = outage(false);
        let new_events = (90..=102).filter(|&number| estimator.on_lost(number, RTT) == LossOutcome::NewEvent).count();
        assert_eq!(new_events, 4);
        // Closed intervals 1, 1, 10, 90 (most recent first) and I_0 = 104 - 102:
        // I_tot1 = 102 over W_tot = 4 beats I_tot0 = 2 + 1 + 1 + 10, so p = 4/102.
        assert!((estimator.loss_event_rate().unwrap() - 4.0 / 102.0).abs() < 1e-15);
        // Events of 1, 1, 1, 10 and 1 packets, the fifth at weight 0.8:
        // (1 + 1 + 1 + 10 + 0.8) / 4.8.
        assert!((estimator.losses_per_event().unwrap() - 13.8 / 4.8).abs() < 1e-15);
    }

    #[test]
    fn a_timeouts_losses_form_one_loss_event() {
        let mut estimator = outage(true);
        assert_eq!(estimator.on_lost(90, RTT), LossOutcome::NewEvent);
        for number in 91..=102 {
            assert_eq!(estimator.on_lost(number, RTT), LossOutcome::SameEvent, "packet {number}");
        }
        assert_eq!(estimator.loss_events(), 2);
        // One closed interval of 90 packets (0 up to 90) and I_0 = 104 - 90 =
        // 14: I_tot1 = 90 beats I_tot0 = (14 + 90) / 2, so p = 1/90 instead of 4/102.
        assert!((estimator.loss_event_rate().unwrap() - 1.0 / 90.0).abs() < 1e-15);
        // The timeout lost 13 packets, the first event 1: j = (13 + 1) / 2.
        assert_eq!(estimator.losses_per_event(), Some(7.0));
        // Every packet sent in the timeout is resolved: the span is gone, and
        // 103, sent after feedback resumed, is judged by the RTT rule.
        assert_eq!(estimator.timeout, None);
        assert_eq!(estimator.on_lost(103, RTT), LossOutcome::NewEvent);
    }

    #[test]
    fn a_timeout_lasts_until_its_packets_are_resolved() {
        let mut estimator = outage(true);
        assert_eq!(estimator.timeout, Some(TimeoutSpan { from: ms(900), until: Some(ms(3000)) }));
        for number in 90..=101 {
            estimator.on_acked(number);
        }
        assert!(estimator.timeout.is_some(), "102 is still outstanding");
        estimator.on_acked(102);
        assert_eq!(estimator.timeout, None);
        // With nothing outstanding there is nothing for a timeout to group.
        estimator.on_acked(103);
        estimator.begin_timeout();
        assert_eq!(estimator.timeout, None);
    }

    #[test]
    fn a_loss_in_a_timeout_joins_an_event_only_if_it_holds_a_timeout_loss() {
        // The current event (packet 0) began long before the timeout: the
        // timeout's first loss starts a new event, not a 900 ms long one.
        let mut estimator = outage(true);
        assert_eq!(estimator.on_lost(101, RTT), LossOutcome::NewEvent);
        assert_eq!(estimator.on_lost(102, RTT), LossOutcome::SameEvent);
    }

    #[test]
    fn seed_counts_the_event_that_ended_slow_start_as_one_loss() {
        // 10 packets lost within one RTT end slow start; seeding leaves one
        // loss for the event, and later losses of it add none.
        let mut estimator = LossIntervals::new();
        send(&mut estimator, 0..400);
        for number in 100..110 {
            estimator.on_lost(number, RTT);
        }
        estimator.seed(250.0);
        assert_eq!(estimator.losses_per_event(), Some(1.0));
        assert_eq!(estimator.on_lost(150, RTT), LossOutcome::SameEvent);
        assert_eq!(estimator.losses_per_event(), Some(1.0));
        // The next event counts all its losses: (2 + 1 + 1) / 3.
        assert_eq!(estimator.on_lost(300, RTT), LossOutcome::NewEvent);
        assert_eq!(estimator.on_lost(301, RTT), LossOutcome::SameEvent);
        assert_eq!(estimator.losses_per_event(), Some(4.0 / 3.0));
    }

    #[test]
    fn memory_is_released_as_packets_are_resolved() {
        let mut estimator = LossIntervals::new();
        send(&mut estimator, 0..1000);
        for number in (0..1000).rev() {
            estimator.on_acked(number);
        }
        assert!(estimator.outstanding.is_empty());
    }
}
