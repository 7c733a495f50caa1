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
    pub before: f64,
    n: f64,
    losses: u32,
}

impl LossEvent {
    /// The event that one lost packet starts, for a window of `before`
    /// bytes standing for `n` flows.
    pub fn start(before: f64, n: f64) -> Self {
        LossEvent { before, n, losses: 1 }
    }

    /// Another packet of the event was lost.
    pub fn add_loss(&mut self) {
        self.losses += 1;
    }

    /// The virtual flows hit so far, in `[1, n]`.
    pub fn flows_hit(&self) -> f64 {
        flows_hit(self.n, self.losses as f64)
    }

    /// The fraction of the virtual flows not hit so far, which go on growing.
    pub fn unhit(&self) -> f64 {
        1.0 - self.flows_hit() / self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losses_hit_more_flows_each_but_never_more_than_n() {
        let mut event = LossEvent::start(100_000.0, 8.0);
        assert_eq!((event.flows_hit(), event.unhit()), (1.0, 0.875));
        event.add_loss();
        assert!((event.flows_hit() - 8.0 * (1.0 - (7.0f64 / 8.0).powi(2))).abs() < 1e-12);
        (0..200).for_each(|_| event.add_loss());
        assert!(event.flows_hit() <= 8.0 && event.flows_hit() > 7.99 && event.unhit() >= 0.0);
    }
}
