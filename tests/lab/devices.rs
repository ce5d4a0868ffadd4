//! `audiolat devices` on real kernel drivers (check `stock/20-devices.sh`): what it says
//! snd-aloop's and snd-dummy's devices accept is what aplay and arecord dump
//! (`--dump-hw-params`), its suggested flags run, and a device aplay holds is reported
//! busy with aplay's pid.

use serde_json::Value;

use crate::harness::{enabled, guest, Kernel};
use crate::util;

/// The `--dump-hw-params` block: `KEY: value` lines between the dashes.
fn dump(text: &str) -> Vec<(String, String)> {
    text.lines()
        .skip_while(|l| !l.starts_with("HW Params of device"))
        .skip(2)
        .take_while(|l| !l.starts_with("-----"))
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

fn field<'a>(d: &'a [(String, String)], key: &str) -> &'a str {
    d.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {key} in the dump: {d:?}"))
}

/// `[16 65536]`, `(5 65536000]` or a single `2`, as (min, max).
fn interval(v: &str) -> (u64, u64) {
    let nums: Vec<u64> = v
        .trim_matches(|c| matches!(c, '[' | ']' | '(' | ')'))
        .split_whitespace()
        .map(|n| n.parse().unwrap_or_else(|_| panic!("not a number in {v}")))
        .collect();
    match nums[..] {
        [one] => (one, one),
        [lo, hi] => (lo, hi),
        _ => panic!("not an interval: {v}"),
    }
}

fn sorted_words(v: &str) -> Vec<String> {
    let mut w: Vec<String> = v.split_whitespace().map(str::to_string).collect();
    w.sort();
    w
}

fn sorted_strings(v: &Value) -> Vec<String> {
    let mut w: Vec<String> = v
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    w.sort();
    w
}

/// The stream of card `id`, PCM device `device`, in `direction`.
fn stream<'a>(devices: &'a Value, id: &str, device: u64, direction: &str) -> &'a Value {
    let card = devices["alsa"]["cards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no card {id}: {devices}"));
    let pcm = card["pcm"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["device"] == device)
        .unwrap_or_else(|| panic!("card {id} has no device {device}: {card}"));
    let s = &pcm[direction];
    assert!(s.is_object(), "hw:{id},{device} has no {direction}: {pcm}");
    s
}

/// What `audiolat devices` says a stream accepts is what the reference dumped.
fn agrees(devices: &Value, id: &str, device: u64, direction: &str, reference: &str) {
    let s = stream(devices, id, device, direction);
    let d = dump(reference);
    assert!(!d.is_empty(), "no dump in:\n{reference}");
    let what = format!("hw:{id},{device} {direction}");
    assert_eq!(s["status"], "ok", "{what}: {s}");
    assert_eq!(
        sorted_strings(&s["formats"]),
        sorted_words(field(&d, "FORMAT")),
        "{what}: formats"
    );
    assert_eq!(
        sorted_strings(&s["access"]),
        sorted_words(field(&d, "ACCESS")),
        "{what}: access"
    );
    for (key, ours) in [
        ("CHANNELS", "channels"),
        ("RATE", "rate_hz"),
        ("PERIOD_SIZE", "period_frames"),
        ("BUFFER_SIZE", "buffer_frames"),
        ("PERIODS", "periods"),
    ] {
        let (lo, hi) = interval(field(&d, key));
        assert_eq!(
            (s[ours]["min"].as_u64(), s[ours]["max"].as_u64()),
            (Some(lo), Some(hi)),
            "{what}: {ours} against the dump's {key}"
        );
    }
}

#[test]
fn devices_lists_the_lab_cards_as_aplay_and_arecord_see_them() {
    if !enabled() {
        return;
    }
    let g = guest(Kernel::Stock);
    let out = g.ok("20-devices").out;
    let devices = g.json("devices.json");
    agrees(
        &devices,
        "Dummy",
        0,
        "playback",
        &g.file("aplay-dummy.dump"),
    );
    agrees(
        &devices,
        "Loopback",
        0,
        "playback",
        &g.file("aplay-loopback.dump"),
    );
    agrees(
        &devices,
        "Loopback",
        1,
        "capture",
        &g.file("arecord-loopback.dump"),
    );
    // audiolat's own formats among them; the dummy card takes S16 only.
    assert_eq!(
        stream(&devices, "Dummy", 0, "playback")["audiolat_formats"],
        serde_json::json!(["S16_LE"])
    );
    // The loop is offered, and the first playback suggestion ran.
    let args = util::suggested_args(&devices);
    assert!(
        args.contains(&"--backend alsa --device hw:Loopback,0,0 --capture-device hw:Loopback,1,0"),
        "{args:?}"
    );
    assert!(args.contains(&"--backend virtual"), "{args:?}");
    assert_eq!(
        g.file("suggested.rc").trim(),
        "0",
        "the suggested flags did not run ({}):\n{}\n{out}",
        g.file("suggested.tries").trim(),
        g.file("suggested.txt")
    );
}

#[test]
fn devices_names_the_program_that_holds_a_busy_device() {
    if !enabled() {
        return;
    }
    let g = guest(Kernel::Stock);
    let out = g.ok("20-devices").out;
    let pid: u64 = g.file("busy.pid").trim().parse().unwrap();
    let busy = g.json("busy.json");
    let s = stream(&busy, "Loopback", 0, "playback");
    let sub0 = &s["subdevice_list"][0];
    assert_eq!(sub0["state"], "RUNNING", "{s}");
    assert_eq!(sub0["holder"]["pid"].as_u64(), Some(pid), "{s}\n{out}");
    assert_eq!(sub0["holder"]["command"], "aplay", "{s}");
    assert_eq!(
        s["subdevices_available"].as_u64().unwrap() + 1,
        s["subdevices"].as_u64().unwrap(),
        "{s}"
    );
    // The other subdevices stay free, and the suggestions move to one of them.
    assert_eq!(s["status"], "ok", "{s}");
    let args = util::suggested_args(&busy);
    assert!(
        args.contains(&"--backend alsa --device hw:Loopback,0,1 --capture-device hw:Loopback,1,1"),
        "{args:?}"
    );
    // The ALSA backend's own error names the holder too.
    let event = g.file("busy-event.txt");
    assert_eq!(g.file("busy-event.rc").trim(), "2", "{event}");
    assert!(
        event.contains(&format!("is busy: aplay (pid {pid}) holds it"))
            && event.contains("audiolat devices"),
        "{event}"
    );
}
