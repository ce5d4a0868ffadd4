//! Two network namespaces joined by a veth pair, so the controller and the host talk over
//! a real (virtual) link with its own queues, qdiscs and addresses, not loopback: the
//! closest this tool gets to the study's two machines on one box. Needs root and
//! iproute2's `ip`; everything made is removed on drop.

use std::collections::BTreeMap;
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;

use crate::{bind, NetError};

/// The host's address on the link.
pub const HOST_IP: Ipv4Addr = Ipv4Addr::new(10, 213, 0, 1);
/// The controller's address on the link.
pub const CONTROLLER_IP: Ipv4Addr = Ipv4Addr::new(10, 213, 0, 2);

/// Which end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The host's namespace.
    Host,
    /// The controller's namespace.
    Controller,
}

/// The two namespaces and their link; deleted when dropped.
#[derive(Debug)]
pub struct NetnsPair {
    host: String,
    controller: String,
    pid: u32,
}

/// `SO_PRIORITY` that puts a socket's packets in the reserved HTB class 1:10.
pub const RESERVED_CLASS_PRIORITY: u32 = 0x0001_0010;

/// Ethernet, IPv4 and UDP headers: what a datagram costs on the link beyond its payload
/// (what HTB counts, and what the user-level service counts too).
pub const WIRE_OVERHEAD_BYTES: usize = 14 + 20 + 8;

/// `program` in a process group of its own: a Ctrl-C typed at the terminal reaches
/// audiolat alone, which decides what stops, so a second one cannot kill the `ip` or `tc`
/// that is putting the machine back.
fn undisturbed(program: &str) -> Command {
    use std::os::unix::process::CommandExt as _;
    let mut command = Command::new(program);
    command.process_group(0);
    command
}

fn run(program: &str, package: &str, args: &[&str]) -> Result<(), NetError> {
    let out = undisturbed(program).args(args).output().map_err(|e| {
        NetError::Config(format!(
            "cannot run `{program}` ({e}): install the {package} package (apt install {package})"
        ))
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NetError::Config(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

fn ip(args: &[&str]) -> Result<(), NetError> {
    run("ip", "iproute2", args)
}

impl NetnsPair {
    /// Makes `al-host-PID` and `al-ctl-PID`, a veth pair between them with
    /// [`HOST_IP`] and [`CONTROLLER_IP`] on a /24, both up, loopback up.
    pub fn create() -> Result<NetnsPair, NetError> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(NetError::Config(
                "network namespaces need root: run as root, or measure over loopback without them"
                    .into(),
            ));
        }
        let _ = remove_stale();
        let pid = std::process::id();
        let pair = NetnsPair {
            host: format!("al-host-{pid}"),
            controller: format!("al-ctl-{pid}"),
            pid,
        };
        pair.build(pid).inspect_err(|_| pair.remove())?;
        Ok(pair)
    }

    fn build(&self, pid: u32) -> Result<(), NetError> {
        let (h, c) = (self.host.as_str(), self.controller.as_str());
        let (vh, vc) = (format!("alh{pid}"), format!("alc{pid}"));
        ip(&["netns", "add", h])?;
        ip(&["netns", "add", c])?;
        ip(&["link", "add", &vh, "type", "veth", "peer", "name", &vc])?;
        ip(&["link", "set", &vh, "netns", h])?;
        ip(&["link", "set", &vc, "netns", c])?;
        ip(&["-n", h, "addr", "add", &format!("{HOST_IP}/24"), "dev", &vh])?;
        ip(&[
            "-n",
            c,
            "addr",
            "add",
            &format!("{CONTROLLER_IP}/24"),
            "dev",
            &vc,
        ])?;
        for (ns, dev) in [(h, vh.as_str()), (c, vc.as_str())] {
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    fn remove(&self) {
        // Deleting a namespace deletes its end of the veth pair, and with it the other.
        for ns in [&self.host, &self.controller] {
            let _ = undisturbed("ip").args(["netns", "del", ns]).output();
        }
    }

    /// The end's veth device.
    pub fn device(&self, end: End) -> String {
        match end {
            End::Host => format!("alh{}", self.pid),
            End::Controller => format!("alc{}", self.pid),
        }
    }

    /// Shapes what `end` sends with `tc` HTB: a root class at `link_mbps` (the link's
    /// capacity); with `reserved_mbps`, class 1:10 is guaranteed that rate (and may
    /// borrow up to the link's) for sockets with [`RESERVED_CLASS_PRIORITY`], and
    /// everything else shares class 1:20 at the remainder; without, every packet goes
    /// through the one class 1:20, first come first served. Each leaf queues up to the
    /// device's 1000 packets.
    pub fn shape(
        &self,
        end: End,
        link_mbps: f64,
        reserved_mbps: Option<f64>,
    ) -> Result<(), NetError> {
        let (ns, dev) = (self.name(end).to_string(), self.device(end));
        let tc = |args: &[&str]| -> Result<(), NetError> {
            let mut all = vec!["-n", ns.as_str()];
            all.extend_from_slice(args);
            run("tc", "iproute2", &all)
        };
        let kbit = |mbps: f64| format!("{}kbit", (mbps * 1000.0).round() as u64);
        let link = kbit(link_mbps);
        // A burst of ~120 us at the link rate: HTB's default (one MTU) under-runs the rate
        // when the timer is late, which a VM's often is.
        let burst = format!(
            "{}",
            ((link_mbps * 1e6 / 8.0) * 120e-6).max(15_000.0) as u64
        );
        tc(&[
            "qdisc", "add", "dev", &dev, "root", "handle", "1:", "htb", "default", "20",
        ])?;
        // One HTB class: (parent, id, rate, priority).
        let class = |parent: &str, id: &str, rate: &str, prio: &str| {
            tc(&[
                "class", "add", "dev", &dev, "parent", parent, "classid", id, "htb", "rate", rate,
                "ceil", &link, "burst", &burst, "cburst", &burst, "prio", prio, "quantum", "1514",
            ])
        };
        class("1:", "1:1", &link, "0")?;
        let rest = match reserved_mbps {
            Some(r) => {
                class("1:1", "1:10", &kbit(r), "0")?;
                (link_mbps - r).max(1.0)
            }
            None => link_mbps,
        };
        class("1:1", "1:20", &kbit(rest), "1")?;
        Ok(())
    }

    /// The HTB classes of `end`'s device with their counters by class id (`tc -s class
    /// show`, whose text every iproute2 prints; its JSON output lacks HTB classes in some
    /// versions); `None` when `tc` could not be run.
    pub fn class_stats(&self, end: End) -> Option<BTreeMap<String, ClassStats>> {
        let out = undisturbed("tc")
            .args([
                "-n",
                self.name(end),
                "-s",
                "class",
                "show",
                "dev",
                &self.device(end),
            ])
            .output();
        match out {
            Ok(out) => Some(parse_class_stats(&String::from_utf8_lossy(&out.stdout))),
            Err(_) => None,
        }
    }

    /// The namespace's name.
    pub fn name(&self, end: End) -> &str {
        match end {
            End::Host => &self.host,
            End::Controller => &self.controller,
        }
    }

    /// The end's address on the link.
    pub fn ip(end: End) -> Ipv4Addr {
        match end {
            End::Host => HOST_IP,
            End::Controller => CONTROLLER_IP,
        }
    }

    /// A UDP socket bound to `port` on `end`'s address, inside its namespace (made on a
    /// short-lived thread that enters the namespace; the socket stays in it).
    pub fn bind(&self, end: End, port: u16) -> Result<UdpSocket, NetError> {
        let path = format!("/var/run/netns/{}", self.name(end));
        let addr = SocketAddr::from((NetnsPair::ip(end), port));
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let ns = File::open(&path)
                        .map_err(|e| NetError::Config(format!("opening {path}: {e}")))?;
                    // SAFETY: a valid namespace fd; setns affects only this thread.
                    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                        return Err(NetError::Config(format!(
                            "entering network namespace {}: {}",
                            self.name(end),
                            std::io::Error::last_os_error()
                        )));
                    }
                    bind(addr)
                })
                .join()
                .unwrap_or_else(|_| Err(NetError::Config("the namespace thread panicked".into())))
        })
    }
}

/// One HTB class's counters as `tc` printed them (`None` where it printed none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassStats {
    /// Bytes sent.
    pub bytes: Option<u64>,
    /// Packets sent.
    pub packets: Option<u64>,
    /// Packets dropped.
    pub drops: Option<u64>,
    /// Times the class was over its limit.
    pub overlimits: Option<u64>,
}

/// Parses `tc -s class show`: a `class htb 1:10 ...` line, then ` Sent B bytes P pkt
/// (dropped D, overlimits O requeues R)`.
fn parse_class_stats(text: &str) -> BTreeMap<String, ClassStats> {
    let mut map = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"class") && words.len() > 2 {
            current = Some(words[2].to_string());
        } else if words.first() == Some(&"Sent") {
            let Some(class) = current.take() else {
                continue;
            };
            let num = |after: &str| -> Option<u64> {
                let i = words.iter().position(|w| *w == after)?;
                words
                    .get(i + 1)?
                    .trim_matches(|c: char| !c.is_ascii_digit())
                    .parse()
                    .ok()
            };
            map.insert(
                class,
                ClassStats {
                    bytes: words.get(1).and_then(|w| w.parse::<u64>().ok()),
                    packets: words.get(3).and_then(|w| w.parse::<u64>().ok()),
                    drops: num("(dropped"),
                    overlimits: num("overlimits"),
                },
            );
        }
    }
    map
}

/// The pid in a namespace's name (`al-host-PID`, `al-ctl-PID`) or a veth end's
/// (`alhPID`, `alcPID`).
fn owner_pid(name: &str) -> Option<i32> {
    name.strip_prefix("al-host-")
        .or_else(|| name.strip_prefix("al-ctl-"))
        .or_else(|| name.strip_prefix("alh"))
        .or_else(|| name.strip_prefix("alc"))
        .and_then(|p| p.parse::<i32>().ok())
        .filter(|&p| p > 1)
}

/// Whether the device `name` of this namespace is a veth end.
fn is_veth(name: &str) -> bool {
    undisturbed("ip")
        .args(["-d", "link", "show", "dev", name])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(" veth "))
}

/// Namespaces and veth ends (left in this namespace when audiolat died between making
/// the pair and moving it) of audiolats that are gone.
fn dead_names() -> Vec<(i32, String, bool)> {
    let alive = engine::servers::process_running;
    let mut out = Vec::new();
    for (dir, is_ns) in [("/var/run/netns", true), ("/sys/class/net", false)] {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours = if is_ns {
                name.starts_with("al-host-") || name.starts_with("al-ctl-")
            } else {
                name.starts_with("alh") || name.starts_with("alc")
            };
            if let Some(pid) = owner_pid(&name).filter(|&p| ours && !alive(p)) {
                if !is_ns && !is_veth(&name) {
                    continue;
                }
                out.push((pid, name, is_ns));
            }
        }
    }
    out.sort();
    out
}

/// What audiolats that are gone (killed outright) left of their links, by pid: network
/// namespaces with the `tc` qdiscs audiolat put in them, and veth ends.
pub fn stale() -> std::collections::BTreeMap<i32, Vec<String>> {
    let mut out: std::collections::BTreeMap<i32, Vec<String>> = Default::default();
    for (pid, name, is_ns) in dead_names() {
        let item = if is_ns {
            let qdiscs = undisturbed("tc")
                .args(["-n", &name, "qdisc", "show"])
                .output()
                .map(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .filter(|l| l.starts_with("qdisc htb"))
                        .count()
                })
                .unwrap_or(0);
            if qdiscs > 0 {
                format!("network namespace {name} (with {qdiscs} tc HTB qdisc)")
            } else {
                format!("network namespace {name}")
            }
        } else {
            format!("veth {name}")
        };
        out.entry(pid).or_default().push(item);
    }
    out
}

/// Removes what audiolats that are gone left of their links: their namespaces (with
/// their end of the veth pair, its qdiscs, and so the other end) and any veth end left
/// here. Never looks at a stop flag. Returns what could not be removed.
pub fn remove_stale() -> Vec<String> {
    let mut problems = Vec::new();
    for (_, name, is_ns) in dead_names() {
        let args: Vec<&str> = if is_ns {
            vec!["netns", "del", &name]
        } else {
            vec!["link", "del", &name]
        };
        if let Err(e) = ip(&args) {
            // Deleting one end of a veth pair deletes the other: gone is done.
            let gone = if is_ns {
                !Path::new("/var/run/netns").join(&name).exists()
            } else {
                !Path::new("/sys/class/net").join(&name).exists()
            };
            if !gone {
                problems.push(e.to_string());
            }
        }
    }
    problems
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        self.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc_class_counters_parse() {
        let text = "class htb 1:1 root rate 1Gbit ceil 1Gbit burst 15Kb cburst 15Kb \n Sent 8429220 bytes 9954 pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n\nclass htb 1:20 parent 1:1 prio 1 rate 760Mbit ceil 1Gbit\n Sent 123 bytes 4 pkt (dropped 17, overlimits 9 requeues 0) \n";
        let v = parse_class_stats(text);
        assert_eq!(v["1:1"].packets, Some(9954));
        assert_eq!(v["1:1"].bytes, Some(8429220));
        assert_eq!(v["1:20"].drops, Some(17));
        assert_eq!(v["1:20"].overlimits, Some(9));
    }
}
