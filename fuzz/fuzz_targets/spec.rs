//! The controller spec parser with any text: a spec or an error, never a
//! panic; an accepted spec prints as text that parses to the same spec.
//!
//! (Spec errors echo field names as written, control characters
//! included, so they are not always one line: the policy and the command
//! line escape them, see `flowshare_interop::log::one_line`.)
#![no_main]

use flowshare_controllers::Spec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match text.parse::<Spec>() {
        Ok(spec) => {
            let printed = spec.to_string();
            let again: Spec = printed.parse().unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}: {e}"));
            assert_eq!(again, spec, "{text:?} printed as {printed:?}");
        }
        Err(e) => assert!(!flowshare_interop::log::one_line(&e.to_string()).contains('\n')),
    }
});
