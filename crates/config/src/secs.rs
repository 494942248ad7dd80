//! The one check of a number of seconds that must be positive (timeouts, deadlines), shared
//! by the config file and the flags resolved here (text on the command line goes through
//! [`crate::parse_positive_duration`]).

use std::time::Duration;

use crate::SettingsError;

/// `secs` as a duration when it is a positive, finite number of seconds that a `Duration`
/// can hold; `None` for zero, negatives, NaN, infinities and absurdly large values.
pub fn positive_secs(secs: f64) -> Option<Duration> {
    if secs.is_finite() && secs > 0.0 {
        Duration::try_from_secs_f64(secs).ok()
    } else {
        None
    }
}

/// An optional positive number of seconds from the config file; `field` names it in the
/// error (`[run] deadline_secs`).
pub(crate) fn file_secs(field: &str, v: Option<f64>) -> Result<Option<Duration>, SettingsError> {
    v.map(|s| {
        positive_secs(s).ok_or_else(|| {
            SettingsError::Invalid(format!(
                "{field} = {s}: expected a positive number of seconds"
            ))
        })
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_positive_finite_seconds_pass() {
        assert_eq!(positive_secs(0.5), Some(Duration::from_millis(500)));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300] {
            assert_eq!(positive_secs(bad), None, "{bad}");
        }
    }
}
