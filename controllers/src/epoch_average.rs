//! Time averages of a controller's windows over its last few loss epochs.
//!
//! A loss epoch runs from one loss event of a window loop to the next. The
//! average of a window over whole epochs is what the window delivers per RTT
//! in the long run, whatever the algorithm's sawtooth or cubic shape is, so
//! it serves as a measured flowshare: PA-MulTCP scales its adjusting loop to
//! its probe loop's average instead of a model of the probe's response
//! function (see [`crate::pa_multcp`]).
//!
//! [`EpochAverage`] integrates `V` values (windows in bytes) piecewise
//! constant over time: each observation holds until the next one. It keeps
//! the integrals of the last [`EPOCHS`] closed epochs and of the open one,
//! so the average weighs every moment of them equally; the open epoch,
//! which starts just after a decrease, weighs only as long as it has lasted.
//! Nothing allocates once the ring of epochs is full.
//!
//! Read over time, that average is lower than the window's own time mean
//! where epochs vary in length: while a long epoch runs its window is above
//! the average of the ones before and counts only once it closes, and the
//! time spent in long epochs is most of the time. For a Reno window whose
//! packets are lost at random it reads about 5 % low (the unit test below;
//! in the testbed PA-MulTCP's cap read 0.95-0.98 of its probe's mean
//! window). [`EpochAverage::smoothed`] smooths each value exponentially
//! over time instead, with a time constant of [`EPOCHS`] mean closed
//! epochs: a filter with unit gain that does not depend on when the epochs
//! end keeps the time mean exactly, whatever their lengths.

use std::collections::VecDeque;

use crate::time::Time;

/// Closed loss epochs kept in the average.
pub const EPOCHS: usize = 4;

/// The integrals of one epoch.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Epoch<const V: usize> {
    /// Integral of each value over the epoch, value-seconds.
    integrals: [f64; V],
    /// Length of the epoch, seconds.
    seconds: f64,
}

impl<const V: usize> Default for Epoch<V> {
    fn default() -> Self {
        Epoch { integrals: [0.0; V], seconds: 0.0 }
    }
}

impl<const V: usize> Epoch<V> {
    fn add(&mut self, values: &[f64; V], seconds: f64) {
        for (integral, value) in self.integrals.iter_mut().zip(values) {
            *integral += value * seconds;
        }
        self.seconds += seconds;
    }

    fn merge(&mut self, other: &Epoch<V>) {
        for (integral, other) in self.integrals.iter_mut().zip(&other.integrals) {
            *integral += other;
        }
        self.seconds += other.seconds;
    }

    fn mean(&self) -> Option<[f64; V]> {
        (self.seconds > 0.0).then(|| self.integrals.map(|integral| integral / self.seconds))
    }
}

/// Time averages of `V` values over the last [`EPOCHS`] loss epochs and the
/// open one.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochAverage<const V: usize> {
    /// The last closed epochs, oldest first.
    closed: VecDeque<Epoch<V>>,
    /// The epoch in progress.
    open: Epoch<V>,
    /// The last observation and when it was made.
    last: Option<(Time, [f64; V])>,
    /// [`EpochAverage::smoothed`]'s state, where it is kept.
    smoothing: Option<Smoothing<V>>,
}

/// Each value smoothed exponentially over time.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Smoothing<const V: usize> {
    /// The smoothed values; `None` until an epoch has closed.
    values: Option<[f64; V]>,
    /// [`EPOCHS`] mean closed epochs, seconds, set as each epoch closes so
    /// that an observation does not sum the epochs again.
    time_constant: f64,
}

impl<const V: usize> Default for EpochAverage<V> {
    fn default() -> Self {
        EpochAverage::new()
    }
}

impl<const V: usize> EpochAverage<V> {
    /// An average with nothing observed.
    pub fn new() -> Self {
        EpochAverage {
            closed: VecDeque::with_capacity(EPOCHS + 1),
            open: Epoch::default(),
            last: None,
            smoothing: None,
        }
    }

    /// The same, also smoothing each value over time
    /// ([`EpochAverage::smoothed`]).
    pub fn with_smoothing(self) -> Self {
        EpochAverage { smoothing: Some(Smoothing { values: None, time_constant: 0.0 }), ..self }
    }

    /// The values are `values` from `now` on.
    pub fn observe(&mut self, now: Time, values: [f64; V]) {
        if let Some((since, previous)) = self.last {
            let seconds = now.saturating_duration_since(since).as_secs_f64();
            self.open.add(&previous, seconds);
            if let Some(Smoothing { values: Some(smoothed), time_constant }) = &mut self.smoothing {
                let keep = (-seconds / *time_constant).exp();
                for (smoothed, previous) in smoothed.iter_mut().zip(previous) {
                    *smoothed = previous + (*smoothed - previous) * keep;
                }
            }
        }
        self.last = Some((now, values));
    }

    /// A loss event ends the open epoch at `now`.
    pub fn close_epoch(&mut self, now: Time) {
        if let Some((_, values)) = self.last {
            self.observe(now, values);
        }
        if self.open.seconds > 0.0 {
            if self.closed.len() == EPOCHS {
                self.closed.pop_front();
            }
            self.closed.push_back(std::mem::take(&mut self.open));
            if let Some(smoothing) = self.smoothing {
                let closed: f64 = self.closed.iter().map(|epoch| epoch.seconds).sum();
                self.smoothing = Some(Smoothing {
                    // It starts from the first closed epoch's mean.
                    values: smoothing.values.or_else(|| self.closed_mean()),
                    time_constant: closed / self.closed.len() as f64 * EPOCHS as f64,
                });
            }
        }
    }

    /// Each value smoothed exponentially over time with a time constant of
    /// [`EPOCHS`] mean closed epochs, from the first closed epoch's mean on;
    /// `None` before, or without [`EpochAverage::with_smoothing`].
    pub fn smoothed(&self) -> Option<[f64; V]> {
        self.smoothing.and_then(|smoothing| smoothing.values)
    }

    /// The number of closed epochs in the average.
    pub fn closed_epochs(&self) -> usize {
        self.closed.len()
    }

    /// The averages over the closed epochs, each raised by the open epoch
    /// where including it raises it; `None` before any time has passed.
    ///
    /// The open epoch started with a decrease, so the part of it seen so
    /// far is below what the whole epoch will average, and including it
    /// always would bias the average low by the phase at which it is read
    /// (4% at PA-MulTCP's cap in the lab). Like TFRC's open loss interval
    /// (RFC 5348 section 5.4) it counts only once it raises the average: a
    /// long epoch, as after the path's capacity grew, moves the average
    /// at once.
    pub fn mean(&self) -> Option<[f64; V]> {
        let mut total = self.open;
        self.closed.iter().for_each(|epoch| total.merge(epoch));
        let with_open = total.mean()?;
        Some(match self.closed_mean() {
            Some(closed) => std::array::from_fn(|i| closed[i].max(with_open[i])),
            None => with_open,
        })
    }

    /// The averages over the closed epochs only.
    pub fn closed_mean(&self) -> Option<[f64; V]> {
        let mut total = Epoch::default();
        self.closed.iter().for_each(|epoch| total.merge(epoch));
        total.mean()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(seconds: u64) -> Time {
        Time::ZERO + Duration::from_secs(seconds)
    }

    #[test]
    fn a_value_counts_for_as_long_as_it_held() {
        let mut average = EpochAverage::new();
        average.observe(at(0), [10.0, 1.0]);
        average.observe(at(3), [20.0, 2.0]);
        average.observe(at(4), [0.0, 0.0]);
        // 10 for 3 s and 20 for 1 s: 50 / 4.
        assert_eq!(average.mean(), Some([12.5, 1.25]));
        assert_eq!(average.closed_mean(), None);
    }

    #[test]
    fn the_open_epoch_counts_only_where_it_raises_the_average() {
        let mut average = EpochAverage::new();
        average.observe(at(0), [10.0, 10.0]);
        average.close_epoch(at(2));
        // Open epoch: 4 for 1 s, then 40 for 1 s.
        average.observe(at(2), [4.0, 4.0]);
        average.observe(at(3), [40.0, 40.0]);
        assert_eq!(average.mean(), Some([10.0, 10.0]));
        average.observe(at(4), [40.0, 40.0]);
        // (20 + 4 + 40) / 4 = 16.
        assert_eq!(average.mean(), Some([16.0, 16.0]));
    }

    /// A Reno window of one flow (one more packet every 100 ms RTT, halved
    /// at a loss event, each packet lost with probability 0.002, drawn from
    /// [`crate::pacing::draw`]) over 2000 s: the time averages, after the
    /// first 200 s, of the window itself, of [`EpochAverage::mean`] and of
    /// [`EpochAverage::smoothed`], each read once per RTT.
    fn sawtooth_averages() -> (f64, f64, f64) {
        let mut average = EpochAverage::<1>::new().with_smoothing();
        let rtt = Duration::from_millis(100);
        let (mut now, mut window, mut sums, mut counted) = (Time::ZERO, 20.0f64, [0.0; 3], 0.0);
        for step in 0..20_000u64 {
            average.observe(now, [window]);
            if let (true, Some([mean]), Some([smoothed])) = (step >= 2_000, average.mean(), average.smoothed()) {
                sums = [sums[0] + window, sums[1] + mean, sums[2] + smoothed];
                counted += 1.0;
            }
            now = now + rtt;
            if crate::pacing::draw(step) < 1.0 - (1.0 - 0.002f64).powf(window) {
                window = (window / 2.0).max(2.0);
                average.close_epoch(now);
            } else {
                window += 1.0;
            }
        }
        (sums[0] / counted, sums[1] / counted, sums[2] / counted)
    }

    #[test]
    fn smoothing_over_time_keeps_the_time_mean_that_the_epochs_read_low() {
        let (window, epochs, smoothed) = sawtooth_averages();
        // While a long epoch runs, its window is above the last epochs'
        // average and counts in it only once it closes; the time the window
        // spends high is the time the average lags: it reads about 5 % low.
        assert!(epochs < 0.97 * window, "{epochs} against {window}");
        // A time-invariant smoothing with unit gain keeps the time mean.
        assert!((smoothed / window - 1.0).abs() < 0.01, "{smoothed} against {window}");
    }

    #[test]
    fn smoothing_starts_from_the_first_closed_epoch() {
        let mut plain = EpochAverage::new();
        plain.observe(at(0), [10.0]);
        plain.close_epoch(at(2));
        assert_eq!(plain.smoothed(), None);
        let mut average = EpochAverage::new().with_smoothing();
        average.observe(at(0), [10.0]);
        assert_eq!(average.smoothed(), None);
        average.close_epoch(at(2));
        assert_eq!(average.smoothed(), Some([10.0]));
        // 40 for 8 s, one time constant (4 epochs of 2 s): 1 - 1/e of the way.
        average.observe(at(2), [40.0]);
        average.observe(at(10), [40.0]);
        let expected = 40.0 - 30.0 * (-1.0f64).exp();
        assert!((average.smoothed().unwrap()[0] - expected).abs() < 1e-9, "{:?}", average.smoothed());
    }

    #[test]
    fn only_the_last_epochs_are_kept() {
        let mut average = EpochAverage::new();
        for epoch in 0..(EPOCHS as u64 + 2) {
            average.observe(at(epoch), [epoch as f64, 0.0]);
            average.close_epoch(at(epoch + 1));
        }
        assert_eq!(average.closed_epochs(), EPOCHS);
        // Epochs 2 to 5, one second each.
        assert_eq!(average.closed_mean(), Some([3.5, 0.0]));
    }
}
