//! One testbed run: namespaces up, ns-3 started and checked, endpoints
//! started on the scenario's timeline, everything stopped and torn down
//! (on success, failure and Ctrl-C alike), measurements collected.

use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::io::Write as _;
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;
use std::time::SystemTime;

use flowshare_lab::rng::Rng;

use crate::emulator;
use crate::emulator::Emulator;
use crate::emulator::MonitorRow;
use crate::emulator::SeriesRow;
use crate::endpoints::Endpoints;
use crate::endpoints::FlowProcesses;
use crate::endpoints::Layout;
use crate::netns;
use crate::netns::Topology;
use crate::process::Processes;
use crate::scenario::FlowKind;
use crate::scenario::FlowPlan;
use crate::scenario::Plan;

/// How long ns-3 gets to start and the path to come up.
const STARTUP_LIMIT: Duration = Duration::from_secs(10);
/// How long endpoints get to finish after the run's end.
const END_LIMIT: Duration = Duration::from_secs(3);
/// How often the timeline is checked.
const TICK: Duration = Duration::from_millis(10);
/// Seconds between progress lines when stderr is not a terminal.
const PROGRESS_LOG_EVERY_S: f64 = 10.0;

/// Settings of a run that are not part of the scenario.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The ns-3 program (default: build it with testbed/ns3/build.sh).
    pub ns3: Option<PathBuf>,
    /// ns-3 aborts when it lags real time by more than this (ms); 0: best
    /// effort, measured.
    pub hard_limit_ms: f64,
    /// Keep ns-3's packet traces of the emulated devices in the run's
    /// directory.
    pub pcap: bool,
    /// Have every QUIC endpoint write its qlog into the run's `qlog/`
    /// (the command line's default). The server then writes qlog events
    /// between reading an acknowledgement and sending what it lets out,
    /// time that Linux TCP senders do not spend (testbed/README.md,
    /// "Weight one between stacks").
    pub qlog: bool,
    /// Rewrite one progress line in place when stderr is a terminal (false
    /// when other runs print theirs at the same time).
    pub progress_in_place: bool,
}

/// Everything measured in a run, before it is turned into reports.
#[derive(Clone, Debug)]
pub struct Measurements {
    /// Per-flow, per-link ns-3 rows.
    pub series: Vec<SeriesRow>,
    /// ns-3's lag and queue rows.
    pub monitor: Vec<MonitorRow>,
    /// ns-3's summary.
    pub ns3_summary: serde_json::Value,
    /// The run's origin, seconds since the epoch.
    pub origin_epoch_s: f64,
    /// Per flow: (seconds, cumulative bytes the receiving application got)
    /// on the clock `goodput_clock` says.
    pub goodput: Vec<Vec<(f64, u64)>>,
    /// Per flow: what the goodput samples' times count from.
    pub goodput_clock: Vec<GoodputClock>,
    /// Per flow: completion time of a finite transfer, seconds.
    pub completions: Vec<Option<f64>>,
    /// 1-, 5- and 15-minute load averages before and after the run.
    pub load_before: [f64; 3],
    /// See `load_before`.
    pub load_after: [f64; 3],
    /// How long ns-3 waited for a CPU over the run, read just before it
    /// stopped (`None` where the kernel has no schedstat).
    pub ns3_cpu: Option<SchedStat>,
}

/// A process's CPU time and run-queue wait, from `/proc/PID/schedstat`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SchedStat {
    /// Time on a CPU, ns.
    pub run_ns: u64,
    /// Time runnable but waiting for a CPU, ns.
    pub wait_ns: u64,
    /// Times it was put on a CPU.
    pub slices: u64,
}

impl SchedStat {
    /// Process `pid`'s, if the kernel keeps them.
    pub fn of(pid: u32) -> Option<SchedStat> {
        SchedStat::parse(&std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?)
    }

    fn parse(text: &str) -> Option<SchedStat> {
        let mut fields = text.split_whitespace().map(|field| field.parse::<u64>().ok());
        Some(SchedStat { run_ns: fields.next()??, wait_ns: fields.next()??, slices: fields.next()?? })
    }

    /// Mean wait for a CPU each time the process became runnable, µs: what
    /// concurrent runs or other load add to the emulator's reaction time
    /// (10-20 µs on a quiet two-core machine).
    pub fn wait_per_slice_us(&self) -> f64 {
        self.wait_ns as f64 / self.slices.max(1) as f64 / 1e3
    }
}

/// What goodput sample times count from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoodputClock {
    /// The run's origin.
    Run,
    /// The first data of the flow (iperf3's receiver counts from there,
    /// which can be a SYN timeout after the process started).
    DataStart,
}

/// The 1-, 5- and 15-minute load averages.
pub fn load_average() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut values = text.split_whitespace().map(|v| v.parse().unwrap_or(f64::NAN));
    [values.next().unwrap_or(f64::NAN), values.next().unwrap_or(f64::NAN), values.next().unwrap_or(f64::NAN)]
}

fn epoch_seconds() -> f64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Something the timeline does.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Action {
    Start(usize),
    Stop(usize),
    Cbr(u16, bool),
    Blackhole(usize, bool),
}

/// The timeline of a plan, sorted by time; CBR on/off periods are drawn
/// from the plan's seed. iperf3 senders stop by themselves (`-t`, `-n`).
fn timeline(plan: &Plan) -> Vec<(f64, Action)> {
    let mut rng = Rng::new(plan.seed ^ 0x7e57_bed0);
    let mut events = Vec::new();
    for flow in &plan.flows {
        match flow.kind {
            FlowKind::Cbr { on_off, port, .. } => {
                let mut t = flow.start_s;
                let mut on = true;
                while t < flow.stop_s {
                    events.push((t, Action::Cbr(port, on)));
                    let Some((mean_on, mean_off)) = on_off else { break };
                    t += rng.exponential(if on { mean_on } else { mean_off });
                    on = !on;
                }
                events.push((flow.stop_s, Action::Cbr(port, false)));
            }
            FlowKind::Tcp { .. } => events.push((flow.start_s, Action::Start(flow.id))),
            FlowKind::Quic { .. } => {
                events.push((flow.start_s, Action::Start(flow.id)));
                if flow.bytes.is_none() {
                    events.push((flow.stop_s, Action::Stop(flow.id)));
                }
            }
        }
    }
    for (link, periods) in plan.blackholes.iter().enumerate() {
        for &(start, end) in periods {
            events.push((start, Action::Blackhole(link, true)));
            events.push((end.min(plan.duration_s()), Action::Blackhole(link, false)));
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    events
}

/// Runs `plan`, writing logs and raw measurements into `dir`. Stops early
/// with an error when `interrupted` becomes true.
pub fn run(plan: &Plan, dir: &Path, options: &RunOptions, interrupted: &AtomicBool) -> Result<Measurements, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let ns3 = match &options.ns3 {
        Some(path) => path.clone(),
        None => emulator::build()?,
    };
    // This binary provides `serve`, `get` and `cert`.
    let flowshare = if plan.needs_quic() {
        Some(std::env::current_exe().map_err(|e| format!("cannot find the flowshare binary: {e}"))?)
    } else {
        None
    };
    let layout = Layout::create(dir, options.qlog)?;
    let load_before = load_average();

    // Declared before the processes so that it is dropped after them:
    // children end first, then their namespaces go.
    let topology = Topology::create(&plan.clients_per_link, plan.tcp_pacing)?;
    let mut processes = Processes::default();
    if topology.path_answers(Duration::from_millis(500)) {
        return Err(format!(
            "the client reaches the server without ns-3: namespace {} forwards packets, so the emulation would be bypassed",
            topology.sim
        ));
    }
    let mut emulator = Emulator::start(
        &ns3,
        &topology,
        &mut processes,
        &plan.emulator_setup(options.hard_limit_ms, options.pcap),
        dir,
    )?;
    emulator.wait_ready(&mut processes, STARTUP_LIMIT)?;
    let ready = Instant::now();
    while !topology.path_answers(Duration::from_millis(500)) {
        if ready.elapsed() > STARTUP_LIMIT || !emulator.running(&mut processes) {
            return Err(format!("the path through ns-3 does not come up: {}", emulator.failure(&mut processes)));
        }
    }

    let endpoints =
        Endpoints::new(&topology, layout.clone(), flowshare, plan.setup.ack_every, plan.quic_pacing_slack_us);
    endpoints.prepare(&plan.flows)?;
    let mut flows: Vec<FlowProcesses> = plan.flows.iter().map(|_| FlowProcesses::default()).collect();
    for (flow, state) in plan.flows.iter().zip(&mut flows) {
        state.server = endpoints.start_server(flow, &mut processes)?;
    }
    endpoints.wait_listening(&plan.flows, STARTUP_LIMIT)?;
    for (flow, state) in plan.flows.iter().zip(&flows) {
        if let Some(server) = state.server {
            if processes.exited(server) {
                return Err(format!("flow {}: {}", flow.id, processes.describe_failure(server)));
            }
        }
    }

    let events = timeline(plan);
    let duration = plan.duration_s();
    let bin = plan.setup.bin as f64 * 1e-9;
    let origin = Instant::now();
    let origin_epoch_s = epoch_seconds();
    let mut next_event = 0;
    let mut next_sample = 0.0;
    let mut next_progress = 0.0;
    let progress_on_terminal = options.progress_in_place && std::io::stderr().is_terminal();
    let mut quic_samples: Vec<Vec<(f64, u64)>> = plan.flows.iter().map(|_| vec![(0.0, 0)]).collect();
    loop {
        if interrupted.load(Ordering::Relaxed) {
            return Err("interrupted; the namespaces and processes of the run are removed".into());
        }
        if !emulator.running(&mut processes) {
            return Err(format!("ns-3 stopped during the run: {}", emulator.failure(&mut processes)));
        }
        let now = origin.elapsed().as_secs_f64();
        while next_event < events.len() && events[next_event].0 <= now {
            match events[next_event].1 {
                Action::Start(k) => {
                    let flow = &plan.flows[k];
                    flows[k].clients = endpoints.start_clients(flow, flow.stop_s - flow.start_s, &mut processes)?;
                    flows[k].started_s = Some(now);
                }
                Action::Stop(k) => {
                    for &client in &flows[k].clients {
                        processes.terminate(client);
                    }
                    flows[k].finished_s.get_or_insert(now);
                }
                Action::Cbr(port, on) => emulator.command(&format!("cbr {port} {}", if on { "on" } else { "off" }))?,
                Action::Blackhole(link, on) => {
                    emulator.command(&format!("blackhole {link} {}", if on { "on" } else { "off" }))?
                }
            }
            next_event += 1;
        }
        for (flow, state) in plan.flows.iter().zip(&mut flows) {
            if state.started_s.is_none() || state.finished_s.is_some() || state.clients.is_empty() {
                continue;
            }
            if state.clients.iter().all(|&c| processes.exited(c)) {
                for &client in &state.clients {
                    if !processes.status(client).is_some_and(|s| s.success()) {
                        return Err(format!("flow {}: {}", flow.id, processes.describe_failure(client)));
                    }
                }
                state.finished_s = Some(now);
            }
        }
        if now >= next_sample {
            for (flow, samples) in plan.flows.iter().zip(&mut quic_samples) {
                if matches!(flow.kind, FlowKind::Quic { .. }) {
                    samples.push((now, layout.downloaded_bytes(flow)));
                }
            }
            next_sample += bin;
        }
        if now >= next_progress {
            let active = flows.iter().filter(|s| s.started_s.is_some() && s.finished_s.is_none()).count();
            let line = format!(
                "[testbed] {}: {:>5.1}/{duration:.0} s, {active} flows sending",
                plan.setup.name,
                now.min(duration)
            );
            // One line rewritten every second on a terminal; in a log, a
            // line every PROGRESS_LOG_EVERY seconds.
            if progress_on_terminal {
                eprint!("\r{line}   ");
                let _ = std::io::stderr().flush();
                next_progress += 1.0;
            } else {
                eprintln!("{line}");
                next_progress += PROGRESS_LOG_EVERY_S;
            }
        }
        if now >= duration && next_event >= events.len() {
            break;
        }
        std::thread::sleep(TICK);
    }
    if progress_on_terminal {
        eprintln!();
    }

    // While ns-3 still carries their last packets: QUIC clients are
    // stopped, iperf3 senders finish their whole seconds and the
    // receivers write their reports.
    let tcp = |flow: &FlowPlan| matches!(flow.kind, FlowKind::Tcp { .. });
    for (_, state) in plan.flows.iter().zip(&flows).filter(|(flow, _)| !tcp(flow)) {
        for &client in &state.clients {
            processes.terminate(client);
        }
    }
    for (_, state) in plan.flows.iter().zip(&flows).filter(|(flow, _)| tcp(flow)) {
        for &id in state.clients.iter().chain(&state.server) {
            if !processes.wait(id, END_LIMIT) {
                processes.terminate(id);
            }
        }
    }
    let ns3_cpu = emulator.pid(&mut processes).and_then(SchedStat::of);
    emulator.stop(&mut processes)?;
    processes.terminate_all();
    drop(processes);
    drop(endpoints);
    let prefix = topology.prefix.clone();
    drop(topology);
    let load_after = load_average();

    let mut goodput = Vec::new();
    let mut goodput_clock = Vec::new();
    let mut completions = Vec::new();
    let mut notes = String::new();
    for ((flow, state), samples) in plan.flows.iter().zip(&flows).zip(quic_samples) {
        let started = state.started_s.unwrap_or(flow.start_s);
        match flow.kind {
            FlowKind::Tcp { cc, .. } => match layout.tcp_goodput(flow) {
                Ok(report) => {
                    let used = layout.tcp_congestion(flow)?;
                    if used != cc {
                        return Err(format!("flow {}: the Linux TCP sender ran {used}, not {cc}", flow.id));
                    }
                    goodput.push(report.samples);
                    goodput_clock.push(GoodputClock::DataStart);
                    completions.push(report.completion_s);
                }
                Err(message) => {
                    let _ = writeln!(notes, "warning: {message}");
                    goodput.push(Vec::new());
                    goodput_clock.push(GoodputClock::DataStart);
                    completions.push(None);
                }
            },
            FlowKind::Quic { .. } => {
                goodput.push(samples);
                goodput_clock.push(GoodputClock::Run);
                completions.push(flow.bytes.and(state.finished_s).map(|end| end - started));
            }
            FlowKind::Cbr { .. } => {
                goodput.push(Vec::new());
                goodput_clock.push(GoodputClock::Run);
                completions.push(None);
            }
        }
    }
    layout.remove_downloads();
    eprint!("{notes}");
    if netns::list().iter().any(|name| name.starts_with(&prefix)) {
        return Err("namespaces of this run are still there after teardown".into());
    }
    Ok(Measurements {
        series: emulator::read_series(&emulator.series)?,
        monitor: emulator::read_monitor(&emulator.monitor)?,
        ns3_summary: emulator::read_summary(&emulator.summary)?,
        origin_epoch_s,
        goodput,
        goodput_clock,
        completions,
        load_before,
        load_after,
        ns3_cpu,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::TestbedScenario;

    #[test]
    fn schedstat_is_read_and_a_malformed_one_is_none() {
        let stat = SchedStat::parse("8869000000 2217300000 197680\n").expect("three numbers");
        assert_eq!(stat, SchedStat { run_ns: 8_869_000_000, wait_ns: 2_217_300_000, slices: 197_680 });
        assert!((stat.wait_per_slice_us() - 11.217).abs() < 0.001, "{}", stat.wait_per_slice_us());
        assert_eq!(SchedStat::parse("8869000000 x 197680"), None);
        assert_eq!(SchedStat::parse("8869000000"), None);
        let own = SchedStat::of(std::process::id()).expect("this kernel keeps schedstat");
        assert!(own.run_ns > 0 && own.slices > 0, "{own:?}");
    }

    #[test]
    fn cbr_on_off_toggles_alternate_inside_the_flow_and_end_off() {
        let text = r#"
name = "t"
duration_s = 60
[[link]]
name = "b"
rate_mbps = 10
delay_ms = 10
buffer_bdp = 1
blackhole = [[5, 6]]
[[flow]]
traffic = "cbr"
rate_mbps = 5
on_s = 2
off_s = 3
start_s = 10
stop_s = 40
path = ["b"]
"#;
        let plan = TestbedScenario::from_toml(text).unwrap().plan(3, &mut String::new()).unwrap();
        let events = timeline(&plan);
        let cbr: Vec<(f64, bool)> =
            events.iter().filter_map(|&(t, a)| if let Action::Cbr(_, on) = a { Some((t, on)) } else { None }).collect();
        assert_eq!(cbr.first(), Some(&(10.0, true)));
        assert_eq!(cbr.last(), Some(&(40.0, false)));
        assert!(cbr.iter().all(|&(t, _)| (10.0..=40.0).contains(&t)));
        for pair in cbr[..cbr.len() - 1].windows(2) {
            assert_ne!(pair[0].1, pair[1].1, "{cbr:?}");
        }
        assert_eq!(events[0], (5.0, Action::Blackhole(0, true)));
        assert_eq!(events[1], (6.0, Action::Blackhole(0, false)));
    }
}
