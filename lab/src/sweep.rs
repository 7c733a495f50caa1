//! Runs many simulations on all cores: one simulation per thread at a time,
//! results stored by job index, so the outcome does not depend on the
//! number of threads or on which thread ran what. Progress goes to stderr;
//! the wall clock is read only for that display.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Instant;

use crate::result::RunResult;
use crate::setup::Setup;
use crate::sim::Simulation;

/// One simulation to run.
#[derive(Clone, Debug)]
pub struct Job {
    /// What to simulate.
    pub setup: Setup,
    /// Its seed.
    pub seed: u64,
}

/// The number of threads to use when none is asked for: every core.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `jobs` on `threads` threads and reduces each result with `digest`
/// (on the worker, so that large results are not kept). Results come back
/// in job order.
pub fn run<T: Send>(
    label: &str,
    jobs: Vec<Job>,
    threads: usize,
    digest: impl Fn(usize, RunResult) -> T + Sync,
) -> Vec<T> {
    let total = jobs.len();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..total).map(|_| None).collect());
    let started = Instant::now();
    let progress = total > 1;
    // Tenths of a second since the start at the last progress line.
    let shown = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, total.max(1)) {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(index) else { break };
                let result = digest(index, Simulation::new(job.setup.clone(), job.seed).run());
                // A poisoned lock means another worker panicked; its panic
                // is propagated by the scope, so the value can be dropped.
                if let Ok(mut slots) = results.lock() {
                    slots[index] = Some(result);
                }
                let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                let tenths = started.elapsed().as_millis() as usize / 100;
                let due = tenths >= shown.load(Ordering::Relaxed) + 10 || finished == total;
                if progress && due {
                    shown.store(tenths, Ordering::Relaxed);
                    let elapsed = started.elapsed().as_secs_f64();
                    let left = elapsed / finished as f64 * (total - finished) as f64;
                    eprint!("\r[{label}] {finished}/{total} runs, {elapsed:.0} s elapsed, about {left:.0} s left   ");
                }
            });
        }
    });
    if progress {
        eprintln!();
    }
    let slots = results.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
    slots.into_iter().map(|slot| slot.expect("every job ran: the scope joined all workers")).collect()
}
