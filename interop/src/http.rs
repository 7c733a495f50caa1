//! What the server and the client share about requests: the two
//! application protocols, URLs, paths on disk and file bodies.

use std::fmt;
use std::fs::File;
use std::io;
use std::io::Read;
use std::path::Component;
use std::path::Path;
use std::path::PathBuf;

/// `H3_INTERNAL_ERROR` (RFC 9114, section 8.1), with which an endpoint
/// abandons an HTTP/3 stream or connection.
pub const H3_INTERNAL_ERROR: u64 = 0x102;

/// The application protocols both endpoints speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/3 (RFC 9114), through quiche's h3 module.
    H3,
    /// `hq-interop`: HTTP/0.9 over QUIC, which the interop runner uses for
    /// every test case but `http3`. A request is `GET /path\r\n` on a
    /// bidirectional stream; the response is the file's bytes.
    Hq,
}

impl Protocol {
    /// Every protocol, in the server's order of preference.
    pub const ALL: [Protocol; 2] = [Protocol::H3, Protocol::Hq];

    /// The ALPN identifier.
    pub fn alpn(self) -> &'static [u8] {
        match self {
            Protocol::H3 => b"h3",
            Protocol::Hq => b"hq-interop",
        }
    }

    /// The protocol of an ALPN identifier.
    pub fn from_alpn(alpn: &[u8]) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|protocol| protocol.alpn() == alpn)
    }

    /// The application error code of a clean close.
    pub fn no_error(self) -> u64 {
        match self {
            // H3_NO_ERROR (RFC 9114, section 8.1).
            Protocol::H3 => 0x100,
            Protocol::Hq => 0,
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(std::str::from_utf8(self.alpn()).unwrap_or("?"))
    }
}

impl std::str::FromStr for Protocol {
    type Err = String;

    fn from_str(text: &str) -> Result<Protocol, String> {
        Protocol::from_alpn(text.as_bytes())
            .ok_or_else(|| format!("{text:?} is not a protocol (accepted: h3, hq-interop)"))
    }
}

/// The protocol a server speaking `Protocol::ALL` selects for a client
/// offering the ALPN extension `extension` (a TLS ALPN extension body):
/// quiche takes the client's first protocol that it supports.
pub fn negotiated_alpn(extension: &[u8]) -> Option<Protocol> {
    // u16 list length, then u8-length-prefixed names.
    let list = extension.get(2..)?;
    let mut rest = list;
    while let Some((&len, tail)) = rest.split_first() {
        let name = tail.get(..usize::from(len))?;
        if let Some(protocol) = Protocol::from_alpn(name) {
            return Some(protocol);
        }
        rest = &tail[usize::from(len)..];
    }
    None
}

/// An `https://host[:port]/path` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// Host name or address literal (without brackets).
    pub host: String,
    /// Port, 443 when absent.
    pub port: u16,
    /// Path with query, starting with `/`.
    pub path: String,
}

impl Url {
    /// Parses an `https` URL.
    pub fn parse(text: &str) -> Result<Url, String> {
        let rest =
            text.strip_prefix("https://").ok_or_else(|| format!("{text:?}: only https:// URLs are supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(index) => (&rest[..index], &rest[index..]),
            None => (rest, "/"),
        };
        let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
            let (host, after) =
                bracketed.split_once(']').ok_or_else(|| format!("{text:?}: unclosed '[' in the host"))?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(format!("{text:?}: no host"));
        }
        let port = match port {
            None => 443,
            Some(port) => port.parse().map_err(|_| format!("{text:?}: port {port:?} is not a number in 0-65535"))?,
        };
        Ok(Url { host: host.to_string(), port, path: path.to_string() })
    }

    /// `host:port` as in an HTTP/3 `:authority`.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The server name to send in TLS: the host, unless it is an address.
    pub fn server_name(&self) -> Option<&str> {
        self.host.parse::<std::net::IpAddr>().is_err().then_some(self.host.as_str())
    }

    /// The file name a download of this URL is saved under: the last path
    /// segment, without the query, `index.html` for a directory.
    pub fn file_name(&self) -> Result<String, String> {
        let path = self.path.split(['?', '#']).next().unwrap_or("");
        let name = path.rsplit('/').next().unwrap_or("");
        match name {
            "" => Ok("index.html".to_string()),
            "." | ".." => Err(format!("{}: no file name in the path", self.path)),
            name => Ok(name.to_string()),
        }
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "https://{}{}", self.authority(), self.path)
    }
}

/// The file under `root` that `path` names, refusing any `..`, root or
/// prefix component. Directories resolve to their `index.html`. This is
/// the lexical check only: symbolic links can still lead out of `root`,
/// which [`open_beneath`] refuses.
pub fn resolve(root: &Path, path: &str) -> Option<PathBuf> {
    let path = path.split(['?', '#']).next().unwrap_or("");
    let relative = Path::new(path.trim_start_matches('/'));
    if relative.components().any(|component| !matches!(component, Component::Normal(_))) {
        return None;
    }
    let full = root.join(relative);
    if full.is_dir() {
        return Some(full.join("index.html"));
    }
    Some(full)
}

/// Opens the regular file `path` for reading if it lies beneath `root`
/// after every symbolic link is resolved; `root` must be canonical
/// ([`Path::canonicalize`]). The file is opened by its canonical path and
/// with `O_NOFOLLOW`, so a link put in place after the check is refused
/// too. Returns the file and its size.
pub fn open_beneath(root: &Path, path: &Path) -> io::Result<(File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let canonical = path.canonicalize()?;
    if !canonical.starts_with(root) {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, "outside the root"));
    }
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&canonical)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok((file, metadata.len()))
}

/// Creates (or truncates) the file `path` for writing if its directory lies
/// beneath `root` after every symbolic link is resolved (`root` canonical);
/// a symbolic link in the file's own place is refused (`O_NOFOLLOW`).
pub fn create_beneath(root: &Path, path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let refused = || io::Error::new(io::ErrorKind::PermissionDenied, "outside the root");
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else { return Err(refused()) };
    let parent = parent.canonicalize()?;
    if !parent.starts_with(root) {
        return Err(refused());
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(parent.join(name))
}

/// Size of the chunks a file body is read in.
const CHUNK_BYTES: usize = 64 * 1024;

/// A response or upload body read from a file (or held in memory) in
/// chunks, for writers that accept only part of what they are offered.
#[derive(Debug)]
pub struct Body {
    source: Option<File>,
    /// Bytes not yet read from `source`.
    unread: u64,
    chunk: Vec<u8>,
    /// The unsent part of `chunk`.
    start: usize,
    end: usize,
    /// Total size.
    len: u64,
    /// Bytes consumed so far.
    sent: u64,
}

impl Body {
    /// The body of `file`, whose size is `len`.
    pub fn file(file: File, len: u64) -> Body {
        let capacity = usize::try_from(len).unwrap_or(usize::MAX).min(CHUNK_BYTES);
        Body { source: Some(file), unread: len, chunk: vec![0; capacity], start: 0, end: 0, len, sent: 0 }
    }

    /// A body held in memory.
    pub fn bytes(bytes: Vec<u8>) -> Body {
        let len = bytes.len() as u64;
        let end = bytes.len();
        Body { source: None, unread: 0, chunk: bytes, start: 0, end, len, sent: 0 }
    }

    /// Total size.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the body has no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes consumed so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// The next unsent bytes (empty when all were sent), reading the file
    /// as needed, and whether they are the last.
    pub fn next_chunk(&mut self) -> io::Result<(&[u8], bool)> {
        if self.start == self.end && self.unread > 0 {
            if let Some(file) = &mut self.source {
                let want = usize::try_from(self.unread).unwrap_or(usize::MAX).min(self.chunk.len());
                file.read_exact(&mut self.chunk[..want])?;
                self.unread -= want as u64;
                self.start = 0;
                self.end = want;
            }
        }
        Ok((&self.chunk[self.start..self.end], self.unread == 0))
    }

    /// Marks `n` bytes of [`Body::next_chunk`] as sent.
    pub fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
        self.sent += n as u64;
    }

    /// Whether every byte was sent.
    pub fn finished(&self) -> bool {
        self.sent == self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_host_port_and_path() {
        let url = Url::parse("https://server4:443/abc?x=1").unwrap();
        assert_eq!((url.host.as_str(), url.port, url.path.as_str()), ("server4", 443, "/abc?x=1"));
        assert_eq!(url.file_name().unwrap(), "abc");
        assert_eq!(url.server_name(), Some("server4"));
        let url = Url::parse("https://[::1]:4433").unwrap();
        assert_eq!((url.host.as_str(), url.port, url.path.as_str()), ("::1", 4433, "/"));
        assert_eq!(url.authority(), "[::1]:4433");
        assert_eq!(url.server_name(), None);
        assert_eq!(url.file_name().unwrap(), "index.html");
        assert_eq!(Url::parse("https://127.0.0.1/x").unwrap().port, 443);
        assert!(Url::parse("http://a/b").is_err());
        assert!(Url::parse("https://a:http/b").is_err());
        assert!(Url::parse("https:///b").is_err());
    }

    #[test]
    fn paths_cannot_leave_the_root() {
        let root = Path::new("/srv/www");
        assert_eq!(resolve(root, "/a/b.bin"), Some(PathBuf::from("/srv/www/a/b.bin")));
        assert_eq!(resolve(root, "/../etc/passwd"), None);
        assert_eq!(resolve(root, "/a/../../etc/passwd"), None);
        assert_eq!(resolve(root, "/a/./b"), Some(PathBuf::from("/srv/www/a/b")), "'.' components are dropped by Path");
    }

    /// A root with a file, a directory, and symbolic links pointing inside
    /// and outside it, next to a secret outside the root.
    fn linked_root() -> (flowshare_quic::cert::ScratchDir, PathBuf) {
        use std::os::unix::fs::symlink;
        let dir = flowshare_quic::cert::ScratchDir::new("root-test").unwrap();
        let root = dir.path().join("www");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/inside.txt"), b"inside").unwrap();
        std::fs::write(dir.path().join("secret.txt"), b"secret").unwrap();
        symlink(dir.path().join("secret.txt"), root.join("escape.txt")).unwrap();
        symlink(dir.path(), root.join("up")).unwrap();
        symlink(root.join("sub/inside.txt"), root.join("alias.txt")).unwrap();
        let root = root.canonicalize().unwrap();
        (dir, root)
    }

    fn read_beneath(root: &Path, path: &str) -> Option<String> {
        let candidate = resolve(root, path)?;
        let (mut file, _) = open_beneath(root, &candidate).ok()?;
        let mut text = String::new();
        file.read_to_string(&mut text).ok()?;
        Some(text)
    }

    #[test]
    fn symbolic_links_out_of_the_root_are_refused_and_links_within_it_served() {
        let (_dir, root) = linked_root();
        assert_eq!(read_beneath(&root, "/sub/inside.txt").as_deref(), Some("inside"));
        assert_eq!(read_beneath(&root, "/alias.txt").as_deref(), Some("inside"), "a link within the root");
        assert_eq!(read_beneath(&root, "/escape.txt"), None, "a link to a file outside");
        assert_eq!(read_beneath(&root, "/up/secret.txt"), None, "a link to a directory outside");
        assert_eq!(read_beneath(&root, "/../secret.txt"), None, "traversal");
        assert_eq!(read_beneath(&root, "/sub/../../secret.txt"), None, "traversal through a directory");
        assert_eq!(read_beneath(&root, "/sub"), None, "a directory without index.html");
    }

    #[test]
    fn uploads_cannot_be_written_through_links_out_of_the_root() {
        let (dir, root) = linked_root();
        assert!(create_beneath(&root, &root.join("sub/new.bin")).is_ok());
        assert!(create_beneath(&root, &root.join("up/new.bin")).is_err(), "a directory link outside");
        assert!(create_beneath(&root, &root.join("escape.txt")).is_err(), "a file link (O_NOFOLLOW)");
        assert_eq!(std::fs::read(dir.path().join("secret.txt")).unwrap(), b"secret");
        assert!(!dir.path().join("new.bin").exists());
    }

    #[test]
    fn negotiation_takes_the_clients_first_supported_protocol() {
        let extension = |names: &[&str]| {
            let mut list = Vec::new();
            for name in names {
                list.push(name.len() as u8);
                list.extend_from_slice(name.as_bytes());
            }
            let mut body = (list.len() as u16).to_be_bytes().to_vec();
            body.extend(list);
            body
        };
        assert_eq!(negotiated_alpn(&extension(&["h3"])), Some(Protocol::H3));
        assert_eq!(negotiated_alpn(&extension(&["spdy", "hq-interop", "h3"])), Some(Protocol::Hq));
        assert_eq!(negotiated_alpn(&extension(&["h2"])), None);
        assert_eq!(negotiated_alpn(&[0, 5, 9]), None, "truncated");
    }

    #[test]
    fn a_body_hands_out_a_file_in_chunks_until_every_byte_is_consumed() {
        let dir = flowshare_quic::cert::ScratchDir::new("body-test").unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let mut body = Body::file(File::open(&path).unwrap(), data.len() as u64);
        let mut out = Vec::new();
        loop {
            let (chunk, _) = body.next_chunk().unwrap();
            if chunk.is_empty() {
                break;
            }
            // Take at most 1000 bytes at a time, like a blocked stream.
            let n = chunk.len().min(1000);
            out.extend_from_slice(&chunk[..n]);
            body.consume(n);
        }
        assert!(body.finished());
        assert_eq!(out, data);
    }
}
