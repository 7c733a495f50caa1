//! The conditions a policy tests: server name patterns and address
//! prefixes for connections, path prefixes and headers for requests.

use std::net::IpAddr;

/// A request, as far as upgrades look at it.
pub trait Request {
    /// The path, e.g. `/bulk/file.bin`.
    fn path(&self) -> &str;
    /// The value of header `name` (lowercase), if present.
    fn header(&self, name: &str) -> Option<&str>;
}

/// What an upgrade asks of a request.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum RequestCondition {
    /// The path starts with this.
    PathPrefix(String),
    /// The header is present, with this value if one is given.
    Header { name: String, value: Option<String> },
}

impl RequestCondition {
    pub(super) fn matches(&self, request: &impl Request) -> bool {
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

/// IPv4-mapped IPv6 addresses (a dual-stack socket's view of IPv4 clients)
/// match IPv4 prefixes.
pub(super) fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

/// A server name pattern: `example.com`, or `*.example.com` for any name
/// below it. Case-insensitive.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct SniPattern {
    /// Lowercase name, without the `*.` of a wildcard.
    name: String,
    wildcard: bool,
}

impl SniPattern {
    pub(super) fn parse(text: &str) -> Result<SniPattern, String> {
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

    pub(super) fn matches(&self, sni: &str) -> bool {
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
pub(super) struct Prefix {
    network: IpAddr,
    length: u8,
}

impl Prefix {
    pub(super) fn parse(text: &str) -> Result<Prefix, String> {
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

    pub(super) fn contains(&self, address: IpAddr) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
