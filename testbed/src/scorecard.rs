//! The testbed's scorecard: the lab's grid, campaign and report with real
//! endpoints and Linux TCP through the ns-3 bottleneck.
//!
//! The grid's peers are those of the testbed's built-ins: Linux TCP
//! (`tcp-cubic`, `tcp-reno`: iperf3) and quiche's own (`cubic`, `reno`).
//! Runs are real time, one at a time unless `--jobs` says otherwise, each
//! behind the load gate; a run whose emulation lagged or that started on a
//! busy machine counts, but is marked (`untrusted` in the scorecard).

use std::path::Path as FilePath;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use flowshare_lab::options::Options;
use flowshare_lab::report;
use flowshare_lab::scenario::TESTBED_START_SPREAD_S;
use flowshare_lab::scorecard::campaign::Campaign;
use flowshare_lab::scorecard::campaign::Job;
use flowshare_lab::scorecard::campaign::Seeds;
use flowshare_lab::scorecard::campaign::SEED_LIMIT;
use flowshare_lab::scorecard::card::Sample;
use flowshare_lab::scorecard::card::Scorecard;
use flowshare_lab::scorecard::card::Shard;
use flowshare_lab::scorecard::grid;
use flowshare_lab::scorecard::grid::Access;
use flowshare_lab::scorecard::grid::Cell;
use flowshare_lab::scorecard::grid::Flows;
use flowshare_lab::scorecard::grid::Path;
use flowshare_lab::scorecard::PRECISION;
use flowshare_lab::scorecard::TOLERANCE;
use flowshare_lab::setup::Role;
use serde::Deserialize;
use serde::Serialize;

use crate::arrivals::quantile;
use crate::builtin;
use crate::builtin::Case;
use crate::cli::MachineArgs;
use crate::scenario::Transport;

/// Every flow's access unless `--jitter` and `--jitter-shape` say
/// otherwise: no delay (every path's delay is its link's; the testbed
/// refuses access delays) and the lab's access jitter, up to 1 ms
/// drifting, which ns-3 gives each flow before the bottleneck queue.
/// Without it, which stack's packet takes the slot a departure frees
/// depends on how soon it answers an acknowledgement modulo the service
/// time (a phase effect), and with it the same campaign's controls spread
/// less and hold their weight more often (testbed/README.md, "Phase";
/// `--jitter 0` runs the endpoints' own timing, as every campaign before
/// 2026-12-06).
const TESTBED_ACCESS: Access = Access { delay_ms: 0.0, ..grid::LAB_ACCESS };

/// The controllers whose weight the issue asks the testbed to prove, as
/// the grid judges them: the testbed's peers (Linux TCP without `fq`,
/// quiche's CUBIC and Reno) do not pace, and a paced connection of weight
/// one takes 2.9-3.9 times an unpaced peer's share, so PA-MulTCP runs
/// `pacing=off` (controllers/README.md, `pacing`); MulTFRC is rate-based
/// and must pace. `pacing=split` holds against Linux TCP but not against
/// quiche's CUBIC (testbed/README.md, "Splitting the bursts").
const CONTROLLERS: [&str; 2] = ["pa-multcp:pacing=off", "multfrc"];

/// The weights of the testbed's grid.
const WEIGHTS: [f64; 4] = [0.5, 2.0, 4.0, 8.0];

/// Standard flows next to the weighted connection: four average out a
/// single peer's luck at a rate ns-3 keeps up with on two cores.
const STANDARD_FLOWS: usize = 4;

/// Seconds per run of the full grid. The fairness index's spread over
/// runs falls as the square root of the time measured: a weight-one
/// control against four Linux TCP CUBIC flows spread 14-35 % (standard
/// deviation over the mean) in 40 s runs and 7 % in 160 s runs (the first
/// quarter warm-up), where about ten runs bring its 95 % interval within
/// the scorecard's ±5 % (testbed/README.md).
const FULL_DURATION_S: f64 = 160.0;

/// Runs per cell of the full grid: six, then two more at a time while the
/// cell's interval is wider than ±5 %, up to `SEED_LIMIT`.
const FULL_SEEDS: Seeds = Seeds { min: 6, max: SEED_LIMIT, step: 2 };

/// The testbed's paths: 20 Mbit/s at 40 ms and 50 Mbit/s at 20 ms, runs
/// of `duration_s` real seconds.
fn paths(standard: usize, duration_s: f64) -> Vec<Path> {
    let path = |name: &str, rate_mbps, rtt_ms| Path {
        name: name.into(),
        rate_mbps,
        rtt_ms,
        flows: Flows::Standard(standard),
        duration_s,
    };
    vec![path("tb-20", 20.0, 40.0), path("tb-50", 50.0, 20.0)]
}

/// The suffix of a Linux TCP peer that paces (an `fq` qdisc on the server
/// side, [`crate::scenario::TestbedScenario::tcp_pacing`]): `tcp-cubic-paced`.
const PACED: &str = "-paced";

/// The peer `name` without [`PACED`], and whether it had it.
fn pacing(name: &str) -> (&str, bool) {
    match name.strip_suffix(PACED) {
        Some(peer) if peer.starts_with("tcp-") => (peer, true),
        _ => (name, false),
    }
}

/// The testbed's campaign: PA-MulTCP and MulTFRC against the four peers at
/// N = 0.5, 2, 4, 8 on two paths and three queues; the quick form runs one
/// path, drop-tail, the Linux and quiche CUBIC peers and N = 0.5, 4.
pub fn campaign(options: &Options, shard: Option<Shard>) -> Result<Campaign, String> {
    if options.peer_pacing.is_some() {
        return Err("--peer-pacing is the lab's: the testbed's peers are real stacks and pace as they do".into());
    }
    // `--m` sets the standard flows of every cell; `--peer-pacing` is
    // refused above with a reason of its own.
    grid::refuse_unused(options, "the testbed's scorecard", &["m"])?;
    let quick = options.quick;
    let controllers =
        options.controllers.clone().unwrap_or_else(|| CONTROLLERS.iter().map(|c| c.to_string()).collect());
    grid::check_controllers(&controllers)?;
    let peers = options.peers.clone().unwrap_or_else(|| match quick {
        true => vec!["tcp-cubic".into(), "cubic".into()],
        false => builtin::default_peer_names(),
    });
    for peer in &peers {
        builtin::peer(pacing(peer).0, 1, &[flowshare_lab::scenario::BOTTLENECK])?;
    }
    let weights = options.n.clone().unwrap_or_else(|| if quick { vec![0.5, 4.0] } else { WEIGHTS.to_vec() });
    let duration_s = options.duration_s.unwrap_or(if quick { 40.0 } else { FULL_DURATION_S });
    let mut paths = paths(options.standard_flows.unwrap_or(STANDARD_FLOWS), duration_s);
    if quick {
        paths.truncate(1);
    }
    let groups = grid::narrowed_groups(&controllers, &peers, paths, &weights, options)?;
    let seeds = match options.seeds {
        Some(seeds) => Seeds { min: seeds, max: seeds, step: 1 },
        None if quick => Seeds { min: 2, max: 2, step: 1 },
        None => FULL_SEEDS,
    };
    Ok(Campaign {
        kind: "testbed",
        quick,
        groups,
        shard,
        seed: options.seed,
        seeds,
        precision: PRECISION,
        tolerance: TOLERANCE,
        // Recorded even at the default, so that a campaign of another
        // jitter (or of the endpoints' own timing, before the default
        // changed) never merges or resumes into this one.
        access_jitter_ms: Some(options.access_jitter_ms.unwrap_or(TESTBED_ACCESS.jitter_ms)),
        access_jitter_shape: Some(options.jitter_shape.unwrap_or(TESTBED_ACCESS.jitter_shape)),
        peer_pacing: None,
        separate: false,
        quic_pacing_slack_us: None,
    })
}

/// Every flow's access in `campaign`: [`TESTBED_ACCESS`] with the
/// campaign's jitter.
fn access(campaign: &Campaign) -> Access {
    Access {
        jitter_ms: campaign.access_jitter_ms.unwrap_or(TESTBED_ACCESS.jitter_ms),
        jitter_shape: campaign.access_jitter_shape.unwrap_or(TESTBED_ACCESS.jitter_shape),
        ..TESTBED_ACCESS
    }
}

/// The testbed case of a job: the group's scenario with its peers' transports.
fn case(campaign: &Campaign, job: &Job) -> Result<Case, String> {
    let group = &campaign.groups[job.group];
    let (peer, paced) = pacing(&group.peer);
    let (_, transport) = builtin::peer(peer, 1, &[flowshare_lab::scenario::BOTTLENECK])?;
    let access = access(campaign);
    let scenario = group.scenario(job.cell, TESTBED_START_SPREAD_S, access, &|count| {
        builtin::peer(peer, count, &[flowshare_lab::scenario::BOTTLENECK]).map(|(flow, _)| access.apply(flow))
    })?;
    let transports = vec![Transport::Quic, transport];
    let name = match job.cell {
        Cell::Control => format!("{}/control", group.key()),
        Cell::Weight(n) => format!("{}/n={n}", group.key()),
        Cell::Separate(n) => format!("{}/{n}-separate", group.key()),
    };
    let scenario = crate::scenario::TestbedScenario {
        tcp_pacing: paced,
        quic_pacing_slack_us: campaign.quic_pacing_slack_us,
        ..crate::scenario::TestbedScenario::with_transports(scenario, transports)
    };
    Ok(Case { name: builtin::file_safe(&name), scenario })
}

/// The file in a run's directory that keeps its sample for `--resume`.
const KEPT_RUN: &str = "sample.json";

/// What a finished run keeps for a later `--resume`: with the scenario and
/// seed it ran, so that a run of anything else is never taken for it.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct KeptRun {
    scenario: String,
    seed: u64,
    /// `None`: the run finished but a role had no throughput.
    sample: Option<Sample>,
    /// How the machine kept up with the emulation; absent in runs kept
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    machine: Option<MachineHealth>,
    /// The bottleneck's overflow episodes and whom they caught; absent in
    /// runs kept before they were recorded and in runs whose queue dropped
    /// nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    episodes: Option<RunEpisodes>,
}

/// A run's overflow episodes at the bottleneck (the grid's paths have one
/// link), by role: why a connection met more or fewer loss events than
/// its peers (`crate::episodes`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct RunEpisodes {
    /// Episodes per second.
    per_s: f64,
    /// Mean number of flows an episode dropped packets of.
    flows_per_episode: f64,
    /// Share of episodes that caught the weighted connection.
    weighted_caught_share: f64,
    /// The same for each standard flow.
    standard_caught_shares: Vec<f64>,
}

impl RunEpisodes {
    fn of(outcome: &crate::results::Outcome) -> Option<RunEpisodes> {
        let episodes = outcome.episodes.first()?.as_ref()?;
        let of_role = |role: Role| -> Vec<f64> {
            outcome
                .run
                .connections
                .iter()
                .zip(&episodes.caught_share)
                .filter(|(connection, _)| connection.role == role)
                .map(|(_, &share)| share)
                .collect()
        };
        let weighted = of_role(Role::Weighted);
        if weighted.is_empty() {
            return None;
        }
        Some(RunEpisodes {
            per_s: episodes.per_s,
            flows_per_episode: episodes.flows_per_episode,
            weighted_caught_share: weighted.iter().sum::<f64>() / weighted.len() as f64,
            standard_caught_shares: of_role(Role::Standard),
        })
    }
}

/// A row of `episodes.csv`: one run's episodes beside its sample.
#[derive(Debug)]
struct EpisodesRow {
    cell: String,
    seed: u64,
    /// `None`: a role had no throughput.
    sample: Option<Sample>,
    episodes: RunEpisodes,
}

/// The file in the output directory with every run's overflow episodes
/// beside its fairness index and loss event rates, a row per run.
const EPISODES_FILE: &str = "episodes.csv";

/// `episodes.csv` of `runs`, ordered by cell and seed.
fn episodes_csv(runs: &mut [EpisodesRow]) -> String {
    runs.sort_by(|a, b| (&a.cell, a.seed).cmp(&(&b.cell, b.seed)));
    let mut csv = String::from(
        "cell,seed,trusted,fairness_index,loss_event_rate_weighted_over_standard,episodes_per_s,flows_dropped_per_episode,weighted_caught_share,standard_caught_shares\n",
    );
    for EpisodesRow { cell, seed, sample, episodes } in runs.iter() {
        let (trusted, fairness_index, loss_ratio) = match sample {
            Some(sample) => (
                sample.trusted.to_string(),
                format!("{:.4}", sample.fairness_index),
                // Empty where the standard flows met no loss event.
                Some(sample.weighted_loss_event_rate / sample.standard_loss_event_rate)
                    .filter(|ratio| ratio.is_finite())
                    .map_or(String::new(), |ratio| format!("{ratio:.3}")),
            ),
            None => Default::default(),
        };
        let standard: Vec<String> = episodes.standard_caught_shares.iter().map(|share| format!("{share:.3}")).collect();
        csv += &format!(
            "{cell},{seed},{trusted},{fairness_index},{loss_ratio},{:.3},{:.2},{:.3},{}\n",
            episodes.per_s,
            episodes.flows_per_episode,
            episodes.weighted_caught_share,
            standard.join(" ")
        );
    }
    csv
}

/// How well a run's machine kept up, kept beside its sample: the same cell
/// has moved by more than its interval between machines whose ns-3 waited
/// 12-18 and 41-76 us for a CPU (testbed/README.md, "Where the testbed
/// stands"), so a campaign's directory says which kind of machine it had.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct MachineHealth {
    /// ns-3's mean wait for a CPU per wake-up, us (where measured).
    ns3_cpu_wait_us: Option<f64>,
    /// Largest lag of real time behind simulated time, ms.
    max_lag_ms: Option<f64>,
}

impl MachineHealth {
    fn of(emulation: &crate::results::Emulation) -> MachineHealth {
        MachineHealth {
            ns3_cpu_wait_us: emulation.cpu_wait_us.filter(|wait| wait.is_finite()),
            max_lag_ms: Some(emulation.max_lag_ms).filter(|lag| lag.is_finite()),
        }
    }
}

/// The file in the output directory that keeps the campaign's line on its
/// machine, beside the scorecard.
const MACHINE_FILE: &str = "machine.txt";

/// The campaign's line on its machine, from the runs that recorded one:
/// the spread of ns-3's CPU wait and of the lag, and how many runs the
/// scorecard marks untrusted.
fn machine_line(health: &[MachineHealth], runs: usize, untrusted: usize) -> String {
    let range = |mut values: Vec<f64>, unit: &str| -> Option<String> {
        values.sort_by(f64::total_cmp);
        let [low, median, high] = [0.0, 0.5, 1.0].map(|q| quantile(&values, q));
        Some(format!("{:.0}-{:.0} {unit} (median {:.0})", low?, high?, median?))
    };
    let waits = range(health.iter().filter_map(|h| h.ns3_cpu_wait_us).collect(), "us");
    let lags = range(health.iter().filter_map(|h| h.max_lag_ms).collect(), "ms");
    let mut line = format!("{untrusted} of {runs} runs untrusted");
    if let Some(waits) = waits {
        line += &format!("; ns-3 waited {waits} for a CPU per wake-up");
    }
    if let Some(lags) = lags {
        line += &format!("; largest lag per run {lags}");
    }
    if health.len() < runs {
        line += &format!(" ({} of the runs recorded the machine)", health.len());
    }
    line
}

/// The run an earlier invocation finished in `dir`, if it left one; an
/// error if that run was of another scenario or seed.
fn kept_run(dir: &FilePath, scenario: &str, seed: u64) -> Result<Option<KeptRun>, String> {
    let path = dir.join(KEPT_RUN);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let kept: KeptRun = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if kept.scenario != scenario || kept.seed != seed {
        return Err(format!(
            "{} is a run of another scenario or seed; --resume continues only the campaign that wrote this directory (another --out starts afresh)",
            path.display()
        ));
    }
    Ok(Some(kept))
}

fn keep_run(dir: &FilePath, kept: &KeptRun) -> Result<(), String> {
    let text = serde_json::to_string_pretty(kept).map_err(|e| format!("cannot encode {KEPT_RUN}: {e}"))?;
    report::write_file(dir, KEPT_RUN, &(text + "\n"))
}

/// How a campaign runs on this machine.
#[derive(Clone, Copy, Debug)]
pub struct Execution {
    /// Keep the runs an earlier invocation finished in the output
    /// directory (same scenario and seed) instead of repeating them.
    pub resume: bool,
    /// Runs at the same time, each in namespaces and an ns-3 of its own.
    pub jobs: usize,
}

/// Checks the machine, removes what killed runs left, and runs the
/// campaign, stopping cleanly at Ctrl-C.
pub fn run_checked(
    campaign: &Campaign,
    machine: &MachineArgs,
    out: &FilePath,
    execution: Execution,
) -> Result<Scorecard, String> {
    crate::requirements::check()?;
    for stale in crate::netns::remove_stale() {
        eprintln!("note: removed namespace {stale} left by a run that was killed");
    }
    let interrupted = crate::cli::interrupt_flag()?;
    run(campaign, machine, out, execution, &interrupted)
}

/// What the runs of a campaign have done so far, shared by its workers.
#[derive(Default)]
struct Progress {
    /// Runs that ended, failed ones included (kept ones not).
    done: usize,
    /// Runs with a result, kept ones included.
    succeeded: usize,
    first_failure: Option<String>,
    /// The machine's health in every run with a result, kept ones included.
    machine: Vec<MachineHealth>,
    /// Every run's overflow episodes, kept ones included where they
    /// recorded them.
    episodes: Vec<EpisodesRow>,
}

impl Progress {
    /// Counts a run with a result of `cell`, kept from an earlier
    /// invocation or just run, and gives back its sample.
    fn record(&mut self, cell: &str, kept: KeptRun) -> Option<Sample> {
        self.succeeded += 1;
        self.machine.extend(kept.machine);
        if let Some(episodes) = kept.episodes {
            self.episodes.push(EpisodesRow { cell: cell.to_string(), seed: kept.seed, sample: kept.sample, episodes });
        }
        kept.sample
    }
}

/// Runs the campaign through the testbed, `execution.jobs` runs at a time;
/// each run's files go under `out/runs/`. With `execution.resume`, a run an
/// earlier invocation finished in the same directory (same scenario and
/// seed) is kept, not repeated: an interrupted campaign goes on where it
/// stopped, and more `--seeds` add runs to a finished one.
pub fn run(
    campaign: &Campaign,
    machine: &MachineArgs,
    out: &FilePath,
    execution: Execution,
    interrupted: &AtomicBool,
) -> Result<Scorecard, String> {
    if execution.jobs == 0 {
        return Err("--jobs must be at least 1".into());
    }
    let mut machine = machine.clone();
    machine.concurrent = execution.jobs > 1;
    if machine.ns3.is_none() {
        // Once, before the workers: each would otherwise run the build.
        machine.ns3 = Some(crate::emulator::build()?);
    }
    let machine = &machine;
    let budget = Mutex::new(Duration::from_secs_f64(machine.wait_quiet.max(0.0)));
    let started = Instant::now();
    let progress = Mutex::new(Progress::default());
    let lock = || progress.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut execute = |jobs: &[Job], round: usize| {
        let mut samples: Vec<Option<Option<Sample>>> = vec![None; jobs.len()];
        let mut pending = Vec::new();
        for (k, job) in jobs.iter().enumerate() {
            let case = case(campaign, job)?;
            let dir = out.join("runs").join(&case.name).join(format!("seed-{}", job.seed));
            let scenario = case.scenario.to_toml();
            if execution.resume {
                if let Some(kept) = kept_run(&dir, &scenario, job.seed)? {
                    eprintln!(
                        "[scorecard round {round}] run {}/{}: {} (seed {}) kept from an earlier invocation",
                        k + 1,
                        jobs.len(),
                        case.name,
                        job.seed
                    );
                    samples[k] = Some(lock().record(&case.name, kept));
                    continue;
                }
            }
            // The directory's files are about to be replaced: a sample kept
            // from before must not outlive them if this run fails.
            match std::fs::remove_file(dir.join(KEPT_RUN)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(format!("cannot remove {}: {e}", dir.join(KEPT_RUN).display()))
                }
                _ => {}
            }
            pending.push((k, case, dir, scenario));
        }
        let to_run = pending.len();
        let next = AtomicUsize::new(0);
        // Set by the first worker that fails, so that the others start no
        // further run.
        let stop = AtomicBool::new(false);
        let results = Mutex::new(Vec::with_capacity(to_run));
        let runs = || -> Result<(), String> {
            loop {
                let position = next.fetch_add(1, Ordering::Relaxed);
                let Some((k, case, dir, scenario)) = pending.get(position) else { return Ok(()) };
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                if interrupted.load(Ordering::Relaxed) {
                    return Err("interrupted".into());
                }
                let job = &jobs[*k];
                let (elapsed, done) = (started.elapsed().as_secs_f64(), lock().done);
                // Until a run has finished there is no pace to extrapolate.
                let left = match done {
                    0 => "the round's length is known after its first run".to_string(),
                    // Wall time per finished run already counts the runs
                    // that went on beside each other.
                    done => format!("round ends in about {:.0} s", elapsed / done as f64 * (to_run - position) as f64),
                };
                eprintln!(
                    "[scorecard round {round}] run {}/{to_run}: {} (seed {}), {elapsed:.0} s elapsed, {left}",
                    position + 1,
                    case.name,
                    job.seed
                );
                let sample = match crate::cli::run_case(case, job.seed, dir, machine, &budget, interrupted) {
                    Ok((outcome, summary, _)) => {
                        let sample = Sample::of(&outcome.run, crate::results::trusted(&summary));
                        let kept = KeptRun {
                            scenario: scenario.clone(),
                            seed: job.seed,
                            sample,
                            machine: Some(MachineHealth::of(&outcome.emulation)),
                            episodes: RunEpisodes::of(&outcome),
                        };
                        keep_run(dir, &kept)?;
                        lock().record(&case.name, kept)
                    }
                    Err(error) if interrupted.load(Ordering::Relaxed) => return Err(error),
                    Err(error) => {
                        eprintln!("[scorecard] {} seed {} failed: {error}", case.name, job.seed);
                        lock().first_failure.get_or_insert_with(|| format!("{} seed {}: {error}", case.name, job.seed));
                        None
                    }
                };
                lock().done += 1;
                results.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push((*k, sample));
            }
        };
        let worker = || {
            let outcome = runs();
            if outcome.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            outcome
        };
        let outcomes: Vec<Result<(), String>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..execution.jobs.min(to_run)).map(|_| scope.spawn(worker)).collect();
            workers
                .into_iter()
                .map(|worker| worker.join().unwrap_or_else(|_| Err("a run's worker panicked".into())))
                .collect()
        });
        // The first error stops the campaign (Ctrl-C, a run that cannot
        // write its files); the other workers finished their runs first.
        outcomes.into_iter().collect::<Result<(), String>>()?;
        for (k, sample) in results.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()) {
            samples[k] = Some(sample);
        }
        Ok(samples.into_iter().map(Option::flatten).collect())
    };
    let scorecard = campaign.run(&mut execute)?;
    let mut progress = progress.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
    let cells = scorecard.groups.iter().flat_map(|group| group.all_cells());
    let (runs, untrusted) =
        cells.fold((0, 0), |(runs, untrusted), cell| (runs + cell.seeds, untrusted + cell.untrusted));
    let machine_line = machine_line(&progress.machine, runs, untrusted);
    eprintln!("[scorecard] this machine: {machine_line}");
    report::write_file(out, MACHINE_FILE, &(machine_line + "\n"))?;
    if !progress.episodes.is_empty() {
        report::write_file(out, EPISODES_FILE, &episodes_csv(&mut progress.episodes))?;
    }
    match progress.first_failure {
        // Nothing to judge: a scorecard of empty cells would hide why.
        Some(failure) if progress.succeeded == 0 => Err(format!("every run failed; the first: {failure}")),
        _ => Ok(scorecard),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulator::AccessJitter;
    use flowshare_lab::setup::JitterShape;

    /// Every cell of the quick and the full grid, with paced and unpaced
    /// Linux peers and N separate connections beside every whole N, makes
    /// a scenario the testbed can run: the grid is shared with the lab,
    /// whose flows have access delays the testbed refuses.
    #[test]
    fn every_cell_of_the_grids_plans_as_a_testbed_run() {
        for quick in [true, false] {
            let options = Options {
                quick,
                peers: (!quick)
                    .then(|| vec!["tcp-cubic-paced".to_string(), "cubic".to_string(), "tcp-reno".to_string()]),
                ..Options::default()
            };
            // A campaign's pacing slack (`--pacing-slack`) reaches every
            // run's QUIC servers.
            let slack = quick.then_some(10);
            let campaign = Campaign { quic_pacing_slack_us: slack, ..campaign(&options, None).expect("campaign") };
            for (position, group) in campaign.own_groups() {
                for cell in group.cells(true) {
                    let job = Job { group: position, cell, seed: 1 };
                    let case = case(&campaign, &job).expect("case");
                    let mut notes = String::new();
                    match case.scenario.plan(1, &mut notes) {
                        Ok(plan) => assert_eq!(plan.quic_pacing_slack_us, slack, "{}", case.name),
                        Err(error) => panic!("{}: {error}", case.name),
                    }
                }
            }
        }
    }

    #[test]
    fn a_kept_run_is_taken_back_only_for_its_own_scenario_and_seed() {
        let dir = std::env::temp_dir().join(format!("flowshare-testbed-kept-run-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(kept_run(&dir, "scenario", 7), Ok(None), "nothing kept yet");

        let sample = Sample {
            fairness_index: 0.91,
            weighted_loss_event_rate: 0.0031,
            standard_loss_event_rate: 0.0022,
            weighted_loss_over_drop_rate: 0.77,
            standard_loss_over_drop_rate: 1.06,
            utilization: 0.9986,
            trusted: false,
        };
        let machine = MachineHealth { ns3_cpu_wait_us: Some(41.5), max_lag_ms: Some(12.25) };
        let episodes = RunEpisodes {
            per_s: 1.25,
            flows_per_episode: 3.2,
            weighted_caught_share: 0.4,
            standard_caught_shares: vec![0.7, 0.65, 0.6, 0.62],
        };
        let kept = KeptRun {
            scenario: "scenario".into(),
            seed: 16490336266968443936,
            sample: Some(sample),
            machine: Some(machine),
            episodes: Some(episodes.clone()),
        };
        keep_run(&dir, &kept).expect("kept");
        let taken = kept_run(&dir, "scenario", 16490336266968443936).expect("read").expect("kept");
        assert_eq!((taken.sample, taken.machine, taken.episodes), (Some(sample), Some(machine), Some(episodes)));
        for (scenario, seed) in [("another scenario", 16490336266968443936), ("scenario", 7)] {
            let error = kept_run(&dir, scenario, seed).expect_err("another run's");
            assert!(error.contains("is a run of another scenario or seed"), "{error}");
        }
        std::fs::write(dir.join(KEPT_RUN), "{").expect("truncated");
        let error = kept_run(&dir, "scenario", 7).expect_err("unreadable");
        assert!(error.starts_with(&dir.join(KEPT_RUN).display().to_string()), "{error}");
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    /// The measured directories' runs were kept before the machine was
    /// recorded: they still resume, without it.
    #[test]
    fn a_run_kept_without_its_machine_is_still_taken_back() {
        let dir = std::env::temp_dir().join(format!("flowshare-testbed-kept-old-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let old = r#"{"scenario": "s", "seed": 3, "sample": {"fairness_index": 1.1, "weighted_loss_event_rate": 0.002,
            "standard_loss_event_rate": 0.0019, "utilization": 0.997, "trusted": true}}"#;
        std::fs::write(dir.join(KEPT_RUN), old).expect("written");
        let taken = kept_run(&dir, "s", 3).expect("read").expect("kept");
        assert_eq!((taken.machine, taken.episodes), (None, None));
        assert_eq!(taken.sample.map(|sample| sample.fairness_index), Some(1.1));
        let loss =
            taken.sample.map(|sample| (sample.weighted_loss_over_drop_rate, sample.standard_loss_over_drop_rate));
        assert!(loss.is_some_and(|(weighted, standard)| weighted.is_nan() && standard.is_nan()), "not recorded then");
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn the_machine_line_gives_the_spread_of_cpu_wait_and_lag() {
        let health = |wait, lag| MachineHealth { ns3_cpu_wait_us: wait, max_lag_ms: lag };
        let runs = [health(Some(44.0), Some(9.4)), health(Some(76.2), Some(101.0)), health(None, Some(12.0))];
        assert_eq!(
            machine_line(&runs, 4, 1),
            "1 of 4 runs untrusted; ns-3 waited 44-76 us (median 76) for a CPU per wake-up; \
             largest lag per run 9-101 ms (median 12) (3 of the runs recorded the machine)"
        );
        assert_eq!(machine_line(&[], 2, 0), "0 of 2 runs untrusted (0 of the runs recorded the machine)");
    }

    #[test]
    fn the_episodes_file_has_a_row_per_run_in_cell_and_seed_order() {
        let sample = |fairness_index| Sample {
            fairness_index,
            weighted_loss_event_rate: 0.001,
            standard_loss_event_rate: 0.002,
            weighted_loss_over_drop_rate: 0.7,
            standard_loss_over_drop_rate: 1.1,
            utilization: 0.998,
            trusted: true,
        };
        let episodes = |weighted| RunEpisodes {
            per_s: 1.2,
            flows_per_episode: 3.05,
            weighted_caught_share: weighted,
            standard_caught_shares: vec![0.7, 0.6],
        };
        let row = |cell: &str, seed, sample, episodes| EpisodesRow { cell: cell.into(), seed, sample, episodes };
        let no_standard_loss = Sample { standard_loss_event_rate: 0.0, ..sample(0.9) };
        let mut runs = vec![
            row("b", 2, Some(sample(1.5)), episodes(0.35)),
            row("a", 9, None, episodes(0.5)),
            row("b", 1, Some(sample(1.25)), episodes(0.4)),
            row("c", 1, Some(no_standard_loss), episodes(0.2)),
        ];
        let csv = episodes_csv(&mut runs);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with("cell,seed,trusted,fairness_index,"), "{}", lines[0]);
        assert_eq!(
            &lines[1..],
            [
                "a,9,,,,1.200,3.05,0.500,0.700 0.600",
                "b,1,true,1.2500,0.500,1.200,3.05,0.400,0.700 0.600",
                "b,2,true,1.5000,0.500,1.200,3.05,0.350,0.700 0.600",
                "c,1,true,0.9000,,1.200,3.05,0.200,0.700 0.600"
            ]
        );
    }

    /// Without `--controllers` the campaign runs the grid the READMEs'
    /// tables judge: PA-MulTCP unpaced, as its peers send.
    #[test]
    fn the_default_campaign_runs_pa_multcp_unpaced_and_multfrc() {
        let campaign = campaign(&Options::default(), None).expect("campaign");
        // The grid nests peers, paths and queues inside each controller.
        let mut controllers: Vec<&str> = campaign.groups.iter().map(|group| group.controller.as_str()).collect();
        controllers.dedup();
        assert_eq!(controllers, ["pa-multcp:pacing=off", "multfrc"]);
    }

    #[test]
    fn the_grid_refuses_what_it_would_ignore() {
        let quick = Options { quick: true, ..Options::default() };
        let refused = |options: Options| campaign(&options, None).map(|_| ()).unwrap_err();
        assert_eq!(
            refused(Options { warmup_s: Some(10.0), ..quick.clone() }),
            "the testbed's scorecard does not use --warmup: leave it out"
        );
        assert_eq!(
            refused(Options { controllers: Some(vec!["pa-multcp:n=4,pacing=off".into()]), ..quick.clone() }),
            "--controllers pa-multcp:n=4,pacing=off: the grid sets n from --n; give the spec without it"
        );
        assert_eq!(
            refused(Options { controllers: Some(vec!["cubic".into()]), ..quick }),
            "--controllers cubic: not a weighted controller"
        );
        let narrowed =
            Options { standard_flows: Some(2), duration_s: Some(20.0), rtt_ms: Some(20.0), ..Options::default() };
        let narrowed = campaign(&narrowed, None).expect("campaign");
        assert!(narrowed.groups.iter().all(|group| group.path.name == "tb-50"));
    }

    #[test]
    fn the_jitter_flags_give_every_flow_of_every_run_that_jitter() {
        let options = Options { quick: true, access_jitter_ms: Some(2.0), ..Options::default() };
        let campaign = campaign(&options, None).expect("campaign");
        assert_eq!((campaign.access_jitter_ms, campaign.access_jitter_shape), (Some(2.0), Some(JitterShape::Drift)));
        for (position, group) in campaign.own_groups() {
            for cell in group.cells(false) {
                let case = case(&campaign, &Job { group: position, cell, seed: 1 }).expect("case");
                let plan = case.scenario.plan(1, &mut String::new()).expect("plan");
                assert_eq!(plan.access_jitter, Some(AccessJitter { max_us: 2_000, shape: JitterShape::Drift }));
            }
        }
        // Without them the lab's jitter, recorded; `--jitter 0` the
        // endpoints' own timing, as every campaign before 2026-12-06.
        let plan_of = |options: Options| {
            let campaign = super::campaign(&options, None).expect("campaign");
            let case = case(&campaign, &Job { group: 0, cell: Cell::Control, seed: 1 }).expect("case");
            (campaign.access_jitter_ms, case.scenario.plan(1, &mut String::new()).expect("plan").access_jitter)
        };
        let lab = AccessJitter { max_us: 1_000, shape: JitterShape::Drift };
        assert_eq!(plan_of(Options { quick: true, ..Options::default() }), (Some(1.0), Some(lab)));
        let own = Options { quick: true, access_jitter_ms: Some(0.0), ..Options::default() };
        assert_eq!(plan_of(own), (Some(0.0), None));
    }
}
