//! UDP for every flowshare endpoint: `flowshare serve`, `flowshare get`
//! and the loopback transfer engine send and receive through a [`Socket`].
//!
//! * **Sending.** Paced senders ([`crate::pacing::PacedSender`]) put the
//!   packets that are due into the socket's [`Outbox`]; one call of
//!   [`Socket::send_queued`] hands everything queued to the kernel with
//!   `sendmmsg`, so a server turn that sends for many connections costs one
//!   system call per 32 messages. Where the kernel has UDP generic
//!   segmentation offload (`UDP_SEGMENT`, Linux 4.18), consecutive packets
//!   to one destination travel as one message of up to
//!   [`MAX_SEGMENTS`] datagrams of one size (the last may be shorter), which
//!   the kernel cuts (or, on loopback to a GRO socket, delivers whole).
//! * **Receiving.** [`Socket::recv`] fills a [`RecvBatch`] with `recvmmsg`;
//!   with UDP GRO on, one message may hold several datagrams of one sender,
//!   which [`RecvBatch::datagrams`] hands out one at a time, as quiche
//!   wants them.
//! * **Fallback.** GSO is probed at start-up on a scratch socket; where the
//!   kernel lacks it, or [`Offload::Off`] is asked for, every message holds
//!   one datagram (still batched by `sendmmsg`). A segmented send the kernel
//!   refuses later (EIO: the route's device cannot checksum for it) switches
//!   GSO off for good and sends the same packets one by one;
//!   [`Socket::capabilities`] says which path is in use and why.
//!
//! Pacing stays the sender's business: the outbox never holds a packet
//! before the sender found it due, and sends in queue order.

mod sys;

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::io::IoSlice;
use std::net::SocketAddr;
use std::time::Duration;

use crate::pacing::MAX_DATAGRAM_SIZE;

/// Largest UDP payload accepted, and the size of a receive slot: a GRO
/// message holds at most 64 KB.
pub const MAX_RECV_SIZE: usize = 65_535;

/// Most datagrams in one segmented message (the kernel's UDP_MAX_SEGMENTS
/// is 64; more would also overflow the 64 KB a message may carry).
pub const MAX_SEGMENTS: usize = 64;

/// Most payload bytes in one segmented message: an IP datagram's 65,535
/// bytes less the IPv6 and UDP headers.
const MAX_GSO_BYTES: usize = 65_535 - 40 - 8;

/// Messages a [`RecvBatch`] holds.
const RECV_SLOTS: usize = 16;

/// Spare datagram buffers the outbox keeps for reuse.
const MAX_SPARE: usize = 1024;

/// After the socket buffer was full, try again this much later.
pub const RETRY_FULL_BUFFER: Duration = Duration::from_millis(1);

/// Socket buffers asked for: enough for a few hundred handshakes arriving
/// at once. The kernel caps them at net.core.{r,w}mem_max.
const SOCKET_BUFFER_BYTES: usize = 8 << 20;

/// Whether a socket may use segmentation offload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Offload {
    /// GSO and GRO where the kernel has them.
    #[default]
    Auto,
    /// One datagram per message both ways (`--no-gso`).
    Off,
}

/// What a socket's data path does, decided at start-up (and GSO switched
/// off if the kernel later refuses a segmented send).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Most datagrams in one sent message; 1 without GSO.
    pub gso_segments: usize,
    /// Whether received messages may hold several datagrams (GRO).
    pub gro: bool,
    /// Why GSO is off, when it is.
    pub gso_off: Option<&'static str>,
}

impl Capabilities {
    /// Whether sends are segmented.
    pub fn gso(&self) -> bool {
        self.gso_segments > 1
    }
}

impl fmt::Display for Capabilities {
    /// `gso=on segments=64 gro=on`, or `gso=off reason="..." gro=off`.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.gso_off {
            None => write!(f, "gso=on segments={}", self.gso_segments)?,
            Some(reason) => write!(f, "gso=off gso_reason=\"{reason}\"")?,
        }
        write!(f, " gro={}", if self.gro { "on" } else { "off" })
    }
}

/// Counts of what a socket sent, for tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendStats {
    /// Datagrams the kernel took.
    pub datagrams: u64,
    /// Messages they went in (a segmented message is one).
    pub messages: u64,
    /// `sendmmsg` calls that sent something.
    pub calls: u64,
    /// Datagrams dropped because the destination was unreachable or
    /// refused them (ICMP), as a network would lose them.
    pub dropped: u64,
}

/// A packet waiting in the outbox.
#[derive(Debug)]
struct Queued {
    buffer: Vec<u8>,
    len: usize,
    to: SocketAddr,
    /// The first datagram of a message; the ones after it up to the next
    /// first one are its further segments.
    starts_message: bool,
}

/// The message being filled at the tail of the outbox.
#[derive(Clone, Copy, Debug)]
struct OpenMessage {
    to: SocketAddr,
    segment: usize,
    segments: usize,
    bytes: usize,
}

/// Packets due to leave, in the order they were queued, grouped into
/// messages; and the datagram buffers senders reuse. Sans-IO: the
/// [`Socket`] that owns it sends it.
#[derive(Debug)]
pub struct Outbox {
    queue: VecDeque<Queued>,
    /// Most datagrams per message (1: no GSO).
    max_segments: usize,
    open: Option<OpenMessage>,
    spare: Vec<Vec<u8>>,
    /// The socket's buffer was full at the last send.
    blocked: bool,
}

impl Outbox {
    /// An empty outbox whose messages hold up to `max_segments` datagrams
    /// (1 for no segmentation).
    pub fn new(max_segments: usize) -> Outbox {
        Outbox {
            queue: VecDeque::new(),
            max_segments: max_segments.clamp(1, MAX_SEGMENTS),
            open: None,
            spare: Vec::new(),
            blocked: false,
        }
    }

    /// A buffer of [`MAX_DATAGRAM_SIZE`] bytes to build a packet in.
    pub fn buffer(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_else(|| vec![0; MAX_DATAGRAM_SIZE])
    }

    /// Takes back a buffer that was not queued.
    pub fn recycle(&mut self, buffer: Vec<u8>) {
        if self.spare.len() < MAX_SPARE {
            self.spare.push(buffer);
        }
    }

    /// Queues the first `len` bytes of `buffer` for `to`. The packet joins
    /// the message at the tail when that one goes to `to`, its datagrams so
    /// far all have this packet's size or more, none was shorter, and the
    /// message has room; otherwise it starts a new message.
    pub fn push(&mut self, buffer: Vec<u8>, len: usize, to: SocketAddr) {
        let joins = match &mut self.open {
            Some(open)
                if open.to == to
                    && len <= open.segment
                    && open.segments < self.max_segments
                    && open.bytes + len <= MAX_GSO_BYTES =>
            {
                open.segments += 1;
                open.bytes += len;
                true
            }
            _ => false,
        };
        // A shorter datagram must be the message's last.
        let closes = joins && self.open.is_some_and(|open| len < open.segment);
        if !joins {
            self.open = (self.max_segments > 1).then_some(OpenMessage { to, segment: len, segments: 1, bytes: len });
        } else if closes {
            self.open = None;
        }
        self.queue.push_back(Queued { buffer, len, to, starts_message: !joins });
    }

    /// Packets queued and not yet sent.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether the socket's buffer was full at the last send: senders hold
    /// their packets until it drains.
    pub fn is_blocked(&self) -> bool {
        self.blocked
    }

    /// The queued messages, in order, each as its destination and the
    /// lengths of its datagrams.
    pub fn messages(&self) -> Vec<(SocketAddr, Vec<usize>)> {
        let mut messages: Vec<(SocketAddr, Vec<usize>)> = Vec::new();
        for packet in &self.queue {
            match messages.last_mut() {
                Some((_, lengths)) if !packet.starts_message => lengths.push(packet.len),
                _ => messages.push((packet.to, vec![packet.len])),
            }
        }
        messages
    }

    /// The payloads of the queued datagrams, in order.
    pub fn datagrams(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.queue.iter().map(|packet| &packet.buffer[..packet.len])
    }

    /// Removes the first message's `segments` datagrams, keeping their
    /// buffers.
    fn pop_message(&mut self) -> usize {
        let mut popped = 0;
        while let Some(packet) = self.queue.front() {
            if popped > 0 && packet.starts_message {
                break;
            }
            if let Some(packet) = self.queue.pop_front() {
                self.recycle(packet.buffer);
                popped += 1;
            }
        }
        if self.queue.is_empty() {
            self.open = None;
        }
        popped
    }

    /// Forgets what is queued, as if it had been sent.
    #[cfg(test)]
    pub(crate) fn clear(&mut self) {
        while self.pop_message() > 0 {}
    }

    /// Behaves as after a send into a full socket buffer.
    #[cfg(test)]
    pub(crate) fn block_for_test(&mut self) {
        self.blocked = true;
    }

    /// From now on one datagram per message, also for what is queued.
    fn stop_segmenting(&mut self) {
        self.max_segments = 1;
        self.open = None;
        for packet in &mut self.queue {
            packet.starts_message = true;
        }
    }
}

/// Received messages, and the datagrams in them; one per event loop, lent
/// to whichever socket it reads.
pub struct RecvBatch {
    buffers: Vec<u8>,
    messages: Vec<sys::InMessage>,
    count: usize,
}

impl Default for RecvBatch {
    fn default() -> Self {
        RecvBatch::new()
    }
}

impl fmt::Debug for RecvBatch {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("RecvBatch").field("messages", &self.count).finish()
    }
}

impl RecvBatch {
    /// Room for `RECV_SLOTS` messages of up to [`MAX_RECV_SIZE`] bytes.
    pub fn new() -> RecvBatch {
        RecvBatch {
            buffers: vec![0; RECV_SLOTS * MAX_RECV_SIZE],
            messages: vec![sys::InMessage { len: 0, segment: 1, from: None }; RECV_SLOTS],
            count: 0,
        }
    }

    /// The datagrams of the last [`Socket::recv`], in arrival order, each
    /// with its sender; GRO messages are cut at their segment size.
    pub fn datagrams(&mut self) -> impl Iterator<Item = (&mut [u8], SocketAddr)> + '_ {
        self.buffers
            .chunks_exact_mut(MAX_RECV_SIZE)
            .zip(&self.messages)
            .take(self.count)
            .filter_map(|(slot, message)| message.from.map(|from| (slot, message, from)))
            .flat_map(|(slot, message, from)| {
                slot[..message.len.min(MAX_RECV_SIZE)].chunks_mut(message.segment).map(move |datagram| (datagram, from))
            })
    }
}

/// A non-blocking UDP socket with its outbox and offload capabilities.
#[derive(Debug)]
pub struct Socket {
    inner: mio::net::UdpSocket,
    local: SocketAddr,
    capabilities: Capabilities,
    outbox: Outbox,
    stats: SendStats,
}

impl Socket {
    /// A socket bound to `address` (on `[::]`, IPv4 clients too), with large
    /// buffers, using offload as `offload` allows and the kernel has it.
    pub fn bind(address: SocketAddr, offload: Offload) -> io::Result<Socket> {
        let domain = socket2::Domain::for_address(address);
        let socket = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
        if address.is_ipv6() {
            // Accept IPv4 clients on [::] as the interop runner's server46 does.
            let _ = socket.set_only_v6(false);
        }
        let _ = socket.set_recv_buffer_size(SOCKET_BUFFER_BYTES);
        let _ = socket.set_send_buffer_size(SOCKET_BUFFER_BYTES);
        socket.bind(&address.into())?;
        Socket::from_std(socket.into(), offload)
    }

    /// Takes over a bound socket (made non-blocking).
    pub fn from_std(socket: std::net::UdpSocket, offload: Offload) -> io::Result<Socket> {
        socket.set_nonblocking(true)?;
        let inner = mio::net::UdpSocket::from_std(socket);
        let local = inner.local_addr()?;
        let capabilities = match offload {
            Offload::Off => Capabilities { gso_segments: 1, gro: false, gso_off: Some("switched off (--no-gso)") },
            Offload::Auto => {
                let gso = gso_supported(local);
                Capabilities {
                    gso_segments: if gso { MAX_SEGMENTS } else { 1 },
                    gro: sys::set_udp_option(&inner, sys::UdpOption::Gro, 1).is_ok(),
                    gso_off: (!gso).then_some("the kernel has no UDP_SEGMENT"),
                }
            }
        };
        Ok(Socket {
            inner,
            local,
            outbox: Outbox::new(capabilities.gso_segments),
            capabilities,
            stats: SendStats::default(),
        })
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// What the data path does.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    /// What the socket sent so far.
    pub fn send_stats(&self) -> SendStats {
        self.stats
    }

    /// Where paced senders queue their packets.
    pub fn outbox(&mut self) -> &mut Outbox {
        &mut self.outbox
    }

    /// When [`Socket::send_queued`] should be tried again: packets wait
    /// because the socket buffer was full.
    pub fn retry_due(&self) -> Option<Duration> {
        (!self.outbox.is_empty()).then_some(RETRY_FULL_BUFFER)
    }

    /// Sends what the outbox holds, in order, until it is empty or the
    /// socket buffer is full (the rest waits, [`Outbox::is_blocked`]).
    /// Datagrams to unreachable destinations are dropped as lost.
    pub fn send_queued(&mut self) -> io::Result<()> {
        let mut addresses: Vec<socket2::SockAddr> = Vec::new();
        while !self.outbox.is_empty() {
            // The messages at the head of the queue, at most a batch: the
            // index of each one's first datagram, its datagram count, and
            // the first one's length, at which a segmented message is cut.
            let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(sys::BATCH);
            let mut shapes: Vec<(usize, usize, usize)> = Vec::with_capacity(sys::BATCH);
            addresses.clear();
            for packet in &self.outbox.queue {
                if packet.starts_message {
                    if shapes.len() == sys::BATCH {
                        break;
                    }
                    shapes.push((slices.len(), 0, packet.len));
                    addresses.push(packet.to.into());
                }
                let Some(shape) = shapes.last_mut() else { break };
                shape.1 += 1;
                slices.push(IoSlice::new(&packet.buffer[..packet.len]));
            }
            let messages: Vec<sys::OutMessage<'_>> = shapes
                .iter()
                .zip(&addresses)
                .map(|(&(first, count, segment), to)| sys::OutMessage {
                    to,
                    iov: &slices[first..first + count],
                    segment: if count > 1 { u16::try_from(segment).ok() } else { None },
                })
                .collect();
            let result = sys::send_many(&self.inner, &messages);
            let first_segmented = messages.first().is_some_and(|message| message.segment.is_some());
            drop(messages);
            drop(slices);
            match result {
                Ok(sent) => {
                    self.stats.calls += 1;
                    for _ in 0..sent {
                        self.stats.datagrams += self.outbox.pop_message() as u64;
                        self.stats.messages += 1;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.outbox.blocked = true;
                    self.outbox.open = None;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The kernel has GSO but this route's device cannot do it
                // (EIO: no checksum offload; EINVAL, EMSGSIZE: segments the
                // route's MTU does not take): one datagram per message from
                // now on, starting with this message's.
                Err(e)
                    if first_segmented
                        && matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL | libc::EMSGSIZE)) =>
                {
                    self.capabilities.gso_segments = 1;
                    self.capabilities.gso_off = Some("the kernel refused a segmented send");
                    self.outbox.stop_segmenting();
                }
                // ICMP said the peer is unreachable, or the datagram is too
                // large for the path: it is lost, and quiche's timers decide
                // what that means.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionRefused
                            | io::ErrorKind::HostUnreachable
                            | io::ErrorKind::NetworkUnreachable
                    ) || e.raw_os_error() == Some(libc::EMSGSIZE) =>
                {
                    self.stats.dropped += self.outbox.pop_message() as u64;
                }
                Err(e) => return Err(e),
            }
        }
        self.outbox.blocked = false;
        Ok(())
    }

    /// Sends one datagram that belongs to no paced connection (Version
    /// Negotiation, Retry) at once; a full buffer or an unreachable peer
    /// loses it.
    pub fn send_now(&self, datagram: &[u8], to: SocketAddr) -> io::Result<()> {
        match self.inner.send_to(datagram, to) {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::ConnectionRefused
                        | io::ErrorKind::HostUnreachable
                        | io::ErrorKind::NetworkUnreachable
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Reads the messages waiting on the socket into `batch` (at most its
    /// slots); returns how many arrived, 0 when none was waiting. ICMP
    /// errors of earlier sends, which Linux reports here, are skipped.
    pub fn recv(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        batch.count = 0;
        loop {
            match sys::recv_many(&self.inner, &mut batch.buffers, MAX_RECV_SIZE, &mut batch.messages) {
                Ok(count) => {
                    batch.count = count;
                    return Ok(count);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
                Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::Interrupted) => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl mio::event::Source for Socket {
    fn register(&mut self, registry: &mio::Registry, token: mio::Token, interests: mio::Interest) -> io::Result<()> {
        self.inner.register(registry, token, interests)
    }

    fn reregister(&mut self, registry: &mio::Registry, token: mio::Token, interests: mio::Interest) -> io::Result<()> {
        self.inner.reregister(registry, token, interests)
    }

    fn deregister(&mut self, registry: &mio::Registry) -> io::Result<()> {
        self.inner.deregister(registry)
    }
}

/// Whether the kernel accepts UDP_SEGMENT, tried on a scratch socket of
/// `local`'s family (setting it on the real socket would segment every
/// large send by default).
fn gso_supported(local: SocketAddr) -> bool {
    let domain = socket2::Domain::for_address(local);
    socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))
        .and_then(|probe| sys::set_udp_option(&probe, sys::UdpOption::Segment, MAX_DATAGRAM_SIZE as i32))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn peer(port: u16) -> SocketAddr {
        ([127, 0, 0, 1], port).into()
    }

    fn lengths(outbox: &Outbox) -> Vec<(u16, Vec<usize>)> {
        outbox.messages().into_iter().map(|(to, lengths)| (to.port(), lengths)).collect()
    }

    #[test]
    fn consecutive_datagrams_to_one_peer_share_a_message_until_a_shorter_one_ends_it() {
        let mut outbox = Outbox::new(MAX_SEGMENTS);
        for len in [1350, 1350, 1350, 1000, 1350, 1350] {
            let buffer = outbox.buffer();
            outbox.push(buffer, len, peer(1));
        }
        let buffer = outbox.buffer();
        outbox.push(buffer, 1350, peer(2));
        // A longer datagram after shorter ones cannot be a further segment.
        let buffer = outbox.buffer();
        outbox.push(buffer, 200, peer(2));
        let buffer = outbox.buffer();
        outbox.push(buffer, 300, peer(2));
        assert_eq!(
            lengths(&outbox),
            vec![(1, vec![1350, 1350, 1350, 1000]), (1, vec![1350, 1350]), (2, vec![1350, 200]), (2, vec![300]),]
        );
        assert_eq!(outbox.len(), 9);
    }

    #[test]
    fn a_segmented_message_stays_within_64_kb() {
        let mut outbox = Outbox::new(MAX_SEGMENTS);
        for _ in 0..60 {
            let buffer = outbox.buffer();
            outbox.push(buffer, MAX_DATAGRAM_SIZE, peer(1));
        }
        let sizes: Vec<usize> = outbox.messages().iter().map(|(_, lengths)| lengths.len()).collect();
        // 65,487 / 1,350: 48 segments fit.
        assert_eq!(sizes, vec![48, 12]);
        // Small datagrams stop at the kernel's 64 segments.
        let mut outbox = Outbox::new(MAX_SEGMENTS);
        for _ in 0..70 {
            let buffer = outbox.buffer();
            outbox.push(buffer, 100, peer(1));
        }
        let sizes: Vec<usize> = outbox.messages().iter().map(|(_, lengths)| lengths.len()).collect();
        assert_eq!(sizes, vec![64, 6]);
    }

    #[test]
    fn without_gso_every_datagram_is_a_message_of_its_own() {
        let mut outbox = Outbox::new(1);
        for _ in 0..3 {
            let buffer = outbox.buffer();
            outbox.push(buffer, 1350, peer(1));
        }
        assert_eq!(lengths(&outbox), vec![(1, vec![1350]), (1, vec![1350]), (1, vec![1350])]);
    }

    /// Sends `count` numbered datagrams of mixed sizes from a socket with
    /// `send` offload to one with `receive` offload on 127.0.0.1 and
    /// returns what arrived, in order, and the sender's counts.
    fn exchange(
        send: Offload,
        receive: Offload,
        count: usize,
    ) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, SendStats, Capabilities) {
        let mut sender = Socket::bind(peer(0), send).expect("sender socket");
        let receiver = Socket::bind(peer(0), receive).expect("receiver socket");
        let to = receiver.local_addr();
        let mut sent = Vec::new();
        for i in 0..count {
            // Mostly full datagrams, a short one now and then, as quiche builds them.
            let len = if i % 17 == 16 { 100 + i } else { MAX_DATAGRAM_SIZE };
            let mut buffer = sender.outbox().buffer();
            for (k, byte) in buffer[..len].iter_mut().enumerate() {
                *byte = (i * 7 + k) as u8;
            }
            sent.push(buffer[..len].to_vec());
            sender.outbox().push(buffer, len, to);
        }
        sender.send_queued().expect("send");
        assert!(sender.outbox().is_empty(), "loopback takes {count} datagrams at once");
        let mut batch = RecvBatch::new();
        let mut received = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while received.len() < count && Instant::now() < deadline {
            if receiver.recv(&mut batch).expect("recv") == 0 {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            for (datagram, from) in batch.datagrams() {
                assert_eq!(from, sender.local_addr());
                received.push(datagram.to_vec());
            }
        }
        (sent, received, sender.send_stats(), sender.capabilities())
    }

    #[test]
    fn with_gso_and_gro_every_datagram_arrives_whole_and_in_order() {
        let (sent, received, stats, capabilities) = exchange(Offload::Auto, Offload::Auto, 200);
        assert_eq!(received, sent);
        assert_eq!(stats.datagrams, 200);
        if capabilities.gso() {
            // 16 full datagrams and a short one per message.
            assert!(stats.messages <= 200 / 16 + 1, "{stats:?}");
        } else {
            eprintln!("no GSO here ({capabilities}): checked the fallback only");
        }
    }

    #[test]
    fn segmented_sends_reach_a_socket_without_gro_as_single_datagrams() {
        let (sent, received, _, _) = exchange(Offload::Auto, Offload::Off, 100);
        assert_eq!(received, sent);
    }

    #[test]
    fn with_gso_off_each_datagram_is_one_message_and_sendmmsg_still_batches() {
        let (sent, received, stats, capabilities) = exchange(Offload::Off, Offload::Off, 100);
        assert_eq!(received, sent);
        assert!(!capabilities.gso() && !capabilities.gro);
        assert_eq!(capabilities.gso_off, Some("switched off (--no-gso)"));
        assert_eq!((stats.datagrams, stats.messages), (100, 100));
        if cfg!(target_os = "linux") {
            // 32 messages per sendmmsg.
            assert_eq!(stats.calls, 4, "{stats:?}");
        }
    }

    #[test]
    fn capabilities_read_as_log_fields() {
        let on = Capabilities { gso_segments: 64, gro: true, gso_off: None };
        assert_eq!(on.to_string(), "gso=on segments=64 gro=on");
        let off = Capabilities { gso_segments: 1, gro: false, gso_off: Some("switched off (--no-gso)") };
        assert_eq!(off.to_string(), "gso=off gso_reason=\"switched off (--no-gso)\" gro=off");
    }
}
