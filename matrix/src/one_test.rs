//! One test of the matrix: its files, its containers (the simulator, the
//! server, the client and, for crosstraffic, iperf on both sides), the wait
//! for the client within the test's time limit, the teardown, and the
//! runner's checks of the outcome (files, then the simulator's pcaps).

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use crate::cases::Check;
use crate::cases::TestCase;
use crate::docker;
use crate::docker::PREFIX;
use crate::run::image_of;
use crate::run::Cell;
use crate::run::Outcome;
use crate::run::Plan;
use crate::run::RunRecord;
use crate::run::CLIENT_ADDRESS;
use crate::run::IPERF_CLIENT_ADDRESS;
use crate::run::IPERF_IMAGE;
use crate::run::IPERF_SERVER_ADDRESS;
use crate::run::SERVER_ADDRESS;
use crate::run::SIM_IMAGE;
use crate::run::SIM_LEFT;
use crate::run::SIM_RIGHT;
use crate::run::STARTUP_ALLOWANCE;
use crate::sim;
use crate::trace;

/// A small, fast generator for the test files' contents and names.
pub(crate) struct Random(u64);

impl Random {
    pub(crate) fn new(seed: u64) -> Self {
        Random(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn name(&mut self) -> String {
        (0..10).map(|_| (b'a' + (self.next() % 26) as u8) as char).collect()
    }

    fn fill(&mut self, path: &Path, size: u64) -> Result<(), String> {
        let file = std::fs::File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
        let mut left = size;
        let mut block = vec![0u8; 1 << 16];
        while left > 0 {
            for chunk in block.chunks_mut(8) {
                let bytes = self.next().to_le_bytes();
                chunk.copy_from_slice(&bytes[..chunk.len()]);
            }
            let n = left.min(block.len() as u64) as usize;
            writer.write_all(&block[..n]).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            left -= n as u64;
        }
        writer.flush().map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

/// The containers of one test.
fn container(role: &str) -> String {
    format!("{PREFIX}{role}")
}

fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

pub(crate) struct Context<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) certs: PathBuf,
    pub(crate) interrupted: Arc<AtomicBool>,
    pub(crate) random: Random,
    pub(crate) iperf: String,
    pub(crate) aioquic_cc: String,
}

/// How the wait for a test's client ended: the client's final container
/// state (status, exit code) if it ended, the server's if the server ended
/// first, and whether the run was interrupted; neither state when the test
/// ran out of time.
type Ending = (Option<(String, i64)>, Option<(String, i64)>, bool);

/// Runs one test case once; returns its record.
pub(crate) fn run_once(ctx: &mut Context, cell: &Cell, case: &TestCase, dir: &Path) -> Result<RunRecord, String> {
    let started = Instant::now();
    let www = dir.join("www");
    let downloads = dir.join("downloads");
    let logs = dir.join("logs");
    for sub in ["sim", "server", "client", "iperf-server", "iperf-client"] {
        std::fs::create_dir_all(logs.join(sub)).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(&www).map_err(|e| format!("cannot create {}: {e}", www.display()))?;
    std::fs::create_dir_all(&downloads).map_err(|e| format!("cannot create {}: {e}", downloads.display()))?;
    let mut files = Vec::new();
    for &size in &case.files {
        let size = if case.is_measurement() { (size as f64 * ctx.plan.scale) as u64 } else { size };
        let mut name = ctx.random.name();
        while files.iter().any(|(n, _)| *n == name) {
            name = ctx.random.name();
        }
        ctx.random.fill(&www.join(&name), size)?;
        files.push((name, size));
    }
    let requests: Vec<String> = files.iter().map(|(name, _)| format!("https://server4:443/{name}")).collect();
    let scenario = case.scenario.replace("{bw}", &ctx.plan.bandwidth);
    let server_image = image_of(&cell.server).unwrap_or_default();
    let client_image = image_of(&cell.client).unwrap_or_default();
    let left = format!("{PREFIX}leftnet");
    let right = format!("{PREFIX}rightnet");
    let client_cc = if cell.client == "aioquic" { ctx.aioquic_cc.clone() } else { "cubic".to_string() };

    let sim = container("sim");
    let server = container("server");
    let client = container("client");
    // Created in this order; the simulator first, connected to rightnet
    // before it starts so that eth0 is leftnet and eth1 rightnet.
    let mut containers = vec![
        docker::Container::new(&sim, "sim", &left, SIM_LEFT, SIM_IMAGE)
            .capability("NET_RAW")
            .env("SCENARIO", &scenario)
            .env("WAITFORSERVER", "server:443")
            .host("server", SERVER_ADDRESS)
            .volume(&logs.join("sim"), "/logs", false),
        docker::Container::new(&server, "server", &right, SERVER_ADDRESS, server_image)
            .env("ROLE", "server")
            .env("TESTCASE", case.endpoint)
            .env("SSLKEYLOGFILE", "/logs/keys.log")
            .env("QLOGDIR", "/logs/qlog/")
            .env("CC", &cell.controller)
            .host("sim", SIM_RIGHT)
            .volume(&www, "/www", true)
            .volume(&ctx.certs, "/certs", true)
            .volume(&logs.join("server"), "/logs", false),
    ];
    if case.iperf {
        // The TCP flow runs in the download's direction: the iperf server
        // sends from the server's side to the receiver on the client's.
        containers.push(
            docker::Container::new(
                &container("iperf-client"),
                "iperf-client",
                &left,
                IPERF_CLIENT_ADDRESS,
                IPERF_IMAGE,
            )
            .env("ROLE", "client")
            .env("IPERF_CONGESTION", &ctx.iperf)
            .host("sim", SIM_LEFT)
            .volume(&logs.join("iperf-client"), "/logs", false),
        );
        containers.push(
            docker::Container::new(
                &container("iperf-server"),
                "iperf-server",
                &right,
                IPERF_SERVER_ADDRESS,
                IPERF_IMAGE,
            )
            .env("ROLE", "server")
            .env("CLIENT", "client4")
            .env("IPERF_CONGESTION", &ctx.iperf)
            .host("client4", IPERF_CLIENT_ADDRESS)
            .host("sim", SIM_RIGHT)
            .volume(&logs.join("iperf-server"), "/logs", false),
        );
    }
    containers.push(
        docker::Container::new(&client, "client", &left, CLIENT_ADDRESS, client_image)
            .env("ROLE", "client")
            .env("TESTCASE", case.endpoint)
            .env("REQUESTS", requests.join(" "))
            .env("SSLKEYLOGFILE", "/logs/keys.log")
            .env("QLOGDIR", "/logs/qlog/")
            .env("CC", &client_cc)
            .host("sim", SIM_LEFT)
            .host("server4", SERVER_ADDRESS)
            .host("server", SERVER_ADDRESS)
            .volume(&downloads, "/downloads", false)
            .volume(&ctx.certs, "/certs", true)
            .volume(&logs.join("client"), "/logs", false),
    );
    let mut started_containers: Vec<String> = Vec::new();
    let result = (|| -> Result<Ending, String> {
        for container in &containers {
            container.create()?;
            started_containers.push(container.name().to_string());
            if container.name() == sim {
                docker::quick(&["network", "connect", "--ip", SIM_RIGHT, &right, &sim])?;
            }
            container.start()?;
        }

        // Wait for the client, as the runner does, within the test's limit.
        let deadline = Instant::now() + STARTUP_ALLOWANCE + Duration::from_secs(case.timeout_s);
        let ended = |(status, _): &(String, i64)| status == "exited" || status == "dead";
        loop {
            if ctx.interrupted.load(Ordering::Relaxed) {
                return Ok((None, None, true));
            }
            // One `docker inspect` a tick: it shares the cores with the
            // real-time simulator.
            let mut states = docker::states(&[&client, &server])?.into_iter();
            let (client_state, server_state) = (states.next(), states.next());
            if let Some(state) = client_state.filter(ended) {
                return Ok((Some(state), None, false));
            }
            if let Some(state) = server_state.filter(ended) {
                // A server that gave up (unsupported, crashed) ends the test.
                return Ok((None, Some(state), false));
            }
            if Instant::now() >= deadline {
                return Ok((None, None, false));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    })();

    // Teardown: logs of every container, the simulator stopped gently so
    // that it writes its summary and closes its pcaps, then all removed.
    for name in &started_containers {
        let role = name.trim_start_matches(PREFIX);
        docker::save_logs(name, &logs.join(role).join("container.log"));
    }
    let server_state_at_end = docker::state(&server).ok();
    // The cross traffic must have lasted as long as the transfer.
    let iperf_sender = container("iperf-server");
    let iperf_stopped = case.iperf && docker::state(&iperf_sender).is_ok_and(|(status, _)| status != "running");
    for name in started_containers.iter().filter(|n| **n != sim) {
        let _ = docker::quick(&["rm", "--force", "--volumes", name]);
    }
    if started_containers.contains(&sim) {
        let _ = docker::docker(&["stop", "--time", "10", &sim], Duration::from_secs(30));
        let _ = docker::quick(&["rm", "--force", "--volumes", &sim]);
    }
    let seconds = started.elapsed().as_secs_f64();
    let (client_state, server_exit, interrupted) = result?;
    if interrupted {
        return Err("interrupted".to_string());
    }
    let health = sim::health(&logs.join("sim").join("ns3-summary.json")).ok();
    let record = |outcome, reason: Option<String>| RunRecord {
        outcome,
        reason,
        seconds,
        goodput_kbps: None,
        shares: None,
        sim_health: health.clone(),
        dir: path_arg(dir),
    };
    let server_exit = server_exit.or_else(|| server_state_at_end.filter(|s| s.0 == "exited"));

    // The endpoints' verdicts first.
    if let Some((_, 127)) = server_exit {
        let why = telling_line(&logs.join("server").join("container.log"));
        return Ok(record(Outcome::Unsupported, Some(format!("server: {why}"))));
    }
    let Some((_, code)) = client_state else {
        if let Some((_, code)) = server_exit {
            let why = telling_line(&logs.join("server").join("container.log"));
            return Ok(record(Outcome::Failed, Some(format!("server exited with {code} during the test: {why}"))));
        }
        let why = telling_line(&logs.join("client").join("container.log"));
        return Ok(record(
            Outcome::Failed,
            Some(format!("client did not finish within {} s (last words: {why})", case.timeout_s)),
        ));
    };
    if code == 127 {
        let why = telling_line(&logs.join("client").join("container.log"));
        return Ok(record(Outcome::Unsupported, Some(format!("client: {why}"))));
    }
    if code != 0 {
        let why = telling_line(&logs.join("client").join("container.log"));
        return Ok(record(Outcome::Failed, Some(format!("client exited with {code}: {why}"))));
    }
    if let Some(reason) = check_files(&www, &downloads, &files) {
        return Ok(record(Outcome::Failed, Some(reason)));
    }

    // The trace checks.
    let left_pcap = logs.join("sim").join("trace_node_left.pcap");
    let right_pcap = logs.join("sim").join("trace_node_right.pcap");
    let keylog = logs.join("client").join("keys.log");
    let keylog = if keylog.exists() { keylog } else { logs.join("server").join("keys.log") };
    let handshakes = match trace::handshakes(&right_pcap) {
        Ok(h) => h,
        Err(e) => return Ok(record(Outcome::Failed, Some(e))),
    };
    let expected_handshakes = match case.check {
        Check::Handshakes(n) => n,
        _ => 1,
    };
    if handshakes.count != expected_handshakes {
        return Ok(record(
            Outcome::Failed,
            Some(format!("expected {expected_handshakes} handshake(s), the server trace shows {}", handshakes.count)),
        ));
    }
    let versions: Vec<&String> = handshakes.versions.iter().collect();
    if versions.len() != 1 || versions[0] != "0x1" {
        return Ok(record(Outcome::Failed, Some(format!("expected QUIC version 0x1 only, saw {versions:?}"))));
    }
    match case.check {
        Check::HandshakeNoRetry => match trace::retries(&left_pcap) {
            Ok(0) => {}
            Ok(n) => return Ok(record(Outcome::Failed, Some(format!("did not expect a Retry, saw {n}")))),
            Err(e) => return Ok(record(Outcome::Failed, Some(e))),
        },
        Check::LongRtt => match trace::client_hellos(&left_pcap) {
            Ok(n) if n >= 2 => {}
            Ok(n) => return Ok(record(Outcome::Failed, Some(format!("expected at least 2 ClientHellos, saw {n}")))),
            Err(e) => return Ok(record(Outcome::Failed, Some(e))),
        },
        Check::Multiplexing => {
            if !keylog.exists() {
                return Ok(record(Outcome::Unsupported, Some("no SSLKEYLOGFILE from either endpoint".to_string())));
            }
            match trace::server_stream_limit(&left_pcap, &keylog) {
                Ok(Some(limit)) if limit <= 1000 => {}
                Ok(Some(limit)) => {
                    return Ok(record(Outcome::Failed, Some(format!("server stream limit {limit} > 1000"))));
                }
                Ok(None) => {
                    return Ok(record(Outcome::Failed, Some("could not read the server's stream limit".to_string())));
                }
                Err(e) => return Ok(record(Outcome::Failed, Some(e))),
            }
        }
        Check::Handshakes(_) => {}
    }
    let mut done = record(Outcome::Succeeded, None);
    if case.is_measurement() {
        let size = files.iter().map(|(_, s)| *s).sum::<u64>();
        // Short headers are recognised without the keys, and decrypting
        // 25 MB of 1-RTT packets would cost tshark most of a run's time.
        match trace::server_1rtt_span(&left_pcap, None) {
            Ok(Some(span)) => done.goodput_kbps = Some(size as f64 * 8.0 / span / 1e3),
            Ok(None) => {
                return Ok(record(Outcome::Failed, Some("no 1-RTT packets from the server in the trace".to_string())));
            }
            Err(e) => return Ok(record(Outcome::Failed, Some(e))),
        }
        if iperf_stopped {
            let why = telling_line(&logs.join("iperf-server").join("container.log"));
            return Ok(record(Outcome::Failed, Some(format!("the iperf sender stopped during the transfer: {why}"))));
        }
        if case.iperf {
            match sim::shares(&logs.join("sim").join("ns3-series.csv"), SERVER_ADDRESS, IPERF_SERVER_ADDRESS) {
                Ok(shares) if shares.iperf_kbps > 0.0 => done.shares = Some(shares),
                Ok(_) => {
                    let why = telling_line(&logs.join("iperf-server").join("container.log"));
                    return Ok(record(
                        Outcome::Failed,
                        Some(format!("no iperf cross traffic crossed the bottleneck ({why})")),
                    ));
                }
                Err(e) => return Ok(record(Outcome::Failed, Some(e))),
            }
        }
    }
    // Passed: the test files are not needed any more (pcaps and logs stay).
    let _ = std::fs::remove_dir_all(&www);
    let _ = std::fs::remove_dir_all(&downloads);
    Ok(done)
}

/// The runner's file check: exactly the expected files, each complete and
/// identical.
pub(crate) fn check_files(www: &Path, downloads: &Path, files: &[(String, u64)]) -> Option<String> {
    let found: Vec<String> = match std::fs::read_dir(downloads) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) => return Some(format!("cannot read {}: {e}", downloads.display())),
    };
    let missing: Vec<&String> = files.iter().map(|(n, _)| n).filter(|n| !found.contains(n)).collect();
    let unexpected: Vec<&String> = found.iter().filter(|n| !files.iter().any(|(f, _)| f == *n)).collect();
    if !missing.is_empty() || !unexpected.is_empty() {
        return Some(format!(
            "{} of {} files missing{}{}",
            missing.len(),
            files.len(),
            if unexpected.is_empty() { String::new() } else { format!(", {} unexpected", unexpected.len()) },
            missing.first().map_or(String::new(), |m| format!(" (e.g. {m})")),
        ));
    }
    for (name, size) in files {
        let got = std::fs::metadata(downloads.join(name)).map(|m| m.len()).unwrap_or(0);
        if got != *size {
            return Some(format!("{name}: {got} of {size} bytes"));
        }
        if !same_contents(&www.join(name), &downloads.join(name)).unwrap_or(false) {
            return Some(format!("{name}: contents differ from the served file"));
        }
    }
    None
}

/// Whether two files of the same size hold the same bytes, read in blocks:
/// a measurement's files reach gigabytes at high `--bandwidth`.
fn same_contents(a: &Path, b: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let (mut a, mut b) = (std::fs::File::open(a)?, std::fs::File::open(b)?);
    let (mut block_a, mut block_b) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let read = a.read(&mut block_a)?;
        if read == 0 {
            return Ok(b.read(&mut block_b[..1])? == 0);
        }
        b.read_exact(&mut block_b[..read])?;
        if block_a[..read] != block_b[..read] {
            return Ok(false);
        }
    }
}

/// The line of a log that says what went wrong, else its last line.
fn telling_line(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .map(|l| {
            // docker logs --timestamps: drop the timestamp.
            let l = l.trim();
            match l.split_once(' ') {
                Some((stamp, rest)) if stamp.len() > 20 && stamp.as_bytes()[4] == b'-' => rest.trim(),
                _ => l,
            }
        })
        .filter(|l| !l.is_empty())
        .collect();
    let telling = ["error", "not supported", "cannot", "failed", "timed out", "timeout"];
    let line = lines
        .iter()
        .rev()
        .find(|l| telling.iter().any(|w| l.to_lowercase().contains(w)))
        .or(lines.last())
        .copied()
        .unwrap_or("(no output)");
    let mut line = line.to_string();
    if line.len() > 200 {
        let mut cut = 200;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        line.push('…');
    }
    line
}
