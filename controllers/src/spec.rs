//! A parsed controller spec and what hosts may ask of an algorithm.
//!
//! A [`Spec`] is an algorithm ([`Algorithm`], a registry entry) with its
//! validated parameters ([`AlgorithmConfig`], the algorithm's own config
//! type). Parsing (`"multcp:n=4".parse::<Spec>()`) goes through
//! [`crate::registry`], the one place that names every algorithm; every
//! other part of flowshare asks a spec or its [`Algorithm`] what it
//! supports instead of naming algorithms. The spec language and its errors
//! are in [`crate::grammar`]; the table of algorithms and their keys is in
//! [`crate::registry`].

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::controller::Controller;
use crate::controller::Params;
use crate::grammar::Args;
use crate::grammar::Range;
use crate::grammar::SpecError;

/// How a controller's decisions reach the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// A congestion window; pacing only spreads it over the RTT.
    Window,
    /// A paced rate; the window is only a safety bound, so the host must
    /// honour the pacing rate.
    Rate,
}

/// The standard algorithms that QUIC stacks and the Linux kernel implement
/// themselves: a host with its own implementation runs that one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standard {
    /// NewReno (RFC 9002).
    Reno,
    /// CUBIC (RFC 9438).
    Cubic,
    /// BBR as the host has it: quiche's BBRv2 (its gcongestion BBR2),
    /// Linux's BBR. flowshare has no implementation of its own, so only
    /// hosts with one run it (not the lab).
    Bbr,
}

impl Standard {
    /// Whether a flowshare is this algorithm's share: the weighted
    /// controllers take N flowshares of a loss-based flow, Reno's or
    /// CUBIC's, so those are the peers the scorecards judge a weight
    /// against. BBR is measured beside them as a peer a server also meets,
    /// not yet as a unit.
    pub fn defines_flowshare(self) -> bool {
        matches!(self, Standard::Reno | Standard::Cubic)
    }
}

/// One algorithm of the spec language and what it supports: a registry
/// entry ([`crate::registry::ALGORITHMS`]).
pub struct Algorithm {
    /// The name in specs.
    pub name: &'static str,
    /// One line: what it is and where it comes from.
    pub summary: &'static str,
    /// The weights `n` it accepts; `None` for unweighted algorithms, which
    /// take one flowshare.
    pub weights: Option<Range>,
    /// Whether its weight can change while a connection runs
    /// ([`Controller::set_weight`]).
    pub reweightable: bool,
    /// Window- or rate-based.
    pub delivery: Delivery,
    /// The standard algorithm it is, if any: hosts with their own run that.
    pub standard: Option<Standard>,
    /// Whether the subflows of one connection share a coupling group
    /// (MCompound): a multipath host builds them with
    /// [`crate::mcompound::McompoundGroup::build`].
    pub grouped: bool,
    /// A spec with non-default keys, driven by the shared property tests.
    pub example: &'static str,
    /// Where the default departs from the algorithm's paper: the keys that
    /// restore the paper's behaviour, as the lab's reproductions run it.
    pub paper: Option<&'static str>,
    /// Reads the algorithm's keys.
    pub(crate) parse: fn(&mut Args) -> Result<Arc<dyn AlgorithmConfig>, SpecError>,
}

impl Algorithm {
    /// Whether it takes a weight.
    pub fn is_weighted(&self) -> bool {
        self.weights.is_some()
    }
}

impl fmt::Debug for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// The validated parameters of one algorithm: what its module implements
/// so that a [`Spec`] can carry it.
pub trait AlgorithmConfig: fmt::Debug + fmt::Display + Send + Sync + Any {
    /// Reads the algorithm's keys from a spec; the registry checks that
    /// none is left over.
    fn from_args(args: &mut Args) -> Result<Self, SpecError>
    where
        Self: Sized;

    /// The number of flowshares; 1 for unweighted algorithms.
    fn weight(&self) -> f64 {
        1.0
    }

    /// The same parameters for weight `n`; unweighted algorithms refuse.
    fn reweighted(&self, n: f64) -> Result<Arc<dyn AlgorithmConfig>, SpecError> {
        let _ = n;
        Err(SpecError::not_settable(&self.to_string(), "n"))
    }

    /// A controller with these parameters; `None` for a standard algorithm
    /// that only hosts implement ([`Standard::Bbr`]).
    fn build(&self, params: &Params) -> Option<Box<dyn Controller>>;
}

/// A parsed, validated controller spec.
#[derive(Clone)]
pub struct Spec {
    algorithm: &'static Algorithm,
    config: Arc<dyn AlgorithmConfig>,
}

impl Spec {
    /// A spec of `algorithm` with `config`, which must be that algorithm's.
    pub(crate) fn new(algorithm: &'static Algorithm, config: Arc<dyn AlgorithmConfig>) -> Self {
        Spec { algorithm, config }
    }

    /// The algorithm and what it supports.
    pub fn algorithm(&self) -> &'static Algorithm {
        self.algorithm
    }

    /// The algorithm name, as written in specs.
    pub fn name(&self) -> &'static str {
        self.algorithm.name
    }

    /// The standard algorithm this spec is, if any (`reno`, `cubic`): in
    /// quiche these select quiche's own implementations.
    pub fn standard(&self) -> Option<Standard> {
        self.algorithm.standard
    }

    /// The number of flowshares the spec asks for; 1 for unweighted ones.
    pub fn weight(&self) -> f64 {
        self.config.weight()
    }

    /// The same spec with weight `n`, every other choice kept.
    pub fn reweighted(&self, n: f64) -> Result<Spec, SpecError> {
        if !self.algorithm.is_weighted() {
            return Err(SpecError::not_settable(self.name(), "n"));
        }
        Ok(Spec { algorithm: self.algorithm, config: self.config.reweighted(n)? })
    }

    /// The algorithm's own config type, e.g.
    /// `spec.config::<MulTcpConfig>()`; `None` for another algorithm's spec.
    pub fn config<T: AlgorithmConfig>(&self) -> Option<&T> {
        let config: &dyn Any = self.config.as_ref();
        config.downcast_ref()
    }

    /// Builds a controller. `reno` and `cubic` build the reference
    /// implementations of this crate, for hosts that have no built-in ones
    /// (the lab simulator); `bbr` has none, and only hosts that run their
    /// own (quiche, Linux) can use it.
    pub fn build(&self, params: &Params) -> Result<Box<dyn Controller>, SpecError> {
        self.config.build(params).ok_or_else(|| {
            SpecError::new(
                self.name(),
                "name",
                "runs only as a host's own (quiche's BBRv2, Linux's BBR): flowshare has no implementation of it, so the lab cannot run it".to_string(),
            )
        })
    }

    /// Whether flowshare implements the algorithm itself, so that a host
    /// without its own (the lab) can run it ([`Spec::build`]): every
    /// algorithm but `bbr`.
    pub fn has_implementation(&self) -> bool {
        self.algorithm.standard != Some(Standard::Bbr)
    }
}

impl fmt::Display for Spec {
    /// The canonical spec: parsing it gives back an equal [`Spec`].
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        fmt::Display::fmt(&self.config, f)
    }
}

impl fmt::Debug for Spec {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Spec({self})")
    }
}

impl PartialEq for Spec {
    /// Specs are equal when their canonical forms are: every config prints
    /// every parameter that differs from its default, and floats print
    /// exactly (Rust's shortest round-trip form).
    fn eq(&self, other: &Spec) -> bool {
        self.name() == other.name() && self.to_string() == other.to_string()
    }
}
