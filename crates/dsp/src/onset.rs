//! Finding a note's first sample in a signal.

/// Index of the first sample whose magnitude is `>= threshold`, or `None`.
///
/// Real-time safe (a single scan, no allocation). NaN samples never match; a threshold
/// of 0 or below matches the first sample that is not NaN, silence included.
pub fn first_onset(samples: &[f32], threshold: f32) -> Option<usize> {
    samples.iter().position(|x| x.abs() >= threshold)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_first_sample_at_or_above_threshold_either_sign() {
        assert_eq!(first_onset(&[0.0, 0.1, -0.3, 0.5], 0.25), Some(2));
        assert_eq!(first_onset(&[0.0, 0.25], 0.25), Some(1));
        assert_eq!(first_onset(&[0.0, 0.2499], 0.25), None);
        assert_eq!(first_onset(&[], 0.25), None);
    }

    #[test]
    fn nan_never_matches_and_zero_threshold_matches_silence() {
        assert_eq!(first_onset(&[f32::NAN, 0.0], 0.0), Some(1));
        assert_eq!(first_onset(&[f32::NAN, 1.0], 0.5), Some(1));
        assert_eq!(first_onset(&[0.0, 0.0], 0.0), Some(0));
    }
}
