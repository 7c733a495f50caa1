//! `flowshare get`: downloads (and uploads) over HTTP/3 or hq-interop, over
//! one connection or several.
//!
//! Each [`Plan`] is one connection from its own UDP socket, so that the
//! connections of an MCompound group (`--cc mcompound:group=ID`) can be
//! bound to different local addresses and take different paths. A
//! connection sends all its requests at once, as far as the server's stream
//! limit allows, and closes when every response is complete. The client's
//! controller matters for uploads, where the client is the sender: every
//! packet leaves when quiche's pacer says, as on the server.
//!
//! `plan.rs` turns the command line's URLs into plans, `connection.rs` runs
//! one connection, and [`run`] drives them all from one event loop.

mod config;
mod connection;
mod plan;
mod request_line;

use std::time::Duration;
use std::time::Instant;

use mio::Events;
use mio::Poll;

pub use config::ClientConfig;
use connection::ClientConn;
pub use connection::ConnectionReport;
pub use connection::RequestReport;
pub use plan::Fetch;
pub use plan::Plan;
pub use plan::Request;
pub use plan::Schedule;
pub use plan::Sink;

use crate::io::log_offload;
use crate::io::RecvBatch;
use crate::log::Level;

/// Longest the loop sleeps without a timer.
const MAX_IDLE_WAIT: Duration = Duration::from_millis(500);

/// Runs the plans' connections concurrently; `on_request` sees each
/// request as it completes. Fails only when the client cannot start.
pub fn run(
    config: &ClientConfig,
    plans: Vec<Plan>,
    on_request: impl FnMut(&RequestReport),
) -> Result<Vec<ConnectionReport>, String> {
    resume(config, plans, None, on_request)
}

/// Runs the plans' connections as [`run`] does, each resuming the TLS
/// session `session` (from an earlier connection's report) if given.
pub fn resume(
    config: &ClientConfig,
    plans: Vec<Plan>,
    session: Option<&[u8]>,
    mut on_request: impl FnMut(&RequestReport),
) -> Result<Vec<ConnectionReport>, String> {
    let mut quiche_config = config.quiche_config()?;
    let reporting = config.endpoint.open("client")?;
    let mut poll = Poll::new().map_err(|e| format!("poll: {e}"))?;
    let mut conns = Vec::with_capacity(plans.len());
    for (index, plan) in plans.into_iter().enumerate() {
        conns.push(ClientConn::connect(index, plan, config, &mut quiche_config, &poll, &reporting, session)?);
    }

    if let Some(offload) = conns.first().map(ClientConn::offload) {
        log_offload(Level::Debug, offload);
    }
    let mut events = Events::with_capacity(1024);
    let mut received = RecvBatch::new();
    let deadline = Instant::now() + config.time_limit;
    let mut reports: Vec<Option<ConnectionReport>> = conns.iter().map(|_| None).collect();
    let mut open = conns.len();
    while open > 0 {
        if Instant::now() >= deadline {
            for conn in &mut conns {
                conn.give_up(config.time_limit);
            }
        }
        let wake = conns.iter().filter_map(ClientConn::wake).min();
        flowshare_quic::pacing::wait(&mut poll, &mut events, wake, MAX_IDLE_WAIT).map_err(|e| format!("poll: {e}"))?;
        for event in events.iter() {
            if let Some(conn) = conns.get_mut(event.token().0) {
                conn.receive(&mut received).map_err(|e| format!("receiving: {e}"))?;
            }
        }
        let now = Instant::now();
        for (index, conn) in conns.iter_mut().enumerate() {
            if let Some(report) = conn.advance(now, config, &reporting, &mut on_request)? {
                reports[index] = Some(report);
                open -= 1;
            }
        }
    }
    Ok(reports.into_iter().flatten().collect())
}

/// What a run of batches did.
#[derive(Clone, Copy, Debug)]
pub struct Totals {
    /// Connections opened.
    pub connections: usize,
    /// Requests that failed.
    pub failures: usize,
    /// Body bytes received (downloads) or sent (uploads).
    pub bytes: u64,
    /// From the first connection to the close of the last.
    pub elapsed: Duration,
}

/// Runs `batches` (a [`Schedule`]'s) one after the other, each as [`run`]
/// does; `on_request` sees every request as it completes.
pub fn run_batches(
    config: &ClientConfig,
    batches: Vec<Vec<Plan>>,
    mut on_request: impl FnMut(&RequestReport),
) -> Result<Totals, String> {
    let started = Instant::now();
    let mut totals = Totals { connections: 0, failures: 0, bytes: 0, elapsed: Duration::ZERO };
    let mut session = None;
    for plans in batches {
        totals.connections += plans.len();
        let resumed = if config.resume { session.take() } else { None };
        for report in resume(config, plans, resumed.as_deref(), &mut on_request)? {
            for request in &report.requests {
                totals.bytes += request.bytes;
                totals.failures += usize::from(request.error.is_some());
            }
            session = session.or(report.session);
        }
    }
    totals.elapsed = started.elapsed();
    Ok(totals)
}
