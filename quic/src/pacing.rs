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

use std::collections::VecDeque;
use std::io;
use std::time::Duration;
use std::time::Instant;

use mio::net::UdpSocket;

/// Largest UDP payload flowshare endpoints send: fits a 1500-byte Ethernet
/// MTU with room for IPv6 and UDP headers.
pub const MAX_DATAGRAM_SIZE: usize = 1350;

/// Packets due within this much are sent now: sleeping for less is not
/// reliable on a loaded host.
pub const PACING_SLACK: Duration = Duration::from_micros(100);

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

/// The packets of one connection on their way to the socket.
#[derive(Debug, Default)]
pub struct PacedSender {
    /// Packets built ahead of their release time, in release order.
    built: VecDeque<Built>,
    /// Datagram buffers to reuse.
    spare: Vec<Vec<u8>>,
}

impl PacedSender {
    /// Builds packets up to quiche's release horizon and sends those that
    /// are due. When quiche fails to build a packet it has already queued a
    /// CONNECTION_CLOSE; the connection is closed and its `local_error()`
    /// says why. Socket errors are returned.
    pub fn flush(&mut self, conn: &mut quiche::Connection, socket: &UdpSocket) -> io::Result<Flush> {
        let now = Instant::now();
        let horizon = now + conn.max_release_into_future();
        while self.built.len() < MAX_BUILT_AHEAD && self.built.back().is_none_or(|last| last.release <= horizon) {
            let release = conn.get_next_release_time().and_then(|decision| decision.time(now)).unwrap_or(now);
            let mut datagram = self.spare.pop().unwrap_or_else(|| vec![0; MAX_DATAGRAM_SIZE]);
            match conn.send(&mut datagram) {
                Ok((len, info)) => self.built.push_back(Built { datagram, len, to: info.to, release }),
                Err(quiche::Error::Done) => {
                    self.spare.push(datagram);
                    break;
                }
                Err(_) => {
                    self.spare.push(datagram);
                    let _ = conn.close(false, 0x1, b"internal error");
                    break;
                }
            }
        }
        while let Some(packet) = self.built.front() {
            if packet.release > Instant::now() + PACING_SLACK {
                return Ok(Flush::Due(packet.release));
            }
            match socket.send_to(&packet.datagram[..packet.len], packet.to) {
                Ok(_) => {}
                // The socket buffer is full: retry shortly, like a paced packet.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(Flush::Due(Instant::now() + Duration::from_millis(1)))
                }
                // The peer is unreachable (ICMP): the packet is lost, and
                // quiche's timers decide what that means for the connection.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionRefused
                            | io::ErrorKind::HostUnreachable
                            | io::ErrorKind::NetworkUnreachable
                    ) => {}
                Err(e) => return Err(e),
            }
            if let Some(sent) = self.built.pop_front() {
                self.spare.push(sent.datagram);
            }
        }
        Ok(Flush::Idle)
    }
}

/// Waits until `wake` or until a socket registered with `poll` is readable,
/// at most `max_wait`: short waits sleep, longer ones poll, because poll
/// timeouts have millisecond resolution. A signal ends the wait early.
pub fn wait(
    poll: &mut mio::Poll, events: &mut mio::Events, wake: Option<Instant>, max_wait: Duration,
) -> io::Result<()> {
    let wait = wake.map_or(max_wait, |at| at.saturating_duration_since(Instant::now()).min(max_wait));
    if wait < SHORT_WAIT && !wait.is_zero() {
        std::thread::sleep(wait);
        // Collect readiness without blocking.
        return poll_interruptible(poll, events, Some(Duration::ZERO));
    }
    poll_interruptible(poll, events, Some(wait))
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
