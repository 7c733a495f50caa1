//! The `flowshare` command's handling of bad input: one-line errors, no
//! panics.

use std::process::Command;

fn flowshare(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_flowshare")).args(args).output().expect("flowshare runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn bad_controller_spec_fails_with_one_line_naming_the_field_and_range() {
    let (ok, _, stderr) = flowshare(&["demo", "--cc", "multcp:n=-1"]);
    assert!(!ok);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("n = -1 is out of range; accepted range (0, 256]"), "{stderr}");
    assert!(!stderr.contains("panicked"));
}

#[test]
fn bad_quantities_fail_with_one_line() {
    for args in [
        ["demo", "--bytes", "lots"],
        ["demo", "--rate", "fast"],
        ["demo", "--delay", "5 fortnights"],
        ["get", "--ack-every", "0"],
    ] {
        let (ok, _, stderr) = flowshare(&args);
        assert!(!ok, "{args:?}");
        let errors: Vec<_> =
            stderr.lines().filter(|line| line.starts_with("error") || line.starts_with("flowshare:")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
    }
}

#[test]
fn lab_and_testbed_options_share_their_names_and_bad_values_fail_with_one_line() {
    // `--bandwidth` is the testbed's old spelling of `--bandwidths`.
    for args in [["lab", "gevros", "--bandwidth", "0"], ["lab", "gevros", "--bandwidths", "0"]] {
        let (ok, _, stderr) = flowshare(&args);
        assert!(!ok, "{args:?}");
        assert_eq!(stderr.trim(), "flowshare: --bandwidths 0 is out of range; accepted range (0, 1000000]");
    }
    let (ok, _, stderr) = flowshare(&["lab", "transient", "--queue", "fq"]);
    assert!(!ok);
    assert_eq!(stderr.trim(), "flowshare: --queue fq is not a queue (accepted: droptail, red)");
    for command in [["testbed", "run"], ["compare", "crosstraffic"]] {
        let (_, stdout, _) = flowshare(&[command[0], command[1], "--help"]);
        for flag in ["--controllers", "--n ", "--peers", "--m ", "--bandwidths", "--rtt", "--queue", "--warmup"] {
            assert!(stdout.contains(flag), "{command:?} --help lacks {flag}");
        }
    }
}
