//! What a flowshare controller costs inside quiche, next to quiche's own
//! CUBIC driven the same way.
//!
//! A quiche server and client exchange packets in memory (no sockets). One
//! iteration: the server sends two packets of stream data, the client
//! receives them and answers with an ACK, and the server processes that ACK
//! — so quiche's recovery runs its controller on every iteration. The
//! difference between `cubic` (quiche's built-in, legacy path) and
//! `multcp:n=1` (the same AIMD(1, 1/2) as a flowshare controller through the
//! adapter) is the cost of the plug-in path per ACK.
//!
//! Run with `cargo bench -p flowshare-quic --bench ack_cost`.
//!
//! On a machine too noisy for wall-clock times, count instructions instead:
//! with `ACK_COST_SPEC=SPEC ACK_COST_ROUNDS=K` the bench binary runs K
//! rounds of that spec after the same warm-up and exits, so that
//! `valgrind --tool=callgrind` of it at two K gives the instructions per
//! round as the difference over the rounds (`scripts/ack-instructions`).

use std::hint::black_box;
use std::net::SocketAddr;
use std::time::Duration;

use criterion::criterion_group;
use criterion::Criterion;
use flowshare_controllers::Spec;
use flowshare_quic::cert;

/// `pa-multcp:n=4,pacing=off` is how the demo and the testbed run it (the
/// cap's smoothed average); the others are each controller's
/// defaults (MulTCP's and MulCUBIC's are their separate loops; `loops=one`
/// is the one window, controllers/README.md, `loops`).
const SPECS: &[&str] = &[
    "cubic",
    "reno",
    "multcp:n=1",
    "multcp:n=4,loops=one",
    "multcp:n=4",
    "pa-multcp:n=4",
    "pa-multcp:n=4,pacing=off",
    "mulcubic:n=4,loops=one",
    "mulcubic:n=4",
    "multfrc:n=4",
    "ctcp",
];
const STREAM: u64 = 3;

struct Pipe {
    server: quiche::Connection,
    client: quiche::Connection,
    server_addr: SocketAddr,
    client_addr: SocketAddr,
    buffer: Vec<u8>,
    data: Vec<u8>,
    _certs: cert::ScratchDir,
}

fn config(spec: Option<&Spec>) -> quiche::Config {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("config");
    config.set_application_protos(&[b"bench"]).expect("alpn");
    config.set_initial_max_data(1 << 40);
    config.set_initial_max_stream_data_uni(1 << 40);
    config.set_initial_max_streams_uni(4);
    config.set_max_idle_timeout(0);
    if let Some(spec) = spec {
        flowshare_quic::configure(&mut config, spec);
    }
    config
}

impl Pipe {
    fn new(spec: &str) -> Pipe {
        let spec: Spec = spec.parse().expect("benchmark specs are valid");
        let certs = cert::ScratchDir::new("bench").expect("scratch dir");
        let files = cert::write_self_signed(certs.path(), &["localhost".into()]).expect("certificate");
        let mut server_config = config(Some(&spec));
        server_config.load_cert_chain_from_pem_file(&files.cert.to_string_lossy()).expect("cert");
        server_config.load_priv_key_from_pem_file(&files.key.to_string_lossy()).expect("key");
        let mut client_config = config(None);
        client_config.verify_peer(false);

        let server_addr: SocketAddr = "127.0.0.1:4433".parse().expect("address");
        let client_addr: SocketAddr = "127.0.0.1:5533".parse().expect("address");
        let client_id = quiche::ConnectionId::from_ref(&[1; 16]);
        let server_id = quiche::ConnectionId::from_ref(&[2; 16]);
        let client = quiche::connect(Some("localhost"), &client_id, client_addr, server_addr, &mut client_config)
            .expect("connect");
        let server = quiche::accept(&server_id, None, server_addr, client_addr, &mut server_config).expect("accept");
        let mut pipe = Pipe {
            server,
            client,
            server_addr,
            client_addr,
            buffer: vec![0; 65_535],
            data: vec![7; 2400],
            _certs: certs,
        };
        while !(pipe.client.is_established() && pipe.server.is_established()) {
            pipe.client_to_server();
            pipe.server_to_client();
        }
        pipe
    }

    fn client_to_server(&mut self) {
        while let Ok((len, _)) = self.client.send(&mut self.buffer) {
            let info = quiche::RecvInfo { from: self.client_addr, to: self.server_addr };
            let _ = self.server.recv(&mut self.buffer[..len], info);
        }
    }

    fn server_to_client(&mut self) {
        while let Ok((len, _)) = self.server.send(&mut self.buffer) {
            let info = quiche::RecvInfo { from: self.server_addr, to: self.client_addr };
            let _ = self.client.recv(&mut self.buffer[..len], info);
        }
        while let Some(stream) = self.client.readable().next() {
            while self.client.stream_recv(stream, &mut self.buffer).is_ok() {}
        }
    }

    /// Two data packets out, one ACK back.
    fn round(&mut self) {
        let _ = self.server.stream_send(STREAM, &self.data, false);
        self.server_to_client();
        self.client_to_server();
    }
}

fn ack_cost(c: &mut Criterion) {
    let mut group = c.benchmark_group("quiche_round");
    for spec in SPECS {
        let mut pipe = Pipe::new(spec);
        for _ in 0..WARM_UP_ROUNDS {
            pipe.round();
        }
        group.bench_function(*spec, |b| {
            b.iter(|| {
                pipe.round();
                black_box(pipe.server.stats().sent);
            })
        });
    }
    group.finish();
}

/// The warm-up every measurement starts after: the connection past slow
/// start's first rounds.
const WARM_UP_ROUNDS: usize = 2_000;

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    targets = ack_cost
}

fn main() {
    match (std::env::var("ACK_COST_SPEC"), std::env::var("ACK_COST_ROUNDS")) {
        (Ok(spec), Ok(rounds)) => {
            let Ok(rounds) = rounds.parse::<usize>() else {
                eprintln!("ACK_COST_ROUNDS = {rounds:?} is not a number of rounds");
                std::process::exit(2);
            };
            if let Err(error) = spec.parse::<Spec>() {
                eprintln!("ACK_COST_SPEC: {error}");
                std::process::exit(2);
            }
            let mut pipe = Pipe::new(&spec);
            for _ in 0..WARM_UP_ROUNDS + rounds {
                pipe.round();
            }
            black_box(pipe.server.stats().sent);
        }
        _ => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
