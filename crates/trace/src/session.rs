//! A trace session: the instance, the reader thread with its bounded windows, and the
//! misses handed over to it.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::attribute::{explain, CauseKind, CpuWindow, Explained, Miss, Names};
use crate::event::{Comm, Decoder, Event, Kind};
use crate::page::{Page, PageLayout};
use crate::tracefs::{Instance, Tracefs, Unavailable};

/// How a session traces.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionConfig {
    /// The CPUs to trace (those the audio threads run on); `None`: every online CPU.
    pub cpus: Option<Vec<usize>>,
    /// Each CPU's ring buffer, KiB: what the kernel holds while the reader is held
    /// off (a busy network-audio run writes ~10 MB/s on a CPU).
    pub buffer_kb: u32,
    /// How far back each CPU's window reaches behind the newest event, ns: a miss
    /// later than this is explained only from where its window begins.
    pub window_ns: u64,
    /// Most events a CPU's window keeps (bounds memory on a busy CPU).
    pub max_events_per_cpu: usize,
    /// Most explained misses kept in detail (the latest ones go, keeping the worst);
    /// every miss counts in the culprits.
    pub max_misses_kept: usize,
    /// Misses a sender's ring holds until the reader takes them.
    pub ring: usize,
    /// How often the reader reads the buffers.
    pub poll: Duration,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            cpus: None,
            buffer_kb: default_buffer_kb(),
            window_ns: 500_000_000,
            max_events_per_cpu: 300_000,
            max_misses_kept: 256,
            ring: 4096,
            poll: Duration::from_millis(10),
        }
    }
}

/// A miss is explained once the trace has run this far past its end (events are
/// written when they happen; this leaves the writers time to commit them).
const SETTLE_NS: u64 = 3_000_000;

/// Most pages read from one CPU's pipe in one pass of the reader (1 MiB of 4 KiB pages).
const PAGES_PER_PASS: usize = 256;

/// A miss waits for every CPU's events to reach its end (a busy CPU's buffer is read a
/// page behind; an idle one writes nothing), at most this long after its end.
const WAIT_FOR_CPUS_NS: u64 = 200_000_000;

/// Hands misses to the session. [`MissSender::send`] is real-time safe: one wait-free
/// ring push, no allocation, lock or system call.
pub struct MissSender {
    tx: rtrb::Producer<Miss>,
    dropped: Arc<AtomicU64>,
}

impl MissSender {
    /// Hands one miss over; `false` (and counted) when the ring is full.
    #[inline]
    pub fn send(&mut self, miss: Miss) -> bool {
        if self.tx.push(miss).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }
}

impl std::fmt::Debug for MissSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MissSender").finish_non_exhaustive()
    }
}

/// A culprit over a run: a cause by kind and name, its time over every miss, and in
/// how many misses it took time.
#[derive(Debug, Clone, PartialEq)]
pub struct Culprit {
    /// What it is.
    pub kind: CauseKind,
    /// Its name.
    pub name: String,
    /// Its time over every miss explained, ns.
    pub ns_total: u64,
    /// The misses it took time in.
    pub misses: u64,
}

/// What a session found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Why {
    /// The misses kept in detail (the worst [`SessionConfig::max_misses_kept`]), in
    /// time order.
    pub misses: Vec<Explained>,
    /// Every miss explained (the culprits count them all).
    pub misses_explained: u64,
    /// Misses not explained: handed over when the ring was full.
    pub misses_dropped: u64,
    /// The culprits over every miss, the largest total first.
    pub culprits: Vec<Culprit>,
    /// Events the kernel's ring buffers lost (overrun or dropped), over the CPUs traced.
    pub events_lost: u64,
    /// Events read and decoded.
    pub events_read: u64,
    /// Pages that did not parse.
    pub bad_pages: u64,
    /// Tracepoints asked for that this kernel lacks (`system:name`).
    pub missing: Vec<String>,
    /// The CPUs traced.
    pub cpus: Vec<usize>,
    /// The threads that matter, by role: (role, TID).
    pub threads: Vec<(String, i32)>,
    /// tracefs was mounted for the run (and unmounted after).
    pub mounted_tracefs: bool,
}

/// What the reader and the session share.
#[derive(Default)]
struct Shared {
    receivers: Mutex<Vec<rtrb::Consumer<Miss>>>,
    top: Mutex<Option<(CauseKind, String, u64, u64)>>,
    threads: Mutex<Vec<(String, i32)>>,
}

/// Reads the largest culprit so far of a [`Session`] (see [`Session::top`]). Not
/// real-time safe (it takes a lock the reader thread holds briefly).
#[derive(Clone)]
pub struct TopCulprit(Arc<Shared>);

impl TopCulprit {
    /// Kind, name, time (ns) and misses of the largest culprit so far.
    pub fn get(&self) -> Option<(CauseKind, String, u64, u64)> {
        self.0.top.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A running trace. Dropping it without [`Session::finish`] stops and removes the
/// instance all the same.
pub struct Session {
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    dropped: Arc<AtomicU64>,
    reader: Option<std::thread::JoinHandle<Reader>>,
    instance: Arc<Instance>,
    config: SessionConfig,
    cpus: Vec<usize>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("cpus", &self.cpus)
            .field("instance", &self.instance.dir())
            .finish_non_exhaustive()
    }
}

/// Each CPU's buffer: 64 MiB over the machine's CPUs and at most 1/512 of its memory,
/// 1 to 16 MiB each (a small machine, or a guest, is not made to find tens of MiB of
/// kernel memory at once).
fn default_buffer_kb() -> u32 {
    let cpus = online_cpus().len().max(1) as u64;
    let memory_kb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(4 << 20);
    (65_536 / cpus)
        .min(memory_kb / 512 / cpus)
        .clamp(1024, 16_384) as u32
}

/// Puts the calling thread at SCHED_FIFO 1, the lowest real-time priority: above an
/// ordinary load (a build, `stress-ng`) that would otherwise hold the reader off until
/// the kernel's buffers overflow, below every audio thread. Left as it is if refused.
fn lowest_real_time_priority() {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: a valid sched_param; pid 0 is the calling thread.
    let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
}

/// Moves the calling thread to `cpus` (nothing when empty, or refused).
fn pin_to(cpus: &[usize]) {
    if cpus.is_empty() {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET stays inside it (checked).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        let _ = libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
    }
}

fn online_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let mut ends = part.split('-').map(|n| n.trim().parse::<usize>());
        match (ends.next(), ends.next()) {
            (Some(Ok(a)), Some(Ok(b))) => cpus.extend(a..=b),
            (Some(Ok(a)), None) => cpus.push(a),
            _ => {}
        }
    }
    if cpus.is_empty() {
        cpus.push(0);
    }
    cpus
}

/// Whether the kernel can be traced here, tried for real: an instance made and
/// removed (and tracefs unmounted again if it was mounted for this). Returns the
/// tracepoints this kernel lacks.
pub fn check() -> Result<Vec<String>, Unavailable> {
    let instance = Instance::create(Tracefs::open()?, None, 16)?;
    Ok(instance.missing.clone())
}

impl Session {
    /// Mounts tracefs if needed, makes the instance, enables the events and starts
    /// the reader. Fails, saying what is missing, where the kernel cannot be traced.
    pub fn start(config: SessionConfig) -> Result<Session, Unavailable> {
        let cpus = config.cpus.clone().unwrap_or_else(online_cpus);
        let tracefs = Tracefs::open()?;
        let instance = Instance::create(tracefs, Some(&cpus), config.buffer_kb)?;
        let io = |what: String| move |source| Unavailable::Io { what, source };
        let layout_text = instance
            .read("events/header_page")
            .map_err(io("reading events/header_page".into()))?;
        let layout = PageLayout::parse(&layout_text).map_err(|e| Unavailable::Io {
            what: e.to_string(),
            source: io::Error::other("unknown page layout"),
        })?;
        let mut decoder = Decoder::default();
        for (system, name) in &instance.enabled {
            if let Ok(format) = instance.read(&format!("events/{system}/{name}/format")) {
                decoder.add(system, name, &format);
            }
        }
        let page_size = instance
            .read("buffer_subbuf_size_kb")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .map(|kb| kb * 1024)
            // SAFETY: sysconf has no preconditions.
            .unwrap_or_else(|| unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize);
        let mut pipes = Vec::new();
        for &cpu in &cpus {
            let path = instance
                .dir()
                .join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .map_err(io(format!("opening {}", path.display())))?;
            pipes.push((cpu as u32, file));
        }
        let instance = Arc::new(instance);
        let shared = Arc::new(Shared::default());
        let stop = Arc::new(AtomicBool::new(false));
        let mut reader = Reader {
            pipes,
            page: vec![0u8; page_size],
            layout,
            decoder,
            windows: cpus.iter().map(|&c| CpuWindow::new(c as u32)).collect(),
            last_ts: HashMap::new(),
            comms: HashMap::new(),
            pending: Vec::new(),
            config: config.clone(),
            why: Why::default(),
            culprits: HashMap::new(),
        };
        let (r_shared, r_stop) = (Arc::clone(&shared), Arc::clone(&stop));
        // The reader keeps off the CPUs it watches where there are others: its reading
        // is not then in the watched threads' way.
        let elsewhere: Vec<usize> = online_cpus()
            .into_iter()
            .filter(|c| !cpus.contains(c))
            .collect();
        let handle = std::thread::Builder::new()
            .name("audiolat-trace".into())
            .spawn(move || {
                pin_to(&elsewhere);
                lowest_real_time_priority();
                reader.run(&r_shared, &r_stop);
                reader
            })
            .map_err(io("starting the trace reader".into()))?;
        Ok(Session {
            shared,
            stop,
            dropped: Arc::new(AtomicU64::new(0)),
            reader: Some(handle),
            instance,
            config,
            cpus,
        })
    }

    /// A sender for one thread's misses (each real-time thread takes its own).
    pub fn sender(&self) -> MissSender {
        let (tx, rx) = rtrb::RingBuffer::new(self.config.ring.max(1));
        self.shared
            .receivers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(rx);
        MissSender {
            tx,
            dropped: Arc::clone(&self.dropped),
        }
    }

    /// Names a thread that matters (the probe's measuring thread, a server's driver).
    pub fn name_thread(&self, role: &str, tid: i32) {
        self.shared
            .threads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((role.to_string(), tid));
    }

    /// The largest culprit so far: kind, name, time (ns) and misses.
    pub fn top_culprit(&self) -> Option<(CauseKind, String, u64, u64)> {
        self.top().get()
    }

    /// A handle that reads [`Session::top_culprit`] from anywhere, for as long as it
    /// is kept (after the session too: then the last one).
    pub fn top(&self) -> TopCulprit {
        TopCulprit(Arc::clone(&self.shared))
    }

    /// The tracepoints this kernel lacks.
    pub fn missing(&self) -> &[String] {
        &self.instance.missing
    }

    /// Stops the trace, explains the misses still pending, removes the instance (and
    /// unmounts tracefs if it was mounted for this).
    pub fn finish(mut self) -> Why {
        self.finish_inner()
    }

    fn finish_inner(&mut self) -> Why {
        self.instance.stop();
        self.stop.store(true, Ordering::Release);
        let reader = self.reader.take().and_then(|h| h.join().ok());
        let mut why = reader.map(Reader::into_why).unwrap_or_default();
        why.misses_dropped += self.dropped.load(Ordering::Relaxed);
        why.events_lost = self
            .cpus
            .iter()
            .filter_map(|&c| self.instance.lost_on(c))
            .sum::<u64>();
        why.missing = self.instance.missing.clone();
        why.cpus = self.cpus.clone();
        why.threads = self
            .shared
            .threads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        why.mounted_tracefs = self.instance.tracefs().mounted_here();
        why
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.reader.is_some() {
            let _ = self.finish_inner();
        }
    }
}

/// The reader thread's state.
struct Reader {
    pipes: Vec<(u32, File)>,
    page: Vec<u8>,
    layout: PageLayout,
    decoder: Decoder,
    windows: Vec<CpuWindow>,
    last_ts: HashMap<u32, u64>,
    comms: HashMap<i32, (Comm, Option<i32>)>,
    pending: Vec<Miss>,
    config: SessionConfig,
    why: Why,
    culprits: HashMap<(CauseKind, String), (u64, u64)>,
}

struct ReaderNames<'a> {
    decoder: &'a Decoder,
    comms: &'a HashMap<i32, (Comm, Option<i32>)>,
}

impl Names for ReaderNames<'_> {
    fn name(&self, index: u32) -> String {
        self.decoder.name(index).to_string()
    }
    fn comm(&self, pid: i32) -> Option<Comm> {
        self.comms.get(&pid).map(|(c, _)| *c)
    }
    fn prio(&self, pid: i32) -> Option<i32> {
        self.comms.get(&pid).and_then(|(_, p)| *p)
    }
}

/// Most task names remembered (cleared past this).
const MAX_COMMS: usize = 65_536;

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to write to.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Reader {
    fn run(&mut self, shared: &Shared, stop: &AtomicBool) {
        loop {
            let stopping = stop.load(Ordering::Acquire);
            // At the end (tracing stopped), everything the kernel holds is read.
            while self.read_all() && stopping {}
            {
                let mut rx = shared.receivers.lock().unwrap_or_else(|p| p.into_inner());
                for r in rx.iter_mut() {
                    while let Ok(m) = r.pop() {
                        self.pending.push(m);
                    }
                }
            }
            let now = monotonic_ns();
            self.explain_due(now, stopping);
            self.publish_top(shared);
            if stopping {
                return;
            }
            let oldest_pending = self
                .pending
                .iter()
                .map(|m| m.t_ns)
                .min()
                .unwrap_or(u64::MAX);
            let cutoff = now
                .saturating_sub(self.config.window_ns)
                .min(oldest_pending);
            for w in &mut self.windows {
                w.prune(cutoff);
                w.cap(self.config.max_events_per_cpu);
            }
            std::thread::sleep(self.config.poll);
        }
    }

    /// Reads every CPU's pipe until it has nothing more, or [`PAGES_PER_PASS`] pages
    /// (a CPU writing faster than it is read must not hold off the others and the
    /// explaining: the kernel keeps the rest).
    /// Returns whether a CPU had more than it read.
    fn read_all(&mut self) -> bool {
        let mut more = false;
        for i in 0..self.pipes.len() {
            let mut pages = 0;
            loop {
                if pages == PAGES_PER_PASS {
                    more = true;
                    break;
                }
                let n = match self.pipes[i].1.read(&mut self.page) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                pages += 1;
                let cpu = self.pipes[i].0;
                self.take_page(cpu, n);
            }
        }
        more
    }

    fn take_page(&mut self, cpu: u32, n: usize) {
        let Ok(page) = Page::parse(&self.page[..n], self.layout) else {
            self.why.bad_pages += 1;
            return;
        };
        let w = self
            .windows
            .iter_mut()
            .find(|w| w.cpu == cpu)
            .expect("a window per pipe");
        if let Some(count) = page.lost_before() {
            let since = self.last_ts.get(&cpu).copied().unwrap_or(0);
            w.events.push_back(Event {
                ts_ns: since,
                pid: -1,
                flags: 0,
                kind: Kind::Lost {
                    count,
                    until_ns: page.timestamp_ns(),
                },
            });
        }
        for record in page.records() {
            let Ok(record) = record else {
                self.why.bad_pages += 1;
                break;
            };
            let Some(e) = self.decoder.decode(record.ts_ns, record.payload) else {
                continue;
            };
            self.why.events_read += 1;
            if self.comms.len() > MAX_COMMS {
                self.comms.clear();
            }
            match e.kind {
                Kind::Switch {
                    prev_pid,
                    prev_comm,
                    prev_prio,
                    next_pid,
                    next_comm,
                    next_prio,
                    ..
                } => {
                    self.comms.insert(prev_pid, (prev_comm, Some(prev_prio)));
                    self.comms.insert(next_pid, (next_comm, Some(next_prio)));
                }
                Kind::Waking {
                    pid, comm, prio, ..
                } => {
                    self.comms.insert(pid, (comm, Some(prio)));
                }
                _ => {}
            }
            self.last_ts.insert(cpu, e.ts_ns);
            w.events.push_back(e);
        }
    }

    /// Explains the pending misses whose events are in: that ended [`SETTLE_NS`] before
    /// `now_ns` and whose end every CPU's events have reached, or that ended
    /// [`WAIT_FOR_CPUS_NS`] before it; every one when `stopping`.
    fn explain_due(&mut self, now_ns: u64, stopping: bool) {
        let mut due: Vec<Miss> = Vec::new();
        let read_to = self
            .windows
            .iter()
            .map(|w| self.last_ts.get(&w.cpu).copied().unwrap_or(0))
            .min()
            .unwrap_or(0);
        self.pending.retain(|m| {
            let settled = m.end_ns.saturating_add(SETTLE_NS) <= now_ns
                && (read_to >= m.end_ns || m.end_ns.saturating_add(WAIT_FOR_CPUS_NS) <= now_ns);
            if stopping || settled {
                due.push(*m);
                false
            } else {
                true
            }
        });
        due.sort_by_key(|m| m.t_ns);
        for miss in due {
            let names = ReaderNames {
                decoder: &self.decoder,
                comms: &self.comms,
            };
            let explained = explain(&miss, &mut self.windows, &names);
            self.why.misses_explained += 1;
            for c in &explained.causes {
                let entry = self
                    .culprits
                    .entry((c.kind, c.name.clone()))
                    .or_insert((0, 0));
                entry.0 += c.ns;
                entry.1 += 1;
            }
            self.keep(explained);
        }
    }

    /// Keeps a miss in detail, the worst ones when there are too many.
    fn keep(&mut self, explained: Explained) {
        let kept = &mut self.why.misses;
        if kept.len() < self.config.max_misses_kept {
            kept.push(explained);
            return;
        }
        if let Some((i, least)) = kept
            .iter()
            .enumerate()
            .min_by_key(|(_, m)| m.miss.late_ns())
        {
            if least.miss.late_ns() < explained.miss.late_ns() {
                kept.remove(i);
                kept.push(explained);
            }
        }
    }

    fn culprits(&self) -> Vec<Culprit> {
        let mut out: Vec<Culprit> = self
            .culprits
            .iter()
            .map(|((kind, name), (ns, misses))| Culprit {
                kind: *kind,
                name: name.clone(),
                ns_total: *ns,
                misses: *misses,
            })
            .collect();
        out.sort_by(|a, b| {
            b.ns_total
                .cmp(&a.ns_total)
                .then(a.kind.cmp(&b.kind))
                .then(a.name.cmp(&b.name))
        });
        out
    }

    fn publish_top(&self, shared: &Shared) {
        let top = self
            .culprits()
            .into_iter()
            .find(|c| c.kind != CauseKind::Unaccounted)
            .map(|c| (c.kind, c.name, c.ns_total, c.misses));
        *shared.top.lock().unwrap_or_else(|p| p.into_inner()) = top;
    }

    fn into_why(self) -> Why {
        let culprits = self.culprits();
        let mut why = self.why;
        why.culprits = culprits;
        why.misses.sort_by_key(|m| m.miss.t_ns);
        why
    }
}
