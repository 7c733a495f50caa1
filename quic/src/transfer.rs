//! A bulk transfer between a quiche server and client over UDP on loopback.
//!
//! The server is the sender: it runs the controller under test and sends a
//! deterministic payload on one unidirectional stream; the client checks
//! every byte against the same generator and closes the connection at the
//! end. Both endpoints honour quiche's pacing (`SendInfo::at`), because the
//! pacer is how rate-based controllers (MulTFRC) act. An optional [`Link`]
//! between them adds a bottleneck so that the controller meets loss.
//!
//! This is the engine behind `flowshare demo` and the end-to-end tests; the
//! HTTP/3 endpoints live in `interop/`.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::Duration;
use std::time::Instant;

use flowshare_controllers::trace::Event;
use flowshare_controllers::Counters;
use flowshare_controllers::Params;
use flowshare_controllers::Snapshot;
use flowshare_controllers::Spec;
use flowshare_controllers::Standard;
use mio::Events;
use mio::Interest;
use mio::Poll;
use mio::Token;

use crate::cert;
use crate::cert::CertFiles;
use crate::link::Link;
use crate::link::LinkConfig;
use crate::link::LinkStats;
use crate::pacing;
use crate::pacing::PacedSender;
use crate::pacing::MAX_DATAGRAM_SIZE;
use crate::select;
use crate::udp;
use crate::udp::Offload;
use crate::udp::RecvBatch;

/// ALPN of the transfer protocol.
const ALPN: &[u8] = b"flowshare-transfer";

/// The server-initiated unidirectional stream that carries the payload.
const PAYLOAD_STREAM: u64 = 3;

/// Connection and stream flow-control windows: large enough that flow
/// control never limits a loopback transfer before congestion control does.
const FLOW_CONTROL_WINDOW: u64 = 32 * 1024 * 1024;

/// What to transfer and how.
#[derive(Clone, Debug)]
pub struct TransferConfig {
    /// Controller of the sender (the server).
    pub sender: Spec,
    /// Select the sender's controller by name through quiche's registry
    /// (`Config::set_cc_algorithm_name`) rather than with a factory.
    pub select_by_name: bool,
    /// Controller of the receiver, which only sends acknowledgements.
    pub receiver: Spec,
    /// Payload size, bytes.
    pub bytes: u64,
    /// Bottleneck between the endpoints; none is plain loopback.
    pub link: Option<LinkConfig>,
    /// Record every event given to the sender's controller.
    pub record_trace: bool,
    /// How often the sender reports progress.
    pub progress_every: Duration,
    /// The transfer fails if it takes longer.
    pub time_limit: Duration,
    /// Seed of the payload generator.
    pub seed: u64,
    /// Segmentation offload on both endpoints' sockets ([`Offload::Off`]:
    /// one datagram per message).
    pub offload: Offload,
}

impl TransferConfig {
    /// A transfer of `bytes` with `sender` as the sender's controller and
    /// quiche's CUBIC on the receiver.
    pub fn new(sender: Spec, bytes: u64) -> Self {
        TransferConfig {
            sender,
            select_by_name: false,
            receiver: Spec::of_standard(Standard::Cubic),
            bytes,
            link: None,
            record_trace: false,
            progress_every: Duration::from_millis(500),
            time_limit: Duration::from_secs(120),
            seed: 1,
            offload: Offload::Auto,
        }
    }
}

/// The sender's state at a progress report.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Time since the sender accepted the connection.
    pub elapsed: Duration,
    /// Bytes of all packets sent so far (quiche's `Stats::sent_bytes`).
    pub sent_bytes: u64,
    /// Payload bytes handed to quiche so far.
    pub payload_written: u64,
    /// The controller's state, when it is a flowshare controller.
    pub snapshot: Option<Snapshot>,
    /// Congestion window quiche reports for the path, bytes.
    pub cwnd: usize,
    /// Smoothed RTT.
    pub rtt: Duration,
}

/// The sender's view at the end of the transfer.
#[derive(Clone, Debug)]
pub struct SenderReport {
    /// The controller spec, canonical form.
    pub spec: String,
    /// Host parameters the controller was built with.
    pub params: Option<Params>,
    /// Final state of a flowshare controller.
    pub snapshot: Option<Snapshot>,
    /// Its event counts.
    pub counters: Option<Counters>,
    /// Its recorded events, when recording was asked for.
    pub trace: Option<Vec<Event>>,
    /// Congestion window quiche reports for the path, bytes.
    pub path_cwnd: usize,
    /// Packets quiche sent, lost and retransmitted.
    pub sent_packets: usize,
    /// Packets declared lost.
    pub lost_packets: usize,
    /// Smoothed RTT at the end.
    pub rtt: Duration,
}

/// The outcome of a transfer.
#[derive(Clone, Debug)]
pub struct TransferReport {
    /// Payload bytes the receiver got.
    pub bytes: u64,
    /// From the handshake's completion at the receiver to the last byte.
    pub elapsed: Duration,
    /// Payload bits per second over `elapsed`.
    pub goodput_bps: f64,
    /// The sender's side.
    pub sender: SenderReport,
    /// What the bottleneck did, if there was one.
    pub link: Option<LinkStats>,
}

/// Why a transfer failed.
#[derive(Debug)]
pub enum TransferError {
    /// A socket or thread failed.
    Io(io::Error),
    /// quiche refused something.
    Quic(&'static str, quiche::Error),
    /// The time limit passed before the payload arrived.
    TimedOut {
        /// Bytes received by then.
        received: u64,
        /// Bytes expected.
        expected: u64,
    },
    /// A received byte differs from the payload that was sent.
    Corrupted {
        /// Offset of the first differing byte.
        offset: u64,
    },
    /// The connection closed before the payload arrived.
    Incomplete {
        /// Bytes received.
        received: u64,
        /// Bytes expected.
        expected: u64,
    },
}

impl fmt::Display for TransferError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            TransferError::Io(e) => write!(f, "i/o error: {e}"),
            TransferError::Quic(what, e) => write!(f, "quiche failed to {what}: {e}"),
            TransferError::TimedOut { received, expected } => {
                write!(f, "timed out after receiving {received} of {expected} bytes")
            }
            TransferError::Corrupted { offset } => {
                write!(f, "received data differs from what was sent at byte {offset}")
            }
            TransferError::Incomplete { received, expected } => {
                write!(f, "connection closed after {received} of {expected} bytes")
            }
        }
    }
}

impl std::error::Error for TransferError {}

impl From<io::Error> for TransferError {
    fn from(e: io::Error) -> Self {
        TransferError::Io(e)
    }
}

fn quic(what: &'static str) -> impl Fn(quiche::Error) -> TransferError {
    move |e| TransferError::Quic(what, e)
}

/// Runs a transfer, calling `on_progress` on the calling thread every
/// `config.progress_every`.
pub fn run(config: &TransferConfig, mut on_progress: impl FnMut(&Progress)) -> Result<TransferReport, TransferError> {
    let mut reports = run_many(std::slice::from_ref(config), config.link, |_, progress| on_progress(progress))?;
    Ok(reports.remove(0))
}

/// Runs the transfers of `configs` at once, each between its own server
/// and client, all through one bottleneck `link` (their own `link` is not
/// used), calling `on_progress(k, progress)` on the calling thread as
/// transfer `k` reports. The transfers start together; each report's link
/// statistics are those of the shared link.
pub fn run_many(
    configs: &[TransferConfig],
    link: Option<LinkConfig>,
    mut on_progress: impl FnMut(usize, &Progress),
) -> Result<Vec<TransferReport>, TransferError> {
    let scratch = cert::ScratchDir::new("transfer")?;
    let certs = cert::write_self_signed(scratch.path(), &["localhost".to_string()])?;

    let mut sockets = Vec::with_capacity(configs.len());
    for _ in configs {
        sockets.push(std::net::UdpSocket::bind(("127.0.0.1", 0))?);
    }
    let servers = sockets.iter().map(|socket| socket.local_addr()).collect::<io::Result<Vec<_>>>()?;
    let link = link.map(|link| Link::start_shared(link, &servers)).transpose()?;
    let targets = link.as_ref().map_or_else(|| servers.clone(), |link| link.client_facing_addrs().to_vec());

    let (progress_tx, progress_rx) = mpsc::channel();
    let mut endpoints = Vec::with_capacity(configs.len());
    for (k, ((config, socket), target)) in configs.iter().zip(sockets).zip(targets).enumerate() {
        let deadline = Instant::now() + config.time_limit;
        let server = {
            let (config, certs, progress_tx) = (config.clone(), certs.clone(), progress_tx.clone());
            std::thread::Builder::new().name(format!("flowshare-sender-{k}")).spawn(move || {
                // A caller that stopped listening is not the sender's failure.
                let report = |progress| drop(progress_tx.send((k, progress)));
                send(&config, &certs, socket, deadline, &report)
            })?
        };
        let client = {
            let config = config.clone();
            std::thread::Builder::new()
                .name(format!("flowshare-receiver-{k}"))
                .spawn(move || receive(&config, target, deadline))?
        };
        endpoints.push((server, client));
    }
    drop(progress_tx);

    // Every sender drops its end of the channel when it finishes.
    for (k, progress) in progress_rx {
        on_progress(k, &progress);
    }
    fn joined<T>(result: std::thread::Result<Result<T, TransferError>>) -> Result<T, TransferError> {
        result.unwrap_or_else(|_| Err(TransferError::Io(io::Error::other("endpoint thread panicked"))))
    }
    let finished: Vec<_> =
        endpoints.into_iter().map(|(server, client)| (joined(client.join()), joined(server.join()))).collect();
    let link = link.map(Link::stop).transpose()?;
    let mut reports = Vec::with_capacity(finished.len());
    for (received, sender) in finished {
        let (bytes, elapsed) = received?;
        reports.push(TransferReport {
            bytes,
            elapsed,
            goodput_bps: bytes as f64 * 8.0 / elapsed.as_secs_f64().max(1e-9),
            sender: sender?,
            link,
        });
    }
    Ok(reports)
}

fn base_config(receiver_cc: Option<&Spec>) -> Result<quiche::Config, TransferError> {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(quic("create a configuration"))?;
    config.set_application_protos(&[ALPN]).map_err(quic("set ALPN"))?;
    config.set_max_idle_timeout(10_000);
    config.set_max_recv_udp_payload_size(MAX_DATAGRAM_SIZE);
    config.set_max_send_udp_payload_size(MAX_DATAGRAM_SIZE);
    config.set_initial_max_data(FLOW_CONTROL_WINDOW);
    config.set_initial_max_stream_data_bidi_local(FLOW_CONTROL_WINDOW);
    config.set_initial_max_stream_data_bidi_remote(FLOW_CONTROL_WINDOW);
    config.set_initial_max_stream_data_uni(FLOW_CONTROL_WINDOW);
    config.set_initial_max_streams_bidi(4);
    config.set_initial_max_streams_uni(4);
    config.set_disable_active_migration(true);
    if let Some(spec) = receiver_cc {
        select::configure(&mut config, spec);
    }
    Ok(config)
}

/// The byte at `offset` of the payload for `seed` (splitmix64 of the 8-byte
/// block number, so any offset can be checked without the rest).
#[cfg(test)]
fn payload_byte(seed: u64, offset: u64) -> u8 {
    payload_block(seed, offset / 8).to_le_bytes()[(offset % 8) as usize]
}

fn payload_block(seed: u64, block: u64) -> u64 {
    let mut z = seed.wrapping_add(block.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `buffer` with the payload starting at `offset`, a block at a
/// time: generating the payload is most of the engine's own work, and at
/// a gigabit per second per byte it would cost more than quiche does.
fn fill_payload(seed: u64, offset: u64, buffer: &mut [u8]) {
    let mut filled = 0;
    while filled < buffer.len() {
        let position = offset + filled as u64;
        let block = payload_block(seed, position / 8).to_le_bytes();
        let from = (position % 8) as usize;
        let n = (8 - from).min(buffer.len() - filled);
        buffer[filled..filled + n].copy_from_slice(&block[from..from + n]);
        filled += n;
    }
}

/// A UDP endpoint driving one quiche connection with pacing.
struct Endpoint {
    socket: udp::Socket,
    local: SocketAddr,
    poll: Poll,
    events: Events,
    received: RecvBatch,
    sender: PacedSender,
}

const SOCKET: Token = Token(0);

impl Endpoint {
    fn new(socket: std::net::UdpSocket, offload: Offload) -> io::Result<Endpoint> {
        let mut socket = udp::Socket::from_std(socket, offload)?;
        let local = socket.local_addr();
        let poll = Poll::new()?;
        poll.registry().register(&mut socket, SOCKET, Interest::READABLE)?;
        Ok(Endpoint {
            socket,
            local,
            poll,
            events: Events::with_capacity(64),
            received: RecvBatch::new(),
            sender: PacedSender::default(),
        })
    }

    /// Sends what is due; returns when the next packet is (or when to try
    /// again if the socket buffer was full).
    fn flush(&mut self, conn: &mut quiche::Connection) -> Result<Option<Instant>, TransferError> {
        let due = self.sender.flush(conn, &mut self.socket).due();
        self.socket.send_queued()?;
        let retry = self.socket.retry_due().map(|after| Instant::now() + after);
        Ok([due, retry].into_iter().flatten().min())
    }

    /// Waits for a datagram, quiche's timer or `pacing_due`, then feeds
    /// every datagram that arrived to quiche and runs its timers.
    fn wait_and_receive(
        &mut self,
        conn: &mut quiche::Connection,
        pacing_due: Option<Instant>,
    ) -> Result<(), TransferError> {
        let timer = conn.timeout().map(|timeout| Instant::now() + timeout);
        let wake = [timer, pacing_due].into_iter().flatten().min();
        pacing::wait(&mut self.poll, &mut self.events, wake, Duration::from_secs(1))?;
        while self.socket.recv(&mut self.received)? > 0 {
            for (datagram, from) in self.received.datagrams() {
                let info = quiche::RecvInfo { from, to: self.local };
                match conn.recv(datagram, info) {
                    Ok(_) | Err(quiche::Error::Done) => {}
                    Err(e) => return Err(TransferError::Quic("process a packet", e)),
                }
            }
        }
        conn.on_timeout();
        Ok(())
    }
}

/// The sender: accepts one connection and sends the payload.
fn send(
    config: &TransferConfig,
    certs: &CertFiles,
    socket: std::net::UdpSocket,
    deadline: Instant,
    progress: &dyn Fn(Progress),
) -> Result<SenderReport, TransferError> {
    let mut quiche_config = base_config(None)?;
    quiche_config.load_cert_chain_from_pem_file(&certs.cert.to_string_lossy()).map_err(quic("load the certificate"))?;
    quiche_config.load_priv_key_from_pem_file(&certs.key.to_string_lossy()).map_err(quic("load the private key"))?;
    if config.select_by_name {
        select::register_with_quiche();
        quiche_config
            .set_cc_algorithm_name(&config.sender.to_string())
            .map_err(quic("select the controller by name"))?;
    } else {
        select::configure_recording(&mut quiche_config, &config.sender, config.record_trace);
    }

    let mut endpoint = Endpoint::new(socket, config.offload)?;
    let mut conn = accept(&mut endpoint, &mut quiche_config, deadline)?;
    // A controller selected by name records from here on: its handshake's
    // packets are not in the trace (one selected by spec records them too).
    if config.record_trace {
        if let Some(controller) = select::controller_mut(&mut conn) {
            controller.record_trace();
        }
    }
    let started = Instant::now();
    let mut next_progress = started;
    let mut written = 0u64;
    // The payload from `chunk_start` on, generated once however many
    // turns quiche takes to accept it.
    let mut chunk = vec![0u8; 64 * 1024];
    let (mut chunk_start, mut chunk_len) = (0u64, 0usize);

    while !conn.is_closed() {
        if Instant::now() > deadline {
            let _ = conn.close(false, 0x1, b"time limit");
        }
        if conn.is_established() && written < config.bytes {
            loop {
                if written == chunk_start + chunk_len as u64 {
                    chunk_len = (config.bytes - written).min(chunk.len() as u64) as usize;
                    chunk_start = written;
                    fill_payload(config.seed, written, &mut chunk[..chunk_len]);
                }
                let unsent = &chunk[(written - chunk_start) as usize..chunk_len];
                let fin = chunk_start + chunk_len as u64 == config.bytes;
                match conn.stream_send(PAYLOAD_STREAM, unsent, fin) {
                    Ok(sent) => {
                        written += sent as u64;
                        if sent < unsent.len() || written == config.bytes {
                            break;
                        }
                    }
                    Err(quiche::Error::Done) => break,
                    Err(e) => return Err(TransferError::Quic("send stream data", e)),
                }
            }
        }
        if Instant::now() >= next_progress {
            // The receiver may have gone; progress is best effort.
            progress(progress_of(&conn, started, written));
            next_progress += config.progress_every;
        }
        let due = endpoint.flush(&mut conn)?;
        endpoint.wait_and_receive(&mut conn, due)?;
    }
    Ok(sender_report(&conn, &config.sender))
}

fn accept(
    endpoint: &mut Endpoint,
    config: &mut quiche::Config,
    deadline: Instant,
) -> Result<quiche::Connection, TransferError> {
    loop {
        if Instant::now() > deadline {
            return Err(TransferError::TimedOut { received: 0, expected: 0 });
        }
        endpoint.poll.poll(&mut endpoint.events, Some(Duration::from_millis(100)))?;
        while endpoint.socket.recv(&mut endpoint.received)? > 0 {
            let mut accepted: Option<quiche::Connection> = None;
            for (datagram, from) in endpoint.received.datagrams() {
                let info = quiche::RecvInfo { from, to: endpoint.local };
                if let Some(conn) = accepted.as_mut() {
                    // The rest of the client's first flight (a large
                    // ClientHello spans two datagrams).
                    match conn.recv(datagram, info) {
                        Ok(_) | Err(quiche::Error::Done) => {}
                        Err(e) => return Err(TransferError::Quic("process a packet", e)),
                    }
                    continue;
                }
                let Ok(header) = quiche::Header::from_slice(datagram, quiche::MAX_CONN_ID_LEN) else {
                    continue;
                };
                if header.ty != quiche::Type::Initial {
                    continue;
                }
                let scid = crate::random_connection_id()?;
                let mut conn =
                    quiche::accept(&scid, None, endpoint.local, from, config).map_err(quic("accept the connection"))?;
                conn.recv(datagram, info).map_err(quic("process the first packet"))?;
                accepted = Some(conn);
            }
            if let Some(conn) = accepted {
                return Ok(conn);
            }
        }
    }
}

fn progress_of(conn: &quiche::Connection, started: Instant, written: u64) -> Progress {
    let path = conn.path_stats().next();
    Progress {
        elapsed: started.elapsed(),
        sent_bytes: conn.stats().sent_bytes,
        payload_written: written,
        snapshot: select::controller(conn).map(|controller| controller.controller().snapshot()),
        cwnd: path.as_ref().map_or(0, |path| path.cwnd),
        rtt: path.as_ref().map_or(Duration::ZERO, |path| path.rtt),
    }
}

fn sender_report(conn: &quiche::Connection, spec: &Spec) -> SenderReport {
    let controller = select::controller(conn);
    let path = conn.path_stats().next();
    let stats = conn.stats();
    SenderReport {
        spec: spec.to_string(),
        params: controller.map(|controller| controller.params()),
        snapshot: controller.map(|controller| controller.controller().snapshot()),
        counters: controller.map(|controller| *controller.controller().counters()),
        trace: controller.and_then(|controller| controller.trace().map(<[Event]>::to_vec)),
        path_cwnd: path.as_ref().map_or(0, |path| path.cwnd),
        sent_packets: stats.sent,
        lost_packets: stats.lost,
        rtt: path.as_ref().map_or(Duration::ZERO, |path| path.rtt),
    }
}

/// The receiver: connects, checks the payload, closes; returns the bytes
/// received and the time from the handshake to the last byte.
fn receive(config: &TransferConfig, server: SocketAddr, deadline: Instant) -> Result<(u64, Duration), TransferError> {
    let mut quiche_config = base_config(Some(&config.receiver))?;
    quiche_config.verify_peer(false);
    let mut endpoint = Endpoint::new(std::net::UdpSocket::bind(("127.0.0.1", 0))?, config.offload)?;
    let scid = crate::random_connection_id()?;
    let mut conn = quiche::connect(Some("localhost"), &scid, endpoint.local, server, &mut quiche_config)
        .map_err(quic("connect"))?;

    let mut received = 0u64;
    let mut established_at = None;
    let mut finished_at = None;
    let mut buffer = vec![0u8; 64 * 1024];
    let mut expected = vec![0u8; buffer.len()];
    while !conn.is_closed() {
        if Instant::now() > deadline {
            return Err(TransferError::TimedOut { received, expected: config.bytes });
        }
        if conn.is_established() {
            established_at.get_or_insert_with(Instant::now);
        }
        for stream in conn.readable() {
            while let Ok((len, fin)) = conn.stream_recv(stream, &mut buffer) {
                if stream != PAYLOAD_STREAM {
                    continue;
                }
                fill_payload(config.seed, received, &mut expected[..len]);
                if buffer[..len] != expected[..len] {
                    let i = (0..len).find(|&i| buffer[i] != expected[i]).unwrap_or(0);
                    return Err(TransferError::Corrupted { offset: received + i as u64 });
                }
                received += len as u64;
                if fin && finished_at.is_none() {
                    finished_at = Some(Instant::now());
                    let _ = conn.close(true, 0x0, b"done");
                }
            }
        }
        let due = endpoint.flush(&mut conn)?;
        endpoint.wait_and_receive(&mut conn, due)?;
    }
    match (established_at, finished_at) {
        (Some(start), Some(end)) if received == config.bytes => Ok((received, end - start)),
        _ => Err(TransferError::Incomplete { received, expected: config.bytes }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_is_the_same_whichever_offset_it_is_generated_from() {
        let mut whole = vec![0u8; 100];
        fill_payload(7, 0, &mut whole);
        let mut tail = vec![0u8; 37];
        fill_payload(7, 63, &mut tail);
        assert_eq!(&whole[63..], &tail[..]);
        let mut other_seed = vec![0u8; 100];
        fill_payload(8, 0, &mut other_seed);
        assert_ne!(whole, other_seed);
        // Block by block, it is the byte-by-byte definition.
        assert!(whole.iter().enumerate().all(|(i, &byte)| byte == payload_byte(7, i as u64)));
        assert!(tail.iter().enumerate().all(|(i, &byte)| byte == payload_byte(7, 63 + i as u64)));
    }
}
