//! A softirq storm: UDP sent through a veth pair into a network namespace, received
//! on the probe's CPU. veth hands each packet to the receiving side's backlog on the
//! sending CPU and the NET_RX softirq runs at once, in the sender's own context (the
//! `local_bh_enable` at the end of its `sendto`), not in `ksoftirqd`: each round takes
//! one packet, far from the budget that would defer it. To make each round long
//! enough to delay a FIFO probe, the namespace's side of the pair classifies every
//! packet through 20 000 u32 filters that never match (0.2 to 0.5 ms a packet here). The
//! probe's late wake-ups that came while the sender was in `sendto` must name the
//! softirq `NET_RX` on top, with the time left of that round (within 10 % or 50 µs).
//! Needs root, tracefs and iproute2 (`ip netns`, `tc`); the namespace is deleted on
//! every way out.

mod common;

use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{close, median, now_ns, pin, probe_cpu, Policy, WakeupProbe};
use trace::{CauseKind, Session, SessionConfig};

/// Filters each packet is classified through on the way in.
const FILTERS: usize = 20_000;
/// The prefix of this test's namespaces; the rest is the test process's pid.
const NETNS_PREFIX: &str = "audiolat-why-";

fn run(program: &str, args: &[&str], input: Option<&str>) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e} (install iproute2)"));
    if let Some(text) = input {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{program} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A network namespace with a veth pair into it, deleted when dropped (the pair goes
/// with it), on a panic too.
struct Netns {
    name: String,
    host_if: String,
    inner_if: &'static str,
    host_addr: String,
    inner_addr: String,
}

impl Netns {
    /// Deletes the namespaces of this test's runs that were killed before their drop.
    fn remove_leftovers() {
        let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
            return;
        };
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split_whitespace().next().unwrap_or("");
            let Some(pid) = name.strip_prefix(NETNS_PREFIX) else {
                continue;
            };
            if pid.parse::<u32>().is_ok() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
            {
                let _ = Command::new("ip").args(["netns", "del", name]).output();
            }
        }
    }

    fn create() -> Netns {
        Netns::remove_leftovers();
        let pid = std::process::id();
        // A /30 of its own, so runs side by side do not share a route.
        let (a, b) = ((pid >> 6) & 0xff, (pid & 0x3f) * 4);
        let ns = Netns {
            name: format!("{NETNS_PREFIX}{pid}"),
            host_if: format!("awhy{pid}"),
            inner_if: "awhy-in",
            host_addr: format!("10.207.{a}.{}", b + 1),
            inner_addr: format!("10.207.{a}.{}", b + 2),
        };
        run("ip", &["netns", "add", &ns.name], None);
        let (n, host, inner) = (ns.name.as_str(), ns.host_if.as_str(), ns.inner_if);
        run(
            "ip",
            &[
                "link", "add", host, "type", "veth", "peer", "name", inner, "netns", n,
            ],
            None,
        );
        let host_cidr = format!("{}/30", ns.host_addr);
        let inner_cidr = format!("{}/30", ns.inner_addr);
        run("ip", &["addr", "add", &host_cidr, "dev", host], None);
        run("ip", &["link", "set", host, "up"], None);
        run(
            "ip",
            &["-n", n, "addr", "add", &inner_cidr, "dev", inner],
            None,
        );
        run("ip", &["-n", n, "link", "set", inner, "up"], None);
        run(
            "tc",
            &["-n", n, "qdisc", "add", "dev", inner, "ingress"],
            None,
        );
        // u32 keeps at most ~4000 keys a table and ~2000 tables: 1000 a priority.
        let batch: String = (0..FILTERS)
            .map(|i| {
                format!(
                    "filter add dev {inner} parent ffff: protocol ip prio {} \
                     u32 match ip dport {} 0xffff flowid 1:1\n",
                    i / 1000 + 1,
                    20_000 + i % 1000
                )
            })
            .collect();
        run("tc", &["-n", n, "-batch", "-"], Some(&batch));
        ns
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .output();
    }
}

#[test]
fn a_softirq_storm_on_the_probes_cpu_is_named_net_rx_with_its_time() {
    let ns = Netns::create();
    let cpu = probe_cpu();
    let session = Session::start(SessionConfig {
        cpus: Some(vec![cpu]),
        ..SessionConfig::default()
    })
    .expect("tracefs available (run as root)");
    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let stop = Arc::clone(&stop);
        let from: SocketAddr = format!("{}:0", ns.host_addr).parse().unwrap();
        let to: SocketAddr = format!("{}:9", ns.inner_addr).parse().unwrap();
        std::thread::Builder::new()
            .name("why-flood".into())
            .spawn(move || -> Vec<(u64, u64)> {
                pin(cpu, Policy::Other);
                let socket = UdpSocket::bind(from).unwrap();
                let payload = [0u8; 64];
                let mut sends = Vec::with_capacity(1 << 16);
                while !stop.load(Ordering::Relaxed) {
                    let start = now_ns();
                    let _ = socket.send_to(&payload, to);
                    sends.push((start, now_ns()));
                }
                sends
            })
            .unwrap()
    };
    let probe = WakeupProbe::start(cpu, Policy::Fifo(50), 1_000_000, 100_000, session.sender());
    std::thread::sleep(Duration::from_millis(1500));
    let sent = probe.stop();
    stop.store(true, Ordering::Relaxed);
    let sends = flood.join().unwrap();
    let why = session.finish();
    drop(ns);

    assert_eq!(why.misses_explained as usize, sent.len());
    assert_eq!(why.misses_dropped, 0);
    let within = |t: u64| sends.iter().find(|&&(s, e)| s <= t && t < e);
    // A send no wake-up fell in: one packet and its NET_RX round, undisturbed.
    let round_ns = median(
        sends
            .iter()
            .filter(|&&(s, e)| !sent.iter().any(|m| s <= m.end_ns && m.t_ns < e))
            .map(|&(s, e)| e - s)
            .collect(),
    );
    let (mut stormed, mut on_top, mut timed) = (0, 0, 0);
    for m in &why.misses {
        let total: u64 = m.causes.iter().map(|c| c.ns).sum();
        assert_eq!(total, m.miss.late_ns(), "the parts add up to the lateness");
        let Some(&(start, end)) = within(m.miss.t_ns) else {
            continue;
        };
        stormed += 1;
        // The sender was in `sendto` when the probe was due: the kernel's time in it
        // over the late interval is the NET_RX round (the interrupt that woke the
        // probe and the switch to it are the rest, well under 50 µs).
        let expected = end.min(m.miss.end_ns) - start.max(m.miss.t_ns);
        let net_rx = m.ns_of(CauseKind::Softirq, "NET_RX");
        let top = &m.causes[0];
        if (top.kind, top.name.as_str()) == (CauseKind::Softirq, "NET_RX") {
            on_top += 1;
            assert_eq!((top.number, top.cpu), (Some(3), Some(cpu as u32)));
        }
        if close(net_rx, expected) {
            timed += 1;
        } else {
            eprintln!("{expected} ns of NET_RX expected, the trace says {net_rx}: {m:#?}");
        }
    }
    eprintln!(
        "{} packets ({round_ns} ns a send), {} misses, {stormed} in a send, \
         {on_top} with NET_RX on top, {timed} with its time",
        sends.len(),
        sent.len()
    );
    assert!(stormed >= 20, "only {stormed} wake-ups came late in a send");
    assert!(
        on_top * 10 >= stormed * 9,
        "NET_RX is on top in {on_top} of {stormed}"
    );
    assert!(
        timed * 10 >= stormed * 9,
        "NET_RX's time is right in {timed} of {stormed}"
    );
    let top = &why.culprits[0];
    assert_eq!(
        (top.kind, top.name.as_str()),
        (CauseKind::Softirq, "NET_RX"),
        "{:?}",
        why.culprits
    );
}
