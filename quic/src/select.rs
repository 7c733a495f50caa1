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

use flowshare_controllers::spec;
use flowshare_controllers::Params;
use flowshare_controllers::Spec;
use quiche::congestion::CongestionControlFactory;

use crate::adapter::QuicheController;

/// Selects `spec` for the connections made with `config`.
pub fn configure(config: &mut quiche::Config, spec: &Spec) {
    match spec {
        Spec::Reno => config.set_cc_algorithm(quiche::CongestionControlAlgorithm::Reno),
        Spec::Cubic => config.set_cc_algorithm(quiche::CongestionControlAlgorithm::CUBIC),
        _ => config.set_cc_factory(factory(spec.clone())),
    }
}

/// A factory that builds a [`QuicheController`] running `spec` for every path.
pub fn factory(spec: Spec) -> CongestionControlFactory {
    let name = spec.to_string();
    CongestionControlFactory::new(&name, move |params| {
        let params = Params {
            initial_window_packets: params.initial_congestion_window_packets,
            max_datagram_size: params.max_datagram_size,
            initial_rtt: params.initial_rtt,
        };
        Box::new(QuicheController::new(spec.clone(), params))
    })
}

/// Registers every flowshare algorithm with quiche's name registry. Safe to
/// call more than once.
pub fn register_with_quiche() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        for &algorithm in spec::ALGORITHMS {
            // quiche refuses its own names (reno, cubic); that is intended.
            let _ = quiche::congestion::register_congestion_control(algorithm, |text| {
                let spec: Spec = text.parse().ok()?;
                (!spec.is_quiche_builtin()).then(|| factory(spec))
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
