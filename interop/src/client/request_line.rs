//! An hq-interop request line (`GET /path\r\n`) on its way into quiche.
//!
//! `stream_send` may take only part of the line when the connection's send
//! capacity or the stream's flow control is short, which happens under
//! loss once many requests are in flight. What quiche took is on the
//! stream for good: the rest must follow on the same stream, never the
//! whole line again (that is how the server came to read
//! `GET /m1GET /m1394` in the interop runner's multiplexing test).

/// A request line and how much of it quiche has taken.
#[derive(Debug)]
pub(super) struct RequestLine {
    stream: u64,
    line: Vec<u8>,
    /// Bytes of `line` quiche has accepted.
    written: usize,
}

impl RequestLine {
    /// The request for `path` on `stream`.
    pub(super) fn new(stream: u64, path: &str) -> RequestLine {
        RequestLine { stream, line: format!("GET {path}\r\n").into_bytes(), written: 0 }
    }

    /// The stream the line goes on.
    pub(super) fn stream(&self) -> u64 {
        self.stream
    }

    /// Hands quiche the unsent rest of the line, with FIN; true once quiche
    /// has all of it. `Err(StreamLimit)` means the stream could not be
    /// opened yet and nothing was sent.
    pub(super) fn write(&mut self, quic: &mut quiche::Connection) -> Result<bool, quiche::Error> {
        while self.written < self.line.len() {
            match quic.stream_send(self.stream, &self.line[self.written..], true) {
                Ok(0) | Err(quiche::Error::Done) => return Ok(false),
                Ok(accepted) => self.written += accepted,
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Pipe;

    #[test]
    fn a_partially_accepted_request_line_is_continued_not_repeated() {
        // The server lets each request stream carry 8 bytes until it reads
        // them: a 31-byte line goes in four pieces.
        let mut pipe = Pipe::hq(|server| server.set_initial_max_stream_data_bidi_remote(8));
        let path = "/bountiful-sparkling-lemon.bin";
        let mut line = RequestLine::new(0, path);
        let expected = format!("GET {path}\r\n").into_bytes();
        assert!(!line.write(&mut pipe.client).expect("first write"), "only part of the line fits");
        assert_eq!(line.written, 8);

        let mut received = Vec::new();
        let mut fin = false;
        for _ in 0..20 {
            line.write(&mut pipe.client).expect("write");
            pipe.exchange();
            let mut buffer = [0u8; 64];
            while let Ok((len, end)) = pipe.server.stream_recv(0, &mut buffer) {
                received.extend_from_slice(&buffer[..len]);
                fin |= end;
            }
            // The server's MAX_STREAM_DATA opens the window again.
            pipe.exchange();
            if fin {
                break;
            }
        }
        assert!(fin, "the whole line arrived with FIN: {:?}", String::from_utf8_lossy(&received));
        assert_eq!(String::from_utf8_lossy(&received), String::from_utf8_lossy(&expected), "sent once, in order");
        assert!(line.write(&mut pipe.client).expect("done"), "nothing left to send");
    }
}
