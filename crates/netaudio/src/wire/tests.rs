use super::*;

/// A seeded xorshift64*: reproducible, allocation-free.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// Any finite f32, subnormals and -0.0 included.
    fn finite_f32(&mut self) -> f32 {
        loop {
            let v = f32::from_bits(self.next_u64() as u32);
            if v.is_finite() {
                return v;
            }
        }
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

fn random_input_frames(rng: &mut Rng) -> InputFrames {
    let mut frames = [[PadFrame::ZERO; PADS]; FRAMES_PER_PACKET];
    for pad in frames.iter_mut().flatten() {
        *pad = PadFrame {
            x: rng.finite_f32(),
            y: rng.finite_f32(),
            pressure: rng.finite_f32(),
        };
    }
    frames
}

fn random_output_frames(rng: &mut Rng) -> OutputFrames {
    let mut frames = [[0.0; OUTPUT_CHANNELS]; FRAMES_PER_BLOCK];
    for v in frames.iter_mut().flatten() {
        *v = rng.finite_f32();
    }
    frames
}

fn input_bits(frames: &InputFrames) -> Vec<u32> {
    frames
        .iter()
        .flatten()
        .flat_map(|p| [p.x.to_bits(), p.y.to_bits(), p.pressure.to_bits()])
        .collect()
}

fn output_bits(frames: &OutputFrames) -> Vec<u32> {
    frames.iter().flatten().map(|v| v.to_bits()).collect()
}

const EXTREMES: [f32; 12] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    f32::MAX,
    f32::MIN,
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
    f32::EPSILON,
    1.0e-45, // the smallest subnormal
    -1.0e-45,
    0.5,
];

// ---- 1. round trips and the byte layout ----------------------------------------

#[test]
fn input_packets_round_trip_bit_for_bit() {
    let mut rng = Rng(0x1234_5678);
    let headers = [
        InputHeader::default(),
        InputHeader {
            index: 15,
            seq: u32::MAX,
            block: u32::MAX,
            sender_time_ns: u64::MAX,
        },
        InputHeader {
            index: 7,
            seq: 0x8000_0000,
            block: 0x7fff_ffff,
            sender_time_ns: 1 << 63,
        },
        InputHeader {
            index: 1,
            seq: 1,
            block: 0,
            sender_time_ns: 45_351,
        },
    ];
    for (n, header) in headers.iter().enumerate() {
        let mut frames = random_input_frames(&mut rng);
        if n % 2 == 0 {
            for (i, pad) in frames.iter_mut().flatten().enumerate() {
                pad.x = EXTREMES[i % EXTREMES.len()];
                pad.y = EXTREMES[(i + 5) % EXTREMES.len()];
                pad.pressure = EXTREMES[(i + 9) % EXTREMES.len()];
            }
        }
        let mut bytes = [0u8; INPUT_PACKET_BYTES];
        encode_input(header, &frames, &mut bytes);
        let Ok(Packet::Input(parsed)) = parse(&bytes) else {
            panic!(
                "header {header:?} did not parse as input: {:?}",
                parse(&bytes)
            );
        };
        assert_eq!(parsed.header, *header);
        assert_eq!(input_bits(&parsed.frames), input_bits(&frames));
        // Encoding what was parsed gives the same bytes again.
        let mut again = [0u8; INPUT_PACKET_BYTES];
        encode_input(&parsed.header, &parsed.frames, &mut again);
        assert_eq!(again, bytes);
    }
}

#[test]
fn output_packets_round_trip_bit_for_bit() {
    let mut rng = Rng(0x9e37_79b9);
    let headers = [
        OutputHeader::default(),
        OutputHeader {
            seq: u32::MAX,
            block: u32::MAX,
            sender_time_ns: u64::MAX,
            echo_time_ns: u64::MAX,
        },
        OutputHeader {
            seq: 0x8000_0000,
            block: 0,
            sender_time_ns: 1,
            echo_time_ns: 1 << 63,
        },
    ];
    for (n, header) in headers.iter().enumerate() {
        let mut frames = random_output_frames(&mut rng);
        if n % 2 == 0 {
            for (i, v) in frames.iter_mut().flatten().enumerate() {
                *v = EXTREMES[i % EXTREMES.len()];
            }
        }
        let mut bytes = [0u8; OUTPUT_PACKET_BYTES];
        encode_output(header, &frames, &mut bytes);
        let Ok(Packet::Output(parsed)) = parse(&bytes) else {
            panic!(
                "header {header:?} did not parse as output: {:?}",
                parse(&bytes)
            );
        };
        assert_eq!(parsed.header, *header);
        assert_eq!(output_bits(&parsed.frames), output_bits(&frames));
        let mut again = [0u8; OUTPUT_PACKET_BYTES];
        encode_output(&parsed.header, &parsed.frames, &mut again);
        assert_eq!(again, bytes);
    }
}

/// The bytes sit where docs/net-protocol.md's table says.
#[test]
fn layout_matches_the_spec_table() {
    let header = InputHeader {
        index: 9,
        seq: 0x0403_0201,
        block: 0x0807_0605,
        sender_time_ns: 0x1817_1615_1413_1211,
    };
    let mut frames = [[PadFrame::ZERO; PADS]; FRAMES_PER_PACKET];
    for (f, frame) in frames.iter_mut().enumerate() {
        for (p, pad) in frame.iter_mut().enumerate() {
            let base = (f * 1000 + p * 10) as f32;
            *pad = PadFrame {
                x: base + 1.0,
                y: base + 2.0,
                pressure: base + 3.0,
            };
        }
    }
    let mut b = [0xAAu8; INPUT_PACKET_BYTES];
    encode_input(&header, &frames, &mut b);
    assert_eq!(&b[0..4], b"ALNT");
    assert_eq!(b[4..8], [1, 1, 9, 16]);
    assert_eq!(b[8..12], [1, 2, 3, 4]);
    assert_eq!(b[12..16], [5, 6, 7, 8]);
    assert_eq!(b[16..24], [0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18]);
    assert_eq!(b[24..32], [0; 8], "an input packet's echo time is 0");
    let at = |off: usize| f32::from_le_bytes(b[off..off + 4].try_into().unwrap());
    // Frame-major, then pad, then field.
    for f in 0..FRAMES_PER_PACKET {
        for p in 0..PADS {
            for field in 0..FIELDS_PER_PAD {
                let off = HEADER_BYTES + 4 * (FIELDS_PER_PAD * (PADS * f + p) + field);
                assert_eq!(at(off), (f * 1000 + p * 10 + field + 1) as f32);
            }
        }
    }

    let out_header = OutputHeader {
        seq: 7,
        block: 0xdead_beef,
        sender_time_ns: 3,
        echo_time_ns: 0x2827_2625_2423_2221,
    };
    let mut out_frames = [[0.0; OUTPUT_CHANNELS]; FRAMES_PER_BLOCK];
    for (f, frame) in out_frames.iter_mut().enumerate() {
        for (c, v) in frame.iter_mut().enumerate() {
            *v = (f * 100 + c) as f32;
        }
    }
    let mut o = [0xAAu8; OUTPUT_PACKET_BYTES];
    encode_output(&out_header, &out_frames, &mut o);
    assert_eq!(&o[0..4], b"ALNT");
    assert_eq!(o[4..8], [1, 2, 0, 1]);
    assert_eq!(o[8..12], 7u32.to_le_bytes());
    assert_eq!(o[12..16], [0xef, 0xbe, 0xad, 0xde]);
    assert_eq!(o[16..24], 3u64.to_le_bytes());
    assert_eq!(o[24..32], [0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28]);
    for f in 0..FRAMES_PER_BLOCK {
        for c in 0..OUTPUT_CHANNELS {
            let off = HEADER_BYTES + 4 * (OUTPUT_CHANNELS * f + c);
            let v = f32::from_le_bytes(o[off..off + 4].try_into().unwrap());
            assert_eq!(v, (f * 100 + c) as f32);
        }
    }
}

#[test]
fn an_input_packets_echo_field_is_ignored() {
    let mut b = [0u8; INPUT_PACKET_BYTES];
    encode_input(
        &InputHeader::default(),
        &[[PadFrame::ZERO; PADS]; 2],
        &mut b,
    );
    b[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(parse(&b), Ok(Packet::Input(_))));
}

// ---- 2. parse on arbitrary bytes ------------------------------------------------

/// An independent, plain statement of the validation rules of docs/net-protocol.md,
/// in their order; finiteness is tested on the bits (exponent all ones).
fn reference_check(b: &[u8]) -> Result<PacketKind, WireError> {
    let len = b.len();
    if len < 32 {
        return Err(WireError::WrongSize { len, kind: None });
    }
    if &b[0..4] != b"ALNT" {
        return Err(WireError::BadMagic);
    }
    if b[4] != 1 {
        return Err(WireError::UnknownVersion(b[4]));
    }
    let (kind, size, per_block) = match b[5] {
        1 => (PacketKind::Input, 800, 16),
        2 => (PacketKind::Output, 1056, 1),
        k => return Err(WireError::UnknownKind(k)),
    };
    if len != size {
        return Err(WireError::WrongSize {
            len,
            kind: Some(kind),
        });
    }
    if b[7] != per_block || b[6] >= b[7] {
        return Err(WireError::BadIndex {
            index: b[6],
            per_block: b[7],
        });
    }
    for offset in (32..size).step_by(4) {
        let bits = u32::from_le_bytes([b[offset], b[offset + 1], b[offset + 2], b[offset + 3]]);
        if bits & 0x7f80_0000 == 0x7f80_0000 {
            return Err(WireError::NonFinite { offset });
        }
    }
    Ok(kind)
}

fn variant_index(e: &WireError) -> usize {
    DropReason::ALL.iter().position(|&r| r == e.kind()).unwrap()
}

struct FuzzTally {
    cases: u64,
    ok: u64,
    errors: [u64; 6],
    counters: DropCounters,
}

impl FuzzTally {
    fn check(&mut self, b: &[u8]) {
        self.cases += 1;
        let got = parse(b);
        assert_eq!(
            got.as_ref().map(Packet::kind),
            reference_check(b).as_ref().copied(),
            "{} bytes, header {:?}",
            b.len(),
            &b[..b.len().min(32)]
        );
        match got {
            Ok(packet) => {
                self.ok += 1;
                // Ok implies the exact size, magic, version, and finite floats, and
                // encoding the result gives the datagram back.
                assert_eq!(b.len(), packet.kind().packet_bytes());
                match packet {
                    Packet::Input(p) => {
                        assert!(p
                            .frames
                            .iter()
                            .flatten()
                            .all(|f| f.x.is_finite() && f.y.is_finite() && f.pressure.is_finite()));
                        let mut again = [0u8; INPUT_PACKET_BYTES];
                        encode_input(&p.header, &p.frames, &mut again);
                        assert_eq!(again[..24], b[..24]);
                        assert_eq!(again[32..], b[32..]);
                    }
                    Packet::Output(p) => {
                        assert!(p.frames.iter().flatten().all(|v| v.is_finite()));
                        let mut again = [0u8; OUTPUT_PACKET_BYTES];
                        encode_output(&p.header, &p.frames, &mut again);
                        assert_eq!(again[..], b[..]);
                    }
                }
            }
            Err(e) => {
                self.errors[variant_index(&e)] += 1;
                self.counters.record(e.kind());
            }
        }
    }
}

fn valid_packet(rng: &mut Rng) -> Vec<u8> {
    if rng.chance(50) {
        let header = InputHeader {
            index: rng.below(16) as u8,
            seq: rng.next_u64() as u32,
            block: rng.next_u64() as u32,
            sender_time_ns: rng.next_u64(),
        };
        let mut b = [0u8; INPUT_PACKET_BYTES];
        encode_input(&header, &random_input_frames(rng), &mut b);
        b.to_vec()
    } else {
        let header = OutputHeader {
            seq: rng.next_u64() as u32,
            block: rng.next_u64() as u32,
            sender_time_ns: rng.next_u64(),
            echo_time_ns: rng.next_u64(),
        };
        let mut b = [0u8; OUTPUT_PACKET_BYTES];
        encode_output(&header, &random_output_frames(rng), &mut b);
        b.to_vec()
    }
}

#[test]
fn parse_never_panics_and_accepts_only_valid_packets() {
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let mut tally = FuzzTally {
        cases: 0,
        ok: 0,
        errors: [0; 6],
        counters: DropCounters::default(),
    };
    let mut buf = Vec::with_capacity(2048);

    // Random buffers of random lengths 0..2000; a third start like a packet so the
    // later checks are reached too.
    for _ in 0..210_000 {
        let len = rng.below(2000) as usize;
        buf.clear();
        buf.extend((0..len).map(|_| rng.next_u64() as u8));
        if len >= 8 && rng.chance(33) {
            buf[0..4].copy_from_slice(b"ALNT");
            buf[4] = 1;
            buf[5] = [1, 2, rng.next_u64() as u8][rng.below(3) as usize];
            if rng.chance(50) {
                buf[6] = rng.below(16) as u8;
                buf[7] = if buf[5] == 1 { 16 } else { 1 };
            }
        }
        tally.check(&buf);
    }
    // Exactly-sized random payloads with a valid header.
    for _ in 0..20_000 {
        let mut b = valid_packet(&mut rng);
        for byte in &mut b[32..] {
            *byte = rng.next_u64() as u8;
        }
        tally.check(&b);
    }
    // Mutations of valid packets.
    for _ in 0..100_000 {
        let mut b = valid_packet(&mut rng);
        match rng.below(7) {
            0 => {
                let i = rng.below(b.len() as u64) as usize;
                b[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(b.len() as u64) as usize;
                b[i] = rng.next_u64() as u8;
            }
            2 => {
                let i = rng.below(32) as usize;
                b[i] = rng.next_u64() as u8;
            }
            3 => b.truncate(rng.below(b.len() as u64) as usize),
            4 => {
                let extra = 1 + rng.below(300) as usize;
                b.extend((0..extra).map(|_| rng.next_u64() as u8));
            }
            5 => {
                let word = rng.below(((b.len() - 32) / 4) as u64) as usize;
                let bad = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -f32::NAN];
                let v = bad[rng.below(4) as usize];
                b[32 + 4 * word..36 + 4 * word].copy_from_slice(&v.to_le_bytes());
            }
            _ => {} // unchanged: must parse
        }
        tally.check(&b);
    }

    assert!(tally.cases >= 330_000);
    assert!(tally.ok > 10_000, "valid packets parsed: {}", tally.ok);
    for (i, n) in tally.errors.iter().enumerate() {
        assert!(*n > 100, "{:?} seen only {n} times", DropReason::ALL[i]);
    }
    // Every error went to exactly one counter.
    let errors: u64 = tally.errors.iter().sum();
    assert_eq!(tally.ok + errors, tally.cases);
    assert_eq!(tally.counters.total(), errors);
    for (i, n) in tally.errors.iter().enumerate() {
        assert_eq!(tally.counters.get(DropReason::ALL[i]), *n);
    }
}

#[test]
fn every_wire_error_maps_to_its_own_drop_reason() {
    let one_of_each = [
        WireError::WrongSize { len: 3, kind: None },
        WireError::BadMagic,
        WireError::UnknownVersion(2),
        WireError::UnknownKind(9),
        WireError::BadIndex {
            index: 16,
            per_block: 16,
        },
        WireError::NonFinite { offset: 32 },
    ];
    let reasons: Vec<DropReason> = one_of_each.iter().map(WireError::kind).collect();
    assert_eq!(reasons, DropReason::ALL[..6]);
    for (e, reason) in one_of_each.iter().zip(&reasons) {
        let mut counters = DropCounters::default();
        counters.record(*reason);
        assert_eq!(counters.total(), 1);
        assert_eq!(counters.get(e.kind()), 1);
        assert!(!e.to_string().is_empty());
    }
    // Sizes name what was expected.
    let e = WireError::WrongSize {
        len: 799,
        kind: Some(PacketKind::Input),
    };
    assert_eq!(
        e.to_string(),
        "799-byte datagram: an input packet is 800 bytes"
    );
    let names: std::collections::HashSet<_> = DropReason::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(names.len(), DropReason::ALL.len());
    let mut all = DropCounters::default();
    for r in DropReason::ALL {
        all.record(r);
        all.record(r);
    }
    assert_eq!(all.total(), 2 * DropReason::ALL.len() as u64);
}

#[test]
fn short_and_long_datagrams_are_wrong_size() {
    for len in 0..HEADER_BYTES {
        assert_eq!(
            parse(&vec![0; len]).unwrap_err(),
            WireError::WrongSize { len, kind: None }
        );
    }
    let mut b = [0u8; INPUT_PACKET_BYTES];
    encode_input(
        &InputHeader::default(),
        &[[PadFrame::ZERO; PADS]; 2],
        &mut b,
    );
    let mut long = b.to_vec();
    long.push(0);
    assert_eq!(
        parse(&long).unwrap_err(),
        WireError::WrongSize {
            len: 801,
            kind: Some(PacketKind::Input)
        }
    );
    // An output header on an input-sized datagram.
    b[5] = 2;
    b[7] = 1;
    assert_eq!(
        parse(&b).unwrap_err(),
        WireError::WrongSize {
            len: 800,
            kind: Some(PacketKind::Output)
        }
    );
}

#[test]
fn the_first_non_finite_value_is_named() {
    let mut b = [0u8; INPUT_PACKET_BYTES];
    encode_input(
        &InputHeader::default(),
        &[[PadFrame::ZERO; PADS]; 2],
        &mut b,
    );
    b[HEADER_BYTES + 4 * 100..HEADER_BYTES + 4 * 101].copy_from_slice(&f32::NAN.to_le_bytes());
    b[HEADER_BYTES + 4 * 150..HEADER_BYTES + 4 * 151].copy_from_slice(&f32::INFINITY.to_le_bytes());
    assert_eq!(
        parse(&b).unwrap_err(),
        WireError::NonFinite {
            offset: HEADER_BYTES + 400
        }
    );
}

// ---- 3. the block assembler -----------------------------------------------------

/// Packet `index` of `block`: pressure says which frame of the block it carries, x
/// the pad, y the block (mod 1000).
fn stream_packet(block: u32, index: u8) -> InputPacket {
    let mut frames = [[PadFrame::ZERO; PADS]; FRAMES_PER_PACKET];
    for (f, frame) in frames.iter_mut().enumerate() {
        for (p, pad) in frame.iter_mut().enumerate() {
            *pad = PadFrame {
                x: p as f32,
                y: (block % 1000) as f32,
                pressure: (usize::from(index) * FRAMES_PER_PACKET + f) as f32,
            };
        }
    }
    InputPacket {
        header: InputHeader {
            index,
            seq: block.wrapping_mul(16).wrapping_add(u32::from(index)),
            block,
            sender_time_ns: 5_000_000_000 + 1_000 * u64::from(block) + u64::from(index),
        },
        frames,
    }
}

fn assert_block_content(b: &AssembledBlock) {
    for (f, frame) in b.frames.iter().enumerate() {
        for (p, pad) in frame.iter().enumerate() {
            assert_eq!(pad.x, p as f32);
            assert_eq!(pad.y, (b.block % 1000) as f32);
            assert_eq!(pad.pressure, f as f32, "block {} frame {f}", b.block);
        }
    }
    assert_eq!(
        b.first_packet_sender_ns,
        stream_packet(b.block, 0).header.sender_time_ns
    );
}

/// What the assembler handed out, per block, with the arrival times seen.
#[derive(Default)]
struct Run {
    pushed: u64,
    completed: Vec<AssembledBlock>,
    /// (block, first arrival) of each block, from the test's side.
    first_arrivals: std::collections::HashMap<u32, u64>,
    last_arrivals: std::collections::HashMap<u32, u64>,
}

fn feed(asm: &mut BlockAssembler, packets: &[InputPacket]) -> Run {
    let mut run = Run::default();
    for (n, p) in packets.iter().enumerate() {
        let arrival = 1_000_000 + 10_000 * n as u64;
        run.pushed += 1;
        run.first_arrivals.entry(p.header.block).or_insert(arrival);
        if let Some(done) = asm.push(p, arrival) {
            assert_block_content(done);
            run.last_arrivals.insert(done.block, arrival);
            run.completed.push(*done);
        }
    }
    run
}

/// Reordered packets as the spec defines them: after a higher index of the same
/// block, or after a packet of a later block. `position` maps a block number to its
/// place in the stream (so the model ignores wrap-around).
fn model_reordered(packets: &[InputPacket], position: impl Fn(u32) -> u64) -> u64 {
    let mut newest: Option<u64> = None;
    let mut seen = std::collections::HashMap::<u32, u16>::new();
    let mut n = 0;
    for p in packets {
        let pos = position(p.header.block);
        let present = seen.entry(p.header.block).or_default();
        let bit = 1u16 << p.header.index;
        if *present & bit != 0 {
            continue;
        }
        let older = newest.is_some_and(|m| pos < m);
        if older || u32::from(*present) >> (p.header.index + 1) != 0 {
            n += 1;
        }
        *present |= bit;
        newest = Some(newest.map_or(pos, |m| m.max(pos)));
    }
    n
}

fn in_order(first: u32, blocks: u32) -> Vec<InputPacket> {
    (0..blocks)
        .flat_map(|b| (0..16).map(move |i| stream_packet(first.wrapping_add(b), i)))
        .collect()
}

/// Shuffles within each block, or across each pair of neighbouring blocks.
fn permuted(rng: &mut Rng, packets: &mut [InputPacket], across_pairs: bool) {
    let chunk = if across_pairs { 32 } else { 16 };
    for group in packets.chunks_mut(chunk) {
        rng.shuffle(group);
    }
}

#[test]
fn an_in_order_stream_completes_every_block() {
    let mut asm = BlockAssembler::new();
    let packets = in_order(0, 200);
    let run = feed(&mut asm, &packets);
    assert_eq!(run.completed.len(), 200);
    for (n, b) in run.completed.iter().enumerate() {
        assert_eq!(b.block, n as u32);
        assert_eq!(b.first_arrival_ns, run.first_arrivals[&b.block], "t1");
        assert_eq!(b.first_arrival_ns, 1_000_000 + 10_000 * 16 * n as u64);
        assert_eq!(b.last_arrival_ns, b.first_arrival_ns + 15 * 10_000);
        // Packet 15 completed it: its sender time, not packet 0's.
        assert_eq!(
            b.last_packet_sender_ns,
            b.first_packet_sender_ns + 15,
            "the completing packet's send"
        );
        assert_eq!(b.reordered_packets, 0);
    }
    asm.finish();
    let c = asm.counters();
    assert_eq!(c.blocks_complete, 200);
    assert_eq!(c.packets_accepted, 200 * 16);
    assert_eq!(c.drops.total(), 0);
    assert_eq!(
        (
            c.blocks_incomplete,
            c.packets_missing,
            c.reordered,
            c.resyncs
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(asm.newest_block(), Some(199));
}

#[test]
fn reordering_within_a_block_and_across_two_blocks_is_tolerated_and_counted() {
    let mut rng = Rng(42);
    for across_pairs in [false, true] {
        let mut packets = in_order(0, 300);
        permuted(&mut rng, &mut packets, across_pairs);
        let expected_reordered = model_reordered(&packets, u64::from);
        assert!(expected_reordered > 300);
        let mut asm = BlockAssembler::new();
        let run = feed(&mut asm, &packets);
        assert_eq!(run.completed.len(), 300);
        let mut per_block_reordered = 0;
        for b in &run.completed {
            assert_eq!(b.first_arrival_ns, run.first_arrivals[&b.block], "t1");
            assert_eq!(b.last_arrival_ns, run.last_arrivals[&b.block]);
            per_block_reordered += u64::from(b.reordered_packets);
        }
        asm.finish();
        let c = asm.counters();
        assert_eq!(c.blocks_complete, 300);
        assert_eq!(c.blocks_incomplete, 0);
        assert_eq!(c.drops.total(), 0);
        assert_eq!(c.reordered, expected_reordered);
        assert_eq!(per_block_reordered, expected_reordered);
    }
}

#[test]
fn injected_duplicates_are_counted_exactly() {
    let mut rng = Rng(7);
    let mut packets = Vec::new();
    let mut injected = 0;
    for p in in_order(0, 300) {
        packets.push(p);
        // A copy right behind any packet but the one that completes its block.
        if p.header.index < 15 && rng.chance(20) {
            packets.push(p);
            injected += 1;
        }
    }
    let mut asm = BlockAssembler::new();
    let run = feed(&mut asm, &packets);
    assert_eq!(run.completed.len(), 300);
    let c = asm.counters();
    assert_eq!(c.drops.duplicate, injected);
    assert_eq!(c.drops.total(), injected);
    assert_eq!(c.reordered, 0);
}

#[test]
fn a_copy_of_a_completed_block_is_stale() {
    let mut asm = BlockAssembler::new();
    feed(&mut asm, &in_order(10, 1));
    assert!(asm.push(&stream_packet(10, 15), 1).is_none());
    assert!(asm.push(&stream_packet(10, 3), 2).is_none());
    let c = asm.counters();
    assert_eq!(
        (c.drops.stale, c.drops.duplicate, c.blocks_complete),
        (2, 0, 1)
    );
}

#[test]
fn dropped_packets_leave_incomplete_blocks_with_exact_missing_counts() {
    let mut rng = Rng(2024);
    let blocks = 500u32;
    let mut packets = Vec::new();
    let mut dropped = 0u64;
    let mut hit_blocks = std::collections::HashSet::new();
    for p in in_order(0, blocks) {
        // Keep the last block whole: a block the stream never shows is unknowable.
        if p.header.block < blocks - 1 && rng.chance(8) {
            dropped += 1;
            hit_blocks.insert(p.header.block);
        } else {
            packets.push(p);
        }
    }
    let mut asm = BlockAssembler::new();
    let run = feed(&mut asm, &packets);
    asm.finish();
    let c = asm.counters();
    assert_eq!(c.packets_missing, dropped);
    assert_eq!(c.blocks_incomplete, hit_blocks.len() as u64);
    assert_eq!(
        c.blocks_complete,
        u64::from(blocks) - hit_blocks.len() as u64
    );
    assert_eq!(run.completed.len() as u64, c.blocks_complete);
    assert!(run.completed.iter().all(|b| !hit_blocks.contains(&b.block)));
    assert_eq!(c.drops.total(), 0);
    // finish() twice counts nothing more.
    asm.finish();
    assert_eq!(asm.counters(), c);
}

#[test]
fn every_pushed_packet_is_accounted_for_exactly_once() {
    let mut rng = Rng(99);
    let blocks = 600u32;
    let mut packets = in_order(0, blocks);
    permuted(&mut rng, &mut packets, true);
    let mut stream = Vec::new();
    let mut dropped = 0u64;
    for (n, p) in packets.iter().enumerate() {
        // Losses anywhere but the first and last pair.
        if (2..blocks - 2).contains(&p.header.block) && rng.chance(5) {
            dropped += 1;
            continue;
        }
        stream.push(*p);
        if rng.chance(3) {
            stream.push(*p); // a duplicate (or stale, if it completed its block)
        }
        if n > 32 * 3 && rng.chance(2) {
            // A packet from at least three blocks back: stale.
            let old = packets[rng.below((n - 32 * 2) as u64) as usize];
            if old.header.block + 3 <= p.header.block {
                stream.push(old);
            }
        }
    }
    let mut asm = BlockAssembler::new();
    let run = feed(&mut asm, &stream);
    asm.finish();
    let c = asm.counters();
    assert!(c.drops.duplicate > 0 && c.drops.stale > 0 && c.packets_missing > 0);
    assert_eq!(
        run.pushed,
        c.packets_accepted + c.drops.duplicate + c.drops.stale,
        "pushed = used + duplicate + stale"
    );
    assert_eq!(
        c.packets_accepted,
        16 * (c.blocks_complete + c.blocks_incomplete) - c.packets_missing,
        "used = in complete blocks + in incomplete blocks"
    );
    assert_eq!(c.blocks_complete + c.blocks_incomplete, u64::from(blocks));
    assert_eq!(c.packets_missing, dropped);
    assert_eq!(c.drops.total(), c.drops.duplicate + c.drops.stale);
}

#[test]
fn block_numbers_run_through_the_wrap_around() {
    let mut rng = Rng(5);
    let first = u32::MAX - 4;
    let position = |b: u32| u64::from(b.wrapping_sub(first));
    for across_pairs in [false, true] {
        let mut packets = in_order(first, 12);
        if across_pairs {
            // Pairs (MAX-4, MAX-3), (MAX-2, MAX-1), (MAX, 0), (1, 2), ...
            permuted(&mut rng, &mut packets, true);
        }
        let mut asm = BlockAssembler::new();
        let run = feed(&mut asm, &packets);
        asm.finish();
        let mut done: Vec<u32> = run.completed.iter().map(|b| b.block).collect();
        done.sort_by_key(|&b| position(b));
        let expected: Vec<u32> = (0..12).map(|i| first.wrapping_add(i)).collect();
        assert_eq!(done, expected);
        let c = asm.counters();
        assert_eq!(c.blocks_complete, 12);
        assert_eq!((c.blocks_incomplete, c.resyncs, c.drops.total()), (0, 0, 0));
        assert_eq!(c.reordered, model_reordered(&packets, position));
        assert_eq!(asm.newest_block(), Some(6));
    }
    // A stale packet across the wrap: block MAX when 1 is newest.
    let mut asm = BlockAssembler::new();
    feed(&mut asm, &in_order(u32::MAX - 1, 4));
    assert!(asm.push(&stream_packet(u32::MAX, 0), 0).is_none());
    assert_eq!(asm.counters().drops.stale, 1);
}

#[test]
fn a_newer_block_abandons_the_oldest_incomplete_one() {
    let mut asm = BlockAssembler::new();
    for i in 0..11 {
        asm.push(&stream_packet(0, i), 0);
    }
    feed(&mut asm, &in_order(1, 1));
    assert_eq!(
        asm.counters().blocks_incomplete,
        0,
        "block 0 is still in the window"
    );
    asm.push(&stream_packet(0, 11), 0); // late but in the window: used
    asm.push(&stream_packet(2, 0), 0); // block 0 leaves the window
    let c = asm.counters();
    assert_eq!((c.blocks_incomplete, c.packets_missing), (1, 4));
    assert_eq!(c.reordered, 1);
    assert!(asm.push(&stream_packet(0, 12), 0).is_none());
    assert_eq!(asm.counters().drops.stale, 1);
    asm.finish();
    let c = asm.counters();
    assert_eq!(
        (c.blocks_complete, c.blocks_incomplete, c.packets_missing),
        (1, 2, 19)
    );
    // After finish, the window's blocks are closed.
    assert!(asm.push(&stream_packet(2, 1), 0).is_none());
    assert_eq!(asm.counters().drops.stale, 2);
}

#[test]
fn gaps_count_skipped_blocks_and_big_jumps_resync() {
    let mut asm = BlockAssembler::new();
    feed(&mut asm, &in_order(0, 1));
    feed(&mut asm, &in_order(5, 2)); // 1..=4 never seen
    asm.finish();
    let c = asm.counters();
    assert_eq!(c.blocks_complete, 3);
    assert_eq!(
        (c.blocks_incomplete, c.blocks_skipped, c.packets_missing),
        (4, 4, 64)
    );

    let mut asm = BlockAssembler::new();
    feed(&mut asm, &in_order(10, 1));
    feed(&mut asm, &in_order(10 + 1 + RESYNC_GAP_BLOCKS, 1));
    feed(&mut asm, &in_order(3, 1)); // the controller restarted
    let c = asm.counters();
    assert_eq!(
        (c.resyncs, c.blocks_complete, c.blocks_incomplete),
        (2, 3, 0)
    );
    feed(&mut asm, &in_order(3 + RESYNC_GAP_BLOCKS, 1)); // just inside: a gap
    asm.finish();
    let c = asm.counters();
    assert_eq!(c.resyncs, 2);
    let gap = u64::from(RESYNC_GAP_BLOCKS - 1); // blocks 4..=1026
    assert_eq!((c.blocks_skipped, c.packets_missing), (gap, 16 * gap));
}

#[test]
fn hand_built_packets_with_a_bad_index_are_dropped() {
    let mut asm = BlockAssembler::new();
    let mut p = stream_packet(0, 0);
    for index in [16, 200, 255] {
        p.header.index = index;
        assert!(asm.push(&p, 0).is_none());
    }
    let c = asm.counters();
    assert_eq!((c.drops.bad_index, c.packets_accepted), (3, 0));
    assert_eq!(asm.newest_block(), None);
    asm.record_drop(DropReason::Foreign);
    asm.record_drop(WireError::BadMagic.kind());
    assert_eq!(asm.counters().drops.total(), 5);
    asm.reset();
    assert_eq!(asm.counters(), AssemblerCounters::default());
}

#[test]
fn abandoning_a_senders_packets_counts_them_unconfirmed_and_no_block_incomplete() {
    let mut asm = BlockAssembler::new();
    // A stray sender's three packets of its block 9, then it is abandoned.
    for index in [3, 4, 5] {
        assert!(asm.push(&stream_packet(9, index), 0).is_none());
    }
    asm.abandon();
    let c = asm.counters();
    assert_eq!((c.packets_accepted, c.drops.unconfirmed), (0, 3));
    assert_eq!((c.blocks_incomplete, c.packets_missing), (0, 0));
    assert_eq!(asm.newest_block(), None);
    // The next stream starts where it starts, whole.
    for index in 0..16 {
        let done = asm.push(&stream_packet(0, index), 0).is_some();
        assert_eq!(done, index == 15);
    }
    let c = asm.counters();
    assert_eq!(
        (c.packets_accepted, c.blocks_complete, c.blocks_incomplete),
        (16, 1, 0)
    );
    // Every datagram used or dropped once: 16 used, 3 unconfirmed.
    assert_eq!(c.packets_accepted + c.drops.total(), 19);
}

#[test]
fn drop_counters_count_each_reason_apart() {
    let mut d = DropCounters::default();
    for (i, r) in DropReason::ALL.iter().enumerate() {
        for _ in 0..=i {
            d.record(*r);
        }
    }
    // Each reason its own counter, none folded into another (`probes::net::drop_counts`
    // stores them by their names).
    for (i, r) in DropReason::ALL.iter().enumerate() {
        assert_eq!(d.get(*r), (i + 1) as u64, "{}", r.name());
    }
    assert_eq!(d.total(), (1..=10).sum::<u64>());
    assert_eq!(d.malformed(), (1..=6).sum::<u64>());
}

// ---- the answer matcher ---------------------------------------------------------

fn answer(block: u32, echo_time_ns: u64) -> OutputPacket {
    OutputPacket {
        header: OutputHeader {
            seq: block,
            block,
            sender_time_ns: 0,
            echo_time_ns,
        },
        frames: [[0.0; OUTPUT_CHANNELS]; FRAMES_PER_BLOCK],
    }
}

#[test]
fn answers_are_matched_timed_and_classified() {
    let mut m = AnswerMatcher::new();
    m.sent(7, 1_000);
    m.sent(8, 2_000);
    assert_eq!(
        m.answered(&answer(7, 1_000), 1_000 + DEADLINE_NS),
        Answer::OnTime {
            block: 7,
            end_to_end_ns: DEADLINE_NS
        }
    );
    assert_eq!(
        m.answered(&answer(7, 1_000), 5_000_000),
        Answer::Duplicate { block: 7 }
    );
    assert_eq!(
        m.answered(&answer(8, 2_000), 2_001 + DEADLINE_NS),
        Answer::Late {
            block: 8,
            end_to_end_ns: DEADLINE_NS + 1
        }
    );
    assert_eq!(m.answered(&answer(9, 0), 0), Answer::Unknown { block: 9 });
    assert_eq!(
        m.answered(&answer(7 + ANSWER_RING_BLOCKS as u32, 0), 0),
        Answer::Unknown {
            block: 7 + ANSWER_RING_BLOCKS as u32
        },
        "same ring place, other block"
    );
    let c = m.counters();
    assert_eq!(
        (c.sent, c.answered, c.late, c.duplicates, c.unknown),
        (2, 2, 1, 1, 2)
    );
    assert_eq!((c.echo_mismatches, c.evicted_unanswered), (0, 0));
}

/// A receiver that could not run for half a second (a busy machine) finds 700 blocks'
/// send times waiting, then their answers: every one is still known.
#[test]
fn a_receiver_half_a_second_behind_still_matches_every_answer() {
    let mut m = AnswerMatcher::new();
    let blocks = 700u32;
    for block in 0..blocks {
        m.sent(block, u64::from(block) * BLOCK_PERIOD_NS);
    }
    for block in 0..blocks {
        let t0 = u64::from(block) * BLOCK_PERIOD_NS;
        assert!(matches!(
            m.answered(&answer(block, t0), t0 + 500_000),
            Answer::OnTime { .. }
        ));
    }
    let c = m.counters();
    assert_eq!((c.answered, c.unknown, c.evicted_unanswered), (700, 0, 0));
}

#[test]
fn unanswered_blocks_are_counted_when_overdue_or_evicted() {
    let mut m = AnswerMatcher::new();
    for block in 0..10u32 {
        m.sent(block, u64::from(block) * BLOCK_PERIOD_NS);
    }
    let last_sent = 9 * BLOCK_PERIOD_NS;
    assert_eq!(
        m.unanswered_so_far(last_sent),
        8,
        "blocks 0..=7 are past the deadline"
    );
    m.answered(&answer(0, 0), 2 * BLOCK_PERIOD_NS); // late
    assert_eq!(m.unanswered_so_far(last_sent), 7);
    assert_eq!(m.unanswered_so_far(last_sent + 10 * DEADLINE_NS), 9);
    // The ring wraps: blocks 1..=9 are pushed out unanswered.
    let ring = ANSWER_RING_BLOCKS as u32;
    for block in ring..ring + 10 {
        m.sent(block, u64::from(block) * BLOCK_PERIOD_NS);
    }
    let c = m.counters();
    assert_eq!(c.evicted_unanswered, 9);
    assert_eq!(m.answered(&answer(5, 0), 0), Answer::Unknown { block: 5 });
    assert_eq!(
        m.unanswered_so_far(u64::from(ring + 9) * BLOCK_PERIOD_NS),
        9 + 8
    );
    m.reset();
    assert_eq!(m.counters(), MatcherCounters::default());
    assert_eq!(m.unanswered_so_far(u64::MAX), 0);
}

#[test]
fn the_matcher_checks_the_echo_and_survives_the_wrap_and_clock_errors() {
    let mut m = AnswerMatcher::new();
    m.sent(u32::MAX, 10);
    m.sent(0, 20);
    assert!(matches!(
        m.answered(&answer(u32::MAX, 10), 30),
        Answer::OnTime {
            block: u32::MAX,
            end_to_end_ns: 20
        }
    ));
    assert!(matches!(
        m.answered(&answer(0, 999), 5),
        Answer::OnTime {
            block: 0,
            end_to_end_ns: 0
        }
    ));
    let c = m.counters();
    assert_eq!((c.echo_mismatches, c.arrived_before_send), (1, 1));
}

// ---- 5. the packet schedule -----------------------------------------------------

#[test]
fn packet_due_ns_does_not_drift() {
    assert_eq!(packet_due_ns(0), 0);
    assert_eq!(packet_due_ns(22_050), 1_000_000_000);
    assert_eq!(packet_due_ns(22_050 * 3600), 3600 * 1_000_000_000);
    assert_eq!(packet_due_ns(1), PACKET_INTERVAL_NS);
    assert_eq!(packet_due_ns(16), BLOCK_PERIOD_NS);
    assert_eq!(packet_due_ns(31), DEADLINE_NS);
    for n in (0..2_000_000u64).chain(u64::MAX / 50_000..u64::MAX / 50_000 + 10_000) {
        let step = packet_due_ns(n + 1) - packet_due_ns(n);
        assert!(step == 45_351 || step == 45_352, "packet {n}: {step} ns");
    }
    // Within half a ns of the exact value.
    for n in [1u64, 7, 1_000_003, 987_654_321_987] {
        let exact = n as f64 * 2e9 / 44_100.0;
        assert!((packet_due_ns(n) as f64 - exact).abs() <= 0.5 + exact * 1e-15);
    }
    assert_eq!(packet_due_ns(u64::MAX), u64::MAX);
}

#[test]
fn the_constants_agree_with_the_spec() {
    assert_eq!(FRAMES_PER_BLOCK, 32);
    assert_eq!(INPUT_PACKET_BYTES, 800);
    assert_eq!(OUTPUT_PACKET_BYTES, 1056);
    assert_eq!(INPUT_PAYLOAD_BYTES / 4, 192);
    assert_eq!(OUTPUT_PAYLOAD_BYTES / 4, 256);
    // 96 channels of 32-bit samples at 44.1 kHz.
    let payload_bits_per_s = (PADS * FIELDS_PER_PAD) as u64 * u64::from(SAMPLE_RATE_HZ) * 32;
    assert_eq!(payload_bits_per_s, 135_475_200);
    let packets_per_s = u64::from(SAMPLE_RATE_HZ) / FRAMES_PER_PACKET as u64;
    assert_eq!(packets_per_s * INPUT_PACKET_BYTES as u64 * 8, 141_120_000);
}
