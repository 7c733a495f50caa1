//! Reading a policy file: the TOML as written, with the position of every
//! value, checked into a [`Policy`]. The keys are documented on
//! [`crate::policy`].

use std::ops::Range;

use flowshare_controllers::grammar::MAX_WEIGHT;
use flowshare_controllers::Spec;
use serde::Deserialize;
use toml::Spanned;

use super::check_weight_cap;
use super::condition::Prefix;
use super::condition::RequestCondition;
use super::condition::SniPattern;
use super::reweightable_names;
use super::weight_can_change;
use super::Assignment;
use super::Overrides;
use super::Policy;
use super::PolicyError;
use super::Rule;
use super::Upgrade;
use super::WeightMode;
use super::DEFAULT_BULK_MIN_BYTES;
use super::WEIGHT_HEADER;

impl Policy {
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
            None => Assignment::quiche_default(),
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
