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
//! (`SendInfo::at`), see [`crate::io`]. After each batch of received
//! packets, timers or sends, the loop serves requests (`h3.rs`, `hq.rs`),
//! moves response bodies into quiche as stream capacity allows, updates the
//! weight of connections whose weight follows their requests
//! (`connection.rs`, [`crate::weight`]) and writes the controller's state to
//! the qlog when it changed.
//!
//! SIGHUP reloads the policy: new connections use the new one, existing
//! connections keep the policy they were admitted under; a bad file is
//! rejected with a one-line error and the old policy stays. SIGTERM and
//! SIGINT close every connection cleanly and end the server.

mod config;
mod connection;
mod h3;
mod handshake;
mod hq;

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use mio::Events;
use mio::Interest;
use mio::Poll;
use mio::Token;

pub use config::ServerConfig;
use connection::ServerConn;
use handshake::Handshake;
use handshake::PolicyCell;

use crate::endpoint::Reporting;
use crate::event;
use crate::http::Protocol;
use crate::io::MAX_DATAGRAM_SIZE;
use crate::io::MAX_RECV_SIZE;
use crate::log::Level;
use crate::policy;
use crate::policy::Policy;
use crate::qlog;

/// How long a shutdown waits for connections to close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Longest the loop sleeps without a timer: signals interrupt it anyway.
const MAX_IDLE_WAIT: Duration = Duration::from_secs(1);

const SOCKET: Token = Token(0);

/// The running server.
pub struct Server {
    config: ServerConfig,
    socket: mio::net::UdpSocket,
    local: SocketAddr,
    poll: Poll,
    quiche_config: quiche::Config,
    h3_config: quiche::h3::Config,
    policy: Arc<PolicyCell>,
    handshake: Handshake,
    conns: HashMap<Vec<u8>, ServerConn>,
    /// Key of the HMAC that derives a connection's ID from the client's
    /// first destination ID, so that retransmitted Initials find it.
    cid_key: ring::hmac::Key,
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
        let policy = config.policy.load().map_err(ServerError::Policy)?;
        if !config.root.is_dir() {
            return Err(ServerError::Other(format!("--root {}: not a directory", config.root.display())));
        }
        if let Some(dir) = &config.upload_dir {
            std::fs::create_dir_all(dir).map_err(|e| other("--upload-dir")(e.to_string()))?;
        }
        let reporting = config.endpoint.open("server").map_err(ServerError::Other)?;
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
        let h3_config = quiche::h3::Config::new().map_err(|e| other("HTTP/3 configuration")(e.to_string()))?;

        let mut socket =
            crate::io::bind(config.listen).map_err(|e| other(&format!("--listen {}", config.listen))(e.to_string()))?;
        let local = socket.local_addr().map_err(|e| other("socket")(e.to_string()))?;
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
            cid_key,
            reporting,
            reload,
            terminate,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The policy in force.
    pub fn policy(&self) -> Arc<Policy> {
        self.policy.current()
    }

    /// Serves until SIGTERM or SIGINT.
    pub fn run(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        let mut buffer = vec![0u8; MAX_RECV_SIZE];
        let mut shutdown_deadline = None;
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

            let wake = self.conns.values().filter_map(ServerConn::wake).min();
            flowshare_quic::pacing::wait(&mut self.poll, &mut events, wake, MAX_IDLE_WAIT)?;
            self.receive(&mut buffer)?;

            let now = Instant::now();
            for conn in self.conns.values_mut() {
                if conn.timeout_at.is_some_and(|at| at <= now) {
                    conn.quic.on_timeout();
                    conn.dirty = true;
                }
                let due = conn.pacing_due.is_some_and(|at| at <= now + flowshare_quic::pacing::PACING_SLACK);
                if !(conn.dirty || due) {
                    continue;
                }
                if conn.dirty {
                    conn.serve(&self.config, &self.h3_config);
                }
                conn.pacing_due = conn.sender.flush(&mut conn.quic, &self.socket)?.due();
                conn.timeout_at = conn.quic.timeout_instant();
                if conn.dirty {
                    conn.trace.observe(&mut conn.quic);
                }
                conn.dirty = false;
            }
            self.collect_closed();
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

    /// Feeds every datagram waiting on the socket to its connection,
    /// accepting new connections.
    fn receive(&mut self, buffer: &mut [u8]) -> io::Result<()> {
        loop {
            let (len, from) = match self.socket.recv_from(buffer) {
                Ok(received) => received,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                // ICMP errors of earlier sends surface here on Linux.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e),
            };
            let packet = &mut buffer[..len];
            let Ok(header) = quiche::Header::from_slice(packet, quiche::MAX_CONN_ID_LEN) else { continue };
            // The connection's key, copied out of the packet (which `recv`
            // needs mutably) without allocating per packet.
            let mut key = [0u8; quiche::MAX_CONN_ID_LEN];
            let key_len = if self.conns.contains_key(header.dcid.as_ref()) {
                key[..header.dcid.len()].copy_from_slice(&header.dcid);
                header.dcid.len()
            } else {
                let derived = ring::hmac::sign(&self.cid_key, header.dcid.as_ref());
                key.copy_from_slice(&derived.as_ref()[..quiche::MAX_CONN_ID_LEN]);
                if !self.conns.contains_key(key.as_slice()) {
                    if header.ty != quiche::Type::Initial {
                        continue;
                    }
                    if !quiche::version_is_supported(header.version) {
                        let mut out = [0u8; MAX_DATAGRAM_SIZE];
                        if let Ok(len) = quiche::negotiate_version(&header.scid, &header.dcid, &mut out) {
                            let _ = self.socket.send_to(&out[..len], from);
                        }
                        continue;
                    }
                    self.accept(&key, from)?;
                }
                key.len()
            };
            let Some(conn) = self.conns.get_mut(&key[..key_len]) else { continue };
            let info = quiche::RecvInfo { from, to: self.local };
            let handshaking = !conn.admitted();
            if handshaking {
                self.handshake.expect(from);
            }
            if let Err(e) = conn.quic.recv(packet, info) {
                event!(Level::Debug, "packet_rejected", conn = conn.id, error = e);
            }
            if handshaking {
                if let Some((decision, policy)) = self.handshake.decision() {
                    conn.admit(decision, policy);
                }
            }
            conn.dirty = true;
        }
    }

    fn accept(&mut self, scid: &[u8], from: SocketAddr) -> io::Result<()> {
        let scid = quiche::ConnectionId::from_vec(scid.to_vec());
        let mut quic = match quiche::accept(&scid, None, self.local, from, &mut self.quiche_config) {
            Ok(quic) => quic,
            Err(e) => {
                event!(Level::Warn, "accept_failed", peer = from, error = e);
                return Ok(());
            }
        };
        let id = qlog::hex(&scid.as_ref()[..4]);
        let qlog_enabled = self.reporting.start(&mut quic, &id);
        event!(Level::Info, "connection_accepted", conn = id, peer = from);
        self.conns.insert(scid.to_vec(), ServerConn::new(quic, id, from, qlog_enabled));
        Ok(())
    }

    fn collect_closed(&mut self) {
        let reporting = &self.reporting;
        self.conns.retain(|_, conn| {
            if !conn.quic.is_closed() {
                return true;
            }
            let summary = conn.summary();
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
