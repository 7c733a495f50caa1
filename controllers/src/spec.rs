//! The controller spec language: `name[:key=value[,key=value]...]`.
//!
//! A spec names an algorithm and its parameters, e.g. `multcp:n=4`,
//! `multcp:n=0.5` or `multcp:n=4,a=2`. Parsing validates every value, so a
//! [`Spec`] always builds a working controller; a bad spec gives a
//! [`SpecError`] that names the field and the accepted range in one line.
//!
//! | spec | algorithm | keys |
//! |---|---|---|
//! | `reno` | RFC 9002 NewReno (quiche's built-in in quiche) | none |
//! | `cubic` | CUBIC, RFC 9438 (quiche's built-in in quiche) | none |
//! | `multcp` | MulTCP(N), [`crate::multcp`] | `n` in (0, [`MAX_WEIGHT`]] (default 1), `a`, `b` |
//! | `pa-multcp` | PA-MulTCP(N), [`crate::pa_multcp`] | `n` in (0, [`MAX_WEIGHT`]] (default 1; [0.01, 256] with `probe=cubic`), `assign` = `consecutive` (default) or `interleave`, `probe` = `reno` (default) or `cubic` |
//! | `multfrc` | MulTFRC(n), [`crate::multfrc`] | `n` in (0, [`MAX_WEIGHT`]] (default 1), `b` in [1, 2] (1), `t_mbi` seconds in [1, 3600] (10) |
//! | `mulcubic` | MulCUBIC(N), [`crate::mulcubic`] | `n` in [0.01, [`MAX_WEIGHT`]] (default 1) |
//! | `ctcp` | Compound TCP, [`crate::ctcp`] | `alpha` in (0, 1] (1/8), `beta` in (0, 0.5] (1/2), `k` in [0, 1) (0.75), `gamma` packets in (0, 10000] (30), `zeta` in (0, 10] (1) |
//! | `mcompound` | MCompound subflow, [`crate::mcompound`] | `group` ID (required; subflows with the same ID share a group), and the keys of `ctcp` |

use std::fmt;
use std::str::FromStr;

use crate::controller::Controller;
use crate::controller::Params;
use crate::ctcp::Compound;
use crate::ctcp::CtcpConfig;
use crate::cubic::Cubic;
use crate::mcompound::McompoundConfig;
use crate::mulcubic::MulCubic;
use crate::mulcubic::MulCubicConfig;
use crate::multcp::MulTcp;
use crate::multcp::MulTcpConfig;
use crate::multfrc::MulTfrc;
use crate::multfrc::MulTfrcConfig;
use crate::pa_multcp::PaMulTcp;
use crate::pa_multcp::PaMulTcpConfig;
use crate::reno;

/// The largest number of flowshares any weighted controller accepts.
///
/// Above this the window arithmetic of the AIMD controllers loses meaning
/// (MulTCP's decrease factor 1/2N drops below 0.2%, and its rapid slow start
/// would run to windows of 10^7 packets).
pub const MAX_WEIGHT: f64 = 256.0;

/// The algorithm names the spec language knows.
pub const ALGORITHMS: &[&str] = &["reno", "cubic", "multcp", "ctcp", "mcompound", "pa-multcp", "mulcubic", "multfrc"];

/// A parsed, validated controller spec.
#[derive(Clone, Debug, PartialEq)]
pub enum Spec {
    /// RFC 9002 NewReno. In quiche this selects quiche's built-in Reno.
    Reno,
    /// CUBIC (RFC 9438). In quiche this selects quiche's built-in CUBIC.
    Cubic,
    /// MulTCP(N).
    MulTcp(MulTcpConfig),
    /// Compound TCP.
    Ctcp(CtcpConfig),
    /// A subflow of an MCompound group.
    Mcompound(McompoundConfig),
    /// PA-MulTCP(N).
    PaMulTcp(PaMulTcpConfig),
    /// MulCUBIC(N).
    MulCubic(MulCubicConfig),
    /// MulTFRC(n).
    MulTfrc(MulTfrcConfig),
}

impl Spec {
    /// The algorithm name, as written in specs.
    pub fn algorithm(&self) -> &'static str {
        match self {
            Spec::Reno => "reno",
            Spec::Cubic => "cubic",
            Spec::MulTcp(_) => "multcp",
            Spec::Ctcp(_) => "ctcp",
            Spec::Mcompound(_) => "mcompound",
            Spec::PaMulTcp(_) => "pa-multcp",
            Spec::MulCubic(_) => "mulcubic",
            Spec::MulTfrc(_) => "multfrc",
        }
    }

    /// Whether quiche implements this algorithm itself (`reno`, `cubic`).
    pub fn is_quiche_builtin(&self) -> bool {
        matches!(self, Spec::Reno | Spec::Cubic)
    }

    /// The number of flowshares the spec asks for; 1 for standard algorithms.
    pub fn weight(&self) -> f64 {
        match self {
            Spec::Reno | Spec::Cubic => 1.0,
            Spec::MulTcp(config) => config.n,
            // An MCompound group as a whole takes one flowshare.
            Spec::Ctcp(_) | Spec::Mcompound(_) => 1.0,
            Spec::PaMulTcp(config) => config.n,
            Spec::MulCubic(config) => config.n,
            Spec::MulTfrc(config) => config.n,
        }
    }

    /// Builds a controller. `reno` and `cubic` build the reference
    /// implementations of this crate, for hosts that have no built-in ones
    /// (the lab simulator).
    pub fn build(&self, params: &Params) -> Box<dyn Controller> {
        match self {
            Spec::Reno => Box::new(reno::new(params)),
            Spec::Cubic => Box::new(Cubic::new(params)),
            Spec::MulTcp(config) => Box::new(MulTcp::new(config.clone(), params)),
            Spec::Ctcp(config) => Box::new(Compound::new(config.clone(), params)),
            Spec::Mcompound(config) => Box::new(config.build(params)),
            Spec::PaMulTcp(config) => Box::new(PaMulTcp::new(config.clone(), params)),
            Spec::MulCubic(config) => Box::new(MulCubic::new(config.clone(), params)),
            Spec::MulTfrc(config) => Box::new(MulTfrc::new(config.clone(), params)),
        }
    }
}

impl FromStr for Spec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Spec, SpecError> {
        let parse = || {
            let mut args = Args::parse(text)?;
            let spec = match args.algorithm {
                "reno" => Spec::Reno,
                "cubic" => Spec::Cubic,
                "multcp" => Spec::MulTcp(MulTcpConfig::from_args(&mut args)?),
                "ctcp" => Spec::Ctcp(CtcpConfig::from_args(&mut args)?),
                "mcompound" => Spec::Mcompound(McompoundConfig::from_args(&mut args)?),
                "pa-multcp" => Spec::PaMulTcp(PaMulTcpConfig::from_args(&mut args)?),
                "mulcubic" => Spec::MulCubic(MulCubicConfig::from_args(&mut args)?),
                "multfrc" => Spec::MulTfrc(MulTfrcConfig::from_args(&mut args)?),
                other => {
                    return Err(SpecError::new(
                        other,
                        "name",
                        format!("is not a known algorithm (accepted: {})", ALGORITHMS.join(", ")),
                    ))
                }
            };
            args.finish()?;
            Ok(spec)
        };
        parse().map_err(|e: SpecError| e.in_spec(text))
    }
}

impl fmt::Display for Spec {
    /// The canonical spec: parsing it gives back an equal [`Spec`].
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Spec::Reno | Spec::Cubic => f.write_str(self.algorithm()),
            Spec::MulTcp(config) => write!(f, "{config}"),
            Spec::Ctcp(config) => write!(f, "{config}"),
            Spec::Mcompound(config) => write!(f, "{config}"),
            Spec::PaMulTcp(config) => write!(f, "{config}"),
            Spec::MulCubic(config) => write!(f, "{config}"),
            Spec::MulTfrc(config) => write!(f, "{config}"),
        }
    }
}

/// Why a spec (or a parameter change) was rejected: the field, what was
/// wrong, and the accepted range.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecError {
    spec: Option<String>,
    algorithm: String,
    field: String,
    reason: String,
}

impl SpecError {
    /// An error about `field` of `algorithm`.
    pub fn new(algorithm: &str, field: &str, reason: impl Into<String>) -> Self {
        SpecError {
            spec: None,
            algorithm: algorithm.to_string(),
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    /// The error for changing a parameter the algorithm does not have.
    pub fn not_settable(algorithm: &str, field: &str) -> Self {
        SpecError::new(algorithm, field, "cannot be changed for this algorithm")
    }

    /// Attaches the spec text the error was found in.
    pub fn in_spec(mut self, spec: &str) -> Self {
        self.spec = Some(spec.to_string());
        self
    }

    /// The field that was rejected (`name` for the algorithm name).
    pub fn field(&self) -> &str {
        &self.field
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if let Some(spec) = &self.spec {
            write!(f, "invalid controller spec {spec:?}: ")?;
        }
        if self.field == "name" {
            write!(f, "algorithm {:?} {}", self.algorithm, self.reason)
        } else {
            write!(f, "{}: {} {}", self.algorithm, self.field, self.reason)
        }
    }
}

impl std::error::Error for SpecError {}

/// An interval of accepted values, printed in interval notation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Range {
    pub(crate) min: f64,
    pub(crate) min_inclusive: bool,
    pub(crate) max: f64,
    pub(crate) max_inclusive: bool,
}

impl Range {
    /// (min, max]
    pub(crate) const fn above_up_to(min: f64, max: f64) -> Range {
        Range { min, min_inclusive: false, max, max_inclusive: true }
    }

    /// (min, max)
    pub(crate) const fn open(min: f64, max: f64) -> Range {
        Range { min, min_inclusive: false, max, max_inclusive: false }
    }

    /// The accepted number of flowshares.
    pub(crate) const WEIGHT: Range = Range::above_up_to(0.0, MAX_WEIGHT);

    pub(crate) fn contains(&self, value: f64) -> bool {
        let above = if self.min_inclusive { value >= self.min } else { value > self.min };
        let below = if self.max_inclusive { value <= self.max } else { value < self.max };
        above && below
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let open = if self.min_inclusive { '[' } else { '(' };
        let close = if self.max_inclusive { ']' } else { ')' };
        write!(f, "{open}{}, {}{close}", self.min, self.max)
    }
}

/// The `key=value` pairs of a spec, consumed by the algorithm's config
/// parser. Keys that no parser asked for are reported by [`Args::finish`].
pub(crate) struct Args<'a> {
    pub(crate) algorithm: &'a str,
    pairs: Vec<(&'a str, &'a str, bool)>,
    accepted: Vec<&'static str>,
}

impl<'a> Args<'a> {
    fn parse(text: &'a str) -> Result<Args<'a>, SpecError> {
        let (algorithm, rest) = match text.split_once(':') {
            Some((algorithm, rest)) => (algorithm.trim(), Some(rest)),
            None => (text.trim(), None),
        };
        if algorithm.is_empty() {
            return Err(SpecError::new("", "name", "is missing (a spec looks like multcp:n=4)"));
        }
        let mut pairs: Vec<(&str, &str, bool)> = Vec::new();
        for pair in rest.into_iter().flat_map(|rest| rest.split(',')) {
            let (key, value) = pair.split_once('=').ok_or_else(|| {
                SpecError::new(algorithm, pair.trim(), "has no value (write key=value)")
            })?;
            let (key, value) = (key.trim(), value.trim());
            if key.is_empty() {
                return Err(SpecError::new(algorithm, "key", format!("is empty in {pair:?}")));
            }
            if pairs.iter().any(|(seen, _, _)| *seen == key) {
                return Err(SpecError::new(algorithm, key, "is given more than once"));
            }
            pairs.push((key, value, false));
        }
        Ok(Args { algorithm, pairs, accepted: Vec::new() })
    }

    /// The raw text of `key`, if present, marking it as understood.
    pub(crate) fn text(&mut self, key: &'static str) -> Option<&'a str> {
        self.accepted.push(key);
        self.pairs.iter_mut().find(|(k, _, _)| *k == key).map(|(_, value, used)| {
            *used = true;
            *value
        })
    }

    /// A real number in `range`, if present.
    pub(crate) fn real(&mut self, key: &'static str, range: Range) -> Result<Option<f64>, SpecError> {
        let Some(text) = self.text(key) else { return Ok(None) };
        let value: f64 = text.parse().map_err(|_| {
            SpecError::new(self.algorithm, key, format!("= {text:?} is not a number; accepted range {range}"))
        })?;
        if !range.contains(value) {
            return Err(SpecError::new(self.algorithm, key, format!("= {text} is out of range; accepted range {range}")));
        }
        Ok(Some(value))
    }

    /// The weight `n`, 1 when absent.
    pub(crate) fn weight(&mut self) -> Result<f64, SpecError> {
        Ok(self.real("n", Range::WEIGHT)?.unwrap_or(1.0))
    }

    /// Fails on keys that no parser asked for.
    fn finish(self) -> Result<(), SpecError> {
        match self.pairs.iter().find(|(_, _, used)| !used) {
            None => Ok(()),
            Some((key, _, _)) => {
                let accepted = if self.accepted.is_empty() {
                    "none".to_string()
                } else {
                    self.accepted.join(", ")
                };
                Err(SpecError::new(self.algorithm, key, format!("is not a known key (accepted: {accepted})")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        text.parse::<Spec>().unwrap_err().to_string()
    }

    #[test]
    fn builtin_names_parse_without_parameters() {
        assert_eq!("reno".parse::<Spec>(), Ok(Spec::Reno));
        assert_eq!("cubic".parse::<Spec>(), Ok(Spec::Cubic));
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
        assert!(error("multcp:m=4").contains("m is not a known key (accepted: n, a, b)"));
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
        for text in ["reno", "cubic", "multcp:n=4", "multcp:n=0.5", "multcp:n=4,a=2", "multcp:n=3,b=0.1"] {
            let spec: Spec = text.parse().unwrap();
            let again: Spec = spec.to_string().parse().unwrap();
            assert_eq!(spec, again, "{text} -> {spec}");
        }
    }

    #[test]
    fn whitespace_around_names_keys_and_values_is_ignored() {
        assert_eq!("multcp: n = 4 ".parse::<Spec>(), "multcp:n=4".parse::<Spec>());
    }
}
