//! Load specifications: `none`, `cpu[:percent]`, `io`, `top`, `mem`, `ep[:threads]`, `video`,
//! `hackbench`, and combinations joined with `+` (`cpu:80+io`); `@cell` after an item runs it
//! in that cell (`ep@others+video@others`).

/// The threads a built-in load (`ep:N`, `audiolat __load --threads`) may run.
pub const THREADS_RANGE: std::ops::RangeInclusive<usize> = 1..=1024;
use std::fmt;
use std::str::FromStr;

/// One component of a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadItem {
    /// stress-ng CPU workers on every online CPU, each busy `percent` of the time
    /// (unbounded when `None`).
    Cpu {
        /// Duty cycle, 1..=100.
        percent: Option<u8>,
    },
    /// stress-ng disk workers writing and reading files (the studies' disk load).
    Io,
    /// `top -b -d 0.1`: the BeagleBone study's background process.
    Top,
    /// stress-ng STREAM workers: memory bandwidth.
    Mem,
    /// The NPB EP kernel on best-effort threads (default: one per online CPU).
    Ep {
        /// Threads.
        threads: Option<usize>,
    },
    /// rt-tests' hackbench: scheduler and socket stress.
    Hackbench,
    /// Two video players at 30 frames per second streaming frame-sized buffers through
    /// memory (the Tessellation study's interference).
    Video,
    /// An abusive UDP stream towards the network probe's host at this many Mbit/s
    /// (default 100), run by that probe itself, which alone knows the host's address.
    Flood {
        /// Mbit/s of UDP payload.
        mbps: Option<u32>,
    },
    /// An abusive data stream sharing the network probe's link, from the controller's
    /// side to a sink application beside the host (the study's Figure 8); by default
    /// more than the link takes. Run by the network probe.
    Stream {
        /// Mbit/s of UDP payload offered.
        mbps: Option<u32>,
    },
}

impl LoadItem {
    /// The item's name in a spec.
    pub fn name(&self) -> &'static str {
        match self {
            LoadItem::Cpu { .. } => "cpu",
            LoadItem::Io => "io",
            LoadItem::Top => "top",
            LoadItem::Mem => "mem",
            LoadItem::Ep { .. } => "ep",
            LoadItem::Hackbench => "hackbench",
            LoadItem::Video => "video",
            LoadItem::Flood { .. } => "flood",
            LoadItem::Stream { .. } => "stream",
        }
    }
}

impl LoadSpec {
    /// The flood's rate, if the spec has one (Mbit/s).
    pub fn flood_mbps(&self) -> Option<u32> {
        self.items.iter().find_map(|i| match i {
            LoadItem::Flood { mbps } => Some(mbps.unwrap_or(100)),
            _ => None,
        })
    }

    /// The abusive stream, if the spec has one: `Some(None)` for the default rate.
    pub fn stream(&self) -> Option<Option<u32>> {
        self.items.iter().find_map(|i| match i {
            LoadItem::Stream { mbps } => Some(*mbps),
            _ => None,
        })
    }

    /// True when the spec has an item only the network probe can run.
    pub fn has_net_items(&self) -> bool {
        self.items
            .iter()
            .any(|i| matches!(i, LoadItem::Flood { .. } | LoadItem::Stream { .. }))
    }
}

impl fmt::Display for LoadItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadItem::Cpu { percent: Some(p) } => write!(f, "cpu:{p}"),
            LoadItem::Ep { threads: Some(t) } => write!(f, "ep:{t}"),
            LoadItem::Flood { mbps: Some(m) } => write!(f, "flood:{m}"),
            LoadItem::Stream { mbps: Some(m) } => write!(f, "stream:{m}"),
            other => f.write_str(other.name()),
        }
    }
}

/// A whole load: zero or more items, all running at once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LoadSpec {
    /// The items; empty means no load.
    pub items: Vec<LoadItem>,
    /// The cell each item runs in (`ep@others`), by position; `None` or missing: no cell.
    pub cells: Vec<Option<String>>,
}

impl LoadSpec {
    /// The cell an item was placed in, if any.
    pub fn cell_of(&self, item: &LoadItem) -> Option<&str> {
        let i = self.items.iter().position(|x| x.name() == item.name())?;
        self.cells.get(i)?.as_deref()
    }
}

impl LoadSpec {
    /// No load.
    pub fn none() -> LoadSpec {
        LoadSpec::default()
    }

    /// True when there is nothing to run.
    pub fn is_none(&self) -> bool {
        self.items.is_empty()
    }
}

impl fmt::Display for LoadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.items.is_empty() {
            return f.write_str("none");
        }
        let parts: Vec<String> = self
            .items
            .iter()
            .enumerate()
            .map(
                |(i, item)| match self.cells.get(i).and_then(Option::as_deref) {
                    Some(cell) => format!("{item}@{cell}"),
                    None => item.to_string(),
                },
            )
            .collect();
        f.write_str(&parts.join("+"))
    }
}

/// A spec that does not parse; the message lists what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}; loads are none, cpu[:percent], io, top, mem, ep[:threads], hackbench, video, flood[:mbit/s] and stream[:mbit/s] (net only), or combinations like cpu:80+io, each optionally in a cell (ep@others)")]
pub struct SpecError(pub String);

impl FromStr for LoadSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Err(SpecError("empty load".into()));
        }
        if s == "none" {
            return Ok(LoadSpec::none());
        }
        let mut items: Vec<LoadItem> = Vec::new();
        let mut cells: Vec<Option<String>> = Vec::new();
        for part in s.split('+') {
            let (part, cell) = match part.trim().split_once('@') {
                Some((p, c)) => {
                    let c = c.trim();
                    if c.is_empty()
                        || !c
                            .chars()
                            .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_')
                    {
                        return Err(SpecError(format!(
                            "bad cell name '{c}' after '@' in '{part}'"
                        )));
                    }
                    (p.trim(), Some(c.to_string()))
                }
                None => (part.trim(), None),
            };
            let (name, arg) = match part.split_once(':') {
                Some((n, a)) => (n, Some(a)),
                None => (part, None),
            };
            let no_arg = |item: LoadItem| match arg {
                None => Ok(item),
                Some(a) => Err(SpecError(format!(
                    "load '{name}' takes no argument (got ':{a}')"
                ))),
            };
            // An optional numeric argument within `range`.
            let number = |what: &str, range: std::ops::RangeInclusive<usize>| {
                arg.map(|a| {
                    a.parse::<usize>()
                        .ok()
                        .filter(|v| range.contains(v))
                        .ok_or_else(|| {
                            SpecError(format!(
                                "{what} '{a}' must be {}..{}",
                                range.start(),
                                range.end()
                            ))
                        })
                })
                .transpose()
            };
            let item = match name {
                "cpu" => LoadItem::Cpu {
                    percent: number("cpu load percent", 1..=100)?.map(|p| p as u8),
                },
                "io" => no_arg(LoadItem::Io)?,
                "top" => no_arg(LoadItem::Top)?,
                "mem" => no_arg(LoadItem::Mem)?,
                "hackbench" => no_arg(LoadItem::Hackbench)?,
                "video" => no_arg(LoadItem::Video)?,
                "flood" => LoadItem::Flood {
                    mbps: number("flood Mbit/s", 1..=100_000)?.map(|m| m as u32),
                },
                "stream" => LoadItem::Stream {
                    mbps: number("stream Mbit/s", 1..=100_000)?.map(|m| m as u32),
                },
                "ep" => LoadItem::Ep {
                    threads: number("ep threads", THREADS_RANGE)?,
                },
                "none" => {
                    return Err(SpecError(
                        "'none' cannot be combined with other loads".into(),
                    ))
                }
                "" => return Err(SpecError(format!("empty item in load '{s}'"))),
                other => return Err(SpecError(format!("unknown load '{other}'"))),
            };
            if items.iter().any(|i| i.name() == item.name()) {
                return Err(SpecError(format!("load '{}' given twice", item.name())));
            }
            items.push(item);
            cells.push(cell);
        }
        if cells.iter().all(Option::is_none) {
            cells.clear();
        }
        Ok(LoadSpec { items, cells })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert!("none".parse::<LoadSpec>().unwrap().is_none());
        let s: LoadSpec = "cpu:80+io+top+mem+ep:2+hackbench".parse().unwrap();
        assert_eq!(
            s.items,
            vec![
                LoadItem::Cpu { percent: Some(80) },
                LoadItem::Io,
                LoadItem::Top,
                LoadItem::Mem,
                LoadItem::Ep { threads: Some(2) },
                LoadItem::Hackbench
            ]
        );
        assert_eq!(s.to_string(), "cpu:80+io+top+mem+ep:2+hackbench");
        assert_eq!("cpu".parse::<LoadSpec>().unwrap().to_string(), "cpu");
    }

    #[test]
    fn rejects_bad_specs_with_the_accepted_forms() {
        for bad in [
            "", "gpu", "cpu:0", "cpu:101", "cpu:x", "io:3", "none+cpu", "cpu+cpu", "cpu+", "ep:0",
        ] {
            let err = bad.parse::<LoadSpec>().unwrap_err().to_string();
            assert!(err.contains("cpu[:percent]"), "{bad}: {err}");
        }
        let err = "gpu".parse::<LoadSpec>().unwrap_err().to_string();
        assert!(err.starts_with("unknown load 'gpu'"), "{err}");
    }
}
