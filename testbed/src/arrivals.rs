//! How each flow's packets reached the bottleneck and which it dropped, from
//! the packet traces of a run with `--pcap` (`flowshare testbed arrivals
//! DIR`).
//!
//! At a full drop-tail queue a packet is dropped when it arrives to find no
//! room, so a flow whose packets come back to back loses more of the later
//! ones: what share a sender gets depends on how its packets arrive, not
//! only on its window. `trace_node_right.pcap` holds every data packet the
//! servers sent as ns-3 received it, before the queue; `trace_node_left.pcap`
//! what left the bottleneck. A packet in the first and not in the second was
//! dropped (the testbed's links lose nothing else unless a scenario asks for
//! `random_loss`). Packets of a flow less than [`BURST_GAP`] apart are one
//! burst; each packet's position in its burst says whether it came first or
//! behind others of its own flow.

use std::collections::HashMap;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::hash::Hash;
use std::hash::Hasher;
use std::path::Path;

use flowshare_lab::report::Table;

use crate::scenario::TestbedScenario;

/// Packets of one flow closer together than this are one burst: far below
/// a packet's transmission time at the testbed's rates (600 µs for 1,500
/// bytes at 20 Mbit/s), far above the microseconds between two packets a
/// sender writes back to back.
pub const BURST_GAP: f64 = 100e-6;

/// Packets shorter than this (IP bytes) are acknowledgements and control,
/// not data, and are left out.
const DATA_BYTES: usize = 500;

/// A data packet this soon after an acknowledgement of its flow passed
/// ns-3 towards the server is taken for the sender's answer to it; later
/// ones were held by something else (pacing, an empty window).
pub const RESPONSE_WINDOW: f64 = 2e-3;

/// Burst positions reported: 1, 2, 3 and 4 or later.
const POSITIONS: usize = 4;

/// A flow: protocol, source and destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// 6 (TCP) or 17 (UDP).
    pub protocol: u8,
    /// Source address and port.
    pub source: ([u8; 4], u16),
    /// Destination address and port.
    pub destination: ([u8; 4], u16),
}

impl FlowKey {
    /// `udp 198.19.0.100:22000`, the sender's side.
    pub fn label(&self) -> String {
        let [a, b, c, d] = self.source.0;
        let transport = if self.protocol == 6 { "tcp" } else { "udp" };
        format!("{transport} {a}.{b}.{c}.{d}:{}", self.source.1)
    }
}

/// One IPv4 TCP or UDP packet of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Packet {
    /// When ns-3 saw it, seconds.
    pub time: f64,
    /// Its flow.
    pub flow: FlowKey,
    /// Its IP length, bytes.
    pub bytes: usize,
    /// A hash of its transport header and the first bytes after it, the
    /// same in both traces.
    pub id: u64,
}

/// The IPv4 TCP and UDP packets of a pcap file's contents; anything else is
/// skipped.
pub fn read_pcap(data: &[u8]) -> Result<Vec<Packet>, String> {
    let header = data.get(..24).ok_or("not a pcap file: shorter than its 24-byte header")?;
    let magic = [header[0], header[1], header[2], header[3]];
    let (little, nanoseconds) = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] => (true, false),
        [0x4d, 0x3c, 0xb2, 0xa1] => (true, true),
        [0xa1, 0xb2, 0xc3, 0xd4] => (false, false),
        [0xa1, 0xb2, 0x3c, 0x4d] => (false, true),
        _ => return Err("not a pcap file: unknown magic number".into()),
    };
    let word = |bytes: &[u8]| {
        let bytes = [bytes[0], bytes[1], bytes[2], bytes[3]];
        if little {
            u32::from_le_bytes(bytes)
        } else {
            u32::from_be_bytes(bytes)
        }
    };
    let link_type = word(&header[20..24]);
    let ip_offset = match link_type {
        1 => 14,
        101 | 228 => 0,
        other => return Err(format!("pcap link type {other} is not Ethernet or raw IPv4")),
    };
    let mut packets = Vec::new();
    let mut offset = 24;
    while offset < data.len() {
        let record = data.get(offset..offset + 16).ok_or(format!("pcap record header cut short at byte {offset}"))?;
        let seconds = word(&record[0..4]) as f64;
        let fraction = word(&record[4..8]) as f64 * if nanoseconds { 1e-9 } else { 1e-6 };
        let length = word(&record[8..12]) as usize;
        let frame = data
            .get(offset + 16..offset + 16 + length)
            .ok_or(format!("pcap record at byte {offset} cut short: {length} bytes announced"))?;
        offset += 16 + length;
        if ip_offset == 14 && frame.get(12..14) != Some(&[0x08, 0x00][..]) {
            continue;
        }
        if let Some((flow, bytes, id)) = frame.get(ip_offset..).and_then(ipv4) {
            packets.push(Packet { time: seconds + fraction, flow, bytes, id });
        }
    }
    Ok(packets)
}

/// An IPv4 packet's flow, IP length and identity, if it is TCP or UDP.
fn ipv4(ip: &[u8]) -> Option<(FlowKey, usize, u64)> {
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return None;
    }
    let header = usize::from(ip[0] & 0x0f) * 4;
    let protocol = ip[9];
    let transport = ip.get(header..)?;
    if !matches!(protocol, 6 | 17) || transport.len() < 8 {
        return None;
    }
    let address = |at: usize| [ip[at], ip[at + 1], ip[at + 2], ip[at + 3]];
    let port = |at: usize| u16::from_be_bytes([transport[at], transport[at + 1]]);
    let flow = FlowKey { protocol, source: (address(12), port(0)), destination: (address(16), port(2)) };
    // TCP's sequence number and timestamps, QUIC's protected header and
    // payload: the first 80 bytes tell a packet from every other of its flow.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    flow.hash(&mut hasher);
    transport[..transport.len().min(80)].hash(&mut hasher);
    Some((flow, ip.len(), hasher.finish()))
}

/// What one flow sent into the bottleneck after the warm-up.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowArrivals {
    /// Data packets that reached the queue.
    pub packets: u64,
    /// Of those, dropped.
    pub dropped: u64,
    /// Their IP bytes.
    pub bytes: u64,
    /// Packets and dropped packets by position in their burst: 1, 2, 3, 4+.
    pub by_position: [(u64, u64); POSITIONS],
    /// Seconds from each packet behind others in its burst to the one
    /// before it: how far apart a sender's bursts reach the queue (back to
    /// back, a few µs; PA-MulTCP's `pacing=split` spaces them on purpose).
    pub gaps_in_bursts: Vec<f64>,
    /// How long the sender took to answer an acknowledgement: from an
    /// acknowledgement leaving ns-3 towards the server to the flow's next
    /// data packet reaching ns-3, seconds, where that came within
    /// [`RESPONSE_WINDOW`] (a window-limited sender's answer).
    pub responses: Vec<f64>,
    /// Acknowledgements towards the server after the warm-up.
    pub acknowledgements: u64,
}

impl FlowArrivals {
    /// Bursts the packets came in: one per packet that came first in its.
    pub fn bursts(&self) -> u64 {
        self.by_position[0].0
    }

    /// Mean IP bytes of its packets: the queue counts packets and the
    /// share counts bytes, so a flow of smaller packets takes less of the
    /// link for the same count (QUIC's 1,378 against Linux TCP's 1,500).
    pub fn bytes_per_packet(&self) -> Option<f64> {
        (self.packets > 0).then(|| self.bytes as f64 / self.packets as f64)
    }
}

/// Per flow, what `sent` (the trace before the queue) brought to the
/// bottleneck from `warmup` seconds after its first data packet on, and
/// what of it `delivered` (the trace after it) does not hold.
pub fn analyse(sent: &[Packet], delivered: &[Packet], warmup: f64) -> Vec<(FlowKey, FlowArrivals)> {
    let through: HashSet<(FlowKey, u64)> = delivered.iter().map(|packet| (packet.flow, packet.id)).collect();
    let Some(first) = sent.iter().find(|packet| packet.bytes >= DATA_BYTES).map(|packet| packet.time) else {
        return Vec::new();
    };
    let data_flows: HashSet<FlowKey> =
        sent.iter().filter(|packet| packet.bytes >= DATA_BYTES).map(|packet| packet.flow).collect();
    let mut flows: HashMap<FlowKey, FlowArrivals> = HashMap::new();
    // Per flow: the time of its last packet and that packet's position.
    let mut last: HashMap<FlowKey, (f64, usize)> = HashMap::new();
    // Per flow: when the latest acknowledgement not yet answered passed.
    let mut unanswered: HashMap<FlowKey, f64> = HashMap::new();
    for packet in sent {
        if packet.bytes < DATA_BYTES {
            // An acknowledgement (or control) of the data flow going the
            // other way, if there is one.
            let data_flow = FlowKey { source: packet.flow.destination, destination: packet.flow.source, ..packet.flow };
            if data_flows.contains(&data_flow) {
                unanswered.insert(data_flow, packet.time);
                if packet.time - first >= warmup {
                    flows.entry(data_flow).or_default().acknowledgements += 1;
                }
            }
            continue;
        }
        let answered = unanswered.remove(&packet.flow);
        let (position, gap) = match last.get(&packet.flow) {
            Some(&(time, position)) if packet.time - time < BURST_GAP => (position + 1, Some(packet.time - time)),
            _ => (1, None),
        };
        last.insert(packet.flow, (packet.time, position));
        if packet.time - first < warmup {
            continue;
        }
        let flow = flows.entry(packet.flow).or_default();
        if let Some(delay) = answered.map(|at| packet.time - at).filter(|&delay| delay < RESPONSE_WINDOW) {
            flow.responses.push(delay);
        }
        let dropped = !through.contains(&(packet.flow, packet.id));
        flow.gaps_in_bursts.extend(gap);
        flow.packets += 1;
        flow.bytes += packet.bytes as u64;
        flow.dropped += u64::from(dropped);
        let slot = &mut flow.by_position[position.min(POSITIONS) - 1];
        slot.0 += 1;
        slot.1 += u64::from(dropped);
    }
    let mut flows: Vec<(FlowKey, FlowArrivals)> = flows.into_iter().filter(|(_, flow)| flow.packets > 0).collect();
    flows.sort_by(|a, b| b.1.packets.cmp(&a.1.packets).then(a.0.cmp(&b.0)));
    flows
}

/// The `quantile` (0 to 1) of `sorted` (ascending); `None` when empty.
pub(crate) fn quantile(sorted: &[f64], quantile: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    Some(sorted[((last as f64) * quantile).round() as usize])
}

/// The median and 90th percentile of `values`; `None` when empty.
fn median_and_high(values: &[f64]) -> Option<(f64, f64)> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    quantile(&sorted, 0.5).zip(quantile(&sorted, 0.9))
}

/// `flowshare testbed arrivals DIR`: the table of a run directory's traces.
pub fn report(dir: &Path) -> Result<String, String> {
    let read = |name: &str| {
        let path = dir.join(name);
        let data = std::fs::read(&path).map_err(|e| {
            format!("cannot read {}: {e} (run the testbed with --pcap to keep the traces)", path.display())
        })?;
        read_pcap(&data).map_err(|e| format!("{}: {e}", path.display()))
    };
    let sent = read("trace_node_right.pcap")?;
    let delivered = read("trace_node_left.pcap")?;
    let warmup = TestbedScenario::warmup_of_run(dir)?;
    let flows = analyse(&sent, &delivered, warmup);
    let span = |packets: &[Packet]| {
        let data: Vec<f64> = packets.iter().filter(|p| p.bytes >= DATA_BYTES).map(|p| p.time).collect();
        data.last().zip(data.first()).map_or(0.0, |(last, first)| last - first - warmup)
    };
    let seconds = span(&sent).max(1e-9);
    let percent = |(packets, dropped): (u64, u64)| {
        if packets == 0 {
            "-".to_string()
        } else {
            format!("{:.2} ({packets})", 100.0 * dropped as f64 / packets as f64)
        }
    };
    let mut table = Table::new(&[
        "flow",
        "Mbit/s in",
        "packets",
        "bytes per packet",
        "dropped %",
        "per burst",
        "per ack",
        "dropped % at 1st (packets)",
        "2nd",
        "3rd",
        "4th+",
        "gap in burst µs, median / 90 %",
        "answer µs, median / 90 % (answered %)",
    ]);
    for (key, flow) in &flows {
        let gaps = match median_and_high(&flow.gaps_in_bursts) {
            Some((median, high)) => format!("{:.0} / {:.0}", median * 1e6, high * 1e6),
            None => "-".to_string(),
        };
        let answer = match median_and_high(&flow.responses) {
            Some((median, high)) => format!(
                "{:.0} / {:.0} ({:.0})",
                median * 1e6,
                high * 1e6,
                100.0 * flow.responses.len() as f64 / flow.acknowledgements.max(1) as f64
            ),
            None => "-".to_string(),
        };
        let mut row = vec![
            key.label(),
            format!("{:.2}", flow.bytes as f64 * 8.0 / seconds / 1e6),
            flow.packets.to_string(),
            flow.bytes_per_packet().map_or("-".to_string(), |bytes| format!("{bytes:.0}")),
            format!("{:.2}", 100.0 * flow.dropped as f64 / flow.packets.max(1) as f64),
            format!("{:.2}", flow.packets as f64 / flow.bursts().max(1) as f64),
            // How many packets the receiver lets an acknowledgement cover
            // (an ack-clocked sender's burst, before the window grows).
            if flow.acknowledgements == 0 {
                "-".to_string()
            } else {
                format!("{:.2}", flow.packets as f64 / flow.acknowledgements as f64)
            },
        ];
        row.extend(flow.by_position.iter().map(|&slot| percent(slot)));
        row.push(gaps);
        row.push(answer);
        table.row(row);
    }
    let mut out = format!(
        "{}: data packets reaching the bottleneck from {warmup} s on, a burst being packets less than {} µs apart; \
         an answer is the flow's first data packet within {} ms after an acknowledgement passed ns-3 towards its sender\n",
        dir.display(),
        BURST_GAP * 1e6,
        RESPONSE_WINDOW * 1e3
    );
    let _ = write!(out, "{}", table.render());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pcap file (microseconds, Ethernet) of `packets`: (time, protocol,
    /// source port, IP length, payload byte), all from the server.
    fn pcap(packets: &[(f64, u8, u16, usize, u8)]) -> Vec<u8> {
        let packets: Vec<_> = packets
            .iter()
            .map(|&(t, protocol, port, length, payload)| (t, protocol, port, length, payload, false))
            .collect();
        pcap_both_ways(&packets)
    }

    /// The same with a last field saying whether the packet goes towards
    /// the server (source and destination swapped).
    fn pcap_both_ways(packets: &[(f64, u8, u16, usize, u8, bool)]) -> Vec<u8> {
        // Magic, version 2.4, time zone, accuracy, snapshot length, link type 1.
        let mut data = Vec::new();
        data.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        data.extend_from_slice(&2u16.to_le_bytes());
        data.extend_from_slice(&4u16.to_le_bytes());
        for word in [0u32, 0, 65_535, 1] {
            data.extend_from_slice(&word.to_le_bytes());
        }
        for &(time, protocol, port, length, payload, towards_server) in packets {
            let mut frame = vec![0u8; 12];
            frame.extend_from_slice(&[0x08, 0x00]);
            let mut ip = vec![0u8; length];
            ip[0] = 0x45;
            ip[9] = protocol;
            let (server, client) = (([198, 19, 0, 100], port), ([198, 18, 0, 10], 5201u16));
            let ((source, source_port), (destination, destination_port)) =
                if towards_server { (client, server) } else { (server, client) };
            ip[12..16].copy_from_slice(&source);
            ip[16..20].copy_from_slice(&destination);
            ip[20..22].copy_from_slice(&source_port.to_be_bytes());
            ip[22..24].copy_from_slice(&destination_port.to_be_bytes());
            ip[28] = payload;
            frame.extend_from_slice(&ip);
            let seconds = time.floor();
            let micros = ((time - seconds) * 1e6).round();
            for word in [seconds as u32, micros as u32, frame.len() as u32, frame.len() as u32] {
                data.extend_from_slice(&word.to_le_bytes());
            }
            data.extend_from_slice(&frame);
        }
        data
    }

    #[test]
    fn pairs_and_lone_packets_are_told_apart_and_drops_counted_by_position() {
        // A TCP flow sending pairs 10 µs apart every 2 ms, a UDP flow one
        // packet every 600 µs; the bottleneck drops every second packet of
        // each pair and the UDP flow's every fifth, and the ACKs (60 bytes)
        // are not data.
        let mut sent = Vec::new();
        let mut delivered = Vec::new();
        for k in 0..100u16 {
            let t = 1.0 + f64::from(k) * 2e-3;
            let first = (t, 6, 40_000, 1500, k as u8);
            let second = (t + 10e-6, 6, 40_000, 1500, (k as u8).wrapping_add(128));
            sent.extend([first, second]);
            delivered.push(first);
            let lone = (t + 1e-3, 17, 22_000, 1300, k as u8);
            sent.push(lone);
            if k % 5 != 0 {
                delivered.push(lone);
            }
            sent.push((t + 1.5e-3, 6, 40_000, 60, k as u8));
        }
        sent.sort_by(|a, b| a.0.total_cmp(&b.0));
        let sent = read_pcap(&pcap(&sent)).unwrap();
        let delivered = read_pcap(&pcap(&delivered)).unwrap();
        let flows = analyse(&sent, &delivered, 0.0);
        assert_eq!(flows.len(), 2, "{flows:?}");
        let (tcp_key, tcp) = &flows[0];
        assert_eq!(tcp_key.label(), "tcp 198.19.0.100:40000");
        assert_eq!((tcp.packets, tcp.bursts(), tcp.dropped), (200, 100, 100));
        assert_eq!(tcp.bytes_per_packet(), Some(1500.0));
        assert_eq!(tcp.by_position[0], (100, 0));
        assert_eq!(tcp.by_position[1], (100, 100));
        assert_eq!(tcp.gaps_in_bursts.len(), 100);
        assert!(tcp.gaps_in_bursts.iter().all(|gap| (gap - 10e-6).abs() < 1e-6), "{:?}", tcp.gaps_in_bursts);
        let (udp_key, udp) = &flows[1];
        assert_eq!(udp_key.label(), "udp 198.19.0.100:22000");
        assert_eq!((udp.packets, udp.bursts(), udp.dropped), (100, 100, 20));
        assert_eq!(udp.bytes_per_packet(), Some(1300.0));
        assert_eq!(FlowArrivals::default().bytes_per_packet(), None);
        assert_eq!(udp.by_position[0], (100, 20));
        assert!(udp.gaps_in_bursts.is_empty());
        // The warm-up leaves out what came before it.
        let late = analyse(&sent, &delivered, 0.1);
        assert_eq!(late[0].1.packets, 100, "{late:?}");
    }

    #[test]
    fn a_senders_answer_to_an_acknowledgement_is_timed() {
        // TCP answers each acknowledgement 30 µs after it passed, UDP 200 µs
        // after, except every fourth, which it leaves for 5 ms (not an
        // answer); a second acknowledgement before the answer restarts it.
        let mut packets = Vec::new();
        for k in 0..40u16 {
            let t = 1.0 + f64::from(k) * 10e-3;
            packets.push((t, 6, 40_000, 60, k as u8, true));
            packets.push((t + 30e-6, 6, 40_000, 1500, k as u8, false));
            packets.push((t + 1e-3, 17, 22_000, 60, k as u8, true));
            packets.push((t + 1.1e-3, 17, 22_000, 60, k as u8 ^ 1, true));
            let udp = if k % 4 == 3 { 5e-3 } else { 200e-6 };
            packets.push((t + 1.1e-3 + udp, 17, 22_000, 1300, k as u8, false));
        }
        packets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let sent = read_pcap(&pcap_both_ways(&packets)).unwrap();
        let flows = analyse(&sent, &sent, 0.0);
        let flow = |port: u16| &flows.iter().find(|(key, _)| key.source.1 == port).expect("flow").1;
        let (tcp, udp) = (flow(40_000), flow(22_000));
        // The first acknowledgement passes before the first data packet,
        // where the measured time starts.
        assert_eq!((tcp.packets, tcp.acknowledgements, tcp.responses.len()), (40, 39, 40));
        assert!(tcp.responses.iter().all(|&delay| (delay - 30e-6).abs() < 2e-6), "{:?}", tcp.responses);
        assert_eq!((udp.packets, udp.acknowledgements, udp.responses.len()), (40, 80, 30));
        assert!(udp.responses.iter().all(|&delay| (delay - 200e-6).abs() < 2e-6), "{:?}", udp.responses);
        let mut delays = udp.responses.clone();
        delays.sort_by(f64::total_cmp);
        assert_eq!(quantile(&delays, 0.9).map(|d| (d * 1e6).round()), Some(200.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn what_is_not_a_pcap_file_or_is_cut_short_is_one_error() {
        assert!(read_pcap(b"short").unwrap_err().contains("shorter than its 24-byte header"));
        assert!(read_pcap(&[0u8; 24]).unwrap_err().contains("unknown magic number"));
        let mut data = pcap(&[(1.0, 17, 22_000, 1300, 1)]);
        data.truncate(data.len() - 1);
        assert!(read_pcap(&data).unwrap_err().contains("cut short"), "{:?}", read_pcap(&data));
    }
}
