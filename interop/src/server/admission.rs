//! What a datagram from an unknown client must show before the server
//! spends anything on it (RFC 9000, sections 5.2.2, 8.1 and 14.1):
//!
//! * an Initial comes in a datagram of at least 1,200 bytes, and so does a
//!   packet of an unknown version before it gets a Version Negotiation,
//!   so that neither can draw more than it brought;
//! * a Retry token, when the server asks for one, proves that the client
//!   receives at the address it sends from: an HMAC over the address and port, the
//!   time and the client's original destination connection ID, valid for
//!   [`TOKEN_LIFETIME`].

use std::net::IpAddr;
use std::net::SocketAddr;
use std::time::Duration;
use std::time::SystemTime;

use ring::hmac;

/// The smallest datagram that may carry an Initial, and the smallest that
/// gets a Version Negotiation (RFC 9000, sections 14.1 and 5.2.2).
pub(super) const MIN_INITIAL_DATAGRAM: usize = 1200;

/// How long a Retry token stays valid: a few round trips, the client
/// uses it right away.
pub(super) const TOKEN_LIFETIME: Duration = Duration::from_secs(10);

/// Version of the token layout, its first byte.
const TOKEN_FORMAT: u8 = 1;

/// Longest connection ID in QUIC version 1.
const MAX_CID_LEN: usize = 20;

/// Mints and checks Retry tokens with a key that lives as long as the
/// server.
pub(super) struct RetryTokens {
    key: hmac::Key,
}

impl RetryTokens {
    pub(super) fn new(rng: &dyn ring::rand::SecureRandom) -> Option<RetryTokens> {
        hmac::Key::generate(hmac::HMAC_SHA256, rng).ok().map(|key| RetryTokens { key })
    }

    /// A token for a client at `client` whose first Initial went to `odcid`:
    /// format, issue time (seconds), the ID's length and bytes, the tag.
    pub(super) fn mint(&self, client: SocketAddr, odcid: &[u8], now: SystemTime) -> Vec<u8> {
        let issued = now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs();
        let mut token = Vec::with_capacity(2 + 8 + odcid.len() + 32);
        token.push(TOKEN_FORMAT);
        token.extend_from_slice(&issued.to_be_bytes());
        token.push(odcid.len() as u8);
        token.extend_from_slice(odcid);
        let tag = hmac::sign(&self.key, &signed_bytes(&token, client));
        token.extend_from_slice(tag.as_ref());
        token
    }

    /// The original destination connection ID a valid token carries, or
    /// None if the token is malformed, forged, for another address or old.
    pub(super) fn validate(&self, token: &[u8], client: SocketAddr, now: SystemTime) -> Option<Vec<u8>> {
        let (&format, rest) = token.split_first()?;
        if format != TOKEN_FORMAT {
            return None;
        }
        let issued = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
        let odcid_len = usize::from(*rest.get(8)?);
        if odcid_len > MAX_CID_LEN {
            return None;
        }
        let body_len = 1 + 8 + 1 + odcid_len;
        let (body, tag) = (token.get(..body_len)?, token.get(body_len..)?);
        hmac::verify(&self.key, &signed_bytes(body, client), tag).ok()?;
        let now = now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs();
        // Issued no later than now (one second of slack) and not expired.
        if issued > now + 1 || now.saturating_sub(issued) > TOKEN_LIFETIME.as_secs() {
            return None;
        }
        Some(body[10..].to_vec())
    }
}

/// What the tag covers: the token's body and the client's address and
/// port (the Initial with the token follows the Retry within a round
/// trip, too soon for a NAT to have moved the client).
fn signed_bytes(body: &[u8], client: SocketAddr) -> Vec<u8> {
    let mut signed = body.to_vec();
    match client.ip() {
        IpAddr::V4(address) => signed.extend_from_slice(&address.to_ipv6_mapped().octets()),
        IpAddr::V6(address) => signed.extend_from_slice(&address.octets()),
    }
    signed.extend_from_slice(&client.port().to_be_bytes());
    signed
}

/// The connection IDs of a long-header packet of a version the server
/// does not speak, read by the version-independent invariants (RFC 8999,
/// section 5.1), for a Version Negotiation: `(destination, source)`.
/// None for short headers, Version Negotiation packets themselves,
/// supported versions and truncated headers.
pub(super) fn unsupported_version_ids(datagram: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&first, rest) = datagram.split_first()?;
    if first & 0x80 == 0 {
        return None;
    }
    let version = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
    if version == 0 || quiche::version_is_supported(version) {
        return None;
    }
    let rest = &rest[4..];
    let dcid_len = usize::from(*rest.first()?);
    let dcid = rest.get(1..1 + dcid_len)?;
    let rest = &rest[1 + dcid_len..];
    let scid_len = usize::from(*rest.first()?);
    let scid = rest.get(1..1 + scid_len)?;
    Some((dcid, scid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> RetryTokens {
        RetryTokens::new(&ring::rand::SystemRandom::new()).unwrap()
    }

    #[test]
    fn a_token_is_valid_only_for_its_address_and_lifetime() {
        let tokens = tokens();
        let client: SocketAddr = "192.0.2.1:4433".parse().unwrap();
        let now = SystemTime::now();
        let token = tokens.mint(client, &[7; 8], now);
        assert_eq!(tokens.validate(&token, client, now), Some(vec![7; 8]));
        let other_port: SocketAddr = "192.0.2.1:9999".parse().unwrap();
        assert_eq!(tokens.validate(&token, other_port, now), None, "another port");
        assert_eq!(tokens.validate(&token, "192.0.2.2:4433".parse().unwrap(), now), None, "another address");
        assert_eq!(tokens.validate(&token, client, now + TOKEN_LIFETIME + Duration::from_secs(2)), None, "expired");
        assert_eq!(tokens.validate(&token, client, now - Duration::from_secs(60)), None, "from the future");
        assert_eq!(RetryTokens::validate(&self::tokens(), &token, client, now), None, "another server's key");
    }

    #[test]
    fn forged_truncated_and_garbage_tokens_are_refused() {
        let tokens = tokens();
        let client: SocketAddr = "[2001:db8::1]:443".parse().unwrap();
        let now = SystemTime::now();
        let token = tokens.mint(client, &[1; 20], now);
        for cut in 0..token.len() {
            assert_eq!(tokens.validate(&token[..cut], client, now), None, "cut at {cut}");
        }
        let mut forged = token.clone();
        forged[12] ^= 1;
        assert_eq!(tokens.validate(&forged, client, now), None);
        let mut long_id = token.clone();
        long_id[9] = 200;
        assert_eq!(tokens.validate(&long_id, client, now), None);
        assert_eq!(tokens.validate(&[0xff; 64], client, now), None);
    }

    #[test]
    fn version_negotiation_reads_only_unknown_long_headers() {
        let mut packet = vec![0xc0, 0x1a, 0x2a, 0x3a, 0x4a, 3, 1, 2, 3, 2, 9, 9];
        assert_eq!(unsupported_version_ids(&packet), Some((&[1u8, 2, 3][..], &[9u8, 9][..])));
        packet[1..5].copy_from_slice(&1u32.to_be_bytes());
        assert_eq!(unsupported_version_ids(&packet), None, "version 1 is spoken");
        packet[1..5].copy_from_slice(&0u32.to_be_bytes());
        assert_eq!(unsupported_version_ids(&packet), None, "never answer a Version Negotiation");
        assert_eq!(unsupported_version_ids(&[0x40, 1, 2, 3]), None, "short header");
        assert_eq!(unsupported_version_ids(&[0xc0, 0x1a, 0x2a, 0x3a, 0x4a, 30, 1]), None, "truncated");
        assert_eq!(unsupported_version_ids(&[]), None);
    }
}
