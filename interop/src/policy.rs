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

use std::fmt;
use std::net::IpAddr;
use std::ops::Range;
use std::path::Path;
use std::path::PathBuf;

use flowshare_controllers::grammar::MAX_WEIGHT;
use flowshare_controllers::registry;
use flowshare_controllers::Spec;
use flowshare_controllers::Standard;
use serde::Deserialize;
use toml::Spanned;

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
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.source, line, self.reason),
            None => write!(f, "{}: {}", self.source, self.reason),
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

/// A request, as far as upgrades look at it.
pub trait Request {
    /// The path, e.g. `/bulk/file.bin`.
    fn path(&self) -> &str;
    /// The value of header `name` (lowercase), if present.
    fn header(&self, name: &str) -> Option<&str>;
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

#[derive(Clone, Debug, PartialEq)]
enum RequestCondition {
    PathPrefix(String),
    Header { name: String, value: Option<String> },
}

impl Policy {
    /// The policy without a file: `overrides.default_cc` (or CUBIC) for
    /// every connection.
    pub fn from_overrides(overrides: &Overrides) -> Result<Policy, PolicyError> {
        let mut policy = Policy {
            source: "command line".to_string(),
            max_weight: MAX_WEIGHT,
            bulk_min_bytes: DEFAULT_BULK_MIN_BYTES,
            default: Assignment {
                spec: Spec::of_standard(Standard::Cubic),
                mode: WeightMode::Fixed,
                weight_can_change: false,
            },
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

    /// Parses a policy from `text`, naming it `source` in errors.
    pub fn parse(text: &str, source: &str, overrides: &Overrides) -> Result<Policy, PolicyError> {
        let at = |span: Range<usize>, reason: String| PolicyError {
            source: source.to_string(),
            line: Some(line_of(text, span.start)),
            reason,
        };
        let file: PolicyFile = toml::from_str(text).map_err(|e| PolicyError {
            source: source.to_string(),
            line: e.span().map(|span| line_of(text, span.start)),
            reason: one_line(e.message()),
        })?;

        let max_weight = match &file.max_weight {
            None => MAX_WEIGHT,
            Some(value) => {
                let weight = *value.get_ref();
                if !(weight > 0.0 && weight <= MAX_WEIGHT) {
                    return Err(at(
                        value.span(),
                        format!("max_weight = {weight} is out of range; accepted range (0, {MAX_WEIGHT}]"),
                    ));
                }
                weight
            }
        };
        let bulk_min_bytes = match &file.bulk_min_bytes {
            None => DEFAULT_BULK_MIN_BYTES,
            Some(value) => u64::try_from(*value.get_ref()).map_err(|_| {
                at(
                    value.span(),
                    format!("bulk_min_bytes = {} is out of range; accepted range [0, 2^63)", value.get_ref()),
                )
            })?,
        };
        let assignment = |table: &AssignmentFile, what: &str| -> Result<Assignment, PolicyError> {
            let spec: Spec = table.cc.get_ref().parse().map_err(|e| at(table.cc.span(), format!("{what}: {e}")))?;
            check_weight_cap(spec.weight(), max_weight)
                .map_err(|reason| at(table.cc.span(), format!("{what}: cc {:?} {reason}", table.cc.get_ref())))?;
            let weight_can_change = weight_can_change(&spec);
            let mode = match &table.weight {
                None => WeightMode::Fixed,
                Some(mode) if mode.get_ref() == "streams" => {
                    if !weight_can_change {
                        return Err(at(
                            mode.span(),
                            format!(
                                "{what}: weight = \"streams\" needs a controller whose weight can change \
                                 ({}), not {}",
                                reweightable_names().join(", "),
                                spec.name()
                            ),
                        ));
                    }
                    WeightMode::Streams
                }
                Some(mode) => {
                    return Err(at(
                        mode.span(),
                        format!("{what}: weight = {:?} is not a weight mode (accepted: \"streams\")", mode.get_ref()),
                    ))
                }
            };
            Ok(Assignment { spec, mode, weight_can_change })
        };

        let default = match &file.default {
            Some(table) => assignment(table.get_ref(), "default")?,
            None => Assignment {
                spec: Spec::of_standard(Standard::Cubic),
                mode: WeightMode::Fixed,
                weight_can_change: false,
            },
        };

        let mut rules = Vec::with_capacity(file.rule.len());
        for (index, rule) in file.rule.iter().enumerate() {
            let what = format!("rule {}", index + 1);
            let line = line_of(text, rule.span().start);
            let rule = rule.get_ref();
            let sni = rule
                .sni
                .as_ref()
                .map(|sni| {
                    SniPattern::parse(sni.get_ref()).map_err(|reason| at(sni.span(), format!("{what}: sni {reason}")))
                })
                .transpose()?;
            let alpn = rule
                .alpn
                .as_ref()
                .map(|alpn| {
                    let name = alpn.get_ref();
                    if name.is_empty() || name.len() > 255 {
                        Err(at(alpn.span(), format!("{what}: alpn {name:?} must be 1 to 255 bytes")))
                    } else {
                        Ok(name.clone())
                    }
                })
                .transpose()?;
            let client = rule
                .client
                .as_ref()
                .map(|client| {
                    Prefix::parse(client.get_ref())
                        .map_err(|reason| at(client.span(), format!("{what}: client {reason}")))
                })
                .transpose()?;
            if sni.is_none() && alpn.is_none() && client.is_none() {
                return Err(at(
                    rule.cc.span(),
                    format!("{what} has no condition (sni, alpn or client); put a fallback in [default]"),
                ));
            }
            let assignment = assignment(&rule.assignment(), &what)?;
            rules.push(Rule { line, sni, alpn, client, assignment });
        }

        let mut upgrades = Vec::with_capacity(file.upgrade.len());
        for (index, upgrade) in file.upgrade.iter().enumerate() {
            let what = format!("upgrade {}", index + 1);
            let span = upgrade.span();
            let upgrade = upgrade.get_ref();
            let condition = match (&upgrade.path_prefix, &upgrade.header) {
                (Some(prefix), None) => {
                    if upgrade.value.is_some() {
                        return Err(at(span, format!("{what}: value goes with header, not with path_prefix")));
                    }
                    if !prefix.get_ref().starts_with('/') {
                        return Err(at(
                            prefix.span(),
                            format!("{what}: path_prefix {:?} must start with '/'", prefix.get_ref()),
                        ));
                    }
                    RequestCondition::PathPrefix(prefix.get_ref().clone())
                }
                (None, Some(header)) => {
                    let name = header.get_ref();
                    if name.is_empty() || !name.bytes().all(is_token_byte) {
                        return Err(at(header.span(), format!("{what}: header {name:?} is not a header name")));
                    }
                    if name.eq_ignore_ascii_case(WEIGHT_HEADER) {
                        return Err(at(
                            header.span(),
                            format!("{what}: header {WEIGHT_HEADER} is the client's own request for a lower weight"),
                        ));
                    }
                    RequestCondition::Header {
                        name: name.to_ascii_lowercase(),
                        value: upgrade.value.as_ref().map(|value| value.get_ref().clone()),
                    }
                }
                _ => return Err(at(span, format!("{what} needs exactly one of path_prefix and header"))),
            };
            let weight = *upgrade.weight.get_ref();
            if weight.is_nan() || weight <= 0.0 {
                return Err(at(
                    upgrade.weight.span(),
                    format!("{what}: weight = {weight} is out of range; accepted range (0, {max_weight}]"),
                ));
            }
            check_weight_cap(weight, max_weight)
                .map_err(|reason| at(upgrade.weight.span(), format!("{what}: weight = {weight} {reason}")))?;
            upgrades.push(Upgrade { condition, weight });
        }

        let mut policy = Policy { source: source.to_string(), max_weight, bulk_min_bytes, default, rules, upgrades };
        policy.apply(overrides)?;
        Ok(policy)
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

impl RequestCondition {
    fn matches(&self, request: &impl Request) -> bool {
        match self {
            RequestCondition::PathPrefix(prefix) => request.path().starts_with(prefix.as_str()),
            RequestCondition::Header { name, value } => match (request.header(name), value) {
                (Some(_), None) => true,
                (Some(actual), Some(expected)) => actual == expected,
                (None, _) => false,
            },
        }
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

fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

fn one_line(message: &str) -> String {
    message.trim().split('\n').map(str::trim).collect::<Vec<_>>().join("; ")
}

/// IPv4-mapped IPv6 addresses (a dual-stack socket's view of IPv4 clients)
/// match IPv4 prefixes.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

/// A server name pattern: `example.com`, or `*.example.com` for any name
/// below it. Case-insensitive.
#[derive(Clone, Debug, PartialEq)]
struct SniPattern {
    /// Lowercase name, without the `*.` of a wildcard.
    name: String,
    wildcard: bool,
}

impl SniPattern {
    fn parse(text: &str) -> Result<SniPattern, String> {
        let (wildcard, name) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let valid = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        if !valid {
            return Err(format!("{text:?} is not a server name (write name.example or *.example)"));
        }
        Ok(SniPattern { name: name.to_ascii_lowercase(), wildcard })
    }

    fn matches(&self, sni: &str) -> bool {
        let sni = sni.trim_end_matches('.');
        if self.wildcard {
            sni.len() > self.name.len() + 1
                && sni.as_bytes()[sni.len() - self.name.len() - 1] == b'.'
                && sni[sni.len() - self.name.len()..].eq_ignore_ascii_case(&self.name)
        } else {
            sni.eq_ignore_ascii_case(&self.name)
        }
    }
}

/// An address prefix, `10.0.0.0/8` or `2001:db8::/32`; a bare address is a
/// prefix of full length.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Prefix {
    network: IpAddr,
    length: u8,
}

impl Prefix {
    fn parse(text: &str) -> Result<Prefix, String> {
        let bad = || format!("{text:?} is not an address prefix (write 10.0.0.0/8, 2001:db8::/32 or an address)");
        let (address, length) = match text.split_once('/') {
            Some((address, length)) => (address, Some(length)),
            None => (text, None),
        };
        let network: IpAddr = address.trim().parse().map_err(|_| bad())?;
        let network = canonical(network);
        let bits = if network.is_ipv4() { 32 } else { 128 };
        let length = match length {
            None => bits,
            Some(length) => match length.trim().parse::<u8>() {
                Ok(length) if length <= bits => length,
                _ => return Err(format!("{text:?}: prefix length must be 0 to {bits}")),
            },
        };
        Ok(Prefix { network, length })
    }

    fn contains(&self, address: IpAddr) -> bool {
        match (self.network, address) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.length)).unwrap_or(0);
                u32::from(network) & mask == u32::from(address) & mask
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.length)).unwrap_or(0);
                u128::from(network) & mask == u128::from(address) & mask
            }
            _ => false,
        }
    }
}

/// The file as written, with the position of every value for errors.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    max_weight: Option<Spanned<f64>>,
    bulk_min_bytes: Option<Spanned<i64>>,
    default: Option<Spanned<AssignmentFile>>,
    #[serde(default)]
    rule: Vec<Spanned<RuleFile>>,
    #[serde(default)]
    upgrade: Vec<Spanned<UpgradeFile>>,
}

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct AssignmentFile {
    cc: Spanned<String>,
    weight: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    sni: Option<Spanned<String>>,
    alpn: Option<Spanned<String>>,
    client: Option<Spanned<String>>,
    cc: Spanned<String>,
    weight: Option<Spanned<String>>,
}

impl RuleFile {
    fn assignment(&self) -> AssignmentFile {
        AssignmentFile { cc: self.cc.clone(), weight: self.weight.clone() }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpgradeFile {
    path_prefix: Option<Spanned<String>>,
    header: Option<Spanned<String>>,
    value: Option<Spanned<String>>,
    weight: Spanned<f64>,
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
    fn prefixes_compare_only_their_leading_bits() {
        let prefix = Prefix::parse("10.1.0.0/16").unwrap();
        assert!(prefix.contains("10.1.255.255".parse().unwrap()));
        assert!(!prefix.contains("10.2.0.0".parse().unwrap()));
        assert!(Prefix::parse("0.0.0.0/0").unwrap().contains("192.0.2.1".parse().unwrap()));
        let v6 = Prefix::parse("2001:db8::/32").unwrap();
        assert!(v6.contains("2001:db8:1::1".parse().unwrap()));
        assert!(!v6.contains("10.1.0.1".parse().unwrap()));
        assert!(Prefix::parse("::1").unwrap().contains("::1".parse().unwrap()));
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
