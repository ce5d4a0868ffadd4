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
}

fn ip(args: &[&str]) -> Result<(), NetError> {
    let out = Command::new("ip").args(args).output().map_err(|e| {
        NetError::Config(format!(
            "cannot run `ip` ({e}): install the iproute2 package (apt install iproute2)"
        ))
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NetError::Config(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
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
