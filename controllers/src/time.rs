//! Time as the controllers see it: a point on the host's clock.
//!
//! Controllers never read a clock. Hosts pass [`Time`] values measured from
//! an origin of their choosing (the quiche adapter uses the instant it built
//! the controller, the lab simulator uses the start of virtual time), so the
//! same controller runs identically on a wall clock and in a simulation.

use std::ops::Add;
use std::ops::Sub;
use std::time::Duration;

/// A point in time, in nanoseconds since the host's origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(u64);

impl Time {
    /// The host's origin.
    pub const ZERO: Time = Time(0);

    /// The time `since_origin` after the host's origin (saturating at about
    /// 584 years).
    pub fn from_duration(since_origin: Duration) -> Time {
        Time(u64::try_from(since_origin.as_nanos()).unwrap_or(u64::MAX))
    }

    /// The time `nanos` nanoseconds after the host's origin.
    pub const fn from_nanos(nanos: u64) -> Time {
        Time(nanos)
    }

    /// Nanoseconds since the host's origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Duration since the host's origin.
    pub const fn since_origin(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// How long after `earlier` this time is; zero if it is not later.
    pub fn saturating_duration_since(self, earlier: Time) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Time {
    type Output = Time;

    fn add(self, rhs: Duration) -> Time {
        let nanos = u64::try_from(rhs.as_nanos()).unwrap_or(u64::MAX);
        Time(self.0.saturating_add(nanos))
    }
}

impl Sub<Duration> for Time {
    type Output = Time;

    fn sub(self, rhs: Duration) -> Time {
        let nanos = u64::try_from(rhs.as_nanos()).unwrap_or(u64::MAX);
        Time(self.0.saturating_sub(nanos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        let t = Time::from_nanos(5);
        assert_eq!(t - Duration::from_nanos(9), Time::ZERO);
        assert_eq!(Time::from_nanos(u64::MAX) + Duration::from_secs(1), Time::from_nanos(u64::MAX));
        assert_eq!(t.saturating_duration_since(Time::from_nanos(7)), Duration::ZERO);
        assert_eq!(Time::from_nanos(7).saturating_duration_since(t), Duration::from_nanos(2));
    }
}
