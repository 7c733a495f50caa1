//! What the simulator container measured: its real-time health (the
//! testbed's criterion) and the per-flow bytes the bottleneck delivered
//! towards the client (crosstraffic's QUIC and iperf throughputs).

use std::path::Path;

use flowshare_testbed::emulator::read_series;
use flowshare_testbed::emulator::read_summary;
use flowshare_testbed::results::Emulation;
use serde::Serialize;

/// Real-time health of one emulation, from ns3-summary.json: the testbed's
/// [`Emulation`] and the bottleneck's queue drops.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Health {
    pub ticks: u64,
    pub late_ticks: u64,
    pub max_lag_ms: f64,
    pub mean_lag_ms: f64,
    pub socket_drops: u64,
    pub queue_drops: u64,
    /// The testbed's criterion ([`Emulation::trusted`]).
    pub trusted: bool,
}

pub fn health(summary: &Path) -> Result<Health, String> {
    let json = read_summary(summary).map_err(|e| format!("the simulator wrote no summary ({e})"))?;
    // The testbed's criterion, from the same program's summary.
    let emulation = Emulation::from_summary(&json);
    let queue_drops = json["links"]
        .as_array()
        .map(|links| links.iter().filter_map(|l| l["down_dropped"].as_u64()).sum())
        .unwrap_or(0);
    Ok(Health {
        ticks: emulation.ticks,
        late_ticks: emulation.late_ticks,
        max_lag_ms: emulation.max_lag_ms,
        mean_lag_ms: emulation.mean_lag_ms,
        socket_drops: emulation.socket_drops,
        queue_drops,
        trusted: emulation.trusted,
    })
}

/// Throughputs while the QUIC transfer ran, from ns3-series.csv.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Shares {
    /// The interval (simulated seconds) in which the QUIC flow delivered data.
    pub from_s: f64,
    pub to_s: f64,
    /// IP bytes per second towards the client, as kbit/s.
    pub quic_kbps: f64,
    pub iperf_kbps: f64,
}

/// The QUIC flow is UDP from `server`, the iperf flow TCP from `iperf`;
/// both measured where the bottleneck delivers them to the client side.
pub fn shares(series: &Path, server: &str, iperf: &str) -> Result<Shares, String> {
    // (sim time, quic bytes, iperf bytes) per interval
    let mut bins: Vec<(f64, u64, u64)> = Vec::new();
    for row in read_series(series)? {
        let quic = row.protocol == 17 && row.source == server;
        let tcp = row.protocol == 6 && row.source == iperf;
        if row.direction != 'd' || (!quic && !tcp) {
            continue;
        }
        if bins.last().is_none_or(|b| (b.0 - row.sim_s).abs() > 1e-6) {
            bins.push((row.sim_s, 0, 0));
        }
        if let Some(bin) = bins.last_mut() {
            if quic {
                bin.1 += row.bytes;
            } else {
                bin.2 += row.bytes;
            }
        }
    }
    // The QUIC transfer: from the first to the last interval in which it
    // delivered more than a handshake's worth.
    let busy: Vec<usize> = (0..bins.len()).filter(|&i| bins[i].1 > 5_000).collect();
    let (Some(&first), Some(&last)) = (busy.first(), busy.last()) else {
        return Err(format!("{}: the QUIC flow delivered nothing", series.display()));
    };
    if last <= first {
        return Err(format!("{}: the QUIC flow delivered data in one interval only", series.display()));
    }
    // Each row is the interval ending at its sim time.
    let interval = if first > 0 { bins[first].0 - bins[first - 1].0 } else { 0.1 };
    let from_s = bins[first].0 - interval;
    let to_s = bins[last].0;
    let span = to_s - from_s;
    let quic: u64 = bins[first..=last].iter().map(|b| b.1).sum();
    let tcp: u64 = bins[first..=last].iter().map(|b| b.2).sum();
    Ok(Shares { from_s, to_s, quic_kbps: quic as f64 * 8.0 / span / 1e3, iperf_kbps: tcp as f64 * 8.0 / span / 1e3 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_count_the_quic_transfer_interval() {
        let dir = std::env::temp_dir().join(format!("flowshare-matrix-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let series = dir.join("series.csv");
        let mut text = String::from(
            "wall_s,sim_s,link,direction,protocol,source,source_port,destination,destination_port,bytes,packets,queue_drops,link_drops,loss_events\n",
        );
        for k in 1..=10 {
            let t = k as f64 * 0.1;
            text += &format!("0,{t:.4},0,d,6,198.19.0.110,5201,198.18.0.90,40000,60000,40,0,0,0\n");
            text += &format!("0,{t:.4},0,u,17,198.18.0.100,5000,198.19.0.100,443,900,1,0,0,0\n");
            if (3..=7).contains(&k) {
                text += &format!("0,{t:.4},0,d,17,198.19.0.100,443,198.18.0.100,5000,60000,44,0,0,0\n");
            }
        }
        std::fs::write(&series, text).unwrap();
        let shares = shares(&series, "198.19.0.100", "198.19.0.110").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!((shares.from_s - 0.2).abs() < 1e-9 && (shares.to_s - 0.7).abs() < 1e-9, "{shares:?}");
        assert!((shares.quic_kbps - 4800.0).abs() < 1e-6, "{shares:?}");
        assert!((shares.iperf_kbps - 4800.0).abs() < 1e-6, "{shares:?}");
    }
}
