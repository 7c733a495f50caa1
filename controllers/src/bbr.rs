//! The spec `bbr`: BBR as a host has it, for comparing flowshare's
//! controllers against it.
//!
//! quiche has BBRv2 (its gcongestion BBR2) and Linux has BBR; flowshare has
//! no implementation of its own, so `bbr` is a standard algorithm that only
//! hosts with one can run ([`crate::spec::Spec::build`] refuses it): in
//! quiche it selects quiche's BBRv2, in the testbed a Linux TCP peer
//! `tcp-bbr` is iperf3 with Linux's BBR. The lab has no reference
//! implementation and says so.

use std::fmt;

use crate::controller::Controller;
use crate::controller::Params;
use crate::grammar::Args;
use crate::grammar::SpecError;
use crate::spec::AlgorithmConfig;

/// The spec `bbr`: no parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BbrConfig;

impl AlgorithmConfig for BbrConfig {
    fn from_args(_args: &mut Args) -> Result<Self, SpecError> {
        Ok(BbrConfig)
    }

    /// None: only hosts with their own BBR run it.
    fn build(&self, _params: &Params) -> Option<Box<dyn Controller>> {
        None
    }
}

impl fmt::Display for BbrConfig {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("bbr")
    }
}
