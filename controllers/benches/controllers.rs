//! Cost of each controller per acknowledgement and per loss event.
//!
//! Every controller is warmed up into congestion avoidance, then driven with
//! the events a host gives it: one iteration of `ack` is one packet sent and
//! one congestion event acknowledging the oldest packet in flight (a steady
//! flight of 100 packets); one iteration of `loss` is one packet sent and a
//! congestion event declaring it lost, a new loss event every time, with
//! nothing else in flight.
//!
//! Run with `cargo bench -p flowshare-controllers`; results are in
//! controllers/README.md.

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

use criterion::criterion_group;
use criterion::criterion_main;
use criterion::Criterion;
use flowshare_controllers::AckedPacket;
use flowshare_controllers::CongestionEvent;
use flowshare_controllers::Controller;
use flowshare_controllers::LostPacket;
use flowshare_controllers::Params;
use flowshare_controllers::RttEstimate;
use flowshare_controllers::SentPacket;
use flowshare_controllers::Spec;
use flowshare_controllers::Time;

const SPECS: &[&str] = &[
    "reno",
    "cubic",
    "multcp:n=4",
    "multcp:n=4,ack_delay=paper",
    "pa-multcp:n=4",
    // Unpaced, as the demo and the testbed run it: the cap's smoothed average.
    "pa-multcp:n=4,pacing=off",
    "mulcubic:n=4",
    "mulcubic:n=4,decrease=per-flow",
    "mulcubic:n=30",
    "multfrc:n=4",
    "ctcp",
    "mcompound:group=bench",
];

const MSS: usize = 1200;
const FLIGHT: usize = 100;
const RTT: Duration = Duration::from_millis(50);

/// A host keeping a steady flight of packets.
struct Driver {
    controller: Box<dyn Controller>,
    next_number: u64,
    now: Time,
    outstanding: VecDeque<(u64, Time)>,
}

impl Driver {
    fn new(spec: &str) -> Driver {
        let spec: Spec = spec.parse().expect("benchmark specs are valid");
        let controller = spec
            .build(&Params { max_datagram_size: MSS, ..Params::default() })
            .expect("benched specs are flowshare's own");
        let mut driver = Driver { controller, next_number: 0, now: Time::ZERO, outstanding: VecDeque::new() };
        for _ in 0..FLIGHT {
            driver.send();
        }
        // Leave slow start with one loss, then run a few thousand acks.
        driver.lose_newest();
        for _ in 0..5_000 {
            driver.ack_oldest();
        }
        driver
    }

    fn rtt() -> RttEstimate {
        RttEstimate { latest: RTT, smoothed: RTT, variation: RTT / 4, min: RTT }
    }

    fn send(&mut self) {
        let packet = SentPacket {
            number: self.next_number,
            bytes: MSS,
            time: self.now,
            bytes_in_flight: self.outstanding.len() * MSS,
        };
        self.controller.on_packet_sent(&packet);
        self.outstanding.push_back((self.next_number, self.now));
        self.next_number += 1;
    }

    /// One packet sent and the oldest one acknowledged.
    fn ack_oldest(&mut self) {
        self.now = self.now + RTT / FLIGHT as u32;
        self.send();
        let (number, sent_time) = self.outstanding.pop_front().expect("a flight is outstanding");
        let acked = [AckedPacket { number, sent_time, bytes: MSS }];
        let in_flight = self.outstanding.len() * MSS;
        self.controller.on_congestion_event(&CongestionEvent {
            now: self.now,
            acked: &acked,
            lost: &[],
            rtt: Driver::rtt(),
            rtt_updated: true,
            prior_in_flight: in_flight + MSS,
            bytes_in_flight: in_flight,
        });
    }

    /// Acknowledges every packet in flight.
    fn drain(&mut self) {
        while let Some((number, sent_time)) = self.outstanding.pop_front() {
            let acked = [AckedPacket { number, sent_time, bytes: MSS }];
            let in_flight = self.outstanding.len() * MSS;
            self.controller.on_congestion_event(&CongestionEvent {
                now: self.now,
                acked: &acked,
                lost: &[],
                rtt: Driver::rtt(),
                rtt_updated: true,
                prior_in_flight: in_flight + MSS,
                bytes_in_flight: in_flight,
            });
        }
    }

    /// One packet sent and declared lost, more than an RTT after the last
    /// loss, so it starts a new loss event.
    fn lose_newest(&mut self) {
        self.now = self.now + 2 * RTT;
        self.send();
        let (number, _) = self.outstanding.pop_back().expect("just sent");
        let lost = [LostPacket { number, bytes: MSS }];
        let in_flight = self.outstanding.len() * MSS;
        self.controller.on_congestion_event(&CongestionEvent {
            now: self.now,
            acked: &[],
            lost: &lost,
            rtt: Driver::rtt(),
            rtt_updated: false,
            prior_in_flight: in_flight + MSS,
            bytes_in_flight: in_flight,
        });
    }
}

fn per_ack(c: &mut Criterion) {
    let mut group = c.benchmark_group("ack");
    for spec in SPECS {
        let mut driver = Driver::new(spec);
        group.bench_function(*spec, |b| {
            b.iter(|| {
                driver.ack_oldest();
                black_box(driver.controller.congestion_window());
            })
        });
    }
    group.finish();
}

fn per_loss(c: &mut Criterion) {
    let mut group = c.benchmark_group("loss");
    for spec in SPECS {
        let mut driver = Driver::new(spec);
        // Acknowledge the flight so that only the packet lost in each
        // iteration is outstanding, as in a steady state.
        driver.drain();
        group.bench_function(*spec, |b| {
            b.iter(|| {
                driver.lose_newest();
                black_box(driver.controller.congestion_window());
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    targets = per_ack, per_loss
}
criterion_main!(benches);
