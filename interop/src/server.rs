//! `flowshare serve`: an HTTP/3 (and hq-interop) file server whose
//! connections each get the controller their policy chooses.
//!
//! One thread runs a mio event loop over one UDP socket and every
//! connection, as quiche's own server example does. The controller is
//! chosen inside the TLS handshake: BoringSSL's certificate-selection
//! callback sees the ClientHello (server name, offered protocols), the
//! loop has put the client's address where the callback finds it, the
//! policy decides, and `Connection::set_cc_factory_in_handshake` installs
//! the controller before quiche builds the connection's recovery state.
//!
//! Every connection's packets leave when quiche's pacer says
//! (`SendInfo::at`), see [`crate::io`]. After each batch of received
//! packets, timers or sends, the loop serves requests, moves response
//! bodies into quiche as stream capacity allows, updates the weight of
//! connections whose weight follows their requests ([`crate::weight`]) and
//! writes the controller's state to the qlog when it changed.
//!
//! SIGHUP reloads the policy: new connections use the new one, existing
//! connections keep the policy they were admitted under; a bad file is
//! rejected with a one-line error and the old policy stays. SIGTERM and
//! SIGINT close every connection cleanly and end the server.

use std::collections::HashMap;
use std::fs::File;
use std::fs::OpenOptions;
use std::io;
use std::io::BufWriter;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::RwLock;
use std::time::Duration;
use std::time::Instant;

use boring::ssl::ExtensionType;
use boring::ssl::NameType;
use boring::ssl::SelectCertError;
use boring::ssl::SslContextBuilder;
use boring::ssl::SslMethod;
use mio::Events;
use mio::Interest;
use mio::Poll;
use mio::Token;
use quiche::h3::NameValue;
use serde_json::json;

use crate::event;
use crate::http;
use crate::http::Body;
use crate::http::Protocol;
use crate::io::MAX_DATAGRAM_SIZE;
use crate::io::MAX_RECV_SIZE;
use crate::log::Level;
use crate::policy;
use crate::policy::Decision;
use crate::policy::Hello;
use crate::policy::Policy;
use crate::policy::PolicySource;
use crate::policy::Request as _;
use crate::qlog;
use crate::qlog::ControllerTrace;
use crate::stats::Summary;
use crate::weight::ConnectionWeight;
use crate::weight::ResponseWeight;
use flowshare_quic::pacing::PacedSender;

/// Connection- and stream-level flow control windows offered to clients.
/// quiche grows them up to its own maxima as a transfer proceeds.
const INITIAL_MAX_DATA: u64 = 16 << 20;
const INITIAL_MAX_STREAM_DATA: u64 = 4 << 20;

/// Longest hq-interop request line accepted.
const MAX_HQ_REQUEST: usize = 8 * 1024;

/// How long a shutdown waits for connections to close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Longest the loop sleeps without a timer: signals interrupt it anyway.
const MAX_IDLE_WAIT: Duration = Duration::from_secs(1);

/// `H3_INTERNAL_ERROR`, for streams the server abandons.
const H3_INTERNAL_ERROR: u64 = 0x102;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// UDP address to listen on; port 0 picks a free one.
    pub listen: SocketAddr,
    /// Files are served from here.
    pub root: PathBuf,
    /// Certificate chain (PEM).
    pub cert: PathBuf,
    /// Private key (PEM).
    pub key: PathBuf,
    /// Where the policy comes from.
    pub policy: PolicySource,
    /// Print a stats line per connection at close.
    pub stats: bool,
    /// Write one qlog per connection here.
    pub qlog_dir: Option<PathBuf>,
    /// Append TLS secrets here (NSS key log format).
    pub keylog: Option<PathBuf>,
    /// Store uploaded bodies here; without it they are counted and dropped.
    pub upload_dir: Option<PathBuf>,
    /// Connections idle this long are closed.
    pub idle_timeout: Duration,
    /// Concurrent bidirectional streams a client may open (quiche raises
    /// the limit as streams complete).
    pub max_streams: u64,
}

/// What the handshake callback and the event loop exchange while a
/// connection's `recv` runs the handshake.
#[derive(Debug, Default)]
struct HandshakeSlot {
    /// The address of the client whose packet is being processed.
    client: Option<SocketAddr>,
    /// The policy's decision, with the policy that made it.
    decision: Option<(Decision, Arc<Policy>)>,
}

/// The running server.
pub struct Server {
    config: ServerConfig,
    socket: mio::net::UdpSocket,
    local: SocketAddr,
    poll: Poll,
    quiche_config: quiche::Config,
    h3_config: quiche::h3::Config,
    policy: Arc<RwLock<Arc<Policy>>>,
    handshake: Arc<Mutex<HandshakeSlot>>,
    conns: HashMap<Vec<u8>, ServerConn>,
    /// Key of the HMAC that derives a connection's ID from the client's
    /// first destination ID, so that retransmitted Initials find it.
    cid_key: ring::hmac::Key,
    keylog: Option<File>,
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

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
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
        if let Some(dir) = &config.qlog_dir {
            std::fs::create_dir_all(dir).map_err(|e| other("qlog directory")(e.to_string()))?;
        }
        let policy = Arc::new(RwLock::new(Arc::new(policy)));
        let handshake = Arc::new(Mutex::new(HandshakeSlot::default()));

        let mut tls = SslContextBuilder::new(SslMethod::tls()).map_err(|e| other("TLS context")(e.to_string()))?;
        {
            let policy = Arc::clone(&policy);
            let handshake = Arc::clone(&handshake);
            tls.set_select_certificate_callback(move |mut hello| {
                let sni = hello.servername(NameType::HOST_NAME).map(str::to_string);
                let protocol = hello
                    .get_extension(ExtensionType::APPLICATION_LAYER_PROTOCOL_NEGOTIATION)
                    .and_then(http::negotiated_alpn);
                let mut slot = lock(&handshake);
                let Some(client) = slot.client else { return Err(SelectCertError::ERROR) };
                let policy = Arc::clone(&policy.read().unwrap_or_else(PoisonError::into_inner));
                let alpn = protocol.map(|protocol| protocol.to_string());
                let decision =
                    policy.decide(&Hello { sni: sni.as_deref(), alpn: alpn.as_deref(), client: client.ip() });
                flowshare_quic::configure_in_handshake(hello.ssl_mut(), &decision.assignment.spec)
                    .map_err(|_| SelectCertError::ERROR)?;
                slot.decision = Some((decision, policy));
                Ok(())
            });
        }
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
        apply_transport_settings(&mut quiche_config, config.idle_timeout);
        quiche_config.set_initial_max_streams_bidi(config.max_streams);
        quiche_config.set_initial_max_streams_uni(100);
        let keylog = match &config.keylog {
            Some(file) => {
                quiche_config.log_keys();
                Some(
                    OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(file)
                        .map_err(|e| other("SSLKEYLOGFILE")(e.to_string()))?,
                )
            }
            None => None,
        };
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
            keylog,
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
        Arc::clone(&self.policy.read().unwrap_or_else(PoisonError::into_inner))
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
                *self.policy.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(policy);
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
            let handshaking = conn.admission.is_none();
            if handshaking {
                lock(&self.handshake).client = Some(from);
            }
            if let Err(e) = conn.quic.recv(packet, info) {
                event!(Level::Debug, "packet_rejected", conn = conn.id, error = e);
            }
            if handshaking {
                if let Some((decision, policy)) = lock(&self.handshake).decision.take() {
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
        let mut qlog_enabled = false;
        if let Some(dir) = &self.config.qlog_dir {
            match qlog::start(&mut quic, dir, "server") {
                Ok(()) => qlog_enabled = true,
                Err(e) => event!(Level::Warn, "qlog_failed", conn = id, error = e),
            }
        }
        if let Some(keylog) = &self.keylog {
            if let Ok(file) = keylog.try_clone() {
                quic.set_keylog(Box::new(file));
            }
        }
        event!(Level::Info, "connection_accepted", conn = id, peer = from);
        self.conns.insert(scid.to_vec(), ServerConn::new(quic, id, from, qlog_enabled));
        Ok(())
    }

    fn collect_closed(&mut self) {
        let stats = self.config.stats;
        self.conns.retain(|_, conn| {
            if !conn.quic.is_closed() {
                return true;
            }
            let mut summary = Summary::of(&conn.quic, "server", &conn.id, conn.peer, conn.created.elapsed());
            if let Some(admission) = &conn.admission {
                summary.cc = admission.decision.assignment.spec.to_string();
                summary.matched = Some(admission.decision.matched.clone());
            }
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
            if stats {
                let mut stdout = io::stdout().lock();
                let _ = writeln!(stdout, "{summary}");
                let _ = stdout.flush();
            }
            false
        });
    }
}

/// Transport settings both endpoints use.
pub fn apply_transport_settings(config: &mut quiche::Config, idle_timeout: Duration) {
    config.set_max_idle_timeout(u64::try_from(idle_timeout.as_millis()).unwrap_or(u64::MAX));
    config.set_max_recv_udp_payload_size(MAX_DATAGRAM_SIZE);
    config.set_max_send_udp_payload_size(MAX_DATAGRAM_SIZE);
    config.set_initial_max_data(INITIAL_MAX_DATA);
    config.set_initial_max_stream_data_bidi_local(INITIAL_MAX_STREAM_DATA);
    config.set_initial_max_stream_data_bidi_remote(INITIAL_MAX_STREAM_DATA);
    config.set_initial_max_stream_data_uni(INITIAL_MAX_STREAM_DATA);
    config.set_disable_active_migration(true);
}

const SOCKET: Token = Token(0);

/// The policy's decision for a connection and what follows from it.
struct Admission {
    decision: Decision,
    policy: Arc<Policy>,
    /// Present when the controller's weight can change.
    weight: Option<ConnectionWeight>,
    /// The weight last given to the controller.
    applied_weight: f64,
}

/// The application protocol state of a connection.
enum App {
    /// Before the handshake completes.
    Handshaking,
    /// Boxed: quiche's HTTP/3 state is large next to the other variants.
    H3(Box<quiche::h3::Connection>),
    /// hq-interop: request lines being read, by stream.
    Hq(HashMap<u64, Vec<u8>>),
}

/// A response whose body is still being written.
struct Response {
    /// HTTP/3 headers not yet sent (`None` once sent, and for hq).
    headers: Option<Vec<quiche::h3::Header>>,
    body: Body,
}

/// An upload being received.
struct Upload {
    sink: Option<BufWriter<File>>,
    received: u64,
    /// Whether the upload gets its own response (PUT, POST), unlike the
    /// body of a GET, which is dropped.
    respond: bool,
}

struct ServerConn {
    quic: quiche::Connection,
    /// Short ID for logs: the first bytes of the server's connection ID.
    id: String,
    peer: SocketAddr,
    created: Instant,
    protocol: Option<Protocol>,
    app: App,
    admission: Option<Admission>,
    responses: HashMap<u64, Response>,
    uploads: HashMap<u64, Upload>,
    /// Requests served, for the close log.
    requests: u64,
    sender: PacedSender,
    pacing_due: Option<Instant>,
    timeout_at: Option<Instant>,
    /// Packets arrived or timers fired since the connection was served.
    dirty: bool,
    trace: ControllerTrace,
    qlog: bool,
    /// Reused buffers.
    scratch: Vec<u8>,
    stream_ids: Vec<u64>,
    ended: Vec<u64>,
}

impl ServerConn {
    fn new(quic: quiche::Connection, id: String, peer: SocketAddr, qlog: bool) -> ServerConn {
        ServerConn {
            quic,
            id,
            peer,
            created: Instant::now(),
            protocol: None,
            app: App::Handshaking,
            admission: None,
            responses: HashMap::new(),
            uploads: HashMap::new(),
            requests: 0,
            sender: PacedSender::default(),
            pacing_due: None,
            timeout_at: None,
            dirty: true,
            trace: ControllerTrace::new(qlog),
            qlog,
            scratch: Vec::new(),
            stream_ids: Vec::new(),
            ended: Vec::new(),
        }
    }

    /// When the connection needs the loop next: now if it has work
    /// pending, else its next timer or paced packet.
    fn wake(&self) -> Option<Instant> {
        if self.dirty {
            return Some(Instant::now());
        }
        match (self.timeout_at, self.pacing_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn admit(&mut self, decision: Decision, policy: Arc<Policy>) {
        let assignment = &decision.assignment;
        let base = assignment.spec.weight();
        let weight =
            assignment.weight_can_change.then(|| ConnectionWeight::new(assignment.mode, base, policy.max_weight()));
        event!(
            Level::Info,
            "controller_selected",
            conn = self.id,
            cc = assignment.spec,
            matched = decision.matched,
            weight_mode = match assignment.mode {
                policy::WeightMode::Fixed => "fixed",
                policy::WeightMode::Streams => "streams",
            },
        );
        self.admission = Some(Admission { decision, policy, weight, applied_weight: base });
    }

    /// Runs the application: handshake completion, requests, response
    /// bodies, uploads and the weight.
    fn serve(&mut self, config: &ServerConfig, h3_config: &quiche::h3::Config) {
        if matches!(self.app, App::Handshaking) && self.quic.is_established() {
            self.start_application(h3_config);
        }
        match self.app {
            App::Handshaking => return,
            App::H3(_) => self.serve_h3(config),
            App::Hq(_) => self.serve_hq(config),
        }
        self.write_responses();
        self.update_weight();
    }

    fn start_application(&mut self, h3_config: &quiche::h3::Config) {
        let protocol = Protocol::from_alpn(self.quic.application_proto());
        self.protocol = protocol;
        self.app = match protocol {
            Some(Protocol::H3) => match quiche::h3::Connection::with_transport(&mut self.quic, h3_config) {
                Ok(h3) => App::H3(Box::new(h3)),
                Err(e) => {
                    event!(Level::Warn, "http3_failed", conn = self.id, error = e);
                    let _ = self.quic.close(true, H3_INTERNAL_ERROR, b"cannot start HTTP/3");
                    return;
                }
            },
            Some(Protocol::Hq) => App::Hq(HashMap::new()),
            None => {
                let _ = self.quic.close(false, 0x178, b"no application protocol");
                return;
            }
        };
        if self.admission.is_none() {
            // The handshake callback always decides; without a decision the
            // connection runs quiche's default, CUBIC.
            event!(Level::Warn, "no_policy_decision", conn = self.id);
        }
        let selected = match &self.admission {
            Some(admission) => json!({
                "cc": admission.decision.assignment.spec.to_string(),
                "matched": admission.decision.matched,
                "weight_mode": format!("{:?}", admission.decision.assignment.mode).to_lowercase(),
                "max_weight": admission.policy.max_weight(),
                "sni": self.quic.server_name(),
                "alpn": protocol.map(|p| p.to_string()),
                "client": self.peer.to_string(),
            }),
            None => json!({ "cc": "cubic", "matched": "none" }),
        };
        event!(
            Level::Info,
            "connection_established",
            conn = self.id,
            sni = self.quic.server_name().unwrap_or("-"),
            alpn = protocol.map_or_else(|| "-".to_string(), |p| p.to_string()),
        );
        qlog::event(&mut self.quic, "flowshare:controller_selected", selected);
    }

    fn serve_h3(&mut self, config: &ServerConfig) {
        loop {
            let App::H3(h3) = &mut self.app else { return };
            let (stream, event) = match h3.poll(&mut self.quic) {
                Ok(polled) => polled,
                Err(quiche::h3::Error::Done) => return,
                Err(e) => {
                    event!(Level::Warn, "http3_error", conn = self.id, error = e);
                    let _ = self.quic.close(true, H3_INTERNAL_ERROR, b"HTTP/3 error");
                    return;
                }
            };
            match event {
                quiche::h3::Event::Headers { list, more_frames } => self.h3_request(config, stream, &list, more_frames),
                quiche::h3::Event::Data => self.receive_upload(stream),
                quiche::h3::Event::Finished => self.finish_upload(stream),
                quiche::h3::Event::Reset(_) => self.abandon(stream),
                quiche::h3::Event::PriorityUpdate | quiche::h3::Event::GoAway => {}
            }
        }
    }

    fn h3_request(&mut self, config: &ServerConfig, stream: u64, list: &[quiche::h3::Header], more_frames: bool) {
        self.requests += 1;
        let request = RequestHead::from_h3(list);
        event!(Level::Debug, "request", conn = self.id, stream = stream, method = request.method, path = request.path);
        match request.method.as_str() {
            "GET" | "HEAD" => {
                let (status, body) = open_file(config, &request.path);
                let mut headers = vec![
                    quiche::h3::Header::new(b":status", status.to_string().as_bytes()),
                    quiche::h3::Header::new(b"server", b"flowshare"),
                    quiche::h3::Header::new(b"content-length", body.len().to_string().as_bytes()),
                ];
                if status != 200 {
                    headers.push(quiche::h3::Header::new(b"content-type", b"text/plain"));
                }
                let body = if request.method == "HEAD" { Body::bytes(Vec::new()) } else { body };
                if status == 200 {
                    self.track_response(stream, &request, body.len());
                }
                self.responses.insert(stream, Response { headers: Some(headers), body });
                if more_frames {
                    // A GET with a body: the body is read and dropped.
                    self.uploads.insert(stream, Upload { sink: None, received: 0, respond: false });
                }
            }
            "PUT" | "POST" => {
                let sink = config.upload_dir.as_ref().and_then(|dir| {
                    let name = http::resolve(dir, &request.path)?;
                    File::create(name).ok().map(BufWriter::new)
                });
                self.uploads.insert(stream, Upload { sink, received: 0, respond: true });
                if !more_frames {
                    self.finish_upload(stream);
                }
            }
            _ => {
                let headers =
                    vec![quiche::h3::Header::new(b":status", b"405"), quiche::h3::Header::new(b"content-length", b"0")];
                self.responses.insert(stream, Response { headers: Some(headers), body: Body::bytes(Vec::new()) });
            }
        }
    }

    fn receive_upload(&mut self, stream: u64) {
        let App::H3(h3) = &mut self.app else { return };
        self.scratch.resize(64 * 1024, 0);
        loop {
            match h3.recv_body(&mut self.quic, stream, &mut self.scratch) {
                Ok(len) => {
                    if let Some(upload) = self.uploads.get_mut(&stream) {
                        upload.received += len as u64;
                        if let Some(sink) = &mut upload.sink {
                            if sink.write_all(&self.scratch[..len]).is_err() {
                                upload.sink = None;
                            }
                        }
                    }
                }
                Err(_) => return,
            }
        }
    }

    fn finish_upload(&mut self, stream: u64) {
        let Some(mut upload) = self.uploads.remove(&stream) else { return };
        let stored = upload.sink.as_mut().is_none_or(|sink| sink.flush().is_ok());
        if !upload.respond {
            return;
        }
        event!(Level::Info, "upload_received", conn = self.id, stream = stream, bytes = upload.received);
        let (status, text) = if stored {
            (b"201".as_slice(), format!("{}\n", upload.received))
        } else {
            (b"500".as_slice(), "cannot store\n".into())
        };
        let body = Body::bytes(text.into_bytes());
        let headers = vec![
            quiche::h3::Header::new(b":status", status),
            quiche::h3::Header::new(b"server", b"flowshare"),
            quiche::h3::Header::new(b"content-length", body.len().to_string().as_bytes()),
        ];
        self.responses.insert(stream, Response { headers: Some(headers), body });
    }

    fn serve_hq(&mut self, config: &ServerConfig) {
        let mut readable = std::mem::take(&mut self.stream_ids);
        readable.clear();
        readable.extend(self.quic.readable());
        for &stream in &readable {
            self.scratch.resize(MAX_HQ_REQUEST, 0);
            let mut complete = false;
            loop {
                match self.quic.stream_recv(stream, &mut self.scratch) {
                    Ok((len, fin)) => {
                        let App::Hq(lines) = &mut self.app else { return };
                        let line = lines.entry(stream).or_default();
                        line.extend_from_slice(&self.scratch[..len]);
                        complete |= fin || line.contains(&b'\n');
                        if line.len() > MAX_HQ_REQUEST {
                            let _ = self.quic.stream_shutdown(stream, quiche::Shutdown::Read, 0x1);
                            complete = false;
                            lines.remove(&stream);
                            break;
                        }
                    }
                    Err(quiche::Error::Done) => break,
                    Err(_) => {
                        let App::Hq(lines) = &mut self.app else { return };
                        lines.remove(&stream);
                        break;
                    }
                }
            }
            if !complete || self.responses.contains_key(&stream) {
                continue;
            }
            let App::Hq(lines) = &mut self.app else { return };
            let Some(line) = lines.remove(&stream) else { continue };
            self.requests += 1;
            let text = String::from_utf8_lossy(&line);
            let path = text.trim().strip_prefix("GET ").map(str::trim).unwrap_or("");
            let request = RequestHead { method: "GET".into(), path: path.to_string(), headers: Vec::new() };
            let (status, body) = open_file(config, &request.path);
            event!(
                Level::Debug,
                "request",
                conn = self.id,
                stream = stream,
                method = "GET",
                path = request.path,
                status = status
            );
            if status != 200 {
                // hq-interop has no status: a missing file resets the stream.
                let _ = self.quic.stream_shutdown(stream, quiche::Shutdown::Write, 0x4);
                continue;
            }
            self.track_response(stream, &request, body.len());
            self.responses.insert(stream, Response { headers: None, body });
        }
        self.stream_ids = readable;
    }

    /// Counts a response towards the connection's weight.
    fn track_response(&mut self, stream: u64, request: &RequestHead, len: u64) {
        let Some(admission) = &mut self.admission else { return };
        let Some(weight) = &mut admission.weight else { return };
        let requested = request.header(policy::WEIGHT_HEADER).and_then(|value| value.trim().parse::<f64>().ok());
        let response = ResponseWeight {
            bulk: len >= admission.policy.bulk_min_bytes(),
            upgrade: admission.policy.upgrade(request),
            requested: requested.filter(|w| w.is_finite()),
        };
        weight.started(stream, response);
    }

    /// Moves response bodies into quiche as far as stream capacity allows.
    fn write_responses(&mut self) {
        let mut streams = std::mem::take(&mut self.stream_ids);
        streams.clear();
        streams.extend(self.responses.keys());
        for &stream in &streams {
            match self.write_response(stream) {
                Ok(false) => {}
                Ok(true) => {
                    self.responses.remove(&stream);
                }
                Err(e) => {
                    event!(Level::Warn, "response_failed", conn = self.id, stream = stream, error = e);
                    let _ = self.quic.stream_shutdown(stream, quiche::Shutdown::Write, H3_INTERNAL_ERROR);
                    self.responses.remove(&stream);
                }
            }
        }
        self.stream_ids = streams;
    }

    /// Writes what it can of one response; true when it is complete.
    fn write_response(&mut self, stream: u64) -> Result<bool, String> {
        let Some(response) = self.responses.get_mut(&stream) else { return Ok(true) };
        if let Some(headers) = &response.headers {
            let App::H3(h3) = &mut self.app else { return Err("headers on a non-HTTP/3 connection".into()) };
            match h3.send_response(&mut self.quic, stream, headers, response.body.is_empty()) {
                Ok(()) => response.headers = None,
                Err(quiche::h3::Error::StreamBlocked | quiche::h3::Error::Done) => return Ok(false),
                Err(e) => return Err(e.to_string()),
            }
            if response.body.is_empty() {
                return Ok(true);
            }
        }
        loop {
            let (chunk, fin) = response.body.next_chunk().map_err(|e| format!("reading the file: {e}"))?;
            if chunk.is_empty() {
                return Ok(response.body.finished());
            }
            let written = match &mut self.app {
                App::H3(h3) => match h3.send_body(&mut self.quic, stream, chunk, fin) {
                    Ok(written) => written,
                    Err(quiche::h3::Error::Done | quiche::h3::Error::StreamBlocked) => 0,
                    Err(e) => return Err(e.to_string()),
                },
                _ => match self.quic.stream_send(stream, chunk, fin) {
                    Ok(written) => written,
                    Err(quiche::Error::Done) => 0,
                    Err(e) => return Err(e.to_string()),
                },
            };
            response.body.consume(written);
            if written == 0 {
                return Ok(false);
            }
            if response.body.finished() {
                return Ok(true);
            }
        }
    }

    /// The client reset a stream: its response and upload are dropped.
    fn abandon(&mut self, stream: u64) {
        self.responses.remove(&stream);
        self.uploads.remove(&stream);
        if let Some(weight) = self.admission.as_mut().and_then(|admission| admission.weight.as_mut()) {
            weight.ended(stream);
        }
    }

    /// Ends the responses quiche has fully delivered, and gives the
    /// controller the weight that follows.
    fn update_weight(&mut self) {
        let Some(admission) = &mut self.admission else { return };
        let Some(weight) = &mut admission.weight else { return };
        self.ended.clear();
        for stream in weight.active_streams() {
            if self.responses.contains_key(&stream) {
                continue;
            }
            // A stream quiche has collected (or the peer stopped) is over.
            if matches!(
                self.quic.stream_capacity(stream),
                Err(quiche::Error::InvalidStreamState(_) | quiche::Error::StreamStopped(_))
            ) {
                self.ended.push(stream);
            }
        }
        for &stream in &self.ended {
            weight.ended(stream);
        }
        let target = weight.target();
        if target == admission.applied_weight {
            return;
        }
        let active = weight.active();
        let Some(controller) = flowshare_quic::controller_mut(&mut self.quic) else { return };
        match controller.set_weight(target) {
            Ok(()) => {
                event!(
                    Level::Info,
                    "weight_changed",
                    conn = self.id,
                    from = admission.applied_weight,
                    to = target,
                    active_responses = active
                );
                let data = json!({ "from": admission.applied_weight, "to": target, "active_responses": active });
                admission.applied_weight = target;
                if self.qlog {
                    qlog::event(&mut self.quic, "flowshare:weight_updated", data);
                }
            }
            Err(e) => {
                event!(Level::Warn, "weight_rejected", conn = self.id, to = target, error = e);
                admission.applied_weight = target;
            }
        }
    }
}

/// The file `path` names under the root, or an error response.
fn open_file(config: &ServerConfig, path: &str) -> (u16, Body) {
    let not_found = || (404, Body::bytes(b"not found\n".to_vec()));
    let Some(file_path) = http::resolve(&config.root, path) else { return not_found() };
    let Ok(file) = File::open(&file_path) else { return not_found() };
    match file.metadata() {
        Ok(metadata) if metadata.is_file() => (200, Body::file(file, metadata.len())),
        _ => not_found(),
    }
}

/// The parts of a request the server looks at.
struct RequestHead {
    method: String,
    path: String,
    /// Lowercase names.
    headers: Vec<(String, String)>,
}

impl RequestHead {
    fn from_h3(list: &[quiche::h3::Header]) -> RequestHead {
        let mut request = RequestHead { method: String::new(), path: String::new(), headers: Vec::new() };
        for header in list {
            let name = String::from_utf8_lossy(header.name());
            let value = String::from_utf8_lossy(header.value()).into_owned();
            match name.as_ref() {
                ":method" => request.method = value,
                ":path" => request.path = value,
                name if !name.starts_with(':') => request.headers.push((name.to_ascii_lowercase(), value)),
                _ => {}
            }
        }
        request
    }
}

impl policy::Request for RequestHead {
    fn path(&self) -> &str {
        &self.path
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, value)| value.as_str())
    }
}
