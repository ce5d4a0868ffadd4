//! A number for people: every float a message prints goes through [`fmt_number`], never
//! through its raw `Display`, which writes the float's every digit
//! (`0.0000010000000000000002` for a nanosecond in ms).

/// `v` with at most six significant digits and no trailing zeros: `0.000001`, `45`,
/// `0.3`, `1234567`; NaN and the infinities as Rust writes them.
pub fn fmt_number(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v == 0.0 {
        return "0".into();
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (5 - magnitude).clamp(0, 17) as usize;
    let text = format!("{v:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    match text {
        "-0" => "0".into(),
        t => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_keeps_six_significant_digits_and_no_float_noise() {
        let ns_in_ms = std::time::Duration::from_nanos(1).as_secs_f64() * 1e3 * 1.0000000000000002;
        assert_eq!(fmt_number(ns_in_ms), "0.000001");
        assert_eq!(fmt_number(0.1 + 0.2), "0.3");
        assert_eq!(fmt_number(45.0), "45");
        assert_eq!(fmt_number(1_234_567.0), "1234567");
        assert_eq!(fmt_number(-2.5), "-2.5");
        assert_eq!(fmt_number(1e-9), "0.000000001");
        assert_eq!(fmt_number(-1e-30), "0");
    }
}
