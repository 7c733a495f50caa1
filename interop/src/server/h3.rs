//! HTTP/3 requests on a server connection: files for GET and HEAD, bodies
//! stored (or counted) for PUT and POST.

use std::io::Write as _;

use super::config::ServerConfig;
use super::connection::App;
use super::connection::Response;
use super::connection::ServerConn;
use super::connection::Upload;
use super::request;
use super::request::RequestHead;
use super::request::H3_MESSAGE_ERROR;
use crate::event;
use crate::http::Body;
use crate::http::H3_INTERNAL_ERROR;
use crate::log::Level;
use crate::policy;

impl ServerConn {
    pub(super) fn serve_h3(&mut self, config: &ServerConfig) {
        loop {
            let App::H3(h3) = &mut self.app else { return };
            let (stream, event) = match h3.poll(&mut self.quic) {
                Ok(polled) => polled,
                Err(quiche::h3::Error::Done) => return,
                Err(e) => {
                    event!(Level::Warn, "http3_error", conn = self.id, error = e);
                    let _ = self.quic.close(true, H3_INTERNAL_ERROR, b"HTTP/3 error");
                    return;
                }
            };
            match event {
                quiche::h3::Event::Headers { list, more_frames } => self.h3_request(config, stream, &list, more_frames),
                quiche::h3::Event::Data => self.receive_upload(stream),
                quiche::h3::Event::Finished => self.finish_upload(stream),
                quiche::h3::Event::Reset(_) => self.abandon(stream),
                quiche::h3::Event::PriorityUpdate => self.reprioritize(stream),
                quiche::h3::Event::GoAway => {}
            }
        }
    }

    fn h3_request(&mut self, config: &ServerConfig, stream: u64, list: &[quiche::h3::Header], more_frames: bool) {
        self.requests += 1;
        let request = match RequestHead::from_h3(list) {
            Ok(request) => request,
            Err(reason) => {
                self.reject_malformed(stream, &reason);
                return;
            }
        };
        event!(Level::Debug, "request", conn = self.id, stream = stream, method = request.method, path = request.path);
        match request.method.as_str() {
            "GET" | "HEAD" => {
                let (status, body) = config.open_file(&request.path);
                let mut headers = vec![
                    quiche::h3::Header::new(b":status", status.to_string().as_bytes()),
                    quiche::h3::Header::new(b"server", b"flowshare"),
                    quiche::h3::Header::new(b"content-length", body.len().to_string().as_bytes()),
                ];
                if status != 200 {
                    headers.push(quiche::h3::Header::new(b"content-type", b"text/plain"));
                }
                let body = if request.method == "HEAD" { Body::bytes(Vec::new()) } else { body };
                if status == 200 {
                    self.track_response(stream, &request, body.len());
                }
                let priority = self.request_priority(&request);
                self.responses.insert(stream, Response { headers: Some(headers), priority, body });
                if more_frames {
                    // A GET with a body: the body is read and dropped.
                    let upload = Upload { sink: None, received: 0, expected: request.content_length, respond: false };
                    self.uploads.insert(stream, upload);
                }
            }
            "PUT" | "POST" if self.quic.is_in_early_data() => {
                // RFC 8470: an unsafe request in replayable early data is
                // refused; the client repeats it after the handshake.
                let headers =
                    vec![quiche::h3::Header::new(b":status", b"425"), quiche::h3::Header::new(b"content-length", b"0")];
                let (headers, body) = (Some(headers), Body::bytes(Vec::new()));
                self.responses.insert(stream, Response { headers, priority: request::h3_priority(None), body });
                self.uploads.insert(stream, Upload { sink: None, received: 0, expected: None, respond: false });
            }
            "PUT" | "POST" => {
                let sink = config.upload_sink(&request.path);
                let upload = Upload { sink, received: 0, expected: request.content_length, respond: true };
                self.uploads.insert(stream, upload);
                if !more_frames {
                    self.finish_upload(stream);
                }
            }
            _ => {
                let headers =
                    vec![quiche::h3::Header::new(b":status", b"405"), quiche::h3::Header::new(b"content-length", b"0")];
                let (headers, body) = (Some(headers), Body::bytes(Vec::new()));
                self.responses.insert(stream, Response { headers, priority: request::h3_priority(None), body });
            }
        }
    }

    /// A malformed request is a stream error of type H3_MESSAGE_ERROR (RFC
    /// 9114, section 4.1.2): the stream is reset both ways, nothing served.
    fn reject_malformed(&mut self, stream: u64, reason: &str) {
        event!(Level::Info, "request_malformed", conn = self.id, stream = stream, reason = reason);
        self.uploads.remove(&stream);
        self.abandon(stream);
        let _ = self.quic.stream_shutdown(stream, quiche::Shutdown::Read, H3_MESSAGE_ERROR);
        let _ = self.quic.stream_shutdown(stream, quiche::Shutdown::Write, H3_MESSAGE_ERROR);
    }

    fn receive_upload(&mut self, stream: u64) {
        self.scratch.resize(64 * 1024, 0);
        loop {
            let App::H3(h3) = &mut self.app else { return };
            let Ok(len) = h3.recv_body(&mut self.quic, stream, &mut self.scratch) else { return };
            let Some(upload) = self.uploads.get_mut(&stream) else { continue };
            upload.received += len as u64;
            if upload.expected.is_some_and(|expected| upload.received > expected) {
                self.reject_malformed(stream, "more body than content-length");
                return;
            }
            if let Some(sink) = &mut upload.sink {
                if sink.write_all(&self.scratch[..len]).is_err() {
                    upload.sink = None;
                }
            }
        }
    }

    fn finish_upload(&mut self, stream: u64) {
        let Some(mut upload) = self.uploads.remove(&stream) else { return };
        if upload.expected.is_some_and(|expected| upload.received != expected) {
            self.reject_malformed(stream, "less body than content-length");
            return;
        }
        let stored = upload.sink.as_mut().is_none_or(|sink| sink.flush().is_ok());
        if !upload.respond {
            return;
        }
        event!(Level::Info, "upload_received", conn = self.id, stream = stream, bytes = upload.received);
        let (status, text) = if stored {
            (b"201".as_slice(), format!("{}\n", upload.received))
        } else {
            (b"500".as_slice(), "cannot store\n".into())
        };
        let body = Body::bytes(text.into_bytes());
        let headers = vec![
            quiche::h3::Header::new(b":status", status),
            quiche::h3::Header::new(b"server", b"flowshare"),
            quiche::h3::Header::new(b"content-length", body.len().to_string().as_bytes()),
        ];
        self.responses.insert(stream, Response { headers: Some(headers), priority: request::h3_priority(None), body });
    }

    /// The priority of the response to `request` (see [`request::priority`]).
    fn request_priority(&self, request: &RequestHead) -> quiche::h3::Priority {
        request::h3_priority(policy::Request::header(request, "priority"))
    }

    /// A PRIORITY_UPDATE frame for `stream`: applies to its response from
    /// now on, whether its headers went out already or not.
    fn reprioritize(&mut self, stream: u64) {
        let App::H3(h3) = &mut self.app else { return };
        let Ok(field) = h3.take_last_priority_update(stream) else { return };
        let (urgency, incremental) = request::priority(std::str::from_utf8(&field).ok());
        if let Some(response) = self.responses.get_mut(stream) {
            response.priority = quiche::h3::Priority::new(urgency, incremental);
        }
        let _ = self.quic.stream_priority(stream, urgency, incremental);
    }
}
