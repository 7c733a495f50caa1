//! PA-MulTCP's tests: the paper's rules, the measured cap and the draw.

use super::loops::ProbeLoop;
use super::*;
use crate::aimd::Aimd;
use crate::equations::cubic_flow_params;
use crate::equations::cubic_reno_flowshares;
use crate::equations::yielding_cubic_flow_params;
use crate::equations::CubicParams;
use crate::pacing::draw;
use crate::spec::Spec;
use crate::testing;
use crate::testing::Host;
use proptest::prelude::*;

fn close(a: f64, b: f64, relative: f64) -> bool {
    (a - b).abs() <= relative * a.abs().max(b.abs())
}

fn pa_multcp(spec: &str) -> PaMulTcp {
    PaMulTcp::new(crate::testing::config(spec), &testing::params())
}

/// Ledger of the test host: which loop carried each packet.
fn loops_of(host: &mut Host<PaMulTcp>, count: usize) -> Vec<Loop> {
    (0..count)
        .map(|_| {
            host.send(1);
            host.controller.last_loop().unwrap()
        })
        .collect()
}

/// PA-MulTCP(4) after one round of slow start in both loops (20 packets
/// each) and a probe loss among the next window: the probe's first loss
/// event at a window of 20 packets.
fn after_first_probe_loss(spec: &str) -> Host<PaMulTcp> {
    let mut host = Host::new(pa_multcp(spec));
    host.round(); // packets 0..9 probe, 10..19 adjusting; both 10 -> 20
    assert_eq!(host.controller.probe_window(), 20_000.0);
    assert_eq!(host.controller.adjusting_loop().window(), 20_000.0);
    // Consecutive assignment goes on with the adjusting loop, which sent
    // the last packet: 20..39 adjusting, 40..59 probe.
    let sent = host.send_allowed(usize::MAX);
    assert_eq!(sent, 20..60);
    assert_eq!(host.controller.last_loop(), Some(Loop::Probe));
    host.event(&[], &[40]);
    host
}

#[test]
fn snapshot_counts_the_probes_packets_sent_and_lost() {
    let host = after_first_probe_loss("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper");
    // Probe packets: 0..9 and 40..59; packet 40 lost.
    let snapshot = host.controller.snapshot();
    assert_eq!(snapshot.value("probe_packets_sent"), Some(Value::Integer(30)));
    assert_eq!(snapshot.value("probe_packets_lost"), Some(Value::Integer(1)));
    assert_eq!(host.controller.counters().packets_sent, 60);
}

#[test]
fn drawn_assignment_gives_the_probe_its_share_of_the_packets() {
    // The draw is uniform: a fifth of 10 000 numbers fall below 0.2.
    let below = (0..10_000).filter(|&n| draw(n) < 0.2).count();
    assert!((1_900..2_100).contains(&below), "{below}");
    // PA-MulTCP(4) at the start, probe 10 packets and adjusting 10
    // while both are open: each packet goes to either, about half each.
    let mut host = Host::new(pa_multcp("pa-multcp:n=4,assign=draw"));
    let loops = loops_of(&mut host, 16);
    let probe = loops.iter().filter(|&&l| l == Loop::Probe).count();
    assert!((4..=12).contains(&probe), "{loops:?}");
}

#[test]
fn sampled_assignment_follows_the_draw_whichever_loop_has_room() {
    // PA-MulTCP(4) at the start, probe 10 packets and adjusting 10: each of
    // 30 packets goes to the probe exactly when its draw falls below one
    // half, also once a loop's window is full (packets 20 to 29 fit in
    // neither), so the probe's packets are a fair sample of the connection's.
    let mut host = Host::new(pa_multcp("pa-multcp:n=4,assign=sample"));
    let loops = loops_of(&mut host, 30);
    let drawn: Vec<Loop> = (0..30).map(|n| if draw(n) < 0.5 { Loop::Probe } else { Loop::Adjusting }).collect();
    assert_eq!(loops, drawn);
    let probe = loops.iter().filter(|&&l| l == Loop::Probe).count();
    assert_ne!(probe, 10, "the sample must differ from the windows' split for this test to tell");
    // The draw gives a loop whose window is full no more packets: 10 each
    // of the first 20, then the probe by the rule for both closed.
    let mut host = Host::new(pa_multcp("pa-multcp:n=4,assign=draw"));
    let loops = loops_of(&mut host, 20);
    assert_eq!(loops.iter().filter(|&&l| l == Loop::Probe).count(), 10);
}

#[test]
fn room_assignment_gives_each_packet_to_a_loop_in_proportion_to_its_room() {
    // PA-MulTCP(4) unpaced at the start, probe and adjusting loop 10
    // packets of room each: each packet goes to the probe with probability
    // its whole packets of room over both loops', so the packets leave in
    // a random order of the loops' slots, and each loop fills exactly.
    let mut host = Host::new(pa_multcp("pa-multcp:n=4,pacing=off,assign=room"));
    let loops = loops_of(&mut host, 20);
    let (mut probe, mut adjusting) = (10.0, 10.0);
    let expected: Vec<Loop> = (0..20)
        .map(|number| {
            if draw(number) * (probe + adjusting) < probe {
                probe -= 1.0;
                Loop::Probe
            } else {
                adjusting -= 1.0;
                Loop::Adjusting
            }
        })
        .collect();
    assert_eq!(loops, expected);
    assert_eq!(loops.iter().filter(|&&l| l == Loop::Probe).count(), 10);
    // The draw of the windows' shares gives the same first packets a
    // different order: it keeps a loop's packets while it has room.
    let mut drawn = Host::new(pa_multcp("pa-multcp:n=4,pacing=off"));
    assert_ne!(loops_of(&mut drawn, 20), loops, "the two rules must differ here for this test to tell");
}

#[test]
fn clocked_assignment_spaces_the_probes_packets_as_its_own_pacing_would() {
    use Loop::*;
    // The probe's clock at the start: 1.1 x 10 packets per 100 ms, one
    // packet every 9.09 ms; the adjusting loop takes the packets between.
    let mut host = Host::new(pa_multcp("pa-multcp:n=4"));
    assert_eq!(host.controller.config().assignment, Assignment::Clock);
    assert_eq!(loops_of(&mut host, 3), [Probe, Adjusting, Adjusting]);
    host.now = host.now + Duration::from_millis(9);
    assert_eq!(loops_of(&mut host, 1), [Adjusting]);
    host.now = host.now + Duration::from_micros(100);
    assert_eq!(loops_of(&mut host, 2), [Probe, Adjusting]);
    // The adjusting loop's window of 10 packets closes after 6 more; then
    // the probe takes what it has room for, due or not.
    let loops = loops_of(&mut host, 10);
    assert_eq!(loops, [[Adjusting; 6].as_slice(), [Probe; 4].as_slice()].concat());
}

#[test]
fn an_unpaced_connections_probe_clock_runs_faster() {
    use Loop::*;
    // Unpaced, the clock runs at 1.25 x 10 packets per 100 ms: one packet
    // every 8 ms, where the paced clock waits 9.09 ms.
    let mut host = Host::new(pa_multcp("pa-multcp:n=4,pacing=off,assign=clock"));
    assert_eq!(loops_of(&mut host, 2), [Probe, Adjusting]);
    host.now = host.now + Duration::from_micros(7_900);
    assert_eq!(loops_of(&mut host, 1), [Adjusting]);
    host.now = host.now + Duration::from_micros(200);
    assert_eq!(loops_of(&mut host, 1), [Probe]);
}

#[test]
fn each_pacing_has_its_assignment_unless_told_otherwise() {
    let assignment = |text: &str| crate::testing::config::<PaMulTcpConfig>(text).assignment;
    assert_eq!(assignment("pa-multcp:n=4,pacing=off"), Assignment::Draw);
    assert_eq!(assignment("pa-multcp:n=4,pacing=split"), Assignment::Draw);
    assert_eq!(assignment("pa-multcp:n=4,pacing=flows"), Assignment::Clock);
    assert_eq!(assignment("pa-multcp:n=4,pacing=even"), Assignment::Clock);
    assert_eq!(assignment("pa-multcp:n=4,assign=clock,pacing=off"), Assignment::Clock);
    // The spec names the assignment only where it is not its pacing's default.
    crate::testing::assert_canonical(&[
        ("pa-multcp:n=4,pacing=off", "pa-multcp:n=4,pacing=off"),
        ("pa-multcp:n=4,pacing=off,assign=clock", "pa-multcp:n=4,assign=clock,pacing=off"),
        ("pa-multcp:n=4,assign=draw", "pa-multcp:n=4,assign=draw"),
        ("pa-multcp:n=4,pacing=split,assign=draw", "pa-multcp:n=4,pacing=split"),
        ("pa-multcp:n=4,pacing=split,assign=sample", "pa-multcp:n=4,assign=sample,pacing=split"),
    ]);
}

#[test]
fn each_pacing_has_its_cap_average_unless_told_otherwise() {
    let average = |text: &str| crate::testing::config::<PaMulTcpConfig>(text).average;
    assert_eq!(average("pa-multcp:n=4"), CapAverage::Epochs);
    assert_eq!(average("pa-multcp:n=4,pacing=even"), CapAverage::Epochs);
    assert_eq!(average("pa-multcp:n=4,pacing=off"), CapAverage::Smoothed);
    assert_eq!(average("pa-multcp:n=4,pacing=split"), CapAverage::Smoothed);
    assert_eq!(average("pa-multcp:n=4,pacing=off,average=epochs"), CapAverage::Epochs);
    crate::testing::assert_canonical(&[
        ("pa-multcp:n=4,pacing=off,average=smoothed", "pa-multcp:n=4,pacing=off"),
        ("pa-multcp:n=4,pacing=off,average=epochs", "pa-multcp:n=4,average=epochs,pacing=off"),
        ("pa-multcp:n=4,average=smoothed", "pa-multcp:n=4,average=smoothed"),
        ("pa-multcp:n=4,average=epochs", "pa-multcp:n=4"),
        ("pa-multcp:n=4,pacing=off,assign=room", "pa-multcp:n=4,assign=room,pacing=off"),
        // The paper's cap averages nothing; its spec names no average either.
        ("pa-multcp:n=4,cap=paper,pacing=off", "pa-multcp:n=4,cap=paper,pacing=off"),
    ]);
}

#[test]
fn measured_cap_is_n_minus_one_times_the_probe_window_in_slow_start() {
    let mut host = Host::new(pa_multcp("pa-multcp:n=4"));
    host.round();
    let controller = &host.controller;
    let probe = controller.probe_window();
    assert_eq!(controller.w_max().map(|packets| packets * 1000.0), Some(3.0 * probe));
    assert!(controller.adjusting_loop().window() <= 3.0 * probe);
}

/// Runs `spec` through probe loss events every 4 rounds of 100 ms: the
/// cap gain, the probe's average window and the cap, bytes.
fn cap_after_epochs(spec: &str) -> (f64, f64, f64, f64) {
    let mut host = Host::new(pa_multcp(spec));
    for _ in 0..8 {
        for _ in 0..4 {
            host.round();
            host.now = host.now + Duration::from_millis(100);
        }
        let sent = host.send_allowed(usize::MAX);
        let probe_packet = sent.clone().find(|&n| host.controller.ledger.owner(n) == Some(Owner::Probe(0)));
        let others: Vec<u64> = sent.filter(|&n| Some(n) != probe_packet).collect();
        host.event(&others, &probe_packet.into_iter().collect::<Vec<_>>());
    }
    let snapshot = host.controller.snapshot();
    let number = |key: &str| snapshot.number(key).unwrap_or_else(|| panic!("{key} in {snapshot:?}"));
    (number("cap_gain"), number("probe_average"), number("w_max"), host.controller.adjusting_loop().window())
}

#[test]
fn measured_cap_follows_the_probes_average_over_its_epochs() {
    // The cap is g (N - 1) times the probe's time-averaged window, and g
    // is 1 or more; by default less the remainders of the adjusting loop's
    // three flows beyond its own, (3 - 1) / 2 packets.
    for (spec, held_back) in [
        ("pa-multcp:n=4,whole_packets=paper", 0.0),
        ("pa-multcp:n=4", 1000.0),
        ("pa-multcp:n=4,average=smoothed", 1000.0),
    ] {
        let (gain, average, cap, adjusting) = cap_after_epochs(spec);
        assert!((1.0..=2.0).contains(&gain), "{spec}: {gain}");
        assert!(close(cap, gain * 3.0 * average - held_back, 1e-9), "{spec}: {cap} {gain} {average}");
        assert!(adjusting <= cap + 1e-6, "{spec}: {adjusting} over {cap}");
    }
}

#[test]
fn adjusting_pair_is_sqrt_n_and_two_over_one_plus_three_n_to_the_1_5() {
    // N' = 3: AIMD(√3, 2/(1 + 3·3^1.5)) = AIMD(1.7321, 0.12057).
    let pair = loop_pair(3.0);
    assert_eq!(pair.increase, 3f64.sqrt());
    assert!(close(pair.decrease, 2.0 / (1.0 + 3.0 * 3f64.powf(1.5)), 1e-15));
    assert!(close(pair.flowshares(), 3.0, 1e-12));
    assert_eq!(loop_pair(1.0), Aimd::STANDARD);
    // Below one flowshare: AIMD(s², 1/2).
    assert_eq!(loop_pair(0.5), Aimd { increase: 0.25, decrease: 0.5 });
}

#[test]
fn w_max_for_a_given_p_is_eq9_for_n_minus_one_flowshares() {
    // N = 4, p = 0.01: W_max = sqrt(2√3 / (0.12057 · 1.87943 · 0.01)) = 39.099
    // packets, and eq. (10): 0.93972 · 39.099 = 3 · sqrt(150) packets per RTT.
    let config = PaMulTcpConfig::new(4.0, Assignment::Consecutive, ProbeKind::Reno).unwrap();
    let w_max = config.w_max(0.01, Duration::from_millis(100)).unwrap();
    assert!(close(w_max, 39.099368745702826, 1e-14), "{w_max}");
    let b = loop_pair(3.0).decrease;
    assert!(close((2.0 - b) / 2.0 * w_max, 3.0 * 150f64.sqrt(), 1e-14));
    assert_eq!(
        PaMulTcpConfig::new(1.0, Assignment::Consecutive, ProbeKind::Reno).unwrap().w_max(0.01, Duration::ZERO),
        None
    );
}

#[test]
fn cubic_probe_targets_n_minus_one_cubic_reno_flowshares() {
    // N = 4, p = 1e-4, RTT 100 ms: W̄_c = 187.40, R = 187.40 / 122.47 =
    // 1.5301, the pair is for 4.5903 Reno flowshares, W_max = 581.26 packets
    // = 2 · 3 · W̄_c / (2 - b).
    let config = PaMulTcpConfig::new(4.0, Assignment::Consecutive, ProbeKind::Cubic).unwrap();
    let rtt = Duration::from_millis(100);
    assert!(close(cubic_reno_flowshares(1e-4, rtt), 1.5301164627317854, 1e-14));
    let w_max = config.w_max(1e-4, rtt).unwrap();
    assert!(close(w_max, 581.2553602562923, 1e-14), "{w_max}");
    let b = loop_pair(config.adjusting_flowshares(Some(1e-4), rtt)).decrease;
    let cubic = crate::equations::cubic_average_window(&CubicParams::STANDARD, 1e-4, rtt);
    assert!(close((2.0 - b) / 2.0 * w_max, 3.0 * cubic, 1e-14));
    // Where CUBIC is Reno-friendly (p = 0.01, RTT 10 ms) it is Reno's W_max.
    let reno = PaMulTcpConfig::new(4.0, Assignment::Consecutive, ProbeKind::Reno).unwrap();
    let rtt = Duration::from_millis(10);
    assert_eq!(config.w_max(0.01, rtt), reno.w_max(0.01, rtt));
}

#[test]
fn slow_start_exit_seeds_p_from_half_the_probe_window() {
    // The probe loses at 20 packets: window 10, and the seeded interval is
    // 3 · 10² / 8 = 37.5 packets. The open interval (20 packets since the
    // loss) is shorter, so p = 1/37.5.
    let host = after_first_probe_loss("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper");
    let controller = &host.controller;
    assert_eq!(controller.probe_window(), 10_000.0);
    assert!(close(controller.loss_event_rate().unwrap(), 1.0 / 37.5, 1e-15));
    // W_max for N' = 3 at p = 1/37.5: 23.943 packets; the adjusting loop
    // (20 packets, still in slow start) keeps its window and its slow start
    // ends at W_max.
    let w_max = controller.w_max().unwrap();
    assert!(close(w_max, 23.943375672974064, 1e-14), "{w_max}");
    assert_eq!(controller.adjusting_loop().window(), 20_000.0);
    assert_eq!(controller.adjusting_loop().ssthresh(), w_max * 1000.0);
    assert_eq!(controller.counters().loss_events, 1);
    let snapshot = controller.snapshot();
    assert_eq!(snapshot.number("w_max"), Some(w_max * 1000.0));
    assert_eq!(snapshot.number("probe_window"), Some(10_000.0));
    assert_eq!(snapshot.number("adjusting_window"), Some(20_000.0));
    assert_eq!(snapshot.congestion_window, 30_000);
    assert_eq!(snapshot.number("loss_event_rate"), controller.loss_event_rate());
    assert_eq!(snapshot.phase, "recovery");
}

#[test]
fn adjusting_window_is_clamped_to_w_max_and_stops_there() {
    let mut host = after_first_probe_loss("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper");
    // Acknowledge the adjusting loop's 20 packets: slow start would reach 40.
    let adjusting: Vec<u64> = (20..40).collect();
    host.event(&adjusting, &[]);
    let w_max = host.controller.w_max().unwrap();
    assert_eq!(host.controller.adjusting_loop().window(), w_max * 1000.0);
}

#[test]
fn window_after_loss_is_one_minus_b_times_w_in_each_loop() {
    let mut host = after_first_probe_loss("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper");
    // Probe: 20 -> 10 packets (b = 1/2). Adjusting: a loss at 20 packets
    // leaves (1 - 0.12057) · 20 = 17.589 packets.
    host.event(&[], &[20]);
    let b = loop_pair(3.0).decrease;
    assert_eq!(host.controller.adjusting_loop().window(), 20_000.0 * (1.0 - b));
    assert_eq!(host.controller.adjusting_loop().ssthresh(), 20_000.0 * (1.0 - b));
    assert_eq!(host.controller.probe_window(), 10_000.0);
    // Another loss of a packet sent before the decrease: same event.
    host.event(&[], &[21]);
    assert_eq!(host.controller.adjusting_loop().window(), 20_000.0 * (1.0 - b));
    assert_eq!(host.controller.counters().loss_events, 2);
}

#[test]
fn growth_per_rtt_is_one_packet_in_the_probe_and_sqrt_n_prime_in_the_adjusting_loop() {
    let mut host = after_first_probe_loss("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper");
    host.event(&[], &[20]); // adjusting: 20 -> 17.589 packets
    let outstanding: Vec<u64> = host.outstanding.iter().map(|&(n, _)| n).collect();
    host.event(&outstanding, &[]); // sent before the decreases: no growth
    assert_eq!(host.controller.probe_window(), 10_000.0);
    let b = loop_pair(3.0).decrease;
    assert_eq!(host.controller.adjusting_loop().window(), 20_000.0 * (1.0 - b));
    // Send what the windows allow: consecutive assignment continues on the
    // probe loop (it sent the last packet), 10 packets, then 17 on the
    // adjusting loop while a whole packet fits in its 17 589 bytes: the
    // connection's window counts each loop's whole packets, 27 000 bytes.
    let mut sent = Vec::new();
    while host.controller.can_send(host.in_flight) {
        host.send(1);
        sent.push((host.next_number - 1, host.controller.last_loop().unwrap()));
    }
    let on = |which: Loop| sent.iter().filter(|&&(_, l)| l == which).count();
    assert_eq!((on(Loop::Adjusting), on(Loop::Probe)), (17, 10));
    // Acknowledged one by one, every ack adds a · 1000 · 1000 / w to its
    // loop's window: a = 1 in the probe, √3 in the adjusting loop.
    let mut probe = 10_000.0f64;
    let mut adjusting = 20_000.0 * (1.0 - b);
    for (number, owner) in sent {
        host.event(&[number], &[]);
        match owner {
            Loop::Probe => probe += 1_000_000.0 / probe,
            Loop::Adjusting => adjusting += 3f64.sqrt() * 1_000_000.0 / adjusting,
        }
    }
    assert!(close(host.controller.probe_window(), probe, 1e-12), "{} {probe}", host.controller.probe_window());
    assert!(close(host.controller.adjusting_loop().window(), adjusting, 1e-12));
    // One window of acks adds about a packets per loop: 10 acks to a
    // 10-packet window add 0.959, 17 acks to 17.589 packets add 1.604
    // (√3 = 1.732 for a full window).
    assert_eq!(probe as u64, 10_958);
    assert_eq!(adjusting as u64, 19_193);
}

#[test]
fn consecutive_assignment_fills_one_loop_then_the_other() {
    let mut host = Host::new(pa_multcp("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper"));
    let loops = loops_of(&mut host, 20);
    assert!(loops[..10].iter().all(|&l| l == Loop::Probe));
    assert!(loops[10..].iter().all(|&l| l == Loop::Adjusting));
    // Both loops are full: a packet the host sends anyway (a PTO probe)
    // goes to the probe loop, although the last one went to the adjusting loop.
    assert!(!host.controller.can_send(host.in_flight));
    assert_eq!(loops_of(&mut host, 1), [Loop::Probe]);
    assert_eq!(host.controller.snapshot().value("last_loop"), Some(Value::Name("probe")));
    // Ack one packet of each loop: both windows grow to 11 packets, the
    // probe has 10 in flight and the adjusting loop 9. The probe loop
    // (last used) takes one packet, then the adjusting loop two.
    host.event(&[0, 10], &[]);
    assert_eq!(loops_of(&mut host, 3), [Loop::Probe, Loop::Adjusting, Loop::Adjusting]);
    assert!(!host.controller.can_send(host.in_flight));
    // Then the adjusting loop stays in use while it is open: ack two of its packets.
    host.event(&[11, 12], &[]);
    assert_eq!(loops_of(&mut host, 4), [Loop::Adjusting; 4]);
    assert!(!host.controller.can_send(host.in_flight));
}

#[test]
fn interleaved_assignment_alternates_while_both_loops_are_open() {
    let mut host = Host::new(pa_multcp("pa-multcp:n=4,assign=interleave,probe=reno,cap=paper"));
    let loops = loops_of(&mut host, 20);
    let alternating: Vec<Loop> = (0..20).map(|i| if i % 2 == 0 { Loop::Probe } else { Loop::Adjusting }).collect();
    assert_eq!(loops, alternating);
    // Only the probe loop has room: it takes consecutive packets.
    host.event(&[0, 2], &[]);
    assert_eq!(loops_of(&mut host, 2), [Loop::Probe, Loop::Probe]);
}

#[test]
fn assignment_rules() {
    use Assignment::*;
    use Loop::*;
    // The fifth argument (probe due) matters for the draw, the clock and the sample only.
    for due in [true, false] {
        assert_eq!(assign(Consecutive, None, true, true, due), Probe);
        assert_eq!(assign(Consecutive, Some(Adjusting), true, true, due), Adjusting);
        assert_eq!(assign(Consecutive, Some(Adjusting), true, false, due), Probe);
        assert_eq!(assign(Interleave, None, true, true, due), Probe);
        assert_eq!(assign(Interleave, Some(Probe), true, true, due), Adjusting);
        assert_eq!(assign(Interleave, Some(Probe), true, false, due), Probe);
    }
    for mode in [Draw, Clock, Room] {
        assert_eq!(assign(mode, Some(Probe), true, true, true), Probe);
        assert_eq!(assign(mode, Some(Probe), true, true, false), Adjusting);
        assert_eq!(assign(mode, Some(Adjusting), false, true, true), Adjusting);
        assert_eq!(assign(mode, Some(Adjusting), true, false, false), Probe);
    }
    for mode in [Consecutive, Interleave, Draw, Clock, Sample, Room] {
        for previous in [None, Some(Probe), Some(Adjusting)] {
            assert_eq!(assign(mode, previous, false, false, true), Probe);
        }
    }
    // The sample asks only the draw.
    for (probe_open, adjusting_open) in [(true, true), (true, false), (false, true), (false, false)] {
        for previous in [None, Some(Probe), Some(Adjusting)] {
            assert_eq!(assign(Sample, previous, probe_open, adjusting_open, true), Probe);
            assert_eq!(assign(Sample, previous, probe_open, adjusting_open, false), Adjusting);
        }
    }
}

#[test]
fn acks_and_losses_go_back_to_the_loop_that_sent_the_packet() {
    let mut host = Host::new(pa_multcp("pa-multcp:n=4,assign=interleave,probe=reno,cap=paper"));
    host.send(20); // even numbers probe, odd adjusting
    host.event(&[1, 3, 5], &[]);
    assert_eq!(host.controller.adjusting_loop().window(), 13_000.0);
    assert_eq!(host.controller.probe_window(), 10_000.0);
    host.event(&[], &[7]);
    assert_eq!(host.controller.probe_window(), 10_000.0);
    assert_eq!(host.controller.loss_event_rate(), None); // probe saw no loss
    assert!(host.controller.adjusting_loop().in_recovery());
}

#[test]
fn weight_change_mid_flight_updates_the_pair_and_w_max_at_once() {
    let mut host = after_first_probe_loss("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper");
    // N = 8: N' = 7, AIMD(√7, 0.035360), W_max at p = 1/37.5 is 53.445 packets.
    host.controller.set_weight(8.0).unwrap();
    assert_eq!(host.controller.adjusting_loop().aimd(), loop_pair(7.0));
    assert!(close(host.controller.w_max().unwrap(), 53.444911182523064, 1e-14));
    assert_eq!(host.controller.adjusting_loop().window(), 20_000.0);
    // N = 2: N' = 1, AIMD(1, 1/2), W_max = sqrt(8/3 · 37.5) = 10 packets:
    // window and slow start threshold are clamped at once.
    host.controller.set_weight(2.0).unwrap();
    assert_eq!(host.controller.adjusting_loop().aimd(), Aimd::STANDARD);
    assert!(close(host.controller.w_max().unwrap(), 10.0, 1e-14));
    assert!(close(host.controller.adjusting_loop().window(), 10_000.0, 1e-14));
    assert!(close(host.controller.adjusting_loop().ssthresh(), 10_000.0, 1e-14));
    // N = 1: no adjusting loop; its packets in flight still resolve to it.
    host.controller.set_weight(1.0).unwrap();
    assert_eq!(host.controller.congestion_window(), 10_000);
    assert_eq!(host.controller.w_max(), None);
    assert_eq!(host.controller.snapshot().number("adjusting_window"), None);
    let adjusting: Vec<u64> = (20..40).collect();
    host.event(&adjusting, &[]);
    assert_eq!(host.controller.adjusting_in_flight, 0);
    assert!(host.controller.set_weight(0.0).is_err());
    assert_eq!(host.controller.config().n, 1.0);
}

#[test]
fn one_flowshare_is_the_probe_loop_alone() {
    let mut host = Host::new(pa_multcp("pa-multcp:n=1,probe=reno,assign=consecutive,cap=paper"));
    assert_eq!(host.controller.congestion_window(), 10_000);
    assert!(loops_of(&mut host, 12).iter().all(|&l| l == Loop::Probe));
}

#[test]
fn the_papers_scavenger_probe_is_aimd_n_squared_one_half() {
    let controller = pa_multcp("pa-multcp:n=0.5,probe=reno,assign=consecutive,cap=paper,yield_by=increase");
    match &controller.probes[0].window {
        ProbeLoop::Reno(window) => assert_eq!(window.aimd(), Aimd { increase: 0.25, decrease: 0.5 }),
        other => panic!("{other:?}"),
    }
    let cubic = pa_multcp("pa-multcp:n=0.5,probe=cubic,yield_by=increase");
    match &cubic.probes[0].window {
        ProbeLoop::Cubic(window) => assert_eq!(window.params(), cubic_flow_params(0.5)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_scavenger_yielding_by_its_decrease_cuts_deeper_and_grows_faster() {
    let controller = pa_multcp("pa-multcp:n=0.5,probe=reno,assign=consecutive,cap=paper,yield_by=decrease");
    match &controller.probes[0].window {
        // (2 - b') / b' = 0.5 (2 - 1/2) / (1/2): b' = 0.8, a' = 3 n² b' / (2 - b').
        ProbeLoop::Reno(window) => {
            let aimd = window.aimd();
            assert!((aimd.decrease - 0.8).abs() < 1e-12 && (aimd.increase - 0.5).abs() < 1e-12, "{aimd:?}");
        }
        other => panic!("{other:?}"),
    }
    let cubic = pa_multcp("pa-multcp:n=0.5,yield_by=decrease");
    match &cubic.probes[0].window {
        ProbeLoop::Cubic(window) => assert_eq!(window.params(), yielding_cubic_flow_params(0.5)),
        other => panic!("{other:?}"),
    }
    // The default follows the pacing: the papers' rule paced, the deeper
    // cut where acknowledgements clock the packets out.
    assert_eq!(cubic.config.to_string(), "pa-multcp:n=0.5,yield_by=decrease");
    assert_eq!(pa_multcp("pa-multcp:n=0.5,yield_by=increase").config.to_string(), "pa-multcp:n=0.5");
    for (spec, params) in [
        ("pa-multcp:n=0.5", cubic_flow_params(0.5)),
        ("pa-multcp:n=0.5,pacing=off", yielding_cubic_flow_params(0.5)),
        ("pa-multcp:n=0.5,pacing=split", yielding_cubic_flow_params(0.5)),
    ] {
        match &pa_multcp(spec).probes[0].window {
            ProbeLoop::Cubic(window) => assert_eq!(window.params(), params, "{spec}"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        pa_multcp("pa-multcp:n=0.5,pacing=off,yield_by=decrease").config.to_string(),
        "pa-multcp:n=0.5,pacing=off"
    );
    // At one flowshare and above the key changes nothing.
    let one = pa_multcp("pa-multcp:n=1,yield_by=decrease");
    match &one.probes[0].window {
        ProbeLoop::Cubic(window) => assert_eq!(window.params(), CubicParams::STANDARD),
        other => panic!("{other:?}"),
    }
}

#[test]
fn adjusting_loop_starts_at_a_share_of_the_initial_window() {
    // 1 < N < 2: IW · (N - 1); never below 2 packets.
    assert_eq!(pa_multcp("pa-multcp:n=1.5").congestion_window(), 15_000);
    assert_eq!(pa_multcp("pa-multcp:n=1.01").congestion_window(), 12_000);
    assert_eq!(pa_multcp("pa-multcp:n=4").congestion_window(), 20_000);
}

#[test]
fn cubic_probe_seeds_p_from_cubics_epoch_window() {
    // W = 10 segments at RTT 100 ms is Reno-friendly for CUBIC: p is
    // AIMD(α, 0.3)'s eq. (1) inverted, 2α / (0.3 · 1.7 · 100).
    let host = after_first_probe_loss("pa-multcp:n=4,probe=cubic,assign=consecutive,cap=paper");
    let alpha = CubicParams::STANDARD.alpha;
    let seed = 0.3 * 1.7 * 100.0 / (2.0 * alpha);
    assert!(close(host.controller.loss_event_rate().unwrap(), 1.0 / seed, 1e-14));
    assert_eq!(host.controller.probe_window(), 14_000.0); // β = 0.7
}

#[test]
fn host_with_nothing_in_flight_reopens_both_loops() {
    let mut host = Host::new(pa_multcp("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper"));
    host.send(20);
    // The host dropped the packets without telling: it reports nothing in flight.
    host.outstanding.clear();
    host.in_flight = 0;
    host.event(&[], &[]);
    assert_eq!(host.controller.ledger.len(), 0);
    // Without forgetting, both loops would look full and the packet would
    // go to the probe loop; the adjusting loop (last used) has room again.
    assert_eq!(loops_of(&mut host, 1), [Loop::Adjusting]);
}

#[test]
fn ledger_memory_is_released_as_packets_resolve() {
    let mut host = Host::new(pa_multcp("pa-multcp:n=4,probe=reno,assign=consecutive,cap=paper"));
    host.send(20);
    let numbers: Vec<u64> = (0..20).rev().collect();
    for number in numbers {
        host.event(&[number], &[]);
    }
    assert_eq!(host.controller.ledger.len(), 0);
    assert_eq!((host.controller.probes[0].in_flight, host.controller.adjusting_in_flight), (0, 0));
}

#[test]
fn canonical_spec_parses_back_to_the_same_spec() {
    for text in [
        "pa-multcp",
        "pa-multcp:n=4",
        "pa-multcp:n=0.5,assign=interleave",
        "pa-multcp:probe=cubic,n=2.5",
        "pa-multcp:n=8,assign=consecutive,probe=reno",
        "pa-multcp:n=4,pacing=split",
        "pa-multcp:n=4,pacing=split,split=2.5",
    ] {
        let spec: Spec = text.parse().unwrap();
        let again: Spec = spec.to_string().parse().unwrap();
        assert_eq!(spec, again, "{text} -> {spec}");
    }
    let spec: Spec = "pa-multcp:probe=cubic,assign=interleave,n=4".parse().unwrap();
    assert_eq!(spec.to_string(), "pa-multcp:n=4,assign=interleave");
    assert_eq!(spec.weight(), 4.0);
    assert_eq!(spec.build(&testing::params()).unwrap().snapshot().algorithm, "pa-multcp");
}

#[test]
fn spec_keys_and_errors() {
    let error = |text: &str| text.parse::<Spec>().unwrap_err().to_string();
    assert!(error("pa-multcp:n=4,assign=random").contains(
        "assign = \"random\" is not accepted (accepted: consecutive, interleave, draw, clock, sample, room)"
    ));
    assert!(error("pa-multcp:n=4,probe=bbr").contains("probe = \"bbr\" is not accepted (accepted: reno, cubic)"));
    assert!(error("pa-multcp:n=300").contains("n = 300 is out of range; accepted range [0.01, 256]"));
    assert!(error("pa-multcp:n=0.001,probe=cubic").contains("n = 0.001 is out of range; accepted range [0.01, 256]"));
    assert!(error("pa-multcp:m=1").contains(
        "m is not a known key (accepted: assign, probe, cap, average, pacing, split, thinning, yield_by, whole_packets, probes, n)"
    ));
    assert!(error("pa-multcp:n=4,split=2").contains("split is the gain of pacing=split; set pacing=split too"));
    assert!(error("pa-multcp:n=4,cap=paper,average=smoothed")
        .contains("average is the average the measured cap scales; set cap=measured"));
    assert!(error("pa-multcp:n=4,average=median")
        .contains("average = \"median\" is not accepted (accepted: epochs, smoothed)"));
    assert!(error("pa-multcp:n=4,pacing=split,split=1").contains("split = 1 is out of range"));
    assert!(error("pa-multcp:n=8,probes=0").contains("probes = 0 is out of range; accepted range [1, 16]"));
    assert!(error("pa-multcp:n=8,probes=2.5").contains("probes = 2.5 is not a whole number"));
    assert!(error("pa-multcp:n=8,probes=2,cap=paper").contains("probes above 1 needs cap=measured"));
}

#[test]
fn several_probes_split_the_flowshares_and_the_probes_packets() {
    let mut host = Host::new(pa_multcp("pa-multcp:n=8,probes=4,pacing=off"));
    assert_eq!(host.controller.config().to_string(), "pa-multcp:n=8,pacing=off,probes=4");
    // Four probes and an adjusting loop worth 4, each starting at the
    // initial window of 10 packets.
    assert_eq!(host.controller.congestion_window(), 50_000);
    let sent: Vec<u64> = host.send_allowed(usize::MAX).collect();
    assert_eq!(sent.len(), 50);
    let per_probe: Vec<usize> = host.controller.probes.iter().map(|probe| probe.in_flight / 1000).collect();
    assert_eq!(per_probe, [10, 10, 10, 10], "every probe sends its window");
    assert_eq!(host.controller.adjusting_in_flight, 10_000);
    // In slow start the cap is N - K times the probes' mean window.
    host.event(&sent, &[]);
    let controller = &host.controller;
    assert_eq!(controller.probe_window(), 20_000.0);
    assert_eq!(controller.w_max().map(|packets| packets * 1000.0), Some(4.0 * 20_000.0));
    assert_eq!(controller.snapshot().value("probes"), Some(Value::Integer(4)));
    // A loss in one probe halves (CUBIC: 0.7 times) that probe alone.
    let sent: Vec<u64> = host.send_allowed(usize::MAX).collect();
    let owner = |number: u64| host.controller.ledger.owner(number);
    let lost = *sent.iter().find(|&&n| owner(n) == Some(Owner::Probe(2))).unwrap();
    host.event(&[], &[lost]);
    let windows: Vec<f64> = host.controller.probes.iter().map(|probe| probe.window.window()).collect();
    assert_eq!(windows, [20_000.0, 20_000.0, 14_000.0, 20_000.0]);
    // `p` is the first probe's: the third's loss is not in its history.
    assert_eq!(host.controller.loss_event_rate(), None);
}

#[test]
fn probes_are_no_more_than_the_whole_flowshares() {
    let config = |text: &str| crate::testing::config::<PaMulTcpConfig>(text);
    assert_eq!(config("pa-multcp:n=8,probes=4").active_probes(), 4);
    assert_eq!(config("pa-multcp:n=2.5,probes=4").active_probes(), 2);
    assert_eq!(config("pa-multcp:n=0.5,probes=4").active_probes(), 1);
    // N = K: the probes alone, N separate flows.
    let two = config("pa-multcp:n=2,probes=2");
    assert!(!two.has_adjusting_loop());
    let mut host = Host::new(pa_multcp("pa-multcp:n=2,probes=2"));
    assert_eq!(host.controller.congestion_window(), 20_000);
    host.send_allowed(usize::MAX).for_each(drop);
    assert_eq!(host.controller.probes[1].in_flight, 10_000);
    assert_eq!(host.controller.snapshot().value("adjusting_window"), None);
    // A weight change that leaves fewer whole flowshares leaves the extra
    // probe idle, and the adjusting loop (kept at its minimum of 2 packets
    // while it was not used) takes up the half flowshare.
    host.controller.set_weight(1.5).unwrap();
    assert_eq!(host.controller.config().active_probes(), 1);
    assert_eq!(host.controller.congestion_window(), 10_000 + 2_000);
}

#[test]
fn split_pacing_draws_like_an_unpaced_connection_and_spaces_at_its_gain() {
    let split = pa_multcp("pa-multcp:n=4,pacing=split,split=2");
    assert_eq!(split.config.assignment, Assignment::Draw);
    assert_eq!(split.pacing_rate(), Some(2 * split.mean_pacing_rate()));
    let off = pa_multcp("pa-multcp:n=4,pacing=off");
    assert_eq!(off.pacing_rate(), None);
    assert_eq!(off.mean_pacing_rate(), split.mean_pacing_rate());
    // Half a flowshare spaces a burst as weight one would: twice the gain.
    let scavenger = pa_multcp("pa-multcp:n=0.5,pacing=split,split=2");
    assert_eq!(scavenger.pacing_rate(), Some(4 * scavenger.mean_pacing_rate()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn random_event_sequences_keep_both_loops_sane(
        n in prop_oneof![0.01f64..=256.0, 0.01f64..4.0],
        interleave in any::<bool>(),
        cubic in any::<bool>(),
        probes in 1usize..=4,
        ops in proptest::collection::vec(testing::op(), 1..40),
    ) {
        let assignment = if interleave { Assignment::Interleave } else { Assignment::Consecutive };
        let probe = if cubic { ProbeKind::Cubic } else { ProbeKind::Reno };
        let config = PaMulTcpConfig::new(n, assignment, probe).unwrap().with_probes(probes).unwrap();
        let mut host = Host::new(PaMulTcp::new(config, &testing::params()));
        for op in &ops {
            host.apply(op);
            let controller = &host.controller;
            let snapshot = controller.snapshot();
            let minimum = 2 * host.mss;
            let probe = snapshot.number("probe_window").unwrap() as usize;
            prop_assert!(probe >= minimum, "{op:?}: {snapshot:?}");
            prop_assert!(controller.probes.iter().all(|probe| probe.window.window() >= minimum as f64));
            let adjusting = controller.adjusting.window();
            prop_assert!(adjusting.is_finite() && adjusting >= minimum as f64, "{op:?}: {snapshot:?}");
            let adjusting_window = snapshot.number("adjusting_window").map(|window| window as usize);
            let active = controller.config.active_probes();
            prop_assert_eq!(adjusting_window.is_some(), controller.config.n > active as f64);
            // The connection's window: each loop's whole packets.
            let whole = |window: usize| window / host.mss * host.mss;
            let probes: usize = controller.active_probes().iter().map(|probe| whole(probe.window.window() as usize)).sum();
            let total = probes + adjusting_window.map_or(0, whole);
            prop_assert!(snapshot.congestion_window.abs_diff(total) <= host.mss * (active + 1), "{op:?}: {snapshot:?}");
            if let Some(p) = snapshot.number("loss_event_rate") {
                prop_assert!(p > 0.0 && p <= 1.0, "{op:?}: {snapshot:?}");
            }
            if let Some(w_max) = snapshot.number("w_max") {
                prop_assert!(w_max.is_finite() && w_max > 0.0, "{op:?}: {snapshot:?}");
            }
            let aimd = controller.adjusting.aimd();
            prop_assert!(aimd.increase.is_finite() && aimd.decrease > 0.0 && aimd.decrease < 1.0, "{aimd:?}");
            prop_assert!(snapshot.pacing_rate.is_some());
            let in_flight = controller.probes.iter().map(|probe| probe.in_flight).sum::<usize>()
                + controller.adjusting_in_flight;
            prop_assert_eq!(in_flight, host.in_flight, "{:?}", op);
        }
    }

    #[test]
    fn w_max_decreases_as_p_grows(
        n in 1.01f64..=256.0,
        cubic in any::<bool>(),
        p in 1e-9f64..1.0,
        factor in 1.0001f64..100.0,
        rtt_ms in 0u64..2000,
    ) {
        let probe = if cubic { ProbeKind::Cubic } else { ProbeKind::Reno };
        let config = PaMulTcpConfig::new(n, Assignment::Consecutive, probe).unwrap();
        let rtt = Duration::from_millis(rtt_ms);
        let higher = (p * factor).min(1.0);
        let (low, high) = (config.w_max(p, rtt).unwrap(), config.w_max(higher, rtt).unwrap());
        prop_assert!(low.is_finite() && high.is_finite());
        prop_assert!(high <= low, "n={n} p={p}: W_max {low} -> {high} at p={higher}");
    }
}

#[test]
fn the_probe_keeps_whole_packets_in_its_window() {
    // A separate flow in quiche or Linux TCP sends only when a whole packet
    // fits; the probe stands for one, so half a packet of room leaves it
    // closed and the packet goes to the adjusting loop.
    let mut host = Host::new(pa_multcp("pa-multcp:n=4,assign=interleave,probe=reno,cap=paper"));
    host.send(20); // even numbers probe, odd adjusting
    host.event(&[0], &[]); // the probe's slow start: 11 packets of window
    host.event(&[], &[2]); // a loss halves it to 5.5
    host.event(&[4, 6, 8], &[]); // 5 of the probe's packets in flight
    host.event(&[1], &[]); // the adjusting loop opens
    let probe = host.controller.probe_window();
    assert_eq!(probe, 5_500.0);
    assert_eq!(host.controller.probes[0].in_flight, 5_000);
    host.send(2);
    assert_eq!(host.controller.probes[0].in_flight, 5_000, "the probe took a packet half of which its window lacks");
    assert_eq!(host.controller.last_loop(), Some(Loop::Adjusting));
}
