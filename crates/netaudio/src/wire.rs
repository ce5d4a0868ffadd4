//! The wire format of the network-audio probe and the bookkeeping on each side of it.
//!
//! The normative description is `docs/net-protocol.md`; this module is its one
//! implementation. In short: a 32-byte little-endian header, then either 2 frames × 32
//! pads × (x, y, pressure) `f32` (controller input, 800 bytes) or 32 frames × 8
//! channels `f32` (host output, 1056 bytes).
//!
//! - [`parse`] validates a datagram completely (size, magic, version, kind, index, every
//!   float finite) and copies it into a fixed-size [`Packet`]; anything else is a
//!   [`WireError`], which maps to one [`DropReason`] for counting in [`DropCounters`].
//! - [`encode_input`] and [`encode_output`] write into fixed-size arrays.
//! - [`BlockAssembler`] (host) gathers the 16 input packets of a block, tolerating
//!   reordering across one block boundary, and counts duplicates, late packets and
//!   incomplete blocks.
//! - [`AnswerMatcher`] (controller) pairs each answer with the block it answers and
//!   gives the end-to-end time `tf − t0`.
//!
//! Real-time contract: every function and method here is allocation-free, lock-free and
//! cannot panic on any input bytes or any header values; the structs are fixed-size and
//! are built once (`new`) before the stream starts. Each is owned by one thread: the
//! host's receive loop owns its `BlockAssembler`, the controller's loop its
//! `AnswerMatcher` (a controller that sends and receives on two threads hands the send
//! times over through a pre-sized `rtrb` ring).

/// The first four bytes of every packet.
pub const MAGIC: [u8; 4] = *b"ALNT";
/// The protocol version this build reads and writes.
pub const VERSION: u8 = 1;
/// Touch pads on the controller.
pub const PADS: usize = 32;
/// Values per pad and frame: x, y, pressure.
pub const FIELDS_PER_PAD: usize = 3;
/// Temporal frames in one input packet.
pub const FRAMES_PER_PACKET: usize = 2;
/// Input packets in one block.
pub const PACKETS_PER_BLOCK: usize = 16;
/// Frames in one block (input and output).
pub const FRAMES_PER_BLOCK: usize = FRAMES_PER_PACKET * PACKETS_PER_BLOCK;
/// Audio channels in the host's answer.
pub const OUTPUT_CHANNELS: usize = 8;
/// The controller's frame rate.
pub const SAMPLE_RATE_HZ: u32 = 44_100;
/// Bytes of the header at the start of every packet.
pub const HEADER_BYTES: usize = 32;
/// Bytes of an input packet's payload: 2 × 32 × 3 `f32`.
pub const INPUT_PAYLOAD_BYTES: usize = FRAMES_PER_PACKET * PADS * FIELDS_PER_PAD * 4;
/// Bytes of an output packet's payload: 32 × 8 `f32`.
pub const OUTPUT_PAYLOAD_BYTES: usize = FRAMES_PER_BLOCK * OUTPUT_CHANNELS * 4;
/// Bytes of a whole input packet (the UDP payload).
pub const INPUT_PACKET_BYTES: usize = HEADER_BYTES + INPUT_PAYLOAD_BYTES;
/// Bytes of a whole output packet (the UDP payload).
pub const OUTPUT_PACKET_BYTES: usize = HEADER_BYTES + OUTPUT_PAYLOAD_BYTES;
/// Nominal time between two input packets, 2 / 44100 s rounded to the ns (exactly
/// 45 351.47 ns). Schedule with [`packet_due_ns`], which does not drift.
pub const PACKET_INTERVAL_NS: u64 = 45_351;
/// Time between two blocks, 32 / 44100 s rounded to the ns (= `packet_due_ns(16)`).
pub const BLOCK_PERIOD_NS: u64 = 725_624;
/// The answer deadline, (64 − 2) / 44100 s rounded to the ns (= `packet_due_ns(31)`):
/// a block's answer must reach the controller this long after the controller sent the
/// block's first packet (`tf − t0`).
pub const DEADLINE_NS: u64 = 1_405_896;

const _: () = assert!(INPUT_PACKET_BYTES == 800 && OUTPUT_PACKET_BYTES == 1056);
const _: () = assert!(FRAMES_PER_BLOCK == 32 && PACKETS_PER_BLOCK <= 16);
const _: () = assert!(PACKET_INTERVAL_NS == packet_due_ns(1));
const _: () = assert!(BLOCK_PERIOD_NS == packet_due_ns(PACKETS_PER_BLOCK as u64));
const _: () = assert!(DEADLINE_NS == packet_due_ns(31));

/// When input packet `packet` is due, in ns after packet 0: `packet × 2·10⁹ / 44100`
/// rounded to the nearest ns, computed in integers from the packet number, so a schedule
/// built on it never drifts (`packet_due_ns(22050)` is exactly one second); consecutive
/// packets are 45 351 or 45 352 ns apart. The first packet of block `b` is packet
/// `16·b`. Saturates at `u64::MAX` (after about 4·10¹⁴ packets, 580 years).
pub const fn packet_due_ns(packet: u64) -> u64 {
    // 2e9 / 44100 = 20e6 / 441; 220 is half of 441, rounded down.
    let ns = (packet as u128 * 20_000_000 + 220) / 441;
    if ns > u64::MAX as u128 {
        u64::MAX
    } else {
        ns as u64
    }
}

/// What a packet carries, byte 5 of the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketKind {
    /// Controller to host: 2 frames of pad data (code 1).
    Input,
    /// Host to controller: one block's 32 frames of audio (code 2).
    Output,
}

impl PacketKind {
    /// The code in the header.
    pub const fn code(self) -> u8 {
        match self {
            PacketKind::Input => 1,
            PacketKind::Output => 2,
        }
    }

    /// The kind with this header code, if any.
    pub const fn from_code(code: u8) -> Option<PacketKind> {
        match code {
            1 => Some(PacketKind::Input),
            2 => Some(PacketKind::Output),
            _ => None,
        }
    }

    /// The size of a whole packet of this kind, in bytes.
    pub const fn packet_bytes(self) -> usize {
        match self {
            PacketKind::Input => INPUT_PACKET_BYTES,
            PacketKind::Output => OUTPUT_PACKET_BYTES,
        }
    }

    /// Packets of this kind per block (byte 7 of the header).
    pub const fn packets_per_block(self) -> u8 {
        match self {
            PacketKind::Input => PACKETS_PER_BLOCK as u8,
            PacketKind::Output => 1,
        }
    }
}

/// One pad in one frame. The protocol only requires finite values; the controller
/// defines their scale (the SLABS sends position and pressure normalised to 0..=1).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PadFrame {
    /// Finger position across the pad.
    pub x: f32,
    /// Finger position along the pad.
    pub y: f32,
    /// Finger pressure; 0 is no touch.
    pub pressure: f32,
}

impl PadFrame {
    /// No touch.
    pub const ZERO: PadFrame = PadFrame {
        x: 0.0,
        y: 0.0,
        pressure: 0.0,
    };
}

/// The payload of one input packet: `[frame][pad]`.
pub type InputFrames = [[PadFrame; PADS]; FRAMES_PER_PACKET];
/// The pad data of one block: `[frame][pad]`, frame 2·i and 2·i+1 from packet i.
pub type BlockFrames = [[PadFrame; PADS]; FRAMES_PER_BLOCK];
/// The payload of one output packet: `[frame][channel]`.
pub type OutputFrames = [[f32; OUTPUT_CHANNELS]; FRAMES_PER_BLOCK];

/// The header of an input packet. The encoder fills in magic, version, kind, packets
/// per block (16) and `echo_time_ns` (0); receivers ignore an input packet's
/// `echo_time_ns`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InputHeader {
    /// The packet's place in its block, 0..=15.
    pub index: u8,
    /// The controller's packet sequence number: counts every packet it sends from 0,
    /// wrapping at `u32::MAX`.
    pub seq: u32,
    /// The block number, wrapping at `u32::MAX`.
    pub block: u32,
    /// The controller's CLOCK_MONOTONIC when it handed the packet to the kernel.
    pub sender_time_ns: u64,
}

/// The header of an output packet. The encoder fills in magic, version, kind, index (0)
/// and packets per block (1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputHeader {
    /// The host's packet sequence number: counts every answer it sends from 0, wrapping.
    pub seq: u32,
    /// The block this answers.
    pub block: u32,
    /// The host's CLOCK_MONOTONIC when it handed the answer to the kernel (`t2`).
    pub sender_time_ns: u64,
    /// The `sender_time_ns` of the block's input packet 0 as the host received it
    /// (`t0`, the controller's clock), so the controller needs no lookup for `tf − t0`.
    pub echo_time_ns: u64,
}

/// A parsed input packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InputPacket {
    /// Its header.
    pub header: InputHeader,
    /// Its two frames of pad data.
    pub frames: InputFrames,
}

/// A parsed output packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutputPacket {
    /// Its header.
    pub header: OutputHeader,
    /// The block's 32 frames of audio.
    pub frames: OutputFrames,
}

/// A valid packet, copied out of the datagram.
// Boxing the larger variant would allocate on the receive path; 1 KiB on the stack is
// the price of never allocating.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Packet {
    /// Controller to host.
    Input(InputPacket),
    /// Host to controller.
    Output(OutputPacket),
}

impl Packet {
    /// Input or output.
    pub fn kind(&self) -> PacketKind {
        match self {
            Packet::Input(_) => PacketKind::Input,
            Packet::Output(_) => PacketKind::Output,
        }
    }

    /// The block number in the header.
    pub fn block(&self) -> u32 {
        match self {
            Packet::Input(p) => p.header.block,
            Packet::Output(p) => p.header.block,
        }
    }
}

/// Why a datagram is not a valid packet. Every one is counted and dropped: the receiver
/// never stops for a bad packet, and the synthesiser never sees one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The datagram is shorter than a header, or not exactly the size of its kind's
    /// packet.
    #[error("{len}-byte datagram: {}", expected_size(.kind))]
    WrongSize {
        /// Its length in bytes.
        len: usize,
        /// The kind its header names, when it has a whole header with a known kind.
        kind: Option<PacketKind>,
    },
    /// The first four bytes are not `ALNT`.
    #[error("not an audiolat packet (the first bytes are not \"ALNT\"): is something else sending to this port?")]
    BadMagic,
    /// A protocol version this build does not speak.
    #[error("protocol version {0}, this build speaks only version 1: run the same audiolat on both ends")]
    UnknownVersion(u8),
    /// A kind code other than 1 (input) or 2 (output).
    #[error("unknown packet kind {0} (1 is controller input, 2 host output)")]
    UnknownKind(u8),
    /// The index is not below the packets per block, or the packets per block are not 16
    /// (input) or 1 (output).
    #[error("packet index {index} of {per_block} per block: input is 0..=15 of 16, output 0 of 1")]
    BadIndex {
        /// Byte 6 of the header.
        index: u8,
        /// Byte 7 of the header.
        per_block: u8,
    },
    /// A NaN or infinite float in the payload.
    #[error("a NaN or infinite value at byte {offset} of the packet")]
    NonFinite {
        /// Byte offset of the first such float in the packet.
        offset: usize,
    },
}

fn expected_size(kind: &Option<PacketKind>) -> &'static str {
    match kind {
        None => "shorter than the 32-byte header",
        Some(PacketKind::Input) => "an input packet is 800 bytes",
        Some(PacketKind::Output) => "an output packet is 1056 bytes",
    }
}

impl WireError {
    /// The counter this error goes to.
    pub fn kind(&self) -> DropReason {
        match self {
            WireError::WrongSize { .. } => DropReason::WrongSize,
            WireError::BadMagic => DropReason::BadMagic,
            WireError::UnknownVersion(_) => DropReason::UnknownVersion,
            WireError::UnknownKind(_) => DropReason::UnknownKind,
            WireError::BadIndex { .. } => DropReason::BadIndex,
            WireError::NonFinite { .. } => DropReason::NonFinite,
        }
    }
}

/// Why a received datagram was not used: one per [`WireError`] variant, and the
/// receiver's own reasons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// [`WireError::WrongSize`].
    WrongSize,
    /// [`WireError::BadMagic`].
    BadMagic,
    /// [`WireError::UnknownVersion`].
    UnknownVersion,
    /// [`WireError::UnknownKind`].
    UnknownKind,
    /// [`WireError::BadIndex`].
    BadIndex,
    /// [`WireError::NonFinite`].
    NonFinite,
    /// A packet already received (same block, same index) for a block being assembled.
    Duplicate,
    /// A packet for a block older than the assembler's window, or already complete.
    Stale,
    /// A packet from an address other than the configured peer (counted by the caller,
    /// which owns the socket).
    Foreign,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 9] = [
        DropReason::WrongSize,
        DropReason::BadMagic,
        DropReason::UnknownVersion,
        DropReason::UnknownKind,
        DropReason::BadIndex,
        DropReason::NonFinite,
        DropReason::Duplicate,
        DropReason::Stale,
        DropReason::Foreign,
    ];

    /// A short snake_case name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::WrongSize => "wrong_size",
            DropReason::BadMagic => "bad_magic",
            DropReason::UnknownVersion => "unknown_version",
            DropReason::UnknownKind => "unknown_kind",
            DropReason::BadIndex => "bad_index",
            DropReason::NonFinite => "non_finite",
            DropReason::Duplicate => "duplicate",
            DropReason::Stale => "stale",
            DropReason::Foreign => "foreign",
        }
    }
}

/// Dropped datagrams by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropCounters {
    /// [`DropReason::WrongSize`].
    pub wrong_size: u64,
    /// [`DropReason::BadMagic`].
    pub bad_magic: u64,
    /// [`DropReason::UnknownVersion`].
    pub unknown_version: u64,
    /// [`DropReason::UnknownKind`].
    pub unknown_kind: u64,
    /// [`DropReason::BadIndex`].
    pub bad_index: u64,
    /// [`DropReason::NonFinite`].
    pub non_finite: u64,
    /// [`DropReason::Duplicate`].
    pub duplicate: u64,
    /// [`DropReason::Stale`].
    pub stale: u64,
    /// [`DropReason::Foreign`].
    pub foreign: u64,
}

impl DropCounters {
    /// Counts one drop.
    pub fn record(&mut self, reason: DropReason) {
        *self.counter_mut(reason) += 1;
    }

    /// The count for one reason.
    pub fn get(&self, reason: DropReason) -> u64 {
        match reason {
            DropReason::WrongSize => self.wrong_size,
            DropReason::BadMagic => self.bad_magic,
            DropReason::UnknownVersion => self.unknown_version,
            DropReason::UnknownKind => self.unknown_kind,
            DropReason::BadIndex => self.bad_index,
            DropReason::NonFinite => self.non_finite,
            DropReason::Duplicate => self.duplicate,
            DropReason::Stale => self.stale,
            DropReason::Foreign => self.foreign,
        }
    }

    /// Every drop, whatever the reason.
    pub fn total(&self) -> u64 {
        DropReason::ALL.iter().map(|&r| self.get(r)).sum()
    }

    fn counter_mut(&mut self, reason: DropReason) -> &mut u64 {
        match reason {
            DropReason::WrongSize => &mut self.wrong_size,
            DropReason::BadMagic => &mut self.bad_magic,
            DropReason::UnknownVersion => &mut self.unknown_version,
            DropReason::UnknownKind => &mut self.unknown_kind,
            DropReason::BadIndex => &mut self.bad_index,
            DropReason::NonFinite => &mut self.non_finite,
            DropReason::Duplicate => &mut self.duplicate,
            DropReason::Stale => &mut self.stale,
            DropReason::Foreign => &mut self.foreign,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Encoding and parsing.

/// The header's fields as on the wire.
struct RawHeader {
    magic: [u8; 4],
    version: u8,
    kind: u8,
    index: u8,
    per_block: u8,
    seq: u32,
    block: u32,
    sender_time_ns: u64,
    echo_time_ns: u64,
}

fn bytes_at<const AT: usize, const N: usize>(header: &[u8; HEADER_BYTES]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&header[AT..AT + N]);
    out
}

impl RawHeader {
    fn read(header: &[u8; HEADER_BYTES]) -> RawHeader {
        RawHeader {
            magic: bytes_at::<0, 4>(header),
            version: header[4],
            kind: header[5],
            index: header[6],
            per_block: header[7],
            seq: u32::from_le_bytes(bytes_at::<8, 4>(header)),
            block: u32::from_le_bytes(bytes_at::<12, 4>(header)),
            sender_time_ns: u64::from_le_bytes(bytes_at::<16, 8>(header)),
            echo_time_ns: u64::from_le_bytes(bytes_at::<24, 8>(header)),
        }
    }

    fn write(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&self.magic);
        out[4] = self.version;
        out[5] = self.kind;
        out[6] = self.index;
        out[7] = self.per_block;
        out[8..12].copy_from_slice(&self.seq.to_le_bytes());
        out[12..16].copy_from_slice(&self.block.to_le_bytes());
        out[16..24].copy_from_slice(&self.sender_time_ns.to_le_bytes());
        out[24..32].copy_from_slice(&self.echo_time_ns.to_le_bytes());
    }
}

/// Writes an input packet. Magic, version, kind, packets per block and a zero
/// `echo_time_ns` are filled in. Nothing is checked: an index above 15 or a non-finite
/// value goes out as given (and the receiver drops it), which lets a test bench send
/// faulty packets on purpose.
pub fn encode_input(
    header: &InputHeader,
    frames: &InputFrames,
    out: &mut [u8; INPUT_PACKET_BYTES],
) {
    RawHeader {
        magic: MAGIC,
        version: VERSION,
        kind: PacketKind::Input.code(),
        index: header.index,
        per_block: PacketKind::Input.packets_per_block(),
        seq: header.seq,
        block: header.block,
        sender_time_ns: header.sender_time_ns,
        echo_time_ns: 0,
    }
    .write(&mut out[..HEADER_BYTES]);
    let values = frames
        .iter()
        .flatten()
        .flat_map(|pad| [pad.x, pad.y, pad.pressure]);
    for (word, value) in out[HEADER_BYTES..].chunks_exact_mut(4).zip(values) {
        word.copy_from_slice(&value.to_le_bytes());
    }
}

/// Writes an output packet. Magic, version, kind, index 0 and packets per block 1 are
/// filled in. Values are not checked (see [`encode_input`]).
pub fn encode_output(
    header: &OutputHeader,
    frames: &OutputFrames,
    out: &mut [u8; OUTPUT_PACKET_BYTES],
) {
    RawHeader {
        magic: MAGIC,
        version: VERSION,
        kind: PacketKind::Output.code(),
        index: 0,
        per_block: PacketKind::Output.packets_per_block(),
        seq: header.seq,
        block: header.block,
        sender_time_ns: header.sender_time_ns,
        echo_time_ns: header.echo_time_ns,
    }
    .write(&mut out[..HEADER_BYTES]);
    for (word, value) in out[HEADER_BYTES..]
        .chunks_exact_mut(4)
        .zip(frames.iter().flatten())
    {
        word.copy_from_slice(&value.to_le_bytes());
    }
}

/// Reads little-endian `f32`s from `payload` into `into`, rejecting NaN and infinity.
fn read_finite<'a>(
    payload: &[u8],
    into: impl Iterator<Item = &'a mut f32>,
) -> Result<(), WireError> {
    for (i, (word, value)) in payload.chunks_exact(4).zip(into).enumerate() {
        let v = f32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        if !v.is_finite() {
            return Err(WireError::NonFinite {
                offset: HEADER_BYTES + 4 * i,
            });
        }
        *value = v;
    }
    Ok(())
}

/// Validates a datagram and copies it out. Checks, in this order: at least a header
/// ([`WireError::WrongSize`] with no kind), magic, version, kind, the exact size for the
/// kind, index and packets per block, then every float. Never panics, never allocates;
/// the result is about 1 KiB on the stack.
pub fn parse(bytes: &[u8]) -> Result<Packet, WireError> {
    let len = bytes.len();
    let Some((header, payload)) = bytes.split_first_chunk::<HEADER_BYTES>() else {
        return Err(WireError::WrongSize { len, kind: None });
    };
    let raw = RawHeader::read(header);
    if raw.magic != MAGIC {
        return Err(WireError::BadMagic);
    }
    if raw.version != VERSION {
        return Err(WireError::UnknownVersion(raw.version));
    }
    let kind = PacketKind::from_code(raw.kind).ok_or(WireError::UnknownKind(raw.kind))?;
    if len != kind.packet_bytes() {
        return Err(WireError::WrongSize {
            len,
            kind: Some(kind),
        });
    }
    if raw.per_block != kind.packets_per_block() || raw.index >= raw.per_block {
        return Err(WireError::BadIndex {
            index: raw.index,
            per_block: raw.per_block,
        });
    }
    match kind {
        PacketKind::Input => {
            let mut frames = [[PadFrame::ZERO; PADS]; FRAMES_PER_PACKET];
            let fields = frames
                .iter_mut()
                .flatten()
                .flat_map(|pad| [&mut pad.x, &mut pad.y, &mut pad.pressure]);
            read_finite(payload, fields)?;
            Ok(Packet::Input(InputPacket {
                header: InputHeader {
                    index: raw.index,
                    seq: raw.seq,
                    block: raw.block,
                    sender_time_ns: raw.sender_time_ns,
                },
                frames,
            }))
        }
        PacketKind::Output => {
            let mut frames = [[0.0; OUTPUT_CHANNELS]; FRAMES_PER_BLOCK];
            read_finite(payload, frames.iter_mut().flatten())?;
            Ok(Packet::Output(OutputPacket {
                header: OutputHeader {
                    seq: raw.seq,
                    block: raw.block,
                    sender_time_ns: raw.sender_time_ns,
                    echo_time_ns: raw.echo_time_ns,
                },
                frames,
            }))
        }
    }
}

// ---------------------------------------------------------------------------------------
// The host side: gathering input packets into blocks.

/// A block number jump (forward or back) larger than this, in blocks, is taken as the
/// controller restarting rather than as loss or delay: the assembler starts again at the
/// new block and counts a resync instead of a billion missing packets. 1024 blocks are
/// 0.74 s, far longer than any delay a LAN adds.
pub const RESYNC_GAP_BLOCKS: u32 = 1024;

/// A complete block as the assembler hands it out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AssembledBlock {
    /// The block number.
    pub block: u32,
    /// When the first of its packets to arrive arrived (`t1`, the caller's clock).
    pub first_arrival_ns: u64,
    /// The `sender_time_ns` of its packet 0 (`t0`, the controller's clock): the answer's
    /// `echo_time_ns`.
    pub first_packet_sender_ns: u64,
    /// When the packet that completed it arrived.
    pub last_arrival_ns: u64,
    /// How many of its packets arrived out of order (after a higher index of the same
    /// block, or after a packet of the next block).
    pub reordered_packets: u32,
    /// Its 32 frames, `[frame][pad]`.
    pub frames: BlockFrames,
}

/// The assembler's counts since `new` or `reset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AssemblerCounters {
    /// Packets not used, by reason (the assembler records `duplicate`, `stale` and
    /// `bad_index`; the caller adds parse errors and foreign senders through
    /// [`BlockAssembler::record_drop`]).
    pub drops: DropCounters,
    /// Packets placed into a block (complete or not).
    pub packets_accepted: u64,
    /// Blocks handed out complete.
    pub blocks_complete: u64,
    /// Blocks given up with packets missing: pushed out of the window by a newer block,
    /// dropped at a resync, or still in flight at [`BlockAssembler::finish`]. Includes
    /// `blocks_skipped`.
    pub blocks_incomplete: u64,
    /// Incomplete blocks of which no packet arrived at all (a gap in block numbers).
    pub blocks_skipped: u64,
    /// Packets missing from the incomplete blocks (16 for each skipped block).
    pub packets_missing: u64,
    /// Packets used although they arrived out of order.
    pub reordered: u64,
    /// Block-number jumps of more than [`RESYNC_GAP_BLOCKS`].
    pub resyncs: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    /// Not a block of this stream (before the first block, after a resync, or after
    /// `finish`): leaving the window uncounted. Packets may still start it.
    Void,
    /// A block of the stream with no packet yet.
    Expected,
    /// Some packets arrived.
    Filling,
    /// Complete, or closed by `finish`: further packets are stale.
    Done,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    state: SlotState,
    /// Bit i: packet i arrived.
    present: u16,
    assembled: AssembledBlock,
}

impl Slot {
    const EMPTY: Slot = Slot {
        state: SlotState::Void,
        present: 0,
        assembled: AssembledBlock {
            block: 0,
            first_arrival_ns: 0,
            first_packet_sender_ns: 0,
            last_arrival_ns: 0,
            reordered_packets: 0,
            frames: [[PadFrame::ZERO; PADS]; FRAMES_PER_BLOCK],
        },
    };

    fn open(&mut self, block: u32, state: SlotState) {
        self.state = state;
        self.present = 0;
        self.assembled.block = block;
        self.assembled.reordered_packets = 0;
    }
}

const ALL_PRESENT: u16 = u16::MAX >> (16 - PACKETS_PER_BLOCK);

/// Gathers input packets into complete 32-frame blocks (host side, on the receive
/// thread).
///
/// The window holds the newest block seen and the one before it, so packets reordered
/// across one block boundary are still used. Rules, per pushed packet:
///
/// - index above 15 (a hand-built packet; [`parse`] never yields one): `bad_index`;
/// - for a block older than the window, or already complete: `stale`;
/// - same block and index as one already placed: `duplicate`;
/// - for a block newer than the window: the window moves; blocks leaving it unfinished
///   count as incomplete with their missing packets, and blocks jumped over entirely as
///   skipped (16 packets missing each). A jump of more than [`RESYNC_GAP_BLOCKS`] either
///   way is a resync instead (in-flight blocks incomplete, the gap not counted);
/// - after a higher index of its block, or for the older block of the window once the
///   newer has begun: used, and counted `reordered`.
///
/// Block numbers compare by serial-number arithmetic (RFC 1982), so the stream runs
/// through `u32::MAX` to 0 without a seam. The first block may be incomplete when the
/// host starts mid-block; blocks before the first packet seen are not counted.
///
/// No method allocates; the struct is about 25 KiB, built once with [`BlockAssembler::new`].
#[derive(Clone, Debug)]
pub struct BlockAssembler {
    /// Indexed by block number & 1: the window's two blocks never share a slot.
    slots: [Slot; 2],
    newest: u32,
    started: bool,
    counters: AssemblerCounters,
}

impl Default for BlockAssembler {
    fn default() -> Self {
        BlockAssembler::new()
    }
}

impl BlockAssembler {
    /// An empty assembler.
    pub fn new() -> BlockAssembler {
        BlockAssembler {
            slots: [Slot::EMPTY; 2],
            newest: 0,
            started: false,
            counters: AssemblerCounters::default(),
        }
    }

    /// Forgets every block and zeroes the counters, as after `new`.
    pub fn reset(&mut self) {
        for slot in &mut self.slots {
            slot.state = SlotState::Void;
            slot.present = 0;
        }
        self.newest = 0;
        self.started = false;
        self.counters = AssemblerCounters::default();
    }

    /// Places one packet, received at `arrival_ns`. Returns the block it completes,
    /// valid until the next call.
    pub fn push(&mut self, packet: &InputPacket, arrival_ns: u64) -> Option<&AssembledBlock> {
        let header = &packet.header;
        let index = usize::from(header.index);
        if index >= PACKETS_PER_BLOCK {
            self.counters.drops.record(DropReason::BadIndex);
            return None;
        }
        let block = header.block;
        if !self.started {
            self.restart_at(block);
        }
        // Serial-number distance from the newest block, -2^31..2^31.
        let distance = block.wrapping_sub(self.newest) as i32;
        if distance.unsigned_abs() > RESYNC_GAP_BLOCKS {
            self.retire_both();
            self.restart_at(block);
            self.counters.resyncs += 1;
        } else if distance > 0 {
            self.advance_to(block, distance.unsigned_abs());
        } else if distance < -1 {
            self.counters.drops.record(DropReason::Stale);
            return None;
        }

        let older = block != self.newest;
        let slot = &mut self.slots[(block & 1) as usize];
        match slot.state {
            SlotState::Done => {
                self.counters.drops.record(DropReason::Stale);
                return None;
            }
            SlotState::Void | SlotState::Expected => {
                slot.open(block, SlotState::Filling);
                slot.assembled.first_arrival_ns = arrival_ns;
            }
            SlotState::Filling => {}
        }
        let bit = 1u16 << index;
        if slot.present & bit != 0 {
            self.counters.drops.record(DropReason::Duplicate);
            return None;
        }
        let after_higher_index = u32::from(slot.present) >> (index + 1) != 0;
        if older || after_higher_index {
            slot.assembled.reordered_packets += 1;
            self.counters.reordered += 1;
        }
        let first_frame = index * FRAMES_PER_PACKET;
        slot.assembled.frames[first_frame..first_frame + FRAMES_PER_PACKET]
            .copy_from_slice(&packet.frames);
        if index == 0 {
            slot.assembled.first_packet_sender_ns = header.sender_time_ns;
        }
        slot.present |= bit;
        self.counters.packets_accepted += 1;
        if slot.present == ALL_PRESENT {
            slot.state = SlotState::Done;
            slot.assembled.last_arrival_ns = arrival_ns;
            self.counters.blocks_complete += 1;
            return Some(&slot.assembled);
        }
        None
    }

    /// Counts a datagram the caller dropped before pushing (a [`WireError::kind`], or
    /// [`DropReason::Foreign`]), so one set of counters covers the whole receive path.
    pub fn record_drop(&mut self, reason: DropReason) {
        self.counters.drops.record(reason);
    }

    /// Ends a run: blocks still in flight count as incomplete (a block of the window
    /// with no packet yet as skipped). Later packets for the window's blocks are stale.
    /// Calling it twice counts nothing more.
    pub fn finish(&mut self) {
        self.retire_both();
        for slot in &mut self.slots {
            slot.state = SlotState::Done;
        }
    }

    /// The counts so far.
    pub fn counters(&self) -> AssemblerCounters {
        self.counters
    }

    /// The newest block number seen since `new` or `reset`, if any packet was pushed.
    pub fn newest_block(&self) -> Option<u32> {
        self.started.then_some(self.newest)
    }

    fn restart_at(&mut self, block: u32) {
        let before = block.wrapping_sub(1);
        self.slots[(before & 1) as usize].open(before, SlotState::Void);
        self.slots[(block & 1) as usize].open(block, SlotState::Expected);
        self.newest = block;
        self.started = true;
    }

    /// Moves the window forward by `distance` (1..=RESYNC_GAP_BLOCKS) blocks to `block`.
    fn advance_to(&mut self, block: u32, distance: u32) {
        if distance == 1 {
            // The slot of `block` holds the window's older block, which leaves it.
            let slot = (block & 1) as usize;
            self.retire(slot);
            self.slots[slot].open(block, SlotState::Expected);
        } else {
            self.retire_both();
            let skipped = u64::from(distance - 2);
            self.counters.blocks_incomplete += skipped;
            self.counters.blocks_skipped += skipped;
            self.counters.packets_missing += skipped * PACKETS_PER_BLOCK as u64;
            let before = block.wrapping_sub(1);
            self.slots[(before & 1) as usize].open(before, SlotState::Expected);
            self.slots[(block & 1) as usize].open(block, SlotState::Expected);
        }
        self.newest = block;
    }

    fn retire_both(&mut self) {
        self.retire(0);
        self.retire(1);
    }

    /// Counts the block in `slot` if it leaves the window unfinished.
    fn retire(&mut self, slot: usize) {
        let slot = &mut self.slots[slot];
        let missing = match slot.state {
            SlotState::Void | SlotState::Done => return,
            SlotState::Expected => {
                self.counters.blocks_skipped += 1;
                PACKETS_PER_BLOCK as u64
            }
            SlotState::Filling => u64::from(PACKETS_PER_BLOCK as u32 - slot.present.count_ones()),
        };
        self.counters.blocks_incomplete += 1;
        self.counters.packets_missing += missing;
        slot.state = SlotState::Void;
    }
}

// ---------------------------------------------------------------------------------------
// The controller side: pairing answers with blocks.

/// Blocks whose send time the [`AnswerMatcher`] remembers: 64 blocks, 46 ms, far beyond
/// the deadline.
pub const ANSWER_RING_BLOCKS: usize = 64;

/// What an answer from the host turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The first answer to a block, within [`DEADLINE_NS`] of its first packet's send.
    OnTime {
        /// The block answered.
        block: u32,
        /// `tf − t0`: the answer's arrival minus the send time of the block's packet 0.
        end_to_end_ns: u64,
    },
    /// The first answer to a block, later than [`DEADLINE_NS`].
    Late {
        /// The block answered.
        block: u32,
        /// `tf − t0`, above [`DEADLINE_NS`].
        end_to_end_ns: u64,
    },
    /// A second answer to a block already answered.
    Duplicate {
        /// The block answered again.
        block: u32,
    },
    /// An answer to a block never sent, or sent so long ago that it left the ring.
    Unknown {
        /// The block number in the answer.
        block: u32,
    },
}

/// The matcher's counts since `new` or `reset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatcherCounters {
    /// Blocks sent ([`AnswerMatcher::sent`] calls).
    pub sent: u64,
    /// Blocks answered (first answers), on time or late.
    pub answered: u64,
    /// Of `answered`, those later than [`DEADLINE_NS`].
    pub late: u64,
    /// Second and later answers to one block.
    pub duplicates: u64,
    /// Answers to blocks not in the ring.
    pub unknown: u64,
    /// Blocks pushed out of the ring by newer sends without an answer: lost for good.
    pub evicted_unanswered: u64,
    /// First answers whose `echo_time_ns` is not the send time recorded for the block
    /// (the host echoed the wrong packet's time).
    pub echo_mismatches: u64,
    /// First answers that arrived before the recorded send time (a clock error; their
    /// `end_to_end_ns` is reported as 0).
    pub arrived_before_send: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EntryState {
    Empty,
    Waiting,
    Answered,
}

#[derive(Clone, Copy, Debug)]
struct SentBlock {
    state: EntryState,
    block: u32,
    sent_ns: u64,
}

/// Pairs the host's answers with the blocks the controller sent (controller side, on the
/// thread that owns the socket). A fixed ring of the last [`ANSWER_RING_BLOCKS`] blocks,
/// indexed by block number, so it runs through the `u32` wrap-around without a seam.
#[derive(Clone, Debug)]
pub struct AnswerMatcher {
    ring: [SentBlock; ANSWER_RING_BLOCKS],
    counters: MatcherCounters,
}

impl Default for AnswerMatcher {
    fn default() -> Self {
        AnswerMatcher::new()
    }
}

impl AnswerMatcher {
    const EMPTY: SentBlock = SentBlock {
        state: EntryState::Empty,
        block: 0,
        sent_ns: 0,
    };

    /// An empty matcher.
    pub fn new() -> AnswerMatcher {
        AnswerMatcher {
            ring: [Self::EMPTY; ANSWER_RING_BLOCKS],
            counters: MatcherCounters::default(),
        }
    }

    /// Forgets every block and zeroes the counters.
    pub fn reset(&mut self) {
        *self = AnswerMatcher::new();
    }

    /// Records that `block`'s packet 0 was handed to the kernel at
    /// `first_packet_sent_ns` (`t0`). A block still unanswered in the ring place it
    /// takes counts as `evicted_unanswered`; sending the same block number again while
    /// it waits only replaces its send time.
    pub fn sent(&mut self, block: u32, first_packet_sent_ns: u64) {
        let entry = &mut self.ring[block as usize % ANSWER_RING_BLOCKS];
        if entry.state == EntryState::Waiting && entry.block != block {
            self.counters.evicted_unanswered += 1;
        }
        *entry = SentBlock {
            state: EntryState::Waiting,
            block,
            sent_ns: first_packet_sent_ns,
        };
        self.counters.sent += 1;
    }

    /// Matches an answer that arrived at `arrival_ns` (`tf`, the clock `sent` used).
    pub fn answered(&mut self, packet: &OutputPacket, arrival_ns: u64) -> Answer {
        let block = packet.header.block;
        let entry = &mut self.ring[block as usize % ANSWER_RING_BLOCKS];
        if entry.block != block || entry.state == EntryState::Empty {
            self.counters.unknown += 1;
            return Answer::Unknown { block };
        }
        if entry.state == EntryState::Answered {
            self.counters.duplicates += 1;
            return Answer::Duplicate { block };
        }
        entry.state = EntryState::Answered;
        self.counters.answered += 1;
        if packet.header.echo_time_ns != entry.sent_ns {
            self.counters.echo_mismatches += 1;
        }
        if arrival_ns < entry.sent_ns {
            self.counters.arrived_before_send += 1;
        }
        let end_to_end_ns = arrival_ns.saturating_sub(entry.sent_ns);
        if end_to_end_ns > DEADLINE_NS {
            self.counters.late += 1;
            Answer::Late {
                block,
                end_to_end_ns,
            }
        } else {
            Answer::OnTime {
                block,
                end_to_end_ns,
            }
        }
    }

    /// Blocks whose deadline has passed at `now_ns` without an answer: those pushed out
    /// of the ring unanswered, plus those in it sent more than [`DEADLINE_NS`] before
    /// `now_ns`. A late answer arriving afterwards moves its block to `late`, so the
    /// number can fall; once a block leaves the ring unanswered it stays here.
    pub fn unanswered_so_far(&self, now_ns: u64) -> u64 {
        let overdue_in_ring = self
            .ring
            .iter()
            .filter(|e| {
                e.state == EntryState::Waiting && now_ns.saturating_sub(e.sent_ns) > DEADLINE_NS
            })
            .count() as u64;
        self.counters.evicted_unanswered + overdue_in_ring
    }

    /// The counts so far.
    pub fn counters(&self) -> MatcherCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests {
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
                            assert!(p.frames.iter().flatten().all(|f| f.x.is_finite()
                                && f.y.is_finite()
                                && f.pressure.is_finite()));
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
        let names: std::collections::HashSet<_> =
            DropReason::ALL.iter().map(|r| r.name()).collect();
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
        b[HEADER_BYTES + 4 * 150..HEADER_BYTES + 4 * 151]
            .copy_from_slice(&f32::INFINITY.to_le_bytes());
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
            m.answered(&answer(7 + 64, 0), 0),
            Answer::Unknown { block: 71 },
            "same ring place, other block"
        );
        let c = m.counters();
        assert_eq!(
            (c.sent, c.answered, c.late, c.duplicates, c.unknown),
            (2, 2, 1, 1, 2)
        );
        assert_eq!((c.echo_mismatches, c.evicted_unanswered), (0, 0));
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
        for block in 64..74u32 {
            m.sent(block, u64::from(block) * BLOCK_PERIOD_NS);
        }
        let c = m.counters();
        assert_eq!(c.evicted_unanswered, 9);
        assert_eq!(m.answered(&answer(5, 0), 0), Answer::Unknown { block: 5 });
        assert_eq!(m.unanswered_so_far(73 * BLOCK_PERIOD_NS), 9 + 8);
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
}

/// The hot path, run under `assert_no_alloc`: every allocation or deallocation inside
/// the guard is counted, and the test asserts the count is zero. Only in debug builds,
/// where the guard is armed; a control test proves it is.
#[cfg(all(test, debug_assertions))]
mod no_alloc {
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
}
