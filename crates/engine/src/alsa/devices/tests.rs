use super::*;

#[test]
fn a_closed_subdevice_has_no_owner() {
    let s = parse_pcm_status("closed\n");
    assert_eq!(s.state.as_deref(), Some("closed"));
    assert_eq!(s.owner_pid, None);
}

#[test]
fn a_running_subdevice_names_its_owner() {
    // /proc/asound/card0/pcm0p/sub0/status while `aplay -D hw:Loopback,0,0 -f S16_LE
    // -r 48000 -c 2 /dev/zero` plays (Debian's 6.1.0-56-amd64, snd-aloop, kernel lab).
    let text = "state: RUNNING\n\
                owner_pid   : 149\n\
                trigger_time: 18.924619913\n\
                tstamp      : 0.000000000\n\
                delay       : 23232\n\
                avail       : 768\n\
                avail_max   : 18000\n\
                -----\n\
                hw_ptr      : 97152\n\
                appl_ptr    : 120384\n";
    let s = parse_pcm_status(text);
    assert_eq!(s.state.as_deref(), Some("RUNNING"));
    assert_eq!(s.owner_pid, Some(149));
    // A kernel without the owner line, or an owner of 0, names nobody.
    let s = parse_pcm_status("state: PREPARED\nowner_pid   : 0\n");
    assert_eq!(s.state.as_deref(), Some("PREPARED"));
    assert_eq!(s.owner_pid, None);
}

#[test]
fn pcm_names_split_into_card_device_and_subdevice() {
    // Names as `aplay -L` lists them, and as users type them.
    let n = parse_pcm_name("plughw:CARD=Loopback,DEV=1");
    assert_eq!(n.plugin, "plughw");
    assert_eq!(n.card.as_deref(), Some("Loopback"));
    assert_eq!(n.device, Some(1));
    assert_eq!(n.subdevice, None);
    let n = parse_pcm_name("hw:Loopback,1,0");
    assert_eq!(
        (n.plugin.as_str(), n.card.as_deref(), n.device, n.subdevice),
        ("hw", Some("Loopback"), Some(1), Some(0))
    );
    let n = parse_pcm_name("hw:0");
    assert_eq!((n.card.as_deref(), n.device), (Some("0"), None));
    let n = parse_pcm_name("sysdefault:CARD=Dummy");
    assert_eq!(
        (n.plugin.as_str(), n.card.as_deref()),
        ("sysdefault", Some("Dummy"))
    );
    let n = parse_pcm_name("jack");
    assert_eq!((n.plugin.as_str(), n.card), ("jack", None));
    let n = parse_pcm_name("hw:CARD=Dummy,DEV=0,SUBDEV=3");
    assert_eq!(n.subdevice, Some(3));
}

#[test]
fn descriptions_keep_their_first_line() {
    // snd_device_name_get_hint(DESC) of `plughw:CARD=Loopback,DEV=0`.
    let desc = "Loopback, Loopback PCM\nHardware device with all software conversions";
    assert_eq!(first_line(desc).as_deref(), Some("Loopback, Loopback PCM"));
    assert_eq!(first_line("\n  \n"), None);
}

#[test]
fn a_pid_that_is_not_there_still_gives_a_holder() {
    let h = holder_of_pid(u32::MAX - 1);
    assert_eq!(h.pid, u32::MAX - 1);
    assert_eq!(h.command, "?");
    let me = holder_of_pid(std::process::id());
    assert_eq!(me.pid, std::process::id());
    assert_ne!(me.command, "?");
}

#[test]
fn format_and_access_names_are_alsa_libs() {
    assert_eq!(format_name(Format::S16LE).as_deref(), Some("S16_LE"));
    assert_eq!(format_name(Format::FloatLE).as_deref(), Some("FLOAT_LE"));
    assert_eq!(
        access_name(Access::RWInterleaved).as_deref(),
        Some("RW_INTERLEAVED")
    );
    for f in SampleFormat::ALL {
        assert!(Format::all()
            .iter()
            .any(|a| format_name(*a).as_deref() == Some(f.alsa_name())));
    }
}

#[test]
fn bounds_exclude_only_what_they_know() {
    let b = Bounds {
        min: Some(64u64),
        max: None,
    };
    assert!(b.contains(64) && b.contains(1 << 20) && !b.contains(32));
    assert!(Bounds::<u32>::default().contains(0));
}

#[test]
fn the_inventory_reads_without_a_sound_card() {
    // On a machine without cards this is empty, on one with cards each device was
    // opened and closed; either way nothing panics and alsa-lib's names are listed.
    let inv = inventory();
    for card in &inv.cards {
        assert!(!card.id.is_empty());
    }
    if inv.names_error.is_none() {
        assert!(inv.knows("null") || inv.knows("default"), "{:?}", inv.names);
    }
}
