//! The ns-3 program (`testbed/ns3/bottleneck.cc`): building it with the
//! project's script, running it in the sim namespace, talking to it on
//! stdin and reading what it measured.

use std::io::BufRead;
use std::io::BufReader;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::ChildStdin;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use flowshare_lab::setup::JitterShape;
use serde_json::Value;

use crate::netns;
use crate::netns::Topology;
use crate::process::ProcessId;
use crate::process::Processes;

/// The build script, in the source tree this binary was built from.
pub fn build_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ns3/build.sh")
}

/// Builds the ns-3 program if its source changed; returns its path.
pub fn build() -> Result<PathBuf, String> {
    let script = build_script();
    if !script.is_file() {
        return Err(format!(
            "{} not found: the testbed's ns-3 program is built from the flowshare source tree; pass --ns3 PATH to a built one",
            script.display()
        ));
    }
    let output = std::process::Command::new(&script)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !output.status.success() {
        return Err(format!(
            "building the ns-3 program failed ({}): {}",
            script.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let path = String::from_utf8_lossy(&output.stdout).lines().last().unwrap_or_default().trim().to_string();
    Ok(PathBuf::from(path))
}

/// One emulated bottleneck.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSetup {
    /// Rate, bit/s.
    pub rate_bps: f64,
    /// One-way delay, seconds.
    pub delay_s: f64,
    /// Buffer, packets.
    pub queue_packets: usize,
    /// RED instead of drop-tail.
    pub red: bool,
    /// Random drop probability, server to client.
    pub loss: f64,
}

/// A CBR source inside ns-3 (right node to left node `link`).
#[derive(Clone, Debug, PartialEq)]
pub struct CbrSetup {
    /// Destination port, which identifies the flow.
    pub port: u16,
    /// Rate while on, bit/s.
    pub rate_bps: f64,
    /// Link it crosses.
    pub link: usize,
}

/// What ns-3 emulates.
#[derive(Clone, Debug)]
pub struct EmulatorSetup {
    /// Links.
    pub links: Vec<LinkSetup>,
    /// CBR sources.
    pub cbr: Vec<CbrSetup>,
    /// Sampling interval, seconds.
    pub interval_s: f64,
    /// Seed of ns-3's random loss.
    pub seed: u64,
    /// Abort when real time lags by more than this (ms); 0 for best effort.
    pub hard_limit_ms: f64,
    /// Write the emulated devices' packet traces into the run's directory.
    pub pcap: bool,
    /// How long the server's TCP packets wait before they join a
    /// bottleneck queue, µs (0: they join at once, like every other packet).
    pub tcp_send_delay_us: u32,
    /// How long each flow's packets wait at most before they join a
    /// bottleneck queue; none: they join as they reach ns-3.
    pub access_jitter: Option<AccessJitter>,
}

/// The access jitter ns-3 gives the packets of every flow (5-tuple) in the
/// data direction before the bottleneck queue, as the lab's access links
/// do (`testbed/ns3/bottleneck.cc`, `AccessQueueDisc`): without it every
/// sender is clocked by a bottleneck whose service time is exact, and
/// which flow's packet finds the slot a departure frees depends on how soon
/// its stack answers (testbed/README.md, "Phase").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AccessJitter {
    /// The most a packet waits, µs.
    pub max_us: u64,
    /// How the wait varies: drifting, or drawn per packet.
    pub shape: JitterShape,
}

/// A running ns-3.
pub struct Emulator {
    id: ProcessId,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Per-flow series file.
    pub series: PathBuf,
    /// Lag and queue series file.
    pub monitor: PathBuf,
    /// Summary file.
    pub summary: PathBuf,
}

impl Emulator {
    /// Starts `binary` in the sim namespace with `setup`; logs and outputs go
    /// to `dir`.
    pub fn start(
        binary: &Path,
        topology: &Topology,
        processes: &mut Processes,
        setup: &EmulatorSetup,
        dir: &Path,
    ) -> Result<Emulator, String> {
        let join = |values: Vec<String>| values.join(",");
        let links = &setup.links;
        let series = dir.join("ns3-series.csv");
        let monitor = dir.join("ns3-monitor.csv");
        let summary = dir.join("ns3-summary.json");
        let log = dir.join("ns3.log");
        let mut command = topology.command(&topology.sim, &binary.to_string_lossy());
        command.args([
            format!(
                "--bandwidth={}",
                join(links.iter().map(|l| format!("{}bps", l.rate_bps.round() as u64)).collect())
            ),
            format!(
                "--delay={}",
                join(links.iter().map(|l| format!("{}us", (l.delay_s * 1e6).round() as u64)).collect())
            ),
            format!("--queue={}", join(links.iter().map(|l| l.queue_packets.to_string()).collect())),
            format!(
                "--qdisc={}",
                join(links.iter().map(|l| if l.red { "red" } else { "droptail" }.to_string()).collect())
            ),
            format!("--loss={}", join(links.iter().map(|l| l.loss.to_string()).collect())),
            format!("--client={}", join((0..links.len()).map(|i| format!("l{i}")).collect())),
            "--server=r0".to_string(),
            format!("--left={}", join((0..links.len()).map(netns::left_address).collect())),
            format!("--right={}", netns::RIGHT_ADDRESS),
            format!("--interval={}", setup.interval_s * 1e3),
            format!("--seed={}", setup.seed.max(1)),
            format!("--hardLimit={}", setup.hard_limit_ms),
            format!("--series={}", series.display()),
            format!("--monitor={}", monitor.display()),
            format!("--summary={}", summary.display()),
        ]);
        if setup.pcap {
            command.arg(format!("--pcap={}", dir.display()));
        }
        if setup.tcp_send_delay_us > 0 {
            command.arg(format!("--tcpDelay={}us", setup.tcp_send_delay_us));
        }
        if let Some(jitter) = setup.access_jitter {
            command.arg(format!("--jitter={}us", jitter.max_us));
            command.arg(format!("--jitterShape={}", jitter.shape.name()));
        }
        if !setup.cbr.is_empty() {
            command.arg(format!(
                "--cbr={}",
                join(setup.cbr.iter().map(|c| format!("{}:{}:{}", c.port, c.rate_bps, c.link)).collect())
            ));
        }
        let errors = std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(errors);
        let id = processes.spawn_configured("ns-3", command, &log)?;
        let child = processes.child_mut(id);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("ns-3 has no stdout pipe")?;
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Emulator { id, stdin, lines, series, monitor, summary })
    }

    /// Waits until ns-3 says it runs.
    pub fn wait_ready(&mut self, processes: &mut Processes, limit: Duration) -> Result<(), String> {
        match self.lines.recv_timeout(limit) {
            Ok(line) if line == "ready" => Ok(()),
            Ok(line) => Err(format!("ns-3 said {line:?} instead of ready")),
            Err(_) => {
                // Its output ended: give the exit status a moment to arrive.
                processes.wait(self.id, Duration::from_secs(1));
                Err(format!("ns-3 did not start: {}", processes.describe_failure(self.id)))
            }
        }
    }

    /// Whether ns-3 is still running.
    pub fn running(&self, processes: &mut Processes) -> bool {
        !processes.exited(self.id)
    }

    /// ns-3's process id, while it runs.
    pub fn pid(&self, processes: &mut Processes) -> Option<u32> {
        self.running(processes).then(|| processes.child_mut(self.id).id())
    }

    /// Why ns-3 is not running.
    pub fn failure(&self, processes: &mut Processes) -> String {
        processes.describe_failure(self.id)
    }

    /// Sends a control command (`blackhole 0 on`, `cbr 23000 off`, ...).
    pub fn command(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("ns-3's control pipe is closed")?;
        writeln!(stdin, "{line}").and_then(|_| stdin.flush()).map_err(|e| format!("cannot control ns-3: {e}"))
    }

    /// Stops the simulation and waits for ns-3 to write its summary.
    pub fn stop(&mut self, processes: &mut Processes) -> Result<(), String> {
        let _ = self.command("stop");
        self.stdin = None;
        if !processes.wait(self.id, Duration::from_secs(10)) {
            processes.terminate(self.id);
            return Err("ns-3 did not stop within 10 s of being asked".into());
        }
        Ok(())
    }
}

/// One row of `ns3-series.csv`: what one flow did on one link in one
/// sampling interval.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesRow {
    /// Wall clock at the end of the interval, seconds since the epoch.
    pub wall_s: f64,
    /// Simulated time at the end of the interval.
    pub sim_s: f64,
    /// Link index.
    pub link: usize,
    /// `d` (server to client) or `u`.
    pub direction: char,
    /// IP protocol number.
    pub protocol: u8,
    /// Source address.
    pub source: String,
    /// Source port.
    pub source_port: u16,
    /// Destination address.
    pub destination: String,
    /// Destination port.
    pub destination_port: u16,
    /// IP bytes the link delivered.
    pub bytes: u64,
    /// Packets the link delivered.
    pub packets: u64,
    /// Packets the queue dropped.
    pub queue_drops: u64,
    /// Packets lost to random loss or a blackhole.
    pub link_drops: u64,
    /// Loss events that started.
    pub loss_events: u64,
}

/// One row of `ns3-monitor.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorRow {
    /// Wall clock, seconds since the epoch.
    pub wall_s: f64,
    /// Simulated time.
    pub sim_s: f64,
    /// Real time behind simulated time, ms.
    pub lag_ms: f64,
    /// Packets in each link's server-to-client queue.
    pub queues: Vec<u32>,
    /// Packets the raw sockets' kernel buffers dropped so far.
    pub socket_drops: u64,
}

fn field<T: std::str::FromStr>(fields: &[&str], index: usize, file: &Path, line: usize) -> Result<T, String> {
    fields
        .get(index)
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| format!("{} line {line}: field {index} is missing or malformed", file.display()))
}

/// Reads `ns3-series.csv`.
pub fn read_series(path: &Path) -> Result<Vec<SeriesRow>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut rows = Vec::new();
    for (number, line) in text.lines().enumerate().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let f = |i| fields.get(i).copied().unwrap_or("");
        rows.push(SeriesRow {
            wall_s: field(&fields, 0, path, number + 1)?,
            sim_s: field(&fields, 1, path, number + 1)?,
            link: field(&fields, 2, path, number + 1)?,
            direction: f(3).chars().next().unwrap_or('?'),
            protocol: field(&fields, 4, path, number + 1)?,
            source: f(5).to_string(),
            source_port: field(&fields, 6, path, number + 1)?,
            destination: f(7).to_string(),
            destination_port: field(&fields, 8, path, number + 1)?,
            bytes: field(&fields, 9, path, number + 1)?,
            packets: field(&fields, 10, path, number + 1)?,
            queue_drops: field(&fields, 11, path, number + 1)?,
            link_drops: field(&fields, 12, path, number + 1)?,
            loss_events: field(&fields, 13, path, number + 1)?,
        });
    }
    Ok(rows)
}

/// Reads `ns3-monitor.csv`.
pub fn read_monitor(path: &Path) -> Result<Vec<MonitorRow>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut rows = Vec::new();
    for (number, line) in text.lines().enumerate().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() < 4 {
            return Err(format!("{} line {}: too few fields", path.display(), number + 1));
        }
        let queues = (3..fields.len() - 1).map(|i| field(&fields, i, path, number + 1)).collect::<Result<_, _>>()?;
        rows.push(MonitorRow {
            wall_s: field(&fields, 0, path, number + 1)?,
            sim_s: field(&fields, 1, path, number + 1)?,
            lag_ms: field(&fields, 2, path, number + 1)?,
            queues,
            socket_drops: field(&fields, fields.len() - 1, path, number + 1)?,
        });
    }
    Ok(rows)
}

/// Reads `ns3-summary.json`.
pub fn read_summary(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_rows_parse_every_column() {
        let dir = std::env::temp_dir().join(format!("flowshare-testbed-series-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("series.csv");
        std::fs::write(
            &path,
            "wall_s,sim_s,link,direction,protocol,source,source_port,destination,destination_port,bytes,packets,queue_drops,link_drops,loss_events\n\
             1700000000.1000,0.1000,1,d,17,198.19.0.100,22000,198.18.1.100,40000,15000,10,2,1,1\n",
        )
        .unwrap();
        let rows = read_series(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!((row.link, row.direction, row.protocol), (1, 'd', 17));
        assert_eq!((row.source_port, row.destination_port), (22000, 40000));
        assert_eq!((row.bytes, row.packets, row.queue_drops, row.link_drops, row.loss_events), (15000, 10, 2, 1, 1));
    }

    #[test]
    fn a_malformed_series_row_names_the_line() {
        let dir = std::env::temp_dir().join(format!("flowshare-testbed-bad-series-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("series.csv");
        std::fs::write(&path, "header\n1,2,x\n").unwrap();
        let error = read_series(&path).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(error.contains("line 2"), "{error}");
    }
}
