//! What the experiments share: their flows, jobs, notes and JSON keys.

use std::fmt::Write as _;

use serde_json::json;
use serde_json::Value;

use crate::options::Options;
use crate::options::Weighted;
use crate::rng::derive_seed;
use crate::scenario::FlowConfig;
use crate::scenario::Scenario;
use crate::scenario::BOTTLENECK;
use crate::setup::Role;
use crate::sweep::Job;

/// `count` bulk flows of `cc` across the bottleneck with 1 ms access delay
/// and up to 1 ms of jitter, which breaks the phase effects of identical
/// RTTs.
pub fn bulk(cc: &str, count: usize, role: Role) -> FlowConfig {
    FlowConfig::bulk(cc, count, &[BOTTLENECK]).with_access(1.0, 1.0).with_role(role)
}

/// `scenario` with `--pacing` applied.
pub fn paced(scenario: Scenario, options: &Options) -> Scenario {
    match options.pacing {
        Some(pacing) => scenario.with_pacing(pacing),
        None => scenario,
    }
}

/// The jobs of `scenarios`, `seeds` replications each with seeds derived
/// from `options.seed`, in that order.
pub fn jobs<'a>(
    scenarios: impl IntoIterator<Item = &'a Scenario>,
    options: &Options,
    seeds: usize,
) -> Result<Vec<Job>, String> {
    let mut jobs = Vec::new();
    for scenario in scenarios {
        let setup = scenario.resolve().map_err(|e| format!("internal scenario {}: {e}", scenario.name))?;
        for replicate in 0..seeds {
            jobs.push(Job { setup: setup.clone(), seed: derive_seed(options.seed, replicate as u64) });
        }
    }
    Ok(jobs)
}

/// The weighted controllers an experiment runs, and the names it skips with
/// a note saying so.
pub struct Controllers {
    /// The controllers, parsed.
    pub weighted: Vec<Weighted>,
    /// The names that are no weighted controller.
    pub skipped: Vec<String>,
    /// Notes for stderr and the table.
    pub notes: String,
}

impl Controllers {
    /// `--controllers`, or the algorithms `default` names as their papers
    /// describe them ([`Weighted::paper`]): the experiments reproduce the
    /// papers, where flowshare's defaults depart from them.
    pub fn choose(options: &Options, default: impl FnOnce() -> Vec<String>) -> Controllers {
        let (weighted, skipped) = match &options.controllers {
            Some(names) => Weighted::parse_all(names),
            None => Weighted::papers(&default()),
        };
        let mut notes = String::new();
        note_skipped(&mut notes, &skipped, "controllers", "no weighted controller of the spec language");
        Controllers { weighted, skipped, notes }
    }

    /// The controllers as named.
    pub fn names(&self) -> Vec<String> {
        self.weighted.iter().map(|controller| controller.name.clone()).collect()
    }
}

/// The canonical spec of `controller` at weight `n`.
pub fn spec_at(controller: &Weighted, n: f64) -> Result<String, String> {
    controller.at(n).map(|spec| spec.to_string()).map_err(|e| e.to_string())
}

/// Notes the `what` that were left out, and `why`.
pub fn note_skipped(notes: &mut String, skipped: &[String], what: &str, why: &str) {
    if !skipped.is_empty() {
        let _ = writeln!(notes, "note: skipped {what} {} ({why})", skipped.join(", "));
    }
}

/// A number as a JSON key: `2`, `0.5`.
pub fn key(value: f64) -> String {
    format!("{value}")
}

/// Inserts `value` at `outer/inner` of a JSON object.
pub fn nest(map: &mut serde_json::Map<String, Value>, outer: &str, inner: &str, value: Value) {
    let entry = map.entry(outer.to_string()).or_insert_with(|| json!({}));
    if let Value::Object(inner_map) = entry {
        inner_map.insert(inner.to_string(), value);
    }
}

/// The scenario name of the full or the quick form.
pub fn name(base: &str, quick: bool) -> String {
    if quick {
        format!("{base}-quick")
    } else {
        base.to_string()
    }
}
