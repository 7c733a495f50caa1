//! What each QUIC sender's congestion window held during a run, from the
//! servers' qlogs (`flowshare testbed windows DIR`).
//!
//! A weighted connection's share is its window over its peers'. PA-MulTCP's
//! window is a probe loop meant to hold one flowshare (or K of them, each
//! one, with `probes=K`) plus an adjusting loop held at `N - K` times the
//! probes' mean, so where its weight goes astray splits in two questions
//! this answers: does a probe hold what a standard flow holds (the probes'
//! mean window over the standard QUIC flows' mean), and does the adjusting
//! loop hold `N - K` probes. Beside each window, the packets
//! its sender declared lost, where the probe's show whether it meets the
//! queue as a standard flow does.
//!
//! Windows are averaged over time after the warm-up: each record of
//! `quic:recovery_metrics_updated` (`congestion_window`, every QUIC sender)
//! and `flowshare:controller_updated` (`probe_window`, `adjusting_window`,
//! `probe_average`) holds until the next. Linux TCP senders write no qlog,
//! so against them a probe is compared by its rate: the probes' part of the
//! connection's packets times the connection's throughput over K, over the
//! standard flows' mean throughput (`summary.json`), and the adjusting loop
//! by its packets over `N - K` times a probe's.

use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

use flowshare_lab::metrics::mean_and_deviation;
use flowshare_lab::report::Table;

use crate::scenario::TestbedScenario;

/// What begins every record of a JSON-SEQ file (RFC 7464).
const RECORD_SEPARATOR: char = '\u{1e}';

/// A value's average over time from `from` on, each value holding until
/// the next.
#[derive(Clone, Debug)]
struct TimeAverage {
    from: f64,
    /// Since when, and the value then.
    current: Option<(f64, f64)>,
    weighted: f64,
    span: f64,
}

impl TimeAverage {
    fn new(from: f64) -> TimeAverage {
        TimeAverage { from, current: None, weighted: 0.0, span: 0.0 }
    }

    /// Counts the current value up to `time`.
    fn advance(&mut self, time: f64) {
        if let Some((since, value)) = self.current {
            let start = since.max(self.from);
            if time > start {
                self.weighted += value * (time - start);
                self.span += time - start;
            }
            self.current = Some((time.max(since), value));
        }
    }

    fn set(&mut self, time: f64, value: f64) {
        self.advance(time);
        self.current = Some((time, value));
    }

    fn mean(&self) -> Option<f64> {
        (self.span > 0.0).then(|| self.weighted / self.span)
    }
}

/// A counter's growth from `from` on: its last value less the last one
/// before `from` (zero when none came before).
#[derive(Clone, Copy, Debug)]
struct CounterGrowth {
    from: f64,
    before: u64,
    last: u64,
}

impl CounterGrowth {
    fn new(from: f64) -> CounterGrowth {
        CounterGrowth { from, before: 0, last: 0 }
    }

    fn record(&mut self, time: f64, value: u64) {
        if time < self.from {
            self.before = value;
        }
        self.last = value;
    }

    fn growth(&self) -> u64 {
        self.last.saturating_sub(self.before)
    }
}

/// A PA-MulTCP loop after the warm-up.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopWindow {
    /// Mean window, bytes.
    pub window: f64,
    /// Packets it sent.
    pub packets_sent: u64,
    /// Of those, lost.
    pub packets_lost: u64,
}

/// One QUIC connection's sender after the warm-up.
#[derive(Clone, Debug, PartialEq)]
pub struct SenderWindows {
    /// Mean congestion window, bytes (quiche's, which the flowshare
    /// controllers set).
    pub window: f64,
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets the sender declared lost.
    pub packets_lost: u64,
    /// Flowshares its controller reported (`None`: quiche's own, one).
    pub weight: Option<f64>,
    /// PA-MulTCP's probe loops: their mean window, all their packets.
    pub probe: Option<LoopWindow>,
    /// How many probe loops (K; 1 unless the snapshot says).
    pub probes: u64,
    /// PA-MulTCP's adjusting loop's mean window, bytes.
    pub adjusting_window: Option<f64>,
    /// The mean of the probes' average window that PA-MulTCP's measured
    /// cap scales (`probe_average`: over its last loss epochs or smoothed
    /// over time, the spec's `average`), bytes: over the probe's mean
    /// window it says how far the cap's view of a flowshare falls from the
    /// probe's.
    pub probe_average: Option<f64>,
}

impl SenderWindows {
    /// The adjusting loop's packets over `N - K` probes' (a probe's: the
    /// probes' packets over K); `None` without probe packets or at
    /// `N <= K`.
    pub fn adjusting_packets_of_target(&self) -> Option<f64> {
        let probe = self.probe.as_ref().filter(|probe| probe.packets_sent > 0)?;
        let weight = self.weight.unwrap_or(1.0);
        let probes = self.probes.max(1) as f64;
        let adjusting = self.packets_sent.checked_sub(probe.packets_sent)?;
        (weight > probes).then(|| adjusting as f64 / ((weight - probes) * probe.packets_sent as f64 / probes))
    }
}

/// The time (ms) of a qlog record (JSON-SEQ: the record separator taken
/// off), read without parsing the rest: the server writes `{"time":T,...`
/// first.
fn record_time(line: &str) -> Option<f64> {
    let rest = line.strip_prefix("{\"time\":")?;
    rest[..rest.find(',')?].parse().ok()
}

/// The sender of one server qlog (JSON-SEQ, times in ms from the
/// connection's start), from `warmup_ms` on. Records that are not JSON (a
/// file cut short when its server was stopped) are skipped; `None` when no
/// congestion window came after the warm-up.
pub fn analyse(qlog: impl BufRead, warmup_ms: f64) -> Result<Option<SenderWindows>, String> {
    let mut window = TimeAverage::new(warmup_ms);
    let mut probe = TimeAverage::new(warmup_ms);
    let mut adjusting = TimeAverage::new(warmup_ms);
    let mut probe_average = TimeAverage::new(warmup_ms);
    let mut lost = CounterGrowth::new(warmup_ms);
    let mut probe_sent = CounterGrowth::new(warmup_ms);
    let mut probe_lost = CounterGrowth::new(warmup_ms);
    let mut packets_sent = 0;
    let mut weight = None;
    let mut probes = 1;
    let mut end = warmup_ms;
    for line in qlog.lines() {
        let line = line.map_err(|e| format!("cannot read the qlog: {e}"))?;
        let line = line.trim_start_matches(RECORD_SEPARATOR);
        let Some(time) = record_time(line) else { continue };
        end = end.max(time);
        if line.contains("\"name\":\"quic:packet_sent\"") {
            packets_sent += u64::from(time >= warmup_ms);
            continue;
        }
        let recovery = line.contains("\"name\":\"quic:recovery_metrics_updated\"");
        let controller = line.contains("\"name\":\"flowshare:controller_updated\"");
        if !recovery && !controller {
            continue;
        }
        let Ok(record) = serde_json::from_str::<Value>(line) else { continue };
        let data = &record["data"];
        if recovery {
            if let Some(value) = data["congestion_window"].as_f64() {
                window.set(time, value);
            }
            if let Some(total) = data["cf_lost_packets"]["total"].as_u64() {
                lost.record(time, total);
            }
            continue;
        }
        weight = data["weight"].as_f64().or(weight);
        probes = data["probes"].as_u64().unwrap_or(probes);
        if let Some(value) = data["probe_window"].as_f64() {
            probe.set(time, value);
        }
        if let Some(value) = data["adjusting_window"].as_f64() {
            adjusting.set(time, value);
        }
        if let Some(value) = data["probe_average"].as_f64() {
            probe_average.set(time, value);
        }
        if let Some(value) = data["probe_packets_sent"].as_u64() {
            probe_sent.record(time, value);
        }
        if let Some(value) = data["probe_packets_lost"].as_u64() {
            probe_lost.record(time, value);
        }
    }
    for average in [&mut window, &mut probe, &mut adjusting, &mut probe_average] {
        average.advance(end);
    }
    let Some(mean_window) = window.mean() else { return Ok(None) };
    Ok(Some(SenderWindows {
        window: mean_window,
        packets_sent,
        packets_lost: lost.growth(),
        weight,
        probe: probe.mean().map(|window| LoopWindow {
            window,
            packets_sent: probe_sent.growth(),
            packets_lost: probe_lost.growth(),
        }),
        probes,
        adjusting_window: adjusting.mean(),
        probe_average: probe_average.mean(),
    }))
}

/// A QUIC connection of the run: its summary's facts and its sender.
struct Connection {
    id: u64,
    role: String,
    /// The controller's spec.
    spec: String,
    sender: SenderWindows,
    /// Bits per second after the warm-up (`summary.json`).
    throughput: Option<f64>,
}

/// The mean, `None` for no values.
fn mean(values: &[f64]) -> Option<f64> {
    Some(mean_and_deviation(values).0).filter(|mean| !mean.is_nan())
}

/// A run directory's QUIC senders, from its summary and server qlogs.
pub(crate) struct Run {
    /// The run's `summary.json`.
    pub summary: Value,
    /// Seconds of warm-up the run discarded.
    warmup_s: f64,
    senders: Vec<Connection>,
    /// The standard flows' mean throughput, bits per second.
    standard_rate: Option<f64>,
}

impl Run {
    /// Reads the run in `dir`: one error when it is not a run's directory
    /// or has no qlogs.
    pub fn read(dir: &Path) -> Result<Run, String> {
        Run::read_role(dir, None)
    }

    /// Reads the run in `dir`, with `Some(role)` the qlogs of that role's
    /// QUIC flows only (each is tens of MB).
    pub fn read_role(dir: &Path, role: Option<&str>) -> Result<Run, String> {
        let summary_path = dir.join("summary.json");
        let summary: Value = std::fs::read_to_string(&summary_path)
            .map_err(|e| format!("cannot read {}: {e} (a run's directory)", summary_path.display()))
            .and_then(|text| {
                serde_json::from_str(&text).map_err(|e| format!("{}: not a run's summary: {e}", summary_path.display()))
            })?;
        let warmup_s = TestbedScenario::warmup_of_run(dir)?;
        let flows = summary["flows"].as_array().ok_or(format!("{}: no flows", summary_path.display()))?;
        // Standard flows' mean throughput (QUIC and Linux TCP alike): a
        // probe's rate is compared with it where windows cannot be (no qlog
        // from TCP).
        let standard_rates: Vec<f64> = flows
            .iter()
            .filter(|flow| flow["role"] == "standard")
            .filter_map(|flow| flow["throughput_bps"].as_f64())
            .collect();
        let standard_rate = mean(&standard_rates);
        let mut senders = Vec::new();
        let wanted = |flow: &&Value| flow["transport"] == "quic" && role.is_none_or(|role| flow["role"] == role);
        for flow in flows.iter().filter(wanted) {
            let id = flow["id"].as_u64().ok_or(format!("{}: a flow without an id", summary_path.display()))?;
            let qlog_dir = dir.join("qlog").join(format!("flow-{id}-server"));
            let mut files: Vec<_> = std::fs::read_dir(&qlog_dir)
                .map_err(|e| format!("cannot read {}: {e} (runs with --no-qlog write none)", qlog_dir.display()))?
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|path| path.extension().is_some_and(|ext| ext == "sqlog"))
                .collect();
            files.sort();
            // The qlog's clock starts with the connection, the warm-up with the run.
            let warmup_ms = (warmup_s - flow["start_s"].as_f64().unwrap_or(0.0)).max(0.0) * 1e3;
            for file in files {
                let reader = std::fs::File::open(&file)
                    .map(std::io::BufReader::new)
                    .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
                if let Some(sender) = analyse(reader, warmup_ms).map_err(|e| format!("{}: {e}", file.display()))? {
                    senders.push(Connection {
                        id,
                        role: flow["role"].as_str().unwrap_or("-").to_string(),
                        spec: flow["cc"].as_str().unwrap_or("-").to_string(),
                        sender,
                        throughput: flow["throughput_bps"].as_f64(),
                    });
                }
            }
        }
        Ok(Run { summary, warmup_s, senders, standard_rate })
    }

    /// The weighted connection's sender (the first, where a run has
    /// several).
    pub fn weighted(&self) -> Option<&SenderWindows> {
        self.senders.iter().find(|connection| connection.role == "weighted").map(|connection| &connection.sender)
    }
}

/// `flowshare testbed windows DIR`: the table of a run directory's qlogs.
pub fn report(dir: &Path) -> Result<String, String> {
    let Run { warmup_s, senders, standard_rate, .. } = Run::read(dir)?;
    let standard: Vec<f64> = senders
        .iter()
        .filter(|connection| connection.role == "standard")
        .map(|connection| connection.sender.window)
        .collect();
    let standard_mean = mean(&standard);
    let percent = |lost: u64, sent: u64| match sent {
        0 => "-".to_string(),
        _ => format!("{:.2}", 100.0 * lost as f64 / sent as f64),
    };
    let of_standard = |window: f64| standard_mean.map_or("-".to_string(), |mean| format!("{:.3}", window / mean));
    let mut table = Table::new(&[
        "flow",
        "role",
        "controller",
        "window KB",
        "per flowshare, of a standard flow's",
        "lost %",
        "probe KB",
        "probe, of a standard flow's",
        "adjusting over N - K probes",
        "cap's probe average, of the probe's",
        "probe lost %",
        "probe's rate, of a standard flow's",
        "adjusting's packets over N - K probes'",
    ]);
    for Connection { id, role, spec, sender, throughput } in &senders {
        let weight = sender.weight.unwrap_or(1.0);
        let probes = sender.probes.max(1) as f64;
        // The adjusting loop's window or packets over N - K probes'.
        let of_adjusting_target = |adjusting: f64, probe: f64| {
            if weight > probes {
                format!("{:.3}", adjusting / ((weight - probes) * probe))
            } else {
                "-".to_string()
            }
        };
        let mut row = vec![
            id.to_string(),
            role.clone(),
            spec.clone(),
            format!("{:.1}", sender.window / 1e3),
            of_standard(sender.window / weight),
            percent(sender.packets_lost, sender.packets_sent),
        ];
        match &sender.probe {
            Some(probe) => row.extend([
                format!("{:.1}", probe.window / 1e3),
                of_standard(probe.window),
                sender
                    .adjusting_window
                    .map_or("-".to_string(), |adjusting| of_adjusting_target(adjusting, probe.window)),
                sender
                    .probe_average
                    .filter(|_| probe.window > 0.0)
                    .map_or("-".to_string(), |average| format!("{:.3}", average / probe.window)),
                percent(probe.packets_lost, probe.packets_sent),
                // A probe's part of the connection's packets, of its throughput.
                match (throughput, standard_rate) {
                    (Some(throughput), Some(standard)) if sender.packets_sent > 0 && standard > 0.0 => {
                        let part = probe.packets_sent as f64 / sender.packets_sent as f64 / probes;
                        format!("{:.3}", part * throughput / standard)
                    }
                    _ => "-".to_string(),
                },
                sender.adjusting_packets_of_target().map_or("-".to_string(), |part| format!("{part:.3}")),
            ]),
            None => row.extend(std::iter::repeat_n("-".to_string(), 7)),
        }
        table.row(row);
    }
    let mut out = format!(
        "{}: QUIC senders' windows averaged over time from {warmup_s} s on (server qlogs); lost: as the sender declared them{}\n",
        dir.display(),
        if standard_mean.is_none() {
            "; no standard flow writes a qlog (Linux TCP), so only rates are compared"
        } else {
            ""
        }
    );
    out.push_str(&table.render());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_averaged_over_time_and_counters_taken_from_the_warm_up() {
        // Warm-up until 100 ms. The window is 10,000 bytes until 150 ms and
        // 20,000 after, up to the last record at 250 ms: 100 ms at 20,000
        // and 50 at 10,000 after the warm-up. The probe holds 4,000, the
        // adjusting loop 12,000 (three probes at N = 4). Losses: 5 before
        // the warm-up, 9 at the end; packets sent: 2 before, 4 after.
        let qlog = [
            r#"{"file_schema":"urn:ietf:params:qlog:file:sequential","trace":{}}"#,
            r#"{"time":0.0,"name":"quic:recovery_metrics_updated","data":{"congestion_window":10000,"cf_lost_packets":{"total":0,"delta":0}}}"#,
            r#"{"time":10.0,"name":"quic:packet_sent","data":{}}"#,
            r#"{"time":20.0,"name":"flowshare:controller_updated","data":{"weight":4.0,"probe_window":4000,"adjusting_window":12000,"probe_average":3600,"probe_packets_sent":10,"probe_packets_lost":1}}"#,
            r#"{"time":50.0,"name":"quic:packet_sent","data":{}}"#,
            r#"{"time":90.0,"name":"quic:recovery_metrics_updated","data":{"cf_lost_packets":{"total":5,"delta":5}}}"#,
            r#"{"time":120.0,"name":"quic:packet_sent","data":{}}"#,
            r#"{"time":150.0,"name":"quic:recovery_metrics_updated","data":{"congestion_window":20000}}"#,
            r#"{"time":160.0,"name":"quic:packet_sent","data":{}}"#,
            r#"{"time":170.0,"name":"quic:packet_sent","data":{}}"#,
            r#"{"time":200.0,"name":"flowshare:controller_updated","data":{"probe_packets_sent":30,"probe_packets_lost":4}}"#,
            r#"{"time":240.0,"name":"quic:packet_sent","data":{}}"#,
            r#"{"time":250.0,"name":"quic:recovery_metrics_updated","data":{"cf_lost_packets":{"total":9,"delta":4}}}"#,
            r#"{"time":250.0,"name":"quic:recovery_metrics_upd"#,
        ]
        .map(|record| format!("{RECORD_SEPARATOR}{record}"))
        .join("\n");
        let sender = analyse(qlog.as_bytes(), 100.0).unwrap().expect("a window after the warm-up");
        assert!((sender.window - (10_000.0 * 50.0 + 20_000.0 * 100.0) / 150.0).abs() < 1e-6, "{sender:?}");
        assert_eq!((sender.packets_sent, sender.packets_lost, sender.weight), (4, 4, Some(4.0)));
        assert_eq!(sender.probe, Some(LoopWindow { window: 4000.0, packets_sent: 20, packets_lost: 3 }));
        assert_eq!(sender.adjusting_window, Some(12_000.0));
        // The cap's view of the probe: 0.9 of its window here.
        assert_eq!(sender.probe_average, Some(3600.0));
        // A quiche sender has no loops; nothing after the warm-up, no window.
        let quiche = analyse(qlog.lines().take(3).collect::<Vec<_>>().join("\n").as_bytes(), 0.0).unwrap();
        assert_eq!(quiche.map(|sender| (sender.window, sender.weight, sender.probe)), Some((10_000.0, None, None)));
        assert_eq!(analyse(qlog.as_bytes(), 1e6).unwrap(), None);
    }

    /// The report's last two cells (a probe's rate, the adjusting loop's
    /// packets) for a run of one PA-MulTCP connection (`spec`, 8 Mbit/s)
    /// beside Linux TCP flows at `tcp_rates`: its controller first reports
    /// `state` (JSON fields), then 10 packets sent, `probe_packets` of them
    /// the probes'.
    fn rates_of_a_run(name: &str, spec: &str, tcp_rates: &[f64], state: &str, probe_packets: u64) -> Vec<String> {
        let dir = std::env::temp_dir().join(format!("flowshare-testbed-{name}-{}", std::process::id()));
        let qlog_dir = dir.join("qlog/flow-0-server");
        std::fs::create_dir_all(&qlog_dir).unwrap();
        let mut flows = vec![format!(
            r#"{{"id":0,"transport":"quic","role":"weighted","cc":"{spec}","throughput_bps":8e6,"start_s":0.0}}"#
        )];
        flows.extend(tcp_rates.iter().enumerate().map(|(i, rate)| {
            format!(
                r#"{{"id":{},"transport":"tcp","role":"standard","cc":"cubic","throughput_bps":{rate},"start_s":1.0}}"#,
                i + 1
            )
        }));
        std::fs::write(dir.join("summary.json"), format!(r#"{{"flows":[{}]}}"#, flows.join(","))).unwrap();
        let mut records = vec![
            r#"{"time":0.0,"name":"quic:recovery_metrics_updated","data":{"congestion_window":10000}}"#.to_string(),
            format!(
                r#"{{"time":0.0,"name":"flowshare:controller_updated","data":{{{state},"probe_packets_sent":0,"probe_packets_lost":0}}}}"#
            ),
        ];
        records.extend((1..=10).map(|t| format!(r#"{{"time":{t}.0,"name":"quic:packet_sent","data":{{}}}}"#)));
        records.push(format!(
            r#"{{"time":11.0,"name":"flowshare:controller_updated","data":{{"probe_packets_sent":{probe_packets},"probe_packets_lost":0}}}}"#
        ));
        let qlog: String = records.iter().map(|record| format!("{RECORD_SEPARATOR}{record}\n")).collect();
        std::fs::write(qlog_dir.join("server-x.sqlog"), qlog).unwrap();
        // The directory goes before the report is unwrapped, so that a
        // failing report leaves no temporary directory behind.
        let report = report(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        let report = report.unwrap();
        assert!(report.contains("only rates are compared"), "{report}");
        let row = report.lines().find(|line| line.contains(spec)).expect("the connection's row");
        let cells: Vec<&str> = row.split_whitespace().collect();
        cells[cells.len() - 2..].iter().map(|cell| cell.to_string()).collect()
    }

    #[test]
    fn against_linux_tcp_the_probe_is_compared_by_its_rate() {
        // A PA-MulTCP(4) connection at 8 Mbit/s beside two Linux TCP flows
        // at 2 and 4 Mbit/s (mean 3): of its 10 packets after the warm-up
        // the probe sent 2, so its rate is 1.6 Mbit/s, 0.533 of a TCP
        // flow's, and the adjusting loop's 8 packets are 1.333 of 3 probes'.
        let state = r#""weight":4.0,"probe_window":2500,"adjusting_window":7500"#;
        assert_eq!(rates_of_a_run("rates", "pa-multcp:n=4", &[2e6, 4e6], state, 2), ["0.533", "1.333"]);
    }

    #[test]
    fn several_probes_are_compared_one_by_one() {
        // PA-MulTCP(8) with two probes at 8 Mbit/s beside a Linux TCP flow
        // of 2 Mbit/s: of its 10 packets the probes sent 4, so each took
        // 1.6 Mbit/s, 0.8 of a TCP flow's, and the adjusting loop's 6
        // packets are 0.5 of the 6 probes' (2 packets each) it stands for.
        let state = r#""weight":8.0,"probe_window":2500,"probes":2,"adjusting_window":7500"#;
        assert_eq!(rates_of_a_run("probes", "pa-multcp:n=8,probes=2", &[2e6], state, 4), ["0.800", "0.500"]);
    }

    #[test]
    fn a_directory_that_is_not_a_run_is_one_error() {
        let dir = std::env::temp_dir().join(format!("flowshare-testbed-windows-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(report(&dir).unwrap_err().contains("a run's directory"));
        std::fs::write(dir.join("summary.json"), "{").unwrap();
        assert!(report(&dir).unwrap_err().contains("not a run's summary"));
        std::fs::write(dir.join("summary.json"), r#"{"flows":[{"id":0,"transport":"quic","role":"weighted"}]}"#)
            .unwrap();
        assert!(report(&dir).unwrap_err().contains("--no-qlog"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
