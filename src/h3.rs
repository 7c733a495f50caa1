//! `flowshare cert`, `serve`, `get` and `loadtest`: the command-line side
//! of the HTTP/3 endpoints in `interop/` (crate `flowshare-interop`).

use std::net::SocketAddr;
use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::time::Duration;
use std::time::Instant;

use flowshare_controllers::Spec;
use flowshare_interop::client;
use flowshare_interop::client::ClientConfig;
use flowshare_interop::client::Plan;
use flowshare_interop::client::RequestReport;
use flowshare_interop::client::Sink;
use flowshare_interop::http::Protocol;
use flowshare_interop::http::Url;
use flowshare_interop::loadtest;
use flowshare_interop::loadtest::LoadConfig;
use flowshare_interop::loadtest::MixEntry;
use flowshare_interop::log;
use flowshare_interop::log::Level;
use flowshare_interop::policy::Overrides;
use flowshare_interop::policy::PolicySource;
use flowshare_interop::policy::WEIGHT_HEADER;
use flowshare_interop::server::Server;
use flowshare_interop::server::ServerConfig;

use crate::units;

/// `$QLOGDIR` and `$SSLKEYLOGFILE` as the interop runner and quiche's
/// applications use them, when the option is not given.
fn from_env(option: Option<PathBuf>, variable: &str) -> Option<PathBuf> {
    option.or_else(|| std::env::var_os(variable).filter(|value| !value.is_empty()).map(PathBuf::from))
}

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
    /// Log level on stderr: error, warn, info, debug.
    #[arg(long, default_value = "info")]
    log_level: Level,
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
        stats: args.stats,
        qlog_dir: from_env(args.qlog_dir, "QLOGDIR"),
        keylog: from_env(args.keylog, "SSLKEYLOGFILE"),
        upload_dir: args.upload_dir,
        idle_timeout: args.idle_timeout,
        max_streams: args.max_streams,
    };
    let mut server = Server::bind(config).map_err(|e| e.to_string())?;
    let policy = server.policy();
    println!(
        "flowshare serve: listening on {} (policy {}: {} rules, max_weight {})",
        server.local_addr(),
        policy.source(),
        policy.rules(),
        policy.max_weight()
    );
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    server.run().map_err(|e| format!("server: {e}"))
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
    /// Send to this address instead of resolving the URLs' host (the URLs'
    /// host remains the TLS server name).
    #[arg(long)]
    connect: Option<SocketAddr>,
    /// TLS server name, instead of the URLs' host.
    #[arg(long)]
    sni: Option<String>,
    /// Do not verify the server's certificate.
    #[arg(long)]
    insecure: bool,
    /// Trust the certificates in this PEM file.
    #[arg(long)]
    ca: Option<PathBuf>,
    /// Application protocol: h3 or hq-interop.
    #[arg(long, default_value = "h3")]
    alpn: Protocol,
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
}

pub fn get(args: GetArgs) -> Result<(), String> {
    log::init(args.log_level, "client");
    let cc: Spec = args.cc.parse().map_err(|e| format!("--cc: {e}"))?;
    let urls = args.urls.iter().map(|url| Url::parse(url)).collect::<Result<Vec<_>, _>>()?;
    let first = &urls[0];
    if let Some(other) = urls.iter().find(|url| url.authority() != first.authority()) {
        return Err(format!("all URLs must name the same server: {first} and {other}"));
    }
    if args.upload.is_some() && args.alpn != Protocol::H3 {
        return Err("--upload needs --alpn h3 (hq-interop has no uploads)".into());
    }
    if args.upload.is_none() && args.out.is_none() {
        return Err("--out DIR is required for downloads".into());
    }
    let server = match args.connect {
        Some(address) => address,
        None => (first.host.as_str(), first.port)
            .to_socket_addrs()
            .map_err(|e| format!("resolving {}: {e}", first.host))?
            .next()
            .ok_or_else(|| format!("{} has no address", first.host))?,
    };
    let mut headers = Vec::new();
    if let Some(weight) = args.weight {
        if !(weight > 0.0 && weight.is_finite()) {
            return Err(format!("--weight {weight}: must be a positive number"));
        }
        headers.push((WEIGHT_HEADER.to_string(), weight.to_string()));
    }
    for header in &args.headers {
        let (name, value) = header.split_once(':').ok_or_else(|| format!("--header {header:?}: write name: value"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).map_err(|e| format!("--out {}: {e}", out.display()))?;
    }
    let config = ClientConfig {
        protocol: args.alpn,
        cc,
        insecure: args.insecure,
        ca: args.ca,
        qlog_dir: from_env(args.qlog_dir, "QLOGDIR"),
        keylog: from_env(args.keylog, "SSLKEYLOGFILE"),
        stats: args.stats,
        idle_timeout: args.idle_timeout,
        time_limit: args.timeout,
        headers,
    };
    let mut requests = Vec::with_capacity(urls.len());
    for url in &urls {
        let sink = match &args.out {
            Some(out) if args.upload.is_none() => Sink::File(out.join(url.file_name()?)),
            _ => Sink::Discard,
        };
        requests.push(client::Request { path: url.path.clone(), sink, upload: args.upload.clone() });
    }
    let server_name = args.sni.clone().or_else(|| first.server_name().map(str::to_string));
    let local_default: SocketAddr =
        if server.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { (std::net::Ipv6Addr::UNSPECIFIED, 0).into() };
    let local = |index: usize| if args.bind.is_empty() { local_default } else { args.bind[index % args.bind.len()] };
    let plan = |index: usize, requests: Vec<client::Request>| Plan {
        local: local(index),
        server,
        server_name: server_name.clone(),
        authority: first.authority(),
        requests,
    };
    let batches: Vec<Vec<Plan>> = if args.connection_per_url {
        requests.into_iter().enumerate().map(|(index, request)| vec![plan(index, vec![request])]).collect()
    } else {
        let connections = (args.connections as usize).min(requests.len()).max(1);
        let mut per_connection: Vec<Vec<client::Request>> = vec![Vec::new(); connections];
        for (index, request) in requests.into_iter().enumerate() {
            per_connection[index % connections].push(request);
        }
        vec![per_connection.into_iter().enumerate().map(|(index, requests)| plan(index, requests)).collect()]
    };

    let started = Instant::now();
    let (mut total_bytes, mut failures, mut connections) = (0u64, 0usize, 0usize);
    let print = |report: &RequestReport| {
        let verb = if report.upload { "PUT" } else { "GET" };
        let url = format!("https://{}{}", first.authority(), report.path);
        match &report.error {
            None => println!(
                "{verb} {url}: {} bytes in {:.3} s, {:.2} Mbit/s",
                report.bytes,
                report.elapsed.as_secs_f64(),
                report.bytes as f64 * 8.0 / report.elapsed.as_secs_f64().max(1e-9) / 1e6
            ),
            Some(error) => println!("{verb} {url}: failed: {error}"),
        }
    };
    for plans in batches {
        connections += plans.len();
        for report in client::run(&config, plans, print)? {
            for request in &report.requests {
                total_bytes += request.bytes;
                failures += usize::from(request.error.is_some());
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "total: {} of {} requests, {} bytes in {:.3} s, {:.2} Mbit/s over {} connection(s)",
        urls.len() - failures,
        urls.len(),
        total_bytes,
        elapsed,
        total_bytes as f64 * 8.0 / elapsed.max(1e-9) / 1e6,
        connections
    );
    if failures > 0 {
        return Err(format!("{failures} of {} requests failed", urls.len()));
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
}

pub fn loadtest(args: LoadtestArgs) -> Result<(), String> {
    log::init(Level::Warn, "client");
    let mix = args
        .mix
        .iter()
        .map(|entry| entry.parse::<MixEntry>().map_err(|e| format!("--mix: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let config = LoadConfig {
        binary: std::env::current_exe().map_err(|e| format!("finding the flowshare binary: {e}"))?,
        connections: args.connections as usize,
        requests: args.requests as usize,
        size: args.size,
        mix,
        protocol: args.alpn,
        time_limit: args.timeout,
    };
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
