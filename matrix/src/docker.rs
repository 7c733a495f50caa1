//! The Docker engine through its command-line client: every call has a
//! time limit, runs in its own process group (so that Ctrl-C reaches only
//! `flowshare matrix`, which then cleans up) and fails with one line.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

/// Every container and network of a matrix run starts with this.
pub const PREFIX: &str = "flowshare-matrix-";

/// Runs `docker ARGS`, returning stdout, or one line with stderr's last line.
pub fn docker(args: &[&str], limit: Duration) -> Result<String, String> {
    let mut command = Command::new("docker");
    command.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let mut child = command.spawn().map_err(|e| format!("cannot run docker: {e} (is the docker client installed?)"))?;
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("docker {} did not finish within {} s", args.join(" "), limit.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("docker {}: {e}", args.join(" "))),
        }
    }
    let output = child.wait_with_output().map_err(|e| format!("docker {}: {e}", args.join(" ")))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("").trim().to_string();
        Err(format!("docker {} failed: {last}", args.first().copied().unwrap_or("")))
    }
}

/// A short call (inspect, create, rm).
pub fn quick(args: &[&str]) -> Result<String, String> {
    docker(args, Duration::from_secs(60))
}

/// The engine's version, or why it does not answer.
pub fn engine() -> Result<String, String> {
    match docker(&["version", "--format", "{{.Server.Version}}"], Duration::from_secs(20)) {
        Ok(version) => Ok(version.trim().to_string()),
        Err(e) if e.starts_with("cannot run docker") => {
            Err("no docker client: install Docker (apt-get install docker.io docker-compose)".to_string())
        }
        Err(e) => Err(format!(
            "no Docker engine answers ({}): start it (systemctl start docker, or dockerd &) or set DOCKER_HOST",
            e.trim_start_matches("docker version failed: ")
        )),
    }
}

pub fn image_exists(image: &str) -> bool {
    quick(&["image", "inspect", "--format", "{{.Id}}", image]).is_ok()
}

pub fn image_id(image: &str) -> String {
    quick(&["image", "inspect", "--format", "{{.Id}}", image]).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Names of containers (all states) whose name starts with `prefix`.
pub fn containers(prefix: &str) -> Result<Vec<String>, String> {
    let out = quick(&["ps", "-a", "--filter", &format!("name={prefix}"), "--format", "{{.Names}}"])?;
    Ok(out.lines().map(str::trim).filter(|n| n.starts_with(prefix)).map(String::from).collect())
}

/// Names of networks whose name starts with `prefix`.
pub fn networks(prefix: &str) -> Result<Vec<String>, String> {
    let out = quick(&["network", "ls", "--filter", &format!("name={prefix}"), "--format", "{{.Name}}"])?;
    Ok(out.lines().map(str::trim).filter(|n| n.starts_with(prefix)).map(String::from).collect())
}

/// Every network with its IPv4 subnets.
pub fn subnets() -> Result<Vec<(String, Vec<String>)>, String> {
    let names = quick(&["network", "ls", "--format", "{{.Name}}"])?;
    let mut result = Vec::new();
    for name in names.lines().map(str::trim).filter(|n| !n.is_empty()) {
        let out = quick(&["network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}", name])
            .unwrap_or_default();
        result.push((name.to_string(), out.split_whitespace().map(String::from).collect()));
    }
    Ok(result)
}

/// Removes containers and networks with `prefix`; returns what it removed.
pub fn remove_all(prefix: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let containers = containers(prefix)?;
    for name in &containers {
        let _ = quick(&["rm", "-f", "-v", name]);
    }
    let networks = networks(prefix)?;
    for name in &networks {
        let _ = quick(&["network", "rm", name]);
    }
    let left_c = self::containers(prefix)?;
    let left_n = self::networks(prefix)?;
    if !left_c.is_empty() || !left_n.is_empty() {
        return Err(format!(
            "could not remove {} (docker rm -f / docker network rm them by hand)",
            left_c.iter().chain(left_n.iter()).cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok((containers, networks))
}

/// State of a container: (status, exit code).
pub fn state(name: &str) -> Result<(String, i64), String> {
    Ok(states(&[name])?.remove(0))
}

/// [`state`] of several containers with one `docker inspect`, in order.
pub fn states(names: &[&str]) -> Result<Vec<(String, i64)>, String> {
    let mut args = vec!["inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}"];
    args.extend_from_slice(names);
    let out = quick(&args)?;
    let mut lines = out.lines();
    Ok(names
        .iter()
        .map(|_| {
            let mut words = lines.next().unwrap_or_default().split_whitespace();
            let status = words.next().unwrap_or("unknown").to_string();
            let code = words.next().and_then(|c| c.parse().ok()).unwrap_or(-1);
            (status, code)
        })
        .collect())
}

/// Writes a container's output (stdout and stderr) to `path`.
pub fn save_logs(name: &str, path: &std::path::Path) {
    let Ok(file) = std::fs::File::create(path) else { return };
    let Ok(errors) = file.try_clone() else { return };
    let mut command = Command::new("docker");
    command.args(["logs", "--timestamps", name]).stdin(Stdio::null()).stdout(file).stderr(errors).process_group(0);
    if let Ok(mut child) = command.spawn() {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// One container of a test, as `docker create` is told it: every container
/// sits on one network at a fixed address, may manage its interfaces
/// (NET_ADMIN, for the routes through the simulator) and finds the others by
/// the names the runner's layout gives them.
#[derive(Debug, Clone)]
pub struct Container {
    name: String,
    hostname: &'static str,
    network: String,
    address: &'static str,
    capabilities: Vec<&'static str>,
    env: Vec<String>,
    hosts: Vec<String>,
    volumes: Vec<String>,
    image: String,
}

impl Container {
    /// `name` (with [`PREFIX`]) on `network` at `address`, from `image`.
    pub fn new(name: &str, hostname: &'static str, network: &str, address: &'static str, image: &str) -> Container {
        Container {
            name: name.to_string(),
            hostname,
            network: network.to_string(),
            address,
            capabilities: vec!["NET_ADMIN"],
            env: Vec::new(),
            hosts: Vec::new(),
            volumes: Vec::new(),
            image: image.to_string(),
        }
    }

    /// The container's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Also this capability (the simulator's raw sockets need NET_RAW).
    pub fn capability(mut self, capability: &'static str) -> Container {
        self.capabilities.push(capability);
        self
    }

    /// An environment variable.
    pub fn env(mut self, key: &str, value: impl std::fmt::Display) -> Container {
        self.env.push(format!("{key}={value}"));
        self
    }

    /// A name in the container's /etc/hosts.
    pub fn host(mut self, name: &str, address: &str) -> Container {
        self.hosts.push(format!("{name}:{address}"));
        self
    }

    /// A bind mount of `host` at `guest`, read-only if `read_only`.
    pub fn volume(mut self, host: &std::path::Path, guest: &str, read_only: bool) -> Container {
        let mode = if read_only { ":ro" } else { "" };
        self.volumes.push(format!("{}:{guest}{mode}", host.display()));
        self
    }

    /// `docker create`'s arguments for it.
    pub fn create_args(&self) -> Vec<String> {
        let mut args: Vec<String> = ["create", "--name", &self.name, "--hostname", self.hostname, "--network"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend([self.network.clone(), "--ip".into(), self.address.into()]);
        let options = [
            ("--cap-add", &self.capabilities.iter().map(|c| c.to_string()).collect::<Vec<_>>()),
            ("--env", &self.env),
            ("--add-host", &self.hosts),
            ("--volume", &self.volumes),
        ];
        for (option, values) in options {
            for value in values {
                args.extend([option.to_string(), value.clone()]);
            }
        }
        args.push(self.image.clone());
        args
    }

    /// Creates the container (not started).
    pub fn create(&self) -> Result<(), String> {
        let args = self.create_args();
        quick(&args.iter().map(String::as_str).collect::<Vec<_>>()).map(|_| ())
    }

    /// Starts the created container.
    pub fn start(&self) -> Result<(), String> {
        quick(&["start", &self.name]).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_is_created_with_its_address_capabilities_environment_hosts_and_volumes() {
        let container = Container::new("flowshare-matrix-server", "server", "rightnet", "198.19.0.100", "img:latest")
            .capability("NET_RAW")
            .env("ROLE", "server")
            .host("sim", "198.19.0.2")
            .volume(std::path::Path::new("/tmp/www"), "/www", true)
            .volume(std::path::Path::new("/tmp/logs"), "/logs", false);
        assert_eq!(
            container.create_args().join(" "),
            "create --name flowshare-matrix-server --hostname server --network rightnet --ip 198.19.0.100 \
             --cap-add NET_ADMIN --cap-add NET_RAW --env ROLE=server --add-host sim:198.19.0.2 \
             --volume /tmp/www:/www:ro --volume /tmp/logs:/logs img:latest"
        );
    }
}
