//! How the server runs, and where requests find their files.

use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::endpoint::EndpointOptions;
use crate::http;
use crate::http::Body;
use crate::policy::PolicySource;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// UDP address to listen on; port 0 picks a free one.
    pub listen: SocketAddr,
    /// Files are served from here, and from nowhere else: the server makes
    /// the path canonical when it starts and refuses every file whose
    /// canonical path leaves it (symbolic links included).
    pub root: PathBuf,
    /// Certificate chain (PEM).
    pub cert: PathBuf,
    /// Private key (PEM).
    pub key: PathBuf,
    /// Where the policy comes from.
    pub policy: PolicySource,
    /// qlog, key log, stats and idle timeout, as the client has them.
    pub endpoint: EndpointOptions,
    /// Store uploaded bodies here (made canonical like `root`); without it
    /// they are counted and dropped.
    pub upload_dir: Option<PathBuf>,
    /// Concurrent bidirectional streams a client may open (quiche raises
    /// the limit as streams complete).
    pub max_streams: u64,
    /// What the server spends on clients before they prove themselves.
    pub limits: Limits,
    /// Accept 0-RTT early data from clients resuming a session. Requests
    /// in early data can be replayed by an attacker: GETs are safe to
    /// repeat, uploads are not and get 425 Too Early in 0-RTT (RFC 8470).
    pub early_data: bool,
    /// Packets due within this much of a send leave with it
    /// ([`flowshare_quic::pacing::PacedSender::with_slack`]); below the
    /// default [`flowshare_quic::pacing::PACING_SLACK`] the server's thread
    /// also sleeps to the microsecond.
    pub pacing_slack: Duration,
}

/// When the server asks a client to prove its address with a Retry
/// (RFC 9000, section 8.1.2) before it keeps any state for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryMode {
    /// Never: one round trip less, at the price of state per Initial.
    Never,
    /// Every new connection.
    Always,
    /// While this many connections or more are half open (not yet
    /// established): under a flood of spoofed Initials.
    Above(usize),
}

impl std::str::FromStr for RetryMode {
    type Err = String;

    /// `never`, `always`, or `auto` (above the default threshold).
    fn from_str(text: &str) -> Result<RetryMode, String> {
        match text {
            "never" => Ok(RetryMode::Never),
            "always" => Ok(RetryMode::Always),
            "auto" => Ok(RetryMode::Above(Limits::default().retry_above())),
            _ => Err(format!("{text:?} is not a retry mode (accepted: never, always, auto)")),
        }
    }
}

/// Bounds on what unvalidated, half-open and many connections may cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Address validation with Retry tokens.
    pub retry: RetryMode,
    /// Half-open connections (not yet established) beyond which new
    /// Initials are dropped.
    pub max_half_open: usize,
    /// Open connections per client IP address beyond which its new
    /// Initials are dropped.
    pub max_per_address: usize,
    /// Connections not established this long after their first Initial
    /// are dropped without a word.
    pub handshake_timeout: Duration,
    /// Write qlogs from the first Initial instead of from the end of the
    /// handshake (when spoofed or abandoned handshakes would fill the disk).
    pub qlog_handshakes: bool,
    /// qlog files the server writes at most.
    pub qlog_max_files: u64,
    /// Bytes all qlog files together take at most (each file ends at a
    /// whole record, so they may exceed it by one record each).
    pub qlog_max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            retry: RetryMode::Above(100),
            max_half_open: 1000,
            max_per_address: 256,
            handshake_timeout: Duration::from_secs(10),
            qlog_handshakes: false,
            qlog_max_files: 10_000,
            qlog_max_bytes: 1 << 30,
        }
    }
}

impl Limits {
    /// The half-open count above which `auto` asks for Retry tokens.
    pub fn retry_above(&self) -> usize {
        match self.retry {
            RetryMode::Above(threshold) => threshold,
            _ => 100,
        }
    }
}

impl ServerConfig {
    /// The file `path` names under the root, or an error response.
    pub(super) fn open_file(&self, path: &str) -> (u16, Body) {
        let not_found = || (404, Body::bytes(b"not found\n".to_vec()));
        let Some(file_path) = http::resolve(&self.root, path) else { return not_found() };
        match http::open_beneath(&self.root, &file_path) {
            Ok((file, len)) => (200, Body::file(file, len)),
            Err(_) => not_found(),
        }
    }

    /// Where the body of an upload to `path` goes: a new file under the
    /// upload directory, or nowhere (counted and dropped).
    pub(super) fn upload_sink(&self, path: &str) -> Option<BufWriter<File>> {
        let dir = self.upload_dir.as_ref()?;
        let name = http::resolve(dir, path)?;
        http::create_beneath(dir, &name).ok().map(BufWriter::new)
    }
}
