//! One server connection: its admission under the policy, the application
//! protocol it speaks, the responses it writes and the weight that follows
//! them. The protocols' request handling is in [`super::h3`] and
//! [`super::hq`].

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use quiche::h3::NameValue;
use serde_json::json;

use super::config::ServerConfig;
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
    pub(super) body: Body,
}

/// An upload being received.
pub(super) struct Upload {
    pub(super) sink: Option<BufWriter<File>>,
    pub(super) received: u64,
    /// Whether the upload gets its own response (PUT, POST), unlike the
    /// body of a GET, which is dropped.
    pub(super) respond: bool,
}

pub(super) struct ServerConn {
    pub(super) quic: quiche::Connection,
    /// Short ID for logs: the first bytes of the server's connection ID.
    pub(super) id: String,
    peer: SocketAddr,
    created: Instant,
    pub(super) protocol: Option<Protocol>,
    pub(super) app: App,
    admission: Option<Admission>,
    pub(super) responses: HashMap<u64, Response>,
    pub(super) uploads: HashMap<u64, Upload>,
    /// Requests served, for the close log.
    pub(super) requests: u64,
    pub(super) sender: PacedSender,
    pub(super) pacing_due: Option<Instant>,
    pub(super) timeout_at: Option<Instant>,
    /// Packets arrived or timers fired since the connection was served.
    pub(super) dirty: bool,
    pub(super) trace: ControllerTrace,
    qlog: bool,
    /// Reused buffers.
    pub(super) scratch: Vec<u8>,
    pub(super) stream_ids: Vec<u64>,
    ended: Vec<u64>,
}

impl ServerConn {
    pub(super) fn new(quic: quiche::Connection, id: String, peer: SocketAddr, qlog: bool) -> ServerConn {
        ServerConn {
            quic,
            id,
            peer,
            created: Instant::now(),
            protocol: None,
            app: App::Handshaking,
            admission: None,
            responses: HashMap::new(),
            uploads: HashMap::new(),
            requests: 0,
            sender: PacedSender::default(),
            pacing_due: None,
            timeout_at: None,
            dirty: true,
            trace: ControllerTrace::new(qlog),
            qlog,
            scratch: Vec::new(),
            stream_ids: Vec::new(),
            ended: Vec::new(),
        }
    }

    /// When the connection needs the loop next: now if it has work
    /// pending, else its next timer or paced packet.
    pub(super) fn wake(&self) -> Option<Instant> {
        if self.dirty {
            return Some(Instant::now());
        }
        match (self.timeout_at, self.pacing_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
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
    pub(super) fn serve(&mut self, config: &ServerConfig, h3_config: &quiche::h3::Config) {
        if matches!(self.app, App::Handshaking) && self.quic.is_established() {
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

    /// Moves response bodies into quiche as far as stream capacity allows.
    fn write_responses(&mut self) {
        let mut streams = std::mem::take(&mut self.stream_ids);
        streams.clear();
        streams.extend(self.responses.keys());
        for &stream in &streams {
            match self.write_response(stream) {
                Ok(false) => {}
                Ok(true) => {
                    self.responses.remove(&stream);
                }
                Err(e) => {
                    event!(Level::Warn, "response_failed", conn = self.id, stream = stream, error = e);
                    let _ = self.quic.stream_shutdown(stream, quiche::Shutdown::Write, H3_INTERNAL_ERROR);
                    self.responses.remove(&stream);
                }
            }
        }
        self.stream_ids = streams;
    }

    /// Writes what it can of one response; true when it is complete.
    fn write_response(&mut self, stream: u64) -> Result<bool, String> {
        let Some(response) = self.responses.get_mut(&stream) else { return Ok(true) };
        if let Some(headers) = &response.headers {
            let App::H3(h3) = &mut self.app else { return Err("headers on a non-HTTP/3 connection".into()) };
            match h3.send_response(&mut self.quic, stream, headers, response.body.is_empty()) {
                Ok(()) => response.headers = None,
                Err(quiche::h3::Error::StreamBlocked | quiche::h3::Error::Done) => return Ok(false),
                Err(e) => return Err(e.to_string()),
            }
            if response.body.is_empty() {
                return Ok(true);
            }
        }
        loop {
            let (chunk, fin) = response.body.next_chunk().map_err(|e| format!("reading the file: {e}"))?;
            if chunk.is_empty() {
                return Ok(response.body.finished());
            }
            let written = match &mut self.app {
                App::H3(h3) => match h3.send_body(&mut self.quic, stream, chunk, fin) {
                    Ok(written) => written,
                    Err(quiche::h3::Error::Done | quiche::h3::Error::StreamBlocked) => 0,
                    Err(e) => return Err(e.to_string()),
                },
                _ => match self.quic.stream_send(stream, chunk, fin) {
                    Ok(written) => written,
                    Err(quiche::Error::Done) => 0,
                    Err(e) => return Err(e.to_string()),
                },
            };
            response.body.consume(written);
            if written == 0 {
                return Ok(false);
            }
            if response.body.finished() {
                return Ok(true);
            }
        }
    }

    /// The client reset a stream: its response and upload are dropped.
    pub(super) fn abandon(&mut self, stream: u64) {
        self.responses.remove(&stream);
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
            if self.responses.contains_key(&stream) {
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
                if self.qlog {
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

/// The parts of a request the server looks at.
pub(super) struct RequestHead {
    pub(super) method: String,
    pub(super) path: String,
    /// Lowercase names.
    pub(super) headers: Vec<(String, String)>,
}

impl RequestHead {
    pub(super) fn from_h3(list: &[quiche::h3::Header]) -> RequestHead {
        let mut request = RequestHead { method: String::new(), path: String::new(), headers: Vec::new() };
        for header in list {
            let name = String::from_utf8_lossy(header.name());
            let value = String::from_utf8_lossy(header.value()).into_owned();
            match name.as_ref() {
                ":method" => request.method = value,
                ":path" => request.path = value,
                name if !name.starts_with(':') => request.headers.push((name.to_ascii_lowercase(), value)),
                _ => {}
            }
        }
        request
    }
}

impl policy::Request for RequestHead {
    fn path(&self) -> &str {
        &self.path
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, value)| value.as_str())
    }
}
