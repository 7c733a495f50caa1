//! A request's head as the server reads it, and the rules of RFC 9114
//! section 4.1.2 and 4.3.1 that make an HTTP/3 request malformed. A
//! malformed request is a stream error of type H3_MESSAGE_ERROR: the
//! server resets the stream and serves nothing.

use quiche::h3::NameValue;

use crate::policy;

/// `H3_MESSAGE_ERROR` (RFC 9114, section 8.1).
pub(super) const H3_MESSAGE_ERROR: u64 = 0x10e;

/// The parts of a request the server looks at.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RequestHead {
    pub(super) method: String,
    pub(super) path: String,
    /// Regular fields, names lowercase as HTTP/3 requires.
    pub(super) headers: Vec<(String, String)>,
    /// The `content-length` field, if any.
    pub(super) content_length: Option<u64>,
}

/// Fields that HTTP/3 forbids because they are specific to one HTTP/1.1
/// connection (RFC 9114, section 4.2).
const CONNECTION_SPECIFIC: [&str; 5] = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"];

impl RequestHead {
    /// The request of an HTTP/3 HEADERS frame, or why it is malformed.
    pub(super) fn from_h3(list: &[quiche::h3::Header]) -> Result<RequestHead, String> {
        let mut method = None;
        let mut scheme = None;
        let mut authority = None;
        let mut path = None;
        let mut host = None;
        let mut headers = Vec::new();
        let mut content_length = None;
        let mut regular_seen = false;
        for field in list {
            let name = std::str::from_utf8(field.name()).map_err(|_| "a field name is not ASCII".to_string())?;
            let value = std::str::from_utf8(field.value()).map_err(|_| format!("{name}: the value is not UTF-8"))?;
            if value.bytes().any(|byte| matches!(byte, b'\0' | b'\r' | b'\n')) {
                return Err(format!("{name}: NUL, CR or LF in the value"));
            }
            if let Some(pseudo) = name.strip_prefix(':') {
                if regular_seen {
                    return Err(format!("pseudo-header {name} after a regular field"));
                }
                let slot = match pseudo {
                    "method" => &mut method,
                    "scheme" => &mut scheme,
                    "authority" => &mut authority,
                    "path" => &mut path,
                    // :protocol needs SETTINGS_ENABLE_CONNECT_PROTOCOL, which
                    // the server does not send; :status is a response's.
                    _ => return Err(format!("pseudo-header {name} is not a request's")),
                };
                if slot.replace(value).is_some() {
                    return Err(format!("pseudo-header {name} appears twice"));
                }
                continue;
            }
            regular_seen = true;
            if name.is_empty() || !name.bytes().all(is_lowercase_token_byte) {
                return Err(format!("field name {name:?} is not a lowercase token"));
            }
            if CONNECTION_SPECIFIC.contains(&name) {
                return Err(format!("connection-specific field {name}"));
            }
            match name {
                "te" if value != "trailers" => return Err(format!("te: {value:?} (only \"trailers\" is allowed)")),
                "host" => host = Some(value),
                "content-length" => {
                    let length =
                        value.parse::<u64>().map_err(|_| format!("content-length: {value:?} is not a length"))?;
                    if content_length.replace(length).is_some_and(|earlier| earlier != length) {
                        return Err("two different content-length values".into());
                    }
                }
                _ => {}
            }
            headers.push((name.to_string(), value.to_string()));
        }
        let method = method.ok_or("no :method")?;
        let path = if method == "CONNECT" {
            if scheme.is_some() || path.is_some() {
                return Err("CONNECT with :scheme or :path".into());
            }
            if authority.is_none_or(str::is_empty) {
                return Err("CONNECT without :authority".into());
            }
            String::new()
        } else {
            let scheme = scheme.ok_or("no :scheme")?;
            let path = path.ok_or("no :path")?;
            if path.is_empty() {
                return Err("empty :path".into());
            }
            if matches!(scheme, "http" | "https") {
                // Section 4.3.1: an authority, from :authority or host,
                // not empty, and the same in both.
                match (authority, host) {
                    (None, None) => return Err("no :authority and no host".into()),
                    (Some(""), _) | (_, Some("")) => return Err("empty :authority or host".into()),
                    (Some(a), Some(h)) if a != h => return Err("host differs from :authority".into()),
                    _ => {}
                }
            }
            path.to_string()
        };
        Ok(RequestHead { method: method.to_string(), path, headers, content_length })
    }

    /// The request of an hq-interop line, `GET /path` (the line ends at the
    /// first CR or LF; anything after it is ignored).
    pub(super) fn from_hq_line(line: &[u8]) -> Result<RequestHead, String> {
        let end = line.iter().position(|&byte| byte == b'\r' || byte == b'\n').unwrap_or(line.len());
        let text = std::str::from_utf8(&line[..end]).map_err(|_| "the request line is not UTF-8".to_string())?;
        let path = text.strip_prefix("GET ").map(str::trim).ok_or_else(|| format!("not a GET line: {text:?}"))?;
        if !path.starts_with('/') {
            return Err(format!("the path {path:?} does not start with /"));
        }
        Ok(RequestHead { method: "GET".into(), path: path.to_string(), headers: Vec::new(), content_length: None })
    }
}

/// The priority of a response (RFC 9218): the request's `priority` field
/// or PRIORITY_UPDATE, `u=N` (0 most urgent to 7) and `i` (incremental),
/// as `(urgency, incremental)`. What the client leaves out is the
/// server's default: urgency 3 as RFC 9218 has it, but incremental, so
/// that responses of equal urgency share the connection instead of going
/// one after the other in stream order (RFC 9218's default, which made a
/// 1 KB response wait for a 50 MB one requested just before it). Members
/// the server does not know, and malformed ones, are ignored.
pub(super) fn priority(field: Option<&str>) -> (u8, bool) {
    let (mut urgency, mut incremental) = (3u8, true);
    for member in field.unwrap_or("").split(',') {
        let member = member.trim();
        let (key, value) = member.split_once('=').unwrap_or((member, "?1"));
        // Parameters (";...") of a member are ignored.
        let value = value.split(';').next().unwrap_or("").trim();
        match key.trim() {
            "u" => {
                if let Ok(u) = value.parse::<u8>() {
                    urgency = u.min(7);
                }
            }
            "i" => match value {
                "?1" => incremental = true,
                "?0" => incremental = false,
                _ => {}
            },
            _ => {}
        }
    }
    (urgency, incremental)
}

/// [`priority`] as quiche takes it.
pub(super) fn h3_priority(field: Option<&str>) -> quiche::h3::Priority {
    let (urgency, incremental) = priority(field);
    quiche::h3::Priority::new(urgency, incremental)
}

/// The characters of an HTTP token (RFC 9110, section 5.6.2) but
/// uppercase letters, which HTTP/3 field names must not contain.
fn is_lowercase_token_byte(byte: u8) -> bool {
    byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

impl policy::Request for RequestHead {
    fn path(&self) -> &str {
        &self.path
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, value)| value.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(fields: &[(&str, &str)]) -> Result<RequestHead, String> {
        let list: Vec<quiche::h3::Header> =
            fields.iter().map(|(name, value)| quiche::h3::Header::new(name.as_bytes(), value.as_bytes())).collect();
        RequestHead::from_h3(&list)
    }

    const GOOD: [(&str, &str); 4] =
        [(":method", "GET"), (":scheme", "https"), (":authority", "localhost:4433"), (":path", "/a.bin")];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        GOOD.iter().chain(extra).copied().collect()
    }

    #[test]
    fn a_well_formed_request_is_read() {
        let request = head(&with(&[("user-agent", "t"), ("content-length", "0"), ("te", "trailers")])).unwrap();
        assert_eq!((request.method.as_str(), request.path.as_str()), ("GET", "/a.bin"));
        assert_eq!(request.content_length, Some(0));
        assert_eq!(policy::Request::header(&request, "user-agent"), Some("t"));
        let connect = head(&[(":method", "CONNECT"), (":authority", "example.com:443")]).unwrap();
        assert_eq!(connect.method, "CONNECT");
    }

    #[test]
    fn missing_pseudo_headers_make_a_request_malformed() {
        for missing in [":method", ":scheme", ":path"] {
            let fields: Vec<_> = GOOD.iter().copied().filter(|(name, _)| *name != missing).collect();
            assert!(head(&fields).is_err(), "without {missing}");
        }
        let fields: Vec<_> = GOOD.iter().copied().filter(|(name, _)| *name != ":authority").collect();
        assert!(head(&fields).is_err(), "https needs an authority");
        let mut fields = fields;
        fields.push(("host", "localhost:4433"));
        assert!(head(&fields).is_ok(), "host stands in for :authority");
        assert!(head(&[(":method", "CONNECT")]).is_err(), "CONNECT needs :authority");
    }

    #[test]
    fn duplicate_late_and_unknown_pseudo_headers_make_a_request_malformed() {
        assert!(head(&with(&[(":path", "/b")])).unwrap_err().contains("twice"));
        let late = [(":method", "GET"), (":scheme", "https"), ("accept", "*/*"), (":path", "/"), (":authority", "a")];
        assert!(head(&late).unwrap_err().contains("after a regular field"));
        assert!(head(&with(&[(":status", "200")])).unwrap_err().contains("not a request's"));
        let mut fields = GOOD.to_vec();
        fields.insert(0, (":protocol", "websocket"));
        assert!(head(&fields).is_err());
    }

    #[test]
    fn forbidden_fields_and_characters_make_a_request_malformed() {
        assert!(head(&with(&[("Accept", "*/*")])).is_err(), "uppercase name");
        assert!(head(&with(&[("connection", "close")])).is_err());
        assert!(head(&with(&[("transfer-encoding", "chunked")])).is_err());
        assert!(head(&with(&[("te", "gzip")])).is_err());
        assert!(head(&with(&[("x-a", "b\r\nx-b: c")])).is_err(), "CR LF in a value");
        assert!(head(&with(&[("content-length", "ten")])).is_err());
        assert!(head(&with(&[("content-length", "1"), ("content-length", "2")])).is_err());
        assert!(head(&with(&[("host", "other")])).is_err(), "host differs from :authority");
        let empty_path = [(":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "")];
        assert!(head(&empty_path).is_err());
    }

    #[test]
    fn priorities_default_to_urgency_3_incremental_and_follow_the_client() {
        assert_eq!(priority(None), (3, true));
        assert_eq!(priority(Some("u=1")), (1, true));
        assert_eq!(priority(Some("u=5, i=?0")), (5, false));
        assert_eq!(priority(Some("i, u=0")), (0, true));
        assert_eq!(priority(Some("u=9")), (7, true), "out of range: the lowest urgency");
        assert_eq!(priority(Some("u=x, i=maybe, foo=bar")), (3, true), "malformed members are ignored");
    }

    #[test]
    fn an_hq_line_is_read_up_to_its_end_and_nothing_after() {
        assert_eq!(RequestHead::from_hq_line(b"GET /m1\r\n").unwrap().path, "/m1");
        assert_eq!(RequestHead::from_hq_line(b"GET /m1").unwrap().path, "/m1", "FIN without CRLF");
        // What the multiplexing bug made the server read: the first line
        // alone is the request.
        assert_eq!(RequestHead::from_hq_line(b"GET /m1GET /m1394\r\n").unwrap().path, "/m1GET /m1394");
        assert_eq!(RequestHead::from_hq_line(b"GET /a\r\nGET /b\r\n").unwrap().path, "/a");
        assert!(RequestHead::from_hq_line(b"PUT /a\r\n").is_err());
        assert!(RequestHead::from_hq_line(b"GET a\r\n").is_err());
        assert!(RequestHead::from_hq_line(&[0xff, 0xfe]).is_err());
    }
}
