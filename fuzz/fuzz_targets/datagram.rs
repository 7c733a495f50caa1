//! The server's datagram entry point (`Server::handle_datagram`) with any
//! bytes from any client port, followed by one turn of its event loop
//! (timers, sends, closing): never a panic, and the half-open limit holds.
//!
//! The first byte of an input chooses what the rest is: even, a datagram
//! as it is; odd, bytes XORed into a real client Initial (so that
//! corrupted Initials reach decryption and the handshake rather than stop
//! at the header). The second byte picks the client's port among a few, so
//! that inputs meet connections that earlier inputs started.
#![no_main]

use std::cell::RefCell;
use std::net::SocketAddr;
use std::time::Duration;
use std::time::Instant;

use flowshare_interop::endpoint::EndpointOptions;
use flowshare_interop::policy::Overrides;
use flowshare_interop::policy::PolicySource;
use flowshare_interop::server::Limits;
use flowshare_interop::server::RetryMode;
use flowshare_interop::server::Server;
use flowshare_interop::server::ServerConfig;
use flowshare_quic::cert::ScratchDir;
use libfuzzer_sys::fuzz_target;

/// Half-open connections the fuzzed server allows: small, so that the
/// limit is reached and tested.
const MAX_HALF_OPEN: usize = 64;

struct Harness {
    server: Server,
    /// A client Initial of the first flight, to corrupt.
    initial: Vec<u8>,
    _site: ScratchDir,
}

thread_local! {
    static HARNESS: RefCell<Option<Harness>> = const { RefCell::new(None) };
}

fn harness() -> Harness {
    let site = ScratchDir::new("fuzz-datagram").expect("scratch dir");
    flowshare_quic::cert::write_self_signed(site.path(), &["localhost".into()]).expect("certificate");
    std::fs::create_dir_all(site.path().join("www")).expect("www");
    std::fs::write(site.path().join("www/index.html"), b"hello").expect("file");
    let config = ServerConfig {
        listen: "127.0.0.1:0".parse().expect("address"),
        root: site.path().join("www"),
        cert: site.path().join("cert.pem"),
        key: site.path().join("key.pem"),
        policy: PolicySource { file: None, overrides: Overrides::default() },
        endpoint: EndpointOptions { qlog_dir: None, keylog: None, stats: false, idle_timeout: Duration::from_secs(5) },
        upload_dir: None,
        max_streams: 100,
        limits: Limits {
            retry: RetryMode::Above(MAX_HALF_OPEN / 2),
            max_half_open: MAX_HALF_OPEN,
            handshake_timeout: Duration::from_secs(1),
            ..Limits::default()
        },
        early_data: true,
    };
    flowshare_interop::log::init(flowshare_interop::log::Level::Error, "server");
    let server = Server::bind(config).expect("server binds");

    let mut client_config = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("config");
    client_config.set_application_protos(&[b"h3"]).expect("alpn");
    let scid = quiche::ConnectionId::from_vec(vec![0x5a; 16]);
    let local: SocketAddr = "127.0.0.1:9".parse().expect("address");
    let mut client =
        quiche::connect(Some("localhost"), &scid, local, server.local_addr(), &mut client_config).expect("connect");
    let mut initial = vec![0u8; 1500];
    let (len, _) = client.send(&mut initial).expect("initial");
    initial.truncate(len);
    Harness { server, initial, _site: site }
}

fuzz_target!(|data: &[u8]| {
    let [mode, port, payload @ ..] = data else { return };
    HARNESS.with(|cell| {
        let mut cell = cell.borrow_mut();
        let harness = cell.get_or_insert_with(harness);
        let mut datagram = if mode & 1 == 0 {
            payload.to_vec()
        } else {
            let mut initial = harness.initial.clone();
            // Corrupt from an offset the mode chooses, so that the header,
            // the token, the packet number and the payload all get hit.
            let start = usize::from(mode >> 1) * 8 % initial.len();
            for (byte, flip) in initial[start..].iter_mut().zip(payload) {
                *byte ^= flip;
            }
            initial
        };
        // Eight ports on 127.0.0.1 where nothing listens: whatever the
        // server answers goes nowhere.
        let from = SocketAddr::from(([127, 0, 0, 1], 40_000 + u16::from(port % 8)));
        harness.server.handle_datagram(&mut datagram, from).expect("the datagram entry point does not fail");
        harness.server.run_until(Some(Instant::now())).expect("one turn of the loop");
        assert!(harness.server.connections() <= MAX_HALF_OPEN + 8);
    });
});
