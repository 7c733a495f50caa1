//! Structured logs: one `key=value` line per event on stderr (logfmt).
//!
//! ```text
//! ts=1718000000.123456 level=info role=server event=connection_accepted conn=3fa1c2d4 peer=127.0.0.1:50312
//! ```
//!
//! Lines are easy to grep and to load into anything that reads logfmt.
//! Events are named in snake case; every field is a key. Values containing
//! spaces, quotes or `=` are quoted. Per-connection summaries (`--stats`)
//! are not logs: they go to stdout, see [`crate::stats`].

use std::fmt;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::AtomicU8;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::SystemTime;

/// How much to log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Failures that end a connection or the process.
    Error = 1,
    /// Problems the process recovers from (a rejected policy reload).
    Warn = 2,
    /// Connections, requests, weight changes, reloads.
    Info = 3,
    /// Per-stream detail.
    Debug = 4,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }
}

impl std::str::FromStr for Level {
    type Err = String;

    fn from_str(text: &str) -> Result<Level, String> {
        match text {
            "error" => Ok(Level::Error),
            "warn" => Ok(Level::Warn),
            "info" => Ok(Level::Info),
            "debug" => Ok(Level::Debug),
            _ => Err(format!("{text:?} is not a log level (accepted: error, warn, info, debug)")),
        }
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);
static ROLE: OnceLock<&'static str> = OnceLock::new();

/// Sets the level and the role (`server`, `client`) printed on every line.
/// The role can be set once per process.
pub fn init(level: Level, role: &'static str) {
    LEVEL.store(level as u8, Ordering::Relaxed);
    let _ = ROLE.set(role);
}

/// Whether events at `level` are written.
pub fn enabled(level: Level) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
}

/// Writes one event. Use the [`event!`](crate::event) macro, which skips
/// formatting when the level is off.
pub fn write(level: Level, event: &str, fields: &[(&str, &dyn fmt::Display)]) {
    let mut line = String::with_capacity(128);
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let _ = write!(line, "ts={}.{:06} level={}", now.as_secs(), now.subsec_micros(), level.name());
    if let Some(role) = ROLE.get() {
        let _ = write!(line, " role={role}");
    }
    let _ = write!(line, " event={event}");
    for (key, value) in fields {
        line.push(' ');
        line.push_str(key);
        line.push('=');
        push_value(&mut line, &value.to_string());
    }
    line.push('\n');
    // A closed stderr must not take the server down.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Appends `value`, quoted when logfmt needs it.
pub(crate) fn push_value(line: &mut String, value: &str) {
    let needs_quotes = value.is_empty() || value.chars().any(|c| c == ' ' || c == '"' || c == '=' || c.is_control());
    if !needs_quotes {
        line.push_str(value);
        return;
    }
    line.push('"');
    for c in value.chars() {
        match c {
            '"' => line.push_str("\\\""),
            '\\' => line.push_str("\\\\"),
            '\n' => line.push_str("\\n"),
            c if c.is_control() => {
                let _ = write!(line, "\\u{{{:x}}}", c as u32);
            }
            c => line.push(c),
        }
    }
    line.push('"');
}

/// `text` with its control characters escaped (`\n`, `\u{1b}`, ...), so
/// that a message echoing what a user or a peer wrote stays on one line.
pub fn one_line(text: &str) -> String {
    let mut line = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            line.extend(c.escape_default());
        } else {
            line.push(c);
        }
    }
    line
}

/// Logs an event: `event!(Level::Info, "connection_accepted", conn = id, peer = addr)`.
#[macro_export]
macro_rules! event {
    ($level:expr, $name:expr $(, $key:ident = $value:expr)* $(,)?) => {
        if $crate::log::enabled($level) {
            $crate::log::write($level, $name, &[$((stringify!($key), &$value as &dyn ::std::fmt::Display)),*]);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_escapes_control_characters_only() {
        assert_eq!(one_line("cc \"a\nb\"\t:x"), "cc \"a\\nb\"\\t:x");
        assert_eq!(one_line("plain: text"), "plain: text");
    }

    #[test]
    fn values_with_spaces_quotes_or_equals_are_quoted_and_escaped() {
        let mut line = String::new();
        push_value(&mut line, "multcp:n=4");
        assert_eq!(line, "\"multcp:n=4\"");
        line.clear();
        push_value(&mut line, "plain");
        assert_eq!(line, "plain");
        line.clear();
        push_value(&mut line, "a \"b\"\nc");
        assert_eq!(line, "\"a \\\"b\\\"\\nc\"");
        line.clear();
        push_value(&mut line, "");
        assert_eq!(line, "\"\"");
    }
}
