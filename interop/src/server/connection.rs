//! One server connection: its admission under the policy, the application
//! protocol it speaks, the responses it writes and the weight that follows
//! them. The protocols' request handling is in [`super::h3`] and
//! [`super::hq`].

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use serde_json::json;

use super::config::ServerConfig;
use super::request::RequestHead;
use super::schedule::Schedule;
use super::schedule::Turn;
use crate::endpoint::Reporting;
use crate::event;
use crate::http::Body;
use crate::http::Protocol;
use crate::http::H3_INTERNAL_ERROR;
use crate::log::Level;
use crate::policy;
use crate::policy::Decision;
use crate::policy::Policy;
use crate::policy::Request as _;
use crate::qlog;
use crate::qlog::ControllerTrace;
use crate::stats::Summary;
use crate::weight::ConnectionWeight;
use crate::weight::ResponseWeight;
use flowshare_quic::pacing::PacedSender;

/// The policy's decision for a connection and what follows from it.
struct Admission {
    decision: Decision,
    policy: Arc<Policy>,
    /// Present when the controller's weight can change.
    weight: Option<ConnectionWeight>,
    /// The weight last given to the controller.
    applied_weight: f64,
}

/// The application protocol state of a connection.
pub(super) enum App {
    /// Before the handshake completes.
    Handshaking,
    /// Boxed: quiche's HTTP/3 state is large next to the other variants.
    H3(Box<quiche::h3::Connection>),
    /// hq-interop: request lines being read, by stream.
    Hq(HashMap<u64, Vec<u8>>),
}

/// A response whose body is still being written.
pub(super) struct Response {
    /// HTTP/3 headers not yet sent (`None` once sent, and for hq).
    pub(super) headers: Option<Vec<quiche::h3::Header>>,
    /// The stream's priority (RFC 9218), given to quiche with the headers.
    pub(super) priority: quiche::h3::Priority,
    pub(super) body: Body,
}

/// An upload being received.
pub(super) struct Upload {
    pub(super) sink: Option<BufWriter<File>>,
    pub(super) received: u64,
    /// The request's content-length, which the body must match (RFC 9114,
    /// section 4.1.2).
    pub(super) expected: Option<u64>,
    /// Whether the upload gets its own response (PUT, POST), unlike the
    /// body of a GET, which is dropped.
    pub(super) respond: bool,
}

pub(super) struct ServerConn {
    pub(super) quic: quiche::Connection,
    /// Short ID for logs: the first bytes of the server's connection ID.
    pub(super) id: String,
    pub(super) peer: SocketAddr,
    created: Instant,
    /// Counted among the server's half-open connections (not established).
    pub(super) half_open: bool,
    /// The handshake took too long: the connection is dropped silently.
    pub(super) expired: bool,
    pub(super) protocol: Option<Protocol>,
    pub(super) app: App,
    admission: Option<Admission>,
    /// Responses being written, taking turns for the send capacity.
    pub(super) responses: Schedule<Response>,
    pub(super) uploads: HashMap<u64, Upload>,
    /// Requests served, for the close log.
    pub(super) requests: u64,
    pub(super) sender: PacedSender,
    pub(super) pacing_due: Option<Instant>,
    pub(super) timeout_at: Option<Instant>,
    /// Packets arrived or timers fired since the connection was served.
    pub(super) dirty: bool,
    /// The controller's state may have changed this turn and the connection
    /// writes a qlog: its record is written once the turn's packets are sent.
    pub(super) trace_due: bool,
    /// The controller's qlog records; enabled exactly when the connection
    /// writes a qlog ([`ServerConn::traced`]).
    pub(super) trace: ControllerTrace,
    /// Reused buffers.
    pub(super) scratch: Vec<u8>,
    pub(super) stream_ids: Vec<u64>,
    ended: Vec<u64>,
}

impl ServerConn {
    pub(super) fn new(
        quic: quiche::Connection,
        id: String,
        peer: SocketAddr,
        qlog: bool,
        sender: PacedSender,
    ) -> ServerConn {
        ServerConn {
            quic,
            id,
            peer,
            created: Instant::now(),
            half_open: true,
            expired: false,
            protocol: None,
            app: App::Handshaking,
            admission: None,
            responses: Schedule::default(),
            uploads: HashMap::new(),
            requests: 0,
            sender,
            pacing_due: None,
            timeout_at: None,
            dirty: true,
            trace_due: false,
            trace: ControllerTrace::new(qlog),
            scratch: Vec::new(),
            stream_ids: Vec::new(),
            ended: Vec::new(),
        }
    }

    /// Whether the connection writes a qlog, and so its controller's trace.
    pub(super) fn traced(&self) -> bool {
        self.trace.enabled()
    }

    /// When the connection needs the loop next: now if it has work
    /// pending, else its next timer, paced packet or handshake deadline.
    pub(super) fn wake(&self, handshake_timeout: Duration) -> Option<Instant> {
        if self.dirty {
            return Some(Instant::now());
        }
        let deadline = self.half_open.then(|| self.created + handshake_timeout);
        [self.timeout_at, self.pacing_due, deadline].into_iter().flatten().min()
    }

    /// Whether the handshake has run longer than `timeout`; marks the
    /// connection for removal if so. No CONNECTION_CLOSE: the client has
    /// not proved its address, and a silent drop costs nothing.
    pub(super) fn handshake_expired(&mut self, now: Instant, timeout: Duration) -> bool {
        if self.half_open && !self.expired && now.duration_since(self.created) >= timeout {
            self.expired = true;
        }
        self.expired
    }

    /// Whether the handshake callback's decision has been taken.
    pub(super) fn admitted(&self) -> bool {
        self.admission.is_some()
    }

    pub(super) fn admit(&mut self, decision: Decision, policy: Arc<Policy>) {
        let assignment = &decision.assignment;
        let base = assignment.spec.weight();
        let weight =
            assignment.weight_can_change.then(|| ConnectionWeight::new(assignment.mode, base, policy.max_weight()));
        event!(
            Level::Info,
            "controller_selected",
            conn = self.id,
            cc = assignment.spec,
            matched = decision.matched,
            weight_mode = match assignment.mode {
                policy::WeightMode::Fixed => "fixed",
                policy::WeightMode::Streams => "streams",
            },
        );
        self.admission = Some(Admission { decision, policy, weight, applied_weight: base });
    }

    /// What the connection did, for its close.
    pub(super) fn summary(&self) -> Summary {
        let mut summary = Summary::of(&self.quic, "server", &self.id, self.peer, self.created.elapsed());
        if let Some(admission) = &self.admission {
            summary.cc = admission.decision.assignment.spec.to_string();
            summary.matched = Some(admission.decision.matched.clone());
        }
        summary
    }

    /// Runs the application: handshake completion, requests, response
    /// bodies, uploads and the weight.
    pub(super) fn serve(&mut self, config: &ServerConfig, h3_config: &quiche::h3::Config, reporting: &Reporting) {
        // Requests are served once the handshake is done, or in 0-RTT when
        // the server accepted a resumed client's early data.
        let ready = self.quic.is_established() || self.quic.is_in_early_data();
        if matches!(self.app, App::Handshaking) && ready {
            if !self.traced() && reporting.start_qlog(&mut self.quic, &self.id) {
                self.trace.enable();
            }
            self.start_application(h3_config);
        }
        match self.app {
            App::Handshaking => return,
            App::H3(_) => self.serve_h3(config),
            App::Hq(_) => self.serve_hq(config),
        }
        self.write_responses();
        self.update_weight();
    }

    fn start_application(&mut self, h3_config: &quiche::h3::Config) {
        let protocol = Protocol::from_alpn(self.quic.application_proto());
        self.protocol = protocol;
        self.app = match protocol {
            Some(Protocol::H3) => match quiche::h3::Connection::with_transport(&mut self.quic, h3_config) {
                Ok(h3) => App::H3(Box::new(h3)),
                Err(e) => {
                    event!(Level::Warn, "http3_failed", conn = self.id, error = e);
                    let _ = self.quic.close(true, H3_INTERNAL_ERROR, b"cannot start HTTP/3");
                    return;
                }
            },
            Some(Protocol::Hq) => App::Hq(HashMap::new()),
            None => {
                let _ = self.quic.close(false, 0x178, b"no application protocol");
                return;
            }
        };
        if self.admission.is_none() {
            // The handshake callback always decides; without a decision the
            // connection runs quiche's default, CUBIC.
            event!(Level::Warn, "no_policy_decision", conn = self.id);
        }
        let selected = match &self.admission {
            Some(admission) => json!({
                "cc": admission.decision.assignment.spec.to_string(),
                "matched": admission.decision.matched,
                "weight_mode": format!("{:?}", admission.decision.assignment.mode).to_lowercase(),
                "max_weight": admission.policy.max_weight(),
                "sni": self.quic.server_name(),
                "alpn": protocol.map(|p| p.to_string()),
                "client": self.peer.to_string(),
            }),
            None => json!({ "cc": "cubic", "matched": "none" }),
        };
        event!(
            Level::Info,
            "connection_established",
            conn = self.id,
            sni = self.quic.server_name().unwrap_or("-"),
            alpn = protocol.map_or_else(|| "-".to_string(), |p| p.to_string()),
        );
        qlog::event(&mut self.quic, "flowshare:controller_selected", selected);
    }

    /// Counts a response towards the connection's weight.
    pub(super) fn track_response(&mut self, stream: u64, request: &RequestHead, len: u64) {
        let Some(admission) = &mut self.admission else { return };
        let Some(weight) = &mut admission.weight else { return };
        let requested = request.header(policy::WEIGHT_HEADER).and_then(|value| value.trim().parse::<f64>().ok());
        let response = ResponseWeight {
            bulk: len >= admission.policy.bulk_min_bytes(),
            upgrade: admission.policy.upgrade(request),
            requested: requested.filter(|w| w.is_finite()),
        };
        weight.started(stream, response);
    }

    /// Moves response bodies into quiche as far as the send capacity
    /// allows, the responses taking turns (see [`super::schedule`]).
    fn write_responses(&mut self) {
        let (quic, app) = (&mut self.quic, &mut self.app);
        let ended =
            self.responses.run(|stream, response, allowed| write_response(quic, app, stream, response, allowed));
        for (stream, _, result) in ended {
            if let Err(e) = result {
                event!(Level::Warn, "response_failed", conn = self.id, stream = stream, error = e);
                let _ = self.quic.stream_shutdown(stream, quiche::Shutdown::Write, H3_INTERNAL_ERROR);
            }
        }
    }

    /// The client reset a stream: its response and upload are dropped.
    pub(super) fn abandon(&mut self, stream: u64) {
        self.responses.remove(stream);
        self.uploads.remove(&stream);
        if let Some(weight) = self.admission.as_mut().and_then(|admission| admission.weight.as_mut()) {
            weight.ended(stream);
        }
    }

    /// Ends the responses quiche has fully delivered, and gives the
    /// controller the weight that follows.
    fn update_weight(&mut self) {
        let Some(admission) = &mut self.admission else { return };
        let Some(weight) = &mut admission.weight else { return };
        self.ended.clear();
        for stream in weight.active_streams() {
            if self.responses.contains(stream) {
                continue;
            }
            // A stream quiche has collected (or the peer stopped) is over.
            if matches!(
                self.quic.stream_capacity(stream),
                Err(quiche::Error::InvalidStreamState(_) | quiche::Error::StreamStopped(_))
            ) {
                self.ended.push(stream);
            }
        }
        for &stream in &self.ended {
            weight.ended(stream);
        }
        let target = weight.target();
        if target == admission.applied_weight {
            return;
        }
        let active = weight.active();
        let Some(controller) = flowshare_quic::controller_mut(&mut self.quic) else { return };
        match controller.set_weight(target) {
            Ok(()) => {
                event!(
                    Level::Info,
                    "weight_changed",
                    conn = self.id,
                    from = admission.applied_weight,
                    to = target,
                    active_responses = active
                );
                let data = json!({ "from": admission.applied_weight, "to": target, "active_responses": active });
                admission.applied_weight = target;
                if self.traced() {
                    qlog::event(&mut self.quic, "flowshare:weight_updated", data);
                }
            }
            Err(e) => {
                event!(Level::Warn, "weight_rejected", conn = self.id, to = target, error = e);
                admission.applied_weight = target;
            }
        }
    }
}

/// Hands quiche what it takes of one response: its HTTP/3 headers (whole
/// or not at all: quiche checks the stream's capacity first), then at most
/// `allowed` bytes of its body, of which exactly what quiche accepted is
/// consumed, so nothing is sent twice or skipped.
fn write_response(
    quic: &mut quiche::Connection,
    app: &mut App,
    stream: u64,
    response: &mut Response,
    allowed: usize,
) -> Result<Turn, String> {
    if let Some(headers) = &response.headers {
        let App::H3(h3) = app else { return Err("headers on a non-HTTP/3 connection".into()) };
        match h3.send_response_with_priority(quic, stream, headers, &response.priority, response.body.is_empty()) {
            Ok(()) => response.headers = None,
            Err(quiche::h3::Error::StreamBlocked | quiche::h3::Error::Done) => return Ok(Turn::Wrote(0)),
            Err(e) => return Err(e.to_string()),
        }
        if response.body.is_empty() {
            return Ok(Turn::Complete);
        }
    }
    let mut total = 0;
    while total < allowed {
        let (chunk, last) = response.body.next_chunk().map_err(|e| format!("reading the file: {e}"))?;
        if chunk.is_empty() {
            break;
        }
        let take = chunk.len().min(allowed - total);
        let fin = last && take == chunk.len();
        let written = match app {
            App::H3(h3) => match h3.send_body(quic, stream, &chunk[..take], fin) {
                Ok(written) => written,
                Err(quiche::h3::Error::Done | quiche::h3::Error::StreamBlocked) => 0,
                Err(e) => return Err(e.to_string()),
            },
            _ => match quic.stream_send(stream, &chunk[..take], fin) {
                Ok(written) => written,
                Err(quiche::Error::Done) => 0,
                Err(e) => return Err(e.to_string()),
            },
        };
        response.body.consume(written);
        total += written;
        if written == 0 {
            break;
        }
    }
    Ok(if response.body.finished() { Turn::Complete } else { Turn::Wrote(total) })
}
