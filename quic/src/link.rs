//! An emulated bottleneck between two UDP endpoints on one host.
//!
//! Loopback has no bottleneck, so a congestion controller on it never sees
//! loss and grows until flow control stops it. [`Link`] is a relay that the
//! client talks to instead of the server: datagrams from the server side
//! (the data direction) wait in a drop-tail queue served at `rate` and then
//! travel for `delay`; datagrams from the client side only travel for
//! `delay`. Several client-server pairs can share one link
//! ([`Link::start_shared`]): each pair has its own sockets, and the data of
//! all pairs waits in the one queue, as competing connections do at a
//! bottleneck. It runs in real time on its own thread, so its accuracy is that
//! of the scheduler (about a millisecond); the simulator in `lab/` and the
//! ns-3 testbed are the instruments for measurements, this is for demos and
//! end-to-end tests.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use std::time::Instant;

use mio::net::UdpSocket;
use mio::Events;
use mio::Interest;
use mio::Poll;
use mio::Token;

/// The bottleneck's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// Service rate of the data direction, bits per second.
    pub rate_bps: u64,
    /// One-way propagation delay, applied in both directions.
    pub delay: Duration,
    /// Drop-tail queue limit of the data direction, packets.
    pub queue_packets: usize,
}

impl LinkConfig {
    /// A queue of one bandwidth-delay product (round trip of `2 delay`) in
    /// packets of `packet_bytes`, at least 2.
    pub fn bdp_queue(rate_bps: u64, delay: Duration, packet_bytes: usize) -> usize {
        let bdp_bytes = rate_bps as f64 / 8.0 * 2.0 * delay.as_secs_f64();
        ((bdp_bytes / packet_bytes as f64).ceil() as usize).max(2)
    }
}

/// What the link did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Datagrams forwarded in the data direction.
    pub forwarded: u64,
    /// Datagrams dropped by the queue.
    pub dropped: u64,
    /// Datagrams forwarded in the other direction.
    pub reverse_forwarded: u64,
    /// Largest queue length seen, packets.
    pub max_queue: usize,
}

/// A running link; dropping it stops the relay thread.
pub struct Link {
    /// Where the client of each pair sends.
    client_facing: Vec<SocketAddr>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<LinkStats>>>,
}

impl Link {
    /// Starts a relay on 127.0.0.1 towards `server`.
    pub fn start(config: LinkConfig, server: SocketAddr) -> io::Result<Link> {
        Link::start_shared(config, &[server])
    }

    /// Starts a relay on 127.0.0.1 for one client per server in `servers`,
    /// their data sharing one queue.
    pub fn start_shared(config: LinkConfig, servers: &[SocketAddr]) -> io::Result<Link> {
        let loopback: SocketAddr = ([127, 0, 0, 1], 0).into();
        let mut pairs = Vec::with_capacity(servers.len());
        for &server in servers {
            let client_side = UdpSocket::bind(loopback)?;
            let server_side = UdpSocket::bind(loopback)?;
            pairs.push(Pair { client_side, server_side, server, client: None });
        }
        let client_facing = pairs.iter().map(|pair| pair.client_side.local_addr()).collect::<io::Result<_>>()?;
        let stop = Arc::new(AtomicBool::new(false));
        let relay = Relay {
            config,
            pairs,
            data: VecDeque::new(),
            reverse: VecDeque::new(),
            last_departure: Instant::now(),
            stats: LinkStats::default(),
        };
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new().name("flowshare-link".into()).spawn(move || relay.run(&stop))?
        };
        Ok(Link { client_facing, stop, thread: Some(thread) })
    }

    /// The address the (first) client must send to.
    pub fn client_facing_addr(&self) -> SocketAddr {
        self.client_facing[0]
    }

    /// The address the client of each pair must send to, in the order of
    /// the servers given to [`Link::start_shared`].
    pub fn client_facing_addrs(&self) -> &[SocketAddr] {
        &self.client_facing
    }

    /// Stops the relay and returns what it did.
    pub fn stop(mut self) -> io::Result<LinkStats> {
        self.stop_thread()
    }

    fn stop_thread(&mut self) -> io::Result<LinkStats> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(thread) => thread.join().unwrap_or_else(|_| Err(io::Error::other("link thread panicked"))),
            None => Ok(LinkStats::default()),
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let _ = self.stop_thread();
    }
}

/// A datagram in flight through the link.
struct InFlight {
    deliver_at: Instant,
    /// When it leaves the queue (equal to `deliver_at` minus the delay).
    departs_at: Instant,
    /// The pair it belongs to.
    pair: usize,
    payload: Vec<u8>,
}

/// One client and server through the link.
struct Pair {
    client_side: UdpSocket,
    server_side: UdpSocket,
    server: SocketAddr,
    /// Learned from the first datagram the client sends.
    client: Option<SocketAddr>,
}

struct Relay {
    config: LinkConfig,
    pairs: Vec<Pair>,
    /// Data direction (server to client), in delivery order.
    data: VecDeque<InFlight>,
    /// Reverse direction (client to server), in delivery order.
    reverse: VecDeque<InFlight>,
    /// When the last queued datagram leaves the queue.
    last_departure: Instant,
    stats: LinkStats,
}

/// How often the relay checks whether it should stop when idle.
const STOP_CHECK: Duration = Duration::from_millis(20);

impl Relay {
    fn run(mut self, stop: &AtomicBool) -> io::Result<LinkStats> {
        let mut poll = Poll::new()?;
        // Tokens 2k and 2k + 1: pair k's client and server sides.
        for (k, pair) in self.pairs.iter_mut().enumerate() {
            poll.registry().register(&mut pair.client_side, Token(2 * k), Interest::READABLE)?;
            poll.registry().register(&mut pair.server_side, Token(2 * k + 1), Interest::READABLE)?;
        }
        let mut events = Events::with_capacity(64);
        let mut buffer = vec![0u8; 65_535];

        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            let next_delivery =
                [self.data.front(), self.reverse.front()].into_iter().flatten().map(|packet| packet.deliver_at).min();
            let timeout = next_delivery.map_or(STOP_CHECK, |at| at.saturating_duration_since(now).min(STOP_CHECK));
            poll.poll(&mut events, Some(timeout))?;

            self.receive(&mut buffer)?;
            self.deliver()?;
        }
        Ok(self.stats)
    }

    fn receive(&mut self, buffer: &mut [u8]) -> io::Result<()> {
        for pair in 0..self.pairs.len() {
            loop {
                match self.pairs[pair].client_side.recv_from(buffer) {
                    Ok((len, from)) => {
                        self.pairs[pair].client.get_or_insert(from);
                        let now = Instant::now();
                        let deliver_at = now + self.config.delay;
                        let payload = buffer[..len].to_vec();
                        self.reverse.push_back(InFlight { deliver_at, departs_at: now, pair, payload });
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
            loop {
                match self.pairs[pair].server_side.recv_from(buffer) {
                    Ok((len, _)) => self.enqueue_data(pair, &buffer[..len]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    fn enqueue_data(&mut self, pair: usize, payload: &[u8]) {
        let now = Instant::now();
        let queued = self.data.iter().filter(|packet| packet.departs_at > now).count();
        if queued >= self.config.queue_packets {
            self.stats.dropped += 1;
            return;
        }
        self.stats.max_queue = self.stats.max_queue.max(queued + 1);
        let service = Duration::from_secs_f64(payload.len() as f64 * 8.0 / self.config.rate_bps.max(1) as f64);
        let departs_at = self.last_departure.max(now) + service;
        self.last_departure = departs_at;
        let deliver_at = departs_at + self.config.delay;
        self.data.push_back(InFlight { deliver_at, departs_at, pair, payload: payload.to_vec() });
    }

    fn deliver(&mut self) -> io::Result<()> {
        let now = Instant::now();
        while self.data.front().is_some_and(|packet| packet.deliver_at <= now) {
            if let Some(packet) = self.data.pop_front() {
                let pair = &self.pairs[packet.pair];
                if let Some(client) = pair.client {
                    send_ignoring_full_buffers(&pair.client_side, &packet.payload, client)?;
                    self.stats.forwarded += 1;
                }
            }
        }
        while self.reverse.front().is_some_and(|packet| packet.deliver_at <= now) {
            if let Some(packet) = self.reverse.pop_front() {
                let pair = &self.pairs[packet.pair];
                send_ignoring_full_buffers(&pair.server_side, &packet.payload, pair.server)?;
                self.stats.reverse_forwarded += 1;
            }
        }
        Ok(())
    }
}

/// A full socket buffer loses the datagram, as a real link would.
fn send_ignoring_full_buffers(socket: &UdpSocket, payload: &[u8], to: SocketAddr) -> io::Result<()> {
    match socket.send_to(payload, to) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bdp_queue_is_rate_times_round_trip_in_packets() {
        // 20 Mbit/s, 20 ms each way: 2.5 MB/s * 40 ms = 100 000 bytes = 84 packets of 1200.
        assert_eq!(LinkConfig::bdp_queue(20_000_000, Duration::from_millis(20), 1200), 84);
        assert_eq!(LinkConfig::bdp_queue(1, Duration::ZERO, 1200), 2);
    }
}
