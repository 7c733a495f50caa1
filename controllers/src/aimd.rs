//! AIMD(a, b) and the equations that relate its parameters to throughput.
//!
//! AIMD(a, b) grows the window by `a` packets per RTT and multiplies it by
//! `1 - b` on a loss event; standard TCP is AIMD(1, 1/2). The steady-state
//! model of Yang and Lam (general AIMD, ICNP 2000), as used in paper 000
//! section 3.1, gives for a loss event rate `p`:
//!
//! * window at the end of a congestion epoch, eq. (1) and (9):
//!   `W = sqrt(2a / (b (2 - b) p))` packets;
//! * sending rate, eq. (2): `T = (2 - b) / (2 RTT) * W` packets per second.
//!
//! Asking for N times the rate of standard TCP at the same `p` gives eq. (5),
//! `b = 2a / (3N² + a)`, and for N = 1 the TCP-friendly pairs of eq. (6),
//! `b = 2a / (3 + a)`.

/// The parameters of AIMD(a, b).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aimd {
    /// `a`: packets added to the window per RTT.
    pub increase: f64,
    /// `b`: fraction of the window removed on a loss event, in (0, 1).
    pub decrease: f64,
}

impl Aimd {
    /// Standard TCP, AIMD(1, 1/2).
    pub const STANDARD: Aimd = Aimd { increase: 1.0, decrease: 0.5 };

    /// The decrease that makes AIMD(a, b) worth `n` standard flows, eq. (5):
    /// `b = 2a / (3n² + a)`.
    pub fn weighted_decrease(n: f64, increase: f64) -> f64 {
        2.0 * increase / (3.0 * n * n + increase)
    }

    /// The increase that makes AIMD(a, b) worth `n` standard flows, eq. (5)
    /// solved for `a`: `a = 3n²b / (2 - b)`.
    pub fn weighted_increase(n: f64, decrease: f64) -> f64 {
        3.0 * n * n * decrease / (2.0 - decrease)
    }

    /// The window at the end of a congestion epoch for loss event rate `p`,
    /// eq. (1): `sqrt(2a / (b (2 - b) p))` packets.
    pub fn epoch_window(&self, loss_event_rate: f64) -> f64 {
        let b = self.decrease;
        (2.0 * self.increase / (b * (2.0 - b) * loss_event_rate)).sqrt()
    }

    /// The steady-state sending rate in packets per RTT for loss event rate
    /// `p`, eq. (2): `(2 - b) / 2 * W`.
    pub fn packets_per_rtt(&self, loss_event_rate: f64) -> f64 {
        (2.0 - self.decrease) / 2.0 * self.epoch_window(loss_event_rate)
    }

    /// How many standard TCP flows this pair is worth at any loss event
    /// rate: the ratio of its eq. (2) rate to that of AIMD(1, 1/2).
    pub fn flowshares(&self) -> f64 {
        // p cancels out of the ratio; any positive value gives the same.
        self.packets_per_rtt(1.0) / Aimd::STANDARD.packets_per_rtt(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn standard_tcp_rate_is_sqrt_three_halves_p() {
        // Eq. (3): T = sqrt(3 / (2p)) packets per RTT; p = 0.01 gives 12.2474...
        assert!(close(Aimd::STANDARD.packets_per_rtt(0.01), (1.5f64 / 0.01).sqrt()));
        // Eq. (1) for AIMD(1, 1/2): W = sqrt(8 / (3p)); p = 0.01 gives 16.3299...
        assert!(close(Aimd::STANDARD.epoch_window(0.01), (8.0f64 / 0.03).sqrt()));
    }

    #[test]
    fn eq5_pairs_are_worth_n_flowshares() {
        for n in [0.1, 0.5, 1.0, 2.0, 4.0, 30.0] {
            for a in [0.25, 1.0, n, 7.0] {
                let aimd = Aimd { increase: a, decrease: Aimd::weighted_decrease(n, a) };
                assert!(close(aimd.flowshares(), n), "n={n} a={a}: {}", aimd.flowshares());
                assert!(close(Aimd::weighted_increase(n, aimd.decrease), a));
            }
        }
    }

    #[test]
    fn eq5_gives_the_papers_pairs() {
        // a = 1, N = 1: the TCP-friendly b = 2/(3+1) = 1/2 of eq. (6).
        assert_eq!(Aimd::weighted_decrease(1.0, 1.0), 0.5);
        // PA-MulTCP's adjusting loop a = sqrt(N) gives b = 2/(1 + 3 N^1.5); N = 4: 2/25.
        assert!(close(Aimd::weighted_decrease(4.0, 2.0), 2.0 / 25.0));
    }

    #[test]
    fn classic_multcp_pair_is_not_exactly_eq5() {
        // AIMD(N, 1/2N) is the original MulTCP choice; by eq. (2) it is worth
        // sqrt(N (4N - 1) / 3) flowshares, e.g. sqrt(14/3) = 2.1602 for N = 2.
        let aimd = Aimd { increase: 2.0, decrease: 0.25 };
        assert!(close(aimd.flowshares(), (14.0f64 / 3.0).sqrt()));
    }
}
