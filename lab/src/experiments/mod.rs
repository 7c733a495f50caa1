//! The built-in experiments: the papers' scenarios, each with a `--quick`
//! variant that runs in seconds, one module each.
//!
//! Every experiment builds [`crate::scenario::Scenario`]s in the vocabulary
//! of scenario files, runs them with [`crate::sweep::run`] on all cores,
//! and writes its table, `summary.json`, CSV files and plots. Weighted
//! controllers are taken by name (or spec) and parsed once; the weight of
//! each point is set with `Spec::reweighted`, so the experiments grow with
//! the controllers' registry.
//!
//! | experiment | source |
//! |---|---|
//! | [`fairness`] | paper 000 section 5.1 |
//! | [`transient`] | paper 000 section 5.2 |
//! | [`short_transfer`] | paper 000 section 5.3 |
//! | [`multfrc_friendliness`] | paper 004 section III-A |
//! | [`mcompound`] | paper 003 section IV |
//! | [`gevros`] | paper 001 table I |
//! | [`validate`] | the lab's own validation |

use std::path::Path;

use serde_json::Value;

use crate::options::Options;

mod common;
pub mod fairness;
pub mod gevros;
pub mod mcompound;
pub mod multfrc_friendliness;
pub mod short_transfer;
pub mod transient;
pub mod validate;

/// One experiment of the catalogue.
pub struct Experiment {
    /// Its name on the command line.
    pub name: &'static str,
    /// Runs it with `options`, writing files into the directory given.
    pub run: fn(&Options, &Path) -> Result<Outcome, String>,
    /// The options it reads, as flags (`n`, `bandwidths`, ...); the
    /// command line notes the others.
    pub uses: &'static [&'static str],
}

/// What an experiment produced.
pub struct Outcome {
    /// The table for stdout.
    pub table: String,
    /// `summary.json`.
    pub summary: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::FLAGS;

    #[test]
    fn every_experiment_reads_only_options_that_exist() {
        let all = [
            &fairness::EXPERIMENT,
            &transient::EXPERIMENT,
            &short_transfer::EXPERIMENT,
            &multfrc_friendliness::EXPERIMENT,
            &mcompound::EXPERIMENT,
            &gevros::EXPERIMENT,
            &validate::EXPERIMENT,
        ];
        for experiment in all {
            for flag in experiment.uses {
                assert!(FLAGS.contains(flag), "{}: --{flag}", experiment.name);
            }
        }
    }
}
