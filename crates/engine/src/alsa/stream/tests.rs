use super::*;
use crate::audio::plug_advice;

#[test]
fn twenty_four_bit_samples_keep_their_sign_and_scale_both_ways() {
    for x in [0.0f32, 0.5, -0.5, 1.0, -1.0, 0.25e-3, -0.75] {
        let a = S24In32::from_f32(x);
        let b = S24Packed::from_f32(x);
        assert!((a.to_f32() - x).abs() < 2e-7, "S24_LE {x}: {}", a.to_f32());
        assert!((b.to_f32() - x).abs() < 2e-7, "S24_3LE {x}: {}", b.to_f32());
    }
    // Full scale and its bytes.
    assert_eq!(S24Packed::from_f32(1.0).0, [0xff, 0xff, 0x7f]);
    assert_eq!(S24Packed::from_f32(-1.0).0, [0x01, 0x00, 0x80]);
    assert_eq!(S24In32::from_f32(-1.0).0, -8_388_607);
    // A device may leave junk in S24_LE's padding byte: it is ignored.
    assert_eq!(
        S24In32(0x7f80_0000u32 as i32).to_f32(),
        -1.0 - 1.0 / 8_388_607.0
    );
    assert!(S24In32(0x1200_0001).to_f32() > 0.0);
    // Beyond full scale clamps.
    assert_eq!(S24Packed::from_f32(3.0).0, [0xff, 0xff, 0x7f]);
    assert_eq!(std::mem::size_of::<S24Packed>(), 3);
}

#[test]
fn formats_parse_by_flag_and_alsa_name_and_list_in_preference_order() {
    for f in SampleFormat::ALL {
        assert_eq!(f.flag_name().parse::<SampleFormat>(), Ok(f));
        assert_eq!(f.alsa_name().parse::<SampleFormat>(), Ok(f));
    }
    assert_eq!(
        "S24_3LE".parse::<SampleFormat>(),
        Ok(SampleFormat::S24Packed)
    );
    let err = "u8".parse::<SampleFormat>().unwrap_err();
    assert!(err.ends_with("use float, s32, s24, s24_3 or s16"), "{err}");
}

#[test]
fn a_refusal_points_to_the_plughw_twin_of_a_hw_device() {
    let rate = AlsaRefusal::Rate {
        asked: 44_100,
        runs: 48_000,
    };
    assert_eq!(
        plug_advice("hw:Dummy", &rate, "the device"),
        ": or use the device plughw:Dummy (alsa-lib's plug layer resamples)"
    );
    let format = AlsaRefusal::Format {
        asked: SampleFormat::S16,
        takes: vec![],
    };
    assert_eq!(
        plug_advice("hw:1,0,2", &format, "--device"),
        ": or use --device plughw:1,0,2 (alsa-lib's plug layer converts the format)"
    );
    assert!(plug_advice("default", &rate, "the device").contains("a plughw: device"));
    let period = AlsaRefusal::Period {
        asked: 100,
        nearest: 128,
    };
    assert_eq!(plug_advice("hw:0", &period, "the device"), "");
    let e = AudioError::AlsaRefused {
        device: "hw:0".into(),
        refusal: period,
    };
    assert_eq!(
        e.to_string(),
        "ALSA device `hw:0` refuses a period of 100 frames; the nearest it takes is 128"
    );
    let e = AudioError::AlsaRefused {
        device: "hw:0".into(),
        refusal: format,
    };
    assert_eq!(
        e.to_string(),
        "ALSA device `hw:0` does not take the sample format s16; it takes none of float, s32, s24, s24_3 or s16: or use the device plughw:0 (alsa-lib's plug layer converts the format)"
    );
}

#[test]
fn the_grant_is_json_with_alsa_names_and_the_link_error_escaped() {
    let g = AlsaGranted {
        rate_hz: 48_000,
        period_frames: 1024,
        buffer_frames: 2048,
        format: SampleFormat::S16,
        playback_channels: 2,
        capture_channels: None,
        linked: false,
        link_error: Some("Function \"link\" not implemented".into()),
        access: "RW_INTERLEAVED",
    };
    let text = g.to_json_string();
    assert!(text.contains("\"format\":\"S16_LE\""), "{text}");
    assert!(text.contains("\"capture_channels\":null"), "{text}");
    assert!(
        text.contains("\"link_error\":\"Function \\\"link\\\" not implemented\""),
        "{text}"
    );
}
