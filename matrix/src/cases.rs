//! The interop runner's test cases, as its documentation and test
//! definitions describe them: what the endpoints are told (TESTCASE), the
//! simulator's scenario, the files, the time limit and what is checked.

pub const KB: u64 = 1 << 10;
pub const MB: u64 = 1 << 20;

/// How a test case's outcome is judged, beyond the files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Exactly this many handshakes (distinct server SCIDs in Initials).
    Handshakes(usize),
    /// One handshake and at least two ClientHellos (the first one lost to
    /// the long RTT's timer).
    LongRtt,
    /// One handshake and a server stream limit of at most 1,000.
    Multiplexing,
    /// One handshake and no Retry.
    HandshakeNoRetry,
}

#[derive(Clone, Debug)]
pub struct TestCase {
    /// The runner's name.
    pub name: &'static str,
    /// The runner's abbreviation in its result table.
    pub abbreviation: &'static str,
    /// What the endpoints are told (the runner's `testname`).
    pub endpoint: &'static str,
    /// The simulator's SCENARIO, with `{bw}` for the bandwidth.
    pub scenario: &'static str,
    /// Sizes of the files the client fetches.
    pub files: Vec<u64>,
    /// Seconds the client gets (the runner's timeout).
    pub timeout_s: u64,
    pub check: Check,
    /// Measurements repeat and report goodput.
    pub repetitions: usize,
    /// Runs with two iperf containers (TCP cross traffic).
    pub iperf: bool,
}

impl TestCase {
    pub fn is_measurement(&self) -> bool {
        self.repetitions > 0
    }
}

const SIMPLE: &str = "simple-p2p --delay=15ms --bandwidth={bw} --queue=25";

/// Every test case the matrix knows, in the runner's order.
pub fn all() -> Vec<TestCase> {
    let case = |name, abbreviation, endpoint, scenario, files: Vec<u64>, timeout_s, check| TestCase {
        name,
        abbreviation,
        endpoint,
        scenario,
        files,
        timeout_s,
        check,
        repetitions: 0,
        iperf: false,
    };
    vec![
        case("handshake", "H", "handshake", SIMPLE, vec![KB], 60, Check::HandshakeNoRetry),
        case("transfer", "DC", "transfer", SIMPLE, vec![2 * MB, 3 * MB, 5 * MB], 60, Check::Handshakes(1)),
        case(
            "longrtt",
            "LR",
            "handshake",
            "simple-p2p --delay=750ms --bandwidth={bw} --queue=25",
            vec![KB],
            60,
            Check::LongRtt,
        ),
        case("multiplexing", "M", "transfer", SIMPLE, vec![32; 1999], 60, Check::Multiplexing),
        case("http3", "3", "http3", SIMPLE, vec![5 * KB, 10 * KB, 500 * KB], 60, Check::Handshakes(1)),
        case(
            "blackhole",
            "B",
            "transfer",
            "blackhole --delay=15ms --bandwidth={bw} --queue=25 --on=5s --off=2s",
            vec![10 * MB],
            60,
            Check::Handshakes(1),
        ),
        case(
            "handshakeloss",
            "L1",
            "multiconnect",
            "drop-rate --delay=15ms --bandwidth={bw} --queue=25 --rate_to_server=30 --rate_to_client=30",
            vec![KB; 50],
            300,
            Check::Handshakes(50),
        ),
        case(
            "transferloss",
            "L2",
            "transfer",
            "drop-rate --delay=15ms --bandwidth={bw} --queue=25 --rate_to_server=2 --rate_to_client=2",
            vec![2 * MB],
            60,
            Check::Handshakes(1),
        ),
        case(
            "handshakecorruption",
            "C1",
            "multiconnect",
            "corrupt-rate --delay=15ms --bandwidth={bw} --queue=25 --rate_to_server=30 --rate_to_client=30",
            vec![KB; 50],
            300,
            Check::Handshakes(50),
        ),
        case(
            "transfercorruption",
            "C2",
            "transfer",
            "corrupt-rate --delay=15ms --bandwidth={bw} --queue=25 --rate_to_server=2 --rate_to_client=2",
            vec![2 * MB],
            60,
            Check::Handshakes(1),
        ),
        TestCase {
            repetitions: 5,
            ..case("goodput", "G", "transfer", SIMPLE, vec![10 * MB], 60, Check::Handshakes(1))
        },
        TestCase {
            repetitions: 5,
            iperf: true,
            ..case("crosstraffic", "C", "transfer", SIMPLE, vec![25 * MB], 180, Check::Handshakes(1))
        },
    ]
}

/// The test cases named in `list` (comma-separated), or one line naming
/// the unknown one and the known ones.
pub fn select(list: &str) -> Result<Vec<TestCase>, String> {
    let known = all();
    let mut chosen = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let Some(case) = known.iter().find(|c| c.name == name) else {
            let names: Vec<&str> = known.iter().map(|c| c.name).collect();
            return Err(format!("unknown test case '{name}'; known test cases: {}", names.join(", ")));
        };
        if !chosen.iter().any(|c: &TestCase| c.name == name) {
            chosen.push(case.clone());
        }
    }
    if chosen.is_empty() {
        return Err("--testcases names no test case".to_string());
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_known_cases_in_the_given_order() {
        let cases = select("goodput,handshake,goodput").unwrap();
        assert_eq!(cases.iter().map(|c| c.name).collect::<Vec<_>>(), ["goodput", "handshake"]);
        assert_eq!(cases[0].repetitions, 5);
    }

    #[test]
    fn unknown_case_is_one_line_naming_the_known_ones() {
        let error = select("handshake,zerortt").unwrap_err();
        assert!(error.starts_with("unknown test case 'zerortt'"), "{error}");
        assert!(error.contains("crosstraffic") && !error.contains('\n'), "{error}");
    }

    #[test]
    fn scenarios_use_the_runner_vocabulary() {
        for case in all() {
            let name = case.scenario.split_whitespace().next().unwrap();
            assert!(["simple-p2p", "blackhole", "drop-rate", "corrupt-rate"].contains(&name), "{}", case.name);
            assert!(case.scenario.contains("{bw}"), "{}", case.name);
        }
    }
}
