//! What the runner reads from the simulator's pcaps, read with Debian's
//! tshark: handshakes and versions from the server side's Initials, Retry
//! packets and ClientHellos on the client side, the first and last 1-RTT
//! packet of the server (goodput), and the server's stream limit.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::process::Stdio;

/// The port every server listens on (the runner's).
const SERVER_PORT: u16 = 443;

/// Whether tshark is installed, or one line saying how to install it.
pub fn available() -> Result<(), String> {
    let found = Command::new("tshark")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if found {
        Ok(())
    } else {
        Err("tshark is not installed; the trace checks need it: apt-get install tshark".to_string())
    }
}

/// Rows of `fields` of the packets of `pcap` matching `filter`.
fn tshark(pcap: &Path, filter: &str, fields: &[&str], keylog: Option<&Path>) -> Result<Vec<Vec<String>>, String> {
    if !pcap.exists() {
        return Err(format!("no packet trace {}", pcap.display()));
    }
    let mut command = Command::new("tshark");
    command.arg("-n").arg("-r").arg(pcap).arg("-Y").arg(filter).args(["-T", "fields", "-E", "separator=/t"]);
    command.args(["-d", &format!("udp.port=={SERVER_PORT},quic")]);
    if let Some(keylog) = keylog.filter(|k| k.exists()) {
        command.arg("-o").arg(format!("tls.keylog_file:{}", keylog.display()));
    }
    for field in fields {
        command.args(["-e", field]);
    }
    let output =
        command.stdin(Stdio::null()).stderr(Stdio::piped()).output().map_err(|e| format!("cannot run tshark: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty() && !l.contains("could be dangerous"));
        return Err(format!("tshark failed on {}: {}", pcap.display(), last.unwrap_or("").trim()));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text.lines().map(|line| line.split('\t').map(String::from).collect()).collect())
}

/// The occurrences of a field in one frame (coalesced packets give several).
fn occurrences(value: &str) -> Vec<&str> {
    value.split(',').collect()
}

/// Initial packets the server sent, as (SCID, version), from the server
/// side's trace.
pub fn server_initials(right: &Path) -> Result<Vec<(String, String)>, String> {
    let rows = tshark(
        right,
        &format!("udp.srcport == {SERVER_PORT} && quic.long.packet_type == 0"),
        &["quic.long.packet_type", "quic.scid", "quic.version"],
        None,
    )?;
    let mut initials = Vec::new();
    for row in rows {
        let (Some(types), Some(scids), Some(versions)) = (row.first(), row.get(1), row.get(2)) else { continue };
        let (types, scids, versions) = (occurrences(types), occurrences(scids), occurrences(versions));
        for (i, kind) in types.iter().enumerate() {
            if *kind == "0" {
                let scid = scids.get(i).copied().unwrap_or("").to_string();
                let version = versions.get(i).copied().unwrap_or("").to_string();
                initials.push((scid, version));
            }
        }
    }
    Ok(initials)
}

/// The runner's handshake count and version check: distinct server SCIDs
/// in Initials, and the one version they carry.
pub struct Handshakes {
    pub count: usize,
    pub versions: BTreeSet<String>,
}

pub fn handshakes(right: &Path) -> Result<Handshakes, String> {
    let initials = server_initials(right)?;
    let scids: BTreeSet<&String> = initials.iter().map(|(scid, _)| scid).collect();
    let versions = initials.iter().map(|(_, v)| normalize_version(v)).collect();
    Ok(Handshakes { count: scids.len(), versions })
}

fn normalize_version(version: &str) -> String {
    let digits = version.trim_start_matches("0x");
    match u32::from_str_radix(digits, 16) {
        Ok(v) => format!("{v:#x}"),
        Err(_) => version.to_string(),
    }
}

/// Retry packets the server sent, on the client side.
pub fn retries(left: &Path) -> Result<usize, String> {
    Ok(tshark(left, &format!("udp.srcport == {SERVER_PORT} && quic.long.packet_type == 3"), &["frame.number"], None)?
        .len())
}

/// ClientHellos the client sent (originals and retransmissions): client
/// datagrams with an Initial whose CRYPTO data starts at offset 0 with more
/// than a Finished's worth of bytes. tshark names the TLS message only
/// where its reassembly completes, so a retransmitted first fragment of a
/// ClientHello that spans two packets (large key shares) would not count
/// by `tls.handshake.type` alone.
pub fn client_hellos(left: &Path) -> Result<usize, String> {
    let rows = tshark(
        left,
        &format!("udp.dstport == {SERVER_PORT} && quic.long.packet_type == 0 && quic.crypto.offset == 0"),
        &["quic.crypto.offset", "quic.crypto.length"],
        None,
    )?;
    let starts = rows
        .iter()
        .filter(|row| {
            let offsets = row.first().map(|v| occurrences(v)).unwrap_or_default();
            let lengths = row.get(1).map(|v| occurrences(v)).unwrap_or_default();
            offsets.iter().zip(lengths.iter()).any(|(o, l)| *o == "0" && l.parse::<u64>().is_ok_and(|l| l >= 200))
        })
        .count();
    let named = tshark(
        left,
        &format!("udp.dstport == {SERVER_PORT} && tls.handshake.type == 1"),
        &["tls.handshake.type"],
        None,
    )?
    .iter()
    .map(|row| row.first().map_or(0, |v| occurrences(v).iter().filter(|t| **t == "1").count()))
    .sum();
    Ok(starts.max(named))
}

/// Time (s) between the first and the last 1-RTT packet the server sent,
/// on the client side: the runner's goodput interval.
pub fn server_1rtt_span(left: &Path, keylog: Option<&Path>) -> Result<Option<f64>, String> {
    let rows = tshark(
        left,
        &format!("udp.srcport == {SERVER_PORT} && quic.header_form == 0"),
        &["frame.time_relative"],
        keylog,
    )?;
    let times: Vec<f64> = rows.iter().filter_map(|r| r.first().and_then(|t| t.trim().parse().ok())).collect();
    match (times.first(), times.last()) {
        (Some(first), Some(last)) if last > first => Ok(Some(last - first)),
        _ => Ok(None),
    }
}

/// The bidirectional stream limit in the server's transport parameters
/// (needs the TLS secrets).
pub fn server_stream_limit(left: &Path, keylog: &Path) -> Result<Option<u64>, String> {
    let field = "tls.quic.parameter.initial_max_streams_bidi";
    let rows = tshark(left, &format!("udp.srcport == {SERVER_PORT} && {field}"), &[field], Some(keylog))?;
    Ok(rows.iter().filter_map(|r| r.first().and_then(|v| occurrences(v).first().and_then(|x| x.parse().ok()))).next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_normalized() {
        assert_eq!(normalize_version("0x00000001"), "0x1");
        assert_eq!(normalize_version("0x6b3343cf"), "0x6b3343cf");
        assert_eq!(normalize_version("junk"), "junk");
    }
}
