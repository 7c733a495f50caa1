//! The registry: every algorithm of the spec language, the one place that
//! names them all, with what each supports as data.
//!
//! Adding a controller is its own module plus one entry in [`ALGORITHMS`]
//! (see CONTRIBUTING.md). Hosts never list algorithms: the lab's and the
//! testbed's experiments take [`weighted`] and [`standard`], the server's
//! policy asks [`Algorithm::reweightable`], quiche's name registry takes
//! every entry, and the shared property tests below drive every entry's
//! [`Algorithm::example`].
//!
//! | name | weights | at run time | delivery | keys |
//! |---|---|---|---|---|
//! | `reno` | - | - | window | none (quiche's built-in in quiche) |
//! | `cubic` | - | - | window | none (quiche's built-in in quiche) |
//! | `bbr` | - | - | rate | none (quiche's BBRv2 in quiche, Linux's BBR as a TCP peer; no implementation here, so not in the lab) |
//! | `multcp` | (0, 256] | yes | window | `n`, `decrease`, `a`, `b`, `pacing`, `thinning`, `ack_delay`, `whole_packets`, `yield_by`, `loops` ([`crate::multcp`]) |
//! | `ctcp` | - | - | window | `alpha`, `beta`, `k`, `gamma`, `zeta` ([`crate::ctcp`]) |
//! | `mcompound` | - | - | window | `group` (required), the keys of `ctcp` ([`crate::mcompound`]) |
//! | `pa-multcp` | [0.01, 256] ((0, 256] with `probe=reno`) | yes | window | `n`, `assign`, `probe`, `cap`, `pacing`, `split`, `thinning`, `yield_by`, `whole_packets` ([`crate::pa_multcp`]) |
//! | `mulcubic` | [0.01, 256] | yes | window | `n`, `decrease`, `pacing`, `thinning`, `ack_delay`, `whole_packets`, `yield_by`, `loops` ([`crate::mulcubic`]) |
//! | `multfrc` | (0, 256] | yes | rate | `n`, `b`, `t_mbi`, `t_rto`, `flows_hit`, `thinning`, `thin_exponent`, `pacing` ([`crate::multfrc`]) |

use std::str::FromStr;
use std::sync::Arc;

use crate::bbr::BbrConfig;
use crate::ctcp::CtcpConfig;
use crate::cubic::CubicConfig;
use crate::equations::CUBIC_WEIGHT;
use crate::grammar::Args;
use crate::grammar::Range;
use crate::grammar::SpecError;
use crate::mcompound::McompoundConfig;
use crate::mulcubic::MulCubicConfig;
use crate::multcp::MulTcpConfig;
use crate::multfrc::MulTfrcConfig;
use crate::pa_multcp::PaMulTcpConfig;
use crate::reno::RenoConfig;
use crate::spec::Algorithm;
use crate::spec::AlgorithmConfig;
use crate::spec::Delivery;
use crate::spec::Spec;
use crate::spec::Standard;

/// Reads the keys of algorithm `C` for its registry entry.
fn parse<C: AlgorithmConfig>(args: &mut Args) -> Result<Arc<dyn AlgorithmConfig>, SpecError> {
    Ok(Arc::new(C::from_args(args)?))
}

/// The papers' behaviour of the two single-window aggregates, MulTCP and
/// MulCUBIC, which take the same keys for it. Paced evenly, they yield
/// below one flowshare as the papers do (`yield_by=increase`, the default
/// of a paced connection).
const WINDOW_AGGREGATE_PAPER_KEYS: &str =
    "decrease=paper,pacing=even,thinning=paper,ack_delay=paper,whole_packets=paper,loops=one";

/// Every algorithm, in the order listings and experiments show them.
pub static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "reno",
        summary: "NewReno, RFC 9002 (quiche's built-in in quiche; reference implementation elsewhere)",
        weights: None,
        reweightable: false,
        delivery: Delivery::Window,
        standard: Some(Standard::Reno),
        grouped: false,
        example: "reno",
        paper: None,
        parse: parse::<RenoConfig>,
    },
    Algorithm {
        name: "cubic",
        summary: "CUBIC, RFC 9438 (quiche's built-in in quiche; reference implementation elsewhere)",
        weights: None,
        reweightable: false,
        delivery: Delivery::Window,
        standard: Some(Standard::Cubic),
        grouped: false,
        example: "cubic",
        paper: None,
        parse: parse::<CubicConfig>,
    },
    Algorithm {
        name: "bbr",
        summary: "BBR as hosts have it: quiche's BBRv2 in quiche, Linux's BBR as a TCP peer (no implementation here: not in the lab)",
        weights: None,
        reweightable: false,
        delivery: Delivery::Rate,
        standard: Some(Standard::Bbr),
        grouped: false,
        example: "bbr",
        paper: None,
        parse: parse::<BbrConfig>,
    },
    Algorithm {
        name: "multcp",
        summary: "MulTCP(N): AIMD(N, 1/2N) and its eq. (5) family (paper 000 section 3.1, paper 001)",
        weights: Some(Range::WEIGHT),
        reweightable: true,
        delivery: Delivery::Window,
        standard: None,
        grouped: false,
        example: "multcp:n=4,a=2,pacing=even",
        paper: Some(WINDOW_AGGREGATE_PAPER_KEYS),
        parse: parse::<MulTcpConfig>,
    },
    Algorithm {
        name: "ctcp",
        summary: "Compound TCP: loss window + delay window (paper 003 section III-A)",
        weights: None,
        reweightable: false,
        delivery: Delivery::Window,
        standard: None,
        grouped: false,
        example: "ctcp:gamma=5,beta=0.3",
        paper: None,
        parse: parse::<CtcpConfig>,
    },
    Algorithm {
        name: "mcompound",
        summary: "MCompound: Compound TCP subflows coupled in a group (paper 003 section III-B)",
        weights: None,
        reweightable: false,
        delivery: Delivery::Window,
        standard: None,
        grouped: true,
        example: "mcompound:group=registry-example,gamma=20",
        paper: None,
        parse: parse::<McompoundConfig>,
    },
    Algorithm {
        name: "pa-multcp",
        summary: "PA-MulTCP(N): probe loop + capped adjusting loop (paper 000 section 4)",
        weights: Some(CUBIC_WEIGHT),
        reweightable: true,
        delivery: Delivery::Window,
        standard: None,
        grouped: false,
        example: "pa-multcp:n=4,assign=interleave,probe=cubic",
        paper: Some("probe=reno,assign=consecutive,cap=paper,pacing=even,thinning=paper"),
        parse: parse::<PaMulTcpConfig>,
    },
    Algorithm {
        name: "mulcubic",
        summary: "MulCUBIC(N): N CUBIC flows' windows in one connection (derived from RFC 9438)",
        weights: Some(CUBIC_WEIGHT),
        reweightable: true,
        delivery: Delivery::Window,
        standard: None,
        grouped: false,
        example: "mulcubic:n=4,pacing=even",
        paper: Some(WINDOW_AGGREGATE_PAPER_KEYS),
        parse: parse::<MulCubicConfig>,
    },
    Algorithm {
        name: "multfrc",
        summary: "MulTFRC(n): TFRC with the n-flow throughput equation, a paced rate (paper 004)",
        weights: Some(Range::WEIGHT),
        reweightable: true,
        delivery: Delivery::Rate,
        standard: None,
        grouped: false,
        example: "multfrc:n=4,b=2,t_mbi=1,t_rto=4,pacing=even",
        paper: Some("flows_hit=paper,thinning=paper,t_rto=4,pacing=even"),
        parse: parse::<MulTfrcConfig>,
    },
];

/// The algorithm called `name`.
pub fn find(name: &str) -> Option<&'static Algorithm> {
    ALGORITHMS.iter().find(|algorithm| algorithm.name == name)
}

/// The names of every algorithm, for messages.
pub fn names() -> Vec<&'static str> {
    ALGORITHMS.iter().map(|algorithm| algorithm.name).collect()
}

/// The weighted algorithms, in registry order.
pub fn weighted() -> impl Iterator<Item = &'static Algorithm> {
    ALGORITHMS.iter().filter(|algorithm| algorithm.is_weighted())
}

/// The standard algorithms (`reno`, `cubic`, `bbr`), in registry order.
pub fn standard() -> impl Iterator<Item = &'static Algorithm> {
    ALGORITHMS.iter().filter(|algorithm| algorithm.standard.is_some())
}

impl FromStr for Spec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Spec, SpecError> {
        let parse = || {
            let mut args = Args::parse(text)?;
            let Some(algorithm) = find(args.algorithm()) else {
                return Err(SpecError::new(
                    args.algorithm(),
                    "name",
                    format!("is not a known algorithm (accepted: {})", names().join(", ")),
                ));
            };
            let config = (algorithm.parse)(&mut args)?;
            args.finish()?;
            Ok(Spec::new(algorithm, config))
        };
        parse().map_err(|e: SpecError| e.in_spec(text))
    }
}

impl Algorithm {
    /// The spec text that runs the algorithm as its paper describes it: its
    /// name with [`Algorithm::paper`]'s keys (and any key the algorithm
    /// requires still to be added, as `mcompound`'s group).
    pub fn paper_text(&self) -> String {
        match self.paper {
            Some(keys) => format!("{}:{keys}", self.name),
            None => self.name.to_string(),
        }
    }
}

impl Spec {
    /// The spec of a standard algorithm, without parameters.
    pub fn of_standard(standard: Standard) -> Spec {
        let algorithm = ALGORITHMS
            .iter()
            .find(|algorithm| algorithm.standard == Some(standard))
            .expect("the registry lists every standard algorithm");
        let config = (algorithm.parse)(&mut Args::parse(algorithm.name).expect("a registered name parses"))
            .expect("standard algorithms take no keys");
        Spec::new(algorithm, config)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::testing;
    use crate::testing::Host;
    use crate::SentPacket;
    use crate::Time;

    fn error(text: &str) -> String {
        text.parse::<Spec>().unwrap_err().to_string()
    }

    #[test]
    fn standard_names_parse_without_parameters() {
        assert_eq!("reno".parse::<Spec>(), Ok(Spec::of_standard(Standard::Reno)));
        assert_eq!("cubic".parse::<Spec>().unwrap().standard(), Some(Standard::Cubic));
        assert!(error("cubic:n=2").contains("n is not a known key (accepted: none)"));
    }

    #[test]
    fn errors_name_the_field_and_the_accepted_range() {
        assert_eq!(
            error("multcp:n=-1"),
            "invalid controller spec \"multcp:n=-1\": multcp: n = -1 is out of range; accepted range (0, 256]"
        );
        assert!(error("multcp:n=0").contains("n = 0 is out of range; accepted range (0, 256]"));
        assert!(error("multcp:n=257").contains("accepted range (0, 256]"));
        assert!(error("multcp:n=NaN").contains("n = NaN is out of range"));
        assert!(error("multcp:n=inf").contains("n = inf is out of range"));
        assert!(error("multcp:n=four").contains("n = \"four\" is not a number"));
        assert!(error("multcp:m=4").contains(
            "m is not a known key (accepted: n, decrease, pacing, thinning, ack_delay, whole_packets, yield_by, loops, a, b)"
        ));
        assert!(error("multcp:n=4,n=5").contains("n is given more than once"));
        assert!(error("multcp:n").contains("has no value"));
        assert!(error("bbr9").contains("algorithm \"bbr9\" is not a known algorithm"));
        assert!(error("").contains("is missing (a spec looks like multcp:n=4)"));
    }

    #[test]
    fn every_error_is_one_line() {
        for bad in ["multcp:n=-1", "multcp:a=1,b=0.9,n=2", "nope", "multcp:x", ":n=1", "multcp:n=1,,"] {
            let message = error(bad);
            assert!(!message.contains('\n'), "{message}");
        }
    }

    #[test]
    fn canonical_form_parses_back_to_the_same_spec() {
        let examples = ALGORITHMS.iter().map(|algorithm| algorithm.example);
        for text in ["multcp:n=4", "multcp:n=0.5", "multcp:n=3,b=0.1"].into_iter().chain(examples) {
            let spec: Spec = text.parse().unwrap();
            let again: Spec = spec.to_string().parse().unwrap();
            assert_eq!(spec, again, "{text} -> {spec}");
        }
    }

    #[test]
    fn whitespace_around_names_keys_and_values_is_ignored() {
        assert_eq!("multcp: n = 4 ".parse::<Spec>(), "multcp:n=4".parse::<Spec>());
    }

    #[test]
    fn names_are_unique_and_examples_are_their_own() {
        for (index, algorithm) in ALGORITHMS.iter().enumerate() {
            assert!(ALGORITHMS[..index].iter().all(|earlier| earlier.name != algorithm.name), "{}", algorithm.name);
            let example: Spec = algorithm.example.parse().unwrap();
            assert_eq!(example.name(), algorithm.name);
        }
    }

    #[test]
    fn the_data_says_what_the_controllers_do() {
        // Weight, run-time reweighting and delivery are data that hosts act
        // on without building a controller; they must match the controllers.
        for algorithm in ALGORITHMS {
            let spec: Spec = algorithm.example.parse().unwrap();
            assert_eq!(spec.build(&testing::params()).is_ok(), spec.has_implementation(), "{}", algorithm.name);
            let Ok(mut controller) = spec.build(&testing::params()) else { continue };
            let snapshot = controller.snapshot();
            assert_eq!(snapshot.algorithm, algorithm.name);
            assert_eq!(snapshot.weight.is_some(), algorithm.is_weighted(), "{}", algorithm.name);
            assert_eq!(controller.set_weight(2.0).is_ok(), algorithm.reweightable, "{}", algorithm.name);
            assert_eq!(spec.reweighted(2.0).is_ok(), algorithm.is_weighted(), "{}", algorithm.name);
            if let Some(weights) = algorithm.weights {
                assert_eq!(spec.reweighted(weights.max).map(|spec| spec.weight()), Ok(weights.max));
                assert!(spec.reweighted(weights.max * 2.0).is_err());
            } else {
                assert_eq!(spec.weight(), 1.0);
            }
        }
        assert_eq!(
            weighted().map(|algorithm| algorithm.name).collect::<Vec<_>>(),
            ["multcp", "pa-multcp", "mulcubic", "multfrc"]
        );
        assert_eq!(standard().map(|algorithm| algorithm.name).collect::<Vec<_>>(), ["reno", "cubic", "bbr"]);
    }

    #[test]
    fn bbr_is_a_hosts_own_and_building_it_says_so_in_one_line() {
        let spec: Spec = "bbr".parse().unwrap();
        assert_eq!(spec.standard(), Some(Standard::Bbr));
        assert!(!spec.has_implementation());
        let message = spec.build(&testing::params()).map(|_| ()).unwrap_err().to_string();
        assert!(message.contains("runs only as a host's own (quiche's BBRv2, Linux's BBR)"), "{message}");
        assert!(!message.contains('\n'), "{message}");
        assert!(error("bbr:n=2").contains("n is not a known key (accepted: none)"));
    }

    #[test]
    fn paper_specs_parse_and_keep_their_keys_when_reweighted() {
        for algorithm in weighted() {
            let spec: Spec = algorithm.paper_text().parse().unwrap();
            assert_eq!(spec.name(), algorithm.name);
            if let (Some(keys), Ok(weighted)) = (algorithm.paper, spec.reweighted(4.0)) {
                for key in keys.split(',') {
                    assert!(weighted.to_string().contains(key), "{weighted} lacks {key}");
                }
            }
        }
    }

    #[test]
    fn every_weighted_controller_can_pace_as_its_flows() {
        // Packets sent with no acknowledgement between them: the window and
        // so the even rate stay put, and only the gaps may vary.
        // After each packet: the gap the host is given and the rate the
        // snapshot reports.
        // The gaps of one window: the separate loops (MulTCP's and MulCUBIC's
        // default) space a packet to its own loop's clock instead
        // (separate_loops.rs tests that).
        let sent = |spec: &str| -> Vec<(f64, u64)> {
            let one_window = format!("{spec},loops=one");
            let spec = if one_window.parse::<Spec>().is_ok() { one_window } else { spec.to_string() };
            let mut controller = spec.parse::<Spec>().unwrap().build(&testing::params()).unwrap();
            (0..20_000u64)
                .map(|number| {
                    let time = Time::from_nanos(number * 1_000);
                    controller.on_packet_sent(&SentPacket { number, bytes: 1200, time, bytes_in_flight: 0 });
                    (1.0 / controller.pacing_rate().unwrap() as f64, controller.snapshot().pacing_rate.unwrap())
                })
                .collect()
        };
        let gaps = |spec: &str| -> Vec<f64> { sent(spec).into_iter().map(|(gap, _)| gap).collect() };
        for algorithm in weighted() {
            let even = gaps(&format!("{}:n=8,pacing=even", algorithm.name));
            assert!(even.iter().all(|&gap| gap == even[0]), "{}", algorithm.name);
            let flows = gaps(&format!("{}:n=8,pacing=flows", algorithm.name));
            let mean = flows.iter().sum::<f64>() / flows.len() as f64;
            assert!((mean / even[0] - 1.0).abs() < 0.03, "{}: mean gap {mean} against {}", algorithm.name, even[0]);
            let longer = flows.iter().filter(|&&gap| gap > 2.0 * even[0]).count();
            // A share 7/8 exponential: P(gap > 2) = exp(-(2 - 1/8) / (7/8)), about 12 %.
            assert!((2_000..2_800).contains(&longer), "{}: {longer} gaps over twice the even one", algorithm.name);
            let one = gaps(&format!("{}:n=1,pacing=flows", algorithm.name));
            assert!(one.iter().all(|&gap| gap == one[0]), "{}", algorithm.name);
            // Every weighted controller paces as its flows by default (the
            // lab's scorecard: evenly they take more than N flowshares);
            // every paper reproduction paces evenly.
            let (default, reported): (Vec<f64>, Vec<u64>) =
                sent(&format!("{}:n=8", algorithm.name)).into_iter().unzip();
            assert!(default.iter().any(|&gap| gap != default[0]), "{}", algorithm.name);
            // Hosts and logs read the mean rate from the snapshot.
            assert!(reported.iter().all(|&rate| rate == reported[0]), "{}", algorithm.name);
            assert!((1.0 / reported[0] as f64 / even[0] - 1.0).abs() < 1e-3, "{}", algorithm.name);
            let paper = algorithm.paper_text().parse::<Spec>().unwrap().reweighted(8.0).unwrap();
            let paper = gaps(&paper.to_string());
            assert!(paper.iter().all(|&gap| gap == paper[0]), "{}", algorithm.paper_text());
        }
    }

    #[test]
    fn window_controllers_can_leave_pacing_off_and_rate_controllers_cannot() {
        for algorithm in weighted() {
            let spec = format!("{}:n=8,pacing=off", algorithm.name);
            match spec.parse::<Spec>() {
                Ok(spec) => {
                    let mut controller = spec.build(&testing::params()).unwrap();
                    let time = Time::from_nanos(0);
                    controller.on_packet_sent(&SentPacket { number: 0, bytes: 1200, time, bytes_in_flight: 0 });
                    assert_eq!(controller.pacing_rate(), None, "{spec}");
                    assert_eq!(controller.snapshot().pacing_rate, None, "{spec}");
                    assert!(spec.to_string().ends_with(",pacing=off"), "{spec}");
                }
                Err(error) => {
                    assert_eq!(algorithm.name, "multfrc", "{error}");
                    assert!(error.to_string().contains("accepted: even, flows"), "{error}");
                }
            }
        }
    }

    #[test]
    fn reweighting_keeps_every_other_choice() {
        let spec: Spec = "pa-multcp:n=4,assign=interleave,probe=cubic".parse().unwrap();
        assert_eq!(spec.reweighted(0.5).unwrap().to_string(), "pa-multcp:n=0.5,assign=interleave");
        let spec: Spec = "multcp:a=2".parse().unwrap();
        assert_eq!(spec.reweighted(4.0).unwrap(), "multcp:n=4,a=2".parse().unwrap());
        assert!(Spec::of_standard(Standard::Cubic)
            .reweighted(2.0)
            .unwrap_err()
            .to_string()
            .contains("cannot be changed"));
    }

    /// A registered algorithm's example or, for weighted ones, the example
    /// at a random weight within its range; only those flowshare
    /// implements (not `bbr`).
    fn registered_spec() -> impl Strategy<Value = Spec> {
        let implemented: Vec<Spec> =
            ALGORITHMS.iter().map(|a| a.example.parse::<Spec>().unwrap()).filter(Spec::has_implementation).collect();
        (0..implemented.len(), 0.0f64..1.0).prop_map(move |(index, fraction)| {
            let spec = implemented[index].clone();
            let algorithm = spec.algorithm();
            match algorithm.weights {
                Some(range) if fraction < 0.5 => {
                    // Spread over the range on a log scale, ends excluded.
                    let low = range.min.max(0.001).ln();
                    let n = (low + (range.max.ln() - low) * (0.01 + 1.96 * fraction)).exp();
                    spec.reweighted(n.min(range.max)).unwrap_or(spec)
                }
                _ => spec,
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4_000))]

        /// Every registered controller, driven by random host calls,
        /// neither panics nor produces a window or rate that is not a
        /// positive finite number, and keeps at least two packets of window.
        #[test]
        fn every_registered_controller_stays_sane_under_random_events(
            spec in registered_spec(),
            ops in prop::collection::vec(testing::op(), 1..60),
        ) {
            let mut host = Host::new(spec.build(&testing::params()).unwrap());
            for op in &ops {
                host.apply(op);
                let snapshot = host.controller.snapshot();
                prop_assert!(snapshot.congestion_window >= 2 * host.mss, "{spec} after {op:?}: {snapshot:?}");
                prop_assert!(snapshot.congestion_window < usize::MAX / 2, "{spec} after {op:?}: {snapshot:?}");
                if let Some(rate) = host.controller.pacing_rate() {
                    prop_assert!(rate > 0, "{spec} after {op:?}: {snapshot:?}");
                }
                for (name, value) in &snapshot.state {
                    prop_assert!(value.is_finite(), "{spec} after {op:?}: {name} = {value:?}");
                }
            }
        }
    }
}
