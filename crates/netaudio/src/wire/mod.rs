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
    /// A valid packet from a sender that was never confirmed as the peer: a host with no
    /// configured peer follows the newest sender until one completes a whole block, and
    /// the packets of a sender it stopped following are counted here (by the caller).
    Unconfirmed,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 10] = [
        DropReason::WrongSize,
        DropReason::BadMagic,
        DropReason::UnknownVersion,
        DropReason::UnknownKind,
        DropReason::BadIndex,
        DropReason::NonFinite,
        DropReason::Duplicate,
        DropReason::Stale,
        DropReason::Foreign,
        DropReason::Unconfirmed,
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
            DropReason::Unconfirmed => "unconfirmed",
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
    /// [`DropReason::Unconfirmed`].
    pub unconfirmed: u64,
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
            DropReason::Unconfirmed => self.unconfirmed,
        }
    }

    /// Every drop, whatever the reason.
    pub fn total(&self) -> u64 {
        DropReason::ALL.iter().map(|&r| self.get(r)).sum()
    }

    /// The drops of a malformed datagram (the [`WireError`] reasons), together.
    pub fn malformed(&self) -> u64 {
        self.wrong_size
            + self.bad_magic
            + self.unknown_version
            + self.unknown_kind
            + self.bad_index
            + self.non_finite
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
            DropReason::Unconfirmed => &mut self.unconfirmed,
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

mod assembler;
mod matcher;

pub use assembler::*;
pub use matcher::*;

#[cfg(test)]
mod tests;

/// The hot path, run under `assert_no_alloc`: every allocation or deallocation inside
/// the guard is counted, and the test asserts the count is zero. Only in debug builds,
/// where the guard is armed; a control test proves it is.
#[cfg(all(test, debug_assertions))]
mod no_alloc;
