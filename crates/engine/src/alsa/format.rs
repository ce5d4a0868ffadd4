//! The sample formats audiolat converts to and from: what `--format` names, and each
//! format's samples as f32.

use alsa::pcm::Format;

/// A sample format audiolat converts to and from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleFormat {
    /// 32-bit float (the `jack` PCM's only format).
    F32,
    /// 32-bit signed integer.
    S32,
    /// 24-bit signed integer in the low three bytes of four (`S24_LE`).
    S24,
    /// 24-bit signed integer packed in three bytes (`S24_3LE`: many USB interfaces take
    /// only this).
    S24Packed,
    /// 16-bit signed integer.
    S16,
}

impl SampleFormat {
    /// Every format audiolat converts, in its order of preference: without `--format`, the
    /// first one a device takes.
    pub const ALL: [SampleFormat; 5] = [
        SampleFormat::F32,
        SampleFormat::S32,
        SampleFormat::S24,
        SampleFormat::S24Packed,
        SampleFormat::S16,
    ];

    /// ALSA's name for the format (`FLOAT_LE`, `S32_LE`, `S24_LE`, `S24_3LE`, `S16_LE`).
    pub fn alsa_name(self) -> &'static str {
        match self {
            SampleFormat::F32 => "FLOAT_LE",
            SampleFormat::S32 => "S32_LE",
            SampleFormat::S24 => "S24_LE",
            SampleFormat::S24Packed => "S24_3LE",
            SampleFormat::S16 => "S16_LE",
        }
    }

    /// The name `--format` takes (`float`, `s32`, `s24`, `s24_3`, `s16`).
    pub fn flag_name(self) -> &'static str {
        match self {
            SampleFormat::F32 => "float",
            SampleFormat::S32 => "s32",
            SampleFormat::S24 => "s24",
            SampleFormat::S24Packed => "s24_3",
            SampleFormat::S16 => "s16",
        }
    }

    pub(crate) fn alsa(self) -> Format {
        match self {
            SampleFormat::F32 => Format::FloatLE,
            SampleFormat::S32 => Format::S32LE,
            SampleFormat::S24 => Format::S24LE,
            SampleFormat::S24Packed => Format::S243LE,
            SampleFormat::S16 => Format::S16LE,
        }
    }

    /// The format names, for messages: "float, s32, s24, s24_3 or s16".
    pub fn flag_names() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|f| f.flag_name()).collect();
        format!(
            "{} or {}",
            names[..names.len() - 1].join(", "),
            names[names.len() - 1]
        )
    }
}

impl std::fmt::Display for SampleFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.alsa_name())
    }
}

impl std::str::FromStr for SampleFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let lower = s.to_ascii_lowercase();
        SampleFormat::ALL
            .into_iter()
            .find(|f| lower == f.flag_name() || lower == f.alsa_name().to_ascii_lowercase())
            .or_else(|| (lower == "f32").then_some(SampleFormat::F32))
            .ok_or_else(|| {
                format!(
                    "unknown sample format `{s}`: use {}",
                    SampleFormat::flag_names()
                )
            })
    }
}

/// Samples of one format, converted from and to f32.
pub(crate) trait Sample: Copy + Default + alsa::pcm::IoFormat {
    fn from_f32(x: f32) -> Self;
    fn to_f32(self) -> f32;
}

impl Sample for f32 {
    fn from_f32(x: f32) -> f32 {
        x
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl Sample for i32 {
    fn from_f32(x: f32) -> i32 {
        (f64::from(x.clamp(-1.0, 1.0)) * f64::from(i32::MAX)) as i32
    }
    fn to_f32(self) -> f32 {
        (f64::from(self) / f64::from(i32::MAX)) as f32
    }
}

/// `S24_LE`: a 24-bit sample in the low three bytes of a little-endian 32-bit word.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub(crate) struct S24In32(pub(crate) i32);

impl alsa::pcm::IoFormat for S24In32 {
    const FORMAT: Format = Format::S24LE;
}

/// Full scale of a 24-bit sample.
const S24_FULL: f64 = 8_388_607.0;

impl Sample for S24In32 {
    fn from_f32(x: f32) -> S24In32 {
        S24In32((f64::from(x.clamp(-1.0, 1.0)) * S24_FULL) as i32)
    }
    fn to_f32(self) -> f32 {
        // The top byte is padding: sign-extend from bit 23.
        (f64::from((self.0 << 8) >> 8) / S24_FULL) as f32
    }
}

/// `S24_3LE`: a 24-bit sample packed in three little-endian bytes.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub(crate) struct S24Packed(pub(crate) [u8; 3]);

impl alsa::pcm::IoFormat for S24Packed {
    const FORMAT: Format = Format::S243LE;
}

impl Sample for S24Packed {
    fn from_f32(x: f32) -> S24Packed {
        let v = (f64::from(x.clamp(-1.0, 1.0)) * S24_FULL) as i32;
        let b = v.to_le_bytes();
        S24Packed([b[0], b[1], b[2]])
    }
    fn to_f32(self) -> f32 {
        let [a, b, c] = self.0;
        let v = i32::from_le_bytes([0, a, b, c]) >> 8;
        (f64::from(v) / S24_FULL) as f32
    }
}

impl Sample for i16 {
    fn from_f32(x: f32) -> i16 {
        (x.clamp(-1.0, 1.0) * f32::from(i16::MAX)) as i16
    }
    fn to_f32(self) -> f32 {
        f32::from(self) / f32::from(i16::MAX)
    }
}
