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
//! Cases are [`TestbedScenario`]s, so `flowshare compare` runs them in the
//! lab as well.

use flowshare_controllers::registry;
use flowshare_controllers::Spec;
use flowshare_lab::experiments::accepts_fractional_weight;
use flowshare_lab::experiments::weighted_controllers;
use flowshare_lab::experiments::weighted_spec;
use flowshare_lab::scenario::FlowConfig;
use flowshare_lab::scenario::LinkConfig;
use flowshare_lab::scenario::Scenario;
use flowshare_lab::sim::Role;

use crate::scenario::TestbedScenario;
use crate::scenario::Transport;

/// The built-in scenario names.
pub const BUILTINS: &[&str] = &["crosstraffic", "weighted", "transient", "multipath", "utilization", "headroom"];

/// The controllers `utilization` runs alone by default: quiche's, each
/// flowshare algorithm at weight one, and Linux's.
const SINGLE_FLOWS: &[&str] = &[
    "cubic",
    "reno",
    "multcp",
    "pa-multcp",
    "mulcubic",
    "multfrc",
    "ctcp",
    "mcompound:group=1",
    "tcp-cubic",
    "tcp-reno",
];

/// The rates `headroom` steps through, Mbit/s.
const HEADROOM_RATES: &[f64] = &[50.0, 100.0, 150.0, 200.0, 250.0, 300.0];

/// Options that change the built-ins; `None` keeps their defaults.
#[derive(Clone, Debug, Default)]
pub struct BuiltinOptions {
    /// The short form.
    pub quick: bool,
    /// Weighted controllers (names, or specs without `n`).
    pub controllers: Option<Vec<String>>,
    /// Weights.
    pub n: Option<Vec<f64>>,
    /// Standard peers: `cubic`, `reno` (quiche), `tcp-cubic`, `tcp-reno`
    /// (Linux).
    pub peers: Option<Vec<String>>,
    /// Standard flows per case (`weighted`, `transient`).
    pub standard_flows: Option<usize>,
    /// Bottleneck rate, Mbit/s.
    pub bandwidth_mbps: Option<f64>,
    /// Base RTT, ms.
    pub rtt_ms: Option<f64>,
    /// `droptail` or `red`.
    pub queue: Option<String>,
    /// Duration of each run, seconds.
    pub duration_s: Option<f64>,
}

/// One case of a built-in.
#[derive(Clone, Debug)]
pub struct Case {
    /// Name (also the run's directory).
    pub name: String,
    /// The scenario.
    pub scenario: TestbedScenario,
}

fn scenario(name: &str, duration: f64, warmup: f64, links: Vec<LinkConfig>) -> Scenario {
    Scenario {
        name: name.into(),
        duration_s: duration,
        warmup_s: warmup,
        packet_bytes: 1500,
        pacing: true,
        ack_every: 2,
        max_ack_delay_ms: 25.0,
        bin_s: 0.1,
        start_spread_s: 1.0,
        links,
        flows: Vec::new(),
    }
}

fn link(name: &str, rate_mbps: f64, rtt_ms: f64, queue: &str) -> LinkConfig {
    let mut link = LinkConfig::droptail_bdp(name, rate_mbps, rtt_ms / 2.0, rtt_ms);
    link.queue = queue.into();
    link
}

fn flow(cc: &str, count: usize, path: &[&str], role: Role) -> FlowConfig {
    let mut flow = FlowConfig::bulk(cc, count, path);
    flow.role = Some(role);
    flow
}

/// A standard peer as a flow entry and its transport.
fn peer(name: &str, count: usize, path: &[&str]) -> Result<(FlowConfig, Transport), String> {
    let (cc, transport) = match name {
        "cubic" | "reno" => (name, Transport::Quic),
        "tcp-cubic" => ("cubic", Transport::Tcp),
        "tcp-reno" => ("reno", Transport::Tcp),
        other => return Err(format!("--peers {other} is not a peer (accepted: cubic, reno, tcp-cubic, tcp-reno)")),
    };
    let mut entry = flow(cc, count, path, Role::Standard);
    if transport == Transport::Tcp {
        entry.label = Some(format!("linux-{cc}"));
    }
    Ok((entry, transport))
}

fn build(mut scenario: Scenario, flows: Vec<(FlowConfig, Transport)>) -> TestbedScenario {
    let transports = flows.iter().map(|(_, t)| *t).collect();
    scenario.flows = flows.into_iter().map(|(f, _)| f).collect();
    let blackholes = vec![Vec::new(); scenario.links.len()];
    TestbedScenario { scenario, transports, blackholes }
}

/// Weighted specs for `controllers` x `weights`, skipping fractional
/// weights where a controller has none and names the spec language does
/// not know; `skipped` collects those.
fn weighted_specs(controllers: &[String], weights: &[f64], skipped: &mut Vec<String>) -> Vec<String> {
    let mut specs = Vec::new();
    for controller in controllers {
        for &n in weights {
            let spec = weighted_spec(controller, n);
            if n < 1.0 && !accepts_fractional_weight(controller) {
                skipped.push(spec);
            } else if spec.parse::<Spec>().is_ok() {
                specs.push(spec);
            } else {
                skipped.push(spec);
            }
        }
    }
    specs
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The cases of built-in `name`; `skipped` collects specs left out.
pub fn cases(name: &str, options: &BuiltinOptions, skipped: &mut Vec<String>) -> Result<Vec<Case>, String> {
    let quick = options.quick;
    let queue = options.queue.clone().unwrap_or_else(|| "droptail".into());
    if queue != "droptail" && queue != "red" {
        return Err(format!("--queue {queue} is not a queue (accepted: droptail, red)"));
    }
    let controllers = options.controllers.clone().unwrap_or_else(|| weighted_controllers());
    let mut cases = Vec::new();
    match name {
        "crosstraffic" => {
            let (duration, warmup) =
                (options.duration_s.unwrap_or(if quick { 20.0 } else { 60.0 }), if quick { 5.0 } else { 10.0 });
            let weights = options.n.clone().unwrap_or(if quick { vec![2.0] } else { vec![1.0, 2.0, 4.0] });
            let controllers = if quick && options.controllers.is_none() { names(&["multcp"]) } else { controllers };
            let rate = options.bandwidth_mbps.unwrap_or(10.0);
            let delay = options.rtt_ms.map_or(15.0, |rtt| rtt / 2.0);
            for spec in weighted_specs(&controllers, &weights, skipped) {
                let mut bottleneck = LinkConfig::droptail_bdp("bottleneck", rate, delay, 2.0 * delay);
                // The interop runner's 25 packets at its 10 Mbit/s.
                bottleneck.buffer_bdp = None;
                bottleneck.buffer_packets = Some((25.0 * rate / 10.0).round().max(1.0) as usize);
                bottleneck.queue = queue.clone();
                let base = scenario(&format!("crosstraffic {spec}"), duration, warmup, vec![bottleneck]);
                let flows = vec![
                    (flow(&spec, 1, &["bottleneck"], Role::Weighted), Transport::Quic),
                    peer("tcp-cubic", 1, &["bottleneck"])?,
                ];
                cases.push(Case { name: format!("crosstraffic-{}", file_safe(&spec)), scenario: build(base, flows) });
            }
        }
        "weighted" => {
            let (duration, warmup) =
                (options.duration_s.unwrap_or(if quick { 20.0 } else { 60.0 }), if quick { 5.0 } else { 15.0 });
            let weights = options.n.clone().unwrap_or(if quick { vec![2.0] } else { vec![0.5, 2.0, 4.0, 8.0] });
            let controllers = if quick && options.controllers.is_none() { names(&["multcp"]) } else { controllers };
            let peers = options.peers.clone().unwrap_or_else(|| {
                if quick {
                    names(&["cubic"])
                } else {
                    names(&["cubic", "reno", "tcp-cubic"])
                }
            });
            let m = options.standard_flows.unwrap_or(2);
            let rate = options.bandwidth_mbps.unwrap_or(20.0);
            let rtt = options.rtt_ms.unwrap_or(40.0);
            for spec in weighted_specs(&controllers, &weights, skipped) {
                for peer_name in &peers {
                    let base = scenario(
                        &format!("weighted {spec} vs {m} {peer_name}"),
                        duration,
                        warmup,
                        vec![link("bottleneck", rate, rtt, &queue)],
                    );
                    let flows = vec![
                        (flow(&spec, 1, &["bottleneck"], Role::Weighted), Transport::Quic),
                        peer(peer_name, m, &["bottleneck"])?,
                    ];
                    cases.push(Case {
                        name: format!("weighted-{}-vs-{m}-{peer_name}", file_safe(&spec)),
                        scenario: build(base, flows),
                    });
                }
            }
        }
        "transient" => {
            let duration = options.duration_s.unwrap_or(if quick { 30.0 } else { 90.0 });
            let weights = options.n.clone().unwrap_or(vec![4.0]);
            let controllers = if quick && options.controllers.is_none() { names(&["multcp"]) } else { controllers };
            let peer_name = options.peers.as_ref().and_then(|p| p.first().cloned()).unwrap_or_else(|| "cubic".into());
            let m = options.standard_flows.unwrap_or(2);
            let rate = options.bandwidth_mbps.unwrap_or(20.0);
            let rtt = options.rtt_ms.unwrap_or(40.0);
            for spec in weighted_specs(&controllers, &weights, skipped) {
                let base = scenario(
                    &format!("transient {spec}"),
                    duration,
                    duration / 9.0,
                    vec![link("bottleneck", rate, rtt, &queue)],
                );
                let mut cbr = flow("reno", 1, &["bottleneck"], Role::Other);
                cbr.cc = None;
                cbr.traffic = "cbr".into();
                cbr.rate_mbps = Some(rate / 2.0);
                cbr.start_s = (duration / 3.0).round();
                cbr.stop_s = Some((2.0 * duration / 3.0).round());
                cbr.label = Some("cbr".into());
                let flows = vec![
                    (flow(&spec, 1, &["bottleneck"], Role::Weighted), Transport::Quic),
                    peer(&peer_name, m, &["bottleneck"])?,
                    (cbr, Transport::Quic),
                ];
                cases.push(Case { name: format!("transient-{}", file_safe(&spec)), scenario: build(base, flows) });
            }
        }
        "multipath" => {
            let duration = options.duration_s.unwrap_or(if quick { 20.0 } else { 60.0 });
            let warmup = duration / 6.0;
            let rate = options.bandwidth_mbps.unwrap_or(if quick { 10.0 } else { 20.0 });
            let rtt = options.rtt_ms.unwrap_or(40.0);
            let group = "mcompound:group=1";
            if group.parse::<Spec>().is_err() {
                skipped.push(group.into());
                return Ok(cases);
            }
            let multipath = |paths: &[&[&str]]| {
                let mut entry = flow(group, 1, &[], Role::Weighted);
                entry.paths = paths.iter().map(|p| p.iter().map(|l| l.to_string()).collect()).collect();
                entry.label = Some("mcompound".into());
                (entry, Transport::Quic)
            };
            let two = scenario(
                "multipath two bottlenecks",
                duration,
                warmup,
                vec![link("path1", rate, rtt, &queue), link("path2", rate, rtt, &queue)],
            );
            let flows = vec![
                multipath(&[&["path1"], &["path2"]]),
                (flow("ctcp", 1, &["path1"], Role::Standard), Transport::Quic),
            ];
            cases.push(Case { name: "multipath-two-bottlenecks".into(), scenario: build(two, flows) });
            let shared =
                scenario("multipath shared bottleneck", duration, warmup, vec![link("shared", rate, rtt, &queue)]);
            let flows = vec![
                multipath(&[&["shared"], &["shared"]]),
                (flow("ctcp", 1, &["shared"], Role::Standard), Transport::Quic),
            ];
            cases.push(Case { name: "multipath-shared-bottleneck".into(), scenario: build(shared, flows) });
        }
        "utilization" => {
            let (duration, warmup) =
                (options.duration_s.unwrap_or(if quick { 15.0 } else { 30.0 }), if quick { 5.0 } else { 10.0 });
            let n = options.n.as_ref().and_then(|n| n.first().copied()).unwrap_or(1.0);
            let rate = options.bandwidth_mbps.unwrap_or(20.0);
            let rtt = options.rtt_ms.unwrap_or(40.0);
            let names = options.controllers.clone().unwrap_or_else(|| names(SINGLE_FLOWS));
            for name in names {
                let base = scenario(
                    &format!("utilization {name}"),
                    duration,
                    warmup,
                    vec![link("bottleneck", rate, rtt, &queue)],
                );
                let entry = if name.starts_with("tcp-") || name == "cubic" || name == "reno" {
                    peer(&name, 1, &["bottleneck"])?
                } else {
                    let weighted = registry::find(&name).is_some_and(|algorithm| algorithm.is_weighted());
                    let spec = if weighted { weighted_spec(&name, n) } else { name.clone() };
                    if spec.parse::<Spec>().is_err() {
                        skipped.push(spec);
                        continue;
                    }
                    (flow(&spec, 1, &["bottleneck"], Role::Weighted), Transport::Quic)
                };
                cases.push(Case {
                    name: format!("utilization-{}", file_safe(&name)),
                    scenario: build(base, vec![entry]),
                });
            }
        }
        "headroom" => {
            let duration = options.duration_s.unwrap_or(if quick { 10.0 } else { 20.0 });
            let rtt = options.rtt_ms.unwrap_or(20.0);
            let rates = options.bandwidth_mbps.map_or_else(|| HEADROOM_RATES.to_vec(), |rate| vec![rate]);
            let spec = options.controllers.as_ref().and_then(|c| c.first().cloned()).unwrap_or_else(|| "cubic".into());
            for rate in rates {
                let base = scenario(
                    &format!("headroom {rate} Mbit/s"),
                    duration,
                    duration / 4.0,
                    vec![link("bottleneck", rate, rtt, &queue)],
                );
                let flows = vec![(flow(&spec, 2, &["bottleneck"], Role::Standard), Transport::Quic)];
                cases.push(Case { name: format!("headroom-{rate}"), scenario: build(base, flows) });
            }
        }
        other => {
            return Err(format!(
                "{other:?} is neither a scenario file nor a built-in scenario (built-ins: {})",
                BUILTINS.join(", ")
            ))
        }
    }
    Ok(cases)
}

/// `spec` as a directory name.
pub fn file_safe(spec: &str) -> String {
    spec.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '-' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_plans_in_both_forms() {
        for name in BUILTINS {
            for quick in [true, false] {
                let options = BuiltinOptions { quick, ..Default::default() };
                let cases = cases(name, &options, &mut Vec::new()).unwrap();
                assert!(!cases.is_empty(), "{name}");
                for case in cases {
                    case.scenario.plan(1, &mut String::new()).unwrap_or_else(|e| panic!("{}: {e}", case.name));
                }
            }
        }
    }

    #[test]
    fn quick_crosstraffic_is_one_flowshare_flow_against_linux_cubic() {
        let cases =
            cases("crosstraffic", &BuiltinOptions { quick: true, ..Default::default() }, &mut Vec::new()).unwrap();
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
    fn fractional_weights_are_skipped_for_controllers_without_them() {
        let options = BuiltinOptions {
            controllers: Some(vec!["multcp".into(), "mulcubic".into()]),
            n: Some(vec![0.5]),
            ..Default::default()
        };
        let mut skipped = Vec::new();
        let cases = cases("crosstraffic", &options, &mut skipped).unwrap();
        let specs: Vec<String> =
            cases.iter().map(|c| c.scenario.scenario.flows[0].cc.clone().unwrap_or_default()).collect();
        for spec in &specs {
            assert!(spec.parse::<Spec>().is_ok(), "{spec}");
        }
        assert_eq!(specs.len() + skipped.len(), 2);
    }

    #[test]
    fn unknown_builtins_and_peers_are_named() {
        let error = cases("bogus", &BuiltinOptions::default(), &mut Vec::new()).unwrap_err();
        assert!(error.starts_with("\"bogus\" is neither"), "{error}");
        let options = BuiltinOptions { peers: Some(vec!["bbr".into()]), ..Default::default() };
        let error = cases("weighted", &options, &mut Vec::new()).unwrap_err();
        assert!(error.starts_with("--peers bbr"), "{error}");
    }
}
