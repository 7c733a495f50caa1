//! The policy parser with any text: a policy or a one-line error naming
//! the file, never a panic; an accepted policy decides for any connection
//! and request without panicking, within its own cap.
#![no_main]

use std::net::IpAddr;

use flowshare_interop::policy::Hello;
use flowshare_interop::policy::Overrides;
use flowshare_interop::policy::Policy;
use flowshare_interop::policy::Request;
use libfuzzer_sys::fuzz_target;

struct Probe<'a>(&'a str);

impl Request for Probe<'_> {
    fn path(&self) -> &str {
        self.0
    }

    fn header(&self, _name: &str) -> Option<&str> {
        Some(self.0)
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Policy::parse(text, "fuzz.toml", &Overrides::default()) {
        Ok(policy) => {
            for client in ["10.1.2.3", "2001:db8::1"] {
                let client: IpAddr = client.parse().expect("address");
                let decision = policy.decide(&Hello { sni: Some(text), alpn: Some("h3"), client });
                assert!(decision.assignment.spec.weight() <= policy.max_weight() + 1e-9);
            }
            if let Some(weight) = policy.upgrade(&Probe(text)) {
                assert!(weight <= policy.max_weight() + 1e-9);
            }
        }
        Err(e) => {
            let message = e.to_string();
            assert!(message.starts_with("fuzz.toml"), "{message}");
            assert!(!message.contains('\n'), "one line: {message:?}");
        }
    }
});
