//! `flowshare cert`, `serve`, `get` and `loadtest`: the command-line side
//! of the HTTP/3 endpoints in `interop/` (crate `flowshare-interop`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use flowshare_controllers::Spec;
use flowshare_interop::client;
use flowshare_interop::client::ClientConfig;
use flowshare_interop::client::Fetch;
use flowshare_interop::client::RequestReport;
use flowshare_interop::client::Schedule;
use flowshare_interop::endpoint::EndpointOptions;
use flowshare_interop::http::Protocol;
use flowshare_interop::io::Offload;
use flowshare_interop::loadtest;
use flowshare_interop::loadtest::LoadConfig;
use flowshare_interop::loadtest::MixEntry;
use flowshare_interop::log;
use flowshare_interop::log::Level;
use flowshare_interop::policy::Overrides;
use flowshare_interop::policy::PolicySource;
use flowshare_interop::server::Limits;
use flowshare_interop::server::RetryMode;
use flowshare_interop::server::Server;
use flowshare_interop::server::ServerConfig;
use flowshare_interop::soak;
use flowshare_interop::soak::SoakConfig;
use flowshare_quic::pacing::MAX_PACING_SLACK;

use crate::units;

#[derive(clap::Args)]
pub struct CertArgs {
    /// Directory to write `cert.pem` and `key.pem` to.
    #[arg(long)]
    out: PathBuf,
    /// Names (DNS names or addresses) the certificate is valid for;
    /// repeatable.
    #[arg(long = "name", default_values = ["localhost", "127.0.0.1", "::1"])]
    names: Vec<String>,
}

pub fn cert(args: CertArgs) -> Result<(), String> {
    let files = flowshare_quic::cert::write_self_signed(&args.out, &args.names)
        .map_err(|e| format!("--out {}: {e}", args.out.display()))?;
    println!("wrote {} and {} for {}", files.cert.display(), files.key.display(), args.names.join(", "));
    Ok(())
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// UDP address to listen on (port 0 picks a free port, printed at start).
    #[arg(long, default_value = "0.0.0.0:4433")]
    listen: SocketAddr,
    /// Directory whose files are served.
    #[arg(long)]
    root: PathBuf,
    /// Certificate chain (PEM), e.g. from `flowshare cert`.
    #[arg(long)]
    cert: PathBuf,
    /// Private key (PEM).
    #[arg(long)]
    key: PathBuf,
    /// Policy file (TOML) mapping connections to controllers; reloaded on
    /// SIGHUP. See `interop/README.md`.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// Controller for connections no policy rule matches (replaces the
    /// policy's default), e.g. `multcp:n=4`.
    #[arg(long)]
    cc: Option<String>,
    /// Cap on every weight, in addition to the policy's max_weight.
    #[arg(long)]
    max_weight: Option<f64>,
    /// Print a stats line per connection at close.
    #[arg(long)]
    stats: bool,
    /// Write one qlog per connection here [default: $QLOGDIR].
    #[arg(long)]
    qlog_dir: Option<PathBuf>,
    /// Append TLS secrets here [default: $SSLKEYLOGFILE].
    #[arg(long)]
    keylog: Option<PathBuf>,
    /// Store uploads (PUT, POST) here; without it they are counted and dropped.
    #[arg(long)]
    upload_dir: Option<PathBuf>,
    /// Close connections idle this long.
    #[arg(long, default_value = "30s", value_parser = units::duration)]
    idle_timeout: Duration,
    /// Concurrent request streams per connection (at most 1000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1000))]
    max_streams: u64,
    /// Address validation with Retry tokens: never, always, or auto (while
    /// at least --retry-above connections are half open).
    #[arg(long, default_value = "auto")]
    retry: RetryMode,
    /// Half-open connections from which on `--retry auto` asks for tokens.
    #[arg(long, default_value_t = 100)]
    retry_above: usize,
    /// Half-open connections (handshake not complete) beyond which new
    /// Initials are dropped.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    max_half_open: u64,
    /// Open connections per client address beyond which its new Initials
    /// are dropped.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections_per_address: u64,
    /// Drop connections whose handshake has not completed after this long.
    #[arg(long, default_value = "10s", value_parser = units::duration)]
    handshake_timeout: Duration,
    /// Write qlogs from the first packet instead of from the end of the
    /// handshake.
    #[arg(long)]
    qlog_handshakes: bool,
    /// Write at most this many qlog files.
    #[arg(long, default_value_t = 10_000)]
    qlog_max_files: u64,
    /// Let all qlog files together take at most this much (each ends at a
    /// whole record).
    #[arg(long, default_value = "1G", value_parser = units::bytes)]
    qlog_max_bytes: u64,
    /// Accept 0-RTT early data from clients that resume a session (GETs
    /// only; uploads in early data get 425 Too Early).
    #[arg(long)]
    early_data: bool,
    /// Send and receive one datagram per UDP message: no segmentation
    /// offload (GSO) nor GRO, even where the kernel has them. Sends and
    /// receives are still batched (sendmmsg, recvmmsg).
    #[arg(long)]
    no_gso: bool,
    /// Send packets due within this much of a send with it (at most 1ms).
    /// Below the default the server also sleeps to the microsecond, so
    /// that gaps a controller means, such as the 50-200 us of
    /// `pa-multcp:pacing=split`, reach the wire.
    #[arg(long, default_value = "100us", value_parser = pacing_slack)]
    pacing_slack: Duration,
    /// Log level on stderr: error, warn, info, debug.
    #[arg(long, default_value = "info")]
    log_level: Level,
}

/// `--pacing-slack`: a duration up to [`MAX_PACING_SLACK`].
pub(crate) fn pacing_slack(text: &str) -> Result<Duration, String> {
    let slack = units::duration(text)?;
    if slack > MAX_PACING_SLACK {
        return Err(format!("{text}: the pacing slack is at most {}us", MAX_PACING_SLACK.as_micros()));
    }
    Ok(slack)
}

pub fn serve(args: ServeArgs) -> Result<(), String> {
    log::init(args.log_level, "server");
    let config = ServerConfig {
        listen: args.listen,
        root: args.root,
        cert: args.cert,
        key: args.key,
        policy: PolicySource {
            file: args.policy,
            overrides: Overrides { default_cc: args.cc, max_weight: args.max_weight },
        },
        endpoint: EndpointOptions {
            qlog_dir: args.qlog_dir,
            keylog: args.keylog,
            stats: args.stats,
            idle_timeout: args.idle_timeout,
        }
        .with_environment(),
        upload_dir: args.upload_dir,
        max_streams: args.max_streams,
        limits: Limits {
            retry: match args.retry {
                RetryMode::Above(_) => RetryMode::Above(args.retry_above),
                mode => mode,
            },
            max_half_open: usize::try_from(args.max_half_open).unwrap_or(usize::MAX),
            max_per_address: usize::try_from(args.max_connections_per_address).unwrap_or(usize::MAX),
            handshake_timeout: args.handshake_timeout,
            qlog_handshakes: args.qlog_handshakes,
            qlog_max_files: args.qlog_max_files,
            qlog_max_bytes: args.qlog_max_bytes,
        },
        early_data: args.early_data,
        pacing_slack: args.pacing_slack,
    };
    let mut server = Server::bind_with_offload(config, offload(args.no_gso)).map_err(|e| e.to_string())?;
    let policy = server.policy();
    println!(
        "flowshare serve: listening on {} (policy {}: {} rules, max_weight {}; udp {})",
        server.local_addr(),
        policy.source(),
        policy.rules(),
        policy.max_weight(),
        server.offload()
    );
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    server.run().map_err(|e| format!("server: {e}"))
}

/// How the client reaches and trusts a server and which protocol it
/// speaks: `flowshare get`'s and `flowshare bench server`'s options.
#[derive(clap::Args)]
pub struct ServerAccess {
    /// Send to this address instead of resolving the URLs' host (the URLs'
    /// host remains the TLS server name).
    #[arg(long)]
    pub connect: Option<SocketAddr>,
    /// TLS server name, instead of the URLs' host.
    #[arg(long)]
    pub sni: Option<String>,
    /// Do not verify the server's certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Trust the certificates in this PEM file.
    #[arg(long)]
    pub ca: Option<PathBuf>,
    /// Application protocol: h3 or hq-interop.
    #[arg(long, default_value = "h3")]
    pub alpn: Protocol,
}

#[derive(clap::Args)]
pub struct GetArgs {
    /// URLs to fetch (https://host:port/path), all from the same server.
    #[arg(required = true)]
    urls: Vec<String>,
    /// Directory the downloads are written to, under their file names.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The client's controller (the sender's for uploads).
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// Spread the URLs over this many connections (round robin), all at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10000))]
    connections: u64,
    /// Local addresses for the connections, in turn (repeatable or comma
    /// separated), e.g. one per path of an MCompound group.
    #[arg(long, value_delimiter = ',')]
    bind: Vec<SocketAddr>,
    /// Open a new connection for each URL, one after the other.
    #[arg(long)]
    connection_per_url: bool,
    /// Fetch the first URL, then the others on a second connection that
    /// resumes the first one's TLS session.
    #[arg(long)]
    resume: bool,
    /// Like --resume, sending the second connection's requests as 0-RTT
    /// early data.
    #[arg(long)]
    early_data: bool,
    #[command(flatten)]
    access: ServerAccess,
    /// Upload this file to every URL (PUT) instead of downloading.
    #[arg(long)]
    upload: Option<PathBuf>,
    /// Ask the server for at most this weight (sent as the flowshare-weight
    /// header; the server never grants more than its policy).
    #[arg(long)]
    weight: Option<f64>,
    /// Extra request header `name: value`; repeatable.
    #[arg(long = "header")]
    headers: Vec<String>,
    /// Print a stats line per connection at close.
    #[arg(long)]
    stats: bool,
    /// Write one qlog per connection here [default: $QLOGDIR].
    #[arg(long)]
    qlog_dir: Option<PathBuf>,
    /// Append TLS secrets here [default: $SSLKEYLOGFILE].
    #[arg(long)]
    keylog: Option<PathBuf>,
    /// Give up on connections still open after this long.
    #[arg(long, default_value = "600s", value_parser = units::duration)]
    timeout: Duration,
    /// Close connections idle this long.
    #[arg(long, default_value = "30s", value_parser = units::duration)]
    idle_timeout: Duration,
    /// Log level on stderr: error, warn, info, debug.
    #[arg(long, default_value = "warn")]
    log_level: Level,
    /// Send and receive one datagram per UDP message: no segmentation
    /// offload (GSO) nor GRO, even where the kernel has them. Sends and
    /// receives are still batched (sendmmsg, recvmmsg).
    #[arg(long)]
    no_gso: bool,
    /// While only receiving, acknowledge every this many datagrams at once
    /// and hold a lone one for up to 25 ms (2: as RFC 9000 section 13.2.2
    /// recommends and Linux TCP receivers do; 1: every datagram at once, as
    /// quiche does by itself).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    ack_every: u32,
}

pub fn get(args: GetArgs) -> Result<(), String> {
    log::init(args.log_level, "client");
    let cc: Spec = args.cc.parse().map_err(|e| log::one_line(&format!("--cc: {e}")))?;
    let fetch = Fetch {
        urls: args.urls,
        out: args.out,
        upload: args.upload,
        protocol: args.access.alpn,
        connections: args.connections as usize,
        connection_per_url: args.connection_per_url,
        resume: args.resume || args.early_data,
        bind: args.bind,
        connect: args.access.connect,
        sni: args.access.sni,
        weight: args.weight,
        headers: args.headers,
    };
    let Schedule { authority, batches, headers, requests } = fetch.prepare()?;
    let config = ClientConfig {
        protocol: args.access.alpn,
        cc,
        insecure: args.access.insecure,
        ca: args.access.ca,
        endpoint: EndpointOptions {
            qlog_dir: args.qlog_dir,
            keylog: args.keylog,
            stats: args.stats,
            idle_timeout: args.idle_timeout,
        }
        .with_environment(),
        time_limit: args.timeout,
        headers,
        resume: args.resume || args.early_data,
        early_data: args.early_data,
        offload: offload(args.no_gso),
        ack_every: args.ack_every,
    };
    let print = |report: &RequestReport| {
        let verb = if report.upload { "PUT" } else { "GET" };
        let url = format!("https://{authority}{}", report.path);
        match &report.error {
            None => println!(
                "{verb} {url}: {} bytes in {:.3} s, {:.2} Mbit/s, first byte after {}",
                report.bytes,
                report.elapsed.as_secs_f64(),
                report.bytes as f64 * 8.0 / report.elapsed.as_secs_f64().max(1e-9) / 1e6,
                report.first_byte.map_or_else(|| "-".to_string(), |at| format!("{:.3} s", at.as_secs_f64()))
            ),
            Some(error) => println!("{verb} {url}: failed: {error}"),
        }
    };
    let totals = client::run_batches(&config, batches, print)?;
    let elapsed = totals.elapsed.as_secs_f64();
    println!(
        "total: {} of {} requests, {} bytes in {:.3} s, {:.2} Mbit/s over {} connection(s)",
        requests - totals.failures,
        requests,
        totals.bytes,
        elapsed,
        totals.bytes as f64 * 8.0 / elapsed.max(1e-9) / 1e6,
        totals.connections
    );
    if totals.failures > 0 {
        return Err(format!("{} of {requests} requests failed", totals.failures));
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct LoadtestArgs {
    /// Concurrent connections.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=10000))]
    connections: u64,
    /// Requests per connection, sent concurrently.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    requests: u64,
    /// Size of the file each request fetches.
    #[arg(long, default_value = "100K", value_parser = units::bytes)]
    size: u64,
    /// Controllers given to connections in turn, `SPEC` or `SPEC@streams`
    /// (weight follows the streams); repeatable.
    #[arg(long = "mix", default_values = ["multcp:n=4", "multfrc:n=0.5", "pa-multcp:n=1@streams", "cubic"])]
    mix: Vec<String>,
    /// Application protocol: h3 or hq-interop.
    #[arg(long, default_value = "h3")]
    alpn: Protocol,
    /// Fail if the run takes longer.
    #[arg(long, default_value = "300s", value_parser = units::duration)]
    timeout: Duration,
    /// Soak: repeat the load for this long, mixed with the abuse below,
    /// sampling the server's memory and file descriptors.
    #[arg(long, value_parser = units::duration)]
    duration: Option<Duration>,
    /// Soak: random datagrams per second.
    #[arg(long, default_value_t = 200)]
    garbage_rate: u32,
    /// Soak: corrupted client Initials per second.
    #[arg(long, default_value_t = 50)]
    corrupt_rate: u32,
    /// Soak: connections abandoned after their first flight, per second.
    #[arg(long, default_value_t = 20)]
    abandon_rate: u32,
    /// Soak: how often to sample the server.
    #[arg(long, default_value = "10s", value_parser = units::duration)]
    sample_every: Duration,
    /// Soak: how long to watch the server settle after the load.
    #[arg(long, default_value = "60s", value_parser = units::duration)]
    settle: Duration,
    /// Soak: resident memory the server may keep above its baseline once
    /// settled, MiB.
    #[arg(long, default_value_t = 16)]
    rss_slack_mib: u64,
    /// Server and clients send and receive one datagram per UDP message
    /// (no GSO, no GRO).
    #[arg(long)]
    no_gso: bool,
}

pub fn loadtest(args: LoadtestArgs) -> Result<(), String> {
    log::init(Level::Warn, "client");
    let mix = args
        .mix
        .iter()
        .map(|entry| entry.parse::<MixEntry>().map_err(|e| log::one_line(&format!("--mix: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let config = LoadConfig {
        binary: std::env::current_exe().map_err(|e| format!("finding the flowshare binary: {e}"))?,
        connections: args.connections as usize,
        requests: args.requests as usize,
        size: args.size,
        mix,
        protocol: args.alpn,
        time_limit: args.timeout,
        offload: offload(args.no_gso),
    };
    if let Some(duration) = args.duration {
        let soak = SoakConfig {
            load: config,
            duration,
            garbage_per_second: args.garbage_rate,
            corrupt_per_second: args.corrupt_rate,
            abandon_per_second: args.abandon_rate,
            sample_every: args.sample_every,
            settle: args.settle,
        };
        println!(
            "flowshare loadtest: soak for {duration:?}: rounds of {} connections x {} requests of {} bytes, \
             with {} random datagrams/s, {} corrupted Initials/s, {} abandoned connections/s",
            soak.load.connections,
            soak.load.requests,
            soak.load.size,
            soak.garbage_per_second,
            soak.corrupt_per_second,
            soak.abandon_per_second
        );
        let report = soak::run(&soak)?;
        println!("{report}");
        return if report.ok(args.rss_slack_mib * 1024) {
            println!("result ok");
            Ok(())
        } else {
            println!("result FAILED");
            Err("the soak had errors, or memory or descriptors did not come back down".into())
        };
    }
    let mix: Vec<String> = config.mix.iter().map(ToString::to_string).collect();
    println!(
        "flowshare loadtest: {} connections x {} requests of {} bytes, controllers {}",
        config.connections,
        config.requests,
        config.size,
        mix.join(" ")
    );
    let report = loadtest::run(&config)?;
    println!("{report}");
    if report.ok() {
        Ok(())
    } else {
        Err("the load test had errors".into())
    }
}

/// The data path `--no-gso` asks for.
pub fn offload(no_gso: bool) -> Offload {
    if no_gso {
        Offload::Off
    } else {
        Offload::Auto
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pacing_slack_takes_a_duration_up_to_a_millisecond() {
        assert_eq!(pacing_slack("10us"), Ok(Duration::from_micros(10)));
        assert_eq!(pacing_slack("0"), Ok(Duration::ZERO));
        assert_eq!(pacing_slack("2ms"), Err("2ms: the pacing slack is at most 1000us".to_string()));
        assert!(pacing_slack("fast").is_err());
    }
}
