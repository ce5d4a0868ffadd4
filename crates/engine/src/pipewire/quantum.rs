//! The quantum as a setting: `clock.force-quantum` (and `clock.force-rate`) in a
//! PipeWire's `settings` metadata, the quantum the graph then really runs, and the
//! previous settings put back.
//!
//! # The contract
//!
//! - [`ForcedQuantum::apply`] reads the previous `clock.force-quantum` (and
//!   `clock.force-rate` when a rate is asked) with `pw-metadata -n settings 0`, sets the
//!   new values with `pw-metadata -n settings 0 KEY VALUE` (run with the server's client
//!   environment, so it reaches that server and no other), then waits until the graph
//!   runs at the quantum asked for.
//! - The granted quantum is **measured**, never read back from a setting: `pw-metadata`
//!   accepts anything, `jack_bufsize` echoes the forced value, and the graph rounds a
//!   forced quantum down to a power of two and caps it at 8192 (3000 runs 2048).
//!   [`measure_quantum`] opens a JACK client through PipeWire's libjack and reads the
//!   `nframes` of its process callbacks: a JACK client of PipeWire is always scheduled
//!   (`node.always-process`), and `nframes` is the cycle the graph really ran (checked:
//!   2048 when 3000 is forced). It is the simplest reliable source: no pty (pw-top), no
//!   profiler log to parse, and the same library the JACK probes use.
//! - A quantum the graph does not run as asked is [`QuantumError::NotGranted`], naming
//!   the quantum granted; the previous settings are restored before it is returned.
//! - The returned guard restores the previous values when dropped (the normal end of a
//!   run, an error, Ctrl-C through the run's normal end) or with
//!   [`ForcedQuantum::restore`], which reports a failure. It restores only what audiolat
//!   still owns ([`restore_setting`]): a key that no longer holds the value forced (the
//!   user, or another audiolat, changed it during the run) is left as it is and listed
//!   in [`ForcedQuantum::changed`].
//! - A killed audiolat leaves nothing to undo on the private PipeWire audiolat started,
//!   which dies with it (`PR_SET_PDEATHSIG`). On a server audiolat did not start, use
//!   [`super::running::force_quantum`], which keeps a state file for the next audiolat.
//!
//! Nothing here runs on an audio thread (the JACK callback only stores a number).

pub use super::error::QuantumError;
use super::error::METADATA_TIMEOUT;
use super::programs::run_bounded;
use crate::audio::AudioError;
use std::ffi::OsString;
use std::process::Command;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The settings key of the forced quantum.
pub const FORCE_QUANTUM_KEY: &str = "clock.force-quantum";
/// The settings key of the forced rate.
pub const FORCE_RATE_KEY: &str = "clock.force-rate";
/// The program that reads and writes metadata (Debian package `pipewire-bin`).
const PW_METADATA: &str = "pw-metadata";
/// How long the measured quantum must hold before it is taken as the graph's.
const SETTLE: Duration = Duration::from_millis(500);

/// `clock.force-quantum` (and `clock.force-rate`) set on a PipeWire, with the quantum
/// granted; the previous values are restored when dropped.
#[derive(Debug)]
pub struct ForcedQuantum {
    env: Vec<(&'static str, OsString)>,
    /// (key, previous value) of each key set, in the order set.
    previous: Vec<(&'static str, String)>,
    /// The value set, for each key of `previous`.
    forced: Vec<String>,
    /// The keys left as they were found at the restore (changed during the run).
    changed: Vec<Changed>,
    asked: u32,
    granted: u32,
    restored: bool,
}

impl ForcedQuantum {
    /// Forces `quantum` frames (and `rate_hz`, when given) on the PipeWire that a client
    /// with `env` reaches ([`super::PipewireServer::client_env`]), whose JACK server is
    /// `jack_server`, and waits up to `timeout` until the graph runs at it (see the
    /// [module docs](self)).
    pub fn apply(
        env: Vec<(&'static str, OsString)>,
        jack_server: &str,
        quantum: u32,
        rate_hz: Option<u32>,
        timeout: Duration,
    ) -> Result<ForcedQuantum, QuantumError> {
        let settings = read_settings(&env)?;
        let mut wanted = vec![(FORCE_QUANTUM_KEY, quantum)];
        if let Some(rate) = rate_hz {
            wanted.push((FORCE_RATE_KEY, rate));
        }
        let mut guard = ForcedQuantum {
            env,
            previous: Vec::new(),
            forced: Vec::new(),
            changed: Vec::new(),
            asked: quantum,
            granted: 0,
            restored: false,
        };
        for (key, value) in wanted {
            let before = settings.get(key).cloned().unwrap_or_else(|| "0".into());
            set_setting(&guard.env, key, &value.to_string())?;
            guard.previous.push((key, before));
            guard.forced.push(value.to_string());
        }
        // On an error from here on, dropping the guard restores the previous values.
        guard.granted = measure_quantum(jack_server, Some(quantum), timeout)?;
        if guard.granted != quantum {
            return Err(QuantumError::NotGranted {
                asked: quantum,
                granted: guard.granted,
            });
        }
        Ok(guard)
    }

    /// The quantum asked for.
    pub fn asked(&self) -> u32 {
        self.asked
    }

    /// The quantum the graph was measured to run.
    pub fn granted(&self) -> u32 {
        self.granted
    }

    /// The values found before (`clock.force-quantum` first), as `pw-metadata` lists
    /// them ("0" when the key was not set).
    pub fn previous(&self) -> &[(&'static str, String)] {
        &self.previous
    }

    /// Puts the previous values back where the keys still hold the values forced (once;
    /// dropping the guard does it otherwise); a key changed since is left as it is and
    /// listed in [`Self::changed`].
    pub fn restore(&mut self) -> Result<(), QuantumError> {
        if self.restored {
            return Ok(());
        }
        self.restored = true;
        let mut first_error = None;
        for ((key, previous), forced) in self.previous.iter().zip(&self.forced).rev() {
            match restore_setting(&self.env, key, forced, previous) {
                Ok(Restore::Changed(changed)) => self.changed.push(changed),
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The keys [`Self::restore`] left as it found them: changed during the run.
    pub fn changed(&self) -> &[Changed] {
        &self.changed
    }
}

/// A forced key found holding another value than the one forced: someone else's now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Changed {
    /// The key.
    pub key: String,
    /// The value it holds now (left as it is).
    pub now: String,
    /// The value audiolat forced.
    pub forced: String,
}

/// What [`restore_setting`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Restore {
    /// The key held the value forced: the previous value was put back.
    Restored,
    /// The key already held the previous value (it was never set, or was put back):
    /// nothing to do.
    AlreadyPrevious,
    /// The key holds another value: left as it is.
    Changed(Changed),
}

/// Puts `previous` back in `key` of the settings of the PipeWire `env` reaches, only when
/// the key still holds `forced`, the value audiolat set ("0" stands for a key not set).
pub fn restore_setting(
    env: &[(&'static str, OsString)],
    key: &str,
    forced: &str,
    previous: &str,
) -> Result<Restore, QuantumError> {
    let now = read_settings(env)?
        .get(key)
        .cloned()
        .unwrap_or_else(|| "0".into());
    if now == forced && now != previous {
        set_setting(env, key, previous)?;
        Ok(Restore::Restored)
    } else if now == previous {
        Ok(Restore::AlreadyPrevious)
    } else {
        Ok(Restore::Changed(Changed {
            key: key.to_string(),
            now,
            forced: forced.to_string(),
        }))
    }
}

impl Drop for ForcedQuantum {
    fn drop(&mut self) {
        // A server that ended has nothing left to restore.
        let _ = self.restore();
    }
}

/// `pw-metadata` with the server's client environment (and no other PipeWire's).
fn pw_metadata(env: &[(&'static str, OsString)]) -> Command {
    let mut cmd = Command::new(PW_METADATA);
    cmd.env_remove("PIPEWIRE_CONFIG_DIR")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args(["-n", "settings", "0"]);
    cmd
}

fn require_pw_metadata() -> Result<(), QuantumError> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(PW_METADATA).is_file()))
        .unwrap_or(false);
    found.then_some(()).ok_or(QuantumError::NoPwMetadata)
}

/// The `settings` metadata of the PipeWire `env` reaches, key -> value.
pub fn read_settings(
    env: &[(&'static str, OsString)],
) -> Result<std::collections::BTreeMap<String, String>, QuantumError> {
    require_pw_metadata()?;
    let text =
        run_bounded(pw_metadata(env), METADATA_TIMEOUT).ok_or_else(|| QuantumError::Metadata {
            what: "list the settings metadata".into(),
        })?;
    Ok(parse_settings(&text))
}

/// Sets `key` to `value` in the settings metadata.
pub(crate) fn set_setting(
    env: &[(&'static str, OsString)],
    key: &str,
    value: &str,
) -> Result<(), QuantumError> {
    require_pw_metadata()?;
    let mut cmd = pw_metadata(env);
    cmd.args([key, value]);
    run_bounded(cmd, METADATA_TIMEOUT)
        .map(|_| ())
        .ok_or_else(|| QuantumError::Metadata {
            what: format!("set {key} to {value}"),
        })
}

/// Parses `pw-metadata` lines `update: id:0 key:'clock.force-quantum' value:'128' type:''`.
fn parse_settings(text: &str) -> std::collections::BTreeMap<String, String> {
    let field = |line: &str, name: &str| -> Option<String> {
        let start = line.find(&format!("{name}:'"))? + name.len() + 2;
        let len = line[start..].find('\'')?;
        Some(line[start..start + len].to_string())
    };
    text.lines()
        .filter(|l| l.trim_start().starts_with("update:"))
        .filter_map(|l| Some((field(l, "key")?, field(l, "value")?)))
        .collect()
}

/// The quanta audiolat asks a PipeWire for (private or running): 8 to 8192 frames
/// (PipeWire's quantum limit), else [`QuantumError::OutOfRange`]. Whether the graph
/// runs one is measured ([`measure_quantum`]): it rounds a forced quantum down to a
/// power of two.
pub fn validate_quantum(frames: u32) -> Result<(), AudioError> {
    if (8..=8192).contains(&frames) {
        Ok(())
    } else {
        Err(QuantumError::OutOfRange(frames).into())
    }
}

/// The quantum the graph of JACK server `jack_server` (a PipeWire, reached through
/// PipeWire's libjack, which this loads) runs: the `nframes` of a JACK client's process
/// callbacks: as soon as a cycle of `expect` frames is seen, or else the cycle size
/// once it has held for 500 ms (a forced quantum applies within a few cycles); waits at
/// most `timeout`.
pub fn measure_quantum(
    jack_server: &str,
    expect: Option<u32>,
    timeout: Duration,
) -> Result<u32, QuantumError> {
    measure_graph(jack_server, expect, timeout).map(|(quantum, _)| quantum)
}

/// [`measure_quantum`], with the rate the graph runs, measured from the same cycles
/// (their frames over their period, `jack_get_cycle_times`; the client's sample rate
/// follows `clock.force-rate` before the graph does): (quantum in frames, rate in Hz).
pub fn measure_graph(
    jack_server: &str,
    expect: Option<u32>,
    timeout: Duration,
) -> Result<(u32, u32), QuantumError> {
    let not_measured = |e: String| QuantumError::NotMeasured(e);
    crate::libjack::load_pipewire_libjack().map_err(|e| not_measured(e.to_string()))?;
    let client = crate::libjack::open_client(jack_server, "audiolat-quantum")
        .map_err(|e| not_measured(e.to_string()))?;
    let (last, cycles) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU64::new(0)));
    let period_us = Arc::new(AtomicU32::new(0));
    let (l, c, p) = (last.clone(), cycles.clone(), period_us.clone());
    let handler = jack::contrib::ClosureProcessHandler::new(move |_, ps| {
        l.store(ps.n_frames(), Ordering::Relaxed);
        if let Ok(times) = ps.cycle_times() {
            p.store(times.period_usecs.to_bits(), Ordering::Relaxed);
        }
        c.fetch_add(1, Ordering::Relaxed);
        jack::Control::Continue
    });
    let active = client
        .activate_async((), handler)
        .map_err(|e| not_measured(format!("activating a JACK client: {e}")))?;
    let start = Instant::now();
    let (mut held, mut since) = (0, Instant::now());
    let measured = loop {
        std::thread::sleep(Duration::from_millis(5));
        let now = last.load(Ordering::Relaxed);
        if cycles.load(Ordering::Relaxed) > 0 {
            if Some(now) == expect {
                break Some(now);
            }
            if now != held {
                (held, since) = (now, Instant::now());
            } else if since.elapsed() >= SETTLE {
                break Some(now);
            }
        }
        if start.elapsed() >= timeout {
            break (cycles.load(Ordering::Relaxed) > 0).then_some(held);
        }
    };
    let _ = active.deactivate();
    let quantum =
        measured.ok_or_else(|| not_measured(format!("no cycle ran within {timeout:?}")))?;
    let period_us = f32::from_bits(period_us.load(Ordering::Relaxed));
    if period_us <= 0.0 {
        return Err(not_measured(
            "the cycles had no period (jack_get_cycle_times)".into(),
        ));
    }
    Ok((
        quantum,
        (f64::from(quantum) * 1e6 / f64::from(period_us)).round() as u32,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_parsed_from_pw_metadata_lines() {
        let text = "Found \"settings\" metadata 30\n\
            update: id:0 key:'clock.quantum' value:'1024' type:''\n\
            update: id:0 key:'clock.force-quantum' value:'3000' type:''\n";
        let s = parse_settings(text);
        assert_eq!(s.get(FORCE_QUANTUM_KEY).map(String::as_str), Some("3000"));
        assert_eq!(s.get("clock.quantum").map(String::as_str), Some("1024"));
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn a_refused_quantum_names_the_granted_one() {
        let e = QuantumError::NotGranted {
            asked: 3000,
            granted: 2048,
        }
        .to_string();
        assert!(e.contains("3000") && e.contains("granted 2048"), "{e}");
    }
}
