use super::*;
use assert_no_alloc::{assert_no_alloc, reset_violation_count, violation_count};

#[test]
fn enqueue_dequeue_and_reset_without_allocating() {
    let flows = [
        FlowSpec {
            reservation_bps: 2e6,
            weight: 1.0,
            limit_bps: f64::INFINITY,
        },
        FlowSpec {
            reservation_bps: 0.0,
            weight: 50.0,
            limit_bps: 30e6,
        },
        FlowSpec {
            reservation_bps: 0.0,
            weight: 5.0,
            limit_bps: f64::INFINITY,
        },
    ];
    let mut scheduler = MClock::new(&flows, 64).unwrap();
    let mut served = 0u64;
    let mut stalled = 0u64;
    reset_violation_count();
    assert_no_alloc(|| {
        let mut now = 1_000u64;
        for round in 0..5_000u64 {
            // Flow 1 (limited) every round, the others now and then, and flow 3,
            // which does not exist: the link often waits for flow 1's limit.
            for flow in 0..4 {
                if flow == 1 || round % 4 == 0 {
                    scheduler.enqueue(flow, 1_000 + (round % 11_000) as u32, now);
                }
            }
            match scheduler.dequeue(now) {
                Some(s) => {
                    served += 1;
                    now += u64::from(s.bits) * 10;
                }
                None => {
                    stalled += 1;
                    now = scheduler.next_eligible_ns().unwrap_or(now + 1);
                }
            }
            assert!(scheduler.queued(0) <= 64);
            if round == 2_500 {
                scheduler.reset();
            }
        }
    });
    assert_eq!(violation_count(), 0, "the hot path allocated");
    assert!(
        served > 2_000 && stalled > 1_000,
        "{served} served, {stalled} stalled"
    );
}
