//! hq-interop requests on a server connection: a `GET /path` line per
//! bidirectional stream, answered with the file's bytes.

use super::config::ServerConfig;
use super::connection::App;
use super::connection::Response;
use super::connection::ServerConn;
use super::request::RequestHead;
use crate::event;
use crate::log::Level;

/// Longest hq-interop request line accepted.
const MAX_HQ_REQUEST: usize = 8 * 1024;

impl ServerConn {
    pub(super) fn serve_hq(&mut self, config: &ServerConfig) {
        let mut readable = std::mem::take(&mut self.stream_ids);
        readable.clear();
        readable.extend(self.quic.readable());
        for &stream in &readable {
            self.scratch.resize(MAX_HQ_REQUEST, 0);
            let mut complete = false;
            loop {
                match self.quic.stream_recv(stream, &mut self.scratch) {
                    Ok((len, fin)) => {
                        let App::Hq(lines) = &mut self.app else { return };
                        let line = lines.entry(stream).or_default();
                        line.extend_from_slice(&self.scratch[..len]);
                        complete |= fin || line.contains(&b'\n');
                        if line.len() > MAX_HQ_REQUEST {
                            let _ = self.quic.stream_shutdown(stream, quiche::Shutdown::Read, 0x1);
                            complete = false;
                            lines.remove(&stream);
                            break;
                        }
                    }
                    Err(quiche::Error::Done) => break,
                    Err(_) => {
                        let App::Hq(lines) = &mut self.app else { return };
                        lines.remove(&stream);
                        break;
                    }
                }
            }
            if !complete || self.responses.contains(stream) {
                continue;
            }
            let App::Hq(lines) = &mut self.app else { return };
            let Some(line) = lines.remove(&stream) else { continue };
            self.requests += 1;
            let (status, body, request) = match RequestHead::from_hq_line(&line) {
                Ok(request) => {
                    let (status, body) = config.open_file(&request.path);
                    (status, body, request)
                }
                Err(reason) => {
                    event!(Level::Info, "request_malformed", conn = self.id, stream = stream, reason = reason);
                    let _ = self.quic.stream_shutdown(stream, quiche::Shutdown::Write, 0x4);
                    continue;
                }
            };
            event!(
                Level::Debug,
                "request",
                conn = self.id,
                stream = stream,
                method = "GET",
                path = request.path,
                status = status
            );
            if status != 200 {
                // hq-interop has no status: a missing file resets the stream.
                let _ = self.quic.stream_shutdown(stream, quiche::Shutdown::Write, 0x4);
                continue;
            }
            self.track_response(stream, &request, body.len());
            // hq streams keep quiche's default priority, which is
            // incremental: responses share the connection round robin.
            self.responses.insert(stream, Response { headers: None, priority: Default::default(), body });
        }
        self.stream_ids = readable;
    }
}
