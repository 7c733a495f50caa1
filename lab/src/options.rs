//! The options of the built-in scenarios: one set, with one command line,
//! for the lab's experiments (`flowshare lab EXPERIMENT`) and the testbed's
//! built-ins (`flowshare testbed run BUILTIN`, `flowshare compare`).
//!
//! Every option is `None` unless given, which keeps the scenario's own
//! default (full or quick). A scenario says which options it reads; the
//! others are named in a note ([`Options::note_unused`]).

use flowshare_controllers::grammar::split_spec_list;
use flowshare_controllers::grammar::SpecError;
use flowshare_controllers::registry;
use flowshare_controllers::Spec;

use crate::setup::JitterShape;
use crate::setup::JITTER_SHAPES;

/// What the command line asked of a built-in scenario.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Run the quick variant.
    pub quick: bool,
    /// Base seed; replication k uses a seed derived from it and k.
    pub seed: u64,
    /// Replications per point.
    pub seeds: Option<usize>,
    /// Simulations run in parallel (the lab only).
    pub threads: usize,
    /// Weighted controllers: names, or specs whose weight is set per point.
    pub controllers: Option<Vec<String>>,
    /// Weights N.
    pub n: Option<Vec<f64>>,
    /// Standard peers.
    pub peers: Option<Vec<String>>,
    /// Standard flows per case (`--m`).
    pub standard_flows: Option<usize>,
    /// Bottleneck rates, Mbit/s; scenarios with one rate take the first.
    pub bandwidths_mbps: Option<Vec<f64>>,
    /// Base RTT of the bottleneck, ms.
    pub rtt_ms: Option<f64>,
    /// Queue discipline of the bottleneck: `droptail` or `red`.
    pub queue: Option<String>,
    /// The scorecard's buffer sizes to run, bandwidth-delay products.
    pub buffers_bdp: Option<Vec<f64>>,
    /// Duration of each run, seconds.
    pub duration_s: Option<f64>,
    /// Time discarded at the start of each run, seconds.
    pub warmup_s: Option<f64>,
    /// Pacing on or off (default: as the controller asks).
    pub pacing: Option<bool>,
    /// Whether the standard peers pace (the lab's scorecard; default: they
    /// pace, as the lab's flows do).
    pub peer_pacing: Option<bool>,
    /// Per-packet access jitter, ms (the lab's scorecard).
    pub access_jitter_ms: Option<f64>,
    /// How that jitter varies from packet to packet (the lab's scorecard).
    pub jitter_shape: Option<JitterShape>,
}

/// The options on the command line: flattened into `flowshare lab
/// EXPERIMENT`, `flowshare testbed run` and `flowshare compare`, so that the
/// same thing has the same name everywhere.
#[derive(clap::Args, Debug, Clone)]
pub struct OptionArgs {
    /// Run the small variant that finishes in seconds (the testbed's CI
    /// form).
    #[arg(long)]
    quick: bool,
    /// Base seed; replication k uses a seed derived from it and k.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Replications per point (default: the scenario's; the testbed: 1).
    #[arg(long)]
    seeds: Option<usize>,
    /// Weighted controllers (names, or specs without n), comma-separated;
    /// a spec's own keys follow it (`multfrc:b=2,t_mbi=1,multcp`).
    #[arg(long)]
    controllers: Option<Vec<String>>,
    /// Weights N, comma-separated.
    #[arg(long, value_delimiter = ',')]
    n: Option<Vec<f64>>,
    /// Standard peers, comma-separated (the testbed: cubic, reno, bbr from
    /// quiche, tcp-cubic, tcp-reno, tcp-bbr from Linux; bbr only there).
    #[arg(long, value_delimiter = ',')]
    peers: Option<Vec<String>>,
    /// Standard flows per case (the testbed's scorecard: per cell; the
    /// lab's fixes its paths' flows).
    #[arg(long)]
    m: Option<usize>,
    /// Bottleneck rates in Mbit/s, comma-separated; scenarios with one rate
    /// take the first.
    #[arg(long, visible_alias = "bandwidth", value_delimiter = ',')]
    bandwidths: Option<Vec<f64>>,
    /// Base RTT of the bottleneck, ms (the scorecards: their paths of this
    /// RTT only).
    #[arg(long)]
    rtt: Option<f64>,
    /// Queue discipline of the bottleneck: droptail or red.
    #[arg(long)]
    queue: Option<String>,
    /// Buffer sizes in bandwidth-delay products, comma-separated: the
    /// scorecard's queues of those sizes only (its grid has 1 and 0.5).
    #[arg(long, value_delimiter = ',')]
    buffers: Option<Vec<f64>>,
    /// Seconds per run.
    #[arg(long)]
    duration: Option<f64>,
    /// Seconds discarded at the start of each run (the scorecards discard
    /// the first quarter).
    #[arg(long)]
    warmup: Option<f64>,
    /// Pace (true) or not (false); default: when the controller asks. The
    /// testbed's endpoints decide for themselves; in the scorecards the
    /// weighted connection's spec decides (`pacing=off`).
    #[arg(long)]
    pacing: Option<bool>,
    /// Whether the standard peers pace (true, the default) or send as their
    /// acknowledgements open the window (false), as Linux TCP without fq
    /// and quiche's own CUBIC and Reno do; the weighted connection paces as
    /// its spec says. The lab's scorecard only.
    #[arg(long)]
    peer_pacing: Option<bool>,
    /// Access jitter in ms: each packet of every flow waits up to this much
    /// more (uniform, never reordering a flow's packets) on its way to the
    /// bottleneck (default 1 in both scorecards; 0 in the testbed's leaves
    /// the endpoints' own timing).
    #[arg(long)]
    jitter: Option<f64>,
    /// How the access jitter varies: drift (both scorecards' default: a
    /// slowly moving delay that keeps every flow's spacing) or per-packet
    /// (each packet draws its own, so a fast flow arrives in clumps).
    #[arg(long)]
    jitter_shape: Option<String>,
}

/// Checks that every value lies in `(0, max]`.
fn positive(flag: &str, values: &[f64], max: f64) -> Result<(), String> {
    for &value in values {
        if !(value > 0.0 && value <= max) {
            return Err(format!("--{flag} {value} is out of range; accepted range (0, {max}]"));
        }
    }
    Ok(())
}

/// Checks that a count is at least one.
fn at_least_one(flag: &str, value: Option<usize>) -> Result<(), String> {
    match value {
        Some(0) => Err(format!("--{flag} 0 is out of range; accepted range [1, ...)")),
        _ => Ok(()),
    }
}

impl OptionArgs {
    /// The options, checked; `threads` is left at 0 for the lab to set.
    pub fn options(&self) -> Result<Options, String> {
        positive("n", self.n.as_deref().unwrap_or_default(), flowshare_controllers::grammar::MAX_WEIGHT)?;
        positive("bandwidths", self.bandwidths.as_deref().unwrap_or_default(), 1e6)?;
        positive("rtt", self.rtt.as_slice(), 1e5)?;
        positive("duration", self.duration.as_slice(), 1e6)?;
        if let Some(warmup) = self.warmup {
            let duration = self.duration.unwrap_or(f64::INFINITY);
            if !(0.0..duration).contains(&warmup) {
                return Err(format!("--warmup {warmup} is out of range; accepted range [0, duration)"));
            }
        }
        if let Some(jitter) = self.jitter.filter(|jitter| !(0.0..=1000.0).contains(jitter)) {
            return Err(format!("--jitter {jitter} is out of range; accepted range [0, 1000]"));
        }
        let jitter_shape = match self.jitter_shape.as_deref() {
            None => None,
            Some(name) => Some(JitterShape::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = JITTER_SHAPES.iter().map(|(name, _)| *name).collect();
                format!("--jitter-shape {name} is not a shape (accepted: {})", names.join(", "))
            })?),
        };
        at_least_one("seeds", self.seeds)?;
        at_least_one("m", self.m)?;
        if let Some(queue) = self.queue.as_deref().filter(|queue| !matches!(*queue, "droptail" | "red")) {
            return Err(format!("--queue {queue} is not a queue (accepted: droptail, red)"));
        }
        Ok(Options {
            quick: self.quick,
            seed: self.seed,
            seeds: self.seeds,
            threads: 0,
            controllers: self
                .controllers
                .as_ref()
                .map(|lists| lists.iter().flat_map(|list| split_spec_list(list)).collect()),
            n: self.n.clone(),
            peers: self.peers.clone(),
            standard_flows: self.m,
            bandwidths_mbps: self.bandwidths.clone(),
            rtt_ms: self.rtt,
            queue: self.queue.clone(),
            buffers_bdp: self.buffers.clone(),
            duration_s: self.duration,
            warmup_s: self.warmup,
            pacing: self.pacing,
            peer_pacing: self.peer_pacing,
            access_jitter_ms: self.jitter,
            jitter_shape,
        })
    }
}

/// The flags of the options a scenario may or may not read (`--quick` and
/// `--seed` mean something to every one).
pub const FLAGS: [&str; 15] = [
    "seeds",
    "controllers",
    "n",
    "peers",
    "m",
    "bandwidths",
    "rtt",
    "queue",
    "buffers",
    "duration",
    "warmup",
    "pacing",
    "peer-pacing",
    "jitter",
    "jitter-shape",
];

impl Options {
    /// The flags of [`FLAGS`] given.
    fn given(&self) -> Vec<&'static str> {
        let given = [
            self.seeds.is_some(),
            self.controllers.is_some(),
            self.n.is_some(),
            self.peers.is_some(),
            self.standard_flows.is_some(),
            self.bandwidths_mbps.is_some(),
            self.rtt_ms.is_some(),
            self.queue.is_some(),
            self.buffers_bdp.is_some(),
            self.duration_s.is_some(),
            self.warmup_s.is_some(),
            self.pacing.is_some(),
            self.peer_pacing.is_some(),
            self.access_jitter_ms.is_some(),
            self.jitter_shape.is_some(),
        ];
        FLAGS.into_iter().zip(given).filter(|(_, given)| *given).map(|(flag, _)| flag).collect()
    }

    /// The options given, as `--flag`, that a reader of the flags `uses`
    /// leaves alone.
    fn unused(&self, uses: &[&str]) -> Vec<String> {
        self.given().into_iter().filter(|flag| !uses.contains(flag)).map(|flag| format!("--{flag}")).collect()
    }

    /// A note naming the options given that `scenario`, which reads the
    /// flags `uses`, leaves alone; empty when there are none.
    pub fn note_unused(&self, scenario: &str, uses: &[&str]) -> String {
        let unused = self.unused(uses);
        if unused.is_empty() {
            String::new()
        } else {
            format!("note: {scenario} does not use {}\n", unused.join(", "))
        }
    }

    /// Fails naming the options given that `command`, which reads the flags
    /// `uses`, would leave alone. For the scorecards: a campaign runs for
    /// hours, a note would scroll away under its progress, and a flag it
    /// ignored (say `--warmup`) would leave a user reading results of
    /// options they did not ask for.
    pub fn refuse_unused(&self, command: &str, uses: &[&str]) -> Result<(), String> {
        let unused = self.unused(uses);
        match unused.len() {
            0 => Ok(()),
            1 => Err(format!("{command} does not use {}: leave it out", unused[0])),
            _ => Err(format!("{command} does not use {}: leave them out", unused.join(", "))),
        }
    }

    /// The first of `--bandwidths`, for scenarios with one rate.
    pub fn bandwidth_mbps(&self) -> Option<f64> {
        self.bandwidths_mbps.as_ref().and_then(|rates| rates.first().copied())
    }

    /// The first of `--n`, for scenarios with one weight.
    pub fn first_n(&self) -> Option<f64> {
        self.n.as_ref().and_then(|n| n.first().copied())
    }

    /// The first of `--peers`, for scenarios with one kind of peer.
    pub fn first_peer(&self) -> Option<String> {
        self.peers.as_ref().and_then(|peers| peers.first().cloned())
    }

    /// The first of `--controllers`, for scenarios with one controller.
    pub fn first_controller(&self) -> Option<String> {
        self.controllers.as_ref().and_then(|controllers| controllers.first().cloned())
    }
}

/// A weighted controller as the command line named it, parsed once.
#[derive(Clone, Debug)]
pub struct Weighted {
    /// The name or spec as given, which reports group results by.
    pub name: String,
    /// The parsed spec; [`Weighted::at`] sets its weight.
    pub spec: Spec,
}

impl Weighted {
    /// Parses `names`: those that are weighted controller specs, and apart
    /// the others (unknown names, unweighted algorithms), for a note.
    pub fn parse_all(names: &[String]) -> (Vec<Weighted>, Vec<String>) {
        let mut weighted = Vec::new();
        let mut others = Vec::new();
        for name in names {
            match name.parse::<Spec>() {
                Ok(spec) if spec.algorithm().is_weighted() => weighted.push(Weighted { name: name.clone(), spec }),
                _ => others.push(name.clone()),
            }
        }
        (weighted, others)
    }

    /// The weighted algorithms called `names` as their papers describe
    /// them ([`flowshare_controllers::Algorithm::paper`]), each reported by
    /// its name, and apart the names that are no weighted algorithm.
    pub fn papers(names: &[String]) -> (Vec<Weighted>, Vec<String>) {
        let mut weighted = Vec::new();
        let mut others = Vec::new();
        for name in names {
            let paper = registry::find(name).filter(|algorithm| algorithm.is_weighted()).map(|a| a.paper_text());
            match paper.map(|text| text.parse::<Spec>()) {
                Some(Ok(spec)) => weighted.push(Weighted { name: name.clone(), spec }),
                _ => others.push(name.clone()),
            }
        }
        (weighted, others)
    }

    /// The spec with weight `n`.
    pub fn at(&self, n: f64) -> Result<Spec, SpecError> {
        self.spec.reweighted(n)
    }

    /// Whether it accepts a weight below one.
    pub fn takes_fractional_weight(&self) -> bool {
        self.at(0.5).is_ok()
    }
}

/// Every weighted algorithm of the registry, by name: the controllers the
/// scenarios compare by default.
pub fn weighted_algorithms() -> Vec<String> {
    registry::weighted().map(|algorithm| algorithm.name.to_string()).collect()
}

/// The registry's standard algorithms the lab can run, by name: the
/// default peers (`bbr` runs only where a host has its own).
pub fn standard_algorithms() -> Vec<String> {
    registry::standard()
        .filter(|algorithm| algorithm.example.parse::<Spec>().is_ok_and(|spec| spec.has_implementation()))
        .map(|algorithm| algorithm.name.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        options: OptionArgs,
    }

    fn options(args: &[&str]) -> Result<Options, String> {
        let command = Command::try_parse_from(["x"].iter().chain(args)).map_err(|e| e.to_string())?;
        command.options.options()
    }

    #[test]
    fn the_old_testbed_spelling_of_bandwidths_still_works() {
        let options = options(&["--bandwidth", "30", "--bandwidths", "10,20"]).unwrap();
        assert_eq!(options.bandwidths_mbps, Some(vec![30.0, 10.0, 20.0]));
        assert_eq!(options.bandwidth_mbps(), Some(30.0));
    }

    #[test]
    fn a_spec_in_a_list_keeps_its_keys() {
        let listed = options(&["--controllers", "multfrc:pacing=flows,t_rto=2,multcp,mulcubic:pacing=even"]).unwrap();
        let expected = ["multfrc:pacing=flows,t_rto=2", "multcp", "mulcubic:pacing=even"].map(String::from);
        assert_eq!(listed.controllers, Some(expected.to_vec()));
        let repeated = options(&["--controllers", "multcp", "--controllers", "reno,cubic"]).unwrap();
        assert_eq!(repeated.controllers, Some(["multcp", "reno", "cubic"].map(String::from).to_vec()));
    }

    #[test]
    fn bad_values_name_the_flag_and_the_range() {
        assert_eq!(options(&["--n", "0"]).unwrap_err(), "--n 0 is out of range; accepted range (0, 256]");
        assert_eq!(options(&["--m", "0"]).unwrap_err(), "--m 0 is out of range; accepted range [1, ...)");
        assert_eq!(options(&["--queue", "fq"]).unwrap_err(), "--queue fq is not a queue (accepted: droptail, red)");
        let error = options(&["--duration", "10", "--warmup", "10"]).unwrap_err();
        assert_eq!(error, "--warmup 10 is out of range; accepted range [0, duration)");
        assert_eq!(options(&["--jitter=-1"]).unwrap_err(), "--jitter -1 is out of range; accepted range [0, 1000]");
        assert_eq!(options(&["--jitter", "0"]).unwrap().access_jitter_ms, Some(0.0));
        let error = options(&["--jitter-shape", "gauss"]).unwrap_err();
        assert_eq!(error, "--jitter-shape gauss is not a shape (accepted: drift, per-packet)");
        assert_eq!(options(&["--jitter-shape", "drift"]).unwrap().jitter_shape, Some(JitterShape::Drift));
    }

    #[test]
    fn every_flag_is_seen_when_given() {
        let all = [
            "--seeds",
            "2",
            "--controllers",
            "multcp",
            "--n",
            "2",
            "--peers",
            "reno",
            "--m",
            "3",
            "--bandwidths",
            "10",
            "--rtt",
            "40",
            "--queue",
            "red",
            "--buffers",
            "1,0.5",
            "--duration",
            "20",
            "--warmup",
            "5",
            "--pacing",
            "false",
            "--peer-pacing",
            "false",
            "--jitter",
            "3",
            "--jitter-shape",
            "per-packet",
        ];
        assert_eq!(options(&all).unwrap().given(), FLAGS);
    }

    #[test]
    fn options_a_scenario_leaves_alone_are_named() {
        let options = options(&["--rtt", "80", "--n", "2", "--seeds", "3"]).unwrap();
        assert_eq!(options.note_unused("fairness", &["n", "seeds"]), "note: fairness does not use --rtt\n");
        assert_eq!(options.note_unused("weighted", &["n", "rtt", "seeds"]), "");
        assert_eq!(options.refuse_unused("the lab's scorecard", &["n", "rtt", "seeds"]), Ok(()));
        assert_eq!(
            options.refuse_unused("the lab's scorecard", &["n", "seeds"]),
            Err("the lab's scorecard does not use --rtt: leave it out".to_string())
        );
        assert_eq!(
            options.refuse_unused("the lab's scorecard", &["n"]),
            Err("the lab's scorecard does not use --seeds, --rtt: leave them out".to_string())
        );
    }

    #[test]
    fn weighted_controllers_are_parsed_once_and_reweighted() {
        let names = ["pa-multcp:probe=reno", "ctcp", "bogus", "multcp"].map(String::from);
        let (weighted, others) = Weighted::parse_all(&names);
        assert_eq!(others, ["ctcp", "bogus"]);
        assert_eq!(weighted[0].name, "pa-multcp:probe=reno");
        assert_eq!(weighted[0].at(2.0).unwrap().to_string(), "pa-multcp:n=2,probe=reno");
        assert_eq!(weighted[1].at(0.5).unwrap().to_string(), "multcp:n=0.5");
        assert!(weighted.iter().all(Weighted::takes_fractional_weight));
        assert_eq!(weighted_algorithms(), ["multcp", "pa-multcp", "mulcubic", "multfrc"]);
        assert_eq!(standard_algorithms(), ["reno", "cubic"]);
    }

    #[test]
    fn paper_reproductions_run_each_algorithm_as_its_paper_describes_it() {
        let (weighted, others) = Weighted::papers(&["pa-multcp", "multfrc", "reno"].map(String::from));
        assert_eq!(others, ["reno"]);
        assert_eq!(weighted[0].name, "pa-multcp");
        assert_eq!(
            weighted[0].at(4.0).unwrap().to_string(),
            "pa-multcp:n=4,assign=consecutive,probe=reno,cap=paper,pacing=even,thinning=paper"
        );
        assert_eq!(
            weighted[1].at(4.0).unwrap().to_string(),
            "multfrc:n=4,t_rto=4,flows_hit=paper,thinning=paper,pacing=even"
        );
    }
}
