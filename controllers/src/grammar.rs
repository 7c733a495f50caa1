//! The grammar every algorithm's parameters are written in, and its errors.
//!
//! A spec is `name[:key=value[,key=value]...]`, e.g. `multcp:n=4`. This
//! module splits the text into the name and its `key=value` pairs
//! ([`Args`]), checks numbers against their accepted intervals ([`Range`])
//! and reports what is wrong in one line ([`SpecError`]). It knows no
//! algorithm: each algorithm's config reads its own keys from [`Args`], and
//! [`crate::registry`] maps names to algorithms.

use std::fmt;

/// The largest number of flowshares any weighted controller accepts.
///
/// Above this the window arithmetic of the AIMD controllers loses meaning
/// (MulTCP's decrease factor 1/2N drops below 0.2%, and its rapid slow start
/// would run to windows of 10^7 packets).
pub const MAX_WEIGHT: f64 = 256.0;

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
        SpecError { spec: None, algorithm: algorithm.to_string(), field: field.to_string(), reason: reason.into() }
    }

    /// The error for changing a parameter the algorithm does not have.
    pub fn not_settable(algorithm: &str, field: &str) -> Self {
        SpecError::new(algorithm, field, "cannot be changed for this algorithm")
    }

    /// The error for a value outside its accepted interval.
    pub fn out_of_range(algorithm: &str, field: &str, value: f64, range: Range) -> Self {
        SpecError::new(algorithm, field, format!("= {value} is out of range; accepted range {range}"))
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
    /// One line: what came from the user is escaped, so that a control
    /// character in a spec cannot break the line (or a terminal).
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if let Some(spec) = &self.spec {
            write!(f, "invalid controller spec {spec:?}: ")?;
        }
        if self.field == "name" {
            write!(f, "algorithm {:?} {}", self.algorithm, Printable(&self.reason))
        } else {
            write!(f, "{}: {} {}", Printable(&self.algorithm), Printable(&self.field), Printable(&self.reason))
        }
    }
}

/// Text with its control characters escaped (`\n`, `\u{1b}`).
struct Printable<'a>(&'a str);

impl fmt::Display for Printable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for SpecError {}

/// An interval of accepted values, printed in interval notation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// Lower end.
    pub min: f64,
    /// Whether the lower end is accepted.
    pub min_inclusive: bool,
    /// Upper end.
    pub max: f64,
    /// Whether the upper end is accepted.
    pub max_inclusive: bool,
}

impl Range {
    /// `(min, max]`
    pub const fn above_up_to(min: f64, max: f64) -> Range {
        Range { min, min_inclusive: false, max, max_inclusive: true }
    }

    /// `(min, max)`
    pub const fn open(min: f64, max: f64) -> Range {
        Range { min, min_inclusive: false, max, max_inclusive: false }
    }

    /// `[min, max]`
    pub const fn closed(min: f64, max: f64) -> Range {
        Range { min, min_inclusive: true, max, max_inclusive: true }
    }

    /// `[min, max)`
    pub const fn from_up_to(min: f64, max: f64) -> Range {
        Range { min, min_inclusive: true, max, max_inclusive: false }
    }

    /// The accepted number of flowshares: `(0, MAX_WEIGHT]`.
    pub const WEIGHT: Range = Range::above_up_to(0.0, MAX_WEIGHT);

    /// Whether `value` lies in the interval (never for NaN).
    pub fn contains(&self, value: f64) -> bool {
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

/// The name of `value` among `choices` (what [`Args::choice`] accepts), for
/// writing a spec back; empty if it is not there.
pub fn choice_name<T: PartialEq>(choices: &[(&'static str, T)], value: T) -> &'static str {
    choices.iter().find(|(_, choice)| *choice == value).map_or("", |(name, _)| name)
}

/// The `key=value` pairs of a spec, consumed by the algorithm's config
/// parser. Keys that no parser asked for are reported by [`Args::finish`].
pub struct Args<'a> {
    algorithm: &'a str,
    pairs: Vec<(&'a str, &'a str, bool)>,
    accepted: Vec<&'static str>,
}

impl<'a> Args<'a> {
    /// Splits `text` into the algorithm name and its pairs.
    pub fn parse(text: &'a str) -> Result<Args<'a>, SpecError> {
        let (algorithm, rest) = match text.split_once(':') {
            Some((algorithm, rest)) => (algorithm.trim(), Some(rest)),
            None => (text.trim(), None),
        };
        if algorithm.is_empty() {
            return Err(SpecError::new("", "name", "is missing (a spec looks like multcp:n=4)"));
        }
        let mut pairs: Vec<(&str, &str, bool)> = Vec::new();
        for pair in rest.into_iter().flat_map(|rest| rest.split(',')) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| SpecError::new(algorithm, pair.trim(), "has no value (write key=value)"))?;
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

    /// The algorithm name.
    pub fn algorithm(&self) -> &'a str {
        self.algorithm
    }

    /// The raw text of `key`, if present, marking it as understood.
    pub fn text(&mut self, key: &'static str) -> Option<&'a str> {
        self.accepted.push(key);
        self.pairs.iter_mut().find(|(k, _, _)| *k == key).map(|(_, value, used)| {
            *used = true;
            *value
        })
    }

    /// One of `choices` for `key`, if present.
    pub fn choice<T: Copy>(&mut self, key: &'static str, choices: &[(&str, T)]) -> Result<Option<T>, SpecError> {
        let Some(text) = self.text(key) else { return Ok(None) };
        match choices.iter().find(|(name, _)| *name == text) {
            Some(&(_, value)) => Ok(Some(value)),
            None => {
                let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
                Err(SpecError::new(
                    self.algorithm,
                    key,
                    format!("= {text:?} is not accepted (accepted: {})", names.join(", ")),
                ))
            }
        }
    }

    /// A real number in `range`, if present.
    pub fn real(&mut self, key: &'static str, range: Range) -> Result<Option<f64>, SpecError> {
        let Some(text) = self.text(key) else { return Ok(None) };
        let value: f64 = text.parse().map_err(|_| {
            SpecError::new(self.algorithm, key, format!("= {text:?} is not a number; accepted range {range}"))
        })?;
        if !range.contains(value) {
            return Err(SpecError::new(
                self.algorithm,
                key,
                format!("= {text} is out of range; accepted range {range}"),
            ));
        }
        Ok(Some(value))
    }

    /// The weight `n` in `range`, 1 when absent.
    pub fn weight(&mut self, range: Range) -> Result<f64, SpecError> {
        Ok(self.real("n", range)?.unwrap_or(1.0))
    }

    /// Fails on keys that no parser asked for.
    pub fn finish(self) -> Result<(), SpecError> {
        match self.pairs.iter().find(|(_, _, used)| !used) {
            None => Ok(()),
            Some((key, _, _)) => {
                let accepted = if self.accepted.is_empty() { "none".to_string() } else { self.accepted.join(", ") };
                Err(SpecError::new(self.algorithm, key, format!("is not a known key (accepted: {accepted})")))
            }
        }
    }
}

/// Specs from a list where commas (or spaces) separate specs and also a
/// spec's own keys: a piece with `=` but no `:` continues the spec before
/// it, so `multfrc:b=2,t_mbi=1,multcp` is two specs.
pub fn split_spec_list(list: &str) -> Vec<String> {
    let mut specs: Vec<String> = Vec::new();
    for piece in list.split([',', ' ']).map(str::trim).filter(|piece| !piece.is_empty()) {
        match specs.last_mut() {
            Some(last) if piece.contains('=') && !piece.contains(':') => {
                last.push(',');
                last.push_str(piece);
            }
            _ => specs.push(piece.to_string()),
        }
    }
    specs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_lists_keep_a_spec_s_own_keys() {
        assert_eq!(split_spec_list("cubic,multcp:n=2,multfrc:n=0.5"), ["cubic", "multcp:n=2", "multfrc:n=0.5"]);
        assert_eq!(split_spec_list("multcp:n=2,a=1 reno"), ["multcp:n=2,a=1", "reno"]);
        assert_eq!(split_spec_list("multfrc:pacing=flows,t_rto=2,multcp,"), ["multfrc:pacing=flows,t_rto=2", "multcp"]);
    }

    #[test]
    fn ranges_print_in_interval_notation_and_refuse_nan() {
        assert_eq!(Range::WEIGHT.to_string(), "(0, 256]");
        assert_eq!(Range::closed(1.0, 2.0).to_string(), "[1, 2]");
        assert_eq!(Range::from_up_to(0.0, 1.0).to_string(), "[0, 1)");
        assert!(!Range::WEIGHT.contains(f64::NAN));
        assert!(!Range::WEIGHT.contains(0.0) && Range::WEIGHT.contains(MAX_WEIGHT));
    }

    #[test]
    fn pairs_are_split_trimmed_and_checked_once() {
        let mut args = Args::parse(" multcp : n = 4 , a=2").unwrap();
        assert_eq!(args.algorithm(), "multcp");
        assert_eq!(args.real("n", Range::WEIGHT), Ok(Some(4.0)));
        assert_eq!(args.text("a"), Some("2"));
        assert_eq!(args.finish(), Ok(()));
        let mut args = Args::parse("x:k=1,z=2").unwrap();
        args.text("k");
        assert_eq!(args.finish().unwrap_err().to_string(), "x: z is not a known key (accepted: k)");
    }

    #[test]
    fn control_characters_in_a_spec_stay_on_one_line() {
        let error = Args::parse("x:a\nb=1").map(|args| args.finish()).unwrap().unwrap_err();
        assert_eq!(error.to_string(), "x: a\\nb is not a known key (accepted: none)");
        let error = Args::parse("\u{1b}[2J:k").err().unwrap();
        assert!(!error.to_string().contains('\u{1b}'), "{error}");
    }

    #[test]
    fn choices_name_what_is_accepted() {
        let mut args = Args::parse("pa-multcp:probe=bbr").unwrap();
        let error = args.choice("probe", &[("reno", 1), ("cubic", 2)]).unwrap_err();
        assert_eq!(error.to_string(), "pa-multcp: probe = \"bbr\" is not accepted (accepted: reno, cubic)");
    }
}
