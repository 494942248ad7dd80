//! The one check of a number of seconds that must be positive (timeouts, deadlines), shared
//! by the config file, the flags resolved here and the command line's value parsers.

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

/// A command-line value in seconds (fractions allowed), for value parsers: the message
/// names the text as given.
pub fn parse_positive_secs(text: &str) -> Result<Duration, String> {
    let v: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    positive_secs(v).ok_or_else(|| format!("{text} is not a positive number of seconds"))
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
        assert_eq!(parse_positive_secs("90"), Ok(Duration::from_secs(90)));
        assert_eq!(
            parse_positive_secs("0.0"),
            Err("0.0 is not a positive number of seconds".into())
        );
        assert_eq!(
            parse_positive_secs("soon"),
            Err("\"soon\" is not a number of seconds".into())
        );
    }
}
