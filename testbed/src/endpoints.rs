//! The real endpoints of each flow: `flowshare serve` / `flowshare get`
//! for QUIC flows (the server sends), iperf3 for Linux TCP flows (the
//! sender runs in the server namespace, the receiver in the client
//! namespace, so data always flows server to client), and nothing for CBR,
//! which ns-3 makes itself.
//!
//! Goodput is what the receiving application got: iperf3's receiver
//! intervals for TCP, and for QUIC the size of the files `flowshare get`
//! writes, sampled every bin.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use std::time::Instant;

use serde_json::Value;

use crate::netns;
use crate::netns::Topology;
use crate::process::ProcessId;
use crate::process::Processes;
use crate::scenario::FlowKind;
use crate::scenario::FlowPlan;

/// Size of the file bulk QUIC flows download: sparse, never read to the end.
const BULK_FILE_BYTES: u64 = 1 << 40;

/// Where a run keeps its endpoint files.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Logs of every process.
    pub logs: PathBuf,
    /// qlog files, one directory per flow and side; None when the run
    /// keeps none (`--no-qlog`, see [`crate::run::RunOptions::qlog`]).
    pub qlog: Option<PathBuf>,
    /// Files the QUIC servers serve (sparse).
    pub root: PathBuf,
    /// Certificate and key.
    pub certs: PathBuf,
    /// What the QUIC clients download (deleted after the run).
    pub downloads: PathBuf,
    /// iperf3 JSON reports.
    pub iperf: PathBuf,
}

impl Layout {
    /// The layout under `dir`, created; with a qlog directory if `qlog`.
    ///
    /// What an earlier run in `dir` left in the directories whose files add
    /// up instead of being replaced is removed first: iperf3 appends to its
    /// `--logfile`, and qlogs and downloads are named per connection, so a
    /// run repeated in the same directory (an interrupted campaign's
    /// `--resume`) would read the killed run's report before its own.
    pub fn create(dir: &Path, qlog: bool) -> Result<Layout, String> {
        let layout = Layout {
            logs: dir.join("logs"),
            qlog: qlog.then(|| dir.join("qlog")),
            root: dir.join("www"),
            certs: dir.join("certs"),
            downloads: dir.join("downloads"),
            iperf: dir.join("iperf3"),
        };
        let any_qlog = dir.join("qlog");
        for stale in [&any_qlog, &layout.downloads, &layout.iperf] {
            match std::fs::remove_dir_all(stale) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(format!("cannot remove {} of an earlier run: {e}", stale.display()));
                }
                _ => {}
            }
        }
        let always = [&layout.logs, &layout.root, &layout.certs, &layout.downloads, &layout.iperf];
        for path in always.into_iter().chain(&layout.qlog) {
            std::fs::create_dir_all(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        }
        Ok(layout)
    }

    /// The qlog directory of flow `flow`'s `side` (server or client),
    /// created; None when the run keeps no qlog.
    pub fn qlog_dir(&self, flow: usize, side: &str) -> Result<Option<PathBuf>, String> {
        let Some(qlog) = &self.qlog else { return Ok(None) };
        let dir = qlog.join(format!("flow-{flow}-{side}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Some(dir))
    }

    /// Where the `flowshare get` of `flow` writes.
    pub fn download_dir(&self, flow: usize) -> PathBuf {
        self.downloads.join(format!("flow-{flow}"))
    }

    /// Bytes the QUIC clients of `flow` have written so far.
    pub fn downloaded_bytes(&self, flow: &FlowPlan) -> u64 {
        std::fs::read_dir(self.download_dir(flow.id))
            .into_iter()
            .flat_map(|entries| entries.filter_map(Result::ok))
            .filter_map(|entry| entry.metadata().ok())
            .map(|metadata| metadata.len())
            .sum()
    }

    /// What the iperf3 receiver of `flow` reported.
    pub fn tcp_goodput(&self, flow: &FlowPlan) -> Result<ReceiverReport, String> {
        let path = self.iperf.join(format!("flow-{}-receiver.json", flow.id));
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let report: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(error) = report.get("error").and_then(Value::as_str) {
            return Err(format!("iperf3 receiver of flow {}: {error}", flow.id));
        }
        let mut cumulative = 0u64;
        let mut samples = vec![(0.0, 0)];
        for interval in report.get("intervals").and_then(Value::as_array).into_iter().flatten() {
            let sum = &interval["sum"];
            let (Some(end), Some(bytes)) = (sum["end"].as_f64(), sum["bytes"].as_u64()) else { continue };
            cumulative += bytes;
            samples.push((end, cumulative));
        }
        let completion_s = flow.bytes.and_then(|_| report["end"]["sum_received"]["seconds"].as_f64());
        Ok(ReceiverReport { samples, completion_s })
    }

    /// The congestion control the iperf3 sender of `flow` reports it used.
    pub fn tcp_congestion(&self, flow: &FlowPlan) -> Result<String, String> {
        let path = self.iperf.join(format!("flow-{}-sender.json", flow.id));
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let report: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        report["end"]["sender_tcp_congestion"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("{} does not say which congestion control the sender used", path.display()))
    }

    /// Removes the downloaded files.
    pub fn remove_downloads(&self) {
        let _ = std::fs::remove_dir_all(&self.downloads);
    }
}

/// What an iperf3 receiver reported.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceiverReport {
    /// (seconds since the receiver's test start, cumulative bytes).
    pub samples: Vec<(f64, u64)>,
    /// How long a finite transfer took, seconds.
    pub completion_s: Option<f64>,
}

/// The processes of one flow.
#[derive(Debug, Default)]
pub struct FlowProcesses {
    /// Started before the run's origin (QUIC server, iperf3 receiver).
    pub server: Option<ProcessId>,
    /// Started at the flow's start (QUIC clients, iperf3 sender).
    pub clients: Vec<ProcessId>,
    /// When the clients were started, seconds after the origin.
    pub started_s: Option<f64>,
    /// When the last client exited by itself or was stopped, seconds after
    /// the origin.
    pub finished_s: Option<f64>,
}

/// Starts and stops the endpoints of a run.
pub struct Endpoints<'a> {
    topology: &'a Topology,
    layout: Layout,
    flowshare: Option<PathBuf>,
    /// The QUIC clients acknowledge every this many datagrams (the
    /// scenario's `ack_every`); Linux TCP receivers as the kernel does.
    ack_every: u32,
    /// The QUIC servers' pacing slack, µs (the scenario's
    /// `quic_pacing_slack_us`); none: `flowshare serve`'s default.
    pacing_slack_us: Option<u32>,
}

/// The file subflow `subflow` of `flow` downloads: one per subflow, since
/// `flowshare get` names downloads after the URL.
fn file_name(flow: &FlowPlan, subflow: usize) -> String {
    match flow.bytes {
        Some(bytes) => format!("transfer-{bytes}-{subflow}"),
        None => format!("bulk-{subflow}"),
    }
}

impl<'a> Endpoints<'a> {
    /// Endpoints in `topology`; `flowshare` is the binary that provides
    /// `serve`, `get` and `cert` (needed only with QUIC flows).
    pub fn new(
        topology: &'a Topology,
        layout: Layout,
        flowshare: Option<PathBuf>,
        ack_every: u32,
        pacing_slack_us: Option<u32>,
    ) -> Endpoints<'a> {
        Endpoints { topology, layout, flowshare, ack_every, pacing_slack_us }
    }

    fn flowshare(&self) -> Result<&Path, String> {
        self.flowshare.as_deref().ok_or_else(|| "QUIC flows need the flowshare binary".to_string())
    }

    /// Makes the certificate and the files the QUIC servers serve.
    pub fn prepare(&self, flows: &[FlowPlan]) -> Result<(), String> {
        if !flows.iter().any(|f| matches!(f.kind, FlowKind::Quic { .. })) {
            return Ok(());
        }
        let output = Command::new(self.flowshare()?)
            .args(["cert", "--out"])
            .arg(&self.layout.certs)
            .output()
            .map_err(|e| format!("cannot run flowshare cert: {e}"))?;
        if !output.status.success() {
            return Err(format!("flowshare cert failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
        }
        for flow in flows {
            for subflow in 0..flow.subflows.len() {
                let path = self.layout.root.join(file_name(flow, subflow));
                let file =
                    std::fs::File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
                // Sparse: reads as zeros without using disk.
                file.set_len(flow.bytes.unwrap_or(BULK_FILE_BYTES))
                    .map_err(|e| format!("cannot size {}: {e}", path.display()))?;
            }
        }
        Ok(())
    }

    /// Starts what must listen before the run's origin.
    pub fn start_server(&self, flow: &FlowPlan, processes: &mut Processes) -> Result<Option<ProcessId>, String> {
        let log = self.layout.logs.join(format!("flow-{}-server.log", flow.id));
        match &flow.kind {
            FlowKind::Quic { spec, port } => {
                let mut command = self.topology.command(&self.topology.server, &self.flowshare()?.to_string_lossy());
                command
                    .arg("serve")
                    .arg("--listen")
                    .arg(format!("{}:{port}", netns::SERVER_ADDRESS))
                    .arg("--root")
                    .arg(&self.layout.root)
                    .arg("--cert")
                    .arg(self.layout.certs.join("cert.pem"))
                    .arg("--key")
                    .arg(self.layout.certs.join("key.pem"))
                    .arg("--cc")
                    .arg(spec.to_string())
                    .arg("--stats");
                if let Some(slack) = self.pacing_slack_us {
                    command.arg("--pacing-slack").arg(format!("{slack}us"));
                }
                if let Some(qlog) = self.layout.qlog_dir(flow.id, "server")? {
                    command.arg("--qlog-dir").arg(qlog);
                }
                processes.spawn(&format!("flow {} server", flow.id), command, &log).map(Some)
            }
            FlowKind::Tcp { port, .. } => {
                let report = self.layout.iperf.join(format!("flow-{}-receiver.json", flow.id));
                let mut command = self.topology.command(&self.topology.client, "iperf3");
                command
                    .args(["-s", "-1", "-J", "-i", "0.1", "-p", &port.to_string(), "-B"])
                    .arg(&flow.subflows[0].client_address)
                    .arg("--logfile")
                    .arg(&report);
                processes.spawn(&format!("flow {} iperf3 receiver", flow.id), command, &log).map(Some)
            }
            FlowKind::Cbr { .. } => Ok(None),
        }
    }

    /// Waits until every server listens.
    pub fn wait_listening(&self, flows: &[FlowPlan], limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        for flow in flows {
            let (namespace, option, port) = match flow.kind {
                FlowKind::Quic { port, .. } => (&self.topology.server, "-Hlun", port),
                FlowKind::Tcp { port, .. } => (&self.topology.client, "-Hltn", port),
                FlowKind::Cbr { .. } => continue,
            };
            loop {
                let output = self
                    .topology
                    .command(namespace, "ss")
                    .args([option, &format!("sport = :{port}")])
                    .output()
                    .map_err(|e| format!("cannot run ss: {e}"))?;
                if !String::from_utf8_lossy(&output.stdout).trim().is_empty() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("flow {}: nothing listens on port {port} after {limit:?}", flow.id));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    /// Starts the sending side of `flow`; `active_s` is how long a bulk
    /// flow runs.
    pub fn start_clients(
        &self,
        flow: &FlowPlan,
        active_s: f64,
        processes: &mut Processes,
    ) -> Result<Vec<ProcessId>, String> {
        match &flow.kind {
            FlowKind::Quic { port, .. } => {
                // One connection per subflow, each from its own client
                // address (which selects its link), in one client process
                // so that an MCompound group's subflows start together.
                let out = self.layout.download_dir(flow.id);
                std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
                let mut command = self.topology.command(&self.topology.client, &self.flowshare()?.to_string_lossy());
                command.arg("get");
                for subflow in 0..flow.subflows.len() {
                    command.arg(format!("https://{}:{port}/{}", netns::SERVER_ADDRESS, file_name(flow, subflow)));
                }
                let binds: Vec<String> = flow.subflows.iter().map(|s| format!("{}:0", s.client_address)).collect();
                command
                    .arg("--out")
                    .arg(&out)
                    .arg("--insecure")
                    .arg("--stats")
                    .arg("--connections")
                    .arg(flow.subflows.len().to_string())
                    .arg("--bind")
                    .arg(binds.join(","))
                    .arg("--timeout")
                    .arg(format!("{}s", active_s.ceil() as u64 + 60))
                    .arg("--ack-every")
                    .arg(self.ack_every.to_string());
                if let Some(qlog) = self.layout.qlog_dir(flow.id, "client")? {
                    command.arg("--qlog-dir").arg(qlog);
                }
                let log = self.layout.logs.join(format!("flow-{}-client.log", flow.id));
                Ok(vec![processes.spawn(&format!("flow {} client", flow.id), command, &log)?])
            }
            FlowKind::Tcp { cc, port } => {
                let report = self.layout.iperf.join(format!("flow-{}-sender.json", flow.id));
                let mut command = self.topology.command(&self.topology.server, "iperf3");
                command
                    .args(["-c", &flow.subflows[0].client_address, "-p", &port.to_string(), "-C", cc, "-J"])
                    .arg("--logfile")
                    .arg(&report);
                match flow.bytes {
                    Some(bytes) => command.args(["-n", &bytes.to_string()]),
                    // iperf3 takes whole seconds; the plan starts TCP flows
                    // so that their active time is one.
                    None => command.args(["-t", &(active_s.round().max(1.0) as u64).to_string()]),
                };
                let log = self.layout.logs.join(format!("flow-{}-sender.log", flow.id));
                Ok(vec![processes.spawn(&format!("flow {} iperf3 sender", flow.id), command, &log)?])
            }
            FlowKind::Cbr { .. } => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_keeps_qlog_only_when_asked() {
        let dir = std::env::temp_dir().join(format!("flowshare-testbed-layout-{}", std::process::id()));
        let without = Layout::create(&dir.join("without"), false).unwrap();
        assert_eq!(without.qlog_dir(0, "server").unwrap(), None);
        assert!(!dir.join("without/qlog").exists());
        assert!(dir.join("without/logs").is_dir());

        let with = Layout::create(&dir.join("with"), true).unwrap();
        let server = with.qlog_dir(3, "server").unwrap().expect("a qlog directory");
        assert_eq!(server, dir.join("with/qlog/flow-3-server"));
        assert!(server.is_dir());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An interrupted run's iperf3 report, qlog and download must not be
    /// read as the repeated run's: iperf3 would append its report after
    /// the old one, which is the one a JSON reader takes.
    #[test]
    fn a_run_repeated_in_its_directory_starts_without_the_earlier_run_s_reports() {
        let dir = std::env::temp_dir().join(format!("flowshare-testbed-layout-again-{}", std::process::id()));
        let first = Layout::create(&dir, true).unwrap();
        let report = first.iperf.join("flow-1-receiver.json");
        std::fs::write(&report, "{}").unwrap();
        let qlog = first.qlog_dir(0, "server").unwrap().expect("a qlog directory").join("old.sqlog");
        std::fs::write(&qlog, "").unwrap();
        std::fs::write(first.download_dir(0), "").unwrap();
        std::fs::write(first.logs.join("flow-0-server.log"), "").unwrap();

        let again = Layout::create(&dir, false).unwrap();
        assert!(!report.exists() && again.iperf.is_dir());
        assert!(!dir.join("qlog").exists());
        assert!(!again.download_dir(0).exists() && again.downloads.is_dir());
        assert!(again.logs.join("flow-0-server.log").exists(), "logs are replaced file by file, not removed");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
