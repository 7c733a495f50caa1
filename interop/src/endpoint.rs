//! What the server and the client set up alike: the transport parameters
//! they offer, and what they report (a qlog per connection, the TLS key
//! log, the `--stats` line at close).

use std::fs::File;
use std::fs::OpenOptions;
use std::io;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::event;
use crate::io::MAX_DATAGRAM_SIZE;
use crate::log::Level;
use crate::qlog;
use crate::qlog::QlogBudget;
use crate::stats::Summary;

/// Connection- and stream-level flow control windows offered to the peer.
/// quiche grows them up to its own maxima as a transfer proceeds.
const INITIAL_MAX_DATA: u64 = 16 << 20;
const INITIAL_MAX_STREAM_DATA: u64 = 4 << 20;

/// Unidirectional streams the peer may open: HTTP/3 needs three of its own
/// (control, QPACK encoder and decoder), and hq-interop none.
const INITIAL_MAX_STREAMS_UNI: u64 = 100;

/// The options the server and the client share.
#[derive(Clone, Debug)]
pub struct EndpointOptions {
    /// Write one qlog per connection here.
    pub qlog_dir: Option<PathBuf>,
    /// Append TLS secrets here (NSS key log format).
    pub keylog: Option<PathBuf>,
    /// Print a stats line per connection at close.
    pub stats: bool,
    /// Connections idle this long are closed.
    pub idle_timeout: Duration,
}

impl EndpointOptions {
    /// Takes `$QLOGDIR` and `$SSLKEYLOGFILE` where the options are not
    /// given, as the interop runner and quiche's own applications use them.
    pub fn with_environment(self) -> EndpointOptions {
        let from_env = |option: Option<PathBuf>, variable: &str| {
            option.or_else(|| std::env::var_os(variable).filter(|value| !value.is_empty()).map(PathBuf::from))
        };
        EndpointOptions {
            qlog_dir: from_env(self.qlog_dir, "QLOGDIR"),
            keylog: from_env(self.keylog, "SSLKEYLOGFILE"),
            ..self
        }
    }

    /// Puts the transport settings both endpoints use on `config`; each
    /// adds its own application protocols and bidirectional stream limit.
    pub fn configure(&self, config: &mut quiche::Config) {
        config.set_max_idle_timeout(u64::try_from(self.idle_timeout.as_millis()).unwrap_or(u64::MAX));
        config.set_max_recv_udp_payload_size(MAX_DATAGRAM_SIZE);
        config.set_max_send_udp_payload_size(MAX_DATAGRAM_SIZE);
        config.set_initial_max_data(INITIAL_MAX_DATA);
        config.set_initial_max_stream_data_bidi_local(INITIAL_MAX_STREAM_DATA);
        config.set_initial_max_stream_data_bidi_remote(INITIAL_MAX_STREAM_DATA);
        config.set_initial_max_stream_data_uni(INITIAL_MAX_STREAM_DATA);
        config.set_initial_max_streams_uni(INITIAL_MAX_STREAMS_UNI);
        config.set_disable_active_migration(true);
        if self.keylog.is_some() {
            config.log_keys();
        }
    }

    /// Creates the qlog directory and opens the key log, for an endpoint
    /// in `role` (`server` or `client`, as qlog file names say).
    pub fn open(&self, role: &'static str) -> Result<Reporting, String> {
        if let Some(dir) = &self.qlog_dir {
            std::fs::create_dir_all(dir).map_err(|e| format!("qlog directory {}: {e}", dir.display()))?;
        }
        let keylog = self
            .keylog
            .as_ref()
            .map(|file| {
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(file)
                    .map_err(|e| format!("SSLKEYLOGFILE {}: {e}", file.display()))
            })
            .transpose()?;
        Ok(Reporting { role, qlog_dir: self.qlog_dir.clone(), qlog_budget: None, keylog, stats: self.stats })
    }
}

/// What an endpoint reports about its connections, set up from its
/// [`EndpointOptions`].
#[derive(Debug)]
pub struct Reporting {
    role: &'static str,
    qlog_dir: Option<PathBuf>,
    /// Files and bytes the qlogs may still take (unlimited without).
    qlog_budget: Option<Arc<QlogBudget>>,
    keylog: Option<File>,
    stats: bool,
}

impl Reporting {
    /// Bounds the qlogs of every connection from now on to `files` files
    /// and `bytes` bytes in all.
    pub fn limit_qlog(&mut self, files: u64, bytes: u64) {
        self.qlog_budget = Some(QlogBudget::new(files, bytes));
    }

    /// Starts the key log of a new connection whose short ID is `id`, and
    /// its qlog if `qlog`; true when it has a qlog.
    pub fn start(&self, quic: &mut quiche::Connection, id: &str, qlog: bool) -> bool {
        if let Some(file) = self.keylog.as_ref().and_then(|file| file.try_clone().ok()) {
            quic.set_keylog(Box::new(file));
        }
        qlog && self.start_qlog(quic, id)
    }

    /// Starts the qlog of a connection (when it is established, for a
    /// server that does not log handshakes); true when it has one. A qlog
    /// that cannot be created, or is over the budget, is logged and the
    /// connection goes on without one.
    pub fn start_qlog(&self, quic: &mut quiche::Connection, id: &str) -> bool {
        let Some(dir) = &self.qlog_dir else { return false };
        match qlog::start(quic, dir, self.role, self.qlog_budget.as_ref()) {
            Ok(()) => true,
            Err(e) => {
                event!(Level::Debug, "qlog_not_started", conn = id, error = e);
                false
            }
        }
    }

    /// Prints the `--stats` line of a closed connection, if asked to.
    pub fn closed(&self, summary: &Summary) {
        if self.stats {
            let mut stdout = io::stdout().lock();
            let _ = writeln!(stdout, "{summary}");
            let _ = stdout.flush();
        }
    }
}
