//! The one parser of durations written by a person: every duration flag (`--deadline`,
//! `--task-timeout`, `--tool-timeout`, `worker --ack-wait`, `loadtest --duration`, ...) and a
//! duration given as a string in a request body. A bare number is seconds (`90`, `1.5`); a
//! unit may follow (`250ms`, `90s`, `2m`, `1h`). Values nobody means are refused with the text
//! as given: negatives, NaN and infinities, and anything longer than a year (a typo, and past
//! what timers should be asked to hold).

use std::time::Duration;

/// The longest duration accepted: a year.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

const EXAMPLES: &str = "e.g. 90, 1.5, 90s, 250ms, 2m, 1h";

/// A duration of zero or more, as `parse_duration("250ms")`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "{text:?} is not a duration: unknown unit {other:?} (use ns, us, ms, s, m or h; {EXAMPLES})"
            ));
        }
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration ({EXAMPLES})"))?;
    if n.is_sign_negative() {
        return Err(format!("{text:?}: a duration cannot be negative"));
    }
    let secs = n * scale;
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if d <= MAX_DURATION => Ok(d),
        _ => Err(format!("{text:?} is longer than a year")),
    }
}

/// A duration that must be more than zero (a timeout, a deadline); under a nanosecond is zero.
pub fn parse_positive_duration(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d.is_zero() {
        return Err(format!("{text:?} is not a positive duration ({EXAMPLES})"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_four_old_parsers_accepted_still_parses() {
        for (text, want) in [
            ("90", Duration::from_secs(90)),
            ("1.5", Duration::from_millis(1500)),
            ("90s", Duration::from_secs(90)),
            ("250ms", Duration::from_millis(250)),
            (" 30 s ", Duration::from_secs(30)),
            ("2m", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
            ("0s", Duration::ZERO),
        ] {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn nonsense_is_refused_naming_the_text() {
        assert_eq!(
            parse_duration("-5s"),
            Err("\"-5s\": a duration cannot be negative".into())
        );
        assert_eq!(
            parse_duration("9000h"),
            Err("\"9000h\" is longer than a year".into())
        );
        for bad in ["soon", "inf", "NaN", "1e400", "2y", "", "1..2s"] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.starts_with(&format!("{bad:?}")), "{bad}: {err}");
        }
        assert_eq!(
            parse_positive_duration("0"),
            Err("\"0\" is not a positive duration (e.g. 90, 1.5, 90s, 250ms, 2m, 1h)".into())
        );
        assert!(parse_positive_duration("0.0000000001").is_err());
        assert_eq!(parse_positive_duration("1ns"), Ok(Duration::from_nanos(1)));
    }
}
