//! What the simulator container measured: its real-time health (the
//! testbed's criterion) and the per-flow bytes the bottleneck delivered
//! towards the client (crosstraffic's QUIC and iperf throughputs).

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

/// Real-time health of one emulation, from ns3-summary.json.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Health {
    pub ticks: u64,
    pub late_ticks: u64,
    pub max_lag_ms: f64,
    pub mean_lag_ms: f64,
    pub socket_drops: u64,
    pub queue_drops: u64,
    /// No raw-socket drop, lag never above 50 ms, at most 1 % of the
    /// 100 ms ticks more than 5 ms late.
    pub trusted: bool,
}

pub fn health(summary: &Path) -> Result<Health, String> {
    let text = std::fs::read_to_string(summary)
        .map_err(|e| format!("the simulator wrote no summary ({}: {e})", summary.display()))?;
    let json: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", summary.display()))?;
    let lag = &json["lag"];
    let ticks = lag["ticks"].as_u64().unwrap_or(0);
    let late_ticks = lag["late_ticks"].as_u64().unwrap_or(0);
    let max_lag_ms = lag["max_ms"].as_f64().unwrap_or(f64::NAN);
    let mean_lag_ms = lag["mean_ms"].as_f64().unwrap_or(f64::NAN);
    let socket_drops =
        json["sockets"].as_array().map(|sockets| sockets.iter().filter_map(|s| s["drops"].as_u64()).sum()).unwrap_or(0);
    let queue_drops = json["links"]
        .as_array()
        .map(|links| links.iter().filter_map(|l| l["down_dropped"].as_u64()).sum())
        .unwrap_or(0);
    let trusted = ticks > 0 && socket_drops == 0 && max_lag_ms <= 50.0 && late_ticks * 100 <= ticks;
    Ok(Health { ticks, late_ticks, max_lag_ms, mean_lag_ms, socket_drops, queue_drops, trusted })
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
    let text = std::fs::read_to_string(series).map_err(|e| format!("{}: {e}", series.display()))?;
    let mut header = Vec::new();
    // (sim time, quic bytes, iperf bytes) per interval
    let mut bins: Vec<(f64, u64, u64)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        if n == 0 {
            header = fields.iter().map(|f| f.to_string()).collect();
            continue;
        }
        let get = |name: &str| header.iter().position(|h| h == name).and_then(|i| fields.get(i)).copied();
        let (Some(sim), Some(direction), Some(protocol), Some(source), Some(bytes)) =
            (get("sim_s"), get("direction"), get("protocol"), get("source"), get("bytes"))
        else {
            continue;
        };
        if direction != "d" {
            continue;
        }
        let (Ok(sim), Ok(bytes)) = (sim.parse::<f64>(), bytes.parse::<u64>()) else { continue };
        let quic = protocol == "17" && source == server;
        let tcp = protocol == "6" && source == iperf;
        if !quic && !tcp {
            continue;
        }
        if bins.last().is_none_or(|b| (b.0 - sim).abs() > 1e-6) {
            bins.push((sim, 0, 0));
        }
        if let Some(bin) = bins.last_mut() {
            if quic {
                bin.1 += bytes;
            } else {
                bin.2 += bytes;
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
