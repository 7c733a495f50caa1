//! Tests of [`crate::ctcp`].

use super::*;
use crate::spec::Spec;
use crate::testing;
use crate::testing::Host;
use crate::testing::MSS;
use proptest::prelude::*;

const PACKET: f64 = MSS as f64;

fn ctcp(spec: &str) -> Host<Compound> {
    Host::new(Compound::new(crate::testing::config(spec), &testing::params()))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Acknowledges every packet in flight in one congestion event.
pub(crate) fn ack_all(host: &mut Host<Compound>) {
    let numbers: Vec<u64> = host.outstanding.iter().map(|&(number, _)| number).collect();
    host.event(&numbers, &[]);
}

/// Sends what the window allows and acknowledges it in one congestion
/// event: one round.
pub(crate) fn round(host: &mut Host<Compound>) {
    host.send_allowed(usize::MAX);
    ack_all(host);
}

/// Slow start to 320 packets, then a loss: the loss window is 160
/// packets, the delay window 320 (1 - β) - 160 (0 for β = 1/2), and one
/// more round leaves recovery, so the next round measures.
fn in_congestion_avoidance(spec: &str) -> Host<Compound> {
    let mut host = ctcp(spec);
    for _ in 0..5 {
        round(&mut host); // 10 -> 20 -> 40 -> 80 -> 160 -> 320
    }
    assert_eq!(host.controller.congestion_window(), 320_000);
    let flight = host.send(320);
    host.event(&[], &[flight.start]);
    assert_eq!(host.controller.loss_window(), 160_000.0);
    assert_eq!(host.controller.window(), 320_000.0 * (1.0 - host.controller.config().beta()));
    ack_all(&mut host); // the rest of the flight, sent before the decrease
    round(&mut host); // leaves recovery; this round began in recovery
    assert!(!host.controller.in_recovery());
    host
}

/// The loss window after `acks` acknowledgements of one packet each, in
/// congestion avoidance alongside a delay window of `delay` bytes.
fn loss_window_after(mut loss_window: f64, delay: f64, acks: usize, theta2: f64) -> f64 {
    for _ in 0..acks {
        loss_window += theta2 * PACKET * PACKET / (loss_window + delay);
    }
    loss_window
}

/// The packets a round sends: the window rounded up.
fn packets_in(window: f64) -> usize {
    (window / PACKET).ceil() as usize
}

#[test]
fn defaults_are_the_papers_and_canonical_form_round_trips() {
    let config = CtcpConfig::default();
    assert_eq!(
        (config.alpha(), config.beta(), config.k(), config.gamma(), config.zeta()),
        (0.125, 0.5, 0.75, 30.0, 1.0)
    );
    assert_eq!("ctcp".parse::<Spec>().unwrap().to_string(), "ctcp");
    for text in ["ctcp", "ctcp:gamma=20", "ctcp:alpha=0.25,beta=0.3,k=0.8,gamma=5,zeta=0.5", "ctcp:k=0"] {
        let spec: Spec = text.parse().unwrap();
        assert_eq!(spec.to_string(), text);
        assert_eq!(spec.to_string().parse::<Spec>().unwrap(), spec);
    }
    // Defaults written out are dropped from the canonical form.
    assert_eq!("ctcp:alpha=0.125,zeta=1".parse::<Spec>().unwrap().to_string(), "ctcp");
}

#[test]
fn out_of_range_parameters_name_the_key_and_the_range() {
    let error = |text: &str| text.parse::<Spec>().unwrap_err().to_string();
    assert!(error("ctcp:beta=0.6").contains("ctcp: beta = 0.6 is out of range; accepted range (0, 0.5]"));
    assert!(error("ctcp:k=1").contains("k = 1 is out of range; accepted range [0, 1)"));
    assert!(error("ctcp:alpha=0").contains("alpha = 0 is out of range; accepted range (0, 1]"));
    assert!(error("ctcp:gamma=NaN").contains("gamma = NaN is out of range; accepted range (0, 10000]"));
    assert!(error("ctcp:zeta=-1").contains("zeta = -1 is out of range; accepted range (0, 10]"));
    assert!(error("ctcp:n=2").contains("n is not a known key (accepted: alpha, beta, k, gamma, zeta)"));
    assert!(CtcpConfig::new(0.125, 0.7, 0.75, 30.0, 1.0).unwrap_err().to_string().contains("beta = 0.7"));
    assert!(CtcpConfig::new(0.125, 0.5, 0.75, 30.0, 1.0).is_ok());
}

#[test]
fn backlog_is_expected_minus_actual_times_base_rtt() {
    // 200 packets, base 100 ms, RTT 125 ms: (2000 - 1600) pkt/s * 0.1 s = 40.
    let diff = backlog(200.0, Duration::from_millis(100), Duration::from_millis(125));
    assert!(close(diff, 40.0), "{diff}");
    assert_eq!(backlog(200.0, Duration::from_millis(100), Duration::from_millis(100)), 0.0);
    assert_eq!(backlog(200.0, Duration::ZERO, Duration::ZERO), 0.0);
}

#[test]
fn delay_window_rules_in_numbers() {
    let config = CtcpConfig::default();
    let one = Thetas::SINGLE_PATH;
    // Phase 1: win = 256 packets, no backlog: (1/8 * 256^0.75 - 1) = 8 - 1 = 7.
    let (next, phase) = next_delay_window(&config, &one, 256.0, 10.0, 0.0);
    assert!(close(next, 17.0), "{next}");
    assert_eq!(phase, DelayPhase::Growth);
    // Below 16 packets 1/8 * win^0.75 <= 1: no growth, the flow is standard TCP.
    assert_eq!(next_delay_window(&config, &one, 16.0, 0.0, 0.0), (0.0, DelayPhase::LossOnly));
    // 29.9 packets of backlog is still below gamma = 30.
    assert_eq!(next_delay_window(&config, &one, 256.0, 10.0, 29.9).1, DelayPhase::Growth);
    // Phase 2: backlog 30 >= gamma: dwnd 50 - 1 * 30 = 20.
    assert_eq!(next_delay_window(&config, &one, 256.0, 50.0, 30.0), (20.0, DelayPhase::Backoff));
    // Phase 3: the back-off stops at 0.
    assert_eq!(next_delay_window(&config, &one, 256.0, 20.0, 40.0), (0.0, DelayPhase::LossOnly));
    // zeta = 0.5 gives up half a packet per packet of backlog: 50 - 20 = 30.
    let gentle = CtcpConfig::new(0.125, 0.5, 0.75, 30.0, 0.5).unwrap();
    assert_eq!(next_delay_window(&gentle, &one, 256.0, 50.0, 40.0), (30.0, DelayPhase::Backoff));
    // Loss: win 256 = cwnd 100 + dwnd 156; cwnd halves to 50, dwnd = 128 - 50 = 78.
    assert_eq!(delay_window_after_loss(256.0, 50.0, 0.5), 78.0);
    // beta = 0.3 keeps 0.7 * 256 = 179.2 = 50 + 129.2.
    assert!(close(delay_window_after_loss(256.0, 50.0, 0.3), 129.2));
    // A loss window that already holds the reduced total leaves no delay window.
    assert_eq!(delay_window_after_loss(100.0, 50.0, 0.5), 0.0);
}

#[test]
fn slow_start_keeps_the_delay_window_at_zero() {
    let mut host = ctcp("ctcp");
    for _ in 0..4 {
        round(&mut host);
        assert_eq!(host.controller.delay_window(), 0.0);
        assert_eq!(host.controller.snapshot().phase, "slow_start");
    }
    assert_eq!(host.controller.congestion_window(), 160_000);
}

#[test]
fn phase_1_the_total_grows_alpha_win_to_the_k_per_round() {
    let mut host = in_congestion_avoidance("ctcp");
    let config = CtcpConfig::default();
    for _ in 0..10 {
        let (loss_window, delay_window) = (host.controller.loss_window(), host.controller.delay_window());
        let acks = packets_in(host.controller.window());
        round(&mut host);
        // cwnd: one packet per win acknowledged; dwnd: + (1/8 win^0.75 - 1).
        let expected_loss_window = loss_window_after(loss_window, delay_window, acks, 1.0);
        assert!(close(host.controller.loss_window(), expected_loss_window));
        let window = (expected_loss_window + delay_window) / PACKET;
        let growth = 0.125 * window.powf(0.75) - 1.0;
        assert!(growth > 4.6, "{growth}"); // win > 160 packets: 1/8 * 160^0.75 - 1 = 4.62
        assert!(close(host.controller.delay_window(), delay_window + growth * PACKET));
        let (next, _) = next_delay_window(&config, &Thetas::SINGLE_PATH, window, delay_window / PACKET, 0.0);
        assert!(close(host.controller.delay_window() / PACKET, next));
        assert_eq!(host.controller.snapshot().phase, "delay_growth");
    }
    // Ten rounds from 161 packets (all loss window) end at 170.99 loss
    // and 53.76 delay packets: the delay window did 5/6 of the growth
    // (an independent recomputation of the rules gives these numbers).
    assert!((host.controller.loss_window() / PACKET - 170.9879).abs() < 1e-4);
    assert!((host.controller.delay_window() / PACKET - 53.7560).abs() < 1e-4);
}

#[test]
fn phase_2_the_delay_window_gives_way_by_zeta_times_diff() {
    let mut host = in_congestion_avoidance("ctcp");
    for _ in 0..10 {
        round(&mut host);
    }
    // A queue builds: 120 ms instead of 100 ms, diff = win (1 - 100/120) = win / 6.
    host.rtt = Duration::from_millis(120);
    let (loss_window, delay_window) = (host.controller.loss_window(), host.controller.delay_window());
    let acks = packets_in(host.controller.window());
    round(&mut host);
    let expected_loss_window = loss_window_after(loss_window, delay_window, acks, 1.0);
    assert!(close(host.controller.loss_window(), expected_loss_window));
    let window = (expected_loss_window + delay_window) / PACKET;
    let diff = window / 6.0;
    assert!(diff >= 30.0, "{diff}");
    assert!(close(host.controller.delay_window(), delay_window - diff * PACKET));
    assert_eq!(host.controller.snapshot().phase, "delay_backoff");
    // The loss window grew a packet, the delay window gave up diff: the total shrank.
    assert!(host.controller.window() < loss_window + delay_window);
}

#[test]
fn phase_3_without_a_delay_window_the_loss_window_grows_one_packet_per_round() {
    let mut host = in_congestion_avoidance("ctcp");
    round(&mut host);
    assert!(host.controller.delay_window() > 0.0);
    host.rtt = Duration::from_millis(150); // diff = win / 3 > 50: dwnd empties
    round(&mut host);
    assert_eq!(host.controller.delay_window(), 0.0);
    assert_eq!(host.controller.snapshot().phase, "loss_only");
    for _ in 0..5 {
        let loss_window = host.controller.loss_window();
        let acks = packets_in(loss_window);
        round(&mut host);
        assert_eq!(host.controller.delay_window(), 0.0);
        assert!(close(host.controller.loss_window(), loss_window_after(loss_window, 0.0, acks, 1.0)));
        // Acknowledging ceil(w) packets of a w-packet window adds about one packet.
        let growth = (host.controller.loss_window() - loss_window) / PACKET;
        assert!((growth - 1.0).abs() < 0.01, "{growth}");
    }
}

#[test]
fn loss_drops_the_total_by_beta_and_halves_the_loss_window() {
    for (spec, beta) in [("ctcp", 0.5), ("ctcp:beta=0.3", 0.3)] {
        let mut host = in_congestion_avoidance(spec);
        for _ in 0..5 {
            round(&mut host);
        }
        let (loss_window, window) = (host.controller.loss_window(), host.controller.window());
        assert!(host.controller.delay_window() > 0.0);
        let flight = host.send(5);
        host.event(&[], &[flight.start, flight.start + 1]); // two losses, one loss event
        assert_eq!(host.controller.loss_window(), loss_window / 2.0, "{spec}");
        assert!(close(host.controller.window(), window * (1.0 - beta)), "{spec}");
        assert!(close(host.controller.delay_window(), window * (1.0 - beta) - loss_window / 2.0));
        assert_eq!(host.controller.counters().loss_events, 2, "{spec}"); // with the one of the setup
        assert_eq!(host.controller.ssthresh(), Some((loss_window / 2.0) as usize));
    }
}

#[test]
fn the_round_after_a_loss_does_not_move_the_delay_window() {
    let mut host = in_congestion_avoidance("ctcp");
    for _ in 0..3 {
        round(&mut host);
    }
    let flight = host.send(3);
    host.event(&[], &[flight.start]);
    let delay_window = host.controller.delay_window();
    // The recovery round sees the queue the loss left: a long RTT that must not count.
    host.rtt = Duration::from_millis(400);
    ack_all(&mut host);
    round(&mut host);
    assert_eq!(host.controller.delay_window(), delay_window);
    host.rtt = Duration::from_millis(100);
    round(&mut host);
    assert!(host.controller.delay_window() > delay_window);
}

#[test]
fn app_limited_rounds_do_not_move_the_delay_window() {
    let mut host = in_congestion_avoidance("ctcp");
    round(&mut host);
    let delay_window = host.controller.delay_window();
    host.send(10);
    host.controller.on_app_limited(10 * MSS);
    // Ends the running round, which acknowledged app-limited packets.
    ack_all(&mut host);
    // Ends the next one, which acknowledged the packet sent right after.
    host.send(10);
    ack_all(&mut host);
    assert_eq!(host.controller.delay_window(), delay_window);
}

#[test]
fn diff_uses_the_smallest_rtt_sample_of_the_round() {
    let mut host = in_congestion_avoidance("ctcp");
    let flight = host.send_allowed(usize::MAX);
    let half = flight.start + (flight.end - flight.start) / 2;
    host.event(&(flight.start..half).collect::<Vec<_>>(), &[]); // ends a round: the next one begins
    ack_all(&mut host); // a clean 100 ms sample
    let delay_window = host.controller.delay_window();
    // The sample that ends the round is inflated by 50 ms of ACK delay:
    // alone (or averaged, 125 ms) it would mean win / 3 (or win / 5) > 30
    // packets of backlog.
    host.rtt = Duration::from_millis(150);
    round(&mut host);
    // The round's minimum is the base RTT: no backlog, phase 1 growth.
    assert!(host.controller.delay_window() > delay_window);
    assert_eq!(host.controller.snapshot().phase, "delay_growth");
}

#[test]
fn base_rtt_is_the_minimum_and_restarts_after_persistent_congestion() {
    let mut host = in_congestion_avoidance("ctcp");
    assert_eq!(host.controller.base_rtt(), Some(Duration::from_millis(100)));
    host.rtt = Duration::from_millis(90);
    round(&mut host);
    host.rtt = Duration::from_millis(130);
    round(&mut host);
    assert_eq!(host.controller.snapshot().value("base_rtt"), Some(Value::Duration(Duration::from_millis(90))));
    let window = host.controller.window();
    host.controller.on_persistent_congestion(Time::ZERO);
    assert_eq!(host.controller.base_rtt(), None);
    assert_eq!(host.controller.congestion_window(), 2 * MSS);
    assert_eq!(host.controller.delay_window(), 0.0);
    assert_eq!(host.controller.ssthresh(), Some((window * 0.5) as usize));
    assert_eq!(host.controller.counters().persistent_congestion, 1);
    host.send(1);
    ack_all(&mut host);
    assert_eq!(host.controller.base_rtt(), Some(Duration::from_millis(130)));
}

#[test]
fn pacing_and_snapshot_follow_both_windows() {
    let mut host = in_congestion_avoidance("ctcp");
    round(&mut host);
    let controller = &host.controller;
    // 1.25 * window / 0.1 s in congestion avoidance.
    assert_eq!(controller.pacing_rate(), Some((1.25 * controller.window() / 0.1) as u64));
    let snapshot = controller.snapshot();
    assert_eq!(snapshot.algorithm, "ctcp");
    assert_eq!(snapshot.congestion_window, controller.window() as usize);
    assert_eq!(snapshot.value("loss_window"), Some(Value::Integer(controller.loss_window() as u64)));
    assert_eq!(snapshot.value("delay_window"), Some(Value::Integer(controller.delay_window() as u64)));
    assert_eq!(snapshot.value("group_share"), None);
}

/// Everything a host reads is finite and the loss window never drops
/// below two packets.
pub(crate) fn assert_sane(controller: &Compound) {
    let snapshot = controller.snapshot();
    assert!(controller.window().is_finite() && controller.delay_window() >= 0.0, "{controller:?}");
    assert!(controller.loss_window() >= 2.0 * PACKET, "{controller:?}");
    assert!(controller.thetas().theta1.is_finite() && controller.thetas().theta2.is_finite());
    assert!(snapshot.pacing_rate.is_some_and(|rate| rate > 0), "{controller:?}");
    if let Some(share) = snapshot.number("group_share") {
        assert!((0.0..=1.0).contains(&share), "{share}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn no_panic_and_no_nan_for_any_event_sequence(ops in prop::collection::vec(testing::op(), 1..100)) {
        let mut host = ctcp("ctcp:gamma=5,beta=0.3");
        for op in &ops {
            host.apply(op);
            assert_sane(&host.controller);
        }
    }
}
