//! A GPIO output line that marks trigger instants for an oscilloscope.
//!
//! `audiolat event --gpio CHIP:LINE` raises a GPIO line at the instant of each trigger
//! and lowers it after the note, so a scope probing both the line and the audio output
//! can check the event-to-audio latency audiolat measured (the method of the
//! BeagleBone Black latency study).
//!
//! The line is driven through the Linux GPIO character device, uAPI v2
//! (`/dev/gpiochipN`, Linux 5.10 or later); no sysfs and no libgpiod.
//!
//! Real-time contract:
//!
//! - [`GpioLine::open`] may allocate and block (it opens the chip, asks the kernel
//!   about it and requests the line). Call it before the measuring loop, from any
//!   thread.
//! - [`GpioLine::set`] is one `ioctl`: no allocation, no lock, no logging, not even on
//!   failure, so the trigger thread may call it every cycle. On a SoC GPIO the ioctl
//!   takes microseconds; on a chip behind I2C or SPI (a port expander) it blocks for
//!   the bus transfer, hundreds of microseconds, which is then part of what the scope
//!   shows: use a SoC line for latency checks.
//! - Dropping a [`GpioLine`] drives the line low and then releases it.
//!
//! ```no_run
//! use engine::gpio::{GpioLine, GpioSpec};
//! let spec: GpioSpec = "gpiochip0:17".parse()?;
//! let line = GpioLine::open(&spec, "audiolat")?; // before the loop: may block
//! line.set(true)?; // on the real-time thread: one ioctl
//! line.set(false)?;
//! # Ok::<(), engine::gpio::GpioError>(())
//! ```

use std::fmt;
use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

const EXAMPLE: &str = "expected CHIP:LINE such as gpiochip0:17";

/// `"CHIP:LINE"` as typed: CHIP is `gpiochip0`, `0` or a path like `/dev/gpiochip2`;
/// LINE a line offset on that chip.
///
/// `gpiochipN` and `N` both mean `/dev/gpiochipN`. [`Display`](fmt::Display) prints the
/// short form (`gpiochip0:17`) for chips under `/dev` and the whole path otherwise, and
/// what it prints parses back to the same value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpioSpec {
    /// The chip's character device, such as `/dev/gpiochip0`.
    pub chip_path: PathBuf,
    /// The line's offset on the chip (0 is the chip's first line).
    pub line: u32,
}

impl GpioSpec {
    /// The chip as a user names it: `gpiochip0` for `/dev/gpiochip0`, else the path.
    fn chip_name(&self) -> String {
        if self.chip_path.parent() == Some(Path::new("/dev")) {
            if let Some(name) = self.chip_path.file_name().and_then(|n| n.to_str()) {
                // Only the canonical spelling: `gpiochip07` would parse back as gpiochip7.
                if let Some(number) = parse_gpiochip_name(name) {
                    if name == format!("gpiochip{number}") {
                        return name.to_owned();
                    }
                }
            }
        }
        self.chip_path.display().to_string()
    }
}

/// `gpiochip17` → 17.
fn parse_gpiochip_name(name: &str) -> Option<u32> {
    parse_decimal(name.strip_prefix("gpiochip")?)
}

/// Plain decimal digits only: no sign, no spaces.
fn parse_decimal(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

impl FromStr for GpioSpec {
    type Err = GpioError;

    fn from_str(text: &str) -> Result<GpioSpec, GpioError> {
        let bad = |problem: String| GpioError::InvalidSpec {
            text: text.to_owned(),
            problem,
        };
        let Some((chip, line)) = text.rsplit_once(':') else {
            return Err(bad(EXAMPLE.to_owned()));
        };
        if chip.is_empty() {
            return Err(bad(format!("the chip is missing; {EXAMPLE}")));
        }
        if line.is_empty() {
            return Err(bad(format!("the line is missing; {EXAMPLE}")));
        }
        let chip_path = if chip.contains('/') {
            PathBuf::from(chip)
        } else if let Some(number) = parse_decimal(chip).or_else(|| parse_gpiochip_name(chip)) {
            PathBuf::from(format!("/dev/gpiochip{number}"))
        } else {
            return Err(bad(format!(
                "chip `{chip}` is not gpiochipN, N or a path such as /dev/gpiochip0; {EXAMPLE}"
            )));
        };
        let Some(line) = parse_decimal(line) else {
            return Err(bad(format!(
                "line `{line}` is not a line number (0, 1, 2, ...); {EXAMPLE}"
            )));
        };
        Ok(GpioSpec { chip_path, line })
    }
}

impl fmt::Display for GpioSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.chip_name(), self.line)
    }
}

/// Why a GPIO line could not be parsed, opened or driven. Each message is one line
/// and says what the user can do.
#[derive(Debug, thiserror::Error)]
pub enum GpioError {
    /// The `--gpio` text is not `CHIP:LINE`.
    #[error("--gpio `{text}`: {problem}")]
    InvalidSpec {
        /// What was typed.
        text: String,
        /// What is wrong with it, and the expected form.
        problem: String,
    },
    /// Nothing exists at the chip path.
    #[error("no GPIO chip at {}: {}", .path.display(), describe_available(.available))]
    ChipMissing {
        /// The path that was tried.
        path: PathBuf,
        /// The `gpiochipN` devices this machine does have (possibly none).
        available: Vec<String>,
    },
    /// The chip exists but this user may not open it.
    #[error("permission denied opening {}: run as root, or add your user to the gpio group (sudo usermod -aG gpio $USER, then log in again)", .path.display())]
    PermissionDenied {
        /// The chip's path.
        path: PathBuf,
    },
    /// The path is not a GPIO character device (the kernel refused the GPIO ioctl).
    #[error("{} is not a GPIO chip: name a GPIO character device such as gpiochip0 (ls /dev/gpiochip*)", .path.display())]
    NotAGpioChip {
        /// The path that was opened.
        path: PathBuf,
    },
    /// The chip has no line with this offset.
    #[error("{}", describe_out_of_range(.chip, *.line, *.lines))]
    LineOutOfRange {
        /// The chip as the user named it.
        chip: String,
        /// The offset asked for.
        line: u32,
        /// How many lines the chip has (valid offsets are `0..lines`).
        lines: u32,
    },
    /// Another consumer (a driver, another program) holds the line.
    #[error("line {line} of {chip} is in use by another consumer: stop it or choose another line (gpioinfo {chip} shows who holds it)")]
    LineBusy {
        /// The chip as the user named it.
        chip: String,
        /// The offset asked for.
        line: u32,
    },
    /// A system call failed while opening the line.
    #[error("{operation}: {source}")]
    Io {
        /// What was being done, such as "requesting line 17 of gpiochip0 as an output".
        operation: String,
        /// The error the kernel returned.
        source: io::Error,
    },
    /// [`GpioLine::set`] failed. Holds no allocation, so it can be made on a
    /// real-time thread.
    #[error("setting GPIO line {line} {}: {source}; check the chip is still present", if *.high { "high" } else { "low" })]
    Set {
        /// The line's offset.
        line: u32,
        /// The level that was being set.
        high: bool,
        /// The error the kernel returned.
        source: io::Error,
    },
}

fn describe_available(available: &[String]) -> String {
    if available.is_empty() {
        "this machine exposes none (ls /dev/gpiochip*); drop --gpio or name an existing chip"
            .to_owned()
    } else {
        format!(
            "this machine has {} (ls /dev/gpiochip*); name one of those or drop --gpio",
            available.join(", ")
        )
    }
}

fn describe_out_of_range(chip: &str, line: u32, lines: u32) -> String {
    match lines {
        0 => format!("line {line} does not exist: {chip} has no lines; name another chip"),
        1 => format!("line {line} does not exist: {chip} has 1 line, line 0"),
        _ => format!(
            "line {line} does not exist: {chip} has {lines} lines, 0 to {}; pick one of those (gpioinfo {chip} lists them)",
            lines - 1
        ),
    }
}

/// The `gpiochipN` entries of `/dev`, in numeric order.
fn available_chips() -> Vec<String> {
    let mut chips: Vec<(u32, String)> = std::fs::read_dir("/dev")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            Some((parse_gpiochip_name(&name)?, name))
        })
        .collect();
    chips.sort();
    chips.into_iter().map(|(_, name)| name).collect()
}

/// An output line held for the life of the value; dropping it drives the line low and
/// releases it.
///
/// After release the kernel hands the line back to its driver, which may keep it low
/// or return it to its default state.
#[derive(Debug)]
pub struct GpioLine {
    /// The line request's file descriptor (from `GPIO_V2_GET_LINE_IOCTL`).
    request_fd: OwnedFd,
    spec: GpioSpec,
}

impl GpioLine {
    /// Opens the chip, checks the line exists, requests it as an output, initially low,
    /// with the given consumer label (e.g. "audiolat"; cut to 31 bytes).
    ///
    /// May allocate and block: call it before the real-time loop.
    pub fn open(spec: &GpioSpec, consumer: &str) -> Result<GpioLine, GpioError> {
        let chip_name = spec.chip_name();
        let path = &spec.chip_path;
        let chip = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|source| match source.kind() {
                io::ErrorKind::NotFound => GpioError::ChipMissing {
                    path: path.clone(),
                    available: available_chips(),
                },
                io::ErrorKind::PermissionDenied => {
                    GpioError::PermissionDenied { path: path.clone() }
                }
                _ if source.raw_os_error() == Some(libc::EISDIR) => {
                    GpioError::NotAGpioChip { path: path.clone() }
                }
                _ => GpioError::Io {
                    operation: format!("opening {}", path.display()),
                    source,
                },
            })?;
        // A GPIO chip is a character device; don't send GPIO ioctls to anything else.
        let is_char_device = chip
            .metadata()
            .map(|m| m.file_type().is_char_device())
            .map_err(|source| GpioError::Io {
                operation: format!("reading the file type of {}", path.display()),
                source,
            })?;
        if !is_char_device {
            return Err(GpioError::NotAGpioChip { path: path.clone() });
        }

        let mut info = GpioChipInfo {
            name: [0; GPIO_MAX_NAME_SIZE],
            label: [0; GPIO_MAX_NAME_SIZE],
            lines: 0,
        };
        // SAFETY: `chip` is an open file descriptor; GPIO_GET_CHIPINFO_IOCTL takes a
        // pointer to a `struct gpiochip_info`, which `GpioChipInfo` mirrors (size checked
        // by a test), and `info` is valid and writable for the duration of the call. A
        // device that does not know the request fails it without touching the memory.
        let status = unsafe {
            libc::ioctl(
                chip.as_raw_fd(),
                GPIO_GET_CHIPINFO_IOCTL as _,
                &mut info as *mut GpioChipInfo,
            )
        };
        if status == -1 {
            let source = io::Error::last_os_error();
            return Err(match source.raw_os_error() {
                Some(libc::ENOTTY) | Some(libc::EINVAL) => {
                    GpioError::NotAGpioChip { path: path.clone() }
                }
                _ => GpioError::Io {
                    operation: format!("reading chip information of {chip_name}"),
                    source,
                },
            });
        }
        if spec.line >= info.lines {
            return Err(GpioError::LineOutOfRange {
                chip: chip_name,
                line: spec.line,
                lines: info.lines,
            });
        }

        let mut request = GpioV2LineRequest::output_low(spec.line, consumer);
        // SAFETY: `chip` is an open GPIO chip (GPIO_GET_CHIPINFO_IOCTL succeeded on it);
        // GPIO_V2_GET_LINE_IOCTL takes a pointer to a `struct gpio_v2_line_request`,
        // which `GpioV2LineRequest` mirrors (size checked by a test), fully initialised
        // with reserved fields zero; `request` is valid and writable during the call.
        let status = unsafe {
            libc::ioctl(
                chip.as_raw_fd(),
                GPIO_V2_GET_LINE_IOCTL as _,
                &mut request as *mut GpioV2LineRequest,
            )
        };
        if status == -1 {
            let source = io::Error::last_os_error();
            return Err(match source.raw_os_error() {
                Some(libc::EBUSY) => GpioError::LineBusy {
                    chip: chip_name,
                    line: spec.line,
                },
                Some(libc::ENOTTY) => GpioError::Io {
                    operation: format!(
                        "requesting line {} of {chip_name}: this kernel lacks the GPIO v2 interface (needs Linux 5.10 or later)",
                        spec.line
                    ),
                    source,
                },
                _ => GpioError::Io {
                    operation: format!(
                        "requesting line {} of {chip_name} as an output (is it an input-only or reserved line?)",
                        spec.line
                    ),
                    source,
                },
            });
        }
        if request.fd <= 0 {
            return Err(GpioError::Io {
                operation: format!(
                    "requesting line {} of {chip_name}: the kernel returned no file descriptor",
                    spec.line
                ),
                source: io::Error::from(io::ErrorKind::InvalidData),
            });
        }
        // SAFETY: on success the kernel stored a new file descriptor for the line
        // request in `request.fd`; nothing else knows it, so this takes sole ownership.
        let request_fd = unsafe { OwnedFd::from_raw_fd(request.fd) };
        Ok(GpioLine {
            request_fd,
            spec: spec.clone(),
        })
    }

    /// Sets the line high or low: one ioctl, no allocation (also on error), suitable
    /// for a real-time thread.
    pub fn set(&self, high: bool) -> Result<(), GpioError> {
        let mut values = GpioV2LineValues {
            bits: u64::from(high),
            mask: 1,
        };
        // SAFETY: `request_fd` is the open line request fd returned by
        // GPIO_V2_GET_LINE_IOCTL; GPIO_V2_LINE_SET_VALUES_IOCTL takes a pointer to a
        // `struct gpio_v2_line_values`, which `GpioV2LineValues` mirrors (size checked by
        // a test); `values` is valid and writable during the call.
        let status = unsafe {
            libc::ioctl(
                self.request_fd.as_raw_fd(),
                GPIO_V2_LINE_SET_VALUES_IOCTL as _,
                &mut values as *mut GpioV2LineValues,
            )
        };
        if status == -1 {
            return Err(GpioError::Set {
                line: self.spec.line,
                high,
                source: io::Error::last_os_error(),
            });
        }
        Ok(())
    }

    /// The chip and line this value holds.
    pub fn spec(&self) -> &GpioSpec {
        &self.spec
    }
}

impl Drop for GpioLine {
    fn drop(&mut self) {
        // Best effort: if the chip is gone there is nothing left to lower.
        let _ = self.set(false);
    }
}

// ---------------------------------------------------------------------------------
// The kernel's uAPI, from include/uapi/linux/gpio.h. Field order, array sizes and the
// explicit padding match the header; the tests check the sizes.

const GPIO_MAX_NAME_SIZE: usize = 32;
const GPIO_V2_LINES_MAX: usize = 64;
const GPIO_V2_LINE_NUM_ATTRS_MAX: usize = 10;

/// `enum gpio_v2_line_flag`: GPIO_V2_LINE_FLAG_OUTPUT.
const GPIO_V2_LINE_FLAG_OUTPUT: u64 = 1 << 3;
/// `enum gpio_v2_line_attr_id`: GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES.
const GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES: u32 = 2;

/// `struct gpiochip_info`.
#[repr(C)]
struct GpioChipInfo {
    name: [u8; GPIO_MAX_NAME_SIZE],
    label: [u8; GPIO_MAX_NAME_SIZE],
    lines: u32,
}

/// `struct gpio_v2_line_values`.
#[repr(C, align(8))]
struct GpioV2LineValues {
    bits: u64,
    mask: u64,
}

/// The anonymous union in `struct gpio_v2_line_attribute`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
#[allow(dead_code)] // `flags` and `debounce_period_us` exist for layout only
union GpioV2LineAttributeValue {
    flags: u64,
    values: u64,
    debounce_period_us: u32,
}

/// `struct gpio_v2_line_attribute`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct GpioV2LineAttribute {
    id: u32,
    padding: u32,
    value: GpioV2LineAttributeValue,
}

/// `struct gpio_v2_line_config_attribute`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct GpioV2LineConfigAttribute {
    attr: GpioV2LineAttribute,
    mask: u64,
}

/// `struct gpio_v2_line_config`.
#[repr(C, align(8))]
struct GpioV2LineConfig {
    flags: u64,
    num_attrs: u32,
    padding: [u32; 5],
    attrs: [GpioV2LineConfigAttribute; GPIO_V2_LINE_NUM_ATTRS_MAX],
}

/// `struct gpio_v2_line_request`.
#[repr(C, align(8))]
struct GpioV2LineRequest {
    offsets: [u32; GPIO_V2_LINES_MAX],
    consumer: [u8; GPIO_MAX_NAME_SIZE],
    config: GpioV2LineConfig,
    num_lines: u32,
    event_buffer_size: u32,
    padding: [u32; 5],
    fd: i32,
}

impl GpioV2LineRequest {
    /// A request for one line as an output, driven low from the start. The consumer
    /// label is cut at a NUL or to fit the kernel's 31 bytes, on a character boundary.
    fn output_low(line: u32, consumer: &str) -> GpioV2LineRequest {
        let unused_attr = GpioV2LineConfigAttribute {
            attr: GpioV2LineAttribute {
                id: 0,
                padding: 0,
                value: GpioV2LineAttributeValue { values: 0 },
            },
            mask: 0,
        };
        let mut attrs = [unused_attr; GPIO_V2_LINE_NUM_ATTRS_MAX];
        // Bit 0 of `mask` and `values` is the first (only) requested line: low.
        attrs[0] = GpioV2LineConfigAttribute {
            attr: GpioV2LineAttribute {
                id: GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES,
                padding: 0,
                value: GpioV2LineAttributeValue { values: 0 },
            },
            mask: 1,
        };
        let mut offsets = [0; GPIO_V2_LINES_MAX];
        offsets[0] = line;
        GpioV2LineRequest {
            offsets,
            consumer: consumer_label(consumer),
            config: GpioV2LineConfig {
                flags: GPIO_V2_LINE_FLAG_OUTPUT,
                num_attrs: 1,
                padding: [0; 5],
                attrs,
            },
            num_lines: 1,
            event_buffer_size: 0,
            padding: [0; 5],
            fd: 0,
        }
    }
}

/// `consumer` as a NUL-terminated C string of at most 31 bytes.
fn consumer_label(consumer: &str) -> [u8; GPIO_MAX_NAME_SIZE] {
    let consumer = consumer.split('\0').next().unwrap_or("");
    let mut len = consumer.len().min(GPIO_MAX_NAME_SIZE - 1);
    while !consumer.is_char_boundary(len) {
        len -= 1;
    }
    let mut label = [0; GPIO_MAX_NAME_SIZE];
    label[..len].copy_from_slice(&consumer.as_bytes()[..len]);
    label
}

/// The ioctl number encoding of `include/uapi/asm-generic/ioctl.h`, with the direction
/// and size fields of the architectures that override it.
#[cfg(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "mips32r6",
    target_arch = "mips64r6",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "sparc",
    target_arch = "sparc64"
))]
mod ioc {
    pub const SIZE_BITS: u32 = 13;
    pub const WRITE: u32 = 4;
    pub const READ: u32 = 2;
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
mod ioc {
    pub const SIZE_BITS: u32 = 14;
    pub const WRITE: u32 = 1;
    pub const READ: u32 = 2;
}

/// `_IOC(dir, type, nr, size)`: nr in bits 0-7, type in 8-15, size from bit 16, the
/// direction above it.
const fn ioc_number(direction: u32, kind: u8, number: u8, size: usize) -> u32 {
    assert!(size < 1 << ioc::SIZE_BITS, "ioctl argument too large");
    (direction << (16 + ioc::SIZE_BITS))
        | ((size as u32) << 16)
        | ((kind as u32) << 8)
        | number as u32
}

/// `_IOR(type, nr, T)`: the kernel writes a `T`.
const fn ior<T>(kind: u8, number: u8) -> u32 {
    ioc_number(ioc::READ, kind, number, std::mem::size_of::<T>())
}

/// `_IOWR(type, nr, T)`: the kernel reads and writes a `T`.
const fn iowr<T>(kind: u8, number: u8) -> u32 {
    ioc_number(
        ioc::READ | ioc::WRITE,
        kind,
        number,
        std::mem::size_of::<T>(),
    )
}

/// The GPIO ioctl type, 0xB4.
const GPIO_IOCTL_TYPE: u8 = 0xB4;
const GPIO_GET_CHIPINFO_IOCTL: u32 = ior::<GpioChipInfo>(GPIO_IOCTL_TYPE, 0x01);
const GPIO_V2_GET_LINE_IOCTL: u32 = iowr::<GpioV2LineRequest>(GPIO_IOCTL_TYPE, 0x07);
const GPIO_V2_LINE_SET_VALUES_IOCTL: u32 = iowr::<GpioV2LineValues>(GPIO_IOCTL_TYPE, 0x0F);

#[cfg(test)]
mod tests {
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
            "--gpio `abc`: expected CHIP:LINE such as gpiochip0:17"
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
        assert!(message.contains("drop --gpio"), "{message}");
    }

    #[test]
    fn chip_missing_message_lists_what_exists() {
        let none = GpioError::ChipMissing {
            path: PathBuf::from("/dev/gpiochip0"),
            available: vec![],
        };
        assert_eq!(
            none.to_string(),
            "no GPIO chip at /dev/gpiochip0: this machine exposes none (ls /dev/gpiochip*); drop --gpio or name an existing chip"
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
}
