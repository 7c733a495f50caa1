//! HTTP/3 requests on a server connection: files for GET and HEAD, bodies
//! stored (or counted) for PUT and POST.

use std::io::Write as _;

use super::config::ServerConfig;
use super::connection::App;
use super::connection::RequestHead;
use super::connection::Response;
use super::connection::ServerConn;
use super::connection::Upload;
use crate::event;
use crate::http::Body;
use crate::http::H3_INTERNAL_ERROR;
use crate::log::Level;

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
                quiche::h3::Event::PriorityUpdate | quiche::h3::Event::GoAway => {}
            }
        }
    }

    fn h3_request(&mut self, config: &ServerConfig, stream: u64, list: &[quiche::h3::Header], more_frames: bool) {
        self.requests += 1;
        let request = RequestHead::from_h3(list);
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
                self.responses.insert(stream, Response { headers: Some(headers), body });
                if more_frames {
                    // A GET with a body: the body is read and dropped.
                    self.uploads.insert(stream, Upload { sink: None, received: 0, respond: false });
                }
            }
            "PUT" | "POST" => {
                let sink = config.upload_sink(&request.path);
                self.uploads.insert(stream, Upload { sink, received: 0, respond: true });
                if !more_frames {
                    self.finish_upload(stream);
                }
            }
            _ => {
                let headers =
                    vec![quiche::h3::Header::new(b":status", b"405"), quiche::h3::Header::new(b"content-length", b"0")];
                self.responses.insert(stream, Response { headers: Some(headers), body: Body::bytes(Vec::new()) });
            }
        }
    }

    fn receive_upload(&mut self, stream: u64) {
        let App::H3(h3) = &mut self.app else { return };
        self.scratch.resize(64 * 1024, 0);
        loop {
            match h3.recv_body(&mut self.quic, stream, &mut self.scratch) {
                Ok(len) => {
                    if let Some(upload) = self.uploads.get_mut(&stream) {
                        upload.received += len as u64;
                        if let Some(sink) = &mut upload.sink {
                            if sink.write_all(&self.scratch[..len]).is_err() {
                                upload.sink = None;
                            }
                        }
                    }
                }
                Err(_) => return,
            }
        }
    }

    fn finish_upload(&mut self, stream: u64) {
        let Some(mut upload) = self.uploads.remove(&stream) else { return };
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
        self.responses.insert(stream, Response { headers: Some(headers), body });
    }
}
