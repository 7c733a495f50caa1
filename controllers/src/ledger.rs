//! The owner and size of each packet in flight, for controllers that run
//! several loops and must give each acknowledgement and loss to the loop
//! whose packet it was (PA-MulTCP's probe and adjusting loops, MulTCP's
//! separate loops).

use std::collections::VecDeque;

/// The owner and size of each packet in flight, in packet number order.
/// Entries are freed once every older packet is resolved too, so the
/// structure spans the packets in flight and its capacity is reused: no
/// allocation per packet in steady state.
#[derive(Clone, Debug)]
pub struct Ledger<O> {
    packets: VecDeque<LedgerEntry<O>>,
    /// The largest packet number ever pushed, kept when the packets are
    /// forgotten, so that a number the host reuses or sends out of order is
    /// refused for good.
    largest: Option<u64>,
}

impl<O> Default for Ledger<O> {
    fn default() -> Self {
        Ledger { packets: VecDeque::new(), largest: None }
    }
}

/// One packet of a [`Ledger`].
#[derive(Clone, Copy, Debug)]
pub struct LedgerEntry<O> {
    /// Packet number.
    pub number: u64,
    /// Size in bytes.
    pub bytes: usize,
    /// The loop that sent it.
    pub owner: O,
    /// Acknowledged, lost or discarded; removed once at the front.
    resolved: bool,
}

impl<O: Copy> Ledger<O> {
    /// Whether packet `number` can be recorded: it is above every number
    /// recorded before. A controller does not track a packet it cannot
    /// record (out of order), as no loop could be told of it.
    pub fn takes(&self, number: u64) -> bool {
        self.largest.is_none_or(|largest| number > largest)
    }

    /// Records packet `number`, which [`Ledger::takes`].
    pub fn push(&mut self, number: u64, bytes: usize, owner: O) {
        debug_assert!(self.takes(number), "packet {number} pushed out of order");
        self.largest = Some(number);
        self.packets.push_back(LedgerEntry { number, bytes, owner, resolved: false });
    }

    /// The owner and size of packet `number`, if it is in flight; it no
    /// longer is afterwards.
    pub fn resolve(&mut self, number: u64) -> Option<(O, usize)> {
        let index = self.packets.binary_search_by_key(&number, |entry| entry.number).ok()?;
        let entry = &mut self.packets[index];
        if entry.resolved {
            return None;
        }
        entry.resolved = true;
        let found = (entry.owner, entry.bytes);
        while self.packets.front().is_some_and(|entry| entry.resolved) {
            self.packets.pop_front();
        }
        Some(found)
    }

    /// The owner of packet `number` while it is in flight.
    pub fn owner(&self, number: u64) -> Option<O> {
        let index = self.packets.binary_search_by_key(&number, |entry| entry.number).ok()?;
        let entry = &self.packets[index];
        (!entry.resolved).then_some(entry.owner)
    }

    /// Forgets every packet, returning those not resolved yet.
    pub fn drain_unresolved(&mut self) -> impl Iterator<Item = LedgerEntry<O>> + '_ {
        self.packets.drain(..).filter(|entry| !entry.resolved)
    }

    /// Entries held: the packets from the oldest unresolved one on.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Whether no packet is held.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_resolves_once_and_the_front_is_freed_behind_the_oldest_in_flight() {
        let mut ledger = Ledger::default();
        for number in [3, 4, 7] {
            ledger.push(number, 1000 + number as usize, number % 2);
        }
        assert_eq!(ledger.owner(4), Some(0));
        assert_eq!(ledger.resolve(4), Some((0, 1004)));
        assert_eq!(ledger.resolve(4), None, "a second answer for the same packet");
        assert_eq!(ledger.owner(4), None);
        assert_eq!(ledger.resolve(5), None, "never sent");
        // Packet 4 stays held behind 3, then both go.
        assert_eq!(ledger.len(), 3);
        assert_eq!(ledger.resolve(3), Some((1, 1003)));
        assert_eq!(ledger.len(), 1);
        let left: Vec<u64> = ledger.drain_unresolved().map(|entry| entry.number).collect();
        assert_eq!(left, vec![7]);
        assert!(ledger.is_empty());
        // Forgotten packets' numbers stay taken.
        assert!(!ledger.takes(7) && !ledger.takes(2) && ledger.takes(8));
    }
}
