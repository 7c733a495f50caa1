//! The built-in testbed scenarios, each a list of cases (one run each, per
//! seed), with a `--quick` form for CI.
//!
//! | name | what |
//! |---|---|
//! | `crosstraffic` | the QUIC interop runner's measurement: 10 Mbit/s, 15 ms, 25 packets; one flowshare flow against one Linux TCP cubic flow, per controller and weight |
//! | `weighted` | one weighted flow against M standard flows (quiche cubic, quiche reno, Linux cubic in turn), N in 0.5..8, BDP drop-tail or RED |
//! | `transient` | a weighted flow and standard flows while a CBR flow takes half the link from T/3 to 2T/3 |
//! | `multipath` | an MCompound group with a subflow on each of two bottlenecks (Compound TCP peer on the first), and both subflows on one shared bottleneck |
//! | `utilization` | benchmark: one flow of each controller alone, 20 Mbit/s, 40 ms, BDP drop-tail |
//! | `headroom` | benchmark: two quiche CUBIC flows at 50 to 300 Mbit/s, to find where ns-3 stops keeping real time |
//!
//! Cases are [`TestbedScenario`]s built with the lab's scenario
//! constructors and options ([`flowshare_lab::options`]), so `flowshare
//! compare` runs them in the lab as well. The controllers and peers they
//! run by default come from the controllers' registry.

use flowshare_controllers::registry;
use flowshare_controllers::spec::Algorithm;
use flowshare_controllers::spec::Standard;
use flowshare_controllers::Spec;
use flowshare_lab::options::weighted_algorithms;
use flowshare_lab::options::Options;
use flowshare_lab::options::Weighted;
use flowshare_lab::scenario::FlowConfig;
use flowshare_lab::scenario::LinkConfig;
use flowshare_lab::scenario::Scenario;
use flowshare_lab::scenario::BOTTLENECK;
use flowshare_lab::scenario::TESTBED_START_SPREAD_S;
use flowshare_lab::setup::Role;

use crate::scenario::TestbedScenario;
use crate::scenario::Transport;

/// One built-in scenario of the catalogue.
pub struct Builtin {
    /// Its name on the command line.
    pub name: &'static str,
    /// Its cases for the options; specs it leaves out go to the list.
    cases: fn(&Options, &mut Vec<String>) -> Result<Vec<Case>, String>,
    /// The options it reads, as flags; the command line notes the others.
    pub uses: &'static [&'static str],
}

/// Every built-in scenario.
pub static BUILTINS: &[Builtin] = &[
    Builtin {
        name: "crosstraffic",
        cases: crosstraffic,
        uses: &["seeds", "controllers", "n", "bandwidths", "rtt", "queue", "duration", "warmup"],
    },
    Builtin {
        name: "weighted",
        cases: weighted,
        uses: &["seeds", "controllers", "n", "peers", "m", "bandwidths", "rtt", "queue", "duration", "warmup"],
    },
    Builtin {
        name: "transient",
        cases: transient,
        uses: &["seeds", "controllers", "n", "peers", "m", "bandwidths", "rtt", "queue", "duration", "warmup"],
    },
    Builtin {
        name: "multipath",
        cases: multipath,
        uses: &["seeds", "bandwidths", "rtt", "queue", "duration", "warmup"],
    },
    Builtin {
        name: "utilization",
        cases: utilization,
        uses: &["seeds", "controllers", "n", "bandwidths", "rtt", "queue", "duration", "warmup"],
    },
    Builtin {
        name: "headroom",
        cases: headroom,
        uses: &["seeds", "controllers", "bandwidths", "rtt", "queue", "duration", "warmup"],
    },
];

/// The built-in called `name`.
pub fn find(name: &str) -> Result<&'static Builtin, String> {
    BUILTINS.iter().find(|builtin| builtin.name == name).ok_or_else(|| {
        let names: Vec<&str> = BUILTINS.iter().map(|builtin| builtin.name).collect();
        format!("{name:?} is neither a scenario file nor a built-in scenario (built-ins: {})", names.join(", "))
    })
}

impl Builtin {
    /// The cases for `options`; `skipped` collects the specs left out.
    pub fn cases(&self, options: &Options, skipped: &mut Vec<String>) -> Result<Vec<Case>, String> {
        (self.cases)(options, skipped)
    }
}

/// One case of a built-in.
#[derive(Clone, Debug)]
pub struct Case {
    /// Name (also the run's directory).
    pub name: String,
    /// The scenario.
    pub scenario: TestbedScenario,
}

/// The rates `headroom` steps through, Mbit/s.
const HEADROOM_RATES: &[f64] = &[50.0, 100.0, 150.0, 200.0, 250.0, 300.0];

/// The controller the quick forms run.
const QUICK_CONTROLLER: &str = "multcp";

/// The spec of `multipath`'s subflows: one group, in one server process.
const GROUP_SPEC: &str = "mcompound:group=1";

/// What names a Linux TCP peer: `tcp-cubic` is iperf3 with Linux's CUBIC.
const LINUX: &str = "tcp-";

/// The standard algorithms, CUBIC (the default of Linux and of quiche)
/// first.
fn standard_algorithms() -> Vec<&'static Algorithm> {
    let mut standard: Vec<&Algorithm> = registry::standard().collect();
    standard.sort_by_key(|algorithm| algorithm.standard != Some(Standard::Cubic));
    standard
}

/// The name of a standard algorithm.
fn standard_name(standard: Standard) -> String {
    Spec::of_standard(standard).name().to_string()
}

/// The peers quiche runs: its standard algorithms (`bbr` is its BBRv2).
fn quiche_peers() -> Vec<String> {
    standard_algorithms().iter().map(|algorithm| algorithm.name.to_string()).collect()
}

/// The peers Linux runs: iperf3 with its standard algorithms.
fn linux_peers() -> Vec<String> {
    quiche_peers().iter().map(|name| format!("{LINUX}{name}")).collect()
}

/// Every peer name.
fn peer_names() -> Vec<String> {
    [quiche_peers(), linux_peers()].concat()
}

/// Whether a peer name's algorithm is one a flowshare is defined against
/// (Reno, CUBIC; [`Standard::defines_flowshare`]).
fn judged(name: &str) -> bool {
    let algorithm = name.strip_prefix(LINUX).unwrap_or(name);
    registry::find(algorithm).and_then(|algorithm| algorithm.standard).is_some_and(Standard::defines_flowshare)
}

/// The peers of the grids by default: quiche's and Linux's Reno and CUBIC.
/// BBR (`bbr`, `tcp-bbr`) is measured when `--peers` names it.
pub(crate) fn default_peer_names() -> Vec<String> {
    peer_names().into_iter().filter(|name| judged(name)).collect()
}

/// A scenario of the testbed's built-ins over `links`.
fn scenario(name: &str, duration: f64, warmup: f64, links: Vec<LinkConfig>) -> Scenario {
    Scenario::new(name, duration, warmup, TESTBED_START_SPREAD_S, links)
}

/// A drop-tail BDP link at `rtt_ms`, or the discipline of `--queue`.
fn link(name: &str, rate_mbps: f64, rtt_ms: f64, options: &Options) -> LinkConfig {
    let link = LinkConfig::droptail_bdp(name, rate_mbps, rtt_ms);
    match &options.queue {
        Some(queue) => link.with_queue(queue),
        None => link,
    }
}

fn flow(cc: &str, count: usize, path: &[&str], role: Role) -> FlowConfig {
    FlowConfig::bulk(cc, count, path).with_role(role)
}

/// A standard peer as a flow entry and its transport.
pub(crate) fn peer(name: &str, count: usize, path: &[&str]) -> Result<(FlowConfig, Transport), String> {
    let (cc, transport) = match name.strip_prefix(LINUX) {
        Some(algorithm) => (algorithm, Transport::Tcp),
        None => (name, Transport::Quic),
    };
    if !quiche_peers().iter().any(|peer| peer == cc) {
        return Err(format!("--peers {name} is not a peer (accepted: {})", peer_names().join(", ")));
    }
    let mut entry = flow(cc, count, path, Role::Standard);
    if transport == Transport::Tcp {
        entry.label = Some(format!("linux-{cc}"));
    }
    Ok((entry, transport))
}

fn build(mut scenario: Scenario, flows: Vec<(FlowConfig, Transport)>) -> TestbedScenario {
    let transports = flows.iter().map(|(_, t)| *t).collect();
    scenario.flows = flows.into_iter().map(|(f, _)| f).collect();
    TestbedScenario::with_transports(scenario, transports)
}

/// `--controllers`; by default every weighted algorithm, or MulTCP alone in
/// the quick form.
fn controllers(options: &Options) -> Vec<String> {
    match &options.controllers {
        Some(controllers) => controllers.clone(),
        None if options.quick => vec![QUICK_CONTROLLER.into()],
        None => weighted_algorithms(),
    }
}

/// The canonical specs of `controllers` at each of `weights`, controller by
/// controller; `skipped` collects the names that are no weighted
/// controller and the weights a controller does not accept.
fn weighted_specs(controllers: &[String], weights: &[f64], skipped: &mut Vec<String>) -> Vec<String> {
    let (weighted, others) = Weighted::parse_all(controllers);
    skipped.extend(others);
    let mut specs = Vec::new();
    for controller in &weighted {
        for &n in weights {
            match controller.at(n) {
                Ok(spec) => specs.push(spec.to_string()),
                Err(_) => skipped.push(format!("{} at n = {n}", controller.name)),
            }
        }
    }
    specs
}

/// The cases of built-in `name`; `skipped` collects specs left out.
pub fn cases(name: &str, options: &Options, skipped: &mut Vec<String>) -> Result<Vec<Case>, String> {
    find(name)?.cases(options, skipped)
}

fn crosstraffic(options: &Options, skipped: &mut Vec<String>) -> Result<Vec<Case>, String> {
    let quick = options.quick;
    let duration = options.duration_s.unwrap_or(if quick { 20.0 } else { 60.0 });
    let warmup = options.warmup_s.unwrap_or(if quick { 5.0 } else { 10.0 });
    let weights = options.n.clone().unwrap_or(if quick { vec![2.0] } else { vec![1.0, 2.0, 4.0] });
    let rate = options.bandwidth_mbps().unwrap_or(10.0);
    let rtt = options.rtt_ms.unwrap_or(30.0);
    let mut cases = Vec::new();
    for spec in weighted_specs(&controllers(options), &weights, skipped) {
        // The interop runner's 25 packets at its 10 Mbit/s.
        let packets = (25.0 * rate / 10.0).round().max(1.0) as usize;
        let bottleneck = link(BOTTLENECK, rate, rtt, options).with_buffer_packets(packets);
        let base = scenario(&format!("crosstraffic {spec}"), duration, warmup, vec![bottleneck]);
        let flows = vec![
            (flow(&spec, 1, &[BOTTLENECK], Role::Weighted), Transport::Quic),
            peer(&format!("{LINUX}{}", standard_name(Standard::Cubic)), 1, &[BOTTLENECK])?,
        ];
        cases.push(Case { name: format!("crosstraffic-{}", file_safe(&spec)), scenario: build(base, flows) });
    }
    Ok(cases)
}

/// The peers `weighted` runs against by default: quiche's standard
/// algorithms and Linux's default, CUBIC; in the quick form quiche's CUBIC.
fn weighted_peers(options: &Options) -> Vec<String> {
    let cubic = standard_name(Standard::Cubic);
    match &options.peers {
        Some(peers) => peers.clone(),
        None if options.quick => vec![cubic],
        None => {
            [quiche_peers().into_iter().filter(|name| judged(name)).collect(), vec![format!("{LINUX}{cubic}")]].concat()
        }
    }
}

fn weighted(options: &Options, skipped: &mut Vec<String>) -> Result<Vec<Case>, String> {
    let quick = options.quick;
    let duration = options.duration_s.unwrap_or(if quick { 20.0 } else { 60.0 });
    let warmup = options.warmup_s.unwrap_or(if quick { 5.0 } else { 15.0 });
    let weights = options.n.clone().unwrap_or(if quick { vec![2.0] } else { vec![0.5, 2.0, 4.0, 8.0] });
    let peers = weighted_peers(options);
    let m = options.standard_flows.unwrap_or(2);
    let rate = options.bandwidth_mbps().unwrap_or(20.0);
    let rtt = options.rtt_ms.unwrap_or(40.0);
    let mut cases = Vec::new();
    for spec in weighted_specs(&controllers(options), &weights, skipped) {
        for peer_name in &peers {
            let links = vec![link(BOTTLENECK, rate, rtt, options)];
            let base = scenario(&format!("weighted {spec} vs {m} {peer_name}"), duration, warmup, links);
            let flows = vec![
                (flow(&spec, 1, &[BOTTLENECK], Role::Weighted), Transport::Quic),
                peer(peer_name, m, &[BOTTLENECK])?,
            ];
            let name = format!("weighted-{}-vs-{m}-{peer_name}", file_safe(&spec));
            cases.push(Case { name, scenario: build(base, flows) });
        }
    }
    Ok(cases)
}

fn transient(options: &Options, skipped: &mut Vec<String>) -> Result<Vec<Case>, String> {
    let duration = options.duration_s.unwrap_or(if options.quick { 30.0 } else { 90.0 });
    let warmup = options.warmup_s.unwrap_or(duration / 9.0);
    let weights = options.n.clone().unwrap_or(vec![4.0]);
    let peer_name = options.first_peer().unwrap_or_else(|| standard_name(Standard::Cubic));
    let m = options.standard_flows.unwrap_or(2);
    let rate = options.bandwidth_mbps().unwrap_or(20.0);
    let rtt = options.rtt_ms.unwrap_or(40.0);
    let mut cases = Vec::new();
    for spec in weighted_specs(&controllers(options), &weights, skipped) {
        let links = vec![link(BOTTLENECK, rate, rtt, options)];
        let base = scenario(&format!("transient {spec}"), duration, warmup, links);
        let (on, off) = ((duration / 3.0).round(), (2.0 * duration / 3.0).round());
        let cbr = FlowConfig::cbr(rate / 2.0, &[BOTTLENECK]).with_times(on, Some(off));
        let flows = vec![
            (flow(&spec, 1, &[BOTTLENECK], Role::Weighted), Transport::Quic),
            peer(&peer_name, m, &[BOTTLENECK])?,
            (cbr, Transport::Quic),
        ];
        cases.push(Case { name: format!("transient-{}", file_safe(&spec)), scenario: build(base, flows) });
    }
    Ok(cases)
}

fn multipath(options: &Options, _: &mut Vec<String>) -> Result<Vec<Case>, String> {
    let duration = options.duration_s.unwrap_or(if options.quick { 20.0 } else { 60.0 });
    let warmup = options.warmup_s.unwrap_or(duration / 6.0);
    let rate = options.bandwidth_mbps().unwrap_or(if options.quick { 10.0 } else { 20.0 });
    let rtt = options.rtt_ms.unwrap_or(40.0);
    let group = |paths: &[&[&str]]| {
        let entry = FlowConfig::multipath(GROUP_SPEC, paths).with_role(Role::Weighted).with_label("mcompound");
        (entry, Transport::Quic)
    };
    let compound = |path: &str| (flow("ctcp", 1, &[path], Role::Standard), Transport::Quic);
    let links = vec![link("path1", rate, rtt, options), link("path2", rate, rtt, options)];
    let two = scenario("multipath two bottlenecks", duration, warmup, links);
    let flows = vec![group(&[&["path1"], &["path2"]]), compound("path1")];
    let mut cases = vec![Case { name: "multipath-two-bottlenecks".into(), scenario: build(two, flows) }];
    let shared = scenario("multipath shared bottleneck", duration, warmup, vec![link("shared", rate, rtt, options)]);
    let flows = vec![group(&[&["shared"], &["shared"]]), compound("shared")];
    cases.push(Case { name: "multipath-shared-bottleneck".into(), scenario: build(shared, flows) });
    Ok(cases)
}

/// The flows `utilization` runs alone by default: quiche's standard
/// algorithms, every other algorithm of the registry (the weighted ones
/// first, at `--n`), and Linux's standard algorithms.
fn single_flows() -> Vec<String> {
    let others = registry::ALGORITHMS.iter().filter(|algorithm| algorithm.standard.is_none());
    let (weighted, unweighted): (Vec<&Algorithm>, Vec<&Algorithm>) = others.partition(|a| a.is_weighted());
    let flowshare = weighted.iter().chain(&unweighted).map(|algorithm| {
        if algorithm.grouped {
            // A grouped algorithm needs a group ID; the lone connection is
            // a group of its own.
            format!("{}:group=1", algorithm.name)
        } else {
            algorithm.name.to_string()
        }
    });
    quiche_peers().into_iter().chain(flowshare).chain(linux_peers()).collect()
}

fn utilization(options: &Options, skipped: &mut Vec<String>) -> Result<Vec<Case>, String> {
    let quick = options.quick;
    let duration = options.duration_s.unwrap_or(if quick { 15.0 } else { 30.0 });
    let warmup = options.warmup_s.unwrap_or(if quick { 5.0 } else { 10.0 });
    let n = options.first_n().unwrap_or(1.0);
    let rate = options.bandwidth_mbps().unwrap_or(20.0);
    let rtt = options.rtt_ms.unwrap_or(40.0);
    let quiche_peers = quiche_peers();
    let mut cases = Vec::new();
    for name in options.controllers.clone().unwrap_or_else(single_flows) {
        let links = vec![link(BOTTLENECK, rate, rtt, options)];
        let base = scenario(&format!("utilization {name}"), duration, warmup, links);
        let entry = if name.starts_with(LINUX) || quiche_peers.contains(&name) {
            peer(&name, 1, &[BOTTLENECK])?
        } else {
            let spec = name.parse::<Spec>().and_then(|spec| match spec.algorithm().is_weighted() {
                true => spec.reweighted(n),
                false => Ok(spec),
            });
            let Ok(spec) = spec else {
                skipped.push(name);
                continue;
            };
            (flow(&spec.to_string(), 1, &[BOTTLENECK], Role::Weighted), Transport::Quic)
        };
        cases.push(Case { name: format!("utilization-{}", file_safe(&name)), scenario: build(base, vec![entry]) });
    }
    Ok(cases)
}

fn headroom(options: &Options, _: &mut Vec<String>) -> Result<Vec<Case>, String> {
    let duration = options.duration_s.unwrap_or(if options.quick { 10.0 } else { 20.0 });
    let warmup = options.warmup_s.unwrap_or(duration / 4.0);
    let rtt = options.rtt_ms.unwrap_or(20.0);
    let rates = options.bandwidths_mbps.clone().unwrap_or_else(|| HEADROOM_RATES.to_vec());
    let spec = options.first_controller().unwrap_or_else(|| standard_name(Standard::Cubic));
    let mut cases = Vec::new();
    for rate in rates {
        let links = vec![link(BOTTLENECK, rate, rtt, options)];
        let base = scenario(&format!("headroom {rate} Mbit/s"), duration, warmup, links);
        let flows = vec![(flow(&spec, 2, &[BOTTLENECK], Role::Standard), Transport::Quic)];
        cases.push(Case { name: format!("headroom-{rate}"), scenario: build(base, flows) });
    }
    Ok(cases)
}

/// `spec` as a directory name.
pub fn file_safe(spec: &str) -> String {
    spec.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '-' }).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use flowshare_lab::options::FLAGS;

    use super::*;

    #[test]
    fn every_builtin_plans_in_both_forms_with_unique_case_names() {
        for builtin in BUILTINS {
            assert!(builtin.uses.iter().all(|flag| FLAGS.contains(flag)), "{}: {:?}", builtin.name, builtin.uses);
            for quick in [true, false] {
                let options = Options { quick, ..Default::default() };
                let cases = builtin.cases(&options, &mut Vec::new()).unwrap();
                assert!(!cases.is_empty(), "{}", builtin.name);
                let names: BTreeSet<&str> = cases.iter().map(|case| case.name.as_str()).collect();
                assert_eq!(names.len(), cases.len(), "{}: {names:?}", builtin.name);
                for case in &cases {
                    case.scenario.plan(1, &mut String::new()).unwrap_or_else(|e| panic!("{}: {e}", case.name));
                    assert!(case.name.starts_with(builtin.name), "{}", case.name);
                }
            }
        }
    }

    #[test]
    fn quick_crosstraffic_is_one_flowshare_flow_against_linux_cubic() {
        let cases = cases("crosstraffic", &Options { quick: true, ..Default::default() }, &mut Vec::new()).unwrap();
        assert_eq!(cases.len(), 1);
        let plan = cases[0].scenario.plan(1, &mut String::new()).unwrap();
        assert_eq!(plan.flows.len(), 2);
        assert_eq!((plan.flows[0].transport(), plan.flows[0].role), ("quic", Role::Weighted));
        assert_eq!((plan.flows[1].transport(), plan.flows[1].cc.as_str()), ("tcp", "cubic"));
        // The interop runner's link.
        assert_eq!((plan.links[0].rate_bps, plan.links[0].queue_packets), (10e6, 25));
        assert!((plan.links[0].delay_s - 0.015).abs() < 1e-12);
    }

    #[test]
    fn the_default_controllers_and_peers_come_from_the_registry() {
        assert_eq!(peer_names(), ["cubic", "reno", "bbr", "tcp-cubic", "tcp-reno", "tcp-bbr"]);
        assert_eq!(default_peer_names(), ["cubic", "reno", "tcp-cubic", "tcp-reno"]);
        assert_eq!(weighted_peers(&Options::default()), ["cubic", "reno", "tcp-cubic"]);
        let single = single_flows();
        assert_eq!(single[..3], ["cubic", "reno", "bbr"]);
        assert_eq!(single[single.len() - 3..], ["tcp-cubic", "tcp-reno", "tcp-bbr"]);
        for algorithm in registry::ALGORITHMS {
            assert!(single.iter().any(|name| name.split(':').next() == Some(algorithm.name)), "{}", algorithm.name);
        }
        let cases = cases("weighted", &Options::default(), &mut Vec::new()).unwrap();
        let weighted: BTreeSet<String> = cases.iter().filter_map(|c| c.scenario.scenario.flows[0].cc.clone()).collect();
        assert_eq!(weighted.len(), weighted_algorithms().len() * 4);
    }

    #[test]
    fn weights_a_controller_refuses_are_skipped() {
        let options = Options {
            controllers: Some(vec!["multcp".into(), "mulcubic".into(), "ctcp".into()]),
            n: Some(vec![0.5, 0.005]),
            ..Default::default()
        };
        let mut skipped = Vec::new();
        let cases = cases("crosstraffic", &options, &mut skipped).unwrap();
        let specs: Vec<String> =
            cases.iter().map(|c| c.scenario.scenario.flows[0].cc.clone().unwrap_or_default()).collect();
        assert_eq!(specs, ["multcp:n=0.5", "multcp:n=0.005", "mulcubic:n=0.5"]);
        assert_eq!(skipped, ["ctcp", "mulcubic at n = 0.005"]);
    }

    #[test]
    fn unknown_builtins_and_peers_are_named() {
        let error = cases("bogus", &Options::default(), &mut Vec::new()).unwrap_err();
        assert!(error.starts_with("\"bogus\" is neither"), "{error}");
        let options = Options { peers: Some(vec!["vegas".into()]), ..Default::default() };
        let error = cases("weighted", &options, &mut Vec::new()).unwrap_err();
        assert_eq!(error, "--peers vegas is not a peer (accepted: cubic, reno, bbr, tcp-cubic, tcp-reno, tcp-bbr)");
    }

    /// BBR runs as quiche's own BBRv2 and as Linux's BBR through iperf3,
    /// which the lab cannot: the testbed plans it, the lab refuses it.
    #[test]
    fn bbr_peers_plan_as_quiches_and_linuxs_own() {
        let options = Options { peers: Some(vec!["bbr".into(), "tcp-bbr".into()]), ..Default::default() };
        let cases = cases("weighted", &options, &mut Vec::new()).unwrap();
        let plans: Vec<_> = cases.iter().map(|case| case.scenario.plan(1, &mut String::new()).unwrap()).collect();
        let peers: BTreeSet<(&str, &str)> =
            plans.iter().map(|plan| (plan.flows[1].transport(), plan.flows[1].cc.as_str())).collect();
        assert_eq!(peers, BTreeSet::from([("quic", "bbr"), ("tcp", "bbr")]));
        let error = cases[0].scenario.scenario.resolve().unwrap_err().to_string();
        assert!(error.contains("flow[1].cc") && error.contains("the lab cannot run it"), "{error}");
    }
}
