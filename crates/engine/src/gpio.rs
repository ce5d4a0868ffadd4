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
use std::fs::{File, OpenOptions};
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
    /// A GPIO line's text is not `CHIP:LINE`.
    #[error("GPIO line `{text}`: {problem}")]
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
        "this machine exposes none (ls /dev/gpiochip*); measure without a GPIO line or name an existing chip"
            .to_owned()
    } else {
        format!(
            "this machine has {} (ls /dev/gpiochip*); name one of those or measure without a GPIO line",
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
        let chip = open_chip(&spec.chip_path)?;
        let info = chip_info(&chip, &spec.chip_path, &chip_name)?;
        if spec.line >= info.lines {
            return Err(GpioError::LineOutOfRange {
                chip: chip_name,
                line: spec.line,
                lines: info.lines,
            });
        }
        let request_fd = request_output_low(&chip, spec.line, &chip_name, consumer)?;
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

/// Opens a GPIO chip's character device for reading and writing, refusing anything
/// that is not a character device.
fn open_chip(path: &Path) -> Result<File, GpioError> {
    let chip = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => GpioError::ChipMissing {
                path: path.to_path_buf(),
                available: available_chips(),
            },
            io::ErrorKind::PermissionDenied => GpioError::PermissionDenied {
                path: path.to_path_buf(),
            },
            _ if source.raw_os_error() == Some(libc::EISDIR) => GpioError::NotAGpioChip {
                path: path.to_path_buf(),
            },
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
        return Err(GpioError::NotAGpioChip {
            path: path.to_path_buf(),
        });
    }
    Ok(chip)
}

/// The chip's name, label and number of lines (`GPIO_GET_CHIPINFO_IOCTL`).
fn chip_info(chip: &File, path: &Path, chip_name: &str) -> Result<GpioChipInfo, GpioError> {
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
            Some(libc::ENOTTY) | Some(libc::EINVAL) => GpioError::NotAGpioChip {
                path: path.to_path_buf(),
            },
            _ => GpioError::Io {
                operation: format!("reading chip information of {chip_name}"),
                source,
            },
        });
    }
    Ok(info)
}

/// Requests `line` as an output driven low (`GPIO_V2_GET_LINE_IOCTL`): the request's file
/// descriptor.
fn request_output_low(
    chip: &File,
    line: u32,
    chip_name: &str,
    consumer: &str,
) -> Result<OwnedFd, GpioError> {
    let mut request = GpioV2LineRequest::output_low(line, consumer);
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
                chip: chip_name.to_string(),
                line,
            },
            Some(libc::ENOTTY) => GpioError::Io {
                operation: format!(
                    "requesting line {} of {chip_name}: this kernel lacks the GPIO v2 interface (needs Linux 5.10 or later)",
                    line
                ),
                source,
            },
            _ => GpioError::Io {
                operation: format!(
                    "requesting line {} of {chip_name} as an output (is it an input-only or reserved line?)",
                    line
                ),
                source,
            },
        });
    }
    if request.fd <= 0 {
        return Err(GpioError::Io {
            operation: format!(
                "requesting line {} of {chip_name}: the kernel returned no file descriptor",
                line
            ),
            source: io::Error::from(io::ErrorKind::InvalidData),
        });
    }
    // SAFETY: on success the kernel stored a new file descriptor for the line
    // request in `request.fd`; nothing else knows it, so this takes sole ownership.
    Ok(unsafe { OwnedFd::from_raw_fd(request.fd) })
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
mod tests;
