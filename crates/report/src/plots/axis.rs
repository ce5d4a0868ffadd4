//! Axes: how values map onto a plot (linear, log10, the percentile axis), the unit their
//! tick labels are printed in, and the ticks themselves (1-2-5 steps, decades, 90% /
//! 99% / 99.9%...).

use crate::units::fmt_count;

/// How values are laid out along an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Equal steps for equal differences.
    Linear,
    /// Equal steps for equal ratios (log10); values at or below 0 are not drawn.
    Log,
    /// Percentiles as fractions `p` in 0..1, placed at log10(1/(1-p)): 90% at 1, 99% at
    /// 2, 99.9% at 3 (HdrHistogram's percentile distribution).
    Percentile,
}

/// What an axis's values are: it decides the unit its ticks are printed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Quantity {
    /// Durations given in ns, printed in ns, us, ms or s, chosen for the axis range.
    Duration,
    /// Counts (digits grouped from 10 000).
    Count,
    /// Fractions 0..1 on a [`Scale::Percentile`] axis.
    Percentile,
    /// Values in a fixed unit, e.g. `%` (printed as given).
    Unit(String),
}

/// One axis of a plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// What is on it, without the unit (`latency`, `count`, `time since start`).
    pub name: String,
    /// How values are laid out.
    pub scale: Scale,
    /// What the values are.
    pub quantity: Quantity,
}

impl Axis {
    /// A duration axis (values in ns).
    pub fn duration(name: &str, scale: Scale) -> Axis {
        Axis {
            name: name.into(),
            scale,
            quantity: Quantity::Duration,
        }
    }

    /// A logarithmic count axis.
    pub fn log_count(name: &str) -> Axis {
        Axis {
            name: name.into(),
            scale: Scale::Log,
            quantity: Quantity::Count,
        }
    }

    /// The percentile axis (values are fractions 0..1).
    pub fn percentile() -> Axis {
        Axis {
            name: "percentile".into(),
            scale: Scale::Percentile,
            quantity: Quantity::Percentile,
        }
    }

    /// An axis in a fixed unit (`%`, `frames`).
    pub fn unit(name: &str, unit: &str, scale: Scale) -> Axis {
        Axis {
            name: name.into(),
            scale,
            quantity: Quantity::Unit(unit.into()),
        }
    }

    /// Where a value lies along the axis before scaling to pixels; `None` for a value
    /// the axis cannot show (not finite; at or below 0 on a log axis).
    pub fn forward(&self, v: f64) -> Option<f64> {
        if !v.is_finite() {
            return None;
        }
        match self.scale {
            Scale::Linear => Some(v),
            Scale::Log => (v > 0.0).then(|| v.log10()),
            Scale::Percentile => Some(percentile_position(v)),
        }
    }

    /// The axis label with its unit in parentheses, for the range `[lo, hi]` (values).
    pub fn label(&self, hi_abs: f64) -> String {
        let unit = match &self.quantity {
            Quantity::Duration => duration_unit(hi_abs).0.to_string(),
            Quantity::Count if self.scale == Scale::Log => "log".into(),
            Quantity::Count => "n".into(),
            Quantity::Percentile => "log of 1/(1-p)".into(),
            Quantity::Unit(u) => u.clone(),
        };
        format!("{} ({unit})", self.name)
    }

    /// A value in full, for hover text: `12.3 us`, `12 345`, `99.9%`, `41.5 %`.
    pub fn fmt_value(&self, v: f64) -> String {
        match &self.quantity {
            Quantity::Duration => crate::units::fmt_ns(v),
            Quantity::Count => fmt_count(v.max(0.0).round() as u64),
            Quantity::Percentile => fmt_percentile(v),
            Quantity::Unit(u) if u == "%" => crate::units::fmt_percent(v),
            Quantity::Unit(u) => format!("{} {u}", fmt_number(v)),
        }
    }

    /// The axis range (in [`Axis::forward`] positions) that shows `values`, padded; `None`
    /// when no value can be shown.
    pub fn range(&self, values: &[f64]) -> Option<(f64, f64)> {
        let fwd: Vec<f64> = values.iter().filter_map(|&v| self.forward(v)).collect();
        let lo = fwd.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = fwd.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if lo > hi {
            return None;
        }
        Some(match self.scale {
            Scale::Linear => {
                if hi == lo {
                    let pad = lo.abs().max(1.0) * 0.1;
                    (lo - pad, hi + pad)
                } else {
                    let pad = (hi - lo) * 0.05;
                    // Latencies, counts and loads read against zero when it is near.
                    let lo = if lo >= 0.0 && lo < hi - lo {
                        0.0
                    } else {
                        lo - pad
                    };
                    (lo, hi + pad)
                }
            }
            Scale::Log => {
                // Counts start below 1, so that a bin of one sample stands off the floor.
                let lo = if self.quantity == Quantity::Count {
                    lo.min(0.0) - 0.15
                } else {
                    lo - 0.06
                };
                // At least half a decade, centred on the values.
                let (lo, hi) = (lo, hi + 0.06);
                let short = (0.5 - (hi - lo)).max(0.0) / 2.0;
                (lo - short, hi + short)
            }
            Scale::Percentile => (0.0, hi.max(1.0) + 0.1),
        })
    }

    /// The ticks of the axis over `[lo, hi]` (forward positions): at most about a dozen
    /// labelled, with unlabelled minor ticks between on a log axis.
    pub fn ticks(&self, lo: f64, hi: f64) -> Vec<Tick> {
        match self.scale {
            Scale::Linear => self.linear_ticks(lo, hi),
            Scale::Log => self.log_ticks(lo, hi),
            Scale::Percentile => (0..=hi.floor().max(0.0) as i32)
                .filter(|&k| f64::from(k) >= lo)
                .map(|k| Tick {
                    at: f64::from(k),
                    label: Some(fmt_percentile(1.0 - 10f64.powi(-k))),
                    major: true,
                })
                .collect(),
        }
    }

    fn scale_of(&self, lo: f64, hi: f64) -> f64 {
        match self.quantity {
            Quantity::Duration => {
                let top = match self.scale {
                    Scale::Log => 10f64.powf(hi),
                    _ => lo.abs().max(hi.abs()),
                };
                duration_unit(top).1
            }
            _ => 1.0,
        }
    }

    fn tick_label(&self, v: f64, unit_scale: f64) -> String {
        match self.quantity {
            Quantity::Count if v >= 1.0 && v.fract() == 0.0 => fmt_count(v as u64),
            _ => fmt_number(v / unit_scale),
        }
    }

    fn linear_ticks(&self, lo: f64, hi: f64) -> Vec<Tick> {
        let unit_scale = self.scale_of(lo, hi);
        let step = nice_step((hi - lo) / 6.0);
        if step.is_nan() || step <= 0.0 || !step.is_finite() {
            return Vec::new();
        }
        let first = (lo / step).ceil() as i64;
        let last = (hi / step).floor() as i64;
        // Every label with the decimals the step needs: 2.8, 2.9, 3.0 (not 3).
        let decimals = (-(step / unit_scale).log10().floor()).clamp(0.0, 9.0) as usize;
        (first..=last)
            .map(|i| {
                let at = i as f64 * step;
                let label = match self.quantity {
                    Quantity::Count => self.tick_label(at, unit_scale),
                    _ if decimals == 0 => fmt_number((at / unit_scale).round()),
                    _ => format!("{:.decimals$}", at / unit_scale),
                };
                Tick {
                    at,
                    label: Some(label),
                    major: true,
                }
            })
            .collect()
    }

    fn log_ticks(&self, lo: f64, hi: f64) -> Vec<Tick> {
        let unit_scale = self.scale_of(lo, hi);
        let decades = hi - lo;
        let (first, last) = (lo.floor() as i32, hi.ceil() as i32);
        let candidates = |mantissas: &[f64]| -> Vec<(f64, bool)> {
            (first..=last)
                .flat_map(|k| {
                    mantissas
                        .iter()
                        .map(move |&m| (m * 10f64.powi(k), m == 1.0))
                })
                .filter(|&(v, _)| (lo..=hi).contains(&v.log10()))
                // A count below one is no count: the axis dips below 1 only so that a
                // bin of one sample stands off the floor.
                .filter(|&(v, _)| self.quantity != Quantity::Count || v >= 1.0)
                .collect()
        };
        // Label decades, and 2 and 5 too on a short axis; minor ticks at 2..9.
        let labelled: &[f64] = if decades <= 2.5 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let every = (decades / 10.0).ceil().max(1.0) as i32;
        let mut ticks: Vec<Tick> = candidates(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
            .into_iter()
            .map(|(at, decade)| {
                let m = at / 10f64.powf(at.log10().floor());
                let shown = labelled.iter().any(|&l| (m - l).abs() < 1e-6)
                    && (!decade || (at.log10().round() as i32).rem_euclid(every) == 0);
                Tick {
                    at,
                    label: shown.then(|| self.tick_label(at, unit_scale)),
                    major: decade,
                }
            })
            .collect();
        // About a decade or less: label every tick (5, 6, 7, 8, 9, 10).
        if decades < 1.2 || ticks.iter().filter(|t| t.label.is_some()).count() < 2 {
            for t in &mut ticks {
                t.label = Some(self.tick_label(t.at, unit_scale));
            }
        }
        // Still fewer than three labels (a short axis between two ticks of 1..9, e.g.
        // 11 to 19 ms): ticks at a 1/2/5 step of the values, as a linear axis has.
        if ticks.iter().filter(|t| t.label.is_some()).count() < 3 {
            let linear = Axis {
                scale: Scale::Linear,
                ..self.clone()
            };
            let finer: Vec<Tick> = linear
                .linear_ticks(10f64.powf(lo), 10f64.powf(hi))
                .into_iter()
                .filter(|t| t.at > 0.0)
                .filter(|t| self.quantity != Quantity::Count || t.at >= 1.0)
                .collect();
            if finer.len() > ticks.len() {
                return finer;
            }
        }
        ticks
    }
}

/// A tick on an axis: its value (not its forward position; the percentile axis's ticks
/// are at positions), its label, and whether it is a major one (drawn with a solid
/// grid line).
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// The value (on a percentile axis: the position, 0, 1, 2...).
    pub at: f64,
    /// The label, or none for a minor tick.
    pub label: Option<String>,
    /// A major tick (decade, or every tick of a linear axis).
    pub major: bool,
}

/// Where a percentile `p` (0..1) lies on the percentile axis: log10(1/(1-p)).
pub fn percentile_position(p: f64) -> f64 {
    let p = p.clamp(0.0, 1.0 - 1e-12);
    -(1.0 - p).log10()
}

/// A percentile for people: `50%`, `99%`, `99.99%`, `99.9993%`.
pub fn fmt_percentile(p: f64) -> String {
    let pct = p * 100.0;
    for decimals in 0..8 {
        let s = format!("{pct:.decimals$}");
        if (s.parse::<f64>().unwrap_or(f64::NAN) - pct).abs() < 1e-9 * 100.0 {
            return format!("{s}%");
        }
    }
    format!("{pct:.6}%")
}

/// The unit (and ns per unit) a duration axis reaching `max_abs_ns` is printed in.
pub fn duration_unit(max_abs_ns: f64) -> (&'static str, f64) {
    if max_abs_ns < 1e3 {
        ("ns", 1.0)
    } else if max_abs_ns < 1e6 {
        ("us", 1e3)
    } else if max_abs_ns < 1e9 {
        ("ms", 1e6)
    } else {
        ("s", 1e9)
    }
}

/// The step of 1, 2 or 5 times a power of ten nearest above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || !raw.is_finite() {
        return 0.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let m = raw / mag;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// A plain number with three significant figures at most, trailing zeros trimmed:
/// `0.02`, `2.5`, `120`, `12 000`.
pub fn fmt_number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            "-".into()
        };
    }
    if v.abs() >= 1000.0 && v.fract() == 0.0 {
        let s = fmt_count(v.abs() as u64);
        return if v < 0.0 { format!("-{s}") } else { s };
    }
    let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s.trim_start_matches('-').len() > 4 && !s.contains('.') {
        let grouped = fmt_count(v.round().abs() as u64);
        return if v < 0.0 {
            format!("-{grouped}")
        } else {
            grouped
        };
    }
    s
}
