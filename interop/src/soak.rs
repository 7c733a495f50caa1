//! `flowshare loadtest --duration ...`: the load test for minutes on end,
//! mixed with what the open Internet sends a server: random datagrams,
//! corrupted Initials and connections abandoned after their first flight.
//! It samples the server's resident memory and open file descriptors as it
//! goes, and after the load stops it waits for them to settle, so that a
//! leak shows as memory that does not come back down.
//!
//! A benchmark to run by hand (`scripts/soak`), not a test: the figures
//! depend on the host. Everything goes to the server on 127.0.0.1.

use std::fmt;
use std::net::SocketAddr;
use std::net::UdpSocket;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use crate::loadtest;
use crate::loadtest::Bench;
use crate::loadtest::LoadConfig;

/// What to run.
#[derive(Clone, Debug)]
pub struct SoakConfig {
    /// Each round of load, repeated for `duration`.
    pub load: LoadConfig,
    /// How long the load and the abuse run.
    pub duration: Duration,
    /// Random datagrams per second.
    pub garbage_per_second: u32,
    /// Client Initials with random bytes flipped, per second.
    pub corrupt_per_second: u32,
    /// Connections that send their first flight and nothing more, per
    /// second.
    pub abandon_per_second: u32,
    /// How often the server's memory and descriptors are sampled.
    pub sample_every: Duration,
    /// How long to watch the server settle after the load stops (longer
    /// than its handshake and idle timeouts).
    pub settle: Duration,
}

/// One look at the server.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Since the soak started.
    pub at: Duration,
    /// Resident memory, KiB.
    pub rss_kib: u64,
    /// Open file descriptors.
    pub fds: usize,
    /// Connections served without error so far.
    pub served: usize,
    /// Failed requests (client side) and failed connections (server side)
    /// so far.
    pub errors: usize,
    /// Whether the load was still running.
    pub loaded: bool,
}

/// The soak's figures.
#[derive(Clone, Debug)]
pub struct SoakReport {
    /// Load rounds completed.
    pub rounds: usize,
    /// Connections the rounds opened and those that succeeded.
    pub connections: usize,
    /// See `connections`.
    pub succeeded: usize,
    /// Failed requests seen by the clients.
    pub failed_requests: usize,
    /// Server stats lines with an error.
    pub server_errors: usize,
    /// Datagrams of abuse sent: random, corrupted Initials, abandoned
    /// connections.
    pub garbage: u64,
    /// See `garbage`.
    pub corrupted: u64,
    /// See `garbage`.
    pub abandoned: u64,
    /// The server before any load, after its start.
    pub baseline: Sample,
    /// Samples during the load and while settling.
    pub samples: Vec<Sample>,
}

impl SoakReport {
    /// The last sample, once the server settled.
    pub fn settled(&self) -> Sample {
        self.samples.last().copied().unwrap_or(self.baseline)
    }

    /// The highest resident memory seen.
    pub fn peak_rss_kib(&self) -> u64 {
        self.samples.iter().map(|sample| sample.rss_kib).max().unwrap_or(self.baseline.rss_kib)
    }

    /// Whether every connection of the load succeeded, the descriptors
    /// came back to their baseline and memory to within `slack` of it.
    pub fn ok(&self, slack_kib: u64) -> bool {
        let settled = self.settled();
        self.succeeded == self.connections
            && self.failed_requests == 0
            && self.server_errors == 0
            && settled.fds <= self.baseline.fds
            && settled.rss_kib <= self.baseline.rss_kib + slack_kib
    }
}

impl fmt::Display for SoakReport {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        writeln!(f, "{:>8} {:>9} {:>5} {:>8} {:>7}  phase", "t_s", "rss_mib", "fds", "served", "errors")?;
        let row = |f: &mut fmt::Formatter, sample: &Sample, phase: &str| {
            writeln!(
                f,
                "{:>8.0} {:>9.1} {:>5} {:>8} {:>7}  {phase}",
                sample.at.as_secs_f64(),
                sample.rss_kib as f64 / 1024.0,
                sample.fds,
                sample.served,
                sample.errors
            )
        };
        row(f, &self.baseline, "baseline")?;
        for sample in &self.samples {
            row(f, sample, if sample.loaded { "load + abuse" } else { "settling" })?;
        }
        let settled = self.settled();
        writeln!(
            f,
            "rounds {}, connections {} ({} succeeded), failed requests {}, server errors {}",
            self.rounds, self.connections, self.succeeded, self.failed_requests, self.server_errors
        )?;
        writeln!(
            f,
            "abuse: {} random datagrams, {} corrupted Initials, {} abandoned connections",
            self.garbage, self.corrupted, self.abandoned
        )?;
        write!(
            f,
            "rss: baseline {:.1} MiB, peak {:.1} MiB, settled {:.1} MiB; fds: baseline {}, settled {}",
            self.baseline.rss_kib as f64 / 1024.0,
            self.peak_rss_kib() as f64 / 1024.0,
            settled.rss_kib as f64 / 1024.0,
            self.baseline.fds,
            settled.fds
        )
    }
}

/// Resident memory (KiB) and open descriptors of process `pid`.
fn look(pid: &str) -> Result<(u64, usize), String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| format!("/proc/{pid}: {e}"))?;
    let rss = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .ok_or("no VmRSS in /proc status")?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_err(|e| format!("/proc/{pid}/fd: {e}"))?.count();
    Ok((rss, fds))
}

/// A small, fast, seeded generator (xorshift64*): the abuse need not be
/// unpredictable, only varied and repeatable.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn fill(&mut self, bytes: &mut [u8]) {
        for byte in bytes {
            *byte = self.next() as u8;
        }
    }
}

/// What the abuse thread sent.
#[derive(Default)]
struct AbuseCounts {
    garbage: AtomicU64,
    corrupted: AtomicU64,
    abandoned: AtomicU64,
}

/// The first flight of a fresh quiche client towards `server`.
fn first_flight(server: SocketAddr, local: SocketAddr, config: &mut quiche::Config) -> Vec<Vec<u8>> {
    let Ok(scid) = flowshare_quic::random_connection_id() else { return Vec::new() };
    let Ok(mut conn) = quiche::connect(Some("m0.load.test"), &scid, local, server, config) else { return Vec::new() };
    let mut flight = Vec::new();
    let mut buffer = [0u8; 1500];
    while let Ok((len, _)) = conn.send(&mut buffer) {
        flight.push(buffer[..len].to_vec());
    }
    flight
}

/// Sends the abuse at its rates until `stop`.
fn abuse(config: &SoakConfig, server: SocketAddr, stop: &AtomicBool, counts: &AbuseCounts) -> Result<(), String> {
    let mut quiche_config = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(|e| e.to_string())?;
    quiche_config.set_application_protos(&[b"h3"]).map_err(|e| e.to_string())?;
    // A few sockets, so that the abuse comes from several ports.
    let sockets: Vec<UdpSocket> =
        (0..16).map(|_| UdpSocket::bind("127.0.0.1:0")).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    for socket in &sockets {
        socket.set_nonblocking(true).map_err(|e| e.to_string())?;
    }
    let mut random = Xorshift(0x9e37_79b9_7f4a_7c15);
    let started = Instant::now();
    let due = |per_second: u32| (started.elapsed().as_secs_f64() * f64::from(per_second)) as u64;
    let mut buffer = [0u8; 1500];
    while !stop.load(Ordering::Relaxed) {
        let socket = &sockets[random.below(sockets.len())];
        while counts.garbage.load(Ordering::Relaxed) < due(config.garbage_per_second) {
            let len = 1 + random.below(buffer.len());
            random.fill(&mut buffer[..len]);
            // Half of them look like long headers of version 1 or others.
            if random.below(2) == 0 {
                buffer[0] |= 0xc0;
            }
            let _ = socket.send_to(&buffer[..len], server);
            counts.garbage.fetch_add(1, Ordering::Relaxed);
        }
        while counts.corrupted.load(Ordering::Relaxed) < due(config.corrupt_per_second) {
            let local = socket.local_addr().map_err(|e| e.to_string())?;
            if let Some(mut initial) = first_flight(server, local, &mut quiche_config).into_iter().next() {
                for _ in 0..1 + random.below(8) {
                    let at = random.below(initial.len());
                    initial[at] ^= 1 << random.below(8);
                }
                let _ = socket.send_to(&initial, server);
            }
            counts.corrupted.fetch_add(1, Ordering::Relaxed);
        }
        while counts.abandoned.load(Ordering::Relaxed) < due(config.abandon_per_second) {
            let local = socket.local_addr().map_err(|e| e.to_string())?;
            for datagram in first_flight(server, local, &mut quiche_config) {
                let _ = socket.send_to(&datagram, server);
            }
            counts.abandoned.fetch_add(1, Ordering::Relaxed);
        }
        // Whatever the server answers is read and dropped.
        for socket in &sockets {
            while socket.recv(&mut buffer).is_ok() {}
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// Runs the soak, printing each sample to stderr as it is taken.
pub fn run(config: &SoakConfig) -> Result<SoakReport, String> {
    let bench = Bench::start(&config.load)?;
    let pid = bench.server_pid.clone();
    eprintln!("soak: server pid {pid} on {} for {:?}", bench.address, config.duration);
    // Let the server finish starting before the baseline.
    std::thread::sleep(Duration::from_secs(1));
    let started = Instant::now();
    let sample = |served: usize, errors: usize, loaded: bool| -> Result<Sample, String> {
        let (rss_kib, fds) = look(&pid)?;
        let sample = Sample { at: started.elapsed(), rss_kib, fds, served, errors, loaded };
        eprintln!(
            "soak: t={:.0}s rss={:.1}MiB fds={} served={} errors={}{}",
            sample.at.as_secs_f64(),
            rss_kib as f64 / 1024.0,
            fds,
            served,
            errors,
            if loaded { "" } else { " (settling)" }
        );
        Ok(sample)
    };
    let baseline = sample(0, 0, false)?;

    let stop = AtomicBool::new(false);
    let counts = AbuseCounts::default();
    let mut report = SoakReport {
        rounds: 0,
        connections: 0,
        succeeded: 0,
        failed_requests: 0,
        server_errors: 0,
        garbage: 0,
        corrupted: 0,
        abandoned: 0,
        baseline,
        samples: Vec::new(),
    };
    let address = bench.address;
    let errors = |report: &SoakReport| report.failed_requests + report.server_errors;
    std::thread::scope(|scope| -> Result<(), String> {
        let abuser = scope.spawn(|| abuse(config, address, &stop, &counts));
        let mut next_sample = Instant::now() + config.sample_every;
        let outcome = (|| -> Result<(), String> {
            while started.elapsed() < config.duration {
                let round = loadtest::round(&bench, &config.load, false)?;
                report.rounds += 1;
                report.connections += round.connections;
                report.succeeded += round.succeeded;
                report.failed_requests += round.failed_requests;
                report.server_errors += round.server_errors;
                if Instant::now() >= next_sample {
                    report.samples.push(sample(report.succeeded, errors(&report), true)?);
                    next_sample = Instant::now() + config.sample_every;
                }
            }
            Ok(())
        })();
        stop.store(true, Ordering::Relaxed);
        let abused = abuser.join().map_err(|_| "the abuse thread panicked".to_string())?;
        outcome.and(abused)
    })?;
    report.garbage = counts.garbage.load(Ordering::Relaxed);
    report.corrupted = counts.corrupted.load(Ordering::Relaxed);
    report.abandoned = counts.abandoned.load(Ordering::Relaxed);

    let settle_until = Instant::now() + config.settle;
    while Instant::now() < settle_until {
        std::thread::sleep(config.sample_every.min(settle_until.saturating_duration_since(Instant::now())));
        report.samples.push(sample(report.succeeded, errors(&report), false)?);
    }
    drop(bench);
    Ok(report)
}
