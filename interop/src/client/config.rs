//! How the client runs, and the quiche configuration that follows.

use std::path::PathBuf;
use std::time::Duration;

use flowshare_controllers::ack_delay::ASSUMED_MAX_ACK_DELAY;
use flowshare_controllers::Spec;

use crate::endpoint::EndpointOptions;
use crate::http::Protocol;
use crate::io::Offload;

/// Concurrent bidirectional streams the client lets the server open: HTTP/3
/// servers open none, so this only has to be enough.
const INITIAL_MAX_STREAMS_BIDI: u64 = 100;

/// How the client runs.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// HTTP/3 or hq-interop.
    pub protocol: Protocol,
    /// The client's controller (the sender's, for uploads).
    pub cc: Spec,
    /// Skip certificate verification.
    pub insecure: bool,
    /// Trust the certificates in this PEM file.
    pub ca: Option<PathBuf>,
    /// qlog, key log, stats and idle timeout, as the server has them.
    pub endpoint: EndpointOptions,
    /// Connections still open after this long are abandoned.
    pub time_limit: Duration,
    /// Extra request headers (HTTP/3 only).
    pub headers: Vec<(String, String)>,
    /// Each batch of connections resumes the TLS session of the batch
    /// before (the interop runner's resumption test case).
    pub resume: bool,
    /// Send requests as 0-RTT early data when resuming (zerortt).
    pub early_data: bool,
    /// Segmentation offload on the connections' sockets (`--no-gso`:
    /// [`Offload::Off`]).
    pub offload: Offload,
    /// While it only receives, the client answers every `ack_every`-th
    /// datagram at once and holds a lone one for up to the `max_ack_delay`
    /// it advertises ([`ASSUMED_MAX_ACK_DELAY`], the one the controllers
    /// assume), as RFC 9000 section 13.2.2 recommends (2) and Linux TCP
    /// receivers do; 1 answers every datagram at once, as quiche does when
    /// the application sends after each.
    pub ack_every: u32,
}

impl ClientConfig {
    /// The quiche configuration every connection of the client is made with.
    pub(super) fn quiche_config(&self) -> Result<quiche::Config, String> {
        let mut quiche_config =
            quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(|e| format!("QUIC configuration: {e}"))?;
        quiche_config.set_application_protos(&[self.protocol.alpn()]).map_err(|e| format!("ALPN: {e}"))?;
        self.endpoint.configure(&mut quiche_config);
        quiche_config.set_initial_max_streams_bidi(INITIAL_MAX_STREAMS_BIDI);
        // What `ack_every` holds an acknowledgement for, advertised.
        quiche_config.set_max_ack_delay(ASSUMED_MAX_ACK_DELAY.as_millis() as u64);
        quiche_config.verify_peer(!self.insecure);
        if self.early_data {
            quiche_config.enable_early_data();
        }
        if let Some(ca) = &self.ca {
            quiche_config
                .load_verify_locations_from_file(&ca.to_string_lossy())
                .map_err(|e| format!("--ca {}: {e}", ca.display()))?;
        }
        flowshare_quic::configure(&mut quiche_config, &self.cc);
        Ok(quiche_config)
    }
}
