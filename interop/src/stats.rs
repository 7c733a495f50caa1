//! The `--stats` line an endpoint prints on stdout when a connection closes:
//!
//! ```text
//! stats role=server conn=5d1c0e2f peer=127.0.0.1:40112 sni=fast.test alpn=h3 cc=multcp:n=4 matched="rule 1 (policy.toml:7)" duration_s=1.532 bytes_sent=20514127 bytes_received=201344 packets_sent=15230 packets_lost=12 cwnd=187300 loss_events=3 rtt_ms=0.41 weight=4 resumed=no error=- gso=on
//! ```
//!
//! One line, `key=value`, so scripts and tests can read it. `loss_events`
//! (window or rate reductions) comes from a flowshare controller and is
//! `-` for quiche's own Reno and CUBIC; `weight` likewise. `gso` says
//! whether the endpoint's socket sent segmented messages (UDP GSO) when the
//! connection closed: `on`, or `off` where the kernel lacks it or
//! `--no-gso` turned it off.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use crate::log::push_value;

/// What a connection did, read from quiche and its controller at close.
#[derive(Clone, Debug)]
pub struct Summary {
    /// `server` or `client`.
    pub role: &'static str,
    /// Short connection ID (first bytes of the source connection ID, hex).
    pub conn: String,
    /// The peer's address.
    pub peer: SocketAddr,
    /// Server name the client asked for.
    pub sni: Option<String>,
    /// Negotiated application protocol.
    pub alpn: String,
    /// The controller spec.
    pub cc: String,
    /// Which policy rule chose it (server).
    pub matched: Option<String>,
    /// From the connection's creation to its close.
    pub duration: Duration,
    /// UDP payload bytes sent and received.
    pub bytes_sent: u64,
    /// See `bytes_sent`.
    pub bytes_received: u64,
    /// Packets sent.
    pub packets_sent: usize,
    /// Packets declared lost.
    pub packets_lost: usize,
    /// Final congestion window of the active path, bytes.
    pub cwnd: usize,
    /// Window or rate reductions of a flowshare controller.
    pub loss_events: Option<u64>,
    /// Smoothed RTT of the active path.
    pub rtt: Duration,
    /// Final weight of a weighted controller.
    pub weight: Option<f64>,
    /// Whether the TLS session was resumed.
    pub resumed: bool,
    /// Why the connection failed, if it did.
    pub error: Option<String>,
    /// The socket's data path, when the endpoint knows it.
    pub offload: Option<flowshare_quic::udp::Capabilities>,
}

impl Summary {
    /// Reads the numbers of `conn`.
    pub fn of(
        conn: &quiche::Connection,
        role: &'static str,
        conn_id: &str,
        peer: SocketAddr,
        duration: Duration,
    ) -> Summary {
        let stats = conn.stats();
        let path = conn.path_stats().find(|path| path.active).or_else(|| conn.path_stats().next());
        let controller = flowshare_quic::controller(conn);
        let snapshot = controller.map(|controller| controller.controller().snapshot());
        Summary {
            role,
            conn: conn_id.to_string(),
            peer,
            sni: conn.server_name().map(str::to_string),
            alpn: String::from_utf8_lossy(conn.application_proto()).into_owned(),
            cc: controller.map_or_else(|| "cubic".to_string(), |controller| controller.spec().to_string()),
            matched: None,
            duration,
            bytes_sent: stats.sent_bytes,
            bytes_received: stats.recv_bytes,
            packets_sent: stats.sent,
            packets_lost: stats.lost,
            cwnd: path.as_ref().map_or(0, |path| path.cwnd),
            loss_events: controller.map(|controller| controller.controller().counters().loss_events),
            rtt: path.as_ref().map_or(Duration::ZERO, |path| path.rtt),
            weight: snapshot.and_then(|snapshot| snapshot.weight),
            resumed: conn.is_resumed(),
            error: connection_error(conn),
            offload: None,
        }
    }
}

/// The error that closed `conn`, if it was not a clean close.
pub fn connection_error(conn: &quiche::Connection) -> Option<String> {
    if conn.is_timed_out() && !conn.is_established() {
        return Some("handshake timed out".to_string());
    }
    if conn.is_timed_out() {
        return Some("idle timeout".to_string());
    }
    // Application code 0x100 is HTTP/3's H3_NO_ERROR; hq-interop closes with 0.
    let clean = |error: &quiche::ConnectionError| error.error_code == 0 || (error.is_app && error.error_code == 0x100);
    for (who, error) in [("peer", conn.peer_error()), ("local", conn.local_error())] {
        if let Some(error) = error.filter(|error| !clean(error)) {
            return Some(format!(
                "{who} closed with {} error 0x{:x} {:?}",
                if error.is_app { "application" } else { "transport" },
                error.error_code,
                String::from_utf8_lossy(&error.reason)
            ));
        }
    }
    None
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let mut line = String::with_capacity(256);
        let mut field = |key: &str, value: &dyn fmt::Display| {
            line.push(' ');
            line.push_str(key);
            line.push('=');
            push_value(&mut line, &value.to_string());
        };
        let dash = |value: Option<String>| value.unwrap_or_else(|| "-".to_string());
        field("role", &self.role);
        field("conn", &self.conn);
        field("peer", &self.peer);
        field("sni", &dash(self.sni.clone()));
        field("alpn", &self.alpn);
        field("cc", &self.cc);
        field("matched", &dash(self.matched.clone()));
        field("duration_s", &format_args!("{:.3}", self.duration.as_secs_f64()));
        field("bytes_sent", &self.bytes_sent);
        field("bytes_received", &self.bytes_received);
        field("packets_sent", &self.packets_sent);
        field("packets_lost", &self.packets_lost);
        field("cwnd", &self.cwnd);
        field("loss_events", &dash(self.loss_events.map(|n| n.to_string())));
        field("rtt_ms", &format_args!("{:.2}", self.rtt.as_secs_f64() * 1e3));
        field("weight", &dash(self.weight.map(|w| w.to_string())));
        field("resumed", &if self.resumed { "yes" } else { "no" });
        field("error", &dash(self.error.clone()));
        if let Some(offload) = self.offload {
            field("gso", &if offload.gso() { "on" } else { "off" });
        }
        write!(f, "stats{line}")
    }
}
