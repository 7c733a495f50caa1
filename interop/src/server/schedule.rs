//! Fair sharing of a connection's send capacity among its responses.
//!
//! quiche accepts stream data only up to the connection's send capacity
//! (about a congestion window not yet in flight). A server that fills one
//! response's stream until quiche says Done leaves nothing for the others:
//! a 1 KB response requested next to a 50 MB one waited for the whole
//! 50 MB (issue 14). Responses therefore take turns, deficit round robin
//! (Shreedhar and Varghese, SIGCOMM 1995): each turn allows a response
//! [`QUANTUM`] bytes; a response cut short by the capacity keeps the rest
//! of its allowance for its next turn; a new response joins the back of
//! the line, so it waits at most one quantum per response ahead of it.
//! quiche then sends the streams it holds data for by their priority:
//! HTTP/3 responses are incremental unless the client asks otherwise (see
//! `request::priority`), and hq streams are incremental by quiche's
//! default, so quiche too takes equally urgent streams in turn.

use std::collections::HashMap;
use std::collections::VecDeque;

/// Bytes a response may hand quiche per turn: a dozen packets, small next
/// to a congestion window, large next to a packet.
pub(super) const QUANTUM: usize = 16 * 1024;

/// What one turn of a response achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Turn {
    /// Every byte of the response is with quiche.
    Complete,
    /// This many bytes went to quiche; fewer than allowed means the stream
    /// or the connection is blocked.
    Wrote(usize),
}

struct Entry<T> {
    item: T,
    /// Bytes still allowed in the current turn.
    credit: usize,
}

/// The responses of a connection in their turn order.
pub(super) struct Schedule<T> {
    entries: HashMap<u64, Entry<T>>,
    /// Streams in turn order; the front one goes next.
    order: VecDeque<u64>,
}

impl<T> Default for Schedule<T> {
    fn default() -> Self {
        Schedule { entries: HashMap::new(), order: VecDeque::new() }
    }
}

impl<T> Schedule<T> {
    /// Adds the response of `stream` at the back of the line.
    pub(super) fn insert(&mut self, stream: u64, item: T) {
        if self.entries.insert(stream, Entry { item, credit: 0 }).is_none() {
            self.order.push_back(stream);
        }
    }

    /// Takes the response of `stream` out of the line.
    pub(super) fn remove(&mut self, stream: u64) -> Option<T> {
        let entry = self.entries.remove(&stream)?;
        self.order.retain(|&id| id != stream);
        Some(entry.item)
    }

    pub(super) fn get_mut(&mut self, stream: u64) -> Option<&mut T> {
        self.entries.get_mut(&stream).map(|entry| &mut entry.item)
    }

    pub(super) fn contains(&self, stream: u64) -> bool {
        self.entries.contains_key(&stream)
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Gives the responses turns until each is complete or blocked (a whole
    /// round in which no response wrote a byte). `write` hands quiche at
    /// most the allowed bytes of a response. Returns the responses that
    /// ended, complete or failed, in the order they ended.
    pub(super) fn run(
        &mut self,
        mut write: impl FnMut(u64, &mut T, usize) -> Result<Turn, String>,
    ) -> Vec<(u64, T, Result<(), String>)> {
        let mut ended = Vec::new();
        // Turns in a row in which nothing was written.
        let mut stalled = 0;
        // The last response that wrote something, and whether its turn
        // was cut short: the next call starts where this one ran dry.
        let mut last_writer = None;
        while stalled < self.order.len() {
            let Some(&stream) = self.order.front() else { break };
            let Some(entry) = self.entries.get_mut(&stream) else {
                self.order.pop_front();
                continue;
            };
            if entry.credit == 0 {
                entry.credit = QUANTUM;
            }
            let outcome = write(stream, &mut entry.item, entry.credit);
            match outcome {
                Ok(Turn::Wrote(written)) => {
                    entry.credit -= written.min(entry.credit);
                    if written == 0 {
                        stalled += 1;
                    } else {
                        stalled = 0;
                        last_writer = Some((stream, entry.credit > 0));
                    }
                    self.order.rotate_left(1);
                }
                Ok(Turn::Complete) | Err(_) => {
                    self.order.pop_front();
                    if let Some(entry) = self.entries.remove(&stream) {
                        ended.push((stream, entry.item, outcome.map(|_| ())));
                    }
                    stalled = 0;
                    last_writer = None;
                }
            }
        }
        // A whole round of stalls brought the line back to where it ran
        // dry; without this rotation the same responses would go first in
        // every call and the one cut short would stay short.
        if let Some((stream, cut_short)) = last_writer {
            if let Some(position) = self.order.iter().position(|&id| id == stream) {
                self.order.rotate_left(if cut_short { position } else { position + 1 });
            }
        }
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response as the scheduler's tests see it: bytes left to send.
    struct Fake {
        left: usize,
        sent: usize,
    }

    fn fake(len: usize) -> Fake {
        Fake { left: len, sent: 0 }
    }

    /// One call of `run` with `capacity` bytes of connection send capacity.
    fn round(schedule: &mut Schedule<Fake>, capacity: &mut usize) -> Vec<u64> {
        let ended = schedule.run(|_, response, allowed| {
            let n = response.left.min(allowed).min(*capacity);
            response.left -= n;
            response.sent += n;
            *capacity -= n;
            Ok(if response.left == 0 { Turn::Complete } else { Turn::Wrote(n) })
        });
        ended.into_iter().map(|(stream, _, result)| result.map(|()| stream)).collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn a_small_response_next_to_a_bulk_one_completes_in_the_first_round_with_capacity() {
        let mut schedule = Schedule::default();
        schedule.insert(0, fake(50_000_000));
        // The bulk response has the whole window to itself for a while ...
        let mut capacity = 1_000_000;
        assert!(round(&mut schedule, &mut capacity).is_empty());
        // ... then a 1 KB response arrives. The next capacity (here one
        // quantum and a bit) reaches it after one quantum of the bulk one.
        schedule.insert(4, fake(1_000));
        let mut capacity = QUANTUM + 1_000;
        assert_eq!(round(&mut schedule, &mut capacity), vec![4]);
        assert_eq!(capacity, 0);
        assert_eq!(schedule.len(), 1);
    }

    #[test]
    fn bulk_responses_share_the_capacity_equally_over_rounds() {
        let mut schedule = Schedule::default();
        for stream in [0, 4, 8] {
            schedule.insert(stream, fake(usize::MAX));
        }
        // Capacity that never divides into whole quanta: 2.5 per round.
        for _ in 0..40 {
            let mut capacity = QUANTUM * 5 / 2;
            round(&mut schedule, &mut capacity);
        }
        let sent: Vec<usize> = [0, 4, 8].iter().map(|stream| schedule.entries[stream].item.sent).collect();
        let total: usize = sent.iter().sum();
        assert_eq!(total, 40 * QUANTUM * 5 / 2);
        for share in &sent {
            // Within one quantum of a third each.
            assert!(share.abs_diff(total / 3) <= QUANTUM, "{sent:?}");
        }
    }

    #[test]
    fn a_blocked_stream_does_not_hold_up_the_others() {
        let mut schedule = Schedule::default();
        schedule.insert(0, fake(100_000));
        schedule.insert(4, fake(100_000));
        // Stream 0 is flow-control blocked: it never takes a byte.
        let ended = schedule.run(|stream, response, allowed| {
            if stream == 0 {
                return Ok(Turn::Wrote(0));
            }
            let n = response.left.min(allowed);
            response.left -= n;
            Ok(if response.left == 0 { Turn::Complete } else { Turn::Wrote(n) })
        });
        assert_eq!(ended.len(), 1);
        assert_eq!(ended[0].0, 4);
        assert!(schedule.contains(0));
    }

    #[test]
    fn a_failed_response_leaves_the_line_with_its_error() {
        let mut schedule = Schedule::default();
        schedule.insert(0, fake(10));
        schedule.insert(4, fake(10));
        let ended = schedule.run(|stream, _, _| if stream == 0 { Err("disk".into()) } else { Ok(Turn::Complete) });
        assert_eq!(ended.len(), 2);
        assert_eq!(ended[0].2, Err("disk".to_string()));
        assert_eq!(schedule.len(), 0);
        assert_eq!(schedule.remove(0).map(|f| f.left), None);
    }
}
