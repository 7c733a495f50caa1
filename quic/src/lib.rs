//! flowshare controllers inside quiche connections.
//!
//! The patched quiche (see `patches/quiche/`) accepts congestion
//! controllers from outside the crate. This crate connects the two:
//!
//! * [`adapter`]: [`QuicheController`], quiche's controller interface
//!   implemented over any flowshare [`Controller`](flowshare_controllers::Controller);
//! * [`select`]: putting a [`Spec`](flowshare_controllers::Spec) on a
//!   `quiche::Config`, registering the algorithm names with quiche, and
//!   finding the controller of a live connection;
//! * [`transfer`]: a loopback bulk transfer between a quiche client and
//!   server, with an optional emulated bottleneck ([`link`]), used by
//!   `flowshare demo` and the end-to-end tests;
//! * [`pacing`]: sending each packet at the time quiche scheduled it;
//! * [`udp`]: the sockets of every endpoint (GSO, GRO, `sendmmsg`,
//!   `recvmmsg`, with a fallback to one datagram per message);
//! * [`cert`]: self-signed certificates.

pub mod adapter;
pub mod cert;
pub mod link;
pub mod pacing;
pub mod select;
pub mod transfer;
pub mod udp;

pub use adapter::QuicheController;
pub use select::configure;
pub use select::configure_in_handshake;
pub use select::controller;
pub use select::controller_mut;
pub use select::factory;
pub use select::register_with_quiche;

/// A fresh random connection ID of quiche's maximum length, for the
/// endpoints of the loopback transfer and of `flowshare-interop` alike.
pub fn random_connection_id() -> std::io::Result<quiche::ConnectionId<'static>> {
    use ring::rand::SecureRandom as _;
    let mut id = [0u8; quiche::MAX_CONN_ID_LEN];
    ring::rand::SystemRandom::new()
        .fill(&mut id)
        .map_err(|_| std::io::Error::other("no randomness for a connection ID"))?;
    Ok(quiche::ConnectionId::from_vec(id.to_vec()))
}
