//! Two network namespaces joined by a veth pair, so the controller and the host talk over
//! a real (virtual) link with its own queues, qdiscs and addresses, not loopback: the
//! closest this tool gets to the study's two machines on one box. Needs root and
//! iproute2's `ip`; everything made is removed on drop.

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::Command;

use super::{bind, NetError};

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

fn run(program: &str, package: &str, args: &[&str]) -> Result<(), NetError> {
    let out = Command::new(program).args(args).output().map_err(|e| {
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
                "--netns makes network namespaces, which needs root: run as root, or leave --netns out to use loopback".into(),
            ));
        }
        remove_stale();
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
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
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

    /// The HTB classes of `end`'s device with their counters (`tc -s class show`, whose
    /// text every iproute2 prints; its JSON output lacks HTB classes in some versions):
    /// class id -> bytes, packets, drops, overlimits.
    pub fn class_stats(&self, end: End) -> serde_json::Value {
        let out = Command::new("tc")
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
            Ok(out) => parse_class_stats(&String::from_utf8_lossy(&out.stdout)),
            Err(_) => serde_json::Value::Null,
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

/// Parses `tc -s class show`: a `class htb 1:10 ...` line, then ` Sent B bytes P pkt
/// (dropped D, overlimits O requeues R)`.
fn parse_class_stats(text: &str) -> serde_json::Value {
    let mut map = serde_json::Map::new();
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
                serde_json::json!({
                    "bytes": words.get(1).and_then(|w| w.parse::<u64>().ok()),
                    "packets": words.get(3).and_then(|w| w.parse::<u64>().ok()),
                    "drops": num("(dropped"),
                    "overlimits": num("overlimits"),
                }),
            );
        }
    }
    serde_json::Value::Object(map)
}

/// Removes namespaces left by an audiolat that was killed outright (its pid is gone).
fn remove_stale() {
    let Ok(entries) = std::fs::read_dir("/var/run/netns") else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("al-host-")
            .or_else(|| name.strip_prefix("al-ctl-"))
            .and_then(|p| p.parse::<i32>().ok());
        // SAFETY: kill with signal 0 only checks that the process exists.
        if let Some(pid) = pid.filter(|&p| unsafe { libc::kill(p, 0) } != 0) {
            let _ = pid;
            let _ = Command::new("ip").args(["netns", "del", &name]).output();
        }
    }
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
        assert_eq!(v["1:1"]["packets"], 9954);
        assert_eq!(v["1:1"]["bytes"], 8429220);
        assert_eq!(v["1:20"]["drops"], 17);
        assert_eq!(v["1:20"]["overlimits"], 9);
    }
}
