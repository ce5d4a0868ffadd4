//! One page of a per-CPU ring buffer as `trace_pipe_raw` hands it over, split into
//! its records with their absolute timestamps.
//!
//! The layout is the kernel's (`kernel/trace/ring_buffer.c`), described by
//! `events/header_page` and `events/header_event`: a page header (the page's first
//! timestamp, then `commit`, the bytes of data with two flags for events lost before
//! the page), then records, each a 32-bit header of a 5-bit `type_len` and a 27-bit
//! time delta. A `type_len` of 1..=28 is a record of that many 32-bit words; 0 a
//! record whose length is in its first word; 29 padding; 30 a time extension; 31 an
//! absolute time stamp.

use std::fmt;

/// Where the page header keeps what, read from `events/header_page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// Offset of `commit` in the page.
    pub commit_offset: usize,
    /// Size of `commit` (the kernel's `long`).
    pub commit_size: usize,
    /// Offset of the first record.
    pub data_offset: usize,
}

/// The layout of a 64-bit kernel's pages: what `header_page` says on x86-64 and arm64.
pub const LAYOUT_64: PageLayout = PageLayout {
    commit_offset: 8,
    commit_size: 8,
    data_offset: 16,
};

/// `header_page` could not be read as a page layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the kernel's events/header_page does not describe a page this reader knows: {0}")]
pub struct LayoutError(pub String);

impl PageLayout {
    /// Reads the layout from the text of `events/header_page`.
    pub fn parse(header_page: &str) -> Result<PageLayout, LayoutError> {
        let field = |name: &str| -> Option<(usize, usize)> {
            let line = header_page.lines().find(|l| {
                l.split(';')
                    .next()
                    .is_some_and(|f| f.trim_end().ends_with(name))
            })?;
            let value = |key: &str| -> Option<usize> {
                line.split(';')
                    .find_map(|part| part.trim().strip_prefix(key))
                    .and_then(|v| v.trim().parse().ok())
            };
            Some((value("offset:")?, value("size:")?))
        };
        let (commit_offset, commit_size) =
            field(" commit").ok_or_else(|| LayoutError("no commit field".into()))?;
        let (data_offset, _) = field(" data").ok_or_else(|| LayoutError("no data field".into()))?;
        if !matches!(commit_size, 4 | 8) || data_offset < commit_offset + commit_size {
            return Err(LayoutError(format!(
                "commit of {commit_size} bytes at {commit_offset}, data at {data_offset}"
            )));
        }
        Ok(PageLayout {
            commit_offset,
            commit_size,
            data_offset,
        })
    }
}

/// Events were lost before this page (`commit`'s top bit).
const MISSED_EVENTS: u64 = 1 << 31;
/// The number lost is stored after the page's data.
const MISSED_STORED: u64 = 1 << 30;
/// The bits of `commit` that are the data's length.
const COMMIT_MASK: u64 = (1 << 27) - 1;

const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
/// An absolute time stamp carries the low 59 bits; the rest come from the page's.
const ABS_TS_MASK: u64 = (1 << 59) - 1;

/// A page that does not hold together (a short read, a length past its end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPage(pub &'static str);

impl fmt::Display for BadPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a ring-buffer page that does not parse: {}", self.0)
    }
}

/// One page: its records, and what was lost before it.
#[derive(Debug, Clone)]
pub struct Page<'a> {
    /// Events lost before this page (see [`Page::lost_before`]).
    lost: Option<Option<u64>>,
    timestamp_ns: u64,
    data: &'a [u8],
}

/// One record of a page: its absolute time and its payload (the event's bytes,
/// `common_type` first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// When it was written, on the trace clock.
    pub ts_ns: u64,
    /// The event's bytes.
    pub payload: &'a [u8],
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_ne_bytes(s.try_into().expect("4 bytes")))
}

fn read_long(b: &[u8], at: usize, size: usize) -> Option<u64> {
    match size {
        8 => b
            .get(at..at + 8)
            .map(|s| u64::from_ne_bytes(s.try_into().expect("8 bytes"))),
        _ => read_u32(b, at).map(u64::from),
    }
}

impl<'a> Page<'a> {
    /// Splits the bytes one read of `trace_pipe_raw` returned (one page, possibly
    /// partly filled) by `layout`.
    pub fn parse(bytes: &'a [u8], layout: PageLayout) -> Result<Page<'a>, BadPage> {
        let timestamp_ns = read_long(bytes, 0, 8).ok_or(BadPage("shorter than its header"))?;
        let commit = read_long(bytes, layout.commit_offset, layout.commit_size)
            .ok_or(BadPage("shorter than its header"))?;
        let len = (commit & COMMIT_MASK) as usize;
        let end = layout.data_offset + len;
        let data = bytes
            .get(layout.data_offset..end)
            .ok_or(BadPage("its commit runs past the bytes read"))?;
        let lost = if commit & MISSED_EVENTS != 0 {
            Some(if commit & MISSED_STORED != 0 {
                read_long(bytes, end, layout.commit_size)
            } else {
                None
            })
        } else {
            None
        };
        Ok(Page {
            lost,
            timestamp_ns,
            data,
        })
    }

    /// Whether events were lost before this page and, when the kernel said, how many:
    /// `None` nothing lost; `Some(None)` lost, count unknown; `Some(Some(n))` `n` lost.
    pub fn lost_before(&self) -> Option<Option<u64>> {
        self.lost
    }

    /// The page's first timestamp.
    pub fn timestamp_ns(&self) -> u64 {
        self.timestamp_ns
    }

    /// The page's records in order, each with its absolute time; stops at the first
    /// malformed one (returned as the error at the end).
    pub fn records(&self) -> Records<'a> {
        Records {
            data: self.data,
            at: 0,
            ts_ns: self.timestamp_ns,
            page_ts_ns: self.timestamp_ns,
            done: false,
        }
    }
}

/// The iterator of [`Page::records`].
#[derive(Debug, Clone)]
pub struct Records<'a> {
    data: &'a [u8],
    at: usize,
    ts_ns: u64,
    page_ts_ns: u64,
    done: bool,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<RawRecord<'a>, BadPage>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done && self.at + 4 <= self.data.len() {
            let header = read_u32(self.data, self.at).expect("bounds checked");
            let type_len = header & 0x1f;
            let delta = u64::from(header >> 5);
            let body = self.at + 4;
            let mut fail = |why| {
                self.done = true;
                Some(Err(BadPage(why)))
            };
            match type_len {
                TYPE_PADDING => {
                    if delta == 0 {
                        // The rest of the page is empty.
                        self.done = true;
                        return None;
                    }
                    let Some(len) = read_u32(self.data, body) else {
                        return fail("padding without its length");
                    };
                    self.ts_ns += delta;
                    self.at = body + len as usize;
                }
                TYPE_TIME_EXTEND => {
                    let Some(high) = read_u32(self.data, body) else {
                        return fail("a time extension cut short");
                    };
                    self.ts_ns += (u64::from(high) << 27) | delta;
                    self.at = body + 4;
                }
                TYPE_TIME_STAMP => {
                    let Some(high) = read_u32(self.data, body) else {
                        return fail("a time stamp cut short");
                    };
                    let abs = ((u64::from(high) << 27) | delta) & ABS_TS_MASK;
                    self.ts_ns = (self.page_ts_ns & !ABS_TS_MASK) | abs;
                    self.at = body + 4;
                }
                0 => {
                    let Some(len) = read_u32(self.data, body) else {
                        return fail("a long record without its length");
                    };
                    let len = len as usize;
                    let Some(payload) = len
                        .checked_sub(4)
                        .and_then(|l| self.data.get(body + 4..body + 4 + l))
                    else {
                        return fail("a long record past the page's end");
                    };
                    self.ts_ns += delta;
                    self.at = body + 4 + ((len - 4 + 3) & !3);
                    return Some(Ok(RawRecord {
                        ts_ns: self.ts_ns,
                        payload,
                    }));
                }
                words => {
                    let len = words as usize * 4;
                    let Some(payload) = self.data.get(body..body + len) else {
                        return fail("a record past the page's end");
                    };
                    self.ts_ns += delta;
                    self.at = body + len;
                    return Some(Ok(RawRecord {
                        ts_ns: self.ts_ns,
                        payload,
                    }));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page as the kernel writes it, built record by record.
    struct PageBuilder {
        bytes: Vec<u8>,
        ts: u64,
    }

    impl PageBuilder {
        fn new(ts: u64) -> Self {
            let mut bytes = ts.to_ne_bytes().to_vec();
            bytes.extend_from_slice(&0u64.to_ne_bytes());
            PageBuilder { bytes, ts }
        }
        fn header(&mut self, type_len: u32, delta: u32) {
            self.bytes
                .extend_from_slice(&((delta << 5) | type_len).to_ne_bytes());
        }
        fn small(&mut self, delta: u32, payload: &[u8]) {
            assert!(payload.len().is_multiple_of(4));
            self.header(payload.len() as u32 / 4, delta);
            self.bytes.extend_from_slice(payload);
            self.ts += u64::from(delta);
        }
        fn long(&mut self, delta: u32, payload: &[u8]) {
            self.header(0, delta);
            self.bytes
                .extend_from_slice(&(payload.len() as u32 + 4).to_ne_bytes());
            self.bytes.extend_from_slice(payload);
            while !self.bytes.len().is_multiple_of(4) {
                self.bytes.push(0);
            }
        }
        fn extend(&mut self, delta: u64) {
            self.header(TYPE_TIME_EXTEND, (delta & ((1 << 27) - 1)) as u32);
            self.bytes
                .extend_from_slice(&((delta >> 27) as u32).to_ne_bytes());
        }
        fn finish(mut self, flags: u64, lost: Option<u64>) -> Vec<u8> {
            let len = (self.bytes.len() - 16) as u64;
            self.bytes[8..16].copy_from_slice(&(len | flags).to_ne_bytes());
            if let Some(n) = lost {
                self.bytes.extend_from_slice(&n.to_ne_bytes());
            }
            self.bytes.resize(4096, 0);
            self.bytes
        }
    }

    #[test]
    fn records_carry_their_absolute_times_through_deltas_and_extensions() {
        let mut p = PageBuilder::new(1_000_000);
        p.small(10, &[1, 0, 0, 0, 9, 9, 9, 9]);
        p.extend(1 << 30);
        p.small(5, &[2, 0, 0, 0]);
        p.long(7, &[3; 130]);
        let bytes = p.finish(0, None);
        let page = Page::parse(&bytes, LAYOUT_64).unwrap();
        assert_eq!(page.lost_before(), None);
        let recs: Vec<_> = page.records().map(|r| r.unwrap()).collect();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[0].ts_ns, 1_000_010);
        assert_eq!(recs[0].payload, &[1, 0, 0, 0, 9, 9, 9, 9]);
        assert_eq!(recs[1].ts_ns, 1_000_010 + (1 << 30) + 5);
        assert_eq!(recs[1].payload, &[2, 0, 0, 0]);
        assert_eq!(recs[2].ts_ns, 1_000_010 + (1 << 30) + 12);
        assert_eq!(recs[2].payload.len(), 130);
    }

    #[test]
    fn a_page_says_what_was_lost_before_it() {
        let mut p = PageBuilder::new(5);
        p.small(1, &[1, 0, 0, 0]);
        let bytes = p.finish(MISSED_EVENTS | MISSED_STORED, Some(42));
        assert_eq!(
            Page::parse(&bytes, LAYOUT_64).unwrap().lost_before(),
            Some(Some(42))
        );
        let mut p = PageBuilder::new(5);
        p.small(1, &[1, 0, 0, 0]);
        let bytes = p.finish(MISSED_EVENTS, None);
        assert_eq!(
            Page::parse(&bytes, LAYOUT_64).unwrap().lost_before(),
            Some(None)
        );
    }

    #[test]
    fn padding_ends_a_page_and_a_cut_record_is_an_error_not_a_panic() {
        let mut p = PageBuilder::new(0);
        p.small(1, &[1, 0, 0, 0]);
        p.header(TYPE_PADDING, 0);
        let bytes = p.finish(0, None);
        assert_eq!(Page::parse(&bytes, LAYOUT_64).unwrap().records().count(), 1);

        let mut p = PageBuilder::new(0);
        p.header(5, 1); // claims 20 bytes, has none
        let bytes = p.finish(0, None);
        let recs: Vec<_> = Page::parse(&bytes, LAYOUT_64).unwrap().records().collect();
        assert!(matches!(recs.as_slice(), [Err(_)]));
        assert!(Page::parse(&bytes[..10], LAYOUT_64).is_err());
        let mut short = bytes.clone();
        short[8..16].copy_from_slice(&5000u64.to_ne_bytes());
        assert!(Page::parse(&short, LAYOUT_64).is_err());
    }

    #[test]
    fn the_layout_is_read_from_header_page() {
        let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
                    \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
                    \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
                    \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        assert_eq!(PageLayout::parse(text).unwrap(), LAYOUT_64);
        let arm32 = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
                     \tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n\
                     \tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n";
        assert_eq!(
            PageLayout::parse(arm32).unwrap(),
            PageLayout {
                commit_offset: 8,
                commit_size: 4,
                data_offset: 12
            }
        );
        assert!(PageLayout::parse("nothing").is_err());
    }
}
