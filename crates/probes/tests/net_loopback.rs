//! The network-audio probe over loopback, for real: a controller at the real packet rate
//! and a host running the Migrator synth, in this process.

use netaudio::controller::fixed_input;
use netaudio::wire::{self, DEADLINE_NS, PACKET_INTERVAL_NS};
use probes::net::{self, NetConfig};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

fn config(seconds: f64) -> NetConfig {
    NetConfig {
        reference_duration: Duration::from_secs_f64(seconds / 2.0),
        warmup: Duration::from_millis(500),
        input: fixed_input(8, 0.4, 0.3, 0.8),
        ..NetConfig::new(Duration::from_secs_f64(seconds))
    }
}

#[test]
fn every_block_is_answered_or_counted_unanswered_and_never_faster_than_its_gathering() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let stop = AtomicBool::new(false);
    let outcome = net::run(&config(3.0), &stop).expect("runs over loopback");
    assert!(!outcome.interrupted);
    for (name, phase) in [
        ("reference", outcome.reference.as_ref().unwrap()),
        ("synth", outcome.synth.as_ref().unwrap()),
    ] {
        let (h, c) = (&phase.host, &phase.controller);
        assert!(
            h.error.is_none() && c.error.is_none(),
            "{name}: {:?} {:?}",
            h.error,
            c.error
        );
        // The two ends keep separate books on the same blocks (both count by block
        // number from the controller's first counted block): the controller received
        // (on time, late or after the run's end) only answers the host sent; an answer
        // the host sent that the controller did not receive was dropped by its kernel
        // on a full queue (loopback loses nothing else), or came after the controller
        // stopped listening, 2 drains (200 ms) after its last packet: a host that far
        // behind breaks this. No answer is for a block never sent.
        assert!(c.blocks_sent > 0);
        assert_eq!(h.counted_from_block, Some(c.counted_from_block), "{name}");
        let received = c.answers_received();
        assert!(
            received <= h.answers_sent && h.answers_sent - received <= c.answers_dropped_by_kernel,
            "{name}: host sent {} answers, controller received {received}, its kernel dropped {}",
            h.answers_sent,
            c.answers_dropped_by_kernel
        );
        assert_eq!(c.unknown_answers + c.duplicate_answers, 0, "{name}");
        assert_eq!(
            c.end_to_end.count(),
            c.answers_received_on_time + c.answers_received_late,
            "{name}"
        );
        assert_eq!(
            c.blocks_sent,
            received + c.answers_not_received,
            "{name}: every block sent is answered or not"
        );
        // Loopback loses nothing on a machine this idle... but a refused send is a loss
        // the controller counts, so the books must balance rather than be perfect.
        assert!(
            c.answers_not_received <= c.packets_refused + c.blocks_sent / 100,
            "{name}: {} with no answer received",
            c.answers_not_received
        );
        // The host answered what it counted, and its histogram holds every one.
        assert_eq!(h.response.count(), h.blocks_answered(), "{name}");
        assert!(
            h.blocks_answered() > 0 && h.blocks_answered() <= c.blocks_sent,
            "{name}: {} answered of {}",
            h.blocks_answered(),
            c.blocks_sent
        );
        assert_eq!(
            h.counters.drops.total(),
            0,
            "{name}: {:?}",
            h.counters.drops
        );
        // No answer comes before its block was gathered. A block answered in less than
        // 90 % of the 15 packet intervals between its first and last packet can only
        // have arrived in a burst, which needs the controller to have sent late: there
        // are never more such blocks than packets sent more than 60 us late.
        assert_eq!(h.below_gathering, 0, "{name}");
        let late_packets = c.pacing.hdr().count_between(60_000, u64::MAX);
        assert!(
            h.short_responses <= late_packets,
            "{name}: {} short responses, {late_packets} late packets",
            h.short_responses
        );
        let gather_ns = 15 * PACKET_INTERVAL_NS;
        let median = h.response.percentile(50.0).0;
        assert!(
            median as f64 >= 0.9 * gather_ns as f64,
            "{name}: median response {median} ns"
        );
        // Misses are counted against the deadline, the same way on both ends.
        assert!(h.responses_past_deadline <= h.blocks_answered());
        assert_eq!(
            h.responses_past_deadline > 0,
            h.response.max() > DEADLINE_NS,
            "{name}"
        );
        assert_eq!(
            h.series.len() as u64,
            h.blocks_answered().min(h.series.capacity() as u64)
        );
        // The pacing error is measured for every packet sent.
        assert_eq!(c.pacing.count(), c.packets_sent + c.packets_refused);
    }
    // The synth phase ran the synth: its time per block is recorded and positive.
    let synth = &outcome.synth.as_ref().unwrap().host;
    assert!(synth.synth.percentile(50.0).0 > 0);
    let reference = &outcome.reference.as_ref().unwrap().host;
    assert!(reference.synth.percentile(50.0).0 <= synth.synth.percentile(50.0).0);
    let _ = wire::BLOCK_PERIOD_NS;
}
