//! Bandwidth reservation, for real: two network namespaces joined by a veth link whose
//! controller-to-host direction is shaped to 300 Mbit/s, an abusive stream offered at
//! 450 Mbit/s on it beside the audio flow (148.5 Mbit/s on the wire: 22,050 datagrams of
//! 800 bytes a second). Without a reservation the stream fills the link's queue and the
//! audio flow misses its deadlines; with 240 Mbit/s reserved for it, far fewer. Checked
//! for the kernel's HTB (tc) and for audiolat's user-level service (FIFO against
//! mClock). The tests assert the direction and a large ratio, never absolute times.
//!
//! Needs root (namespaces, tc); elsewhere it says why it is skipped.

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

use probes::net::{self, LinkShaping, NetConfig, ReserveBy, StreamConfig};

static SERIAL: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<&'static str> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: network namespaces and tc need it");
    }
    if load::find_in_path("tc").is_none() && !std::path::Path::new("/usr/sbin/tc").exists() {
        return Some("tc is not installed (apt install iproute2)");
    }
    None
}

/// (blocks counted, blocks late or lost, stream Mbit/s that reached the sink).
fn run(by: ReserveBy, reserve_mbps: Option<f64>) -> (u64, u64, f64) {
    let config = NetConfig {
        warmup: Duration::from_millis(500),
        netns: true,
        link: Some(LinkShaping {
            mbps: 300.0,
            reserve_mbps,
            by,
        }),
        stream: Some(StreamConfig {
            mbps: Some(450),
            sink_groups: Vec::new(),
        }),
        ..NetConfig::new(Duration::from_secs(3))
    };
    let stop = AtomicBool::new(false);
    let outcome = net::run(&config, &stop).expect("the shaped run starts");
    let p = outcome.synth.expect("the synth phase ran");
    let c = &p.controller;
    assert!(
        c.error.is_none() && p.host.error.is_none(),
        "{:?} {:?}",
        c.error,
        p.host.error
    );
    let stream = p.stream.expect("the stream ran");
    assert!(stream.sent > 10_000, "the stream barely ran: {stream:?}");
    match by {
        ReserveBy::Tc => {
            let classes = p.tc_classes.expect("tc counters");
            assert!(
                classes["1:20"]["packets"].as_u64().unwrap() > 10_000,
                "{classes}"
            );
            if reserve_mbps.is_some() {
                assert!(
                    classes["1:10"]["packets"].as_u64().unwrap() > 10_000,
                    "{classes}"
                );
            }
        }
        ReserveBy::Service => {
            let svc = p.service.expect("the service ran");
            assert_eq!(
                svc.discipline,
                if reserve_mbps.is_some() {
                    "mclock"
                } else {
                    "fifo"
                }
            );
            if reserve_mbps.is_some() {
                // The audio flow was served by its reservation.
                assert!(
                    svc.flows[0].by_reservation > svc.flows[0].sent / 2,
                    "{svc:?}"
                );
            }
        }
    }
    (c.blocks_sent, c.late + c.lost, stream.received_mbps)
}

fn check(by: ReserveBy) {
    let (blocks, missed_free, got_free) = run(by, None);
    let (blocks_r, missed_reserved, got_reserved) = run(by, Some(240.0));
    eprintln!(
        "{by}: no reservation {missed_free} of {blocks} missed (stream got {got_free:.0} Mbit/s); 240 Mbit/s reserved {missed_reserved} of {blocks_r} missed (stream got {got_reserved:.0} Mbit/s)"
    );
    assert!(blocks > 1000 && blocks_r > 1000);
    // The stream saturates the shaped link either way: it is the audio flow's share that
    // the reservation changes.
    assert!(
        got_free > 60.0 && got_reserved > 20.0,
        "{got_free} {got_reserved}"
    );
    assert!(
        missed_free * 2 > blocks,
        "{by}: without a reservation only {missed_free} of {blocks} blocks missed"
    );
    assert!(
        missed_reserved * 10 < missed_free,
        "{by}: with 240 Mbit/s reserved {missed_reserved} missed, against {missed_free} without"
    );
}

#[test]
fn a_tc_reservation_keeps_the_audio_flow_on_time_beside_an_abusive_stream() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    check(ReserveBy::Tc);
}

#[test]
fn an_mclock_reservation_in_the_user_level_service_does_the_same() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    check(ReserveBy::Service);
}
