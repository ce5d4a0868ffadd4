//! The PipeWire graph's profiler, read natively: what `pw-top` shows (QUANT, RATE, ERR),
//! per node, as a plain snapshot of a short window of cycles.
//!
//! # The contract
//!
//! - [`sample`] connects to the PipeWire a client with `env` reaches
//!   ([`super::PipewireServer::client_env`]; an empty `env`: the one this process's own
//!   environment reaches), binds the registry global of type `PipeWire:Interface:Profiler`
//!   (`libpipewire-module-profiler`; pipewire-rs has no binding for it, so that part is
//!   `pipewire::sys`), listens to its `profile` events for `window` and returns a
//!   [`ProfilerSnapshot`].
//! - Each event carries, per driver, `SPA_PROFILER_info` (the driver's xrun count since
//!   it started), `SPA_PROFILER_clock` (its name, rate and duration, the quantum it ran)
//!   and one `SPA_PROFILER_followerBlock` per follower (id, name, status). A follower whose
//!   status is not *finished* (3) in a cycle did not finish in it: that cycle is one
//!   error, as pw-top counts its ERR column. 0.3.65 has no per-follower xrun counter.
//!   A clock field missing from a cycle (quantum, rate) is absent, never 0.
//! - A window's graph time counts the cycles of one driver: the driver our own nodes
//!   follow ([`Session::follow`]: a follower named so), else the driver with the most
//!   graph time. Summing every driver's cycles would inflate it when several drivers run
//!   (an idle `Dummy-Driver` beside the sink).
//! - A PipeWire without the profiler module, or no cycle in the window, is an error
//!   ([`ProfilerError`]); nothing is invented.
//!
//! Nothing here runs on an audio thread: it is a client of its own, on the caller's
//! thread, for the window.

use pipewire as pw;
use pw::spa::pod::{deserialize::PodDeserializer, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// `SPA_PROFILER_info`: (counter, cpu loads, xrun count) of a driver.
const PROFILER_INFO: u32 = 0x10001;
/// `SPA_PROFILER_clock`: (flags, id, name, nsec, rate, position, duration, ...).
const PROFILER_CLOCK: u32 = 0x10002;
/// `SPA_PROFILER_driverBlock`: (id, name, prev_signal, signal, awake, finish, status, ..).
const PROFILER_DRIVER_BLOCK: u32 = 0x10003;
/// `SPA_PROFILER_followerBlock`: (id, name, prev_signal, signal, awake, finish, status, ..).
const PROFILER_FOLLOWER_BLOCK: u32 = 0x20001;
/// `PW_NODE_ACTIVATION_FINISHED`: the node finished its cycle.
const STATUS_FINISHED: i64 = 3;

/// Why the profiler could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProfilerError {
    /// No connection to the PipeWire.
    #[error("could not connect to the PipeWire at {remote}: {why}")]
    Connect {
        /// The socket tried.
        remote: String,
        /// What failed.
        why: String,
    },
    /// The server has no profiler global.
    #[error(
        "the PipeWire has no profiler (load libpipewire-module-profiler in its configuration)"
    )]
    NoProfiler,
    /// The profiler sent nothing in the window.
    #[error("the PipeWire profiler reported no cycle within {0:?} (is a node running?)")]
    NoCycle(Duration),
}

pub use super::profile::{NodeProfile, NodeRole, ProfilerSnapshot};

/// The socket a client with `env` connects to: `$PIPEWIRE_RUNTIME_DIR/$PIPEWIRE_REMOTE`
/// (`None` when `env` does not say: PipeWire's own defaults apply).
fn remote_socket(env: &[(&'static str, OsString)]) -> Option<String> {
    let get = |k: &str| env.iter().find(|(key, _)| *key == k).map(|(_, v)| v);
    let dir = get("PIPEWIRE_RUNTIME_DIR").or_else(|| get("XDG_RUNTIME_DIR"))?;
    let remote = get("PIPEWIRE_REMOTE").map_or("pipewire-0".into(), |r| r.clone());
    Some(
        std::path::Path::new(dir)
            .join(remote)
            .to_string_lossy()
            .into_owned(),
    )
}

/// Listens to the profiler of the PipeWire `env` reaches for `window` of cycles (from
/// the first cycle seen, waiting up to 2 s for it; see the [module docs](self)).
pub fn sample(
    env: &[(&'static str, OsString)],
    window: Duration,
) -> Result<ProfilerSnapshot, ProfilerError> {
    let mut session = Session::open(env)?;
    let start = Instant::now();
    while session.events() == 0 && start.elapsed() < Duration::from_secs(2) {
        session.pump(POLL);
    }
    if session.events() == 0 {
        return Err(ProfilerError::NoCycle(start.elapsed()));
    }
    // The server sends its cycles in batches: wait for `window` of graph time.
    let first = Instant::now();
    while session.graph_time() < window && first.elapsed() < window + Duration::from_secs(2) {
        session.pump(POLL);
    }
    Ok(session.take())
}

/// How long one turn of the loop waits for events.
const POLL: Duration = Duration::from_millis(20);

/// A connection to a PipeWire with its profiler bound and listened to, on the thread
/// that opened it (PipeWire's objects are not `Send`).
pub struct Session {
    // Dropped first: the proxy goes before the connection.
    listener: bind::ProfilerListener,
    _registry: pw::registry::RegistryRc,
    _core: pw::core::CoreRc,
    _context: pw::context::ContextRc,
    mainloop: pw::main_loop::MainLoopRc,
}

impl Session {
    /// Connects to the PipeWire `env` reaches and binds its profiler.
    pub fn open(env: &[(&'static str, OsString)]) -> Result<Session, ProfilerError> {
        pw::init();
        let socket = remote_socket(env);
        let connect_err = |why: String| ProfilerError::Connect {
            remote: socket.clone().unwrap_or_else(|| "pipewire-0".into()),
            why,
        };
        let mainloop =
            pw::main_loop::MainLoopRc::new(None).map_err(|e| connect_err(e.to_string()))?;
        let context =
            pw::context::ContextRc::new(&mainloop, None).map_err(|e| connect_err(e.to_string()))?;
        // The client side of the profiler's protocol (its marshal) comes with the
        // module, as pw-top loads it.
        if !bind::load_profiler_module(&context) {
            return Err(connect_err(
                "libpipewire-module-profiler could not be loaded in this client".into(),
            ));
        }
        let props = socket
            .as_ref()
            .map(|s| pw::properties::properties! { "remote.name" => s.as_str() });
        let core = context
            .connect_rc(props)
            .map_err(|e| connect_err(e.to_string()))?;
        let registry = core
            .get_registry_rc()
            .map_err(|e| connect_err(e.to_string()))?;
        let profiler_id: Rc<RefCell<Option<u32>>> = Rc::default();
        let found = profiler_id.clone();
        let registry_listener = registry
            .add_listener_local()
            .global(move |g| {
                if g.type_ == pw::types::ObjectType::Profiler {
                    found.borrow_mut().get_or_insert(g.id);
                }
            })
            .register();
        // The registry lists the globals at once; a bounded wait is enough.
        let start = Instant::now();
        while profiler_id.borrow().is_none() && start.elapsed() < Duration::from_secs(2) {
            mainloop.loop_().iterate(pw::loop_::Timeout::Finite(POLL));
        }
        drop(registry_listener);
        let id = profiler_id.borrow().ok_or(ProfilerError::NoProfiler)?;
        let listener = bind::ProfilerListener::bind(&registry, id)
            .ok_or_else(|| connect_err("binding the profiler failed".into()))?;
        Ok(Session {
            listener,
            _registry: registry,
            _core: core,
            _context: context,
            mainloop,
        })
    }

    /// Receives events for up to `timeout`.
    pub fn pump(&mut self, timeout: Duration) {
        self.mainloop
            .loop_()
            .iterate(pw::loop_::Timeout::Finite(timeout));
    }

    /// Profiler events received since the last [`Session::take`].
    pub fn events(&self) -> u64 {
        self.listener.events()
    }

    /// The graph time the cycles received since the last take cover: the cycles (each
    /// its quantum at its rate) of the driver our nodes follow, else of the driver with
    /// the most graph time (see the [module docs](self)).
    pub fn graph_time(&self) -> Duration {
        Duration::from_nanos(self.listener.graph_ns())
    }

    /// Our own nodes: followers named `node_name` or `node_name-…` (a stream's node and
    /// its capture, `audiolat` and `audiolat-capture`; PipeWire's libjack may name a JACK
    /// client's node after the process's first client, `audiolat-quantum`). Their
    /// driver's cycles are the window's graph time and [`ProfilerSnapshot::followed`].
    pub fn follow(&mut self, node_name: &str) {
        self.listener.set_ours(node_name.to_string());
    }

    /// What was received since the last take; starts a new tally.
    pub fn take(&mut self) -> ProfilerSnapshot {
        self.listener.take().snapshot()
    }
}

/// What the events said so far.
#[derive(Default)]
struct Tally {
    events: u64,
    /// Graph time of each driver's cycles seen (by node id), in ns.
    driver_ns: BTreeMap<u32, u64>,
    /// The name of our own nodes (see [`Session::follow`]).
    ours: Option<String>,
    /// Drivers (by node id) whose cycles had one of our nodes as a follower.
    followed: BTreeMap<u32, u64>,
    nodes: BTreeMap<(u8, u32), NodeProfile>,
}

impl Tally {
    /// One `profile` event's pod (a Struct of Profiler objects, or one object).
    fn add_pod(&mut self, bytes: &[u8]) {
        let Ok((_, value)) = PodDeserializer::deserialize_any_from(bytes) else {
            return;
        };
        self.events += 1;
        match value {
            Value::Struct(objects) => objects.iter().for_each(|o| self.add_object(o)),
            object => self.add_object(&object),
        }
    }

    /// One driver's cycle: its info, clock and blocks.
    fn add_object(&mut self, object: &Value) {
        let Value::Object(object) = object else {
            return;
        };
        let field = |key: u32| {
            object.properties.iter().find_map(|p| match &p.value {
                Value::Struct(fields) if p.key == key => Some(fields.as_slice()),
                _ => None,
            })
        };
        let xruns = field(PROFILER_INFO).and_then(|f| int(f.get(4)?));
        let Some(clock) = field(PROFILER_CLOCK) else {
            return;
        };
        // Absent when the cycle does not say (or says nonsense), never 0.
        let quantum = clock
            .get(6)
            .and_then(int)
            .and_then(|q| u64::try_from(q).ok())
            .filter(|q| *q > 0);
        let rate = match clock.get(4) {
            Some(Value::Fraction(f)) if f.num > 0 && f.denom >= f.num => Some(f.denom / f.num),
            _ => None,
        };
        let cycle_ns = quantum
            .zip(rate)
            .and_then(|(q, r)| Some(q.checked_mul(1_000_000_000)? / u64::from(r)));
        let driver_id = field(PROFILER_DRIVER_BLOCK)
            .and_then(|b| int(b.first()?))
            .map(|id| id as u32);
        let ours = self.ours.as_deref();
        let is_ours = |name: &str| {
            ours.is_some_and(|o| {
                name == o || name.strip_prefix(o).is_some_and(|r| r.starts_with('-'))
            })
        };
        let (driver_ns, followed) = (&mut self.driver_ns, &mut self.followed);
        let mut add = |role: NodeRole, block: &[Value]| {
            let (Some(id), Some(Value::String(name))) = (block.first().and_then(int), block.get(1))
            else {
                return;
            };
            let status = block.get(6).and_then(int);
            let key = (u8::from(role == NodeRole::Follower), id as u32);
            let node = self.nodes.entry(key).or_insert_with(|| NodeProfile {
                id: id as u32,
                name: name.clone(),
                role,
                quantum_frames: None,
                rate_hz: None,
                cycles: 0,
                errors: 0,
                xruns: None,
            });
            node.cycles += 1;
            node.quantum_frames = quantum.or(node.quantum_frames);
            node.rate_hz = rate.or(node.rate_hz);
            if role == NodeRole::Follower && status != Some(STATUS_FINISHED) {
                node.errors += 1;
            }
            if role == NodeRole::Follower && is_ours(name) {
                if let Some(d) = driver_id {
                    *followed.entry(d).or_default() += 1;
                }
            }
            if role == NodeRole::Driver {
                *driver_ns.entry(id as u32).or_default() += cycle_ns.unwrap_or(0);
                node.xruns = xruns.map(|x| x.max(0) as u64);
            }
        };
        for p in &object.properties {
            if let Value::Struct(block) = &p.value {
                match p.key {
                    PROFILER_DRIVER_BLOCK => add(NodeRole::Driver, block),
                    PROFILER_FOLLOWER_BLOCK => add(NodeRole::Follower, block),
                    _ => {}
                }
            }
        }
    }

    /// The driver our nodes followed in the most cycles.
    fn followed(&self) -> Option<u32> {
        self.followed
            .iter()
            .max_by_key(|(_, cycles)| **cycles)
            .map(|(id, _)| *id)
    }

    /// The window's graph time: the cycles of the driver(s) our nodes followed, else of
    /// the driver with the most graph time.
    fn graph_ns(&self) -> u64 {
        if self.followed.is_empty() {
            return self.driver_ns.values().copied().max().unwrap_or(0);
        }
        // Our nodes may move from one driver to another (a JACK client's first cycles
        // run on Dummy-Driver): those cycles follow each other, so they add up.
        self.followed
            .keys()
            .filter_map(|id| self.driver_ns.get(id))
            .sum()
    }

    /// An empty tally that keeps the name of our nodes.
    fn restart(&mut self) -> Tally {
        let ours = self.ours.clone();
        std::mem::replace(
            self,
            Tally {
                ours,
                ..Tally::default()
            },
        )
    }

    fn snapshot(self) -> ProfilerSnapshot {
        ProfilerSnapshot {
            window_ms: self.graph_ns() / 1_000_000,
            events: self.events,
            followed: self.followed(),
            nodes: self.nodes.into_values().collect(),
        }
    }
}

/// An Int or Long field.
fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(i64::from(*i)),
        Value::Long(l) => Some(*l),
        _ => None,
    }
}

/// The raw part: binding the profiler global and its `profile` listener.
mod bind {
    use super::{pw, Tally};
    use pw::spa::spa_interface_call_method;
    use std::ffi::c_void;
    use std::ptr::NonNull;

    /// A bound profiler proxy with its listener; the proxy is destroyed when dropped.
    ///
    /// The hook, the events and the tally are heap objects owned through raw pointers
    /// (from `Box::into_raw`, freed in `drop` after the proxy): the C side keeps their
    /// addresses and writes the hook and the tally while this struct moves, so no `Box`
    /// (a unique reference, re-asserted on every move) may coexist with those pointers.
    /// Every access here goes through the same raw pointers, on the one thread that runs
    /// the loop (the callback runs inside [`super::Session::pump`]).
    pub(super) struct ProfilerListener {
        proxy: *mut pw::sys::pw_proxy,
        hook: NonNull<pw::spa::sys::spa_hook>,
        events: NonNull<pw::sys::pw_profiler_events>,
        tally: NonNull<Tally>,
    }

    fn leak<T>(value: T) -> NonNull<T> {
        NonNull::from(Box::leak(Box::new(value)))
    }

    unsafe extern "C" fn on_profile(data: *mut c_void, pod: *const pw::spa::sys::spa_pod) {
        if data.is_null() || pod.is_null() {
            return;
        }
        // SAFETY: `data` is the listener's `Tally` (a raw heap pointer; no reference to
        // it lives while the loop runs this callback), alive until the proxy is
        // destroyed; `pod` points to a whole pod of `size` body bytes after its 8-byte
        // header, valid for this call.
        let (tally, bytes) = unsafe {
            let size = (*pod).size as usize + std::mem::size_of::<pw::spa::sys::spa_pod>();
            (
                &mut *(data as *mut Tally),
                std::slice::from_raw_parts(pod as *const u8, size),
            )
        };
        tally.add_pod(bytes);
    }

    /// Loads `libpipewire-module-profiler` into this client's context (its marshal).
    pub(super) fn load_profiler_module(context: &pw::context::ContextRc) -> bool {
        // SAFETY: a live context and a NUL-terminated module name; the module stays
        // loaded for the context's life and is unloaded with it.
        let module = unsafe {
            pw::sys::pw_context_load_module(
                context.as_raw_ptr(),
                c"libpipewire-module-profiler".as_ptr(),
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        };
        !module.is_null()
    }

    impl ProfilerListener {
        /// Binds global `id` (a `PipeWire:Interface:Profiler`) and listens to it.
        pub(super) fn bind(registry: &pw::registry::RegistryRc, id: u32) -> Option<Self> {
            let type_ = pw::sys::PW_TYPE_INTERFACE_Profiler.as_ptr().cast();
            // SAFETY: the registry is a live `pw_registry` (a spa_interface) and `type_`
            // a NUL-terminated string; bind returns a new proxy or NULL.
            let proxy: *mut c_void = unsafe {
                spa_interface_call_method!(
                    registry.as_raw_ptr(),
                    pw::sys::pw_registry_methods,
                    bind,
                    id,
                    type_,
                    pw::sys::PW_VERSION_PROFILER,
                    0
                )
            };
            if proxy.is_null() {
                return None;
            }
            let me = ProfilerListener {
                proxy: proxy.cast(),
                // SAFETY: a zeroed spa_hook is the C idiom for an unlinked hook.
                hook: leak(unsafe { std::mem::zeroed() }),
                events: leak(pw::sys::pw_profiler_events {
                    version: pw::sys::PW_VERSION_PROFILER_EVENTS,
                    profile: Some(on_profile),
                }),
                tally: leak(Tally::default()),
            };
            // SAFETY: a bound proxy starts with its spa_interface (the profiler's
            // methods); the hook, events and data are heap objects that outlive the
            // proxy, which `drop` destroys first. (On failure `me` is dropped: the proxy
            // is destroyed, then the objects freed.)
            let res: i32 = unsafe {
                spa_interface_call_method!(
                    proxy,
                    pw::sys::pw_profiler_methods,
                    add_listener,
                    me.hook.as_ptr(),
                    me.events.as_ptr().cast_const(),
                    me.tally.as_ptr().cast::<c_void>()
                )
            };
            (res >= 0).then_some(me)
        }

        fn tally(&self) -> &Tally {
            // SAFETY: the tally is alive until drop; the callback's `&mut` exists only
            // inside `pump`, which no `&self` borrow spans (it takes `&mut Session`).
            unsafe { self.tally.as_ref() }
        }

        /// What was tallied so far (leaving an empty tally that keeps our nodes' name).
        pub(super) fn take(&mut self) -> Tally {
            // SAFETY: as in `tally`; `&mut self` excludes the callback.
            unsafe { self.tally.as_mut() }.restart()
        }

        /// Names our own nodes (see [`super::Session::follow`]).
        pub(super) fn set_ours(&mut self, name: String) {
            // SAFETY: as in `take`.
            unsafe { self.tally.as_mut() }.ours = Some(name);
        }

        /// Events tallied so far.
        pub(super) fn events(&self) -> u64 {
            self.tally().events
        }

        /// Graph time tallied so far, in ns.
        pub(super) fn graph_ns(&self) -> u64 {
            self.tally().graph_ns()
        }
    }

    impl Drop for ProfilerListener {
        fn drop(&mut self) {
            // SAFETY: the proxy was returned by bind and is destroyed once; destroying
            // it removes the hook from its lists while the objects are still alive.
            // Then nothing refers to them: they are freed once, as the boxes they were.
            unsafe {
                pw::sys::pw_proxy_destroy(self.proxy);
                drop(Box::from_raw(self.tally.as_ptr()));
                drop(Box::from_raw(self.events.as_ptr()));
                drop(Box::from_raw(self.hook.as_ptr()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pw::spa::pod::serialize::PodSerializer;
    use pw::spa::pod::{Object, Property, PropertyFlags};
    use pw::spa::utils::Fraction;

    fn prop(key: u32, fields: Vec<Value>) -> Property {
        Property {
            key,
            flags: PropertyFlags::empty(),
            value: Value::Struct(fields),
        }
    }

    fn block(id: i32, name: &str, status: i32) -> Vec<Value> {
        let mut b = vec![Value::Int(id), Value::String(name.into())];
        b.extend([
            Value::Long(1),
            Value::Long(2),
            Value::Long(3),
            Value::Long(4),
        ]);
        b.extend([
            Value::Int(status),
            Value::Fraction(Fraction { num: 0, denom: 1 }),
        ]);
        b
    }

    fn cycle(follower_status: i32) -> Vec<u8> {
        serialize(vec![driver_cycle(
            (29, "audiolat-sink"),
            Some(256),
            ("jack_delay", follower_status),
        )])
    }

    fn serialize(objects: Vec<Value>) -> Vec<u8> {
        PodSerializer::serialize(std::io::Cursor::new(Vec::new()), &Value::Struct(objects))
            .unwrap()
            .0
            .into_inner()
    }

    /// One driver's cycle: its clock (with `quantum` as its duration, or without one),
    /// its block and one follower `(name, status)` (id 50 + its name's length).
    fn driver_cycle(
        (driver_id, driver): (i32, &str),
        quantum: Option<i64>,
        (follower, follower_status): (&str, i32),
    ) -> Value {
        let mut clock = vec![
            Value::Int(0),
            Value::Int(driver_id),
            Value::String(driver.into()),
            Value::Long(0),
            Value::Fraction(Fraction {
                num: 1,
                denom: 48000,
            }),
            Value::Long(0),
        ];
        if let Some(q) = quantum {
            clock.extend([
                Value::Long(q),
                Value::Long(0),
                Value::Double(1.0),
                Value::Long(0),
            ]);
        }
        let info = vec![
            Value::Long(7),
            Value::Float(0.1),
            Value::Float(0.1),
            Value::Float(0.1),
            Value::Int(2),
        ];
        Value::Object(Object {
            type_: pw::spa::sys::SPA_TYPE_OBJECT_Profiler,
            id: 0,
            properties: vec![
                prop(PROFILER_INFO, info),
                prop(PROFILER_CLOCK, clock),
                prop(PROFILER_DRIVER_BLOCK, block(driver_id, driver, 3)),
                prop(
                    PROFILER_FOLLOWER_BLOCK,
                    block(50 + follower.len() as i32, follower, follower_status),
                ),
            ],
        })
    }

    #[test]
    fn cycles_become_per_node_quantum_rate_errors_and_xruns() {
        let mut tally = Tally::default();
        tally.add_pod(&cycle(3));
        tally.add_pod(&cycle(1));
        tally.add_pod(&cycle(3));
        let s = tally.snapshot();
        // 3 cycles of 256 frames at 48 kHz: 16 ms of graph time (whole ms: 15).
        assert_eq!((s.events, s.window_ms), (3, 15));
        assert_eq!(s.nodes.len(), 2);
        let driver = s.driver().unwrap();
        assert_eq!((driver.id, driver.name.as_str()), (29, "audiolat-sink"));
        assert_eq!(
            (driver.quantum_frames, driver.rate_hz),
            (Some(256), Some(48000))
        );
        assert_eq!(
            (driver.cycles, driver.errors, driver.xruns),
            (3, 0, Some(2))
        );
        let follower = &s.nodes[1];
        assert_eq!(follower.role, NodeRole::Follower);
        assert_eq!((follower.name.as_str(), follower.cycles), ("jack_delay", 3));
        assert_eq!((follower.errors, follower.xruns), (1, None));
    }

    #[test]
    fn a_clock_without_its_quantum_leaves_it_absent_and_adds_no_graph_time() {
        let mut tally = Tally::default();
        let pod = serialize(vec![driver_cycle(
            (29, "audiolat-sink"),
            None,
            ("audiolat", 3),
        )]);
        tally.add_pod(&pod);
        let s = tally.snapshot();
        let driver = s.driver().unwrap();
        assert_eq!(
            (driver.quantum_frames, driver.rate_hz, driver.cycles),
            (None, Some(48000), 1)
        );
        assert_eq!(s.window_ms, 0);
    }

    #[test]
    fn the_window_counts_the_driver_our_nodes_follow_not_every_driver() {
        // Each event: the sink at 256 frames running our stream, and Dummy-Driver at
        // 1024 running someone else's client, in the same batch.
        let event = || {
            serialize(vec![
                driver_cycle((29, "audiolat-sink"), Some(256), ("audiolat", 3)),
                driver_cycle((18, "Dummy-Driver"), Some(1024), ("other", 3)),
            ])
        };
        let mut ours = Tally {
            ours: Some("audiolat".into()),
            ..Tally::default()
        };
        let mut anyone = Tally::default();
        for _ in 0..6 {
            ours.add_pod(&event());
            anyone.add_pod(&event());
        }
        // 6 cycles of 256 frames at 48 kHz: 32 ms (each cycle's ns rounded down); not
        // 32 + 128 ms.
        assert_eq!(ours.graph_ns().abs_diff(32_000_000), 2);
        let s = ours.restart().snapshot();
        assert_eq!((s.window_ms, s.followed), (31, Some(29)));
        assert_eq!(s.driver().unwrap().name, "audiolat-sink");
        // The next window keeps our name.
        assert_eq!(ours.ours.as_deref(), Some("audiolat"));
        // Nobody named: the driver with the most graph time, alone (6 x 1024 frames).
        assert_eq!(anyone.graph_ns().abs_diff(128_000_000), 2);
        // A capture stream (`audiolat-capture`) is ours too; `audiolatx` is not.
        let mut capture = Tally {
            ours: Some("audiolat".into()),
            ..Tally::default()
        };
        capture.add_pod(&serialize(vec![driver_cycle(
            (18, "Dummy-Driver"),
            Some(1024),
            ("audiolatx", 3),
        )]));
        capture.add_pod(&serialize(vec![driver_cycle(
            (29, "audiolat-sink"),
            Some(256),
            ("audiolat-capture", 3),
        )]));
        assert_eq!(capture.followed(), Some(29));
    }

    #[test]
    fn the_socket_comes_from_the_client_environment() {
        let env = vec![
            ("PIPEWIRE_RUNTIME_DIR", OsString::from("/tmp/x/runtime")),
            ("PIPEWIRE_REMOTE", OsString::from("pipewire-0")),
        ];
        assert_eq!(
            remote_socket(&env).as_deref(),
            Some("/tmp/x/runtime/pipewire-0")
        );
        assert_eq!(remote_socket(&[]), None);
    }
}
