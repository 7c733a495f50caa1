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

use std::fs::File;
use std::io;
use std::io::BufWriter;
use std::path::Path;

use flowshare_controllers as controller;
use flowshare_controllers::Snapshot;
use qlog::events::EventImportance;
use qlog::events::JsonEvent;
use serde_json::json;
use serde_json::Map;
use serde_json::Value;

/// Starts the qlog of `conn` in `dir`, named after its source connection ID.
pub fn start(conn: &mut quiche::Connection, dir: &Path, role: &str) -> io::Result<()> {
    let id = hex(conn.source_id().as_ref());
    let file = File::create(dir.join(format!("{role}-{id}.sqlog")))?;
    conn.set_qlog(
        Box::new(BufWriter::new(file)),
        format!("flowshare-{role} qlog"),
        format!("flowshare-{role} qlog id={id}"),
    );
    Ok(())
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
