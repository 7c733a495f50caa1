//! `flowshare testbed equation`: the packet sizes it counts rates in are
//! the endpoints' own, and bad input gets one line.

use std::process::Command;

use flowshare_testbed::equation::QUIC_WIRE_BYTES;

/// The report turns a QUIC flow's bytes into packets with this size; a
/// change of the endpoints' datagram would otherwise skew every QUIC
/// flow's rate against the equation without a sign.
#[test]
fn quic_packets_are_counted_at_the_endpoints_datagram_size_plus_ipv4_and_udp() {
    assert_eq!(QUIC_WIRE_BYTES, (flowshare_quic::pacing::MAX_DATAGRAM_SIZE + 20 + 8) as f64);
}

#[test]
fn a_directory_without_runs_gets_a_one_line_error() {
    let empty = std::env::temp_dir().join(format!("flowshare-equation-cli-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("a writable temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_flowshare"))
        .args(["testbed", "equation"])
        .arg(&empty)
        .output()
        .expect("flowshare runs");
    std::fs::remove_dir_all(&empty).expect("the temp dir");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no summary.json under"), "{stderr}");
}
