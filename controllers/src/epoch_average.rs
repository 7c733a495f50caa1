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
}

impl<const V: usize> Default for EpochAverage<V> {
    fn default() -> Self {
        EpochAverage::new()
    }
}

impl<const V: usize> EpochAverage<V> {
    /// An average with nothing observed.
    pub fn new() -> Self {
        EpochAverage { closed: VecDeque::with_capacity(EPOCHS + 1), open: Epoch::default(), last: None }
    }

    /// The values are `values` from `now` on.
    pub fn observe(&mut self, now: Time, values: [f64; V]) {
        if let Some((since, previous)) = self.last {
            self.open.add(&previous, now.saturating_duration_since(since).as_secs_f64());
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
        }
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
