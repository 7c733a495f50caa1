//! `flowshare serve`: an HTTP/3 (and hq-interop) file server whose
//! connections each get the controller their policy chooses.
//!
//! One thread runs a mio event loop over one UDP socket and every
//! connection, as quiche's own server example does. The controller is
//! chosen inside the TLS handshake (`handshake.rs`): BoringSSL's
//! certificate-selection callback sees the ClientHello (server name,
//! offered protocols), the loop has put the client's address where the
//! callback finds it, the policy decides, and
//! `Connection::set_cc_factory_in_handshake` installs the controller before
//! quiche builds the connection's recovery state.
//!
//! Every connection's packets leave when quiche's pacer says
//! (`SendInfo::at`): each connection's `PacedSender` queues the packets that
//! are due in the socket's outbox, and at the end of every turn of the loop
//! one `sendmmsg` sends the turn's packets of all connections, consecutive
//! packets of a connection as one segmented (GSO) message where the kernel
//! has GSO ([`crate::io`]). Datagrams arrive by `recvmmsg`, GRO-coalesced
//! ones cut back into datagrams. After each batch of received
//! packets, timers or sends, the loop serves requests (`h3.rs`, `hq.rs`),
//! moves response bodies into quiche as stream capacity allows, updates the
//! weight of connections whose weight follows their requests
//! (`connection.rs`, [`crate::weight`]) and writes the controller's state to
//! the qlog when it changed.
//!
//! Before a datagram from an unknown client costs anything, `admission.rs`
//! decides: Initials under 1,200 bytes and undecryptable ones are dropped,
//! unknown versions get a Version Negotiation only in a large enough
//! datagram, a Retry asks for proof of the address when configured
//! ([`RetryMode`]), and [`Limits`] bound half-open connections,
//! connections per address, handshake time and qlogs. Responses share
//! each connection's send capacity in turns (`schedule.rs`); requests are
//! checked against RFC 9114 (`request.rs`) and files against the root.
//!
//! SIGHUP reloads the policy: new connections use the new one, existing
//! connections keep the policy they were admitted under; a bad file is
//! rejected with a one-line error and the old policy stays. SIGTERM and
//! SIGINT close every connection cleanly and end the server.

mod admission;
mod config;
mod connection;
mod h3;
mod handshake;
mod hq;
mod request;
mod schedule;

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;
use std::time::SystemTime;

use mio::Events;
use mio::Interest;
use mio::Poll;
use mio::Token;

use admission::RetryTokens;
use admission::MIN_INITIAL_DATAGRAM;
pub use config::Limits;
pub use config::RetryMode;
pub use config::ServerConfig;
use connection::ServerConn;
use flowshare_quic::pacing::PacedSender;
use flowshare_quic::pacing::PACING_SLACK;
use handshake::Handshake;
use handshake::PolicyCell;

use crate::endpoint::Reporting;
use crate::event;
use crate::http::Protocol;
use crate::io::log_offload;
use crate::io::Capabilities;
use crate::io::Offload;
use crate::io::RecvBatch;
use crate::io::Socket;
use crate::io::MAX_DATAGRAM_SIZE;
use crate::log::Level;
use crate::policy;
use crate::policy::Policy;
use crate::qlog;

/// How long a shutdown waits for connections to close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Longest the loop sleeps without a timer: signals interrupt it anyway.
const MAX_IDLE_WAIT: Duration = Duration::from_secs(1);

const SOCKET: Token = Token(0);

/// SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114, section 4.2.2): ample for
/// real requests (browsers send a few KB), small next to a flow-control
/// window.
pub const MAX_FIELD_SECTION_SIZE: u64 = 16 * 1024;

/// The running server.
pub struct Server {
    config: ServerConfig,
    socket: Socket,
    local: SocketAddr,
    poll: Poll,
    quiche_config: quiche::Config,
    h3_config: quiche::h3::Config,
    policy: Arc<PolicyCell>,
    handshake: Handshake,
    conns: HashMap<Vec<u8>, ServerConn>,
    /// Connections not yet established.
    half_open: usize,
    /// Open connections by client address.
    per_address: HashMap<IpAddr, usize>,
    /// Key of the HMAC that derives a connection's ID from the client's
    /// first destination ID, so that retransmitted Initials find it.
    cid_key: ring::hmac::Key,
    retry_tokens: RetryTokens,
    /// What the server dropped or answered without a connection.
    counters: Counters,
    reporting: Reporting,
    reload: Arc<AtomicBool>,
    terminate: Arc<AtomicBool>,
}

/// Why the server could not start.
#[derive(Debug)]
pub enum ServerError {
    /// The policy was rejected.
    Policy(policy::PolicyError),
    /// Something else, with context.
    Other(String),
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            ServerError::Policy(e) => write!(f, "{e}"),
            ServerError::Other(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for ServerError {}

fn other(context: &str) -> impl Fn(String) -> ServerError + '_ {
    move |e| ServerError::Other(format!("{context}: {e}"))
}

impl Server {
    /// Loads the policy, the certificate and binds the socket.
    pub fn bind(config: ServerConfig) -> Result<Server, ServerError> {
        Server::bind_with_offload(config, Offload::Auto)
    }

    /// [`Server::bind`] with segmentation offload as `offload` allows
    /// (`flowshare serve --no-gso`: [`Offload::Off`]).
    pub fn bind_with_offload(mut config: ServerConfig, offload: Offload) -> Result<Server, ServerError> {
        let policy = config.policy.load().map_err(ServerError::Policy)?;
        if !config.root.is_dir() {
            return Err(ServerError::Other(format!("--root {}: not a directory", config.root.display())));
        }
        // Every file served must lie beneath the canonical root.
        config.root = config.root.canonicalize().map_err(|e| other("--root")(e.to_string()))?;
        if let Some(dir) = &mut config.upload_dir {
            std::fs::create_dir_all(&*dir).map_err(|e| other("--upload-dir")(e.to_string()))?;
            *dir = dir.canonicalize().map_err(|e| other("--upload-dir")(e.to_string()))?;
        }
        let mut reporting = config.endpoint.open("server").map_err(ServerError::Other)?;
        reporting.limit_qlog(config.limits.qlog_max_files, config.limits.qlog_max_bytes);
        let policy = PolicyCell::new(policy);
        let (tls, handshake) = Handshake::tls_context(&policy).map_err(ServerError::Other)?;
        let mut quiche_config = quiche::Config::with_boring_ssl_ctx_builder(quiche::PROTOCOL_VERSION, tls)
            .map_err(|e| other("QUIC configuration")(e.to_string()))?;
        for (option, file) in [("--cert", &config.cert), ("--key", &config.key)] {
            std::fs::File::open(file).map_err(|e| ServerError::Other(format!("{option} {}: {e}", file.display())))?;
        }
        let path = |p: &PathBuf| p.to_string_lossy().into_owned();
        quiche_config.load_cert_chain_from_pem_file(&path(&config.cert)).map_err(|e| {
            ServerError::Other(format!("--cert {}: not a PEM certificate chain ({e})", config.cert.display()))
        })?;
        quiche_config.load_priv_key_from_pem_file(&path(&config.key)).map_err(|e| {
            ServerError::Other(format!("--key {}: not a PEM private key matching --cert ({e})", config.key.display()))
        })?;
        let protocols: Vec<&[u8]> = Protocol::ALL.iter().map(|protocol| protocol.alpn()).collect();
        quiche_config.set_application_protos(&protocols).map_err(|e| other("ALPN")(e.to_string()))?;
        config.endpoint.configure(&mut quiche_config);
        quiche_config.set_initial_max_streams_bidi(config.max_streams);
        if config.early_data {
            quiche_config.enable_early_data();
        }
        let mut h3_config = quiche::h3::Config::new().map_err(|e| other("HTTP/3 configuration")(e.to_string()))?;
        // Advertised in SETTINGS; a request over it is reset on its own with
        // H3_EXCESSIVE_LOAD (patches/quiche/0003), the connection goes on.
        h3_config.set_max_field_section_size(MAX_FIELD_SECTION_SIZE);

        let mut socket = crate::io::bind(config.listen, offload)
            .map_err(|e| other(&format!("--listen {}", config.listen))(e.to_string()))?;
        let local = socket.local_addr();
        log_offload(Level::Info, socket.capabilities());
        let poll = Poll::new().map_err(|e| other("poll")(e.to_string()))?;
        poll.registry().register(&mut socket, SOCKET, Interest::READABLE).map_err(|e| other("poll")(e.to_string()))?;

        let reload = Arc::new(AtomicBool::new(false));
        let terminate = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&reload))
            .map_err(|e| other("SIGHUP")(e.to_string()))?;
        for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            signal_hook::flag::register(signal, Arc::clone(&terminate)).map_err(|e| other("signals")(e.to_string()))?;
        }
        let rng = ring::rand::SystemRandom::new();
        let cid_key = ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &rng)
            .map_err(|_| ServerError::Other("no randomness".into()))?;
        let retry_tokens = RetryTokens::new(&rng).ok_or_else(|| ServerError::Other("no randomness".into()))?;

        Ok(Server {
            config,
            socket,
            local,
            poll,
            quiche_config,
            h3_config,
            policy,
            handshake,
            conns: HashMap::new(),
            half_open: 0,
            per_address: HashMap::new(),
            cid_key,
            retry_tokens,
            counters: Counters::default(),
            reporting,
            reload,
            terminate,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Whether the socket segments sends (GSO) and coalesces receives (GRO).
    pub fn offload(&self) -> Capabilities {
        self.socket.capabilities()
    }

    /// The policy in force.
    pub fn policy(&self) -> Arc<Policy> {
        self.policy.current()
    }

    /// A flag that ends [`Server::run`] as SIGTERM does, for servers run
    /// inside another program (tests, fuzzing).
    pub fn terminate_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.terminate)
    }

    /// Connections the server holds, established or not.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Datagrams dropped or answered without connection state, by reason.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Serves until SIGTERM or SIGINT.
    pub fn run(&mut self) -> io::Result<()> {
        self.run_until(None)
    }

    /// Serves until `until` (then returns with every connection as it
    /// is, after at least one turn of the loop), or until SIGTERM or
    /// SIGINT when None.
    pub fn run_until(&mut self, until: Option<Instant>) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        let mut received = RecvBatch::new();
        let mut shutdown_deadline = None;
        if self.config.pacing_slack < PACING_SLACK {
            if let Err(e) = flowshare_quic::pacing::tighten_timer_slack() {
                event!(Level::Warn, "timer_slack_kept", error = e);
            }
        }
        loop {
            if self.reload.swap(false, Ordering::Relaxed) {
                self.reload_policy();
            }
            if self.terminate.load(Ordering::Relaxed) && shutdown_deadline.is_none() {
                event!(Level::Info, "shutting_down", connections = self.conns.len());
                shutdown_deadline = Some(Instant::now() + SHUTDOWN_GRACE);
                for conn in self.conns.values_mut() {
                    let code = conn.protocol.map_or(0, Protocol::no_error);
                    let _ = conn.quic.close(true, code, b"server shutting down");
                    conn.dirty = true;
                }
            }
            if let Some(deadline) = shutdown_deadline {
                if self.conns.is_empty() || Instant::now() >= deadline {
                    return Ok(());
                }
            }

            let handshake_timeout = self.config.limits.handshake_timeout;
            let retry = self.socket.retry_due().map(|after| Instant::now() + after);
            let wake =
                self.conns.values().filter_map(|conn| conn.wake(handshake_timeout)).chain(until).chain(retry).min();
            flowshare_quic::pacing::wait(&mut self.poll, &mut events, wake, MAX_IDLE_WAIT)?;
            self.receive(&mut received)?;

            let now = Instant::now();
            let mut traces_due = false;
            for conn in self.conns.values_mut() {
                if conn.handshake_expired(now, self.config.limits.handshake_timeout) {
                    continue;
                }
                if conn.timeout_at.is_some_and(|at| at <= now) {
                    conn.quic.on_timeout();
                    conn.dirty = true;
                }
                let due = conn.pacing_due.is_some_and(|at| at <= now + conn.sender.slack());
                if !(conn.dirty || due) {
                    continue;
                }
                if conn.dirty {
                    conn.serve(&self.config, &self.h3_config, &self.reporting);
                    if conn.half_open && conn.quic.is_established() {
                        conn.half_open = false;
                        self.half_open -= 1;
                    }
                }
                conn.pacing_due = conn.sender.flush(&mut conn.quic, &mut self.socket).due();
                conn.timeout_at = conn.quic.timeout_instant();
                conn.trace_due |= conn.dirty && conn.traced();
                traces_due |= conn.trace_due;
                conn.dirty = false;
            }
            // This turn's packets of every connection, in as few system
            // calls as the kernel allows.
            let before = self.socket.capabilities();
            self.socket.send_queued()?;
            if self.socket.capabilities() != before {
                log_offload(Level::Info, self.socket.capabilities());
            }
            // The controllers' qlog records only now, so that writing them
            // never holds this turn's packets back: a pacer times the next
            // packet from when this one was built, and whatever delays this
            // one's send brings the two closer together.
            // A second pass over the connections only when one has a record
            // to write: without qlog a server never takes it.
            if traces_due {
                for conn in self.conns.values_mut().filter(|conn| conn.trace_due) {
                    conn.trace.observe(&mut conn.quic);
                    conn.trace_due = false;
                }
            }
            self.collect_closed();
            if until.is_some_and(|until| Instant::now() >= until) {
                return Ok(());
            }
        }
    }

    fn reload_policy(&mut self) {
        match self.config.policy.load() {
            Ok(policy) => {
                event!(
                    Level::Info,
                    "policy_reloaded",
                    source = policy.source(),
                    rules = policy.rules(),
                    max_weight = policy.max_weight()
                );
                self.policy.replace(policy);
            }
            Err(e) => {
                event!(Level::Warn, "policy_rejected", error = e, kept = self.policy().source());
                eprintln!("flowshare serve: policy reload rejected, keeping the previous policy: {e}");
            }
        }
    }

    /// Feeds every datagram waiting on the socket to the server.
    fn receive(&mut self, received: &mut RecvBatch) -> io::Result<()> {
        while self.socket.recv(received)? > 0 {
            for (datagram, from) in received.datagrams() {
                self.handle_datagram(datagram, from)?;
            }
        }
        Ok(())
    }

    /// The server's entry point for one datagram from `from`: finds its
    /// connection, or decides whether a new one may start (see
    /// `admission`), answering with a Version Negotiation or a Retry
    /// where that is due. Anything else is dropped and counted. Public for
    /// fuzzing and tests; the event loop calls it for every datagram.
    pub fn handle_datagram(&mut self, packet: &mut [u8], from: SocketAddr) -> io::Result<()> {
        let Ok(header) = quiche::Header::from_slice(packet, quiche::MAX_CONN_ID_LEN) else {
            // quiche reads unknown versions by version 1's rules; the
            // invariants alone decide about Version Negotiation.
            return self.negotiate_version(packet, from);
        };
        // A version the server does not speak: its header means nothing
        // beyond the invariants.
        let long = !matches!(header.ty, quiche::Type::Short | quiche::Type::VersionNegotiation);
        if long && !quiche::version_is_supported(header.version) {
            return self.negotiate_version(packet, from);
        }
        // RFC 9000, section 14.1: an Initial in a datagram under 1,200 bytes
        // is discarded, whatever connection it is for.
        if header.ty == quiche::Type::Initial && packet.len() < MIN_INITIAL_DATAGRAM {
            self.counters.small_initials += 1;
            return Ok(());
        }
        // The connection's key, copied out of the packet (which `recv`
        // needs mutably) without allocating per packet.
        let mut key = [0u8; quiche::MAX_CONN_ID_LEN];
        let mut new = false;
        let key_len = if self.conns.contains_key(header.dcid.as_ref()) {
            key[..header.dcid.len()].copy_from_slice(&header.dcid);
            header.dcid.len()
        } else {
            let derived = ring::hmac::sign(&self.cid_key, header.dcid.as_ref());
            key.copy_from_slice(&derived.as_ref()[..quiche::MAX_CONN_ID_LEN]);
            if self.conns.contains_key(key.as_slice()) {
                key.len()
            } else {
                if header.ty == quiche::Type::Short || header.ty == quiche::Type::VersionNegotiation {
                    self.counters.unknown_connection += 1;
                    return Ok(());
                }
                if header.ty != quiche::Type::Initial {
                    self.counters.unknown_connection += 1;
                    return Ok(());
                }
                match self.admit(&header, &key, from)? {
                    Some(admitted) => {
                        new = true;
                        key[..admitted.len()].copy_from_slice(&admitted);
                        admitted.len()
                    }
                    None => return Ok(()),
                }
            }
        };
        let Some(conn) = self.conns.get_mut(&key[..key_len]) else { return Ok(()) };
        let info = quiche::RecvInfo { from, to: self.local };
        let handshaking = !conn.admitted();
        if handshaking {
            self.handshake.expect(from);
        }
        if let Err(e) = conn.quic.recv(packet, info) {
            event!(Level::Debug, "packet_rejected", conn = conn.id, error = e);
        }
        if new && conn.quic.stats().recv == 0 {
            // The first Initial did not decrypt (corrupted, or not QUIC at
            // all): the connection goes at the end of this turn of the loop,
            // before it has sent anything.
            conn.expired = true;
            self.counters.undecryptable_initials += 1;
        }
        if handshaking {
            if let Some((decision, policy)) = self.handshake.decision() {
                conn.admit(decision, policy);
            }
        }
        conn.dirty = true;
        Ok(())
    }

    /// Answers a long-header packet of an unknown version with a Version
    /// Negotiation, if its datagram is large enough (RFC 9000, section
    /// 5.2.2); drops it otherwise.
    fn negotiate_version(&mut self, packet: &[u8], from: SocketAddr) -> io::Result<()> {
        let Some((dcid, scid)) = admission::unsupported_version_ids(packet) else {
            self.counters.unparsable += 1;
            return Ok(());
        };
        if packet.len() < MIN_INITIAL_DATAGRAM {
            self.counters.small_unknown_versions += 1;
            return Ok(());
        }
        let mut out = [0u8; MAX_DATAGRAM_SIZE];
        let (scid, dcid) = (quiche::ConnectionId::from_ref(scid), quiche::ConnectionId::from_ref(dcid));
        if let Ok(len) = quiche::negotiate_version(&scid, &dcid, &mut out) {
            self.counters.version_negotiations += 1;
            self.send_stateless(&out[..len], from)?;
        }
        Ok(())
    }

    /// Decides about the first Initial of a new connection: the key of the
    /// connection accepted, or None when it was refused or sent a Retry.
    fn admit(&mut self, header: &quiche::Header, derived: &[u8], from: SocketAddr) -> io::Result<Option<Vec<u8>>> {
        let limits = &self.config.limits;
        if self.half_open >= limits.max_half_open {
            self.counters.refused_half_open += 1;
            return Ok(None);
        }
        if self.per_address.get(&from.ip()).copied().unwrap_or(0) >= limits.max_per_address {
            self.counters.refused_per_address += 1;
            return Ok(None);
        }
        let token = header.token.as_deref().unwrap_or_default();
        let odcid = if token.is_empty() {
            None
        } else {
            match self.retry_tokens.validate(token, from, SystemTime::now()) {
                Some(odcid) => Some(odcid),
                None => {
                    self.counters.invalid_tokens += 1;
                    return Ok(None);
                }
            }
        };
        let retry = match limits.retry {
            RetryMode::Never => false,
            RetryMode::Always => true,
            RetryMode::Above(threshold) => self.half_open >= threshold,
        };
        if odcid.is_none() && retry {
            let token = self.retry_tokens.mint(from, &header.dcid, SystemTime::now());
            // Not the ID derived for a connection without Retry: if the
            // threshold is crossed between two Initials of one client's first
            // flight, the second may have started such a connection, and the
            // client's Initials after the Retry must not land in it.
            let mut retry_input = b"retry".to_vec();
            retry_input.extend_from_slice(&header.dcid);
            let retry_scid = ring::hmac::sign(&self.cid_key, &retry_input);
            let new_scid = quiche::ConnectionId::from_ref(&retry_scid.as_ref()[..quiche::MAX_CONN_ID_LEN]);
            let mut out = [0u8; MAX_DATAGRAM_SIZE];
            if let Ok(len) = quiche::retry(&header.scid, &header.dcid, &new_scid, &token, header.version, &mut out) {
                self.counters.retries += 1;
                self.send_stateless(&out[..len], from)?;
            }
            return Ok(None);
        }
        // After a Retry the client's Initial goes to the ID the Retry gave,
        // which is then the connection's.
        let scid = match &odcid {
            Some(_) => header.dcid.to_vec(),
            None => derived.to_vec(),
        };
        let odcid = odcid.map(quiche::ConnectionId::from_vec);
        self.accept(&scid, odcid.as_ref(), from);
        Ok(self.conns.contains_key(&scid).then_some(scid))
    }

    /// Sends a packet that belongs to no connection (Version Negotiation,
    /// Retry), ignoring a full socket buffer as a lost packet.
    fn send_stateless(&self, packet: &[u8], to: SocketAddr) -> io::Result<()> {
        self.socket.send_now(packet, to)
    }

    fn accept(&mut self, scid: &[u8], odcid: Option<&quiche::ConnectionId>, from: SocketAddr) {
        let scid = quiche::ConnectionId::from_vec(scid.to_vec());
        let mut quic = match quiche::accept(&scid, odcid, self.local, from, &mut self.quiche_config) {
            Ok(quic) => quic,
            Err(e) => {
                event!(Level::Warn, "accept_failed", peer = from, error = e);
                return;
            }
        };
        let id = qlog::hex(&scid.as_ref()[..4]);
        let qlog_enabled = self.reporting.start(&mut quic, &id, self.config.limits.qlog_handshakes);
        event!(Level::Info, "connection_accepted", conn = id, peer = from, retried = odcid.is_some());
        self.half_open += 1;
        *self.per_address.entry(from.ip()).or_default() += 1;
        self.conns.insert(
            scid.to_vec(),
            ServerConn::new(quic, id, from, qlog_enabled, PacedSender::with_slack(self.config.pacing_slack)),
        );
    }

    fn collect_closed(&mut self) {
        let open = self.conns.len();
        self.remove_closed();
        if open > 0 && self.conns.is_empty() {
            // The maps keep the capacity of their busiest moment, and the
            // connections' slots are large: give it back while idle.
            self.conns.shrink_to_fit();
            self.per_address.shrink_to_fit();
            release_free_memory();
        }
    }

    fn remove_closed(&mut self) {
        let reporting = &self.reporting;
        let offload = self.socket.capabilities();
        let (half_open, per_address) = (&mut self.half_open, &mut self.per_address);
        self.conns.retain(|_, conn| {
            if !conn.quic.is_closed() && !conn.expired {
                return true;
            }
            if conn.half_open {
                *half_open -= 1;
            }
            if let Some(count) = per_address.get_mut(&conn.peer.ip()) {
                *count -= 1;
                if *count == 0 {
                    per_address.remove(&conn.peer.ip());
                }
            }
            if conn.expired {
                // Its handshake timed out, or its first Initial did not decrypt.
                event!(Level::Debug, "connection_dropped", conn = conn.id);
                return false;
            }
            let mut summary = conn.summary();
            summary.offload = Some(offload);
            event!(
                Level::Info,
                "connection_closed",
                conn = conn.id,
                cc = summary.cc,
                duration_s = format_args!("{:.3}", summary.duration.as_secs_f64()),
                bytes_sent = summary.bytes_sent,
                requests = conn.requests,
                error = summary.error.as_deref().unwrap_or("-"),
            );
            reporting.closed(&summary);
            false
        });
    }
}

/// Hands the memory the allocator keeps for reuse back to the system, when
/// the last connection has gone: glibc's malloc otherwise holds on to the
/// peak of a burst of connections for good.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of the allocator's own
    // heap to the kernel; it touches no memory in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Datagrams the server dropped or answered without connection state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Not a QUIC packet the server could read.
    pub unparsable: u64,
    /// Initials in datagrams under 1,200 bytes.
    pub small_initials: u64,
    /// Unknown versions in datagrams under 1,200 bytes.
    pub small_unknown_versions: u64,
    /// Version Negotiation packets sent.
    pub version_negotiations: u64,
    /// Packets other than an Initial for no known connection.
    pub unknown_connection: u64,
    /// Retry packets sent.
    pub retries: u64,
    /// Initials with a token that was not valid.
    pub invalid_tokens: u64,
    /// First Initials of new connections that did not decrypt.
    pub undecryptable_initials: u64,
    /// New connections refused: too many half open.
    pub refused_half_open: u64,
    /// New connections refused: too many from the client's address.
    pub refused_per_address: u64,
}
