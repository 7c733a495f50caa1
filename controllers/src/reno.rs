//! Reference NewReno (RFC 9002, section 7 and appendix B), the standard
//! peer of hosts that have no built-in one, such as the lab simulator.
//!
//! RFC 9002's NewReno is AIMD(1, 1/2) with standard slow start, one decrease
//! per recovery period and a collapse to the minimum window on persistent
//! congestion, which is exactly MulTCP(1) (see [`crate::multcp`]). It is
//! built from that code rather than written twice; only its name differs.

use std::fmt;

use crate::controller::Controller;
use crate::controller::Params;
use crate::grammar::Args;
use crate::grammar::SpecError;
use crate::multcp::MulTcp;
use crate::multcp::MulTcpConfig;
use crate::spec::AlgorithmConfig;

/// A NewReno controller.
pub fn new(params: &Params) -> MulTcp {
    MulTcp::named("reno", MulTcpConfig::one_flow(), params)
}

/// The spec `reno`: no parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenoConfig;

impl AlgorithmConfig for RenoConfig {
    fn from_args(_args: &mut Args) -> Result<Self, SpecError> {
        Ok(RenoConfig)
    }

    fn build(&self, params: &Params) -> Option<Box<dyn Controller>> {
        Some(Box::new(new(params)))
    }
}

impl fmt::Display for RenoConfig {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("reno")
    }
}
