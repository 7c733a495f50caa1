//! What the testbed needs from the machine, checked before anything is
//! touched: root (namespaces, raw sockets), Debian's ns-3 and a C++
//! compiler (the scenario program), iperf3 (Linux TCP peers) and the
//! network tools the runner calls.

use std::path::Path;
use std::path::PathBuf;

/// Where a program is found: `PATH`, then the sbin directories, which a
/// root shell started by `sudo` or `su` may not have on its `PATH`.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Whether this process runs as root (effective user ID 0).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|effective| effective == "0"))
        })
        .unwrap_or(false)
}

/// Checks everything; the error is one line naming what is missing and how
/// to install it.
pub fn check() -> Result<(), String> {
    let mut missing = Vec::new();
    let mut packages = Vec::new();
    if !is_root() {
        missing.push("root (network namespaces and raw sockets need it: run with sudo)".to_string());
    }
    if !Path::new("/usr/include/ns3/emu-fd-net-device-helper.h").is_file() {
        missing.push("ns-3".to_string());
        packages.extend(["ns3", "libns3-dev"]);
    }
    for (program, package) in [
        ("g++", "g++"),
        ("iperf3", "iperf3"),
        ("ip", "iproute2"),
        ("ss", "iproute2"),
        ("tc", "iproute2"),
        ("ethtool", "ethtool"),
        ("iptables", "iptables"),
    ] {
        if find_program(program).is_none() {
            missing.push(program.to_string());
            if !packages.contains(&package) {
                packages.push(package);
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let install = if packages.is_empty() {
        String::new()
    } else {
        format!("; install with `scripts/setup --testbed` or `apt-get install {}`", packages.join(" "))
    };
    Err(format!("the testbed needs {}{install}", missing.join(", ")))
}
