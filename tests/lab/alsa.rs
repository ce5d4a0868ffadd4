//! The ALSA backend on real kernel drivers (section 2 of the lab): round trips through
//! snd-aloop against alsa_delay in the same guest, event latency on snd-dummy against the
//! timing model and on snd-aloop against the onset found in the capture, the smallest
//! buffer that holds, and what a device refuses.

use serde_json::Value;

use crate::harness::{enabled, guest, Guest, Kernel};

/// The figures alsa_delay printed (one a second), in frames.
fn alsa_delay_frames(text: &str) -> Vec<f64> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let v: f64 = w.next()?.parse().ok()?;
            (w.next()? == "frames").then_some(v)
        })
        .collect()
}

/// alsa_delay's figure from `reference_delay` (tests/lab/lib.sh): each run's last figure,
/// which its one before must equal (the first may be settling), and the figure two runs
/// agree on (a run whose start fell across a timer tick of snd-aloop reads a tick off).
fn alsa_delay(g: &Guest, file: &str) -> f64 {
    let text = g.file(file);
    let runs: Vec<f64> = text
        .split("== run ")
        .skip(1)
        .filter_map(|run| {
            let v = alsa_delay_frames(run);
            (v.len() >= 2 && (v[v.len() - 1] - v[v.len() - 2]).abs() < 0.01).then(|| v[v.len() - 1])
        })
        .collect();
    runs.iter()
        .copied()
        .find(|a| runs.iter().filter(|b| (*b - a).abs() < 0.01).count() >= 2)
        .unwrap_or_else(|| panic!("no two alsa_delay runs agree: {runs:?}\n{text}"))
}

/// The one run of a probe's `--json` output.
fn only_run(v: &Value) -> &Value {
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{v}");
    &runs[0]
}

#[test]
fn alsa_delay_is_parsed_from_its_own_lines() {
    let text = "playback :\n  nchan  : 32\nSignal below threshold...\n  2048.000 frames     42.667 ms\n 12288.500 frames    256.010 ms\n";
    assert_eq!(alsa_delay_frames(text), vec![2048.0, 12288.5]);
}

#[test]
fn round_trip_through_snd_aloop_agrees_with_alsa_delay_in_every_format() {
    if !enabled() {
        return;
    }
    let g = guest(Kernel::Stock);
    g.ok("30-roundtrip");
    for (period, periods) in [(1024u64, 2u64), (4096, 3)] {
        let reference = alsa_delay(g, &format!("alsa_delay-{period}.txt"));
        // Every format snd-aloop offers that audiolat converts.
        for (name, format) in [
            ("s16", Some("S16_LE")),
            ("s24_3", Some("S24_3LE")),
            ("s24", Some("S24_LE")),
            ("s32", Some("S32_LE")),
            ("float", Some("FLOAT_LE")),
            ("again", None),
        ] {
            let file = format!("rt-{period}-{name}.json");
            let v = g.clean_run(&format!("rt-{period}-{name}"));
            let run = only_run(&v);
            let r = &run["result"];
            assert_eq!(run["status"], "complete", "{file}: {run}");
            assert_eq!(r["xruns"], 0, "{file}: under-runs: {r}");
            assert_eq!(r["skipped_cycles"], 0, "{file}: {r}");
            let m = &r["roundtrip_frames"];
            assert!(
                m["count"].as_u64().unwrap_or(0) >= 1,
                "{file}: no window: {r}"
            );
            // The same figure in every window, and alsa_delay's.
            for stat in ["mean", "min", "max"] {
                let f = m[stat].as_f64().unwrap();
                assert!(
                    (f - reference).abs() <= 0.05,
                    "{file}: round trip {stat} {f} frames, alsa_delay {reference}"
                );
            }
            // What the device granted is what is recorded.
            let granted = &run["granted"];
            assert_eq!(granted["period_frames"], period, "{file}: {granted}");
            assert_eq!(
                granted["buffer_frames"],
                period * periods,
                "{file}: {granted}"
            );
            assert_eq!(granted["rate_hz"], 48000, "{file}: {granted}");
            assert_eq!(granted["access"], "RW_INTERLEAVED", "{file}: {granted}");
            if let Some(format) = format {
                assert_eq!(granted["format"], format, "{file}: {granted}");
            }
            // Linked, and started aligned.
            assert_eq!(granted["linked"], true, "{file}: {granted}");
            let start = &r["duplex_start"];
            assert_eq!(start["linked"], true, "{file}: {start}");
            assert_eq!(start["skew_frames"], 0, "{file}: {start}");
        }
        // aplay and arecord pass noise through the same loop at the same setting with
        // no xrun, and the recording holds it.
        for tool in ["aplay", "arecord"] {
            let out = g.file(&format!("{tool}-{period}.txt"));
            assert!(
                !out.contains("underrun") && !out.contains("overrun"),
                "{tool} at {period} x {periods}: {out}"
            );
        }
        let wav = std::fs::read(g.path(&format!("arecord-{period}.wav"))).expect("arecord's file");
        let loud = wav[44.min(wav.len())..]
            .chunks_exact(2)
            .filter(|s| i16::from_le_bytes([s[0], s[1]]).unsigned_abs() > 1000)
            .count();
        assert!(
            loud > 48_000,
            "arecord at {period}: only {loud} loud samples came back through the loop"
        );
    }
}

#[test]
fn a_round_trip_says_what_the_device_granted_and_how_it_started() {
    if !enabled() {
        return;
    }
    let g = guest(Kernel::Stock);
    let text = g.file("rt-text.txt");
    assert!(
        text.contains("device `hw:Loopback,0,0` -> `hw:Loopback,1,0`: granted ")
            && text.contains("period 1024 frames, buffer 2048 frames (2 periods), RW_INTERLEAVED")
            && text.contains("linked, started aligned"),
        "{text}"
    );
    // Under TCG the run says its times are the emulator's.
    assert_eq!(
        text.contains("virtual: QEMU (TCG)") && text.contains("an emulated CPU"),
        g.emulated(),
        "{text}"
    );
}

/// Rows of an event run that were not missed: (latency, measured loopback latency, the
/// callback's lateness), ns.
fn event_rows(run: &Value) -> Vec<(f64, Option<f64>, f64)> {
    run["triggers"]
        .as_array()
        .expect("triggers")
        .iter()
        .filter(|t| t["missed"] != true)
        .map(|t| {
            (
                t["latency_ns"].as_f64().unwrap(),
                t["measured_ns"].as_f64(),
                // Not measured where the device stamped its status after the callback
                // (the cycle's start is then the callback's own): no lateness, 0 here.
                t["lateness_ns"].as_f64().unwrap_or(0.0),
            )
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    assert!(n > 0);
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[test]
fn event_on_snd_dummy_holds_the_timing_model() {
    if !enabled() {
        return;
    }
    let g = guest(Kernel::Stock);
    g.ok("40-event");
    let frame_ns = 1e9 / 48_000.0;
    // fixed: one period + the buffer, within a frame.
    let v = g.clean_run("event-dummy-fixed");
    let run = only_run(&v);
    let model_ns = run["result"]["model_latency_ms"].as_f64().unwrap() * 1e6;
    let rows = event_rows(run);
    assert!(
        rows.len() >= 50,
        "{} of 60 triggers: {}",
        rows.len(),
        run["result"]
    );
    let errors: Vec<f64> = rows.iter().map(|r| (r.0 - model_ns).abs()).collect();
    let med = median(errors.clone());
    assert!(
        med <= frame_ns,
        "fixed on hw:Dummy: the median trigger is {:.2} frames off the model ({} ms); worst {:.1} frames",
        med / frame_ns,
        model_ns / 1e6,
        errors.iter().fold(0.0f64, |a, &b| a.max(b)) / frame_ns
    );
    // asap: half a period + the buffer on average. A trigger waits for the next cycle the
    // audio thread renders; the thread wakes `lateness` after its cycle's start, which
    // shortens the mean wait by that much. Tolerance: the mean lateness, and four
    // standard errors of the mean of n waits spread uniformly over a period.
    let v = g.clean_run("event-dummy-asap");
    let run = only_run(&v);
    let r = &run["result"];
    let model_ns = r["model_latency_ms"].as_f64().unwrap() * 1e6;
    let period_ns = r["period_frames"].as_f64().unwrap() * frame_ns;
    let rows = event_rows(run);
    let n = rows.len() as f64;
    assert!(n >= 50.0, "{n} of 60 triggers: {r}");
    let mean = rows.iter().map(|r| r.0).sum::<f64>() / n;
    let lateness = rows.iter().map(|r| r.2).sum::<f64>() / n;
    let tolerance = lateness.max(0.0) + 4.0 * period_ns / (12.0 * n).sqrt();
    assert!(
        (mean - model_ns).abs() <= tolerance,
        "asap on hw:Dummy: mean {:.3} ms, model {:.3} ms, tolerance {:.3} ms (lateness {:.3} ms)",
        mean / 1e6,
        model_ns / 1e6,
        tolerance / 1e6,
        lateness / 1e6
    );
}

#[test]
fn event_on_snd_aloop_finds_every_onset_where_the_model_puts_it() {
    if !enabled() {
        return;
    }
    let g = guest(Kernel::Stock);
    let frame_ns = 1e9 / 48_000.0;
    for policy in ["fixed", "asap"] {
        let file = format!("event-loopback-{policy}.json");
        let v = g.clean_run(&format!("event-loopback-{policy}"));
        let run = only_run(&v);
        let rows = event_rows(run);
        assert!(rows.len() >= 25, "{file}: {} of 30 triggers", rows.len());
        let granted = &run["granted"];
        assert_eq!(granted["linked"], true, "{file}: {granted}");
        for (latency, measured, _) in &rows {
            let measured = measured.unwrap_or_else(|| {
                panic!(
                    "{file}: a note's onset was not found in the capture: {}",
                    run["result"]
                )
            });
            assert!(
                (measured - latency).abs() <= frame_ns,
                "{file}: onset in the capture at {:.3} ms, model {:.3} ms",
                measured / 1e6,
                latency / 1e6
            );
        }
    }
    let text = g.file("event-text.txt");
    assert!(
        text.contains("loopback") && text.contains("linked, started aligned"),
        "{text}"
    );
}

#[test]
fn find_min_buffer_on_snd_aloop_stops_at_the_smallest_setting_that_held() {
    if !enabled() {
        return;
    }
    let g = guest(Kernel::Stock);
    g.ok("50-min-buffer");
    let v = g.clean_run("min-buffer");
    let held = &v["min_buffer"]["smallest_holding"];
    assert!(held.is_object(), "no setting held: {}", v["min_buffer"]);
    assert_eq!(held["xruns"], 0, "{held}");
    assert_eq!(held["skipped_cycles"], 0, "{held}");
    let period = held["period_frames"].as_u64().unwrap();
    assert_eq!(
        g.file("min-buffer-period.txt").trim(),
        period.to_string(),
        "alsa_delay ran at another setting"
    );
    let reference = alsa_delay(g, "alsa_delay-min.txt");
    let rt = held["roundtrip_frames"].as_f64().unwrap();
    assert!(
        (rt - reference).abs() <= 0.05,
        "smallest holding {period} x 2: round trip {rt} frames, alsa_delay {reference}"
    );
    // The walk went down in order and stopped at the first that failed (if one did).
    let runs = v["runs"].as_array().unwrap();
    let periods: Vec<u64> = runs
        .iter()
        .map(|r| r["result"]["period_frames"].as_u64().unwrap())
        .collect();
    assert!(periods.windows(2).all(|w| w[0] > w[1]), "{periods:?}");
    if let Some(failed) = v["min_buffer"]["first_failing"].as_object() {
        assert_eq!(failed["period_frames"], periods[periods.len() - 1]);
        assert!(failed["period_frames"].as_u64().unwrap() < period);
    }
}

#[test]
fn what_a_device_refuses_is_one_line_with_the_fix() {
    if !enabled() {
        return;
    }
    let g = guest(Kernel::Stock);
    g.ok("60-refusals");
    let refusal = |name: &str| {
        let rc = g.file(&format!("refuse-{name}.rc"));
        let err = g.file(&format!("refuse-{name}.err"));
        assert_eq!(rc.trim(), "2", "{name}: exit {rc}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: not one line: {err}");
        err
    };
    let err = refusal("format");
    assert!(
        err.contains("--format float")
            && err.contains("it takes s16")
            && err.contains("plughw:Dummy"),
        "{err}"
    );
    let err = refusal("rate");
    assert!(
        err.contains("--rate 96000") && err.contains("48000 Hz") && err.contains("plughw:Dummy"),
        "{err}"
    );
    let err = refusal("nodevice");
    assert!(
        err.contains("`hw:9` does not exist") && err.contains("audiolat devices"),
        "{err}"
    );
    // Busy: the device and what holds it.
    let err = refusal("busy");
    let pid = g.file("busy-holder.pid");
    assert!(
        err.contains("`hw:Loopback,0,0` is busy")
            && err.contains(&format!("aplay (pid {})", pid.trim())),
        "{err}"
    );
}
