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

pub use super::graph::{NodeProfile, NodeRole, ProfilerSnapshot};

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

    /// The graph time the cycles received since the last take cover (each driver
    /// cycle: its quantum at its rate).
    pub fn graph_time(&self) -> Duration {
        Duration::from_nanos(self.listener.graph_ns())
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
    /// Graph time of the driver cycles seen, in ns.
    graph_ns: u64,
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
        let quantum = clock.get(6).and_then(int).unwrap_or(0).max(0) as u64;
        let rate = match clock.get(4) {
            Some(Value::Fraction(f)) if f.num > 0 => f.denom / f.num,
            _ => 0,
        };
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
                quantum_frames: 0,
                rate_hz: 0,
                cycles: 0,
                errors: 0,
                xruns: None,
            });
            node.cycles += 1;
            node.quantum_frames = quantum;
            node.rate_hz = rate;
            if role == NodeRole::Follower && status != Some(STATUS_FINISHED) {
                node.errors += 1;
            }
            if role == NodeRole::Driver {
                if rate > 0 {
                    self.graph_ns += quantum * 1_000_000_000 / u64::from(rate);
                }
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

    fn snapshot(self) -> ProfilerSnapshot {
        ProfilerSnapshot {
            window_ms: self.graph_ns / 1_000_000,
            events: self.events,
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
    use std::pin::Pin;

    /// A bound profiler proxy with its listener; the proxy is destroyed when dropped.
    pub(super) struct ProfilerListener {
        proxy: *mut pw::sys::pw_proxy,
        // Boxed: the server-side callbacks hold their addresses until the proxy is gone.
        hook: Pin<Box<pw::spa::sys::spa_hook>>,
        events: Pin<Box<pw::sys::pw_profiler_events>>,
        tally: Pin<Box<Tally>>,
    }

    unsafe extern "C" fn on_profile(data: *mut c_void, pod: *const pw::spa::sys::spa_pod) {
        if data.is_null() || pod.is_null() {
            return;
        }
        // SAFETY: `data` is the `Tally` boxed in the listener, alive until the proxy is
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
            let mut me = ProfilerListener {
                proxy: proxy.cast(),
                // SAFETY: a zeroed spa_hook is the C idiom for an unlinked hook.
                hook: Box::pin(unsafe { std::mem::zeroed() }),
                events: Box::pin(pw::sys::pw_profiler_events {
                    version: pw::sys::PW_VERSION_PROFILER_EVENTS,
                    profile: Some(on_profile),
                }),
                tally: Box::pin(Tally::default()),
            };
            let hook: *mut pw::spa::sys::spa_hook = &mut *me.hook;
            let events: *const pw::sys::pw_profiler_events = &*me.events;
            let data: *mut Tally = &mut *me.tally;
            // SAFETY: a bound proxy starts with its spa_interface (the profiler's
            // methods); the hook, events and data are boxed and outlive the proxy,
            // which `drop` destroys first.
            let res: i32 = unsafe {
                spa_interface_call_method!(
                    proxy,
                    pw::sys::pw_profiler_methods,
                    add_listener,
                    hook,
                    events,
                    data.cast()
                )
            };
            (res >= 0).then_some(me)
        }

        /// What was tallied so far (leaving an empty tally).
        pub(super) fn take(&mut self) -> Tally {
            std::mem::take(&mut *self.tally)
        }

        /// Events tallied so far.
        pub(super) fn events(&self) -> u64 {
            self.tally.events
        }

        /// Graph time tallied so far, in ns.
        pub(super) fn graph_ns(&self) -> u64 {
            self.tally.graph_ns
        }
    }

    impl Drop for ProfilerListener {
        fn drop(&mut self) {
            // SAFETY: the proxy was returned by bind and is destroyed once; destroying
            // it removes the hook from its lists while the boxes are still alive.
            unsafe { pw::sys::pw_proxy_destroy(self.proxy) };
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
        let clock = vec![
            Value::Int(0),
            Value::Int(29),
            Value::String("audiolat-sink".into()),
            Value::Long(0),
            Value::Fraction(Fraction {
                num: 1,
                denom: 48000,
            }),
            Value::Long(0),
            Value::Long(256),
            Value::Long(0),
            Value::Double(1.0),
            Value::Long(0),
        ];
        let info = vec![
            Value::Long(7),
            Value::Float(0.1),
            Value::Float(0.1),
            Value::Float(0.1),
            Value::Int(2),
        ];
        let object = Value::Object(Object {
            type_: pw::spa::sys::SPA_TYPE_OBJECT_Profiler,
            id: 0,
            properties: vec![
                prop(PROFILER_INFO, info),
                prop(PROFILER_CLOCK, clock),
                prop(PROFILER_DRIVER_BLOCK, block(29, "audiolat-sink", 3)),
                prop(
                    PROFILER_FOLLOWER_BLOCK,
                    block(50, "jack_delay", follower_status),
                ),
            ],
        });
        PodSerializer::serialize(
            std::io::Cursor::new(Vec::new()),
            &Value::Struct(vec![object]),
        )
        .unwrap()
        .0
        .into_inner()
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
        assert_eq!((driver.quantum_frames, driver.rate_hz), (256, 48000));
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
