//! Choosing a connection's controller inside its TLS handshake.
//!
//! BoringSSL's certificate-selection callback sees the ClientHello (server
//! name, offered protocols); the event loop puts the client's address
//! where the callback finds it before each `recv` of a handshaking
//! connection; the policy decides, and
//! [`flowshare_quic::configure_in_handshake`] installs the controller
//! before quiche builds the connection's recovery state. The loop then
//! collects the decision to admit the connection with.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;
use std::sync::RwLock;

use boring::ssl::ExtensionType;
use boring::ssl::NameType;
use boring::ssl::SelectCertError;
use boring::ssl::SslContextBuilder;
use boring::ssl::SslMethod;

use crate::http;
use crate::policy::Decision;
use crate::policy::Hello;
use crate::policy::Policy;

/// The policy in force: the handshake callback reads it, a reload
/// replaces it, and connections keep the one they were admitted under.
#[derive(Debug)]
pub(super) struct PolicyCell(RwLock<Arc<Policy>>);

impl PolicyCell {
    pub(super) fn new(policy: Policy) -> Arc<PolicyCell> {
        Arc::new(PolicyCell(RwLock::new(Arc::new(policy))))
    }

    pub(super) fn current(&self) -> Arc<Policy> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub(super) fn replace(&self, policy: Policy) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(policy);
    }
}

/// What the handshake callback and the event loop exchange while a
/// connection's `recv` runs the handshake.
#[derive(Debug, Default)]
struct Slot {
    /// The address of the client whose packet is being processed.
    client: Option<SocketAddr>,
    /// The policy's decision, with the policy that made it.
    decision: Option<(Decision, Arc<Policy>)>,
}

/// The event loop's side of the handshake callback.
#[derive(Debug)]
pub(super) struct Handshake {
    slot: Arc<Mutex<Slot>>,
}

impl Handshake {
    /// A TLS context whose handshakes choose their controller from the
    /// policy in `policy`, and the handle through which the loop takes
    /// part.
    pub(super) fn tls_context(policy: &Arc<PolicyCell>) -> Result<(SslContextBuilder, Handshake), String> {
        let slot = Arc::new(Mutex::new(Slot::default()));
        let mut tls = SslContextBuilder::new(SslMethod::tls()).map_err(|e| format!("TLS context: {e}"))?;
        let policy = Arc::clone(policy);
        let callback_slot = Arc::clone(&slot);
        tls.set_select_certificate_callback(move |mut hello| {
            let sni = hello.servername(NameType::HOST_NAME).map(str::to_string);
            let protocol = hello
                .get_extension(ExtensionType::APPLICATION_LAYER_PROTOCOL_NEGOTIATION)
                .and_then(http::negotiated_alpn);
            let mut slot = lock(&callback_slot);
            let Some(client) = slot.client else { return Err(SelectCertError::ERROR) };
            let policy = policy.current();
            let alpn = protocol.map(|protocol| protocol.to_string());
            let decision = policy.decide(&Hello { sni: sni.as_deref(), alpn: alpn.as_deref(), client: client.ip() });
            flowshare_quic::configure_in_handshake(hello.ssl_mut(), &decision.assignment.spec)
                .map_err(|_| SelectCertError::ERROR)?;
            slot.decision = Some((decision, policy));
            Ok(())
        });
        Ok((tls, Handshake { slot }))
    }

    /// Tells the callback that the next `recv` carries a packet of `client`.
    pub(super) fn expect(&self, client: SocketAddr) {
        lock(&self.slot).client = Some(client);
    }

    /// The decision the callback made during the last `recv`, if it ran.
    pub(super) fn decision(&self) -> Option<(Decision, Arc<Policy>)> {
        lock(&self.slot).decision.take()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
