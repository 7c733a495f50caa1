//! The loss event of a window that stands for `n` equal flows.
//!
//! A window worth `n` flowshares ([`crate::multcp`], [`crate::mulcubic`])
//! decreases once for each virtual flow a loss event hits, as `n` separate
//! flows would each back off when their own packets are dropped: each lost
//! packet belongs to any of the flows with probability `1/n`, so `k` losses
//! hit [`flows_hit`]`(n, k) = n (1 - (1 - 1/n)^k)` of them on average
//! (paper 004 section III). The flows not hit are not in recovery: they go
//! on growing while the event lasts.

use crate::equations::flows_hit;

/// One loss event of a window standing for `n > 1` virtual flows.
#[derive(Clone, Debug, PartialEq)]
pub struct LossEvent {
    /// The window before the event's first decrease, bytes.
    before: f64,
    n: f64,
    losses: u32,
    /// `flows_hit(n, losses)`, kept because the windows read it on every
    /// acknowledgement and it takes a power to compute.
    hits: f64,
}

impl LossEvent {
    /// The event that one lost packet starts, for a window of `before`
    /// bytes standing for `n` flows.
    pub fn start(before: f64, n: f64) -> Self {
        LossEvent { before, n, losses: 1, hits: flows_hit(n, 1.0) }
    }

    /// Another packet of the event was lost. For a window that loses
    /// `decrease(h)` of itself when `h` flows are hit, returns the bytes the
    /// flows it newly hits take off: their share of the window before the
    /// event. The window is then lowered from what it is now, so what the
    /// flows not hit grew since the event began stays theirs.
    pub fn add_loss(&mut self, decrease: impl Fn(f64) -> f64) -> f64 {
        let previous = decrease(self.hits);
        self.losses += 1;
        self.hits = flows_hit(self.n, self.losses as f64);
        self.before * (decrease(self.hits) - previous)
    }

    /// The virtual flows hit so far, in `[1, n]`.
    pub fn flows_hit(&self) -> f64 {
        self.hits
    }

    /// The fraction of the virtual flows not hit so far, which go on growing.
    pub fn unhit(&self) -> f64 {
        1.0 - self.hits / self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losses_hit_more_flows_each_but_never_more_than_n() {
        let mut event = LossEvent::start(100_000.0, 8.0);
        assert_eq!((event.flows_hit(), event.unhit()), (1.0, 0.875));
        let taken = event.add_loss(|hits| (hits * 0.1).min(0.5));
        let hits = 8.0 * (1.0 - (7.0f64 / 8.0).powi(2));
        assert!((event.flows_hit() - hits).abs() < 1e-12);
        assert!((taken - 100_000.0 * (hits - 1.0) * 0.1).abs() < 1e-9);
        (0..200).for_each(|_| {
            event.add_loss(|hits| (hits * 0.1).min(0.5));
        });
        assert!(event.flows_hit() <= 8.0 && event.flows_hit() > 7.99 && event.unhit() >= 0.0);
    }
}
