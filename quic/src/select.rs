//! Choosing flowshare controllers for quiche connections.
//!
//! * [`configure`] puts a spec on a [`quiche::Config`]: `reno` and `cubic`
//!   select quiche's own implementations, every other algorithm a factory
//!   that builds a [`QuicheController`] per path.
//! * [`register_with_quiche`] makes every flowshare algorithm selectable by
//!   name through quiche's own API, e.g.
//!   `config.set_cc_algorithm_name("multcp:n=4")` or the C function
//!   `quiche_config_set_cc_algorithm_name()`.
//! * [`controller`] finds the flowshare controller of a live connection.

use std::any::Any;
use std::sync::Once;

use flowshare_controllers::registry;
use flowshare_controllers::Params;
use flowshare_controllers::Spec;
use flowshare_controllers::Standard;
use quiche::congestion::CongestionControlFactory;

use crate::adapter::QuicheController;

/// What quiche runs for a spec: its own implementation of a standard
/// algorithm, or a flowshare controller from a factory.
pub enum Selection {
    /// quiche's own Reno, CUBIC or BBRv2.
    Builtin(quiche::CongestionControlAlgorithm),
    /// A flowshare controller.
    Factory(CongestionControlFactory),
}

/// What quiche should run for `spec`; with `record_trace`, a flowshare
/// controller records its events from its creation.
pub fn selection(spec: &Spec, record_trace: bool) -> Selection {
    match spec.standard() {
        Some(Standard::Reno) => Selection::Builtin(quiche::CongestionControlAlgorithm::Reno),
        Some(Standard::Cubic) => Selection::Builtin(quiche::CongestionControlAlgorithm::CUBIC),
        Some(Standard::Bbr) => Selection::Builtin(quiche::CongestionControlAlgorithm::Bbr2Gcongestion),
        None => Selection::Factory(factory(spec.clone(), record_trace)),
    }
}

/// Selects `spec` for the connections made with `config`.
pub fn configure(config: &mut quiche::Config, spec: &Spec) {
    configure_recording(config, spec, false);
}

/// Selects `spec` for the connections made with `config`; with
/// `record_trace`, every flowshare controller records its events from its
/// creation, the handshake's packets included, so that a replay of its
/// trace starts from the state the live controller started from.
pub fn configure_recording(config: &mut quiche::Config, spec: &Spec, record_trace: bool) {
    match selection(spec, record_trace) {
        Selection::Builtin(algorithm) => config.set_cc_algorithm(algorithm),
        Selection::Factory(factory) => config.set_cc_factory(factory),
    }
}

/// Selects `spec` for the connection whose handshake is running on `ssl`,
/// from a server's handshake callback (see quiche's
/// `set_cc_factory_in_handshake`).
pub fn configure_in_handshake(ssl: &mut boring::ssl::SslRef, spec: &Spec) -> quiche::Result<()> {
    match selection(spec, false) {
        Selection::Builtin(algorithm) => <quiche::Connection>::set_cc_algorithm_in_handshake(ssl, algorithm),
        Selection::Factory(factory) => <quiche::Connection>::set_cc_factory_in_handshake(ssl, factory),
    }
}

/// A factory that builds a [`QuicheController`] running `spec` for every
/// path; with `record_trace`, each records its events from its creation.
pub fn factory(spec: Spec, record_trace: bool) -> CongestionControlFactory {
    let name = spec.to_string();
    CongestionControlFactory::new(&name, move |params| {
        let params = Params {
            initial_window_packets: params.initial_congestion_window_packets,
            max_datagram_size: params.max_datagram_size,
            initial_rtt: params.initial_rtt,
        };
        let mut controller = QuicheController::new(spec.clone(), params);
        if record_trace {
            controller.record_trace();
        }
        Box::new(controller)
    })
}

/// Registers every flowshare algorithm with quiche's name registry. Safe to
/// call more than once.
pub fn register_with_quiche() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        for algorithm in registry::ALGORITHMS {
            // quiche refuses its own names (reno, cubic); that is intended.
            let _ = quiche::congestion::register_congestion_control(algorithm.name, |text| {
                let spec: Spec = text.parse().ok()?;
                spec.standard().is_none().then(|| factory(spec, false))
            });
        }
    });
}

/// The flowshare controller of `connection`'s active path, if it runs one.
pub fn controller(connection: &quiche::Connection) -> Option<&QuicheController> {
    let any: &dyn Any = connection.congestion_control()?;
    any.downcast_ref()
}

/// Mutable variant of [`controller`].
pub fn controller_mut(connection: &mut quiche::Connection) -> Option<&mut QuicheController> {
    let any: &mut dyn Any = connection.congestion_control_mut()?;
    any.downcast_mut()
}
