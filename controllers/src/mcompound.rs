//! MCompound (`mcompound:group=ID`): Compound TCP subflows coupled so that a
//! group takes one Compound TCP flow's share at a shared bottleneck and
//! moves its traffic to the less congested paths.
//!
//! Paper 003 section III-B and its Algorithm 1. Every subflow runs the
//! Compound TCP rules of [`crate::ctcp`] on its own path, with its growth
//! scaled by its share of the group's rate:
//!
//! * `rate_r = 7/8 · rate_r + 1/8 · W_r / RTT_r` once per round trip
//!   (Algorithm 1), with `W_r` the subflow's total window and `RTT_r` its
//!   smoothed RTT; the first round sets `rate_r = W_r / RTT_r` (starting
//!   from 0, a subflow that joins a running group would see its rate
//!   understated by the factor `1 - (7/8)^n` for its first `n` rounds);
//! * `share_r = rate_r / Σ rate`;
//! * `θ1 = share^(2-k)` scales the delay window's growth: eq. (13), which
//!   makes the phase 1 rates of eq. (8) add up to one Compound TCP flow's
//!   eq. (6) on paths of equal RTT;
//! * `θ2 = share²` scales the loss window's growth: eq. (15), the same for
//!   the standard TCP part (phase 3), whose rate grows as the square root of
//!   its increase;
//! * `θ3 = share` scales γ: a subflow carrying a fraction of the group's
//!   traffic tolerates that fraction of the backlog (Algorithm 1).
//!
//! Loss and back-off are those of Compound TCP ("the decrease phase remains
//! untouched"). A group with one member has share 1, so all θ are 1 and the
//! subflow is exactly `ctcp`. Slow start is not coupled, as in MPTCP's
//! coupled congestion control (RFC 6356): paper 003 couples only the
//! increase rules.
//!
//! # Reading of Algorithm 1
//!
//! The printed pseudo-code grows the delay window by `α · W^k · θ1` per RTT
//! with no `- θ2`, unlike Compound TCP's `(α · win^k - 1)⁺`, whose `- 1`
//! makes up for the loss window's own packet per RTT. Eq. (7) states the
//! growth of the total window, `α · w^k · θ1` per RTT, so the delay window
//! here grows `(α · W^k · θ1 - θ2)⁺`: the total follows eq. (7), and one
//! member is exactly `ctcp`.
//!
//! # Groups
//!
//! Subflows of one group share a [`McompoundGroup`]: a mutex over the
//! members' smoothed rates, taken twice per round trip by each subflow (to
//! publish its rate, and at its next congestion event to read its share),
//! never per packet. A subflow leaves its group when its controller is
//! dropped, and may join at any time. There are two ways to form a group:
//!
//! * **In a spec**: `mcompound:group=ID` joins the process-wide group named
//!   `ID`, created when its first member is built and gone when its last
//!   member is dropped (or the last handle a host kept on it). Every controller built from a spec with the same ID
//!   in this process shares it, so a server policy can put connections
//!   together by name, e.g. one ID per client, with no other plumbing.
//! * **In the API**: a host makes a group with [`McompoundGroup::new`] (or
//!   looks up a named one with [`McompoundGroup::named`]) and builds the
//!   subflows' controllers in it with [`McompoundGroup::join`] or
//!   [`McompoundGroup::build`], typically from the controller factory of
//!   each connection of a multipath transfer.
//!
//! ```
//! use flowshare_controllers::mcompound::McompoundGroup;
//! use flowshare_controllers::{Controller, Params, Spec};
//!
//! // A spec: both controllers join the process-wide group "client-7".
//! let spec: Spec = "mcompound:group=client-7".parse().unwrap();
//! let first = spec.build(&Params::default()).unwrap();
//! let second = spec.build(&Params::default()).unwrap();
//! assert_eq!(McompoundGroup::named("client-7").unwrap().members(), 2);
//!
//! // The API: the host's own group, one controller per connection.
//! let group = McompoundGroup::new();
//! let spec: Spec = "ctcp:gamma=20".parse().unwrap();
//! let controllers: Vec<Box<dyn Controller>> =
//!     (0..2).map(|_| group.build(&spec, &Params::default()).unwrap()).collect();
//! assert_eq!(group.members(), 2);
//! drop(controllers);
//! assert_eq!(group.members(), 0);
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::LazyLock;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;
use std::sync::Weak;
use std::time::Duration;

use crate::controller::Controller;
use crate::controller::Params;
use crate::ctcp::Compound;
use crate::ctcp::Coupling;
use crate::ctcp::CtcpConfig;
use crate::ctcp::Thetas;
use crate::grammar::Args;
use crate::grammar::SpecError;
use crate::spec::AlgorithmConfig;
use crate::spec::Spec;

/// Weight of the newest sample in the smoothed rate: 1/8 (Algorithm 1).
const RATE_GAIN: f64 = 0.125;

/// Longest group ID.
const MAX_GROUP_ID_LEN: usize = 64;

impl Thetas {
    /// The factors for a subflow carrying `share` of its group's rate
    /// (Algorithm 1's `Calc_theta`): θ1 = share^(2-k), θ2 = share²,
    /// θ3 = share.
    pub fn for_share(share: f64, k: f64) -> Thetas {
        Thetas { theta1: share.powf(2.0 - k), theta2: share * share, theta3: share }
    }
}

/// The parameters of an MCompound subflow: Compound TCP's and the group.
#[derive(Clone, Debug, PartialEq)]
pub struct McompoundConfig {
    group: String,
    ctcp: CtcpConfig,
}

impl McompoundConfig {
    /// Subflows of the process-wide group `group` with Compound TCP's
    /// parameters `ctcp`.
    pub fn new(group: &str, ctcp: CtcpConfig) -> Result<Self, SpecError> {
        check_group_id(group)?;
        Ok(McompoundConfig { group: group.to_string(), ctcp })
    }

    /// The group ID.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// Compound TCP's parameters.
    pub fn ctcp(&self) -> &CtcpConfig {
        &self.ctcp
    }

    /// A subflow in the process-wide group of this config.
    pub fn subflow(&self, params: &Params) -> Compound {
        McompoundGroup::registered(&self.group).join(self.ctcp.clone(), params)
    }
}

impl AlgorithmConfig for McompoundConfig {
    /// Parses `group` (required) and Compound TCP's keys.
    fn from_args(args: &mut Args) -> Result<Self, SpecError> {
        let Some(group) = args.text("group") else {
            return Err(SpecError::new(
                "mcompound",
                "group",
                "is required: the subflows of one transfer share a group, e.g. mcompound:group=client-7",
            ));
        };
        let ctcp = CtcpConfig::from_args(args)?;
        McompoundConfig::new(group, ctcp)
    }

    fn build(&self, params: &Params) -> Option<Box<dyn Controller>> {
        Some(Box::new(self.subflow(params)))
    }
}

impl fmt::Display for McompoundConfig {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "mcompound:group={}", self.group)?;
        self.ctcp.write_keys(f, ',')
    }
}

/// Group IDs are written into specs, so they avoid the spec language's
/// separators.
fn check_group_id(id: &str) -> Result<(), SpecError> {
    let valid_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if !id.is_empty() && id.len() <= MAX_GROUP_ID_LEN && id.chars().all(valid_char) {
        Ok(())
    } else {
        Err(SpecError::new(
            "mcompound",
            "group",
            format!(
                "= {id:?} is not a group ID; accepted: 1 to {MAX_GROUP_ID_LEN} ASCII letters, digits, '-', '_' or '.'"
            ),
        ))
    }
}

/// A handle on an MCompound group; clones refer to the same group.
#[derive(Clone)]
pub struct McompoundGroup {
    inner: Arc<Group>,
}

/// The shared state of a group.
#[derive(Debug)]
struct Group {
    /// The ID of a process-wide group; `None` for a host's own group.
    id: Option<String>,
    /// The members' smoothed rates.
    members: Mutex<Members>,
}

/// The smoothed rates of a group's members.
#[derive(Debug, Default)]
struct Members {
    /// The number the next member gets.
    next_member: u64,
    /// Member number and smoothed rate in bytes per second (0 until the
    /// member's first round ends).
    rates: Vec<(u64, f64)>,
}

/// The process-wide groups by ID. Entries are weak: a group lives as long as
/// its members (and any handle a host keeps).
static REGISTRY: LazyLock<Mutex<HashMap<String, Weak<Group>>>> = LazyLock::new(Mutex::default);

/// The guarded values are plain numbers that every update leaves
/// consistent, so a panic elsewhere while holding a lock poisons nothing.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl McompoundGroup {
    /// A new group of the host's own, not reachable by ID.
    pub fn new() -> Self {
        McompoundGroup { inner: Arc::new(Group { id: None, members: Mutex::default() }) }
    }

    /// The process-wide group `id`, the one `mcompound:group=ID` specs join;
    /// created if it has no members yet.
    pub fn named(id: &str) -> Result<Self, SpecError> {
        check_group_id(id)?;
        Ok(McompoundGroup::registered(id))
    }

    /// [`McompoundGroup::named`] for an ID already checked.
    fn registered(id: &str) -> Self {
        let mut registry = lock(&REGISTRY);
        if let Some(inner) = registry.get(id).and_then(Weak::upgrade) {
            return McompoundGroup { inner };
        }
        let inner = Arc::new(Group { id: Some(id.to_string()), members: Mutex::default() });
        registry.insert(id.to_string(), Arc::downgrade(&inner));
        McompoundGroup { inner }
    }

    /// The ID of a process-wide group, `None` for a host's own.
    pub fn id(&self) -> Option<&str> {
        self.inner.id.as_deref()
    }

    /// The number of subflows in the group.
    pub fn members(&self) -> usize {
        lock(&self.inner.members).rates.len()
    }

    /// The sum of the members' smoothed rates, bytes per second.
    pub fn total_rate(&self) -> f64 {
        lock(&self.inner.members).rates.iter().map(|(_, rate)| rate).sum()
    }

    /// Whether two handles refer to the same group.
    pub fn same_group(&self, other: &McompoundGroup) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A new subflow in this group with Compound TCP's parameters `config`.
    pub fn join(&self, config: CtcpConfig, params: &Params) -> Compound {
        Compound::coupled("mcompound", config, params, Box::new(Subflow::join(self)))
    }

    /// A new subflow in this group with the Compound TCP parameters of
    /// `spec`, which must be `ctcp` or `mcompound` (whose own group ID this
    /// group replaces).
    pub fn build(&self, spec: &Spec, params: &Params) -> Result<Box<dyn Controller>, SpecError> {
        let config = match (spec.config::<CtcpConfig>(), spec.config::<McompoundConfig>()) {
            (Some(config), _) => config.clone(),
            (_, Some(config)) => config.ctcp.clone(),
            _ => {
                return Err(SpecError::new(
                    spec.name(),
                    "group",
                    "cannot be used: only ctcp and mcompound controllers join an MCompound group",
                ))
            }
        };
        Ok(Box::new(self.join(config, params)))
    }
}

impl Default for McompoundGroup {
    fn default() -> Self {
        McompoundGroup::new()
    }
}

impl fmt::Debug for McompoundGroup {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("McompoundGroup").field("id", &self.inner.id).field("members", &self.members()).finish()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            let mut registry = lock(&REGISTRY);
            // A group of the same ID made after this one lost its last
            // member is alive and stays.
            if registry.get(id).is_some_and(|entry| entry.strong_count() == 0) {
                registry.remove(id);
            }
        }
    }
}

/// One subflow's membership in its group: the [`Coupling`] of its
/// Compound TCP controller.
#[derive(Debug)]
struct Subflow {
    /// The group.
    group: McompoundGroup,
    /// This subflow's member number in the group.
    member: u64,
    /// Smoothed rate, bytes per second; `None` before the first round ends.
    rate: Option<f64>,
    /// A rate was published since the coupling factors were last computed.
    published: bool,
    /// The share of the group's rate at the last computation; 1 before the
    /// first (Algorithm 1 starts with all θ at 1).
    share: f64,
}

impl Subflow {
    /// Joins `group`.
    fn join(group: &McompoundGroup) -> Subflow {
        let mut members = lock(&group.inner.members);
        let member = members.next_member;
        members.next_member += 1;
        members.rates.push((member, 0.0));
        drop(members);
        Subflow { group: group.clone(), member, rate: None, published: false, share: 1.0 }
    }
}

impl Coupling for Subflow {
    /// Updates and publishes the smoothed rate.
    fn on_round_end(&mut self, window: f64, smoothed_rtt: Duration) {
        let sample = window / smoothed_rtt.as_secs_f64();
        if !sample.is_finite() {
            return;
        }
        let rate = self.rate.map_or(sample, |rate| smoothed_rate(rate, sample));
        self.rate = Some(rate);
        let mut members = lock(&self.group.inner.members);
        if let Some(entry) = members.rates.iter_mut().find(|(member, _)| *member == self.member) {
            entry.1 = rate;
        }
        self.published = true;
    }

    /// The coupling factors from the group's current rates, if this
    /// subflow published a rate since they were last computed.
    fn refresh(&mut self, k: f64) -> Option<Thetas> {
        if !self.published {
            return None;
        }
        self.published = false;
        let members = lock(&self.group.inner.members);
        let total: f64 = members.rates.iter().map(|(_, rate)| rate).sum();
        let own = members.rates.iter().find(|(member, _)| *member == self.member).map_or(0.0, |(_, rate)| *rate);
        drop(members);
        self.share = share(own, total);
        Some(Thetas::for_share(self.share, k))
    }

    /// The share at the last computation; 1 before the first.
    fn share(&self) -> f64 {
        self.share
    }
}

impl Drop for Subflow {
    fn drop(&mut self) {
        lock(&self.group.inner.members).rates.retain(|(member, _)| *member != self.member);
    }
}

/// Algorithm 1's smoothed rate: `7/8 · rate + 1/8 · sample`.
pub fn smoothed_rate(rate: f64, sample: f64) -> f64 {
    (1.0 - RATE_GAIN) * rate + RATE_GAIN * sample
}

/// A subflow's share `own / total` of its group's rate; 1 while the group
/// has no rate yet.
pub fn share(own: f64, total: f64) -> f64 {
    if total > 0.0 && total.is_finite() {
        (own / total).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests;
