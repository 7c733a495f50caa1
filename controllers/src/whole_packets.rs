//! A window worth N flowshares keeps N flows' remainders out of flight.
//!
//! A sender starts a packet only when the whole packet fits in what its
//! window leaves (RFC 9002 section 7; quiche with patch 0004 holds back a
//! remainder smaller than a datagram, Linux counts whole segments). Each
//! flow therefore keeps on average half a packet of its window unused
//! once congestion avoidance has made the window a fraction of packets:
//! N separate flows leave N such remainders, one connection of their
//! summed window only one. Where each flow's window is a few packets the
//! difference is a share: in the lab's small paths at N = 16-30, 4-6
//! packets per flow, a half packet is 8-13 % of a flow's window.
//!
//! With `whole_packets=flows` (the default of MulTCP, MulCUBIC and
//! PA-MulTCP) the connection lets out `(N - 1) / 2` packets less than its
//! window outside slow start, so that with the one remainder the host keeps
//! it has what its N flows would have in flight ([`crate::window::SingleWindow`]);
//! PA-MulTCP's measured cap, for an adjusting loop standing for `N - 1`
//! flows, is `(N - 2) / 2` packets lower ([`crate::pa_multcp`]). In slow
//! start the windows grow by whole packets and have no remainder; at N <= 1
//! the connection is one flow, or part of one, and keeps one remainder as
//! the flow does. `whole_packets=paper` lets out the whole window, as the
//! papers' windows (which assume a fluid window) do.

use crate::grammar::choice_name;

/// Whether a weighted window holds back the remainders of the flows it
/// stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WholePackets {
    /// As its N flows would: `(N - 1) / 2` packets less (module docs).
    Flows,
    /// The whole window, as the papers'.
    Paper,
}

/// The values of the `whole_packets` key.
pub const WHOLE_PACKETS: [(&str, WholePackets); 2] = [("flows", WholePackets::Flows), ("paper", WholePackets::Paper)];

impl WholePackets {
    /// The default of the window controllers that take the key.
    pub const DEFAULT: WholePackets = WholePackets::Flows;

    /// The key's text, for specs.
    pub fn name(self) -> &'static str {
        choice_name(&WHOLE_PACKETS, self)
    }

    /// Packets a window standing for `n` flows holds back beyond the one
    /// remainder its host keeps: `(n - 1) / 2` with `flows` above one
    /// flowshare outside slow start, otherwise none.
    pub fn held_back_packets(self, n: f64, in_slow_start: bool) -> f64 {
        match self {
            WholePackets::Flows if n > 1.0 && !in_slow_start => (n - 1.0) / 2.0,
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_flows_hold_back_n_minus_one_more_half_packets_in_congestion_avoidance() {
        assert_eq!(WholePackets::Flows.held_back_packets(8.0, false), 3.5);
        assert_eq!(WholePackets::Flows.held_back_packets(2.5, false), 0.75);
        assert_eq!(WholePackets::Flows.held_back_packets(8.0, true), 0.0);
        assert_eq!(WholePackets::Flows.held_back_packets(1.0, false), 0.0);
        assert_eq!(WholePackets::Flows.held_back_packets(0.5, false), 0.0);
        assert_eq!(WholePackets::Paper.held_back_packets(8.0, false), 0.0);
    }

    #[test]
    fn the_key_names_round_trip() {
        for (name, value) in WHOLE_PACKETS {
            assert_eq!(value.name(), name);
        }
        assert_eq!(WholePackets::DEFAULT, WholePackets::Flows);
    }
}
