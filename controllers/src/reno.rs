//! Reference NewReno (RFC 9002, section 7 and appendix B), the standard
//! peer of hosts that have no built-in one, such as the lab simulator.
//!
//! RFC 9002's NewReno is AIMD(1, 1/2) with standard slow start, one decrease
//! per recovery period and a collapse to the minimum window on persistent
//! congestion, which is exactly MulTCP(1) (see [`crate::multcp`]). It is
//! built from that code rather than written twice; only its name differs.

use crate::controller::Params;
use crate::multcp::MulTcp;
use crate::multcp::MulTcpConfig;

/// A NewReno controller.
pub fn new(params: &Params) -> MulTcp {
    MulTcp::named("reno", MulTcpConfig::one_flow(), params)
}
