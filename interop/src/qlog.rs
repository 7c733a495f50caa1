//! qlog output: one file per connection, as quiche's own applications and
//! the interop runner expect, plus the flowshare controller's state.
//!
//! quiche writes its transport and HTTP/3 events itself (JSON-SEQ,
//! `QLOGDIR/{role}-{scid}.sqlog`). To those this module adds custom events
//! that qvis lists with the others:
//!
//! * `flowshare:controller_selected`: the spec and the policy rule chosen
//!   for the connection (server) or the `--cc` spec (client);
//! * `flowshare:controller_updated`: the controller's [`Snapshot`] (windows,
//!   rates, p, W_max, weight, ...), written whenever it differs from the
//!   last one written. Endpoints check after each batch of received and
//!   sent packets, not per packet, so one event stands for a batch;
//! * `flowshare:weight_updated`: a weight change and why.
//!
//! A server facing the open Internet bounds what its qlogs may take
//! ([`QlogBudget`]): a number of files and a number of bytes for all of
//! them together. A file stops at the first record that starts after the
//! bytes ran out, so every file ends with a whole record.

use std::fs::File;
use std::io;
use std::io::BufWriter;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use flowshare_controllers as controller;
use flowshare_controllers::Snapshot;
use qlog::events::EventImportance;
use qlog::events::JsonEvent;
use serde_json::json;
use serde_json::Map;
use serde_json::Value;

/// Starts the qlog of `conn` in `dir`, named after its source connection
/// ID, within `budget` if there is one.
pub fn start(
    conn: &mut quiche::Connection,
    dir: &Path,
    role: &str,
    budget: Option<&Arc<QlogBudget>>,
) -> io::Result<()> {
    if let Some(budget) = budget {
        if !budget.take_file() {
            return Err(io::Error::other("the qlog budget (files or bytes) is spent"));
        }
    }
    let id = hex(conn.source_id().as_ref());
    let file = BufWriter::new(File::create(dir.join(format!("{role}-{id}.sqlog")))?);
    let writer: Box<dyn io::Write + Send + Sync> = match budget {
        Some(budget) => Box::new(Budgeted { inner: file, budget: Arc::clone(budget), stopped: false }),
        None => Box::new(file),
    };
    conn.set_qlog(writer, format!("flowshare-{role} qlog"), format!("flowshare-{role} qlog id={id}"));
    Ok(())
}

/// What the qlogs of an endpoint may still take.
#[derive(Debug)]
pub struct QlogBudget {
    files: AtomicU64,
    bytes: AtomicU64,
}

impl QlogBudget {
    /// At most `files` files and `bytes` bytes in all.
    pub fn new(files: u64, bytes: u64) -> Arc<QlogBudget> {
        Arc::new(QlogBudget { files: AtomicU64::new(files), bytes: AtomicU64::new(bytes) })
    }

    /// Takes one file, if files and bytes are left.
    fn take_file(&self) -> bool {
        self.bytes.load(Ordering::Relaxed) > 0
            && self.files.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(1)).is_ok()
    }

    /// Takes `n` bytes (or what is left); false if none were left.
    fn take_bytes(&self, n: u64) -> bool {
        self.bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| (left > 0).then(|| left.saturating_sub(n)))
            .is_ok()
    }
}

/// JSON-SEQ record separator (RFC 7464), which qlog writes on its own
/// before each record.
const RECORD_SEPARATOR: u8 = 0x1e;

/// A qlog file that stops, at a record boundary, once the budget is spent.
struct Budgeted {
    inner: BufWriter<File>,
    budget: Arc<QlogBudget>,
    stopped: bool,
}

impl io::Write for Budgeted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.stopped {
            return Ok(buf.len());
        }
        let record_starts = buf.first() == Some(&RECORD_SEPARATOR);
        if !self.budget.take_bytes(buf.len() as u64) && record_starts {
            self.stopped = true;
            self.inner.flush()?;
            return Ok(buf.len());
        }
        self.inner.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Adds a custom event to `conn`'s qlog, if it has one.
pub fn event(conn: &mut quiche::Connection, name: &str, data: Value) {
    if let Some(streamer) = conn.qlog_streamer() {
        let event = JsonEvent { time: 0.0, importance: EventImportance::Core, name: name.to_string(), data };
        // The streamer stamps the time; a failed write only loses the event.
        let _ = streamer.add_event_now(event);
    }
}

/// Writes the controller's state to the qlog whenever it changes.
#[derive(Debug, Default)]
pub struct ControllerTrace {
    enabled: bool,
    last: Option<Snapshot>,
}

impl ControllerTrace {
    /// A trace that writes only if `enabled` (the connection has a qlog).
    pub fn new(enabled: bool) -> Self {
        ControllerTrace { enabled, last: None }
    }

    /// Starts writing: the connection's qlog has begun.
    pub fn enable(&mut self) {
        self.enabled = true;
    }

    /// Whether it writes: the connection has a qlog.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Compares the controller's state with the last one written, and
    /// writes it if it changed. Call after each batch of packets.
    pub fn observe(&mut self, conn: &mut quiche::Connection) {
        if !self.enabled {
            return;
        }
        let Some(controller) = flowshare_quic::controller(conn) else { return };
        let snapshot = controller.controller().snapshot();
        if self.last.as_ref() == Some(&snapshot) {
            return;
        }
        event(conn, "flowshare:controller_updated", snapshot_json(&snapshot));
        self.last = Some(snapshot);
    }
}

/// A snapshot as qlog event data; fields the algorithm does not have are
/// left out. Sizes in bytes, rates in bytes per second, times in ms.
pub fn snapshot_json(snapshot: &Snapshot) -> Value {
    // Destructured without `..` so that a new field cannot be forgotten here.
    let Snapshot { algorithm, phase, congestion_window, ssthresh, pacing_rate, weight, state } = snapshot;
    let mut data = Map::new();
    data.insert("algorithm".into(), json!(algorithm));
    data.insert("phase".into(), json!(phase));
    data.insert("congestion_window".into(), json!(congestion_window));
    let mut optional = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            data.insert(key.into(), value);
        }
    };
    optional("ssthresh", ssthresh.map(|v| json!(v)));
    optional("pacing_rate", pacing_rate.map(|v| json!(v)));
    optional("weight", weight.map(|v| json!(v)));
    for (name, value) in state {
        let value = match *value {
            controller::Value::Integer(v) => json!(v),
            controller::Value::Real(v) => json!(v),
            controller::Value::Duration(v) => json!(v.as_secs_f64() * 1e3),
            controller::Value::Name(v) => json!(v),
        };
        data.insert((*name).into(), value);
    }
    Value::Object(data)
}

/// Lowercase hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(text, "{byte:02x}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spent_budget_stops_every_file_at_a_record_boundary_and_refuses_new_files() {
        use std::io::Write as _;
        let dir = flowshare_quic::cert::ScratchDir::new("qlog-budget").unwrap();
        let budget = QlogBudget::new(2, 25);
        assert!(budget.take_file());
        let path = dir.path().join("a.sqlog");
        let mut file = Budgeted {
            inner: BufWriter::new(File::create(&path).unwrap()),
            budget: Arc::clone(&budget),
            stopped: false,
        };
        for record in ["{\"n\":1}", "{\"n\":2}", "{\"n\":3}", "{\"n\":4}"] {
            // As the qlog streamer writes: separator, record, newline.
            file.write_all(&[RECORD_SEPARATOR]).unwrap();
            file.write_all(record.as_bytes()).unwrap();
            file.write_all(b"\n").unwrap();
        }
        file.flush().unwrap();
        // 9 bytes a record: the third one starts with 7 bytes left and is
        // written whole; the fourth finds none and is not written.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "\u{1e}{\"n\":1}\n\u{1e}{\"n\":2}\n\u{1e}{\"n\":3}\n");
        assert!(!budget.take_file(), "no bytes left, so no new file");
        assert!(QlogBudget::new(1, 100).take_file());
        let one = QlogBudget::new(1, 100);
        assert!(one.take_file());
        assert!(!one.take_file(), "one file only");
    }

    #[test]
    fn snapshot_events_leave_out_what_the_algorithm_does_not_have() {
        let snapshot = Snapshot {
            algorithm: "multcp",
            phase: "congestion_avoidance",
            congestion_window: 12_000,
            weight: Some(4.0),
            state: vec![("base_rtt", controller::Value::Duration(std::time::Duration::from_micros(1500)))],
            ..Snapshot::default()
        };
        let data = snapshot_json(&snapshot);
        assert_eq!(data["algorithm"], "multcp");
        assert_eq!(data["congestion_window"], 12_000);
        assert_eq!(data["weight"], 4.0);
        assert_eq!(data["base_rtt"], 1.5);
        assert!(data.get("w_max").is_none());
        assert!(data.get("pacing_rate").is_none());
    }
}
