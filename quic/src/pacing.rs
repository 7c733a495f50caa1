//! Paced sending for quiche endpoints.
//!
//! quiche only computes when packets should leave; sending is gated by the
//! congestion window alone, so an application that ignores pacing makes
//! rate-based controllers (MulTFRC) powerless. Two details matter:
//!
//! * **Which time.** `SendInfo::at` is computed after quiche recorded the
//!   packet, so it is the pacer's release time of the *next* packet; the
//!   packet's own release time, the one recovery records as its send time,
//!   is what `Connection::get_next_release_time()` says just before
//!   `send()`. Holding each packet until the next one's time would add one
//!   pacing interval to every RTT sample, which at the low rates of a
//!   scavenger (a packet every few seconds) ruins the RTT estimate.
//! * **Building ahead.** quiche schedules each packet from the previous
//!   one's release time, not from when the application got round to sending
//!   it; a sender that builds one packet and sleeps until it is due adds its
//!   wake-up delay to the spacing and falls behind the rate (half of it at
//!   7.5 MB/s on a loaded host). [`PacedSender`] builds packets up to
//!   quiche's release horizon (`max_release_into_future`), as SO_TXTIME
//!   users do, and sends each when it is due.
//! * **Batches.** Every packet due at a flush (released within the
//!   sender's slack of now, [`PACING_SLACK`] unless set) goes into the
//!   socket's outbox ([`crate::udp`]), where consecutive packets to one
//!   peer share a segmented (GSO) message and the messages of many
//!   connections share one `sendmmsg`. A packet due later stays here: no
//!   batch carries a packet before its release time less the slack.
//! * **Gaps below the slack.** Two packets released less than the slack
//!   apart leave back to back. A controller that means such a gap (PA-MulTCP's
//!   `pacing=split` puts the packets one acknowledgement releases 50-200 µs
//!   apart) needs a smaller slack ([`PacedSender::with_slack`]) and a thread
//!   whose short sleeps end on time ([`tighten_timer_slack`]): Linux lets a
//!   sleep end up to 50 µs late by default.

use std::collections::VecDeque;
use std::io;
use std::time::Duration;
use std::time::Instant;

use crate::udp;

/// Largest UDP payload flowshare endpoints send: fits a 1500-byte Ethernet
/// MTU with room for IPv6 and UDP headers.
pub const MAX_DATAGRAM_SIZE: usize = 1350;

/// Packets due within this much are sent now: sleeping for less is not
/// reliable on a loaded host. The default slack of a [`PacedSender`].
pub const PACING_SLACK: Duration = Duration::from_micros(100);

/// The largest slack a [`PacedSender`] accepts: more would send packets a
/// noticeable part of a round trip early.
pub const MAX_PACING_SLACK: Duration = Duration::from_millis(1);

/// Below this wait [`wait`] sleeps instead of polling: poll timeouts have
/// millisecond resolution.
pub const SHORT_WAIT: Duration = Duration::from_millis(2);

/// Most packets built ahead of their release time.
const MAX_BUILT_AHEAD: usize = 1024;

/// A packet quiche built, waiting for its release time.
#[derive(Debug)]
struct Built {
    datagram: Vec<u8>,
    len: usize,
    to: std::net::SocketAddr,
    release: Instant,
}

/// What [`PacedSender::flush`] left for later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flush {
    /// quiche has nothing more to send.
    Idle,
    /// The next packet is due at this instant.
    Due(Instant),
}

impl Flush {
    /// When the connection needs to send again, if it does.
    pub fn due(self) -> Option<Instant> {
        match self {
            Flush::Idle => None,
            Flush::Due(at) => Some(at),
        }
    }
}

/// Where a [`PacedSender`] gets its packets: a quiche connection, or a
/// scripted one in tests.
pub trait PacketSource {
    /// How far ahead of its release time a packet may be built.
    fn release_horizon(&self) -> Duration;
    /// The release time of the next packet, None when it may leave now.
    fn next_release(&self, now: Instant) -> Option<Instant>;
    /// Builds the next packet into `out`: its length and destination.
    fn build(&mut self, out: &mut [u8]) -> Result<(usize, std::net::SocketAddr), quiche::Error>;
    /// Building failed for a reason other than `Done`.
    fn fail(&mut self);
}

impl PacketSource for quiche::Connection {
    fn release_horizon(&self) -> Duration {
        self.max_release_into_future()
    }

    fn next_release(&self, now: Instant) -> Option<Instant> {
        self.get_next_release_time().and_then(|decision| decision.time(now))
    }

    fn build(&mut self, out: &mut [u8]) -> Result<(usize, std::net::SocketAddr), quiche::Error> {
        self.send(out).map(|(len, info)| (len, info.to))
    }

    fn fail(&mut self) {
        // quiche has queued a CONNECTION_CLOSE; its local_error() says why.
        let _ = self.close(false, 0x1, b"internal error");
    }
}

/// The packets of one connection on their way to the socket.
#[derive(Debug)]
pub struct PacedSender {
    /// Packets built ahead of their release time, in release order.
    built: VecDeque<Built>,
    /// Packets due within this much of a flush leave with it.
    slack: Duration,
}

impl Default for PacedSender {
    fn default() -> Self {
        PacedSender::with_slack(PACING_SLACK)
    }
}

impl PacedSender {
    /// A sender that sends packets due within `slack` of a flush with it,
    /// at most [`MAX_PACING_SLACK`].
    pub fn with_slack(slack: Duration) -> PacedSender {
        PacedSender { built: VecDeque::new(), slack: slack.min(MAX_PACING_SLACK) }
    }

    /// Packets due within this much of a flush leave with it.
    pub fn slack(&self) -> Duration {
        self.slack
    }

    /// Builds packets up to quiche's release horizon and queues those that
    /// are due in `socket`'s outbox, where consecutive ones to the same
    /// peer share a segmented message. The caller sends the outbox
    /// ([`udp::Socket::send_queued`]), after this connection's flush or
    /// after several connections'. When quiche fails to build a packet it
    /// has already queued a CONNECTION_CLOSE; the connection is closed and
    /// its `local_error()` says why.
    pub fn flush(&mut self, conn: &mut quiche::Connection, socket: &mut udp::Socket) -> Flush {
        self.flush_at(conn, socket.outbox(), Instant::now())
    }

    /// [`PacedSender::flush`] at `now`: a packet is queued only if its
    /// release time is at most the slack after `now`, and packets
    /// are queued in release order, so a batch never carries a packet
    /// earlier than its pacing allows.
    pub fn flush_at(&mut self, source: &mut impl PacketSource, outbox: &mut udp::Outbox, now: Instant) -> Flush {
        if outbox.is_blocked() {
            // The socket buffer is full: retry shortly, like a paced packet.
            return Flush::Due(now + udp::RETRY_FULL_BUFFER);
        }
        let horizon = now + source.release_horizon();
        while self.built.len() < MAX_BUILT_AHEAD && self.built.back().is_none_or(|last| last.release <= horizon) {
            let release = source.next_release(now).unwrap_or(now);
            let mut datagram = outbox.buffer();
            match source.build(&mut datagram) {
                Ok((len, to)) => self.built.push_back(Built { datagram, len, to, release }),
                Err(quiche::Error::Done) => {
                    outbox.recycle(datagram);
                    break;
                }
                Err(_) => {
                    outbox.recycle(datagram);
                    source.fail();
                    break;
                }
            }
        }
        while let Some(packet) = self.built.front() {
            if packet.release > now + self.slack {
                return Flush::Due(packet.release);
            }
            if let Some(packet) = self.built.pop_front() {
                outbox.push(packet.datagram, packet.len, packet.to);
            }
        }
        Flush::Idle
    }
}

/// Waits until `wake` or until a socket registered with `poll` is readable,
/// at most `max_wait`: short waits sleep, longer ones poll, because poll
/// timeouts have millisecond resolution. A signal ends the wait early.
pub fn wait(
    poll: &mut mio::Poll,
    events: &mut mio::Events,
    wake: Option<Instant>,
    max_wait: Duration,
) -> io::Result<()> {
    let wait = wake.map_or(max_wait, |at| at.saturating_duration_since(Instant::now()).min(max_wait));
    if wait < SHORT_WAIT && !wait.is_zero() {
        std::thread::sleep(wait);
        // Collect readiness without blocking.
        return poll_interruptible(poll, events, Some(Duration::ZERO));
    }
    poll_interruptible(poll, events, Some(wait))
}

/// Lets this thread's sleeps end within a microsecond of their time rather
/// than within the kernel's default timer slack of 50 µs: what a sender
/// whose slack is below [`PACING_SLACK`] needs for its gaps to hold. Costs
/// more timer interrupts, so only such senders ask for it.
#[cfg(target_os = "linux")]
pub fn tighten_timer_slack() -> io::Result<()> {
    const ONE_MICROSECOND_NS: libc::c_ulong = 1_000;
    // SAFETY: PR_SET_TIMERSLACK takes its value as an integer argument and
    // touches no memory of ours.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ONE_MICROSECOND_NS, 0, 0, 0) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Elsewhere the timer slack stays as it is.
#[cfg(not(target_os = "linux"))]
pub fn tighten_timer_slack() -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "no timer slack to set outside Linux"))
}

/// `poll`, treating a signal's interruption as an early wake-up.
fn poll_interruptible(poll: &mut mio::Poll, events: &mut mio::Events, timeout: Option<Duration>) -> io::Result<()> {
    match poll.poll(events, timeout) {
        Err(e) if e.kind() == io::ErrorKind::Interrupted => {
            events.clear();
            Ok(())
        }
        result => result,
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;

    /// A connection whose packets have scripted release times: `release[i]`
    /// is packet i's, counted from `start`; each packet carries its number.
    struct Scripted {
        start: Instant,
        release: Vec<Duration>,
        next: usize,
        peer: SocketAddr,
    }

    impl PacketSource for Scripted {
        fn release_horizon(&self) -> Duration {
            Duration::from_millis(5)
        }

        fn next_release(&self, now: Instant) -> Option<Instant> {
            let at = self.start + *self.release.get(self.next)?;
            (at > now).then_some(at)
        }

        fn build(&mut self, out: &mut [u8]) -> Result<(usize, SocketAddr), quiche::Error> {
            if self.next == self.release.len() {
                return Err(quiche::Error::Done);
            }
            out[..8].copy_from_slice(&(self.next as u64).to_le_bytes());
            self.next += 1;
            Ok((MAX_DATAGRAM_SIZE, self.peer))
        }

        fn fail(&mut self) {}
    }

    fn number(datagram: &[u8]) -> usize {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&datagram[..8]);
        u64::from_le_bytes(bytes) as usize
    }

    #[test]
    fn batches_never_carry_a_packet_before_its_release_time_less_the_slack() {
        // An initial burst of 10 (quiche's unpaced burst), then one packet
        // every 30 us, then a gap of 3 ms, then one every 400 us: some
        // flushes find many packets due, some one, some none.
        let mut release = vec![Duration::ZERO; 10];
        release.extend((1..=200).map(|k| Duration::from_micros(30 * k)));
        let paced_end = Duration::from_micros(30 * 200 + 3_000);
        release.extend((0..20).map(|k| paced_end + Duration::from_micros(400 * k)));
        let start = Instant::now();
        let peer: SocketAddr = ([127, 0, 0, 1], 4433).into();
        let mut source = Scripted { start, release: release.clone(), next: 0, peer };
        let mut sender = PacedSender::default();
        let mut outbox = udp::Outbox::new(udp::MAX_SEGMENTS);

        // The loop wakes at uneven times: early, late, exactly when due.
        let steps_us = [0, 7, 130, 45, 1_000, 20, 333, 90, 2_500, 60];
        let mut now = start;
        let mut sent = Vec::new();
        let mut largest_message = 0;
        for step in 0..400 {
            let flush = sender.flush_at(&mut source, &mut outbox, now);
            largest_message =
                largest_message.max(outbox.messages().iter().map(|(_, lengths)| lengths.len()).max().unwrap_or(0));
            for datagram in outbox.datagrams() {
                let k = number(datagram);
                assert!(
                    start + release[k] <= now + PACING_SLACK,
                    "packet {k} due at {:?} left at {:?}",
                    release[k],
                    now - start
                );
                sent.push(k);
            }
            outbox.clear();
            match flush {
                Flush::Idle => break,
                // What is left is not due yet, and is the next packet.
                Flush::Due(at) => {
                    assert!(at > now + PACING_SLACK, "a due packet was left behind");
                    assert_eq!(Some(at), sent.last().map(|&k| start + release[k + 1]));
                }
            }
            now += Duration::from_micros(steps_us[step % steps_us.len()]);
        }
        // All of them, once each, in order.
        assert_eq!(sent, (0..release.len()).collect::<Vec<_>>());
        // The burst went out as one segmented message.
        assert!(largest_message >= 10, "largest message {largest_message}");
    }

    #[test]
    fn a_gap_below_the_slack_leaves_back_to_back_and_a_smaller_slack_keeps_it() {
        // A pair 75 us apart, as pacing=split spaces one at 15 Mbit/s.
        let start = Instant::now();
        let peer: SocketAddr = ([127, 0, 0, 1], 4433).into();
        let pair = vec![Duration::ZERO, Duration::from_micros(75)];
        let mut outbox = udp::Outbox::new(udp::MAX_SEGMENTS);

        let mut source = Scripted { start, release: pair.clone(), next: 0, peer };
        assert_eq!(PacedSender::default().flush_at(&mut source, &mut outbox, start), Flush::Idle);
        assert_eq!(outbox.len(), 2, "the default slack sends both at once");
        outbox.clear();

        let mut source = Scripted { start, release: pair, next: 0, peer };
        let mut sender = PacedSender::with_slack(Duration::from_micros(10));
        let second = start + Duration::from_micros(75);
        assert_eq!(sender.flush_at(&mut source, &mut outbox, start), Flush::Due(second));
        assert_eq!(outbox.datagrams().map(number).collect::<Vec<_>>(), [0]);
        outbox.clear();
        assert_eq!(sender.flush_at(&mut source, &mut outbox, second - Duration::from_micros(5)), Flush::Idle);
        assert_eq!(outbox.datagrams().map(number).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn the_slack_is_capped() {
        assert_eq!(PacedSender::with_slack(Duration::from_secs(1)).slack(), MAX_PACING_SLACK);
        assert_eq!(PacedSender::default().slack(), PACING_SLACK);
    }

    #[test]
    fn a_full_socket_buffer_holds_the_packets_back() {
        let start = Instant::now();
        let peer: SocketAddr = ([127, 0, 0, 1], 4433).into();
        let mut source = Scripted { start, release: vec![Duration::ZERO; 4], next: 0, peer };
        let mut sender = PacedSender::default();
        let mut outbox = udp::Outbox::new(1);
        outbox.block_for_test();
        assert_eq!(sender.flush_at(&mut source, &mut outbox, start), Flush::Due(start + udp::RETRY_FULL_BUFFER));
        assert!(outbox.is_empty());
        assert_eq!(source.next, 0, "nothing built while the socket is full");
    }
}
