//! `flowshare lab`: the command line of the lab.
//!
//! ```text
//! flowshare lab EXPERIMENT [--quick] [--out DIR] [--seed S] [--seeds K] [--jobs J]
//!               [--controllers multcp,pa-multcp] [--n 2,4,8] [--peers reno,cubic]
//!               [--bandwidths 200,400] [--duration S] [--warmup S] [--pacing true|false]
//!               (the options of `flowshare testbed run`, `crate::options::OptionArgs`)
//! flowshare lab run SCENARIO.toml --out DIR [--seed S]
//! flowshare lab bench [--quick]
//! flowshare lab ns3 [--binary PATH] [--out DIR] [--runs K]
//! ```

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;

use crate::experiments;
use crate::experiments::Experiment;
use crate::metrics;
use crate::metrics::mean_and_deviation;
use crate::options::OptionArgs;
use crate::options::Options;
use crate::report;
use crate::report::fmt;
use crate::report::Table;
use crate::scenario::FlowConfig;
use crate::scenario::LinkConfig;
use crate::scenario::Scenario;
use crate::scenario::BOTTLENECK;
use crate::scenario::LAB_START_SPREAD_S;
use crate::setup::Role;
use crate::sim::Simulation;
use crate::sweep;
use crate::sweep::Job;

/// `flowshare lab`: deterministic simulations of the papers' experiments.
#[derive(clap::Args, Debug)]
pub struct LabArgs {
    #[command(subcommand)]
    command: LabCommand,
}

#[derive(clap::Subcommand, Debug)]
enum LabCommand {
    /// Paper 000 section 5.1: a weighted flow against 200 - N standard flows
    /// (fairness index and CoV per controller, peer, bandwidth and N).
    Fairness(ExperimentArgs),
    /// Paper 000 section 5.2: reaction to a CBR flow taking half the link.
    Transient(ExperimentArgs),
    /// Paper 000 section 5.3: completion time of a transfer joining an
    /// aggregate versus a new connection.
    ShortTransfer(ExperimentArgs),
    /// Paper 004 section III-A: MulTFRC(n) against n TCP flows on RED.
    MultfrcFriendliness(ExperimentArgs),
    /// Paper 003 section IV: MCompound load balancing, efficiency and
    /// fairness to Compound TCP.
    Mcompound(ExperimentArgs),
    /// Paper 001 table I: TCP and MulTCP(2) mixes with drop-tail and RED.
    Gevros(ExperimentArgs),
    /// The lab's own validation: Jain index and the TCP equation.
    Validate(ExperimentArgs),
    /// Runs a scenario file.
    Run(RunArgs),
    /// Measures simulation speed (packets per wall-clock second, one core).
    Bench(BenchArgs),
    /// Runs the Reno dumbbell in ns-3 and in the lab and compares per-flow
    /// throughput.
    Ns3(Ns3Args),
}

#[derive(clap::Args, Debug)]
struct ExperimentArgs {
    #[command(flatten)]
    options: OptionArgs,
    /// Simulations run in parallel (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Output directory.
    #[arg(long, default_value = "lab-results")]
    out: PathBuf,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// Output directory.
    #[arg(long, default_value = "lab-results")]
    out: PathBuf,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(clap::Args, Debug)]
struct BenchArgs {
    /// Shorter runs.
    #[arg(long)]
    quick: bool,
}

#[derive(clap::Args, Debug)]
struct Ns3Args {
    /// The ns-3 program (built by lab/ns3/build.sh).
    #[arg(long, default_value = "lab/ns3/build/reno-dumbbell")]
    binary: PathBuf,
    /// Output directory.
    #[arg(long, default_value = "lab-results/ns3")]
    out: PathBuf,
    /// Runs (seeds) per simulator; per-flow throughput is averaged over them.
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// Simulated seconds per run.
    #[arg(long, default_value_t = 120.0)]
    duration: f64,
}

impl ExperimentArgs {
    fn options(&self) -> Result<Options, String> {
        if self.jobs == Some(0) {
            return Err("--jobs 0 is out of range; accepted range [1, ...)".into());
        }
        Ok(Options { threads: self.jobs.unwrap_or_else(sweep::default_threads), ..self.options.options()? })
    }
}

fn experiment(args: &ExperimentArgs, experiment: &Experiment) -> Result<(), String> {
    let options = args.options()?;
    eprint!("{}", options.note_unused(experiment.name, experiment.uses));
    let outcome = (experiment.run)(&options, &args.out)?;
    print!("{}", outcome.table);
    report::write_summary(&args.out, &outcome.summary)?;
    println!("wrote {}", args.out.join("summary.json").display());
    Ok(())
}

/// Runs `flowshare lab ...`.
pub fn run(args: LabArgs) -> Result<(), String> {
    match args.command {
        LabCommand::Fairness(args) => experiment(&args, &experiments::fairness::EXPERIMENT),
        LabCommand::Transient(args) => experiment(&args, &experiments::transient::EXPERIMENT),
        LabCommand::ShortTransfer(args) => experiment(&args, &experiments::short_transfer::EXPERIMENT),
        LabCommand::MultfrcFriendliness(args) => experiment(&args, &experiments::multfrc_friendliness::EXPERIMENT),
        LabCommand::Mcompound(args) => experiment(&args, &experiments::mcompound::EXPERIMENT),
        LabCommand::Gevros(args) => experiment(&args, &experiments::gevros::EXPERIMENT),
        LabCommand::Validate(args) => experiment(&args, &experiments::validate::EXPERIMENT),
        LabCommand::Run(args) => run_scenario(&args),
        LabCommand::Bench(args) => bench(&args),
        LabCommand::Ns3(args) => ns3(&args),
    }
}

fn run_scenario(args: &RunArgs) -> Result<(), String> {
    let path = args.scenario.display();
    let text = std::fs::read_to_string(&args.scenario).map_err(|e| format!("cannot read {path}: {e}"))?;
    let scenario = Scenario::from_toml(&text).map_err(|e| format!("{path}: {e}"))?;
    let setup = scenario.resolve().map_err(|e| format!("{path}: {e}"))?;
    let run = Simulation::new(setup, args.seed).run();
    let table = report::write_run(&args.out, &run, json!({}))?;
    print!("{table}");
    println!("wrote {}", args.out.join("summary.json").display());
    Ok(())
}

/// The dumbbell the benchmark and the ns-3 comparison use: `flows` Reno
/// flows, flow i with the access delay `access_ms[i]` (or the last).
fn reno_dumbbell(
    name: &str,
    flows: usize,
    rate_mbps: f64,
    delay_ms: f64,
    duration: f64,
    access_ms: &[f64],
    pacing: bool,
) -> Scenario {
    let bottleneck = LinkConfig::bottleneck(rate_mbps, 2.0 * delay_ms);
    let mut scenario =
        Scenario::dumbbell(name, duration, duration / 5.0, LAB_START_SPREAD_S, bottleneck).with_pacing(pacing);
    for i in 0..flows {
        let access = access_ms[i.min(access_ms.len() - 1)];
        scenario = scenario
            .with_flow(FlowConfig::bulk("reno", 1, &[BOTTLENECK]).with_access(access, 0.0).with_role(Role::Standard));
    }
    scenario
}

fn bench(args: &BenchArgs) -> Result<(), String> {
    let scale = if args.quick { 0.1 } else { 1.0 };
    let mut table = Table::new(&["benchmark", "simulated s", "packets", "events", "wall s", "packets/s", "target"]);
    let mut time = |name: &str, scenario: Scenario, target: &str| -> Result<(), String> {
        let setup = scenario.resolve().map_err(|e| e.to_string())?;
        let started = Instant::now();
        let run = Simulation::new(setup, 1).run();
        let wall = started.elapsed().as_secs_f64();
        table.row(vec![
            name.into(),
            fmt(Some(scenario.duration_s), 0),
            run.packets_sent.to_string(),
            run.events.to_string(),
            fmt(Some(wall), 2),
            fmt(Some(run.packets_sent as f64 / wall / 1e6), 2) + " M",
            target.into(),
        ]);
        Ok(())
    };
    for pacing in [false, true] {
        let name = format!("dumbbell 20 x reno, 100 Mbit/s, pacing {}", if pacing { "on" } else { "off" });
        time(&name, reno_dumbbell("bench", 20, 100.0, 50.0, 200.0 * scale, &[1.0], pacing), ">= 2 M packets/s")?;
    }
    let mut full = reno_dumbbell("bench-fairness", 0, 400.0, 50.0, 400.0 * scale, &[1.0], true);
    full.warmup_s = 100.0 * scale;
    full.flows = vec![
        FlowConfig::bulk("multcp:n=10", 1, &[BOTTLENECK]).with_access(1.0, 1.0),
        FlowConfig::bulk("reno", 190, &[BOTTLENECK]).with_access(1.0, 1.0),
    ];
    time("fairness point: multcp:n=10 + 190 reno, 400 Mbit/s", full, "< 60 s wall (400 s)")?;
    print!("{}", table.render());
    Ok(())
}

fn ns3(args: &Ns3Args) -> Result<(), String> {
    if !args.binary.exists() {
        return Err(format!(
            "{} not found: build it with lab/ns3/build.sh (needs Debian's ns3 and libns3-dev)",
            args.binary.display()
        ));
    }
    if args.runs == 0 || args.duration <= 0.0 {
        return Err("--runs and --duration must be positive".into());
    }
    // (name, rate Mbit/s, delay ms, access delay of each flow): one class of
    // 8 equal-RTT flows, and two classes of 4 (RTTs 42 and 80 ms), where
    // RTT bias gives the flows different shares.
    let cases: [(&str, f64, f64, Vec<f64>); 2] =
        [("equal RTTs", 20.0, 20.0, vec![1.0; 8]), ("two RTT classes", 20.0, 20.0, [[1.0; 4], [20.0; 4]].concat())];
    // The lab counts 1500-byte packets on the wire, ns-3's sinks count the
    // 1448 bytes of payload each carries.
    let payload = 1448.0 / 1500.0;
    let mut table = Table::new(&["case", "flows", "access ms", "lab Mbit/s", "ns-3 Mbit/s", "difference"]);
    let mut cases_json = Vec::new();
    let mut worst_class: f64 = 0.0;
    let mut worst_flow: f64 = 0.0;
    for (name, rate, delay, access) in &cases {
        let flows = access.len();
        let scenario = reno_dumbbell("ns3-compare", flows, *rate, *delay, args.duration, access, false);
        let jobs = (0..args.runs)
            .map(|run| Ok(Job { setup: scenario.resolve().map_err(|e| e.to_string())?, seed: run as u64 + 1 }))
            .collect::<Result<Vec<_>, String>>()?;
        let lab_runs = sweep::run("lab", jobs, sweep::default_threads(), |_, run| {
            run.connections.iter().map(|c| c.throughput_bps * payload).collect::<Vec<f64>>()
        });
        let access_list = access.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",");
        let mut ns3_runs = Vec::new();
        for run in 1..=args.runs {
            eprint!("\r[ns-3] {name}: run {run}/{}   ", args.runs);
            let output = std::process::Command::new(&args.binary)
                .arg(format!("--flows={flows}"))
                .arg(format!("--rateMbps={rate}"))
                .arg(format!("--delayMs={delay}"))
                .arg(format!("--accessMs={access_list}"))
                .arg(format!("--duration={}", args.duration))
                .arg(format!("--warmup={}", args.duration / 5.0))
                .arg(format!("--run={run}"))
                .output()
                .map_err(|e| format!("cannot run {}: {e}", args.binary.display()))?;
            if !output.status.success() {
                return Err(format!(
                    "{} failed: {}",
                    args.binary.display(),
                    String::from_utf8_lossy(&output.stderr).trim()
                ));
            }
            let text = String::from_utf8_lossy(&output.stdout);
            let values: Vec<f64> = text
                .lines()
                .skip(1)
                .filter_map(|line| line.split(',').nth(1).and_then(|v| v.trim().parse().ok()))
                .collect();
            if values.len() != flows {
                return Err(format!("{} printed {} flows, expected {flows}", args.binary.display(), values.len()));
            }
            ns3_runs.push(values);
        }
        eprintln!();
        let mean_of = |runs: &[Vec<f64>], members: &[usize]| {
            let values: Vec<f64> = runs.iter().flat_map(|r| members.iter().map(|&i| r[i])).collect();
            mean_and_deviation(&values).0
        };
        let mut flows_json = Vec::new();
        for (flow, access_ms) in access.iter().enumerate() {
            let (lab, ns3) = (mean_of(&lab_runs, &[flow]), mean_of(&ns3_runs, &[flow]));
            worst_flow = worst_flow.max((lab / ns3 - 1.0).abs());
            flows_json.push(json!({"flow": flow, "access_ms": access_ms, "lab_bps": lab, "ns3_bps": ns3, "relative_difference": lab / ns3 - 1.0}));
        }
        let mut classes: Vec<f64> = access.clone();
        classes.dedup();
        let mut classes_json = Vec::new();
        for class in classes {
            let members: Vec<usize> = (0..flows).filter(|&i| access[i] == class).collect();
            let (lab, ns3) = (mean_of(&lab_runs, &members), mean_of(&ns3_runs, &members));
            let difference = lab / ns3 - 1.0;
            worst_class = worst_class.max(difference.abs());
            table.row(vec![
                name.to_string(),
                members.len().to_string(),
                class.to_string(),
                fmt(Some(lab / 1e6), 3),
                fmt(Some(ns3 / 1e6), 3),
                fmt(Some(difference * 100.0), 1) + "%",
            ]);
            classes_json.push(json!({"access_ms": class, "flows": members.len(), "lab_bps": lab, "ns3_bps": ns3, "relative_difference": difference}));
        }
        let per_flow = |runs: &[Vec<f64>]| (0..flows).map(|i| mean_of(runs, &[i])).collect::<Vec<f64>>();
        let jain =
            |runs: &[Vec<f64>]| mean_and_deviation(&runs.iter().map(|r| metrics::jain_index(r)).collect::<Vec<_>>()).0;
        cases_json.push(json!({"case": name, "classes": classes_json, "flows": flows_json,
            "lab_per_flow_bps": per_flow(&lab_runs), "ns3_per_flow_bps": per_flow(&ns3_runs),
            "lab_mean_jain": jain(&lab_runs), "ns3_mean_jain": jain(&ns3_runs), "scenario": scenario}));
    }
    print!("{}", table.render());
    println!(
        "largest difference of a class mean: {:.1}%; of a single flow's mean over {} runs: {:.1}%",
        worst_class * 100.0,
        args.runs,
        worst_flow * 100.0
    );
    let summary = json!({"scenario": "ns3-compare", "seed": 1, "flows": [],
        "metrics": {"fairness_index": serde_json::Value::Null, "cov": serde_json::Value::Null, "utilization": serde_json::Value::Null,
            "cases": cases_json, "largest_class_difference": worst_class, "largest_flow_difference": worst_flow, "runs": args.runs, "duration_s": args.duration}});
    report::write_summary(&args.out, &summary)?;
    println!("wrote {}", args.out.join("summary.json").display());
    Ok(())
}
