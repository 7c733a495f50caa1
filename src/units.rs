//! Parsing of the quantities users type: sizes, rates and durations.
//!
//! Every parser returns a one-line error naming what it expected, for clap's
//! `value_parser`.

use std::time::Duration;

fn split_number(text: &str) -> Result<(f64, &str), String> {
    let text = text.trim();
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(end);
    let value: f64 = number.parse().map_err(|_| format!("{text:?} does not start with a number"))?;
    if !value.is_finite() {
        return Err(format!("{text:?} is not a finite number"));
    }
    Ok((value, unit.trim()))
}

/// A size in bytes: `1500`, `64K`, `20M`, `1G` (powers of 1000; `KiB`,
/// `MiB`, `GiB` for powers of 1024).
pub fn bytes(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text)?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("{text:?}: unknown size unit {unit:?} (accepted: B, K, M, G, KiB, MiB, GiB)")),
    };
    let bytes = value * scale;
    if bytes < 1.0 {
        return Err(format!("{text:?}: a size must be at least 1 byte"));
    }
    Ok(bytes as u64)
}

/// A rate in bits per second: `800kbit`, `20mbit`, `1gbit`, or with `bps`.
pub fn bits_per_second(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text)?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "bit" | "bps" => 1.0,
        "k" | "kbit" | "kbps" => 1e3,
        "m" | "mbit" | "mbps" => 1e6,
        "g" | "gbit" | "gbps" => 1e9,
        _ => return Err(format!("{text:?}: unknown rate unit {unit:?} (accepted: bit, kbit, mbit, gbit)")),
    };
    let rate = value * scale;
    if rate < 1000.0 {
        return Err(format!("{text:?}: a rate must be at least 1kbit"));
    }
    Ok(rate as u64)
}

/// A duration: `20ms`, `1.5s`, `250us`; a bare number is milliseconds.
pub fn duration(text: &str) -> Result<Duration, String> {
    let (value, unit) = split_number(text)?;
    let seconds = match unit {
        "" | "ms" => value / 1e3,
        "s" => value,
        "us" => value / 1e6,
        _ => return Err(format!("{text:?}: unknown time unit {unit:?} (accepted: us, ms, s)")),
    };
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_rates_and_durations_parse_with_their_units() {
        assert_eq!(bytes("20M"), Ok(20_000_000));
        assert_eq!(bytes("64KiB"), Ok(65_536));
        assert_eq!(bytes("1500"), Ok(1500));
        assert_eq!(bits_per_second("20mbit"), Ok(20_000_000));
        assert_eq!(bits_per_second("1.5Gbit"), Ok(1_500_000_000));
        assert_eq!(duration("20ms"), Ok(Duration::from_millis(20)));
        assert_eq!(duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration("20"), Ok(Duration::from_millis(20)));
    }

    #[test]
    fn bad_quantities_are_one_line_errors() {
        for error in [bytes("lots"), bytes("3 parsecs"), bytes("0"), bits_per_second("10 furlongs")] {
            let message = error.unwrap_err();
            assert!(!message.contains('\n'), "{message}");
        }
        assert!(duration("5 fortnights").unwrap_err().contains("accepted: us, ms, s"));
    }
}
