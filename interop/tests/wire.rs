//! The server as a client on the open Internet meets it, on 127.0.0.1: what
//! an unvalidated address can draw from it (counted on the wire), which
//! datagrams get no answer and no state, Retry, and HTTP/3 requests that
//! break RFC 9114's rules.

use std::net::SocketAddr;
use std::net::UdpSocket;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use std::time::Instant;

use flowshare_interop::endpoint::EndpointOptions;
use flowshare_interop::policy::PolicySource;
use flowshare_interop::server::Limits;
use flowshare_interop::server::RetryMode;
use flowshare_interop::server::Server;
use flowshare_interop::server::ServerConfig;
use flowshare_quic::cert::ScratchDir;
use quiche::h3::NameValue;

/// A scratch directory with a certificate and a root holding `a.bin`.
fn site(label: &str) -> ScratchDir {
    let dir = ScratchDir::new(label).expect("scratch dir");
    flowshare_quic::cert::write_self_signed(dir.path(), &["localhost".into()]).expect("certificate");
    std::fs::create_dir_all(dir.path().join("www")).expect("www");
    std::fs::write(dir.path().join("www/a.bin"), vec![7u8; 5_000]).expect("file");
    dir
}

fn server_config(site: &ScratchDir, limits: Limits) -> ServerConfig {
    ServerConfig {
        listen: "127.0.0.1:0".parse().expect("address"),
        root: site.path().join("www"),
        cert: site.path().join("cert.pem"),
        key: site.path().join("key.pem"),
        policy: PolicySource { file: None, overrides: Default::default() },
        endpoint: EndpointOptions { qlog_dir: None, keylog: None, stats: false, idle_timeout: Duration::from_secs(30) },
        upload_dir: None,
        max_streams: 100,
        limits,
        early_data: false,
        pacing_slack: flowshare_quic::pacing::PACING_SLACK,
    }
}

fn never_retry() -> Limits {
    Limits { retry: RetryMode::Never, ..Limits::default() }
}

/// A server running its event loop on a thread until dropped.
struct Running {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    _site: ScratchDir,
}

impl Running {
    fn start(label: &str, limits: Limits) -> Running {
        let site = site(label);
        let config = server_config(&site, limits);
        let (sender, receiver) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let mut server = Server::bind(config).expect("server binds");
            sender.send((server.local_addr(), server.terminate_flag())).expect("send");
            server.run().expect("server runs");
        });
        let (address, stop) = receiver.recv().expect("server started");
        Running { address, stop, thread: Some(thread), _site: site }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn client_config(alpn: &[u8]) -> quiche::Config {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("config");
    config.set_application_protos(&[alpn]).expect("alpn");
    config.verify_peer(false);
    config.set_initial_max_data(10_000_000);
    config.set_initial_max_stream_data_bidi_local(1_000_000);
    config.set_initial_max_stream_data_uni(1_000_000);
    config.set_initial_max_streams_uni(10);
    config.set_max_idle_timeout(10_000);
    config
}

/// A quiche client connection from a fresh socket towards `server`.
fn client(server: SocketAddr, config: &mut quiche::Config) -> (quiche::Connection, UdpSocket) {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("socket");
    let scid = flowshare_quic::random_connection_id().expect("cid");
    let local = socket.local_addr().expect("local");
    let conn = quiche::connect(Some("localhost"), &scid, local, server, config).expect("connect");
    (conn, socket)
}

/// The client's first flight, datagram by datagram.
fn first_flight(conn: &mut quiche::Connection) -> Vec<Vec<u8>> {
    let mut flight = Vec::new();
    let mut buffer = [0u8; 1500];
    while let Ok((len, _)) = conn.send(&mut buffer) {
        flight.push(buffer[..len].to_vec());
    }
    flight
}

/// Bytes arriving on `socket` until it has been quiet for `quiet`.
fn bytes_until_quiet(socket: &UdpSocket, quiet: Duration, limit: Duration) -> usize {
    socket.set_read_timeout(Some(quiet)).expect("timeout");
    let started = Instant::now();
    let mut total = 0;
    let mut buffer = [0u8; 65_535];
    while started.elapsed() < limit {
        match socket.recv(&mut buffer) {
            Ok(len) => total += len,
            Err(_) => break,
        }
    }
    total
}

#[test]
fn an_unvalidated_client_draws_at_most_three_times_what_it_sent_padding_included() {
    let server = Running::start("wire-amplification", never_retry());
    // The whole first flight (two datagrams: the ClientHello's post-quantum
    // key share does not fit one) and the first datagram alone, never
    // answered: the server's first flight and every probe after it count.
    for datagrams in [usize::MAX, 1] {
        let (mut conn, socket) = client(server.address, &mut client_config(b"h3"));
        let mut sent = 0;
        for datagram in first_flight(&mut conn).into_iter().take(datagrams) {
            socket.send_to(&datagram, server.address).expect("send");
            sent += datagram.len();
        }
        // The server probes at 1 s, 3 s, ... after its first flight; 2.5 s
        // of quiet means its budget is spent.
        let received = bytes_until_quiet(&socket, Duration::from_millis(2_500), Duration::from_secs(20));
        assert!(received > 0, "the server answered");
        assert!(received <= 3 * sent, "{received} bytes for {sent} ({:.2} x)", received as f64 / sent as f64);
        let what = if datagrams == 1 { "first datagram" } else { "whole first flight" };
        eprintln!("{what}: {sent} bytes drew {received} ({:.2} x)", received as f64 / sent as f64);
    }
}

/// A server bound but not running: datagrams go in through
/// `handle_datagram` and anything it sends arrives at the client's socket.
fn idle_server(label: &str, limits: Limits) -> (Server, ScratchDir) {
    let site = site(label);
    let server = Server::bind(server_config(&site, limits)).expect("server binds");
    (server, site)
}

fn nothing_arrives(socket: &UdpSocket) -> bool {
    socket.set_read_timeout(Some(Duration::from_millis(300))).expect("timeout");
    socket.recv(&mut [0u8; 2048]).is_err()
}

#[test]
fn small_initials_and_small_unknown_versions_get_no_answer_and_create_no_state() {
    let (mut server, _site) = idle_server("wire-small", never_retry());
    let (mut conn, socket) = client(server.local_addr(), &mut client_config(b"h3"));
    let from = socket.local_addr().expect("local");
    let initial = first_flight(&mut conn).remove(0);
    assert!(initial.len() >= 1200);
    for len in [30, 124, 518, 1199] {
        server.handle_datagram(&mut initial[..len].to_vec(), from).expect("handled");
    }
    // A packet of an unknown version, as a scanner would send it.
    let mut unknown = vec![0xc0, 0x1a, 0x2a, 0x3a, 0x4a, 8, 1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9];
    for len in [124, 1199] {
        unknown.resize(len, 0);
        server.handle_datagram(&mut unknown.clone(), from).expect("handled");
    }
    assert_eq!(server.connections(), 0);
    let counters = server.counters();
    // The shortest cut does not even hold a whole Initial header.
    assert_eq!(counters.small_initials + counters.unparsable, 4);
    assert_eq!(counters.small_unknown_versions, 2);
    assert!(nothing_arrives(&socket), "no answer to any of them");

    // A full-size Initial that does not decrypt keeps no state either.
    let mut corrupted = initial.clone();
    // Inside the encrypted payload, past a header of at most 70 bytes.
    corrupted[200] ^= 0x55;
    server.handle_datagram(&mut corrupted, from).expect("handled");
    server.run_until(Some(Instant::now())).expect("one turn");
    assert_eq!(server.connections(), 0);
    assert_eq!(server.counters().undecryptable_initials, 1);
    assert!(nothing_arrives(&socket), "no answer to it");

    // At 1,200 bytes the unknown version is answered, and the Initial
    // starts a connection.
    unknown.resize(1200, 0);
    server.handle_datagram(&mut unknown.clone(), from).expect("handled");
    let mut buffer = [0u8; 2048];
    let len = socket.recv(&mut buffer).expect("a Version Negotiation");
    let header = quiche::Header::from_slice(&mut buffer[..len], 20).expect("header");
    assert_eq!(header.ty, quiche::Type::VersionNegotiation);
    assert!(len < 1200);
    server.handle_datagram(&mut initial.clone(), from).expect("handled");
    assert_eq!(server.connections(), 1);
}

#[test]
fn retry_makes_a_client_prove_its_address_before_the_server_keeps_state() {
    let (mut server, _site) = idle_server("wire-retry", Limits { retry: RetryMode::Always, ..Limits::default() });
    let (mut conn, socket) = client(server.local_addr(), &mut client_config(b"h3"));
    let from = socket.local_addr().expect("local");
    for mut datagram in first_flight(&mut conn) {
        server.handle_datagram(&mut datagram, from).expect("handled");
    }
    assert_eq!(server.connections(), 0, "no state before the token comes back");
    let mut buffer = [0u8; 2048];
    socket.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
    let len = socket.recv(&mut buffer).expect("a Retry");
    let retry = buffer[..len].to_vec();
    let header = quiche::Header::from_slice(&mut buffer[..len], 20).expect("header");
    assert_eq!(header.ty, quiche::Type::Retry);

    // A token for another address (here another port) is refused.
    let mut replayed = retry.clone();
    let (mut other, other_socket) = client(server.local_addr(), &mut client_config(b"h3"));
    let _ = first_flight(&mut other);
    let info = quiche::RecvInfo { from: server.local_addr(), to: from };
    conn.recv(&mut replayed, info).expect("the client takes the Retry");
    let with_token = first_flight(&mut conn);
    let elsewhere = other_socket.local_addr().expect("local");
    server.handle_datagram(&mut with_token[0].clone(), elsewhere).expect("handled");
    assert_eq!(server.connections(), 0);
    assert_eq!(server.counters().invalid_tokens, 1);

    // From the address it was issued to, the token admits the connection.
    for mut datagram in with_token.clone() {
        server.handle_datagram(&mut datagram, from).expect("handled");
    }
    assert_eq!(server.connections(), 1);
    // One Retry per Initial datagram of the first flight, stateless.
    assert_eq!(server.counters().retries, with_token.len() as u64);
}

/// An HTTP/3 client on a socket, driven by hand.
struct H3Client {
    conn: quiche::Connection,
    h3: Option<quiche::h3::Connection>,
    socket: UdpSocket,
    server: SocketAddr,
}

impl H3Client {
    fn connect(server: SocketAddr) -> H3Client {
        let (conn, socket) = client(server, &mut client_config(b"h3"));
        socket.set_nonblocking(true).expect("nonblocking");
        let mut client = H3Client { conn, h3: None, socket, server };
        client.run_until(|client| client.conn.is_established());
        let h3 = quiche::h3::Connection::with_transport(&mut client.conn, &quiche::h3::Config::new().expect("h3"))
            .expect("h3");
        client.h3 = Some(h3);
        client
    }

    /// Exchanges packets until `done` or 10 s.
    fn run_until(&mut self, mut done: impl FnMut(&mut H3Client) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut buffer = [0u8; 65_535];
        while !done(self) {
            assert!(Instant::now() < deadline, "timed out");
            assert!(!self.conn.is_closed(), "closed: {:?}", self.conn.peer_error());
            while let Ok((len, _)) = self.conn.send(&mut buffer) {
                self.socket.send_to(&buffer[..len], self.server).expect("send");
            }
            std::thread::sleep(Duration::from_millis(2));
            let local = self.socket.local_addr().expect("local");
            while let Ok((len, from)) = self.socket.recv_from(&mut buffer) {
                let _ = self.conn.recv(&mut buffer[..len], quiche::RecvInfo { from, to: local });
            }
            if self.conn.timeout() == Some(Duration::ZERO) {
                self.conn.on_timeout();
            }
        }
    }

    /// Sends a request with exactly these fields; the outcome: the status,
    /// or the code the server reset the stream with.
    fn request(&mut self, fields: &[(&[u8], &[u8])]) -> Result<u16, u64> {
        let headers: Vec<quiche::h3::Header> =
            fields.iter().map(|(name, value)| quiche::h3::Header::new(name, value)).collect();
        let stream = self.h3.as_mut().expect("h3").send_request(&mut self.conn, &headers, true).expect("request");
        self.outcome(stream)
    }

    /// Writes `bytes` as they are on request stream `stream`, with FIN.
    fn raw_request(&mut self, stream: u64, bytes: &[u8]) -> Result<u16, u64> {
        let mut written = 0;
        self.run_until(|client| {
            written += client.conn.stream_send(stream, &bytes[written..], true).unwrap_or(0);
            // Stop writing once the server has reset the stream.
            written == bytes.len() || client.conn.stream_writable(stream, 1).is_err()
        });
        self.outcome(stream)
    }

    /// The response's status, or the code the server reset `stream` with.
    fn outcome(&mut self, stream: u64) -> Result<u16, u64> {
        let mut outcome = None;
        self.run_until(|client| {
            let h3 = client.h3.as_mut().expect("h3");
            while let Ok((id, event)) = h3.poll(&mut client.conn) {
                match event {
                    quiche::h3::Event::Headers { list, .. } if id == stream => {
                        let status = list.iter().find(|header| header.name() == b":status").expect(":status");
                        outcome =
                            Some(Ok(std::str::from_utf8(status.value()).expect("ascii").parse().expect("status")));
                    }
                    quiche::h3::Event::Reset(code) if id == stream => outcome = Some(Err(code)),
                    quiche::h3::Event::Data => while h3.recv_body(&mut client.conn, id, &mut [0u8; 65_535]).is_ok() {},
                    _ => {}
                }
            }
            outcome.is_some()
        });
        outcome.expect("an outcome")
    }
}

const H3_MESSAGE_ERROR: u64 = 0x10e;
const H3_EXCESSIVE_LOAD: u64 = 0x107;

#[test]
fn malformed_and_oversized_requests_are_refused_one_by_one_and_the_connection_goes_on() {
    let server = Running::start("wire-h3", never_retry());
    let mut client = H3Client::connect(server.address);
    let good: [(&[u8], &[u8]); 4] =
        [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"localhost"), (b":path", b"/a.bin")];
    assert_eq!(client.request(&good), Ok(200));

    let no_path = &good[..3];
    assert_eq!(client.request(no_path), Err(H3_MESSAGE_ERROR), "no :path");
    let twice = [&good[..], &[(b":method".as_slice(), b"GET".as_slice())]].concat();
    assert_eq!(client.request(&twice), Err(H3_MESSAGE_ERROR), "duplicate :method");
    let late = [(b":method".as_slice(), b"GET".as_slice()), (b"accept", b"*/*"), (b":scheme", b"https")];
    let late = [&late[..], &good[2..]].concat();
    assert_eq!(client.request(&late), Err(H3_MESSAGE_ERROR), "pseudo-header after a regular one");
    let te = [&good[..], &[(b"te".as_slice(), b"gzip".as_slice())]].concat();
    assert_eq!(client.request(&te), Err(H3_MESSAGE_ERROR), "te other than trailers");

    // Over the advertised field section limit (16 KB), that request is
    // reset, not the connection: 600 small fields, 21.6 KB decoded (RFC
    // 9114, section 4.2.2 counts 32 bytes a field) ...
    let many: Vec<(Vec<u8>, Vec<u8>)> = (0..600).map(|i| (format!("x-{i}").into_bytes(), b"v".to_vec())).collect();
    let many: Vec<(&[u8], &[u8])> =
        good.iter().copied().chain(many.iter().map(|(name, value)| (name.as_slice(), value.as_slice()))).collect();
    assert_eq!(client.request(&many), Err(H3_EXCESSIVE_LOAD));
    // ... and a HEADERS frame announcing 60 KB (the size of the issue's
    // long :path), refused on its length before it is read.
    let mut frame = vec![0x01, 0x80, 0x00, 0xea, 0x60];
    frame.resize(5 + 60_000, 0);
    assert_eq!(client.raw_request(200, &frame), Err(H3_EXCESSIVE_LOAD));

    assert_eq!(client.request(&good), Ok(200), "the connection still serves");
    let missing = [&good[..3], &[(b":path".as_slice(), b"/missing".as_slice())]].concat();
    assert_eq!(client.request(&missing), Ok(404));
}

/// A client's first flight from its own socket.
fn new_client_flight(server: SocketAddr) -> (Vec<Vec<u8>>, SocketAddr, UdpSocket) {
    let (mut conn, socket) = client(server, &mut client_config(b"h3"));
    let from = socket.local_addr().expect("local");
    (first_flight(&mut conn), from, socket)
}

#[test]
fn half_open_and_per_address_limits_refuse_new_connections_and_timeouts_free_them() {
    let limits = Limits {
        retry: RetryMode::Never,
        max_half_open: 2,
        handshake_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let (mut server, _site) = idle_server("wire-half-open", limits);
    let mut sockets = Vec::new();
    for _ in 0..3 {
        let (flight, from, socket) = new_client_flight(server.local_addr());
        server.handle_datagram(&mut flight[0].clone(), from).expect("handled");
        sockets.push(socket);
    }
    assert_eq!(server.connections(), 2);
    assert_eq!(server.counters().refused_half_open, 1);
    // Nobody finishes the handshake: the timeout drops both, silently.
    server.run_until(Some(Instant::now() + Duration::from_millis(800))).expect("runs");
    assert_eq!(server.connections(), 0);
    let (flight, from, _socket) = new_client_flight(server.local_addr());
    server.handle_datagram(&mut flight[0].clone(), from).expect("handled");
    assert_eq!(server.connections(), 1, "room again");

    let limits = Limits { retry: RetryMode::Never, max_per_address: 1, ..Limits::default() };
    let (mut server, _site) = idle_server("wire-per-address", limits);
    for _ in 0..2 {
        let (flight, from, _socket) = new_client_flight(server.local_addr());
        server.handle_datagram(&mut flight[0].clone(), from).expect("handled");
    }
    assert_eq!(server.connections(), 1, "both clients are 127.0.0.1");
    assert_eq!(server.counters().refused_per_address, 1);
}

#[test]
fn qlogs_start_after_the_handshake_and_stop_at_the_file_limit() {
    let site = site("wire-qlog");
    let qlog_dir = site.path().join("qlog");
    let mut config = server_config(&site, Limits { retry: RetryMode::Never, qlog_max_files: 1, ..Limits::default() });
    config.endpoint.qlog_dir = Some(qlog_dir.clone());
    let (sender, receiver) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let mut server = Server::bind(config).expect("server binds");
        sender.send((server.local_addr(), server.terminate_flag())).expect("send");
        server.run().expect("server runs");
    });
    let (address, stop) = receiver.recv().expect("started");
    let qlogs = || std::fs::read_dir(&qlog_dir).map(|entries| entries.count()).unwrap_or(0);

    // An abandoned handshake leaves no qlog.
    let (flight, _, socket) = new_client_flight(address);
    for datagram in &flight {
        socket.send_to(datagram, address).expect("send");
    }
    bytes_until_quiet(&socket, Duration::from_millis(300), Duration::from_secs(2));
    assert_eq!(qlogs(), 0);
    // Two established connections: the first gets the one qlog allowed.
    for _ in 0..2 {
        let mut client = H3Client::connect(address);
        let good: [(&[u8], &[u8]); 4] =
            [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"localhost"), (b":path", b"/a.bin")];
        assert_eq!(client.request(&good), Ok(200));
    }
    stop.store(true, Ordering::Relaxed);
    thread.join().expect("server thread");
    assert_eq!(qlogs(), 1);
}

#[test]
fn initials_after_a_retry_never_land_in_a_connection_the_first_flight_started() {
    // Retry while one connection or more is half open; the first flight of
    // client X straddles the moment the threshold is crossed: its first
    // datagram gets a Retry, its second starts a connection.
    let limits =
        Limits { retry: RetryMode::Above(1), handshake_timeout: Duration::from_millis(200), ..Limits::default() };
    let (mut server, _site) = idle_server("wire-retry-race", limits);
    let (other_flight, other, _other_socket) = new_client_flight(server.local_addr());
    server.handle_datagram(&mut other_flight[0].clone(), other).expect("handled");
    assert_eq!(server.connections(), 1);

    let (mut conn, socket) = client(server.local_addr(), &mut client_config(b"h3"));
    let from = socket.local_addr().expect("local");
    let flight = first_flight(&mut conn);
    assert!(flight.len() >= 2, "a first flight of two datagrams");
    server.handle_datagram(&mut flight[0].clone(), from).expect("handled");
    assert_eq!(server.counters().retries, 1);
    // The other connection times out: below the threshold again.
    server.run_until(Some(Instant::now() + Duration::from_millis(400))).expect("runs");
    assert_eq!(server.connections(), 0);
    server.handle_datagram(&mut flight[1].clone(), from).expect("handled");
    assert_eq!(server.connections(), 1, "the second datagram started a connection");

    let mut buffer = [0u8; 2048];
    socket.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
    let len = loop {
        let len = socket.recv(&mut buffer).expect("the Retry");
        if quiche::Header::from_slice(&mut buffer[..len].to_vec(), 20).is_ok_and(|h| h.ty == quiche::Type::Retry) {
            break len;
        }
    };
    let info = quiche::RecvInfo { from: server.local_addr(), to: from };
    conn.recv(&mut buffer[..len], info).expect("the client takes the Retry");
    for mut datagram in first_flight(&mut conn) {
        server.handle_datagram(&mut datagram, from).expect("handled");
    }
    assert_eq!(server.connections(), 2, "the Initials with the token started their own connection");
    assert_eq!(server.counters().invalid_tokens, 0);
}
