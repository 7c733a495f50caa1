//! `flowshare serve` and `flowshare get` end to end on 127.0.0.1: the policy
//! chooses each connection's controller, files arrive intact, the qlog and
//! the stats lines say which controller ran, bad policies are rejected in
//! one line (at start-up and on reload, keeping the old one), and
//! `weight = "streams"` makes N follow the active downloads.
//!
//! Every process a test starts is killed by its guard, also when the test
//! fails.

use std::cell::RefCell;
use std::io::BufRead;
use std::io::BufReader;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Output;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;
use std::time::Instant;

use flowshare_quic::cert::ScratchDir;
use flowshare_quic::link::Link;
use flowshare_quic::link::LinkConfig;
use serde_json::Value;

const FLOWSHARE: &str = env!("CARGO_BIN_EXE_flowshare");

/// The acceptance test's file size (issue 7).
const TWENTY_MEGABYTES: usize = 20_000_000;

/// A deterministic file of `len` bytes; the pattern's period (251, prime)
/// does not divide any QUIC or HTTP/3 framing size, so misplaced chunks show.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// A scratch directory with a certificate, a root of files and a qlog dir.
struct Site {
    dir: ScratchDir,
}

impl Site {
    fn new(label: &str, files: &[(&str, usize)]) -> Site {
        let dir = ScratchDir::new(label).expect("scratch dir");
        flowshare_quic::cert::write_self_signed(dir.path(), &["localhost".into()]).expect("certificate");
        std::fs::create_dir_all(dir.path().join("www")).expect("www");
        for (name, len) in files {
            std::fs::write(dir.path().join("www").join(name), pattern(*len)).expect("file");
        }
        Site { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write_policy(&self, text: &str) -> PathBuf {
        let path = self.path("policy.toml");
        std::fs::write(&path, text).expect("policy");
        path
    }

    fn serve_command(&self, policy: Option<&Path>) -> Command {
        let mut command = Command::new(FLOWSHARE);
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--stats"])
            .arg("--root")
            .arg(self.path("www"))
            .arg("--cert")
            .arg(self.path("cert.pem"))
            .arg("--key")
            .arg(self.path("key.pem"))
            .arg("--qlog-dir")
            .arg(self.path("qlog"));
        if let Some(policy) = policy {
            command.arg("--policy").arg(policy);
        }
        command
    }

    /// The server's qlog files.
    fn server_qlogs(&self) -> Vec<Vec<Value>> {
        let mut logs = Vec::new();
        for entry in std::fs::read_dir(self.path("qlog")).expect("qlog dir") {
            let path = entry.expect("entry").path();
            if path.file_name().is_some_and(|name| name.to_string_lossy().starts_with("server-")) {
                logs.push(read_qlog(&path));
            }
        }
        logs
    }
}

/// The records of a JSON-SEQ qlog (RFC 7464: each record starts with 0x1E).
fn read_qlog(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("qlog");
    text.split('\u{1e}')
        .filter(|record| !record.trim().is_empty())
        .map(|record| {
            serde_json::from_str(record).unwrap_or_else(|e| panic!("{}: bad record {record:?}: {e}", path.display()))
        })
        .collect()
}

fn events<'a>(qlog: &'a [Value], name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    qlog.iter().filter(move |record| record["name"] == name).map(|record| &record["data"])
}

/// A running `flowshare serve`, killed when dropped.
struct Server {
    child: Child,
    address: String,
    /// The line the server starts with: its address, policy and data path.
    listening: String,
    stdout: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
    /// Stats lines read but not asked for yet.
    backlog: RefCell<Vec<String>>,
}

fn lines_of(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

/// Waits for the next line of `lines` that satisfies `matches`.
fn wait_for(lines: &mpsc::Receiver<String>, what: &str, matches: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if matches(&line) => return line,
            Ok(_) => {}
            Err(_) => panic!("no {what} within 30 s"),
        }
    }
}

impl Server {
    fn start(mut command: Command) -> Server {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("flowshare serve starts");
        let stdout = lines_of(child.stdout.take().expect("stdout"));
        let stderr = lines_of(child.stderr.take().expect("stderr"));
        let mut server = Server {
            child,
            address: String::new(),
            listening: String::new(),
            stdout,
            stderr,
            backlog: RefCell::new(Vec::new()),
        };
        let first = wait_for(&server.stdout, "listening line", |line| line.contains("listening on"));
        server.address =
            first.split_whitespace().find(|word| word.starts_with("127.0.0.1:")).expect("address").to_string();
        server.listening = first;
        server
    }

    /// The next stats line for a connection with server name `sni`.
    fn stats_for(&self, sni: &str) -> String {
        self.stats_where(sni, |_| true)
    }

    /// The first stats line for server name `sni` that satisfies `matches`;
    /// other stats lines are kept for later calls.
    fn stats_where(&self, sni: &str, matches: impl Fn(&str) -> bool) -> String {
        let needle = format!(" sni={sni} ");
        let wanted = |line: &str| line.contains(&needle) && matches(line);
        let mut backlog = self.backlog.borrow_mut();
        if let Some(index) = backlog.iter().position(|line| wanted(line)) {
            return backlog.remove(index);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.stdout.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) if line.starts_with("stats ") && wanted(&line) => return line,
                Ok(line) if line.starts_with("stats ") => backlog.push(line),
                Ok(_) => {}
                Err(_) => panic!("no stats line for {sni} within 30 s; other stats lines: {backlog:?}"),
            }
        }
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A child process killed when dropped (a `get` running in the background).
struct Running(Option<Child>);

impl Running {
    fn spawn(mut command: Command) -> Running {
        Running(Some(command.spawn().expect("flowshare get starts")))
    }

    fn finish(mut self) -> Output {
        self.0.take().expect("running").wait_with_output().expect("wait")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `flowshare get` of `paths` from `server` with server name `sni`.
fn get_command(server: &str, sni: &str, paths: &[&str], out: &Path, extra: &[&str]) -> Command {
    let port = server.rsplit(':').next().expect("port");
    let mut command = Command::new(FLOWSHARE);
    command.args(["get", "--insecure", "--timeout", "60s", "--connect", server]).arg("--out").arg(out).args(extra);
    for path in paths {
        command.arg(format!("https://{sni}:{port}/{path}"));
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "get failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let start = line.find(&format!(" {key}=")).unwrap_or_else(|| panic!("no {key} in {line}")) + key.len() + 2;
    let rest = &line[start..];
    if let Some(quoted) = rest.strip_prefix('"') {
        &quoted[..quoted.find('"').expect("closing quote")]
    } else {
        rest.split(' ').next().expect("value")
    }
}

const TWO_SNI_POLICY: &str = r#"
[[rule]]
sni = "fast.test"
cc = "multcp:n=4"

[[rule]]
sni = "slow.test"
cc = "multfrc:n=0.5"
"#;

#[test]
fn two_snis_get_their_policy_controllers_and_20_mb_arrive_intact_over_each() {
    let site = Site::new("serve-two-snis", &[("big.bin", TWENTY_MEGABYTES)]);
    let policy = site.write_policy(TWO_SNI_POLICY);
    let server = Server::start(site.serve_command(Some(&policy)));

    let fast = Running::spawn(get_command(&server.address, "fast.test", &["big.bin"], &site.path("fast"), &[]));
    let slow = Running::spawn(get_command(&server.address, "slow.test", &["big.bin"], &site.path("slow"), &[]));
    assert_success(&fast.finish());
    assert_success(&slow.finish());
    let expected = pattern(TWENTY_MEGABYTES);
    for dir in ["fast", "slow"] {
        let got = std::fs::read(site.path(dir).join("big.bin")).expect("download");
        assert!(got == expected, "{dir}: {} bytes, differing from the served file", got.len());
    }

    // The stats lines say which controller each connection ran and that it
    // sent the file.
    for (sni, cc, weight) in [("fast.test", "multcp:n=4", "4"), ("slow.test", "multfrc:n=0.5", "0.5")] {
        let stats = server.stats_for(sni);
        assert_eq!(field(&stats, "cc"), cc, "{stats}");
        assert_eq!(field(&stats, "weight"), weight, "{stats}");
        assert_eq!(field(&stats, "error"), "-", "{stats}");
        assert!(field(&stats, "bytes_sent").parse::<u64>().expect("bytes") > TWENTY_MEGABYTES as u64, "{stats}");
    }

    // So does each connection's qlog: the policy's choice, and the
    // controller's own state as it ran.
    let qlogs = site.server_qlogs();
    assert_eq!(qlogs.len(), 2);
    for qlog in &qlogs {
        let selected = events(qlog, "flowshare:controller_selected").next().expect("controller_selected event");
        let (algorithm, weight) = match selected["sni"].as_str() {
            Some("fast.test") => ("multcp", 4.0),
            Some("slow.test") => ("multfrc", 0.5),
            other => panic!("unexpected sni {other:?}"),
        };
        let updates: Vec<&Value> = events(qlog, "flowshare:controller_updated").collect();
        assert!(updates.len() >= 2, "the window changed during 20 MB: {} updates", updates.len());
        for update in &updates {
            assert_eq!(update["algorithm"], algorithm);
            assert_eq!(update["weight"], weight);
        }
        let windows: Vec<u64> = updates.iter().filter_map(|update| update["congestion_window"].as_u64()).collect();
        assert!(windows.windows(2).any(|pair| pair[0] != pair[1]), "windows {windows:?}");
    }
}

/// The server's stderr for a policy file, which must make it fail.
fn start_up_error(policy: &str) -> String {
    let site = Site::new("serve-bad-policy", &[]);
    let path = site.write_policy(policy);
    let output = site.serve_command(Some(&path)).output().expect("serve runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn malformed_policy_fails_at_start_up_with_one_line_naming_file_and_line() {
    let stderr = start_up_error("[[rule]]\nsni = \"fast.test\"\ncc = \"multcp:n=4\n");
    assert!(stderr.starts_with("flowshare: "), "{stderr}");
    assert!(stderr.contains("policy.toml:3:"), "{stderr}");

    let stderr = start_up_error("[[rule]]\nsni = \"fast.test\"\ncc = \"warp-drive\"\n");
    assert!(stderr.contains("policy.toml:3: rule 1: invalid controller spec \"warp-drive\""), "{stderr}");
}

#[test]
fn out_of_cap_weight_fails_at_start_up_with_one_line() {
    let stderr = start_up_error("max_weight = 2\n\n[[rule]]\nsni = \"fast.test\"\ncc = \"multcp:n=4\"\n");
    assert!(
        stderr.contains("policy.toml:5: rule 1: cc \"multcp:n=4\" asks for weight 4, above the cap max_weight = 2"),
        "{stderr}"
    );

    let stderr = start_up_error("max_weight = 8\n\n[[upgrade]]\npath_prefix = \"/bulk/\"\nweight = 16\n");
    assert!(
        stderr.contains("policy.toml:5: upgrade 1: weight = 16 asks for weight 16, above the cap max_weight = 8"),
        "{stderr}"
    );
}

#[test]
fn reload_with_a_bad_file_keeps_the_old_policy_and_a_good_one_applies_to_new_connections() {
    // 5 MB through a 40 Mbit/s link: about a second, during which the policy
    // is reloaded twice under a running connection.
    let site = Site::new("serve-reload", &[("small.bin", 100_000), ("five.bin", 5_000_000)]);
    let policy = site.write_policy("[[rule]]\nsni = \"fast.test\"\ncc = \"multcp:n=4\"\n");
    let server = Server::start(site.serve_command(Some(&policy)));
    let rate_bps = 40_000_000;
    let delay = Duration::from_millis(5);
    let link = Link::start(
        LinkConfig { rate_bps, delay, queue_packets: LinkConfig::bdp_queue(rate_bps, delay, 1350) },
        server.address.parse().expect("address"),
    )
    .expect("link");
    let through_link = link.client_facing_addr().to_string();
    let long = Running::spawn(get_command(&through_link, "fast.test", &["five.bin"], &site.path("long"), &[]));
    // The long connection must be admitted before the first reload; on a
    // loaded machine its handshake can otherwise land after the second.
    let admitted = wait_for(&server.stderr, "admission", |line| line.contains("event=controller_selected"));
    assert!(admitted.contains("multcp:n=4"), "{admitted}");

    std::fs::write(&policy, "[[rule]]\nsni = \"fast.test\"\ncc = \"multcp:n=4\"\nweight = [\n").expect("bad policy");
    server.signal("HUP");
    let rejected = wait_for(&server.stderr, "rejection", |line| line.contains("policy reload rejected"));
    assert!(rejected.contains("policy.toml:4:"), "{rejected}");

    let small = |line: &str| field(line, "bytes_sent").parse::<u64>().expect("bytes") < 1_000_000;
    let output =
        get_command(&server.address, "fast.test", &["small.bin"], &site.path("after-bad"), &[]).output().expect("get");
    assert_success(&output);
    let stats = server.stats_where("fast.test", small);
    assert_eq!(field(&stats, "cc"), "multcp:n=4", "the old policy still applies: {stats}");

    std::fs::write(&policy, "[[rule]]\nsni = \"fast.test\"\ncc = \"multcp:n=2\"\n").expect("new policy");
    server.signal("HUP");
    wait_for(&server.stderr, "reload", |line| line.contains("event=policy_reloaded"));
    let output =
        get_command(&server.address, "fast.test", &["small.bin"], &site.path("after-good"), &[]).output().expect("get");
    assert_success(&output);
    let stats = server.stats_where("fast.test", small);
    assert_eq!(field(&stats, "cc"), "multcp:n=2", "{stats}");

    // The connection that was open across both reloads finished intact,
    // with the controller it was admitted with.
    let output = long.finish();
    assert_success(&output);
    assert!(std::fs::read(site.path("long").join("five.bin")).expect("download") == pattern(5_000_000));
    let stats = server.stats_where("fast.test", |line| !small(line));
    assert_eq!(field(&stats, "cc"), "multcp:n=4", "{stats}");
    assert_eq!(field(&stats, "error"), "-", "{stats}");
    drop(link);
}

/// The `to` of every weight_updated event in the server's only qlog.
fn weight_changes(site: &Site) -> Vec<f64> {
    let qlogs = site.server_qlogs();
    assert_eq!(qlogs.len(), 1);
    events(&qlogs[0], "flowshare:weight_updated").map(|event| event["to"].as_f64().expect("to")).collect()
}

#[test]
fn streams_weight_rises_with_concurrent_downloads_and_falls_as_they_complete() {
    // Three bulk downloads of different sizes over one connection, so they
    // complete one after the other.
    let files = [("a.bin", 2_000_000), ("b.bin", 4_000_000), ("c.bin", 8_000_000)];
    let site = Site::new("serve-streams", &files);
    let policy = site.write_policy(
        "max_weight = 8\nbulk_min_bytes = 1000000\n\n[default]\ncc = \"pa-multcp:n=1\"\nweight = \"streams\"\n",
    );
    let server = Server::start(site.serve_command(Some(&policy)));
    let output = get_command(&server.address, "localhost", &["a.bin", "b.bin", "c.bin"], &site.path("out"), &[])
        .output()
        .expect("get");
    assert_success(&output);
    let stats = server.stats_for("localhost");
    assert_eq!(field(&stats, "cc"), "pa-multcp:n=1");
    assert_eq!(field(&stats, "weight"), "1", "back to one flowshare when idle: {stats}");

    let changes = weight_changes(&site);
    let peak = changes.iter().position(|&weight| weight == 3.0).unwrap_or_else(|| panic!("N reached 3: {changes:?}"));
    // Rising to 3 as the requests arrive, then falling as downloads
    // complete (two that complete within one batch of packets fall
    // together), to 1 while the last one runs.
    assert!(changes[..=peak].windows(2).all(|pair| pair[0] < pair[1]), "{changes:?}");
    assert!(changes[peak..].windows(2).all(|pair| pair[0] > pair[1]), "{changes:?}");
    assert_eq!(changes.last(), Some(&1.0), "{changes:?}");
}

#[test]
fn streams_weight_stops_at_the_policy_cap() {
    let files = [("a.bin", 2_000_000), ("b.bin", 2_000_000), ("c.bin", 2_000_000)];
    let site = Site::new("serve-streams-cap", &files);
    let policy = site.write_policy(
        "max_weight = 2\nbulk_min_bytes = 1000000\n\n[default]\ncc = \"multcp:n=1\"\nweight = \"streams\"\n",
    );
    let server = Server::start(site.serve_command(Some(&policy)));
    let output = get_command(&server.address, "localhost", &["a.bin", "b.bin", "c.bin"], &site.path("out"), &[])
        .output()
        .expect("get");
    assert_success(&output);
    server.stats_for("localhost");
    let changes = weight_changes(&site);
    assert!(changes.contains(&2.0), "{changes:?}");
    assert!(changes.iter().all(|&weight| weight <= 2.0), "{changes:?}");
}

#[test]
fn a_client_can_lower_its_weight_but_never_raise_it_above_the_policy() {
    let site = Site::new("serve-client-weight", &[("one.bin", 1_000_000)]);
    let policy = site.write_policy(TWO_SNI_POLICY);
    let server = Server::start(site.serve_command(Some(&policy)));

    let output = get_command(&server.address, "fast.test", &["one.bin"], &site.path("greedy"), &["--weight", "100"])
        .output()
        .expect("get");
    assert_success(&output);
    assert_eq!(field(&server.stats_for("fast.test"), "weight"), "4");
    assert_eq!(weight_changes(&site), Vec::<f64>::new(), "no change above the policy's 4");

    std::fs::remove_dir_all(site.path("qlog")).expect("clear qlogs");
    std::fs::create_dir_all(site.path("qlog")).expect("qlog dir");
    let output = get_command(&server.address, "fast.test", &["one.bin"], &site.path("modest"), &["--weight", "2"])
        .output()
        .expect("get");
    assert_success(&output);
    server.stats_for("fast.test");
    assert_eq!(weight_changes(&site), vec![2.0]);
}

#[test]
fn a_path_upgrade_raises_the_weight_only_while_its_response_is_active() {
    // The upgraded response (1 MB) completes long before the plain one
    // (8 MB) that keeps the connection open.
    let site = Site::new("serve-upgrade", &[("plain.bin", 8_000_000)]);
    std::fs::create_dir_all(site.path("www/bulk")).expect("bulk dir");
    std::fs::write(site.path("www/bulk/one.bin"), pattern(1_000_000)).expect("file");
    let policy = site.write_policy(&format!("{TWO_SNI_POLICY}\n[[upgrade]]\npath_prefix = \"/bulk/\"\nweight = 6\n"));
    let server = Server::start(site.serve_command(Some(&policy)));
    let output = get_command(&server.address, "fast.test", &["bulk/one.bin", "plain.bin"], &site.path("out"), &[])
        .output()
        .expect("get");
    assert_success(&output);
    server.stats_for("fast.test");
    assert_eq!(weight_changes(&site), vec![6.0, 4.0], "6 while /bulk/ was being sent, then the rule's multcp:n=4");
}

#[test]
fn an_upload_runs_the_clients_controller_and_stores_every_byte() {
    let site = Site::new("serve-upload", &[]);
    let body = site.path("body.bin");
    std::fs::write(&body, pattern(3_000_000)).expect("upload file");
    let mut command = site.serve_command(None);
    command.arg("--upload-dir").arg(site.path("uploads"));
    let server = Server::start(command);

    let mut get =
        get_command(&server.address, "localhost", &["up.bin"], &site.path("out"), &["--stats", "--cc", "multcp:n=2"]);
    get.arg("--upload").arg(&body).arg("--qlog-dir").arg(site.path("client-qlog"));
    let output = get.output().expect("get");
    assert_success(&output);
    assert!(std::fs::read(site.path("uploads/up.bin")).expect("stored upload") == pattern(3_000_000));
    server.stats_for("localhost");

    let stdout = String::from_utf8_lossy(&output.stdout);
    let stats = stdout.lines().find(|line| line.starts_with("stats role=client")).expect("client stats line");
    assert_eq!(field(stats, "cc"), "multcp:n=2", "{stats}");
    assert!(field(stats, "bytes_sent").parse::<u64>().expect("bytes") > 3_000_000, "{stats}");
    let qlog_dir = site.path("client-qlog");
    let entry = std::fs::read_dir(&qlog_dir).expect("client qlog dir").next().expect("a client qlog").expect("entry");
    let qlog = read_qlog(&entry.path());
    let updates: Vec<&Value> = events(&qlog, "flowshare:controller_updated").collect();
    assert!(updates.len() >= 2, "{} updates", updates.len());
    assert!(updates.iter().all(|update| update["algorithm"] == "multcp" && update["weight"] == 2.0));
}

/// The seconds `flowshare get` reports for `path`: (completion, first byte).
fn request_times(stdout: &str, path: &str) -> (f64, f64) {
    let line = stdout
        .lines()
        .find(|line| line.contains(&format!("/{path}: ")))
        .unwrap_or_else(|| panic!("no line for {path} in {stdout}"));
    let seconds = |after: &str| -> f64 {
        let start = line.find(after).unwrap_or_else(|| panic!("no {after:?} in {line}")) + after.len();
        line[start..].split_whitespace().next().and_then(|value| value.parse().ok()).expect("seconds")
    };
    (seconds(" bytes in "), seconds("first byte after "))
}

#[test]
fn a_small_response_next_to_a_50_mb_one_completes_within_a_few_round_trips() {
    // 100 Mbit/s with 10 ms each way: 50 MB take at least four seconds, a
    // round trip is 20 ms. Both requests go out at once on one connection;
    // before responses took turns, the 1 KB one finished with the 50 MB one.
    let site = Site::new("serve-fair", &[("50m.bin", 50_000_000), ("1k.bin", 1_000)]);
    let server = Server::start(site.serve_command(None));
    let rate_bps = 100_000_000;
    let delay = Duration::from_millis(10);
    let link = Link::start(
        LinkConfig { rate_bps, delay, queue_packets: LinkConfig::bdp_queue(rate_bps, delay, 1350) },
        server.address.parse().expect("address"),
    )
    .expect("link");
    let through_link = link.client_facing_addr().to_string();
    let output =
        get_command(&through_link, "localhost", &["50m.bin", "1k.bin"], &site.path("out"), &[]).output().expect("get");
    assert_success(&output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let (big, _) = request_times(&stdout, "50m.bin");
    let (small, small_first_byte) = request_times(&stdout, "1k.bin");
    assert!(std::fs::read(site.path("out/1k.bin")).expect("download") == pattern(1_000));
    // "A few round trips": 25 of them leave room for a slow debug build on
    // a busy machine, and are still a hundredth of the 50 MB transfer.
    let round_trip = 2.0 * delay.as_secs_f64();
    assert!(small < 25.0 * round_trip, "1 KB took {small} s ({} round trips): {stdout}", small / round_trip);
    assert!(small_first_byte <= small);
    assert!(big > 3.0, "the 50 MB response took {big} s, too fast for the comparison to mean anything");
    drop(link);
}

#[test]
fn no_file_outside_the_root_is_served_by_traversal_or_symbolic_link() {
    use std::os::unix::fs::symlink;
    let site = Site::new("serve-root", &[("inside.bin", 1_000)]);
    std::fs::write(site.path("secret.bin"), b"outside the root").expect("secret");
    symlink(site.path("secret.bin"), site.path("www/escape.bin")).expect("file link");
    symlink(site.dir.path(), site.path("www/up")).expect("directory link");
    symlink(site.path("www/inside.bin"), site.path("www/alias.bin")).expect("link within the root");
    let server = Server::start(site.serve_command(None));

    for protocol in ["h3", "hq-interop"] {
        let out = site.path(&format!("out-{protocol}"));
        let get = |path: &str| {
            get_command(&server.address, "localhost", &[path], &out, &["--alpn", protocol]).output().expect("get")
        };
        assert_success(&get("alias.bin"));
        assert!(std::fs::read(out.join("alias.bin")).expect("download") == pattern(1_000));
        for path in ["escape.bin", "up/secret.bin", "../secret.bin", "%2e%2e/secret.bin", "www/../../secret.bin"] {
            let output = get(path);
            assert!(!output.status.success(), "{protocol} {path} was served");
            let stdout = String::from_utf8_lossy(&output.stdout);
            let expected = if protocol == "h3" { "HTTP status 404" } else { "reset the stream" };
            assert!(stdout.contains(expected), "{protocol} {path}: {stdout}");
        }
    }
}

#[test]
fn with_retry_always_flowshare_get_proves_its_address_and_is_served() {
    let site = Site::new("serve-retry", &[("a.bin", 100_000)]);
    let mut command = site.serve_command(None);
    command.args(["--retry", "always"]);
    let server = Server::start(command);
    let output = get_command(&server.address, "localhost", &["a.bin"], &site.path("out"), &[]).output().expect("get");
    assert_success(&output);
    assert!(std::fs::read(site.path("out/a.bin")).expect("download") == pattern(100_000));
    let accepted = wait_for(&server.stderr, "accepted connection", |line| line.contains("event=connection_accepted"));
    assert!(accepted.contains("retried=true"), "{accepted}");
}

/// `gso=on` or `gso=off` as the server's listening line says.
fn listening_gso(server: &Server) -> &str {
    let line = &server.listening;
    let start = line.find("gso=").unwrap_or_else(|| panic!("no gso= in {line}")) + "gso=".len();
    line[start..].split([' ', ')']).next().expect("value")
}

#[test]
fn with_gso_off_on_both_sides_20_mb_arrive_intact_and_the_stats_say_so() {
    let site = Site::new("serve-no-gso", &[("big.bin", TWENTY_MEGABYTES)]);
    let mut command = site.serve_command(None);
    command.arg("--no-gso");
    let server = Server::start(command);
    assert_eq!(listening_gso(&server), "off", "{}", server.listening);
    assert!(server.listening.contains("gro=off"), "{}", server.listening);

    let output = get_command(&server.address, "localhost", &["big.bin"], &site.path("out"), &["--no-gso", "--stats"])
        .output()
        .expect("get");
    assert_success(&output);
    assert!(std::fs::read(site.path("out/big.bin")).expect("download") == pattern(TWENTY_MEGABYTES));
    let stats = server.stats_for("localhost");
    assert_eq!(field(&stats, "gso"), "off", "{stats}");
    assert_eq!(field(&stats, "error"), "-", "{stats}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let client = stdout.lines().find(|line| line.starts_with("stats role=client")).expect("client stats line");
    assert_eq!(field(client, "gso"), "off", "{client}");
}

#[test]
fn a_segmenting_server_reaches_a_client_without_gro_and_one_with_it_intact() {
    // Where the kernel has GSO the server sends segmented messages; a
    // client socket without GRO gets them cut into datagrams by the
    // kernel, one with GRO gets them whole and cuts them itself.
    let site = Site::new("serve-gso", &[("big.bin", TWENTY_MEGABYTES)]);
    let server = Server::start(site.serve_command(None));
    let gso = listening_gso(&server).to_string();
    for (dir, extra) in [("plain", &["--no-gso"][..]), ("gro", &[][..])] {
        let output =
            get_command(&server.address, "localhost", &["big.bin"], &site.path(dir), extra).output().expect("get");
        assert_success(&output);
        let got = std::fs::read(site.path(dir).join("big.bin")).expect("download");
        assert!(got == pattern(TWENTY_MEGABYTES), "{dir}: {} bytes, differing from the served file", got.len());
        let stats = server.stats_for("localhost");
        assert_eq!(field(&stats, "gso"), gso, "the stats line and the listening line agree: {stats}");
        assert_eq!(field(&stats, "error"), "-", "{stats}");
    }
}
