//! `flowshare testbed` and `flowshare compare`.
//!
//! ```text
//! flowshare testbed run SCENARIO.toml|BUILTIN --out DIR [--quick] [--seed S] [--seeds K]
//!                   [--controllers multcp,..] [--n 0.5,2] [--peers cubic,tcp-cubic] [--m M]
//!                   [--bandwidths MBPS] [--rtt MS] [--queue droptail|red] [--duration S]
//!                   [--warmup S] [--max-load L] [--wait-quiet S] [--ns3 PATH] [--hard-limit MS]
//!                   [--pcap] [--no-qlog]
//! flowshare testbed arrivals RUN_DIR
//! flowshare testbed windows RUN_DIR
//! flowshare testbed check | clean | list
//! flowshare compare SCENARIO.toml|BUILTIN [--out DIR] [same options]
//! ```
//!
//! The scenario options are the lab's ([`OptionArgs`]): `flowshare lab
//! EXPERIMENT` takes the same names for the same things.

use std::fmt::Write as _;
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use serde_json::json;
use serde_json::Value;

use flowshare_lab::metrics;
use flowshare_lab::metrics::mean_and_deviation;
use flowshare_lab::options::OptionArgs;
use flowshare_lab::options::Options;
use flowshare_lab::report;
use flowshare_lab::report::fmt;
use flowshare_lab::report::Table;
use flowshare_lab::result::RunResult;
use flowshare_lab::rng::derive_seed;
use flowshare_lab::setup::Role;
use flowshare_lab::sim::Simulation;

use crate::builtin;
use crate::builtin::Case;
use crate::netns;
use crate::requirements;
use crate::results;
use crate::results::Outcome;
use crate::run;
use crate::run::RunOptions;
use crate::scenario::TestbedScenario;

/// `flowshare testbed`: real endpoints through an ns-3 bottleneck.
#[derive(clap::Args, Debug)]
pub struct TestbedArgs {
    #[command(subcommand)]
    command: TestbedCommand,
}

#[derive(clap::Subcommand, Debug)]
enum TestbedCommand {
    /// Runs a scenario file or a built-in scenario (as root).
    Run(Box<RunArgs>),
    /// Checks that this machine can run the testbed.
    Check,
    /// Removes namespaces left behind by runs that were killed.
    Clean,
    /// Lists the built-in scenarios.
    List,
    /// Per flow, how its packets reached the bottleneck and which it
    /// dropped, by position in their bursts, and how soon its sender
    /// answered an acknowledgement (a run directory of `run --pcap`).
    Arrivals {
        /// The run's directory (with trace_node_right.pcap and
        /// trace_node_left.pcap).
        dir: PathBuf,
    },
    /// Per QUIC sender, its mean congestion window after the warm-up and
    /// the packets it lost, PA-MulTCP's probe and adjusting loops, each
    /// over the standard QUIC flows' mean window (a run directory with
    /// qlogs).
    Windows {
        /// The run's directory (with summary.json and qlog/).
        dir: PathBuf,
    },
    /// Per cell, PA-MulTCP's probe's packet loss over its peers' and the
    /// share per flowshare, run by run, with the law share = a r^b fitted
    /// to them (a run's or a campaign's directory, with qlogs).
    LossLaw {
        /// A run's directory or a campaign's --out.
        dir: PathBuf,
    },
    /// Per cell, its standard flows' rate and the weighted connection's
    /// over RFC 5348's equation at the standard flows' loss event rate,
    /// over the control which of the two moved the cell, and each side's
    /// packet loss over the queue's drop rate beside the weighted side's
    /// part of the arrivals (every summary.json under a run's, a campaign's
    /// or a measured directory).
    Equation {
        /// A run's directory, a campaign's --out, or a measured directory.
        dir: PathBuf,
        /// t_RTO in the equation, in RTTs (RFC 5348's TFRC: 4).
        #[arg(long, default_value_t = crate::equation::DEFAULT_T_RTO_RTTS)]
        t_rto: f64,
    },
}

/// Which scenario, and the options of the built-ins.
#[derive(clap::Args, Debug, Clone)]
pub struct ScenarioArgs {
    /// A scenario file (TOML, the lab's vocabulary plus `transport` and
    /// `blackhole`) or a built-in (`flowshare testbed list`).
    scenario: String,
    #[command(flatten)]
    options: OptionArgs,
}

/// Options of runs on this machine.
#[derive(clap::Args, Debug, Clone)]
pub struct MachineArgs {
    /// Wait before each run until the 1-minute load average is below this
    /// (real-time emulation is only valid on a quiet machine).
    #[arg(long)]
    max_load: Option<f64>,
    /// Longest total wait for a quiet machine over all runs, seconds; after
    /// that, runs go ahead and are marked.
    #[arg(long, default_value_t = 3.0 * 3600.0)]
    pub(crate) wait_quiet: f64,
    /// The ns-3 program (default: built by testbed/ns3/build.sh).
    #[arg(long)]
    pub(crate) ns3: Option<PathBuf>,
    /// Abort a run when ns-3 lags real time by more than this many ms (0:
    /// best effort, with the lag measured and reported).
    #[arg(long, default_value_t = 0.0)]
    hard_limit: f64,
    /// Keep ns-3's packet traces in each run's directory:
    /// trace_node_right.pcap, the servers' packets as they reach the
    /// bottleneck queue (the ones it drops included), and
    /// trace_node_left.pcap, what left it (about 100 MB each per 40 s at
    /// 20 Mbit/s).
    #[arg(long)]
    pcap: bool,
    /// QUIC endpoints write no qlog (by default each writes one into the
    /// run's qlog/, tens of MB per flow and minute, as every recorded
    /// campaign did). Writing it delays the server's answer to an
    /// acknowledgement by about 60 µs (testbed/README.md, "Weight one
    /// between stacks").
    #[arg(long)]
    no_qlog: bool,
    /// Whether other runs go on at the same time (`scorecard testbed
    /// --jobs`): progress is then printed a line at a time, never rewritten
    /// in place.
    #[arg(skip)]
    pub(crate) concurrent: bool,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    #[command(flatten)]
    machine: MachineArgs,
    /// Output directory.
    #[arg(long, default_value = "testbed-results")]
    out: PathBuf,
}

/// `flowshare compare`: the same scenario in the lab and in the testbed.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    #[command(flatten)]
    machine: MachineArgs,
    /// Output directory.
    #[arg(long, default_value = "compare-results")]
    out: PathBuf,
}

/// Runs `flowshare testbed ...`.
pub fn run(args: TestbedArgs) -> Result<(), String> {
    match args.command {
        TestbedCommand::Run(args) => run_scenarios(&args),
        TestbedCommand::Check => {
            requirements::check()?;
            println!("the testbed can run here: root, ns-3, g++, iperf3, ip, ss, ethtool and iptables are present");
            Ok(())
        }
        TestbedCommand::Clean => {
            requirements::check()?;
            let removed = netns::remove_stale();
            if removed.is_empty() {
                println!("no namespaces of dead runs");
            } else {
                println!("removed {}", removed.join(", "));
            }
            Ok(())
        }
        TestbedCommand::List => {
            for builtin in builtin::BUILTINS {
                println!("{}", builtin.name);
            }
            Ok(())
        }
        TestbedCommand::Arrivals { dir } => {
            print!("{}", crate::arrivals::report(&dir)?);
            Ok(())
        }
        TestbedCommand::Windows { dir } => {
            print!("{}", crate::windows::report(&dir)?);
            Ok(())
        }
        TestbedCommand::LossLaw { dir } => {
            print!("{}", crate::loss_law::report(&dir)?);
            Ok(())
        }
        TestbedCommand::Equation { dir, t_rto } => {
            print!("{}", crate::equation::report(&dir, t_rto)?);
            Ok(())
        }
    }
}

/// The scenario a scenario argument names: its name, its cases and the
/// options they run with.
fn select(args: &ScenarioArgs) -> Result<(String, Vec<Case>, Options), String> {
    let options = args.options.options()?;
    let path = Path::new(&args.scenario);
    if path.is_file() || args.scenario.ends_with(".toml") {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let scenario = TestbedScenario::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        eprint!("{}", options.note_unused(&args.scenario, &["seeds"]));
        let name = scenario.scenario.name.clone();
        return Ok((name.clone(), vec![Case { name: builtin::file_safe(&name), scenario }], options));
    }
    let builtin = builtin::find(&args.scenario)?;
    eprint!("{}", options.note_unused(builtin.name, builtin.uses));
    let mut skipped = Vec::new();
    let cases = builtin.cases(&options, &mut skipped)?;
    if !skipped.is_empty() {
        eprintln!("note: skipped {} (not accepted by the spec language)", skipped.join(", "));
    }
    if cases.is_empty() {
        return Err(format!("{}: no case left to run", args.scenario));
    }
    let name = if options.quick { format!("{}-quick", args.scenario) } else { args.scenario.clone() };
    Ok((name, cases, options))
}

/// Ctrl-C, SIGTERM and SIGHUP set the flag instead of killing us, so that
/// the namespaces and children of the current run are removed.
pub fn interrupt_flag() -> Result<Arc<AtomicBool>, String> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&flag)).map_err(|e| format!("cannot handle signals: {e}"))?;
    }
    Ok(flag)
}

/// How often the load is checked while waiting for a quiet machine.
const LOAD_POLL: Duration = Duration::from_secs(20);

/// Waits for a quiet machine, spending at most `budget` (shared by all the
/// runs of an invocation, concurrent ones included); returns the 1-minute
/// load the run starts with and whether it was below the limit.
fn wait_quiet(machine: &MachineArgs, budget: &Mutex<Duration>, interrupted: &AtomicBool) -> (f64, bool) {
    let Some(limit) = machine.max_load else { return (run::load_average()[0], true) };
    let mut last_note = None::<Instant>;
    loop {
        let load = run::load_average()[0];
        if load < limit {
            return (load, true);
        }
        let left = *budget.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if left.is_zero() || interrupted.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!("warning: load average {load:.2} >= {limit} and the wait budget is spent; running anyway, marked in summary.json");
            return (load, false);
        }
        if last_note.is_none_or(|at| at.elapsed() >= Duration::from_secs(300)) {
            eprintln!(
                "[testbed] load average {load:.2} >= {limit}: waiting for a quiet machine ({:.0} s of waiting left)",
                left.as_secs_f64()
            );
            last_note = Some(Instant::now());
        }
        let pause = LOAD_POLL.min(left);
        let until = Instant::now() + pause;
        while Instant::now() < until && !interrupted.load(std::sync::atomic::Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
        }
        let mut left = budget.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *left = left.saturating_sub(pause);
    }
}

/// One finished run.
struct Finished {
    dir_name: String,
    case: String,
    seed: u64,
    outcome: Outcome,
    summary: Value,
}

/// Runs one case with one seed into `dir`.
pub(crate) fn run_case(
    case: &Case,
    seed: u64,
    dir: &Path,
    machine: &MachineArgs,
    budget: &Mutex<Duration>,
    interrupted: &AtomicBool,
) -> Result<(Outcome, Value, String), String> {
    let mut notes = String::new();
    let plan = case.scenario.plan(seed, &mut notes)?;
    eprint!("{notes}");
    report::write_file(dir, "scenario.toml", &case.scenario.to_toml())?;
    let (load, quiet) = wait_quiet(machine, budget, interrupted);
    let options = RunOptions {
        ns3: machine.ns3.clone(),
        hard_limit_ms: machine.hard_limit,
        pcap: machine.pcap,
        qlog: !machine.no_qlog,
        progress_in_place: !machine.concurrent,
    };
    let measured = run::run(&plan, dir, &options, interrupted)?;
    let outcome = results::outcome(&plan, &measured);
    results::write(dir, &plan, &outcome, &measured)?;
    let mut summary = results::summary(&plan, &outcome, &measured);
    summary["metrics"]["testbed"]["load_gate"] =
        json!({"max_load": machine.max_load, "load_at_start": load, "quiet": quiet});
    report::write_summary(dir, &summary)?;
    let table = results::table(&plan, &outcome);
    Ok((outcome, summary, table))
}

/// The runs of an invocation: those that finished, and those that failed
/// (name and error). A failed run does not stop the others, so that one
/// broken point does not cost a campaign of hours; Ctrl-C does.
struct Runs {
    finished: Vec<Finished>,
    failed: Vec<(String, String)>,
}

impl Runs {
    /// An error naming the failed runs, if any.
    fn failures(&self) -> Result<(), String> {
        match self.failed.as_slice() {
            [] => Ok(()),
            [(_, error)] if self.finished.is_empty() => Err(error.clone()),
            failed => Err(format!(
                "{} of {} runs failed: {}",
                failed.len(),
                failed.len() + self.finished.len(),
                failed.iter().map(|(run, error)| format!("{run}: {error}")).collect::<Vec<_>>().join("; ")
            )),
        }
    }
}

fn run_all(
    name: &str,
    cases: &[Case],
    options: &Options,
    machine: &MachineArgs,
    out: &Path,
    interrupted: &AtomicBool,
) -> Result<Runs, String> {
    // Every case is checked before the first run starts.
    for case in cases {
        case.scenario.plan(options.seed, &mut String::new()).map_err(|e| format!("{}: {e}", case.name))?;
    }
    let seeds = options.seeds.unwrap_or(1);
    let single = cases.len() == 1 && seeds == 1;
    let total = cases.len() * seeds;
    let mut runs = Runs { finished: Vec::new(), failed: Vec::new() };
    let budget = Mutex::new(Duration::from_secs_f64(machine.wait_quiet.max(0.0)));
    for case in cases {
        for replicate in 0..seeds {
            let seed = if seeds > 1 { derive_seed(options.seed, replicate as u64) } else { options.seed };
            let dir_name = if seeds > 1 { format!("{}/seed-{replicate}", case.name) } else { case.name.clone() };
            let dir = if single { out.to_path_buf() } else { out.join(&dir_name) };
            let number = runs.finished.len() + runs.failed.len() + 1;
            eprintln!("[testbed] {name}: run {number}/{total}: {dir_name} (seed {seed})");
            match run_case(case, seed, &dir, machine, &budget, interrupted) {
                Ok((outcome, summary, table)) => {
                    print!("{}\n{table}", case.scenario.scenario.name);
                    runs.finished.push(Finished { dir_name, case: case.name.clone(), seed, outcome, summary });
                }
                Err(error) if interrupted.load(std::sync::atomic::Ordering::Relaxed) => return Err(error),
                Err(error) => {
                    eprintln!("[testbed] {dir_name} failed: {error}");
                    runs.failed.push((dir_name, error));
                }
            }
        }
    }
    Ok(runs)
}

fn run_scenarios(args: &RunArgs) -> Result<(), String> {
    requirements::check()?;
    let (name, cases, options) = select(&args.scenario)?;
    for stale in netns::remove_stale() {
        eprintln!("note: removed namespace {stale} left by a run that was killed");
    }
    let interrupted = interrupt_flag()?;
    let runs = run_all(&name, &cases, &options, &args.machine, &args.out, &interrupted)?;
    if runs.finished.len() + runs.failed.len() > 1 {
        let (table, summary) = aggregate(&name, options.seed, &runs);
        print!("\n{name}: all runs\n{table}");
        report::write_summary(&args.out, &summary)?;
    }
    runs.failures()?;
    println!("wrote {}", args.out.join("summary.json").display());
    Ok(())
}

/// The table and `summary.json` over several runs: per run the fairness
/// metrics and the emulation's health, per case the spread over seeds.
fn aggregate(name: &str, seed: u64, all: &Runs) -> (String, Value) {
    let finished = &all.finished;
    let mut table =
        Table::new(&["run", "weighted Mbit/s", "standard Mbit/s", "FI", "Jain", "util", "max lag ms", "trusted"]);
    let mut runs = Vec::new();
    let mut flows = Vec::new();
    for f in finished {
        let run = &f.outcome.run;
        let role_mean = |role: Role| {
            let values: Vec<f64> =
                run.connections.iter().filter(|c| c.role == role).map(|c| c.throughput_bps).collect();
            (!values.is_empty()).then(|| mean_and_deviation(&values).0)
        };
        let throughputs: Vec<f64> =
            run.connections.iter().filter(|c| c.role != Role::Other).map(|c| c.throughput_bps).collect();
        let jain = (!throughputs.is_empty()).then(|| metrics::jain_index(&throughputs));
        table.row(vec![
            f.dir_name.clone(),
            fmt(role_mean(Role::Weighted).map(|v| v / 1e6), 3),
            fmt(role_mean(Role::Standard).map(|v| v / 1e6), 3),
            fmt(metrics::fairness_index(run), 3),
            fmt(jain, 3),
            fmt(Some(metrics::utilization(run)), 3),
            fmt(Some(f.outcome.emulation.max_lag_ms), 1),
            if f.outcome.emulation.trusted { "yes" } else { "NO" }.into(),
        ]);
        runs.push(json!({"run": f.dir_name, "case": f.case, "seed": f.seed, "scenario": run.name,
            "fairness_index": report::number(metrics::fairness_index(run)), "cov": report::number(metrics::cov(run)),
            "utilization": metrics::utilization(run), "jain_index": report::number(jain),
            "testbed": f.summary["metrics"]["testbed"]}));
        for flow in f.summary["flows"].as_array().into_iter().flatten() {
            let mut flow = flow.clone();
            flow["run"] = json!(f.dir_name);
            flows.push(flow);
        }
    }
    let mut out = table.render();
    let mut cases = Vec::new();
    let mut case_names: Vec<&str> = finished.iter().map(|f| f.case.as_str()).collect();
    case_names.dedup();
    if finished.len() > case_names.len() {
        let mut spread = Table::new(&["case", "runs", "trusted", "FI mean", "FI std", "FI min", "FI max", "util mean"]);
        for case in case_names {
            let of_case: Vec<&Finished> = finished.iter().filter(|f| f.case == case).collect();
            let fi: Vec<f64> = of_case.iter().filter_map(|f| metrics::fairness_index(&f.outcome.run)).collect();
            let util: Vec<f64> = of_case.iter().map(|f| metrics::utilization(&f.outcome.run)).collect();
            let trusted = of_case.iter().filter(|f| f.outcome.emulation.trusted).count();
            let (fi_mean, fi_std) = mean_and_deviation(&fi);
            let min = fi.iter().copied().fold(f64::INFINITY, f64::min);
            let max = fi.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            spread.row(vec![
                case.to_string(),
                of_case.len().to_string(),
                trusted.to_string(),
                fmt(Some(fi_mean), 3),
                fmt(Some(fi_std), 3),
                fmt(Some(min), 3),
                fmt(Some(max), 3),
                fmt(Some(mean_and_deviation(&util).0), 3),
            ]);
            cases.push(json!({"case": case, "runs": of_case.len(), "trusted_runs": trusted,
                "fairness_index_mean": report::number(Some(fi_mean)), "fairness_index_std": report::number(Some(fi_std)),
                "fairness_index_min": report::number(Some(min)), "fairness_index_max": report::number(Some(max)),
                "fairness_index_values": fi, "utilization_mean": report::number(Some(mean_and_deviation(&util).0))}));
        }
        let _ = write!(out, "\n{}", spread.render());
    }
    let failed: Vec<Value> = all.failed.iter().map(|(run, error)| json!({"run": run, "error": error})).collect();
    for (run, error) in &all.failed {
        let _ = writeln!(out, "FAILED {run}: {error}");
    }
    let summary = json!({"scenario": name, "seed": seed, "flows": flows,
        "metrics": {"fairness_index": Value::Null, "cov": Value::Null, "utilization": Value::Null, "runs": runs,
            "cases": cases, "failed_runs": failed}});
    (out, summary)
}

/// Runs `flowshare compare ...`.
pub fn compare(args: CompareArgs) -> Result<(), String> {
    requirements::check()?;
    let (name, cases, options) = select(&args.scenario)?;
    for stale in netns::remove_stale() {
        eprintln!("note: removed namespace {stale} left by a run that was killed");
    }
    let interrupted = interrupt_flag()?;
    let runs = run_all(&name, &cases, &options, &args.machine, &args.out.join("testbed"), &interrupted)?;
    let mut comparisons = Vec::new();
    let mut out = String::new();
    for f in &runs.finished {
        let Some(case) = cases.iter().find(|c| c.name == f.case) else { continue };
        let setup = case.scenario.scenario.resolve().map_err(|e| e.to_string())?;
        let lab = Simulation::new(setup, f.seed).run();
        let lab_dir = args.out.join("lab").join(&f.dir_name);
        report::write_run(&lab_dir, &lab, json!({}))?;
        let (table, comparison) = side_by_side(&lab, &f.outcome.run);
        let _ = write!(out, "\n{} (seed {})\n{table}", case.scenario.scenario.name, f.seed);
        let _ = writeln!(out, "{}", f.outcome.emulation.line());
        comparisons.push(json!({"run": f.dir_name, "seed": f.seed, "comparison": comparison}));
    }
    print!("{out}");
    let summary = json!({"scenario": name, "seed": options.seed, "flows": [],
        "metrics": {"fairness_index": Value::Null, "cov": Value::Null, "utilization": Value::Null, "comparisons": comparisons}});
    report::write_summary(&args.out, &summary)?;
    runs.failures()?;
    println!("wrote {}", args.out.join("summary.json").display());
    Ok(())
}

/// Per flow and overall, the lab's numbers next to the testbed's.
fn side_by_side(lab: &RunResult, testbed: &RunResult) -> (String, Value) {
    let mut table = Table::new(&["id", "label", "cc", "role", "lab Mbit/s", "testbed Mbit/s", "difference"]);
    let mut flows = Vec::new();
    for (a, b) in lab.connections.iter().zip(&testbed.connections) {
        let difference = b.throughput_bps / a.throughput_bps - 1.0;
        table.row(vec![
            flows.len().to_string(),
            b.label.clone(),
            a.cc.clone(),
            format!("{:?}", a.role).to_lowercase(),
            fmt(Some(a.throughput_bps / 1e6), 3),
            fmt(Some(b.throughput_bps / 1e6), 3),
            fmt(Some(difference * 100.0), 1) + "%",
        ]);
        flows.push(json!({"label": b.label, "cc": a.cc, "lab_bps": a.throughput_bps, "testbed_bps": b.throughput_bps,
            "relative_difference": report::number(Some(difference))}));
    }
    let mut out = table.render();
    let pair = |f: fn(&RunResult) -> Option<f64>| (f(lab), f(testbed));
    let (fi, cov) = (pair(metrics::fairness_index), pair(metrics::cov));
    let utilization = (metrics::utilization(lab), metrics::utilization(testbed));
    let _ = writeln!(
        out,
        "fairness index lab {} testbed {}  CoV lab {} testbed {}  utilization lab {} testbed {}",
        fmt(fi.0, 3),
        fmt(fi.1, 3),
        fmt(cov.0, 3),
        fmt(cov.1, 3),
        fmt(Some(utilization.0), 3),
        fmt(Some(utilization.1), 3)
    );
    let json = json!({"flows": flows,
        "fairness_index": {"lab": report::number(fi.0), "testbed": report::number(fi.1)},
        "cov": {"lab": report::number(cov.0), "testbed": report::number(cov.1)},
        "utilization": {"lab": utilization.0, "testbed": utilization.1}});
    (out, json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_failed_run_reports_its_own_error_and_several_are_listed() {
        let one = Runs { finished: Vec::new(), failed: vec![("a".into(), "ns-3 did not start".into())] };
        assert_eq!(one.failures().unwrap_err(), "ns-3 did not start");
        let two =
            Runs { finished: Vec::new(), failed: vec![("a".into(), "x".into()), ("b/seed-1".into(), "y".into())] };
        assert_eq!(two.failures().unwrap_err(), "2 of 2 runs failed: a: x; b/seed-1: y");
        assert!(Runs { finished: Vec::new(), failed: Vec::new() }.failures().is_ok());
    }
}
