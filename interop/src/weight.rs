//! The weight a connection's controller should have, from the responses it
//! is sending.
//!
//! * **Fixed** connections keep their spec's weight (the base) unless a
//!   request matched an upgrade: while upgraded responses are active the
//!   weight is the largest weight among the active responses (a response
//!   without an upgrade counts as the base), so a backfill-only connection
//!   drops to its backfill weight and returns to its base as soon as a
//!   normal response joins.
//! * **Streams** connections (`weight = "streams"`, aggregate mode) take
//!   one flowshare per active bulk response (or the response's upgrade
//!   weight): an HTTP/3 connection multiplexing N downloads competes like N
//!   connections. With no bulk response active the weight is the base.
//!
//! Either way the weight never exceeds the policy's cap. A request may
//! carry `flowshare-weight: W` to lower its own response's weight; values
//! above what the policy gives are ignored, so a client cannot raise its
//! weight. A response is active from its request until quiche has
//! delivered it completely (the stream is collected), not merely until the
//! last byte was handed to quiche.

use crate::policy::WeightMode;

/// The weight bookkeeping of one connection.
#[derive(Clone, Debug)]
pub struct ConnectionWeight {
    mode: WeightMode,
    /// The spec's weight: fixed connections' weight, streams connections'
    /// weight with no bulk response.
    base: f64,
    /// The policy's cap.
    cap: f64,
    /// Responses that count, with the weight each asks for (`None`: the
    /// default, base for fixed and 1 for streams).
    active: Vec<(u64, Option<f64>)>,
    /// Whether a fixed connection has seen any upgraded response (until
    /// then its weight is the base and responses need no bookkeeping).
    upgraded: usize,
}

/// One response as the weight sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResponseWeight {
    /// The response body is at least the policy's bulk size.
    pub bulk: bool,
    /// The weight an upgrade rule gives the request.
    pub upgrade: Option<f64>,
    /// The weight the client asked for (`flowshare-weight`).
    pub requested: Option<f64>,
}

impl ConnectionWeight {
    /// Bookkeeping for a connection whose spec has weight `base`.
    pub fn new(mode: WeightMode, base: f64, cap: f64) -> Self {
        ConnectionWeight { mode, base: base.min(cap), cap, active: Vec::new(), upgraded: 0 }
    }

    /// The mode.
    pub fn mode(&self) -> WeightMode {
        self.mode
    }

    /// A response on `stream` starts.
    pub fn started(&mut self, stream: u64, response: ResponseWeight) {
        let default = match self.mode {
            WeightMode::Fixed => self.base,
            WeightMode::Streams => 1.0,
        };
        let granted = response.upgrade.unwrap_or(default).min(self.cap);
        // The client may only ask for less.
        let weight = match response.requested {
            Some(requested) if requested > 0.0 && requested < granted => Some(requested),
            _ => response.upgrade.map(|_| granted),
        };
        let counts = match self.mode {
            WeightMode::Fixed => true,
            WeightMode::Streams => response.bulk,
        };
        if counts {
            if weight.is_some() {
                self.upgraded += 1;
            }
            self.active.push((stream, weight));
        }
    }

    /// The response on `stream` is over (delivered, reset or abandoned).
    pub fn ended(&mut self, stream: u64) {
        if let Some(index) = self.active.iter().position(|&(id, _)| id == stream) {
            let (_, weight) = self.active.swap_remove(index);
            if weight.is_some() {
                self.upgraded -= 1;
            }
        }
    }

    /// Streams being tracked, for [`ConnectionWeight::ended`] checks.
    pub fn active_streams(&self) -> impl Iterator<Item = u64> + '_ {
        self.active.iter().map(|&(id, _)| id)
    }

    /// Number of responses that count towards the weight.
    pub fn active(&self) -> usize {
        self.active.len()
    }

    /// The weight the controller should have now.
    pub fn target(&self) -> f64 {
        let weight = match self.mode {
            WeightMode::Fixed if self.upgraded == 0 => self.base,
            WeightMode::Fixed => self.active.iter().map(|&(_, weight)| weight.unwrap_or(self.base)).fold(0.0, f64::max),
            WeightMode::Streams if self.active.is_empty() => self.base,
            WeightMode::Streams => self.active.iter().map(|&(_, weight)| weight.unwrap_or(1.0)).sum(),
        };
        weight.min(self.cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BULK: ResponseWeight = ResponseWeight { bulk: true, upgrade: None, requested: None };
    const SMALL: ResponseWeight = ResponseWeight { bulk: false, upgrade: None, requested: None };

    #[test]
    fn streams_weight_counts_active_bulk_responses_up_to_the_cap() {
        let mut weight = ConnectionWeight::new(WeightMode::Streams, 1.0, 3.0);
        assert_eq!(weight.target(), 1.0);
        weight.started(0, BULK);
        weight.started(4, BULK);
        weight.started(8, SMALL);
        assert_eq!(weight.target(), 2.0, "small responses do not count");
        weight.started(12, BULK);
        weight.started(16, BULK);
        assert_eq!(weight.target(), 3.0, "four bulk responses, capped at 3");
        weight.ended(0);
        weight.ended(4);
        weight.ended(8);
        assert_eq!(weight.target(), 2.0);
        weight.ended(12);
        weight.ended(16);
        assert_eq!(weight.target(), 1.0, "idle: back to the base");
    }

    #[test]
    fn fixed_weight_follows_upgrades_only_while_they_are_active() {
        let mut weight = ConnectionWeight::new(WeightMode::Fixed, 1.0, 8.0);
        weight.started(0, SMALL);
        assert_eq!(weight.target(), 1.0);
        weight.started(4, ResponseWeight { upgrade: Some(4.0), ..SMALL });
        assert_eq!(weight.target(), 4.0);
        weight.ended(4);
        assert_eq!(weight.target(), 1.0);
        weight.ended(0);
        // A backfill-only connection drops to its backfill weight ...
        weight.started(8, ResponseWeight { upgrade: Some(0.25), ..SMALL });
        assert_eq!(weight.target(), 0.25);
        // ... and a normal response brings it back to the base.
        weight.started(12, SMALL);
        assert_eq!(weight.target(), 1.0);
    }

    #[test]
    fn clients_can_lower_their_weight_but_never_raise_it() {
        let mut weight = ConnectionWeight::new(WeightMode::Fixed, 4.0, 8.0);
        weight.started(0, ResponseWeight { requested: Some(100.0), ..BULK });
        assert_eq!(weight.target(), 4.0);
        weight.started(4, ResponseWeight { upgrade: Some(6.0), requested: Some(7.0), ..BULK });
        assert_eq!(weight.target(), 6.0);
        weight.ended(4);
        weight.ended(0);
        weight.started(8, ResponseWeight { requested: Some(0.5), ..BULK });
        assert_eq!(weight.target(), 0.5);

        let mut streams = ConnectionWeight::new(WeightMode::Streams, 1.0, 8.0);
        streams.started(0, ResponseWeight { requested: Some(5.0), ..BULK });
        assert_eq!(streams.target(), 1.0);
    }

    #[test]
    fn ending_an_unknown_stream_changes_nothing() {
        let mut weight = ConnectionWeight::new(WeightMode::Streams, 2.0, 8.0);
        weight.started(0, BULK);
        weight.ended(44);
        assert_eq!(weight.target(), 1.0);
        assert_eq!(weight.active(), 1);
    }
}
