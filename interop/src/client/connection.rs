//! One client connection: its requests (downloads and uploads) over
//! HTTP/3 or hq-interop, and what it reports about them.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::io::BufWriter;
use std::io::Write as _;
use std::net::SocketAddr;
use std::time::Duration;
use std::time::Instant;

use mio::Interest;
use mio::Poll;
use mio::Token;
use quiche::h3::NameValue;
use serde_json::json;

use super::config::ClientConfig;
use super::plan::Plan;
use super::plan::Request;
use super::plan::Sink;
use super::request_line::RequestLine;
use crate::endpoint::Reporting;
use crate::event;
use crate::http::Body;
use crate::http::Protocol;
use crate::http::H3_INTERNAL_ERROR;
use crate::io::Capabilities;
use crate::io::RecvBatch;
use crate::io::Socket;
use crate::log::Level;
use crate::qlog;
use crate::qlog::ControllerTrace;
use crate::stats::Summary;
use flowshare_controllers::ack_delay::ASSUMED_MAX_ACK_DELAY;
use flowshare_quic::pacing::PacedSender;

/// The outcome of one request.
#[derive(Clone, Debug)]
pub struct RequestReport {
    /// Index of the connection's plan.
    pub connection: usize,
    /// The path.
    pub path: String,
    /// Whether it was an upload.
    pub upload: bool,
    /// Body bytes received (downloads) or sent (uploads).
    pub bytes: u64,
    /// From sending the request to the end of the response.
    pub elapsed: Duration,
    /// From sending the request to the first byte of the response (its
    /// HTTP/3 headers, or hq-interop's first body byte).
    pub first_byte: Option<Duration>,
    /// Why it failed.
    pub error: Option<String>,
}

/// The outcome of one connection.
#[derive(Clone, Debug)]
pub struct ConnectionReport {
    /// Its requests, in plan order.
    pub requests: Vec<RequestReport>,
    /// Its stats at close.
    pub summary: Summary,
    /// Time to complete the handshake.
    pub handshake: Option<Duration>,
    /// The TLS session, for a later connection to resume.
    pub session: Option<Vec<u8>>,
}

impl ConnectionReport {
    /// Whether every request succeeded.
    pub fn ok(&self) -> bool {
        self.requests.iter().all(|request| request.error.is_none())
    }
}

enum App {
    Handshaking,
    /// Boxed: quiche's HTTP/3 state is large next to the other variants.
    H3(Box<quiche::h3::Connection>),
    Hq,
}

/// One request in flight or waiting.
struct Transfer {
    request: Request,
    stream: Option<u64>,
    out: Option<BufWriter<File>>,
    upload: Option<Body>,
    /// The upload's last byte (and FIN) went to quiche.
    upload_done: bool,
    bytes: u64,
    status: Option<u16>,
    content_length: Option<u64>,
    started: Option<Instant>,
    first_byte: Option<Instant>,
    finished: Option<Instant>,
    done: bool,
    error: Option<String>,
}

/// A connection of the client and its transfers.
pub(super) struct ClientConn {
    index: usize,
    plan: Plan,
    socket: Socket,
    local: SocketAddr,
    quic: quiche::Connection,
    id: String,
    app: App,
    transfers: Vec<Transfer>,
    streams: HashMap<u64, usize>,
    /// The next transfer to request.
    next: usize,
    /// Transfers done.
    completed: usize,
    next_hq_stream: u64,
    /// An hq-interop request line quiche has taken only part of; later
    /// requests wait until it is all sent.
    hq_unsent: Option<RequestLine>,
    created: Instant,
    handshake: Option<Duration>,
    sender: PacedSender,
    pacing_due: Option<Instant>,
    timeout_at: Option<Instant>,
    /// Datagrams received since the client last sent (its acknowledgement).
    unanswered: u32,
    /// When a held acknowledgement must go out.
    ack_due: Option<Instant>,
    dirty: bool,
    reported: bool,
    trace: ControllerTrace,
    scratch: Vec<u8>,
}

impl ClientConn {
    /// Opens connection `index` of the client, registered with `poll` under
    /// that index.
    pub(super) fn connect(
        index: usize,
        plan: Plan,
        config: &ClientConfig,
        quiche_config: &mut quiche::Config,
        poll: &Poll,
        reporting: &Reporting,
        session: Option<&[u8]>,
    ) -> Result<ClientConn, String> {
        let mut socket =
            crate::io::bind(plan.local, config.offload).map_err(|e| format!("binding {}: {e}", plan.local))?;
        let local = socket.local_addr();
        poll.registry().register(&mut socket, Token(index), Interest::READABLE).map_err(|e| format!("poll: {e}"))?;
        let scid = flowshare_quic::random_connection_id().map_err(|e| e.to_string())?;
        let mut quic = quiche::connect(plan.server_name.as_deref(), &scid, local, plan.server, quiche_config)
            .map_err(|e| format!("connecting to {}: {e}", plan.server))?;
        if let Some(session) = session {
            quic.set_session(session).map_err(|e| format!("resuming the TLS session: {e}"))?;
        }
        let id = qlog::hex(&scid.as_ref()[..4]);
        let qlog_enabled = reporting.start(&mut quic, &id, true);
        qlog::event(
            &mut quic,
            "flowshare:controller_selected",
            json!({ "cc": config.cc.to_string(), "matched": "--cc" }),
        );
        event!(
            Level::Info,
            "connecting",
            conn = id,
            local = local,
            server = plan.server,
            sni = plan.server_name.as_deref().unwrap_or("-")
        );
        let transfers = plan
            .requests
            .iter()
            .map(|request| Transfer {
                request: request.clone(),
                stream: None,
                out: None,
                upload: None,
                upload_done: false,
                bytes: 0,
                status: None,
                content_length: None,
                started: None,
                first_byte: None,
                finished: None,
                done: false,
                error: None,
            })
            .collect();
        Ok(ClientConn {
            index,
            plan,
            socket,
            local,
            quic,
            id,
            app: App::Handshaking,
            transfers,
            streams: HashMap::new(),
            next: 0,
            completed: 0,
            next_hq_stream: 0,
            hq_unsent: None,
            created: Instant::now(),
            handshake: None,
            sender: PacedSender::default(),
            pacing_due: None,
            timeout_at: None,
            unanswered: 0,
            ack_due: None,
            dirty: true,
            reported: false,
            trace: ControllerTrace::new(qlog_enabled),
            scratch: vec![0; 64 * 1024],
        })
    }

    /// When the connection needs the loop next: now if it has work
    /// pending, else its next timer or paced packet; never once reported.
    pub(super) fn wake(&self) -> Option<Instant> {
        if self.reported {
            return None;
        }
        if self.dirty {
            return Some(Instant::now());
        }
        [self.timeout_at, self.pacing_due, self.ack_due].into_iter().flatten().min()
    }

    /// Feeds every datagram waiting on the connection's socket to quiche.
    pub(super) fn receive(&mut self, received: &mut RecvBatch) -> io::Result<()> {
        while self.socket.recv(received)? > 0 {
            for (datagram, from) in received.datagrams() {
                let info = quiche::RecvInfo { from, to: self.local };
                match self.quic.recv(datagram, info) {
                    Ok(_) => {
                        self.unanswered += 1;
                        self.ack_due.get_or_insert_with(|| Instant::now() + ASSUMED_MAX_ACK_DELAY);
                    }
                    Err(e) => event!(Level::Debug, "packet_rejected", conn = self.id, error = e),
                }
                self.dirty = true;
            }
        }
        Ok(())
    }

    /// The data path of the connection's socket.
    pub(super) fn offload(&self) -> Capabilities {
        self.socket.capabilities()
    }

    /// Fires the timer, serves the requests and sends what is due, as the
    /// loop finds the connection at `now`; the connection's report once it
    /// has closed.
    pub(super) fn advance(
        &mut self,
        now: Instant,
        config: &ClientConfig,
        reporting: &Reporting,
        on_request: &mut impl FnMut(&RequestReport),
    ) -> Result<Option<ConnectionReport>, String> {
        if self.reported {
            return Ok(None);
        }
        let fired = self.timeout_at.is_some_and(|at| at <= now);
        if fired {
            self.quic.on_timeout();
            self.dirty = true;
        }
        let due = self.pacing_due.is_some_and(|at| at <= now + flowshare_quic::pacing::PACING_SLACK);
        if self.dirty {
            self.step(config, on_request);
        }
        let retry = !self.socket.outbox().is_empty();
        let ack_expired = self.ack_due.is_some_and(|at| at <= now);
        let answer = fired || ack_expired || (self.dirty && !self.holds_acknowledgement(config));
        if answer || due || retry {
            self.unanswered = 0;
            self.ack_due = None;
            let paced = self.sender.flush(&mut self.quic, &mut self.socket).due();
            self.socket.send_queued().map_err(|e| format!("sending: {e}"))?;
            let retry = self.socket.retry_due().map(|after| Instant::now() + after);
            self.pacing_due = [paced, retry].into_iter().flatten().min();
            self.timeout_at = self.quic.timeout_instant();
        } else if self.dirty {
            // Received and held: quiche's timers may have moved.
            self.timeout_at = self.quic.timeout_instant();
        }
        if self.dirty {
            self.trace.observe(&mut self.quic);
            self.dirty = false;
        }
        // Once its CONNECTION_CLOSE is out, a client that has all its
        // responses need not wait out the draining period.
        let closed_by_us =
            self.completed == self.transfers.len() && self.quic.is_draining() && self.pacing_due.is_none();
        if self.quic.is_closed() || closed_by_us {
            return Ok(Some(self.finish(config, reporting, on_request)));
        }
        Ok(None)
    }

    /// Whether what the client has received may wait for more before it
    /// sends (its acknowledgement, `ack_every`): only while it is past the
    /// handshake, has sent every request and upload, and has not yet
    /// received `ack_every` datagrams (the delay of the oldest is checked
    /// by the caller).
    /// quiche acknowledges whenever the application sends after an
    /// ack-eliciting packet, so the client's sends pace its acknowledgements.
    fn holds_acknowledgement(&self, config: &ClientConfig) -> bool {
        // The count first: with `ack_every = 1` nothing is held and the
        // transfers are not looked at.
        self.unanswered > 0
            && self.unanswered < config.ack_every
            && !matches!(self.app, App::Handshaking)
            && self.next == self.transfers.len()
            && self.hq_unsent.is_none()
            && self.completed < self.transfers.len()
            && !self.quic.is_draining()
            && !self.quic.is_closed()
            && self.transfers.iter().all(|transfer| transfer.upload.is_none() || transfer.upload_done)
    }

    /// Fails what is left and closes the connection, if it is still open,
    /// once the client's time limit has passed.
    pub(super) fn give_up(&mut self, limit: Duration) {
        if !self.quic.is_closed() {
            self.fail_remaining(&format!("time limit of {limit:?} reached"));
            let _ = self.quic.close(false, 0x0, b"time limit");
        }
    }

    fn step(&mut self, config: &ClientConfig, on_request: &mut impl FnMut(&RequestReport)) {
        if self.handshake.is_none() && self.quic.is_established() {
            self.handshake = Some(self.created.elapsed());
            event!(
                Level::Info,
                "connection_established",
                conn = self.id,
                handshake_ms = format_args!("{:.1}", self.created.elapsed().as_secs_f64() * 1e3),
                resumed = self.quic.is_resumed()
            );
        }
        // Requests start once the handshake is done, or right away as 0-RTT
        // early data when resuming a session that allows it.
        let ready = self.quic.is_established() || (config.early_data && self.quic.is_in_early_data());
        if matches!(self.app, App::Handshaking) && ready {
            self.app = match config.protocol {
                Protocol::H3 => match quiche::h3::Config::new()
                    .and_then(|h3| quiche::h3::Connection::with_transport(&mut self.quic, &h3))
                {
                    Ok(h3) => App::H3(Box::new(h3)),
                    Err(e) => {
                        self.fail_remaining(&format!("cannot start HTTP/3: {e}"));
                        let _ = self.quic.close(true, H3_INTERNAL_ERROR, b"cannot start HTTP/3");
                        return;
                    }
                },
                Protocol::Hq => App::Hq,
            };
        }
        if matches!(self.app, App::Handshaking) || self.quic.is_closed() {
            return;
        }
        self.send_requests(config, on_request);
        self.send_uploads(on_request);
        match self.app {
            App::H3(_) => self.receive_h3(on_request),
            App::Hq => self.receive_hq(on_request),
            App::Handshaking => {}
        }
        if self.completed == self.transfers.len() && !self.quic.is_draining() && !self.quic.is_closed() {
            let _ = self.quic.close(true, config.protocol.no_error(), b"done");
        }
    }

    fn send_requests(&mut self, config: &ClientConfig, on_request: &mut impl FnMut(&RequestReport)) {
        if let Some(line) = &mut self.hq_unsent {
            match line.write(&mut self.quic) {
                Ok(true) => self.hq_unsent = None,
                Ok(false) => return,
                Err(e) => {
                    let stream = line.stream();
                    self.hq_unsent = None;
                    if let Some(&index) = self.streams.get(&stream) {
                        self.complete(index, Some(format!("sending the request: {e}")), on_request);
                    }
                }
            }
        }
        while self.next < self.transfers.len() && self.quic.peer_streams_left_bidi() > 0 {
            let index = self.next;
            let transfer = &mut self.transfers[index];
            if let Err(e) = transfer.open() {
                self.next += 1;
                self.complete(index, Some(e), on_request);
                continue;
            }
            let transfer = &mut self.transfers[index];
            let stream = match &mut self.app {
                App::H3(h3) => {
                    let method: &[u8] = if transfer.upload.is_some() { b"PUT" } else { b"GET" };
                    let mut headers = vec![
                        quiche::h3::Header::new(b":method", method),
                        quiche::h3::Header::new(b":scheme", b"https"),
                        quiche::h3::Header::new(b":authority", self.plan.authority.as_bytes()),
                        quiche::h3::Header::new(b":path", transfer.request.path.as_bytes()),
                        quiche::h3::Header::new(b"user-agent", b"flowshare"),
                    ];
                    if let Some(body) = &transfer.upload {
                        headers.push(quiche::h3::Header::new(b"content-length", body.len().to_string().as_bytes()));
                    }
                    for (name, value) in &config.headers {
                        headers.push(quiche::h3::Header::new(name.as_bytes(), value.as_bytes()));
                    }
                    // quiche writes a HEADERS frame whole or not at all
                    // (StreamBlocked, nothing sent), so a blocked request
                    // is simply asked again later; bodies go through
                    // `Body::consume` with what quiche took.
                    match h3.send_request(&mut self.quic, &headers, transfer.upload.is_none()) {
                        Ok(stream) => stream,
                        Err(
                            quiche::h3::Error::StreamBlocked
                            | quiche::h3::Error::TransportError(quiche::Error::StreamLimit),
                        ) => return,
                        Err(e) => {
                            self.next += 1;
                            self.complete(index, Some(format!("sending the request: {e}")), on_request);
                            continue;
                        }
                    }
                }
                App::Hq => {
                    let stream = self.next_hq_stream;
                    let mut line = RequestLine::new(stream, &transfer.request.path);
                    match line.write(&mut self.quic) {
                        Ok(complete) => {
                            // The stream is this request's from now on,
                            // however little of the line quiche took.
                            self.next_hq_stream += 4;
                            if !complete {
                                self.hq_unsent = Some(line);
                            }
                            stream
                        }
                        Err(quiche::Error::StreamLimit) => return,
                        Err(e) => {
                            self.next += 1;
                            self.complete(index, Some(format!("sending the request: {e}")), on_request);
                            continue;
                        }
                    }
                }
                App::Handshaking => return,
            };
            transfer.stream = Some(stream);
            transfer.started = Some(Instant::now());
            self.streams.insert(stream, index);
            self.next += 1;
            event!(
                Level::Debug,
                "request_sent",
                conn = self.id,
                stream = stream,
                path = self.transfers[index].request.path
            );
            if self.hq_unsent.is_some() {
                return;
            }
        }
    }

    fn send_uploads(&mut self, on_request: &mut impl FnMut(&RequestReport)) {
        let App::H3(h3) = &mut self.app else { return };
        let mut failed = Vec::new();
        for (index, transfer) in self.transfers.iter_mut().enumerate() {
            if transfer.upload_done || transfer.done {
                continue;
            }
            let (Some(stream), Some(body)) = (transfer.stream, &mut transfer.upload) else { continue };
            loop {
                let (chunk, fin) = match body.next_chunk() {
                    Ok(next) => next,
                    Err(e) => {
                        failed.push((index, format!("reading the upload: {e}")));
                        break;
                    }
                };
                match h3.send_body(&mut self.quic, stream, chunk, fin) {
                    Ok(written) => {
                        body.consume(written);
                        if fin && body.finished() {
                            transfer.upload_done = true;
                            break;
                        }
                        if written == 0 {
                            break;
                        }
                    }
                    Err(quiche::h3::Error::Done | quiche::h3::Error::StreamBlocked) => break,
                    Err(e) => {
                        failed.push((index, format!("sending the upload: {e}")));
                        break;
                    }
                }
            }
        }
        for (index, error) in failed {
            self.complete(index, Some(error), on_request);
        }
    }

    fn receive_h3(&mut self, on_request: &mut impl FnMut(&RequestReport)) {
        loop {
            let App::H3(h3) = &mut self.app else { return };
            let (stream, event) = match h3.poll(&mut self.quic) {
                Ok(polled) => polled,
                Err(quiche::h3::Error::Done) => return,
                Err(e) => {
                    self.fail_remaining(&format!("HTTP/3 error: {e}"));
                    let _ = self.quic.close(true, H3_INTERNAL_ERROR, b"HTTP/3 error");
                    return;
                }
            };
            let Some(&index) = self.streams.get(&stream) else { continue };
            match event {
                quiche::h3::Event::Headers { list, more_frames } => {
                    let transfer = &mut self.transfers[index];
                    transfer.first_byte.get_or_insert_with(Instant::now);
                    for header in &list {
                        match header.name() {
                            b":status" => {
                                transfer.status = std::str::from_utf8(header.value()).ok().and_then(|s| s.parse().ok())
                            }
                            b"content-length" => {
                                transfer.content_length =
                                    std::str::from_utf8(header.value()).ok().and_then(|s| s.parse().ok())
                            }
                            _ => {}
                        }
                    }
                    if !more_frames {
                        self.finish_response(index, on_request);
                    }
                }
                quiche::h3::Event::Data => {
                    let transfer = &mut self.transfers[index];
                    let mut error = None;
                    while let Ok(len) = h3.recv_body(&mut self.quic, stream, &mut self.scratch) {
                        transfer.bytes += len as u64;
                        if let Some(out) = &mut transfer.out {
                            if let Err(e) = out.write_all(&self.scratch[..len]) {
                                error = Some(format!("writing the download: {e}"));
                            }
                        }
                    }
                    if let Some(error) = error {
                        self.complete(index, Some(error), on_request);
                    }
                }
                quiche::h3::Event::Finished => self.finish_response(index, on_request),
                quiche::h3::Event::Reset(code) => {
                    self.complete(index, Some(format!("the server reset the stream (code 0x{code:x})")), on_request)
                }
                quiche::h3::Event::PriorityUpdate | quiche::h3::Event::GoAway => {}
            }
        }
    }

    fn receive_hq(&mut self, on_request: &mut impl FnMut(&RequestReport)) {
        let readable: Vec<u64> = self.quic.readable().collect();
        for stream in readable {
            let Some(&index) = self.streams.get(&stream) else { continue };
            loop {
                match self.quic.stream_recv(stream, &mut self.scratch) {
                    Ok((len, fin)) => {
                        let transfer = &mut self.transfers[index];
                        if len > 0 {
                            transfer.first_byte.get_or_insert_with(Instant::now);
                        }
                        transfer.bytes += len as u64;
                        if let Some(out) = &mut transfer.out {
                            if let Err(e) = out.write_all(&self.scratch[..len]) {
                                self.complete(index, Some(format!("writing the download: {e}")), on_request);
                                break;
                            }
                        }
                        if fin {
                            self.transfers[index].status = Some(200);
                            self.finish_response(index, on_request);
                            break;
                        }
                    }
                    Err(quiche::Error::Done) => break,
                    Err(quiche::Error::StreamReset(code)) => {
                        self.complete(
                            index,
                            Some(format!("the server reset the stream (code 0x{code:x}): no such file?")),
                            on_request,
                        );
                        break;
                    }
                    Err(e) => {
                        self.complete(index, Some(format!("reading the response: {e}")), on_request);
                        break;
                    }
                }
            }
        }
    }

    /// The response of transfer `index` is complete: checks it.
    fn finish_response(&mut self, index: usize, on_request: &mut impl FnMut(&RequestReport)) {
        let transfer = &mut self.transfers[index];
        let upload = transfer.upload.is_some();
        let error = match transfer.status {
            Some(200) | Some(201) if upload => None,
            Some(200) if !upload => match transfer.content_length {
                Some(expected) if expected != transfer.bytes => {
                    Some(format!("received {} bytes, content-length said {expected}", transfer.bytes))
                }
                _ => None,
            },
            Some(status) => Some(format!("HTTP status {status}")),
            None => Some("response without a status".to_string()),
        };
        let error = error.or_else(|| {
            let out = transfer.out.as_mut()?;
            out.flush().err().map(|e| format!("writing the download: {e}"))
        });
        self.complete(index, error, on_request);
    }

    /// Marks transfer `index` done (once).
    fn complete(&mut self, index: usize, error: Option<String>, on_request: &mut impl FnMut(&RequestReport)) {
        let transfer = &mut self.transfers[index];
        if transfer.done {
            return;
        }
        transfer.done = true;
        transfer.finished = Some(Instant::now());
        transfer.error = error;
        transfer.out = None;
        self.completed += 1;
        if let Some(stream) = transfer.stream {
            self.streams.remove(&stream);
        }
        let report = self.report(index);
        match &report.error {
            None => event!(Level::Debug, "request_done", conn = self.id, path = report.path, bytes = report.bytes),
            Some(error) => event!(Level::Warn, "request_failed", conn = self.id, path = report.path, error = error),
        }
        on_request(&report);
    }

    fn report(&self, index: usize) -> RequestReport {
        let transfer = &self.transfers[index];
        let bytes = match &transfer.upload {
            Some(body) => body.sent(),
            None => transfer.bytes,
        };
        RequestReport {
            connection: self.index,
            path: transfer.request.path.clone(),
            upload: transfer.request.upload.is_some(),
            bytes,
            elapsed: match (transfer.started, transfer.finished) {
                (Some(started), Some(finished)) => finished - started,
                (Some(started), None) => started.elapsed(),
                (None, _) => Duration::ZERO,
            },
            first_byte: transfer.started.zip(transfer.first_byte).map(|(started, first)| first - started),
            error: transfer.error.clone(),
        }
    }

    /// Fails every transfer not done yet with `reason`.
    fn fail_remaining(&mut self, reason: &str) {
        for transfer in self.transfers.iter_mut().filter(|transfer| !transfer.done && transfer.error.is_none()) {
            transfer.error = Some(reason.to_string());
        }
    }

    /// The connection closed: reports every transfer.
    fn finish(
        &mut self,
        config: &ClientConfig,
        reporting: &Reporting,
        on_request: &mut impl FnMut(&RequestReport),
    ) -> ConnectionReport {
        self.reported = true;
        let mut summary = Summary::of(&self.quic, "client", &self.id, self.plan.server, self.created.elapsed());
        summary.cc = config.cc.to_string();
        summary.offload = Some(self.socket.capabilities());
        let reason = summary
            .error
            .clone()
            .unwrap_or_else(|| "the connection closed before the response was complete".to_string());
        for index in 0..self.transfers.len() {
            if !self.transfers[index].done {
                let error = self.transfers[index].error.clone().unwrap_or_else(|| reason.clone());
                self.complete(index, Some(error), on_request);
            }
        }
        reporting.closed(&summary);
        event!(Level::Info, "connection_closed", conn = self.id, error = summary.error.as_deref().unwrap_or("-"));
        ConnectionReport {
            requests: (0..self.transfers.len()).map(|index| self.report(index)).collect(),
            summary,
            handshake: self.handshake,
            session: self.quic.session().map(<[u8]>::to_vec),
        }
    }
}

impl Transfer {
    /// Opens the output file and the upload, when the request is sent.
    fn open(&mut self) -> Result<(), String> {
        if let Sink::File(path) = &self.request.sink {
            let file = File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
            self.out = Some(BufWriter::with_capacity(256 * 1024, file));
        }
        if let Some(path) = &self.request.upload {
            let file = File::open(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
            let len = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?.len();
            self.upload = Some(Body::file(file, len));
        }
        Ok(())
    }
}
