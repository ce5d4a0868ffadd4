//! The kernel events audiolat asks for, decoded from their raw bytes with the formats
//! the kernel publishes (`events/SYSTEM/NAME/format`), read by `tracepoint_decode`.

use std::collections::HashMap;

use tracepoint_decode::{PerfByteReader, PerfEventFormat, PerfFieldFormat};

/// A task's name as the kernel keeps it (`TASK_COMM_LEN`, 16 bytes, NUL padded).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Comm(pub [u8; 16]);

impl Comm {
    /// The name, from its bytes up to the first NUL.
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.0[..end])
    }

    /// A name from a string, cut to 15 bytes as the kernel would.
    pub fn from_name(name: &str) -> Comm {
        let mut c = [0u8; 16];
        let n = name.len().min(15);
        c[..n].copy_from_slice(&name.as_bytes()[..n]);
        Comm(c)
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// A softirq vector's name, as `softirq_entry`'s format prints it.
pub fn softirq_name(vec: u32) -> &'static str {
    match vec {
        0 => "HI",
        1 => "TIMER",
        2 => "NET_TX",
        3 => "NET_RX",
        4 => "BLOCK",
        5 => "IRQ_POLL",
        6 => "TASKLET",
        7 => "SCHED",
        8 => "HRTIMER",
        9 => "RCU",
        _ => "unknown",
    }
}

/// `common_flags` bit: the event was written in hard interrupt context.
pub const FLAG_HARDIRQ: u8 = 0x08;
/// `common_flags` bit: the event was written in softirq context.
pub const FLAG_SOFTIRQ: u8 = 0x10;

/// `power:cpu_idle`'s state when the CPU leaves idle (`PWR_EVENT_EXIT`, -1 as u32).
pub const IDLE_EXIT: u32 = u32::MAX;

/// What happened, decoded. Only what the attribution reads is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `sched:sched_switch`.
    Switch {
        /// The task that stopped running.
        prev_pid: i32,
        /// Its name.
        prev_comm: Comm,
        /// Its kernel priority.
        prev_prio: i32,
        /// Its state (0: still runnable, preempted; else why it sleeps).
        prev_state: i64,
        /// The task that runs next.
        next_pid: i32,
        /// Its name.
        next_comm: Comm,
        /// Its kernel priority.
        next_prio: i32,
    },
    /// `sched:sched_waking` (the wake-up asked) or `sched_wakeup` (done).
    Waking {
        /// The task woken.
        pid: i32,
        /// Its name.
        comm: Comm,
        /// Its kernel priority.
        prio: i32,
        /// The CPU it will run on.
        target_cpu: i32,
        /// `sched_wakeup` rather than `sched_waking`.
        done: bool,
    },
    /// `irq:irq_handler_entry`.
    IrqEntry {
        /// The IRQ's number.
        irq: i32,
        /// Index of its handler's name in the session's name table.
        name: u32,
    },
    /// `irq:irq_handler_exit`.
    IrqExit {
        /// The IRQ's number.
        irq: i32,
    },
    /// `irq:softirq_entry`.
    SoftirqEntry {
        /// The vector.
        vec: u32,
    },
    /// `irq:softirq_exit`.
    SoftirqExit {
        /// The vector.
        vec: u32,
    },
    /// `irq:softirq_raise`.
    SoftirqRaise {
        /// The vector.
        vec: u32,
    },
    /// An `irq_vectors:*_entry` (local timer, IPIs): `name` indexes the name table.
    VectorEntry {
        /// Index of the vector's name (`local_timer`, `reschedule`, ...).
        name: u32,
    },
    /// An `irq_vectors:*_exit`.
    VectorExit {
        /// Index of the vector's name.
        name: u32,
    },
    /// `power:cpu_idle`: `state` [`IDLE_EXIT`] leaves idle.
    Idle {
        /// The idle state entered, or [`IDLE_EXIT`].
        state: u32,
    },
    /// `exceptions:page_fault_user`.
    PageFault,
    /// `timer:hrtimer_expire_entry`.
    HrtimerExpire,
    /// `sched:sched_stat_runtime`: a task's clock advanced by `runtime_ns` (the
    /// scheduler's task clock, which does not count time the host stole).
    Runtime {
        /// The task.
        pid: i32,
        /// Its run time since the last such event, ns.
        runtime_ns: u64,
    },
    /// `snd_pcm:xrun`.
    Xrun,
    /// One of `osnoise:*`.
    Osnoise,
    /// Not an event of the kernel's: the ring buffer lost events between this
    /// point (the last event read before the loss) and `until_ns`.
    Lost {
        /// How many, when the kernel said.
        count: Option<u64>,
        /// The first time known again (the next page's).
        until_ns: u64,
    },
}

/// An event: when, on which CPU's buffer, in what context, and what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Trace clock (CLOCK_MONOTONIC in audiolat's instance), ns.
    pub ts_ns: u64,
    /// The task current when it was written (`common_pid`).
    pub pid: i32,
    /// `common_flags` ([`FLAG_HARDIRQ`], [`FLAG_SOFTIRQ`], ...).
    pub flags: u8,
    /// What happened.
    pub kind: Kind,
}

/// Which decoder an event id uses.
#[derive(Debug, Clone, Copy)]
enum Which {
    Switch,
    Waking { done: bool },
    IrqEntry,
    IrqExit,
    SoftirqEntry,
    SoftirqExit,
    SoftirqRaise,
    VectorEntry(u32),
    VectorExit(u32),
    Idle,
    PageFault,
    Hrtimer,
    Runtime,
    Xrun,
    Osnoise,
}

/// The formats of the events asked for, by id, with the names IRQ handlers and
/// vectors go by.
#[derive(Debug, Default)]
pub struct Decoder {
    by_id: HashMap<u32, (Which, PerfEventFormat, Slots)>,
    names: Vec<String>,
    name_index: HashMap<String, u32>,
}

/// The fields audiolat reads, by name; an event's [`Slots`] say where each is in its
/// format, found once when the format is read (not per event: a busy CPU writes
/// hundreds of thousands a second).
const FIELDS: [&str; 16] = [
    "prev_pid",
    "prev_comm",
    "prev_prio",
    "prev_state",
    "next_pid",
    "next_comm",
    "next_prio",
    "pid",
    "comm",
    "prio",
    "target_cpu",
    "irq",
    "name",
    "vec",
    "state",
    "runtime",
];

/// Where each of [`FIELDS`] is in an event's format (`None`: it has no such field).
type Slots = [Option<u16>; FIELDS.len()];

/// The index of `name` in [`FIELDS`] (a constant: checked when compiled).
const fn slot(name: &str) -> usize {
    let mut i = 0;
    while i < FIELDS.len() {
        if const_eq(FIELDS[i].as_bytes(), name.as_bytes()) {
            return i;
        }
        i += 1;
    }
    panic!("a field audiolat reads is listed in FIELDS");
}

const fn const_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The event names audiolat knows how to decode: (system, name) to what it is.
pub fn known(system: &str, name: &str) -> bool {
    which(system, name, &mut |_| 0).is_some()
}

/// What `system:name` is, with `intern` giving a vector's name its index.
fn which(system: &str, name: &str, intern: &mut dyn FnMut(&str) -> u32) -> Option<Which> {
    Some(match (system, name) {
        ("sched", "sched_switch") => Which::Switch,
        ("sched", "sched_waking") => Which::Waking { done: false },
        ("sched", "sched_wakeup") => Which::Waking { done: true },
        ("sched", "sched_stat_runtime") => Which::Runtime,
        ("irq", "irq_handler_entry") => Which::IrqEntry,
        ("irq", "irq_handler_exit") => Which::IrqExit,
        ("irq", "softirq_entry") => Which::SoftirqEntry,
        ("irq", "softirq_exit") => Which::SoftirqExit,
        ("irq", "softirq_raise") => Which::SoftirqRaise,
        ("irq_vectors", n) if n.ends_with("_entry") && !n.starts_with("vector_") => {
            Which::VectorEntry(intern(n.trim_end_matches("_entry")))
        }
        ("irq_vectors", n) if n.ends_with("_exit") && !n.starts_with("vector_") => {
            Which::VectorExit(intern(n.trim_end_matches("_exit")))
        }
        ("power", "cpu_idle") => Which::Idle,
        ("exceptions", "page_fault_user") => Which::PageFault,
        ("timer", "hrtimer_expire_entry") => Which::Hrtimer,
        ("snd_pcm", "xrun") => Which::Xrun,
        ("osnoise", _) => Which::Osnoise,
        _ => return None,
    })
}

impl Decoder {
    /// Adds an event from the text of its `format` file; `false` when audiolat does
    /// not know the event or the format does not parse.
    pub fn add(&mut self, system: &str, name: &str, format: &str) -> bool {
        let Some(parsed) =
            PerfEventFormat::parse(cfg!(target_pointer_width = "64"), system, format)
        else {
            return false;
        };
        let Some(w) = which(system, name, &mut |n| self.intern(n)) else {
            return false;
        };
        let mut slots: Slots = [None; FIELDS.len()];
        for (slot, name) in slots.iter_mut().zip(FIELDS) {
            *slot = parsed
                .fields()
                .iter()
                .position(|f| f.name() == name)
                .map(|i| i as u16);
        }
        self.by_id.insert(parsed.id(), (w, parsed, slots));
        true
    }

    /// A name from the table (an IRQ handler's, a vector's).
    pub fn name(&self, index: u32) -> &str {
        self.names.get(index as usize).map_or("?", String::as_str)
    }

    /// Decodes one record's payload; `None` for an event not asked for or one whose
    /// bytes do not match its format.
    pub fn decode(&mut self, ts_ns: u64, payload: &[u8]) -> Option<Event> {
        let id = u32::from(u16::from_ne_bytes(payload.get(0..2)?.try_into().ok()?));
        let pid = i32::from_ne_bytes(payload.get(4..8)?.try_into().ok()?);
        let flags = *payload.get(2)?;
        let (w, fmt, slots) = self.by_id.get(&id)?;
        let w = *w;
        let f = Fields { fmt, slots };
        let kind = match w {
            Which::Switch => Kind::Switch {
                prev_pid: f.int(payload, const { slot("prev_pid") })? as i32,
                prev_comm: f.comm(payload, const { slot("prev_comm") })?,
                prev_prio: f.int(payload, const { slot("prev_prio") })? as i32,
                prev_state: f.int(payload, const { slot("prev_state") })?,
                next_pid: f.int(payload, const { slot("next_pid") })? as i32,
                next_comm: f.comm(payload, const { slot("next_comm") })?,
                next_prio: f.int(payload, const { slot("next_prio") })? as i32,
            },
            Which::Waking { done } => Kind::Waking {
                pid: f.int(payload, const { slot("pid") })? as i32,
                comm: f.comm(payload, const { slot("comm") })?,
                prio: f
                    .int(payload, const { slot("prio") })
                    .unwrap_or(i64::from(crate::state::UNKNOWN_PRIO)) as i32,
                target_cpu: f.int(payload, const { slot("target_cpu") }).unwrap_or(-1) as i32,
                done,
            },
            Which::IrqEntry => {
                let irq = f.int(payload, const { slot("irq") })? as i32;
                let name = f
                    .string(payload, const { slot("name") })
                    .unwrap_or_default();
                Kind::IrqEntry {
                    irq,
                    name: self.intern(&name),
                }
            }
            Which::IrqExit => Kind::IrqExit {
                irq: f.int(payload, const { slot("irq") })? as i32,
            },
            Which::SoftirqEntry => Kind::SoftirqEntry {
                vec: f.int(payload, const { slot("vec") })? as u32,
            },
            Which::SoftirqExit => Kind::SoftirqExit {
                vec: f.int(payload, const { slot("vec") })? as u32,
            },
            Which::SoftirqRaise => Kind::SoftirqRaise {
                vec: f.int(payload, const { slot("vec") })? as u32,
            },
            Which::VectorEntry(name) => Kind::VectorEntry { name },
            Which::VectorExit(name) => Kind::VectorExit { name },
            Which::Idle => Kind::Idle {
                state: f.int(payload, const { slot("state") })? as u32,
            },
            Which::PageFault => Kind::PageFault,
            Which::Hrtimer => Kind::HrtimerExpire,
            Which::Runtime => Kind::Runtime {
                pid: f.int(payload, const { slot("pid") })? as i32,
                runtime_ns: f.int(payload, const { slot("runtime") })? as u64,
            },
            Which::Xrun => Kind::Xrun,
            Which::Osnoise => Kind::Osnoise,
        };
        Some(Event {
            ts_ns,
            pid,
            flags,
            kind,
        })
    }

    fn intern(&mut self, n: &str) -> u32 {
        if let Some(&i) = self.name_index.get(n) {
            return i;
        }
        self.names.push(n.to_string());
        let i = (self.names.len() - 1) as u32;
        self.name_index.insert(n.to_string(), i);
        i
    }
}

/// An event's format with its [`Slots`].
struct Fields<'f> {
    fmt: &'f PerfEventFormat,
    slots: &'f Slots,
}

impl Fields<'_> {
    fn field(&self, slot: usize) -> Option<&PerfFieldFormat> {
        self.fmt.fields().get(usize::from(self.slots[slot]?))
    }

    /// An integer field of 1, 2, 4 or 8 bytes, sign-extended as its format says.
    fn int(&self, payload: &[u8], slot: usize) -> Option<i64> {
        let f = self.field(slot)?;
        let bytes = f.get_field_bytes(payload, PerfByteReader::KEEP_ENDIAN)?;
        let signed = f.signed().unwrap_or(false);
        Some(match (bytes.len(), signed) {
            (1, false) => i64::from(bytes[0]),
            (1, true) => i64::from(bytes[0] as i8),
            (2, false) => i64::from(u16::from_ne_bytes(bytes.try_into().ok()?)),
            (2, true) => i64::from(i16::from_ne_bytes(bytes.try_into().ok()?)),
            (4, false) => i64::from(u32::from_ne_bytes(bytes.try_into().ok()?)),
            (4, true) => i64::from(i32::from_ne_bytes(bytes.try_into().ok()?)),
            (8, _) => i64::from_ne_bytes(bytes.try_into().ok()?),
            _ => return None,
        })
    }

    fn comm(&self, payload: &[u8], slot: usize) -> Option<Comm> {
        let bytes = self
            .field(slot)?
            .get_field_bytes(payload, PerfByteReader::KEEP_ENDIAN)?;
        let mut c = [0u8; 16];
        let n = bytes.len().min(16);
        c[..n].copy_from_slice(&bytes[..n]);
        Some(Comm(c))
    }

    fn string(&self, payload: &[u8], slot: usize) -> Option<String> {
        let bytes = self
            .field(slot)?
            .get_field_bytes(payload, PerfByteReader::KEEP_ENDIAN)?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n\
print fmt: \"prev_comm=%s\", REC->prev_comm\n";

    const IRQ: &str = "name: irq_handler_entry\nID: 90\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\
\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n\n\
print fmt: \"irq=%d name=%s\", REC->irq, __get_str(name)\n";

    #[test]
    fn a_switch_and_an_irq_decode_by_their_published_formats() {
        let mut d = Decoder::default();
        assert!(d.add("sched", "sched_switch", SWITCH));
        assert!(d.add("irq", "irq_handler_entry", IRQ));
        assert!(
            !d.add("sched", "sched_process_exec", SWITCH),
            "not an event audiolat reads"
        );

        let mut p = vec![0u8; 64];
        p[0..2].copy_from_slice(&372u16.to_ne_bytes());
        p[4..8].copy_from_slice(&77i32.to_ne_bytes());
        p[8..13].copy_from_slice(b"hog/1");
        p[24..28].copy_from_slice(&77i32.to_ne_bytes());
        p[28..32].copy_from_slice(&9i32.to_ne_bytes());
        p[32..40].copy_from_slice(&2i64.to_ne_bytes());
        p[40..45].copy_from_slice(b"probe");
        p[56..60].copy_from_slice(&88i32.to_ne_bytes());
        p[60..64].copy_from_slice(&19i32.to_ne_bytes());
        let e = d.decode(123, &p).unwrap();
        assert_eq!(e.ts_ns, 123);
        assert_eq!(e.pid, 77);
        let Kind::Switch {
            prev_comm,
            prev_pid,
            prev_state,
            next_pid,
            next_prio,
            ..
        } = e.kind
        else {
            panic!("{e:?}")
        };
        assert_eq!(prev_comm.as_str(), "hog/1");
        assert_eq!((prev_pid, prev_state, next_pid, next_prio), (77, 2, 88, 19));

        // A data_loc string: offset 16, length 8 ("virtio0\0").
        let mut p = vec![0u8; 24];
        p[0..2].copy_from_slice(&90u16.to_ne_bytes());
        p[2] = FLAG_HARDIRQ;
        p[8..12].copy_from_slice(&25i32.to_ne_bytes());
        p[12..16].copy_from_slice(&((8u32 << 16) | 16).to_ne_bytes());
        p[16..24].copy_from_slice(b"virtio0\0");
        let e = d.decode(5, &p).unwrap();
        assert_eq!(e.flags, FLAG_HARDIRQ);
        let Kind::IrqEntry { irq, name } = e.kind else {
            panic!("{e:?}")
        };
        assert_eq!((irq, d.name(name)), (25, "virtio0"));

        // An unknown id, a short payload: nothing, no panic.
        p[0..2].copy_from_slice(&7u16.to_ne_bytes());
        assert_eq!(d.decode(5, &p), None);
        assert_eq!(d.decode(5, &[1]), None);
    }
}
