//! `flowshare eq`: prints one number for good arguments and one line of error
//! for bad ones.

use std::process::Command;
use std::process::Output;

fn flowshare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flowshare")).args(args).output().expect("the flowshare binary runs")
}

/// The single number printed on stdout.
fn rate(output: &Output) -> f64 {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout:?}");
    lines[0].trim().parse().unwrap_or_else(|_| panic!("not a number: {stdout:?}"))
}

/// The error printed on stderr: one line.
fn error(output: &Output) -> String {
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    stderr
}

fn assert_close(actual: f64, expected: f64) {
    assert!(((actual - expected) / expected).abs() < 1e-9, "{actual} vs {expected}");
}

const MULTFRC: [&str; 12] = ["eq", "multfrc", "--n", "4", "--rtt", "0.1", "--pe", "0.01", "--j", "1", "--rto", "0.4"];

#[test]
fn multfrc_prints_the_rate_of_n_flows_in_packets_per_second() {
    // 476.404 packets/s by python3 from the formulas in
    // controllers/src/equations.rs (its table has the same row).
    assert_close(rate(&flowshare(&MULTFRC)), 476.404_493_586_909);
    // With the packet size: bytes/s.
    let mut with_size = MULTFRC.to_vec();
    with_size.extend(["--s", "1000"]);
    assert_close(rate(&flowshare(&with_size)), 476_404.493_586_909);
}

#[test]
fn tcp_prints_the_rfc5348_rate() {
    // R = 0.1 s, p = 0.01, t_RTO = 0.4 s, b = 1: 112.332 packets/s by hand
    // (controllers/src/equations.rs, tcp_equation_matches_rfc5348_by_hand).
    let output = flowshare(&["eq", "tcp", "--rtt", "0.1", "--p", "0.01", "--rto", "0.4"]);
    assert_close(rate(&output), 112.332_234_362_993);
    let output = flowshare(&["eq", "tcp", "--rtt", "0.1", "--p", "0.01", "--rto", "0.4", "--s", "1200"]);
    assert_close(rate(&output), 1200.0 * 112.332_234_362_993);
}

#[test]
fn bad_values_give_one_line_naming_the_flag_and_the_range() {
    let with = |flag: &str, value: &str| {
        let mut args = MULTFRC.to_vec();
        let at = args.iter().position(|arg| *arg == flag).unwrap();
        args[at + 1] = value;
        flowshare(&args)
    };
    assert_eq!(error(&with("--pe", "2")), "flowshare: --pe 2: p_e must be in (0, 1]\n");
    assert!(error(&with("--pe", "0")).contains("p_e must be in (0, 1]"));
    assert!(error(&with("--pe", "abc")).contains("--pe \"abc\" is not a number: p_e must be in (0, 1]"));
    assert!(error(&with("--n", "0")).contains("--n 0: n must be in (0, 256]"));
    assert!(error(&with("--n", "-4")).contains("--n -4: n must be in (0, 256]"));
    assert!(error(&with("--j", "0.5")).contains("--j 0.5: j must be in [1, inf)"));
    assert!(error(&with("--rtt", "0")).contains("--rtt 0: the RTT in seconds must be in (0, inf)"));
    assert!(error(&with("--rto", "inf")).contains("--rto inf: t_RTO in seconds must be in (0, inf)"));
    let mut args = MULTFRC.to_vec();
    args.extend(["--b", "3"]);
    assert!(error(&flowshare(&args)).contains("--b 3: b must be in [1, 2]"));
    let output = flowshare(&["eq", "tcp", "--rtt", "0.1", "--p", "1.5", "--rto", "0.4"]);
    assert!(error(&output).contains("--p 1.5: p must be in (0, 1]"));
    let output = flowshare(&["eq", "tcp", "--rtt", "0.1", "--p", "0.1", "--rto", "0.4", "--s", "1.5"]);
    assert!(error(&output).contains("--s 1.5: the packet size must be a whole number of bytes"));
}
