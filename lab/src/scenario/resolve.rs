//! Validation of a [`Scenario`] into the [`Setup`] of a run: every value
//! checked against its range, link names resolved into indices, defaults
//! that depend on other keys filled in.

use std::collections::BTreeMap;

use flowshare_controllers::grammar::MAX_WEIGHT;
use flowshare_controllers::Params;
use flowshare_controllers::Spec;

use super::error;
use super::Scenario;
use super::ScenarioError;
use crate::setup::ConnectionSetup;
use crate::setup::Discipline;
use crate::setup::Join;
use crate::setup::Limit;
use crate::setup::LinkSpec;
use crate::setup::Role;
use crate::setup::Setup;
use crate::setup::Traffic;
use crate::Nanos;

/// Checks that `value` lies in `[min, max]` (`min_open`: excluding `min`).
fn range(field: &str, value: f64, min: f64, min_open: bool, max: f64) -> Result<f64, ScenarioError> {
    let above = if min_open { value > min } else { value >= min };
    if value.is_finite() && above && value <= max {
        Ok(value)
    } else {
        let open = if min_open { '(' } else { '[' };
        Err(error(field, format!("= {value} is out of range; accepted range {open}{min}, {max}]")))
    }
}

fn nanos(seconds: f64) -> Nanos {
    (seconds * 1e9).round() as Nanos
}

impl Scenario {
    /// Validates the scenario for the lab and resolves names into a
    /// [`Setup`]: every controller must be one the lab can build (not
    /// `bbr`, which only hosts with their own BBR run).
    pub fn resolve(&self) -> Result<Setup, ScenarioError> {
        let setup = self.resolve_for_hosts()?;
        for (i, flow) in self.flows.iter().enumerate() {
            if let Some(spec) = flow.cc.as_deref().and_then(|text| text.parse::<Spec>().ok()) {
                if let Err(e) = spec.build(&Params::default()) {
                    return Err(error(format!("flow[{i}].cc"), e.to_string()));
                }
            }
        }
        Ok(setup)
    }

    /// Validates the scenario and resolves names into a [`Setup`] for hosts
    /// that run the standard algorithms themselves (the testbed: quiche and
    /// Linux), so that `bbr` is accepted; [`Scenario::resolve`] is the
    /// lab's.
    pub fn resolve_for_hosts(&self) -> Result<Setup, ScenarioError> {
        let duration = range("duration_s", self.duration_s, 0.0, true, 1e6)?;
        let warmup = range("warmup_s", self.warmup_s, 0.0, false, duration)?;
        if warmup >= duration {
            return Err(error("warmup_s", format!("= {warmup} must be below duration_s = {duration}")));
        }
        range("packet_bytes", self.packet_bytes as f64, 64.0, false, 65_535.0)?;
        range("ack_every", self.ack_every as f64, 1.0, false, 64.0)?;
        let max_ack_delay = range("max_ack_delay_ms", self.max_ack_delay_ms, 0.0, true, 1000.0)?;
        let bin = range("bin_s", self.bin_s, 0.001, false, duration)?;
        let spread = range("start_spread_s", self.start_spread_s, 0.0, false, duration)?;
        if self.links.is_empty() {
            return Err(error("link", "at least one [[link]] is required"));
        }
        if self.links.len() > u16::MAX as usize {
            return Err(error("link", "too many links (at most 65535)"));
        }
        let mut by_name = BTreeMap::new();
        let mut links = Vec::new();
        for (i, link) in self.links.iter().enumerate() {
            let field = |name: &str| format!("link[{i}].{name}");
            if link.name.is_empty() {
                return Err(error(field("name"), "is empty"));
            }
            if by_name.insert(link.name.clone(), i).is_some() {
                return Err(error(field("name"), format!("{:?} is used by two links", link.name)));
            }
            let rate_bps = range(&field("rate_mbps"), link.rate_mbps, 0.0, true, 1e6)? * 1e6;
            let delay_ms = range(&field("delay_ms"), link.delay_ms, 0.0, false, 10_000.0)?;
            let discipline = match link.queue.as_str() {
                "droptail" => Discipline::DropTail,
                "red" => Discipline::Red,
                other => {
                    return Err(error(field("queue"), format!("= {other:?} is not a queue (accepted: droptail, red)")))
                }
            };
            let given = [link.buffer_packets.is_some(), link.buffer_bytes.is_some(), link.buffer_bdp.is_some()];
            if given.iter().filter(|&&g| g).count() != 1 {
                return Err(error(
                    field("buffer_packets"),
                    "give exactly one of buffer_packets, buffer_bytes, buffer_bdp",
                ));
            }
            let limit = if let Some(packets) = link.buffer_packets {
                Limit::Packets(range(&field("buffer_packets"), packets as f64, 1.0, false, 1e8)? as usize)
            } else if let Some(bytes) = link.buffer_bytes {
                Limit::Bytes(
                    range(&field("buffer_bytes"), bytes as f64, self.packet_bytes as f64, false, 1e11)? as usize
                )
            } else {
                let multiple = range(&field("buffer_bdp"), link.buffer_bdp.unwrap_or(1.0), 0.0, true, 1000.0)?;
                let rtt_ms = match link.bdp_rtt_ms {
                    Some(rtt) => range(&field("bdp_rtt_ms"), rtt, 0.0, true, 100_000.0)?,
                    None => 2.0 * delay_ms,
                };
                let packets = multiple * rate_bps * rtt_ms * 1e-3 / (8.0 * self.packet_bytes as f64);
                Limit::Packets((packets.round() as usize).max(1))
            };
            let random_loss = range(&field("random_loss"), link.random_loss, 0.0, false, 1.0)?;
            links.push(LinkSpec {
                name: link.name.clone(),
                rate_bps,
                delay: nanos(delay_ms * 1e-3),
                discipline,
                limit,
                random_loss,
                mean_packet_bytes: self.packet_bytes as usize,
            });
        }
        if self.flows.is_empty() {
            return Err(error("flow", "at least one [[flow]] is required"));
        }
        let mut connections = Vec::new();
        for (i, flow) in self.flows.iter().enumerate() {
            let field = |name: &str| format!("flow[{i}].{name}");
            let count = range(&field("count"), flow.count as f64, 1.0, false, 100_000.0)? as usize;
            let names: Vec<&Vec<String>> = match (flow.path.is_empty(), flow.paths.is_empty()) {
                (false, true) => vec![&flow.path],
                (true, false) => flow.paths.iter().collect(),
                _ => {
                    return Err(error(
                        field("path"),
                        "give exactly one of path (single path) or paths (one per subflow)",
                    ))
                }
            };
            let mut paths = Vec::new();
            for (p, path) in names.iter().enumerate() {
                if path.is_empty() || path.len() > 32 {
                    return Err(error(field("path"), format!("path {p} must name 1 to 32 links")));
                }
                let resolved = path
                    .iter()
                    .map(|name| {
                        by_name.get(name).copied().ok_or_else(|| {
                            let known: Vec<&str> = self.links.iter().map(|l| l.name.as_str()).collect();
                            error(field("path"), format!("link {name:?} does not exist (links: {})", known.join(", ")))
                        })
                    })
                    .collect::<Result<Vec<usize>, _>>()?;
                paths.push(resolved);
            }
            let access_delay =
                nanos(range(&field("access_delay_ms"), flow.access_delay_ms, 0.0, false, 10_000.0)? * 1e-3);
            let jitter = nanos(range(&field("jitter_ms"), flow.jitter_ms, 0.0, false, 10_000.0)? * 1e-3);
            let start = range(&field("start_s"), flow.start_s, 0.0, false, duration)?;
            let stop = match flow.stop_s {
                Some(stop) => Some(nanos(range(&field("stop_s"), stop, start, false, 1e6)?)),
                None => None,
            };
            let positive = |name: &str, value: Option<f64>, max: f64| -> Result<f64, ScenarioError> {
                let value =
                    value.ok_or_else(|| error(field(name), format!("is required for traffic = {:?}", flow.traffic)))?;
                range(&field(name), value, 0.0, true, max)
            };
            let traffic = match flow.traffic.as_str() {
                "bulk" => {
                    let join = match (flow.join_bytes, flow.join_at_s) {
                        (None, None) => None,
                        (Some(bytes), Some(at)) => {
                            range(&field("join_bytes"), bytes as f64, 1.0, false, 1e10)?;
                            let at = range(&field("join_at_s"), at, 0.0, false, duration)?;
                            let share =
                                range(&field("join_share"), flow.join_share.unwrap_or(1) as f64, 1.0, false, 1e6)?;
                            let weight = flow
                                .join_weight
                                .map(|weight| range(&field("join_weight"), weight, 0.0, true, MAX_WEIGHT))
                                .transpose()?;
                            Some(Join {
                                at: nanos(at),
                                segments: bytes.div_ceil(self.packet_bytes as u64) as u32,
                                share: share as u32,
                                weight,
                            })
                        }
                        _ => return Err(error(field("join_bytes"), "join_bytes and join_at_s go together")),
                    };
                    if join.is_none() && flow.join_weight.is_some() {
                        return Err(error(field("join_weight"), "needs a joining transfer (join_bytes, join_at_s)"));
                    }
                    Traffic::Bulk { join }
                }
                "transfer" => {
                    let bytes = positive("bytes", flow.bytes.map(|b| b as f64), 1e10)?;
                    Traffic::Transfer { segments: (bytes / self.packet_bytes as f64).ceil() as u32 }
                }
                "cbr" => {
                    let rate = positive("rate_mbps", flow.rate_mbps, 1e6)?;
                    let on_off = match (flow.on_s, flow.off_s) {
                        (None, None) => None,
                        (Some(on), Some(off)) => Some((
                            range(&field("on_s"), on, 0.0, true, 1e6)?,
                            range(&field("off_s"), off, 0.0, true, 1e6)?,
                        )),
                        _ => return Err(error(field("on_s"), "on_s and off_s go together")),
                    };
                    Traffic::Cbr { rate_bps: rate * 1e6, on_off }
                }
                "web" => Traffic::Web {
                    mean_object_bytes: positive("mean_object_bytes", flow.mean_object_bytes, 1e10)?,
                    pareto_shape: range(&field("pareto_shape"), flow.pareto_shape.unwrap_or(1.2), 1.0, true, 100.0)?,
                    mean_off_seconds: positive("off_s", flow.off_s, 1e6)?,
                },
                other => {
                    return Err(error(
                        field("traffic"),
                        format!("= {other:?} is not a traffic type (accepted: bulk, transfer, cbr, web)"),
                    ))
                }
            };
            let cc = match (&traffic, &flow.cc) {
                (Traffic::Cbr { .. }, None) => None,
                (Traffic::Cbr { .. }, Some(_)) => {
                    return Err(error(field("cc"), "CBR traffic has no controller; remove cc"))
                }
                (_, None) => {
                    return Err(error(
                        field("cc"),
                        "is required (a controller spec such as \"reno\" or \"multcp:n=4\")",
                    ))
                }
                (_, Some(text)) => Some(text.parse::<Spec>().map_err(|e| error(field("cc"), e.to_string()))?),
            };
            if paths.len() > 1 && !matches!(traffic, Traffic::Bulk { join: None }) {
                return Err(error(field("paths"), "multipath connections carry bulk traffic only"));
            }
            let role = flow.role.unwrap_or(match (&traffic, &cc) {
                (Traffic::Cbr { .. } | Traffic::Web { .. }, _) => Role::Other,
                (_, Some(spec)) if spec.algorithm().is_weighted() => Role::Weighted,
                (_, Some(_)) => Role::Standard,
                _ => Role::Weighted,
            });
            let label = flow.label.clone().unwrap_or_else(|| cc.as_ref().map_or("cbr".into(), |spec| spec.to_string()));
            for _ in 0..count {
                connections.push(ConnectionSetup {
                    label: label.clone(),
                    cc: cc.clone(),
                    role,
                    paths: paths.clone(),
                    access_delay,
                    jitter,
                    jitter_shape: flow.jitter_shape.unwrap_or_default(),
                    pacing: flow.pacing.unwrap_or(self.pacing),
                    start: nanos(start),
                    stop,
                    traffic: traffic.clone(),
                });
            }
        }
        let flows: usize = connections.iter().map(|c| c.paths.len()).sum();
        if flows > u32::MAX as usize / 2 {
            return Err(error("flow", "too many flows"));
        }
        Ok(Setup {
            name: self.name.clone(),
            duration: nanos(duration),
            warmup: nanos(warmup),
            bin: nanos(bin),
            packet_bytes: self.packet_bytes,
            ack_every: self.ack_every,
            max_ack_delay: nanos(max_ack_delay * 1e-3),
            start_spread: nanos(spread),
            links,
            connections,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t"
duration_s = 10

[[link]]
name = "b"
rate_mbps = 10
delay_ms = 20
buffer_bdp = 1.0

[[flow]]
cc = "reno"
count = 3
path = ["b"]
"#;

    fn resolve_error(text: &str) -> String {
        match Scenario::from_toml(text) {
            Ok(scenario) => scenario.resolve().unwrap_err().to_string(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_valid_file_resolves_with_defaults() {
        let setup = Scenario::from_toml(GOOD).unwrap().resolve().unwrap();
        assert_eq!(setup.connections.len(), 3);
        assert_eq!(setup.packet_bytes, 1500);
        assert_eq!(setup.ack_every, 2);
        assert_eq!(setup.max_ack_delay, 25_000_000);
        // 10 Mbit/s * 40 ms / 12 000 bits = 33.3 packets.
        assert_eq!(setup.links[0].limit, Limit::Packets(33));
        assert_eq!(setup.connections[0].role, Role::Standard);
    }

    #[test]
    fn unknown_keys_are_named() {
        let text = GOOD.replace("count = 3", "count = 3\nwieght = 2");
        let message = resolve_error(&text);
        assert!(message.contains("wieght"), "{message}");
        assert!(message.starts_with("line 14: unknown field `wieght`"), "{message}");
    }

    #[test]
    fn bad_values_name_the_field_and_the_range() {
        let message = resolve_error(&GOOD.replace("rate_mbps = 10", "rate_mbps = -1"));
        assert_eq!(message, "link[0].rate_mbps = -1 is out of range; accepted range (0, 1000000]");
        let message = resolve_error(&GOOD.replace("cc = \"reno\"", "cc = \"multcp:n=0\""));
        assert!(message.starts_with("flow[0].cc: invalid controller spec"), "{message}");
        let message = resolve_error(&GOOD.replace("path = [\"b\"]", "path = [\"x\"]"));
        assert_eq!(message, "flow[0].path: link \"x\" does not exist (links: b)");
        let message = resolve_error(&GOOD.replace("buffer_bdp = 1.0", "queue = \"fq\"\nbuffer_bdp = 1.0"));
        assert!(message.contains("link[0].queue = \"fq\" is not a queue (accepted: droptail, red)"), "{message}");
        let message = resolve_error(&GOOD.replace("cc = \"reno\"", "cc = \"reno\"\ntraffic = \"transfer\""));
        assert_eq!(message, "flow[0].bytes: is required for traffic = \"transfer\"");
    }

    #[test]
    fn missing_required_keys_are_named() {
        let message = resolve_error(&GOOD.replace("duration_s = 10", ""));
        assert!(message.contains("duration_s"), "{message}");
    }

    #[test]
    fn a_flows_pacing_overrides_the_scenarios_and_reaches_its_sender() {
        let run = |text: &str| {
            let setup = Scenario::from_toml(text).unwrap().resolve().unwrap();
            let pacing: Vec<bool> = setup.connections.iter().map(|c| c.pacing).collect();
            let result = crate::sim::Simulation::new(setup, 1).run();
            (pacing, result.links[0].stats.drops, result.packets_sent)
        };
        let paced = run(GOOD);
        let unpaced = run(&GOOD.replace("duration_s = 10", "duration_s = 10\npacing = false"));
        let own = run(&GOOD.replace("count = 3", "count = 3\npacing = false"));
        assert_eq!(paced.0, [true; 3]);
        assert_eq!(own.0, [false; 3]);
        // The flows' own key runs exactly what the scenario's does.
        assert_eq!((own.1, own.2), (unpaced.1, unpaced.2));
        assert_ne!((paced.1, paced.2), (unpaced.1, unpaced.2));
    }

    #[test]
    fn scenarios_round_trip_through_toml() {
        let scenario = Scenario::from_toml(GOOD).unwrap();
        assert_eq!(Scenario::from_toml(&scenario.to_toml()).unwrap(), scenario);
    }
}
