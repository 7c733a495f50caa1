//! HTTP/3 endpoints that choose a weighted congestion controller per
//! connection: the library behind `flowshare serve`, `flowshare get` and
//! `flowshare loadtest`, and the interop-runner endpoint
//! (`interop/run_endpoint.sh`).
//!
//! * [`policy`]: the TOML policy that maps connections (by SNI, ALPN,
//!   client address) to controller specs, with per-request upgrades and a
//!   weight cap;
//! * [`weight`]: a connection's weight from its active responses
//!   (`weight = "streams"`, upgrades);
//! * [`server`]: the server event loop, choosing the controller inside the
//!   TLS handshake;
//! * [`client`]: downloads and uploads over one or several connections;
//! * [`loadtest`]: many concurrent connections against a server;
//! * [`soak`]: the load test for minutes, mixed with garbage, corrupted
//!   Initials and abandoned connections, watching the server's memory;
//! * [`qlog`], [`stats`], [`log`]: what the endpoints report;
//! * [`endpoint`], [`http`], [`io`]: what both endpoints share (transport
//!   settings and reporting options, requests, sockets).

pub mod client;
pub mod endpoint;
pub mod http;
pub mod io;
pub mod loadtest;
pub mod log;
pub mod policy;
pub mod qlog;
pub mod server;
pub mod soak;
pub mod stats;
pub mod weight;

#[cfg(test)]
mod testing;
