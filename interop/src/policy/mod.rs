//! The server's policy: which controller each connection gets, and how
//! requests may change its weight.
//!
//! A policy is a TOML file:
//!
//! ```toml
//! # No connection or request gets more flowshares than this (default 256).
//! max_weight = 8
//! # Responses at least this large count as bulk streams for weight = "streams"
//! # (default 1000000 bytes).
//! bulk_min_bytes = 1000000
//!
//! # When no rule matches (default: quiche's CUBIC).
//! [default]
//! cc = "cubic"
//!
//! # Rules are tried in order; the first whose conditions all hold wins.
//! [[rule]]
//! sni = "downloads.example.com"   # exact, or "*.example.com" for any subdomain
//! cc = "multcp:n=4"
//!
//! [[rule]]
//! sni = "backfill.example.com"
//! alpn = "h3"                      # the protocol the handshake will select
//! cc = "multfrc:n=0.5"
//!
//! [[rule]]
//! client = "10.1.0.0/16"           # client address prefix (IPv4 or IPv6)
//! cc = "pa-multcp:n=1"
//! weight = "streams"               # N follows the active bulk response streams
//!
//! # Per-request weights, for controllers whose weight can change.
//! [[upgrade]]
//! path_prefix = "/bulk/"
//! weight = 4
//!
//! [[upgrade]]
//! header = "x-flowshare-class"     # request header; `value` is optional
//! value = "backfill"
//! weight = 0.25
//! ```
//!
//! Every weight, whether from a controller spec (`multcp:n=4`) or an
//! upgrade, must lie within `max_weight`; a file that breaks this, or any
//! other rule, is rejected with `FILE:LINE: reason` on one line. A request
//! can carry `flowshare-weight: W` to ask for less than the policy gives
//! it, never more (see [`crate::weight`]).

mod condition;
mod file;

use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::path::PathBuf;

use flowshare_controllers::grammar::MAX_WEIGHT;
use flowshare_controllers::registry;
use flowshare_controllers::Spec;
use flowshare_controllers::Standard;

use condition::canonical;
use condition::Prefix;
pub use condition::Request;
use condition::RequestCondition;
use condition::SniPattern;

/// Responses at least this large count as bulk streams by default: large
/// enough that a page's small objects do not inflate N, small enough that a
/// download of a few round trips' worth does.
pub const DEFAULT_BULK_MIN_BYTES: u64 = 1_000_000;

/// The request header with which a client asks for a lower weight.
pub const WEIGHT_HEADER: &str = "flowshare-weight";

/// A policy that failed to load: the file, the line when known, the reason.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyError {
    /// Where the policy came from: a file name or a command-line option.
    pub source: String,
    /// Line of the offending value, 1-based.
    pub line: Option<usize>,
    /// What is wrong, on one line.
    pub reason: String,
}

impl fmt::Display for PolicyError {
    /// One line, whatever the file holds: control characters that a reason
    /// echoes from the file (a spec with `\n` in it) are escaped.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let reason = crate::log::one_line(&self.reason);
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.source, line, reason),
            None => write!(f, "{}: {}", self.source, reason),
        }
    }
}

impl std::error::Error for PolicyError {}

/// Settings given on the command line that take part in the policy.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--cc`: replaces the policy's default controller.
    pub default_cc: Option<String>,
    /// `--max-weight`: lowers the policy's cap.
    pub max_weight: Option<f64>,
}

/// How a connection's weight is managed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightMode {
    /// The spec's weight, changed only by upgrades.
    Fixed,
    /// `weight = "streams"`: N follows the active bulk response streams.
    Streams,
}

/// The controller a connection gets.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    /// The controller.
    pub spec: Spec,
    /// How its weight is managed.
    pub mode: WeightMode,
    /// Whether the controller's weight can change while it runs.
    pub weight_can_change: bool,
}

/// What the policy decided for one connection.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The controller and its weight mode.
    pub assignment: Assignment,
    /// Which part of the policy decided: `rule 2 (policy.toml:12)`, `default`.
    pub matched: String,
}

/// What the server knows about a connection when it chooses its controller
/// (from the TLS ClientHello and the first packet).
#[derive(Clone, Copy, Debug)]
pub struct Hello<'a> {
    /// Server name indication.
    pub sni: Option<&'a str>,
    /// The application protocol the handshake will select.
    pub alpn: Option<&'a str>,
    /// The client's address.
    pub client: IpAddr,
}

/// A loaded, validated policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    source: String,
    max_weight: f64,
    bulk_min_bytes: u64,
    default: Assignment,
    rules: Vec<Rule>,
    upgrades: Vec<Upgrade>,
}

#[derive(Clone, Debug, PartialEq)]
struct Rule {
    line: usize,
    sni: Option<SniPattern>,
    alpn: Option<String>,
    client: Option<Prefix>,
    assignment: Assignment,
}

#[derive(Clone, Debug, PartialEq)]
struct Upgrade {
    condition: RequestCondition,
    weight: f64,
}

impl Assignment {
    /// What a connection gets without a policy saying otherwise: quiche's
    /// CUBIC.
    fn quiche_default() -> Assignment {
        Assignment { spec: Spec::of_standard(Standard::Cubic), mode: WeightMode::Fixed, weight_can_change: false }
    }
}

impl Policy {
    /// The policy without a file: `overrides.default_cc` (or CUBIC) for
    /// every connection.
    pub fn from_overrides(overrides: &Overrides) -> Result<Policy, PolicyError> {
        let mut policy = Policy {
            source: "command line".to_string(),
            max_weight: MAX_WEIGHT,
            bulk_min_bytes: DEFAULT_BULK_MIN_BYTES,
            default: Assignment::quiche_default(),
            rules: Vec::new(),
            upgrades: Vec::new(),
        };
        policy.apply(overrides)?;
        Ok(policy)
    }

    /// Loads the policy file at `path`.
    pub fn load(path: &Path, overrides: &Overrides) -> Result<Policy, PolicyError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| PolicyError {
            source: source.clone(),
            line: None,
            reason: format!("cannot read: {e}"),
        })?;
        Policy::parse(&text, &source, overrides)
    }

    /// Applies the command line's settings, checking them against the file.
    fn apply(&mut self, overrides: &Overrides) -> Result<(), PolicyError> {
        let error = |reason: String| PolicyError { source: self.source.clone(), line: None, reason };
        if let Some(cap) = overrides.max_weight {
            if !(cap > 0.0 && cap <= MAX_WEIGHT) {
                return Err(error(format!("--max-weight {cap} is out of range; accepted range (0, {MAX_WEIGHT}]")));
            }
            for rule in &self.rules {
                check_weight_cap(rule.assignment.spec.weight(), cap).map_err(|reason| {
                    error(format!(
                        "line {}: cc {:?} {reason} (--max-weight)",
                        rule.line,
                        rule.assignment.spec.to_string()
                    ))
                })?;
            }
            for upgrade in &self.upgrades {
                check_weight_cap(upgrade.weight, cap)
                    .map_err(|reason| error(format!("upgrade weight {} {reason} (--max-weight)", upgrade.weight)))?;
            }
            self.max_weight = self.max_weight.min(cap);
        }
        check_weight_cap(self.default.spec.weight(), self.max_weight)
            .map_err(|reason| error(format!("default cc {:?} {reason}", self.default.spec.to_string())))?;
        if let Some(cc) = &overrides.default_cc {
            let spec: Spec = cc.parse().map_err(|e| error(format!("--cc: {e}")))?;
            check_weight_cap(spec.weight(), self.max_weight)
                .map_err(|reason| error(format!("--cc {cc:?} {reason}")))?;
            let weight_can_change = weight_can_change(&spec);
            self.default = Assignment { spec, mode: WeightMode::Fixed, weight_can_change };
        }
        Ok(())
    }

    /// Where the policy came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The largest weight any connection may have.
    pub fn max_weight(&self) -> f64 {
        self.max_weight
    }

    /// Responses at least this large count as bulk streams.
    pub fn bulk_min_bytes(&self) -> u64 {
        self.bulk_min_bytes
    }

    /// Number of connection rules.
    pub fn rules(&self) -> usize {
        self.rules.len()
    }

    /// The controller for a new connection.
    pub fn decide(&self, hello: &Hello) -> Decision {
        let client = canonical(hello.client);
        for (index, rule) in self.rules.iter().enumerate() {
            let sni_matches = rule.sni.as_ref().is_none_or(|pattern| hello.sni.is_some_and(|sni| pattern.matches(sni)));
            let alpn_matches = rule.alpn.as_ref().is_none_or(|alpn| hello.alpn == Some(alpn.as_str()));
            let client_matches = rule.client.as_ref().is_none_or(|prefix| prefix.contains(client));
            if sni_matches && alpn_matches && client_matches {
                return Decision {
                    assignment: rule.assignment.clone(),
                    matched: format!("rule {} ({}:{})", index + 1, self.source, rule.line),
                };
            }
        }
        Decision { assignment: self.default.clone(), matched: "default".to_string() }
    }

    /// The weight the policy gives `request`, if an upgrade matches it
    /// (the first that does).
    pub fn upgrade(&self, request: &impl Request) -> Option<f64> {
        self.upgrades.iter().find(|upgrade| upgrade.condition.matches(request)).map(|upgrade| upgrade.weight)
    }
}

/// Whether the controller of `spec` accepts weight changes while the
/// connection runs, as the controllers' registry says.
pub fn weight_can_change(spec: &Spec) -> bool {
    spec.algorithm().reweightable
}

/// The algorithms whose weight can change while a connection runs.
fn reweightable_names() -> Vec<&'static str> {
    registry::ALGORITHMS.iter().filter(|algorithm| algorithm.reweightable).map(|algorithm| algorithm.name).collect()
}

fn check_weight_cap(weight: f64, cap: f64) -> Result<(), String> {
    if weight > cap {
        Err(format!("asks for weight {weight}, above the cap max_weight = {cap}"))
    } else {
        Ok(())
    }
}

/// Where the policy of a server comes from, for reloads.
#[derive(Clone, Debug)]
pub struct PolicySource {
    /// The file, if any.
    pub file: Option<PathBuf>,
    /// Command-line settings.
    pub overrides: Overrides,
}

impl PolicySource {
    /// Loads (or reloads) the policy.
    pub fn load(&self) -> Result<Policy, PolicyError> {
        match &self.file {
            Some(file) => Policy::load(file, &self.overrides),
            None => Policy::from_overrides(&self.overrides),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Policy, PolicyError> {
        Policy::parse(text, "policy.toml", &Overrides::default())
    }

    fn hello<'a>(sni: Option<&'a str>, alpn: Option<&'a str>, client: &str) -> Hello<'a> {
        Hello { sni, alpn, client: client.parse().unwrap() }
    }

    const EXAMPLE: &str = r#"
max_weight = 8

[default]
cc = "cubic"

[[rule]]
sni = "fast.test"
cc = "multcp:n=4"

[[rule]]
sni = "*.slow.test"
alpn = "h3"
cc = "multfrc:n=0.5"

[[rule]]
client = "10.1.0.0/16"
cc = "pa-multcp:n=1"
weight = "streams"

[[upgrade]]
path_prefix = "/bulk/"
weight = 4

[[upgrade]]
header = "X-Class"
value = "backfill"
weight = 0.25
"#;

    struct Get<'a>(&'a str, &'a [(&'a str, &'a str)]);

    impl Request for Get<'_> {
        fn path(&self) -> &str {
            self.0
        }
        fn header(&self, name: &str) -> Option<&str> {
            self.1.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
        }
    }

    #[test]
    fn first_rule_whose_conditions_all_hold_decides_else_the_default() {
        let policy = parse(EXAMPLE).unwrap();
        let decide = |hello: Hello| policy.decide(&hello);

        let fast = decide(hello(Some("FAST.test"), Some("h3"), "127.0.0.1"));
        assert_eq!(fast.assignment.spec.to_string(), "multcp:n=4");
        assert_eq!(fast.matched, "rule 1 (policy.toml:7)");

        let slow = decide(hello(Some("a.slow.test"), Some("h3"), "127.0.0.1"));
        assert_eq!(slow.assignment.spec.name(), "multfrc");
        // The wildcard does not match the apex, and ALPN must match too.
        assert_eq!(decide(hello(Some("slow.test"), Some("h3"), "127.0.0.1")).matched, "default");
        assert_eq!(decide(hello(Some("a.slow.test"), Some("hq-interop"), "127.0.0.1")).matched, "default");

        let aggregate = decide(hello(None, Some("h3"), "10.1.200.3"));
        assert_eq!(aggregate.assignment.mode, WeightMode::Streams);
        assert!(aggregate.assignment.weight_can_change);
        // IPv4-mapped IPv6 clients match IPv4 prefixes.
        assert_eq!(decide(hello(None, None, "::ffff:10.1.0.9")).assignment.mode, WeightMode::Streams);
        assert_eq!(decide(hello(None, None, "10.2.0.1")).matched, "default");
        assert_eq!(decide(hello(None, None, "10.2.0.1")).assignment.spec, Spec::of_standard(Standard::Cubic));
    }

    #[test]
    fn upgrades_match_by_path_prefix_or_header() {
        let policy = parse(EXAMPLE).unwrap();
        assert_eq!(policy.upgrade(&Get("/bulk/a.bin", &[])), Some(4.0));
        assert_eq!(policy.upgrade(&Get("/other", &[("x-class", "backfill")])), Some(0.25));
        assert_eq!(policy.upgrade(&Get("/other", &[("x-class", "gold")])), None);
        assert_eq!(policy.upgrade(&Get("/other", &[])), None);
    }

    #[test]
    fn errors_give_file_line_and_reason_on_one_line() {
        let cases = [
            ("[[rule]]\nsni = \"a.test\"\ncc = \"multcp:n=-1\"\n", "policy.toml:3: rule 1: invalid controller spec \"multcp:n=-1\": multcp: n = -1 is out of range; accepted range (0, 256]"),
            ("max_weight = 2\n[[rule]]\nsni = \"a.test\"\ncc = \"multcp:n=4\"\n", "policy.toml:4: rule 1: cc \"multcp:n=4\" asks for weight 4, above the cap max_weight = 2"),
            ("max_weight = 2\n\n[[upgrade]]\npath_prefix = \"/x\"\nweight = 3\n", "policy.toml:5: upgrade 1: weight = 3 asks for weight 3, above the cap max_weight = 2"),
            ("max_weight = 300\n", "policy.toml:1: max_weight = 300 is out of range; accepted range (0, 256]"),
            ("[[rule]]\ncc = \"reno\"\n", "policy.toml:2: rule 1 has no condition (sni, alpn or client); put a fallback in [default]"),
            ("[[rule]]\nclient = \"10.0.0.0/33\"\ncc = \"reno\"\n", "policy.toml:2: rule 1: client \"10.0.0.0/33\": prefix length must be 0 to 32"),
            ("[default]\ncc = \"cubic\"\nweight = \"streams\"\n", "policy.toml:3: default: weight = \"streams\" needs a controller whose weight can change (multcp, pa-multcp, mulcubic, multfrc), not cubic"),
            ("[[upgrade]]\nweight = 1\n", "policy.toml:1: upgrade 1 needs exactly one of path_prefix and header"),
        ];
        for (text, expected) in cases {
            let error = parse(text).unwrap_err().to_string();
            assert_eq!(error, expected);
        }
        // Found by fuzzing (fuzz/fuzz_targets/policy.rs): a spec whose
        // field names hold a newline, which the spec error echoes raw.
        let error = parse("[default]\ncc = \"@\\n:@\\n:\"\n").unwrap_err().to_string();
        assert!(error.starts_with("policy.toml:2: default: invalid controller spec"), "{error}");
        assert!(!error.contains('\n'), "one line: {error:?}");
    }

    #[test]
    fn toml_syntax_errors_and_unknown_keys_point_at_their_line() {
        let error = parse("max_weight = 8\n[[rule]\nsni = 1\n").unwrap_err();
        assert_eq!(error.line, Some(2), "{error}");
        assert!(!error.to_string().contains('\n'), "{error}");
        let error =
            parse("max_weight = 8\n\n[[rule]]\nsni = \"a.test\"\ncc = \"reno\"\ncolour = \"blue\"\n").unwrap_err();
        assert_eq!(error.line, Some(6), "{error}");
        assert!(error.reason.contains("colour"), "{error}");
    }

    #[test]
    fn command_line_cc_replaces_the_default_and_is_held_to_the_cap() {
        let overrides = Overrides { default_cc: Some("multcp:n=2".into()), max_weight: None };
        let policy = Policy::parse(EXAMPLE, "p.toml", &overrides).unwrap();
        assert_eq!(policy.decide(&hello(None, None, "192.0.2.1")).assignment.spec.to_string(), "multcp:n=2");
        let overrides = Overrides { default_cc: Some("multcp:n=16".into()), max_weight: None };
        let error = Policy::parse(EXAMPLE, "p.toml", &overrides).unwrap_err().to_string();
        assert_eq!(error, "p.toml: --cc \"multcp:n=16\" asks for weight 16, above the cap max_weight = 8");
        let overrides = Overrides { default_cc: None, max_weight: Some(2.0) };
        let error = Policy::parse(EXAMPLE, "p.toml", &overrides).unwrap_err().to_string();
        assert!(
            error.contains("multcp:n=4\" asks for weight 4, above the cap max_weight = 2 (--max-weight)"),
            "{error}"
        );
    }

    #[test]
    fn only_controllers_with_a_settable_weight_report_it() {
        for (text, can) in [
            ("multcp:n=2", true),
            ("pa-multcp", true),
            ("mulcubic", true),
            ("multfrc", true),
            ("cubic", false),
            ("reno", false),
            ("ctcp", false),
        ] {
            assert_eq!(weight_can_change(&text.parse().unwrap()), can, "{text}");
        }
    }
}
