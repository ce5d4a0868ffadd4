use super::*;
use assert_no_alloc::{assert_no_alloc, reset_violation_count, violation_count};

#[test]
fn the_guard_is_armed() {
    reset_violation_count();
    assert_no_alloc(|| {
        let v = std::hint::black_box(vec![1u8; 64]);
        drop(v);
    });
    assert!(
        violation_count() > 0,
        "assert_no_alloc did not see an allocation"
    );
    reset_violation_count();
}

#[test]
fn parse_assemble_answer_and_match_without_allocating() {
    let mut assembler = BlockAssembler::new();
    let mut matcher = AnswerMatcher::new();
    let mut input = [0u8; INPUT_PACKET_BYTES];
    let mut output = [0u8; OUTPUT_PACKET_BYTES];
    let garbage = [0x5Au8; 900];
    let mut results = (0u64, 0u64, 0u64, 0u64);

    reset_violation_count();
    assert_no_alloc(|| {
        let mut frames = [[PadFrame::ZERO; PADS]; FRAMES_PER_PACKET];
        for block in u32::MAX - 20..=u32::MAX {
            for index in (0..PACKETS_PER_BLOCK as u8).rev() {
                frames[0][0].pressure = f32::from(index);
                let sent_ns = packet_due_ns(u64::from(block) * 16 + u64::from(index));
                if index == 0 {
                    matcher.sent(block, sent_ns);
                }
                let header = InputHeader {
                    index,
                    seq: index.into(),
                    block,
                    sender_time_ns: sent_ns,
                };
                encode_input(&header, &frames, &mut input);
                match parse(&input) {
                    Ok(Packet::Input(p)) => {
                        if let Some(done) = assembler.push(&p, sent_ns + 50_000) {
                            let answer = OutputHeader {
                                seq: done.block,
                                block: done.block,
                                sender_time_ns: done.last_arrival_ns + 100_000,
                                echo_time_ns: done.first_packet_sender_ns,
                            };
                            let audio = [[done.frames[31][0].pressure; 8]; 32];
                            encode_output(&answer, &audio, &mut output);
                            if let Ok(Packet::Output(o)) = parse(&output) {
                                let arrival = answer.sender_time_ns + 50_000;
                                if let Answer::OnTime { .. } = matcher.answered(&o, arrival) {
                                    results.0 += 1;
                                }
                            }
                        }
                    }
                    Ok(Packet::Output(_)) => {}
                    Err(e) => assembler.record_drop(e.kind()),
                }
                // A duplicate and some garbage on every packet.
                if let Ok(Packet::Input(p)) = parse(&input) {
                    assembler.push(&p, sent_ns + 60_000);
                }
                if let Err(e) = parse(&garbage) {
                    assembler.record_drop(e.kind());
                }
                if let Err(e) = parse(&garbage[..10]) {
                    assembler.record_drop(e.kind());
                }
            }
        }
        assembler.finish();
        results.1 = assembler.counters().blocks_complete;
        results.2 = matcher.unanswered_so_far(u64::MAX);
        results.3 = assembler.counters().drops.total();
    });
    assert_eq!(violation_count(), 0, "the network hot path allocated");
    // The guarded run did real work.
    assert_eq!(results.0, 21, "answers on time");
    assert_eq!(results.1, 21, "blocks complete");
    assert_eq!(results.2, 0, "unanswered");
    let c = assembler.counters();
    assert_eq!(
        c.reordered,
        21 * 15,
        "packets were sent in reverse index order"
    );
    assert_eq!(results.3, 21 * 16 * 3, "duplicates + stale + garbage");
    assert_eq!((c.drops.duplicate, c.drops.stale), (21 * 15, 21));
    assert_eq!(c.drops.wrong_size, 21 * 16);
    assert_eq!(c.drops.bad_magic, 21 * 16);
}
