//! Tests of [`crate::window`].

use super::*;

const MSS: usize = 1000;

fn params() -> Params {
    Params { initial_window_packets: 10, max_datagram_size: MSS, ..Params::default() }
}

/// Sends packets `numbers` and acknowledges them one by one.
fn send_and_ack(window: &mut WindowLoop, numbers: std::ops::Range<u64>) {
    for n in numbers.clone() {
        window.on_sent(n);
    }
    for n in numbers {
        window.on_ack(n, MSS, true);
    }
}

#[test]
fn slow_start_adds_one_packet_per_packet_acknowledged() {
    let mut window = WindowLoop::new(Aimd::STANDARD, &params());
    send_and_ack(&mut window, 0..10);
    assert_eq!(window.window(), 20_000.0);
}

#[test]
fn rapid_slow_start_adds_two_packets_per_ack_up_to_its_threshold_then_one() {
    // 10 packets acked: 5 take the window from 10 to 20 packets at two per
    // ack (threshold 20 000 bytes), the other 5 add one each: 25 packets.
    let mut window = WindowLoop::new(Aimd::STANDARD, &params()).with_rapid_slow_start(20_000.0);
    send_and_ack(&mut window, 0..10);
    assert_eq!(window.window(), 25_000.0);
}

#[test]
fn congestion_avoidance_adds_a_packets_per_window_acknowledged() {
    // After a loss at 20 packets with b = 1/2: window 10 packets, in CA.
    // AIMD(3, 1/2) acknowledging one window (10 packets of 1000 bytes)
    // adds 3000 * 1000 / w per ack: 10000 -> 10300 -> 10591.26...
    let mut window = WindowLoop::new(Aimd { increase: 3.0, decrease: 0.5 }, &params());
    send_and_ack(&mut window, 0..10);
    assert!(window.on_loss(10));
    assert_eq!(window.window(), 10_000.0);
    assert!(!window.in_slow_start());
    window.on_sent(11);
    window.on_ack(11, MSS, true);
    assert_eq!(window.window(), 10_300.0);
    window.on_sent(12);
    window.on_ack(12, MSS, true);
    assert!((window.window() - (10_300.0 + 3_000_000.0 / 10_300.0)).abs() < 1e-9);
}

/// AIMD(4, 1/8) standing for 4 flows, grown to 16 packets, packets 6..30
/// in flight.
fn four_flows_with_16_packets_and_30_sent() -> WindowLoop {
    let mut window = WindowLoop::new(Aimd { increase: 4.0, decrease: 0.125 }, &params());
    window.set_virtual_flows(4.0);
    send_and_ack(&mut window, 0..6);
    for n in 6..30 {
        window.on_sent(n);
    }
    window
}

#[test]
fn per_flow_decrease_takes_b_for_each_virtual_flow_the_event_hits() {
    // AIMD(4, 1/8) standing for 4 flows, 16 packets: k losses in one
    // event hit h(k) = 4 (1 - (3/4)^k) flows, 1, 1.75, 2.3125, ..., each
    // taking b times the hit flow's size bias, 1 + 0.165 * 3/4.
    let mut window = four_flows_with_16_packets_and_30_sent();
    let b = 0.125 * hit_window_bias(4.0);
    assert!((hit_window_bias(4.0) - (1.0 + RENO_HIT_WINDOW_EXCESS * 0.75)).abs() < 1e-12);
    assert!(window.on_loss(7));
    assert!((window.window() - 16_000.0 * (1.0 - b)).abs() < 1e-9);
    assert!(!window.on_loss(8));
    assert!((window.window() - 16_000.0 * (1.0 - 1.75 * b)).abs() < 1e-9);
    assert!(!window.on_loss(9));
    assert!((window.window() - 16_000.0 * (1.0 - 2.3125 * b)).abs() < 1e-9);
    assert_eq!(window.ssthresh(), window.window());
    // Never more than half: all four flows halving.
    for n in 10..30 {
        window.on_loss(n);
    }
    assert!((window.window() - 8_000.0).abs() < 1e-6);
}

#[test]
fn one_flow_needs_no_size_bias_and_many_flows_take_the_reno_one() {
    assert_eq!(hit_window_bias(1.0), 1.0);
    assert_eq!(hit_window_bias(0.5), 1.0);
    assert!((RENO_HIT_WINDOW_EXCESS - 0.1654).abs() < 1e-4);
    assert!((hit_window_bias(1e9) - 1.0 - RENO_HIT_WINDOW_EXCESS).abs() < 1e-9);
}

#[test]
fn a_later_loss_of_the_event_keeps_what_the_flows_not_hit_grew() {
    let mut window = four_flows_with_16_packets_and_30_sent();
    let b = 0.125 * hit_window_bias(4.0);
    assert!(window.on_loss(6));
    window.on_ack(7, MSS, true);
    let grown = window.window();
    assert!(grown > 16_000.0 * (1.0 - b));
    // The second loss hits 0.75 more flows: their share of the window
    // before the event comes off the window as it is now.
    assert!(!window.on_loss(8));
    assert!((window.window() - (grown - 16_000.0 * 0.75 * b)).abs() < 1e-9);
}

#[test]
fn the_flows_an_event_did_not_hit_grow_during_its_recovery() {
    // One loss of four flows: three quarters of AIMD(4, 1/8)'s growth
    // goes on while the acknowledgements of older packets arrive.
    let mut window = four_flows_with_16_packets_and_30_sent();
    assert!(window.on_loss(6));
    let after = window.window();
    window.on_ack(7, MSS, true);
    assert_eq!(window.window(), after + 0.75 * 4.0 * 1000.0 * 1000.0 / after);
    // One flow alone (virtual flows 1) does not grow in recovery.
    let mut one = WindowLoop::new(Aimd::STANDARD, &params());
    send_and_ack(&mut one, 0..6);
    for n in 6..30 {
        one.on_sent(n);
    }
    one.on_loss(6);
    let after = one.window();
    one.on_ack(7, MSS, true);
    assert_eq!(one.window(), after);
}

#[test]
fn window_after_loss_is_one_minus_b_times_w_and_one_decrease_per_event() {
    let mut window = WindowLoop::new(Aimd { increase: 4.0, decrease: 0.125 }, &params());
    send_and_ack(&mut window, 0..6); // 16 packets
    for n in 6..20 {
        window.on_sent(n);
    }
    assert!(window.on_loss(7));
    assert_eq!(window.window(), 16_000.0 * 0.875);
    assert_eq!(window.ssthresh(), 14_000.0);
    // More losses of packets sent before the decrease: same loss event.
    assert!(!window.on_loss(9));
    assert!(!window.on_loss(19));
    assert_eq!(window.window(), 14_000.0);
    assert!(window.in_recovery());
    // Acks of packets sent before the decrease do not grow the window.
    window.on_ack(8, MSS, true);
    assert_eq!(window.window(), 14_000.0);
    // A packet sent after the decrease ends recovery; its loss is a new event.
    window.on_sent(20);
    window.on_ack(20, MSS, true);
    assert!(!window.in_recovery());
    window.on_sent(21);
    assert!(window.on_loss(21));
}

#[test]
fn alongside_another_window_congestion_avoidance_spreads_a_over_both() {
    // Window 10 packets in CA next to a 10-packet delay window: one RTT
    // acknowledges 20 packets, so each adds 1000 * 1000 / 20 000 = 50 bytes.
    let mut window = WindowLoop::new(Aimd::STANDARD, &params());
    send_and_ack(&mut window, 0..10);
    assert!(window.on_loss(10));
    window.on_sent(11);
    window.on_ack_alongside(11, MSS, true, 10_000.0);
    assert_eq!(window.window(), 10_050.0);
    // Slow start is not spread: one byte per byte acknowledged.
    let mut window = WindowLoop::new(Aimd::STANDARD, &params());
    window.on_sent(0);
    window.on_ack_alongside(0, MSS, true, 10_000.0);
    assert_eq!(window.window(), 11_000.0);
}

#[test]
fn persistent_congestion_can_take_the_slow_start_threshold_in_bytes() {
    let mut window = WindowLoop::new(Aimd::STANDARD, &params());
    window.on_persistent_congestion_to(17_000.0);
    assert_eq!((window.ssthresh(), window.window()), (17_000.0, 2_000.0));
    window.on_persistent_congestion_to(500.0);
    assert_eq!(window.ssthresh(), 2_000.0);
}

#[test]
fn window_never_drops_below_two_packets() {
    let mut window = WindowLoop::new(Aimd { increase: 1.0, decrease: 0.9 }, &params());
    for n in 0..5 {
        window.on_sent(n);
        window.on_loss(n);
    }
    assert_eq!(window.window(), 2_000.0);
}

#[test]
fn persistent_congestion_collapses_to_the_minimum_window() {
    let mut window = WindowLoop::new(Aimd::STANDARD, &params());
    send_and_ack(&mut window, 0..10);
    window.on_sent(10);
    window.on_persistent_congestion(0.75);
    assert_eq!(window.ssthresh(), 15_000.0);
    assert_eq!(window.window(), 2_000.0);
    // The losses that follow for packets sent before it are absorbed.
    assert!(!window.on_loss(10));
    assert_eq!(window.window(), 2_000.0);
}

#[test]
fn cap_clamps_window_and_ssthresh_and_stops_growth() {
    let mut window = WindowLoop::new(Aimd::STANDARD, &params());
    send_and_ack(&mut window, 0..10); // 20 packets
    window.set_cap(15_000.0);
    assert_eq!(window.window(), 15_000.0);
    assert_eq!(window.ssthresh(), 15_000.0);
    send_and_ack(&mut window, 10..30);
    assert_eq!(window.window(), 15_000.0);
}

#[test]
fn app_limited_packets_do_not_grow_the_window() {
    let mut tracker = AppLimitedTracker::default();
    tracker.on_sent(1);
    tracker.on_app_limited();
    tracker.on_sent(2);
    tracker.on_sent(3);
    assert!(!tracker.may_grow(1));
    assert!(!tracker.may_grow(2));
    assert!(tracker.may_grow(3));
}
