use super::*;
use std::mem::{align_of, size_of};

fn parse(text: &str) -> GpioSpec {
    text.parse()
        .unwrap_or_else(|e| panic!("`{text}` should parse: {e}"))
}

fn parse_err(text: &str) -> String {
    match text.parse::<GpioSpec>() {
        Ok(spec) => panic!("`{text}` should not parse, got {spec:?}"),
        Err(e) => {
            assert!(matches!(e, GpioError::InvalidSpec { .. }), "{e:?}");
            e.to_string()
        }
    }
}

fn spec(path: &str, line: u32) -> GpioSpec {
    GpioSpec {
        chip_path: PathBuf::from(path),
        line,
    }
}

#[test]
fn gpio_spec_parses_the_three_chip_forms() {
    assert_eq!(parse("gpiochip0:17"), spec("/dev/gpiochip0", 17));
    assert_eq!(parse("0:17"), spec("/dev/gpiochip0", 17));
    assert_eq!(parse("/dev/gpiochip2:5"), spec("/dev/gpiochip2", 5));
    assert_eq!(parse("gpiochip12:0"), spec("/dev/gpiochip12", 0));
    assert_eq!(parse("./chip:3"), spec("./chip", 3));
    assert_eq!(
        parse("/dev/gpio/by-name/a:b:4"),
        spec("/dev/gpio/by-name/a:b", 4)
    );
    assert_eq!(parse("gpiochip0:4294967295").line, u32::MAX);
}

#[test]
fn gpio_spec_displays_short_and_round_trips() {
    assert_eq!(parse("gpiochip0:17").to_string(), "gpiochip0:17");
    assert_eq!(parse("3:1").to_string(), "gpiochip3:1");
    assert_eq!(parse("/dev/gpiochip2:5").to_string(), "gpiochip2:5");
    assert_eq!(parse("/tmp/x:5").to_string(), "/tmp/x:5");
    assert_eq!(parse("gpiochip007:1").to_string(), "gpiochip7:1");
    assert_eq!(parse("/dev/gpiochip07:1").to_string(), "/dev/gpiochip07:1");
    for text in [
        "gpiochip0:17",
        "/tmp/a:b:2",
        "/dev/gpiochipfoo:1",
        "/dev/gpiochip07:1",
        "./c:0",
    ] {
        let spec = parse(text);
        assert_eq!(parse(&spec.to_string()), spec, "{text}");
    }
}

#[test]
fn gpio_spec_rejects_bad_forms_in_one_line() {
    let no_colon = parse_err("abc");
    assert_eq!(
        no_colon,
        "GPIO line `abc`: expected CHIP:LINE such as gpiochip0:17"
    );
    assert!(parse_err(":17").contains("the chip is missing"));
    assert!(parse_err("gpiochip0:").contains("the line is missing"));
    assert!(parse_err("").contains("expected CHIP:LINE"));
    assert!(parse_err("gpiochip0:x").contains("line `x` is not a line number"));
    assert!(parse_err("gpiochip0:-1").contains("line `-1`"));
    assert!(parse_err("gpiochip0:+1").contains("line `+1`"));
    assert!(parse_err("gpiochip0: 1").contains("line ` 1`"));
    assert!(parse_err("gpiochip0:4294967296").contains("not a line number"));
    assert!(parse_err("gpiochip0:17:3").contains("chip `gpiochip0:17`"));
    assert!(parse_err("chip0:1").contains("chip `chip0` is not gpiochipN"));
    assert!(parse_err("gpiochip:1").contains("chip `gpiochip`"));
    assert!(parse_err("-1:1").contains("chip `-1`"));
    for text in ["abc", ":1", "x:y", "gpiochip0:"] {
        let message = parse_err(text);
        assert!(!message.contains('\n'), "{message}");
        assert!(message.contains("gpiochip0:17"), "{message}");
    }
}

#[test]
fn kernel_struct_sizes_match_the_header() {
    assert_eq!(size_of::<GpioChipInfo>(), 68);
    assert_eq!(size_of::<GpioV2LineValues>(), 16);
    assert_eq!(size_of::<GpioV2LineAttribute>(), 16);
    assert_eq!(size_of::<GpioV2LineConfigAttribute>(), 24);
    assert_eq!(size_of::<GpioV2LineConfig>(), 272);
    assert_eq!(size_of::<GpioV2LineRequest>(), 592);
    // __aligned_u64 is 8-aligned on every architecture, also 32-bit x86.
    assert_eq!(align_of::<GpioV2LineRequest>(), 8);
    assert_eq!(align_of::<GpioV2LineValues>(), 8);
    assert_eq!(std::mem::offset_of!(GpioV2LineRequest, config), 288);
    assert_eq!(std::mem::offset_of!(GpioV2LineRequest, num_lines), 560);
    assert_eq!(std::mem::offset_of!(GpioV2LineRequest, fd), 588);
    assert_eq!(std::mem::offset_of!(GpioV2LineConfig, attrs), 32);
    assert_eq!(std::mem::offset_of!(GpioV2LineAttribute, value), 8);
}

#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "mips32r6",
    target_arch = "mips64r6",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
#[test]
fn ioctl_numbers_match_the_kernel() {
    // 0x80000000 read | 68 << 16 | 0xB4 << 8 | 0x01
    assert_eq!(GPIO_GET_CHIPINFO_IOCTL, 0x8044_B401);
    // 0xC0000000 read+write | 592 (0x250) << 16 | 0xB4 << 8 | 0x07
    assert_eq!(GPIO_V2_GET_LINE_IOCTL, 0xC250_B407);
    // 0xC0000000 read+write | 16 << 16 | 0xB4 << 8 | 0x0F
    assert_eq!(GPIO_V2_LINE_SET_VALUES_IOCTL, 0xC010_B40F);
}

#[test]
fn line_request_asks_for_one_output_line_driven_low() {
    let request = GpioV2LineRequest::output_low(17, "audiolat");
    assert_eq!(request.num_lines, 1);
    assert_eq!(request.offsets[0], 17);
    assert!(request.offsets[1..].iter().all(|&o| o == 0));
    assert_eq!(&request.consumer[..9], b"audiolat\0");
    assert_eq!(request.config.flags, GPIO_V2_LINE_FLAG_OUTPUT);
    assert_eq!(request.config.num_attrs, 1);
    let attr = request.config.attrs[0];
    assert_eq!(attr.attr.id, GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES);
    assert_eq!(attr.mask, 1);
    // SAFETY: `values` is the field that was written.
    assert_eq!(unsafe { attr.attr.value.values }, 0);
    assert_eq!(request.padding, [0; 5]);
    assert_eq!(request.config.padding, [0; 5]);
}

#[test]
fn consumer_label_is_cut_to_31_bytes_on_a_char_boundary() {
    let label = consumer_label(&"x".repeat(40));
    assert_eq!(&label[..31], "x".repeat(31).as_bytes());
    assert_eq!(label[31], 0);
    // 30 ASCII bytes then a 2-byte character: it must not be split.
    let label = consumer_label(&format!("{}é", "y".repeat(30)));
    assert_eq!(&label[..30], "y".repeat(30).as_bytes());
    assert_eq!(label[30], 0);
    assert_eq!(&consumer_label("a\0b")[..2], b"a\0");
    assert_eq!(consumer_label(""), [0; GPIO_MAX_NAME_SIZE]);
}

#[test]
fn open_on_a_missing_chip_names_the_path() {
    let missing =
        std::env::temp_dir().join(format!("audiolat-no-such-gpiochip-{}", std::process::id()));
    let spec = GpioSpec {
        chip_path: missing.clone(),
        line: 0,
    };
    let err = GpioLine::open(&spec, "audiolat").unwrap_err();
    assert!(matches!(err, GpioError::ChipMissing { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("no GPIO chip at {}: ", missing.display())),
        "{message}"
    );
    assert!(message.contains("measure without a GPIO line"), "{message}");
    assert!(!message.contains("--"), "{message}");
}

#[test]
fn chip_missing_message_lists_what_exists() {
    let none = GpioError::ChipMissing {
        path: PathBuf::from("/dev/gpiochip0"),
        available: vec![],
    };
    assert_eq!(
        none.to_string(),
        "no GPIO chip at /dev/gpiochip0: this machine exposes none (ls /dev/gpiochip*); measure without a GPIO line or name an existing chip"
    );
    let some = GpioError::ChipMissing {
        path: PathBuf::from("/dev/gpiochip3"),
        available: vec!["gpiochip0".into(), "gpiochip1".into()],
    };
    assert!(
        some.to_string()
            .contains("this machine has gpiochip0, gpiochip1"),
        "{some}"
    );
}

#[test]
fn open_on_a_character_device_that_is_not_gpio_says_so() {
    let err = GpioLine::open(&spec("/dev/null", 0), "audiolat").unwrap_err();
    assert!(matches!(err, GpioError::NotAGpioChip { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with("/dev/null is not a GPIO chip"),
        "{err}"
    );
}

#[test]
fn open_on_a_regular_file_or_directory_says_it_is_not_a_gpio_chip() {
    let file = std::env::temp_dir().join(format!("audiolat-gpio-test-{}", std::process::id()));
    std::fs::write(&file, b"").unwrap();
    let err = GpioLine::open(&spec(file.to_str().unwrap(), 0), "audiolat").unwrap_err();
    std::fs::remove_file(&file).unwrap();
    assert!(matches!(err, GpioError::NotAGpioChip { .. }), "{err:?}");

    let dir = std::env::temp_dir();
    let err = GpioLine::open(&spec(dir.to_str().unwrap(), 0), "audiolat").unwrap_err();
    // Opening a directory for writing fails with EISDIR, even for root.
    assert!(matches!(err, GpioError::NotAGpioChip { .. }), "{err:?}");
}

#[test]
fn error_messages_say_what_to_do() {
    let busy = GpioError::LineBusy {
        chip: "gpiochip0".into(),
        line: 17,
    };
    assert!(busy
        .to_string()
        .starts_with("line 17 of gpiochip0 is in use by another consumer"));
    let denied = GpioError::PermissionDenied {
        path: PathBuf::from("/dev/gpiochip0"),
    };
    assert!(denied.to_string().contains("run as root"), "{denied}");
    assert!(denied.to_string().contains("gpio group"), "{denied}");
    let range = GpioError::LineOutOfRange {
        chip: "gpiochip0".into(),
        line: 40,
        lines: 32,
    };
    assert_eq!(
        range.to_string(),
        "line 40 does not exist: gpiochip0 has 32 lines, 0 to 31; pick one of those (gpioinfo gpiochip0 lists them)"
    );
    let set = GpioError::Set {
        line: 17,
        high: true,
        source: io::Error::from_raw_os_error(libc::ENODEV),
    };
    assert!(
        set.to_string().starts_with("setting GPIO line 17 high: "),
        "{set}"
    );
    for err in [busy, denied, range, set] {
        assert!(!err.to_string().contains('\n'), "{err}");
    }
}

#[test]
fn gpio_line_can_move_to_the_trigger_thread() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<GpioLine>();
}
