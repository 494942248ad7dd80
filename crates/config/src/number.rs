//! The one parser per kind of number a person writes, beside [`crate::parse_duration`]:
//! milliseconds of latency, seconds, microseconds per token, rates per second, a lognormal
//! sigma, a gamma shape and a share. Each takes the text as given (a flag's value, or a JSON
//! number as its text) and refuses, naming the text, what nobody means: NaN, infinities,
//! negatives, and values past what the timers and draws behind them can hold (`1e300`
//! milliseconds once panicked converting to a `Duration`; a rate of `1e-300` per second
//! asked for a gap of 1e300 seconds). Clap's value parsers and the job spec's serde both
//! call these, so the command line, a request body and a queue message refuse the same
//! values with the same words.

use crate::MAX_DURATION;

/// The largest number of milliseconds or seconds accepted: [`MAX_DURATION`], a year.
fn year_secs() -> f64 {
    MAX_DURATION.as_secs_f64()
}

/// The most microseconds per token (prefill): a second per token.
pub const MAX_MICROS_PER_TOKEN: f64 = 1e6;
/// The slowest rate accepted: one per million seconds (eleven days between arrivals).
pub const MIN_RATE: f64 = 1e-6;
/// The fastest rate accepted: a million per second.
pub const MAX_RATE: f64 = 1e6;
/// The largest lognormal sigma accepted (already one draw in a billion past 1e100 x the mean).
pub const MAX_SIGMA: f64 = 10.0;
/// The range of a gamma shape (burstiness) accepted.
pub const SHAPE_RANGE: (f64, f64) = (1e-3, 1e3);

/// `text` as a finite number, or why not (`what` names the kind in the message).
fn finite(text: &str, what: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err(format!("{text:?} is not a finite number ({what})")),
        Err(_) => Err(format!("{text:?} is not a number ({what})")),
    }
}

fn non_negative(text: &str, what: &str) -> Result<f64, String> {
    let x = finite(text, what)?;
    if x < 0.0 {
        return Err(format!("{text:?}: {what} cannot be negative"));
    }
    Ok(x)
}

/// Milliseconds of latency, from 0 to a year (`300`, `0.5`).
pub fn parse_millis(text: &str) -> Result<f64, String> {
    let ms = non_negative(text, "milliseconds")?;
    if ms / 1000.0 > year_secs() {
        return Err(format!("{text:?} milliseconds is longer than a year"));
    }
    Ok(ms)
}

/// Seconds, from 0 to a year (`1.5`).
pub fn parse_secs(text: &str) -> Result<f64, String> {
    let s = non_negative(text, "seconds")?;
    if s > year_secs() {
        return Err(format!("{text:?} seconds is longer than a year"));
    }
    Ok(s)
}

/// Microseconds per token, from 0 to [`MAX_MICROS_PER_TOKEN`].
pub fn parse_micros_per_token(text: &str) -> Result<f64, String> {
    let us = non_negative(text, "microseconds per token")?;
    if us > MAX_MICROS_PER_TOKEN {
        return Err(format!(
            "{text:?} microseconds per token is more than a second per token"
        ));
    }
    Ok(us)
}

/// A rate per second, from [`MIN_RATE`] to [`MAX_RATE`].
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let r = finite(text, "a rate per second")?;
    if r <= 0.0 {
        return Err(format!("{text:?} is not a positive rate"));
    }
    if !(MIN_RATE..=MAX_RATE).contains(&r) {
        return Err(format!(
            "{text:?} is not a rate from {MIN_RATE:e} to {MAX_RATE:e} per second"
        ));
    }
    Ok(r)
}

/// The sigma of a lognormal distribution, from 0 (none) to [`MAX_SIGMA`].
pub fn parse_sigma(text: &str) -> Result<f64, String> {
    let s = non_negative(text, "a sigma")?;
    if s > MAX_SIGMA {
        return Err(format!("{text:?} is not a sigma from 0 to {MAX_SIGMA}"));
    }
    Ok(s)
}

/// The shape of a gamma distribution (burstiness), within [`SHAPE_RANGE`].
pub fn parse_shape(text: &str) -> Result<f64, String> {
    let s = finite(text, "a shape")?;
    let (lo, hi) = SHAPE_RANGE;
    if !(lo..=hi).contains(&s) {
        return Err(format!("{text:?} is not a shape from {lo} to {hi}"));
    }
    Ok(s)
}

/// A share (a probability), from 0 to 1.
pub fn parse_share(text: &str) -> Result<f64, String> {
    let p = finite(text, "a share from 0 to 1")?;
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("{text:?} is not a share from 0 to 1"));
    }
    Ok(p)
}

/// An amount of money more than zero (`--max-cost 0.50`).
pub fn parse_cost(text: &str) -> Result<f64, String> {
    let x = finite(text, "an amount of money")?;
    if x <= 0.0 {
        return Err(format!("{text:?}: expected an amount more than 0"));
    }
    Ok(x)
}

/// A count of at least one (`--concurrency`, `--max-rounds`, `--planner-attempts`, ...):
/// a whole number that fits `T`, not zero.
pub fn parse_count<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr + Default + PartialEq,
{
    let n: T = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number of 1 or more"))?;
    if n == T::default() {
        return Err(format!("{text:?}: expected a nonzero count"));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_people_mean_parse() {
        assert_eq!(parse_millis("300"), Ok(300.0));
        assert_eq!(parse_millis(" 0.5 "), Ok(0.5));
        assert_eq!(parse_millis("0"), Ok(0.0));
        assert_eq!(parse_secs("1.5"), Ok(1.5));
        assert_eq!(parse_micros_per_token("250"), Ok(250.0));
        assert_eq!(parse_rate("0.5"), Ok(0.5));
        assert_eq!(parse_rate("1e6"), Ok(1e6));
        assert_eq!(parse_sigma("1"), Ok(1.0));
        assert_eq!(parse_shape("1"), Ok(1.0));
        assert_eq!(parse_share("0.25"), Ok(0.25));
    }

    #[test]
    fn absurd_and_non_finite_values_are_refused_naming_the_text() {
        type Parser = fn(&str) -> Result<f64, String>;
        let cases: [(Parser, &str, &str); 12] = [
            (
                parse_millis,
                "1e300",
                "\"1e300\" milliseconds is longer than a year",
            ),
            (
                parse_millis,
                "1e25",
                "\"1e25\" milliseconds is longer than a year",
            ),
            (
                parse_millis,
                "-1",
                "\"-1\": milliseconds cannot be negative",
            ),
            (
                parse_millis,
                "NaN",
                "\"NaN\" is not a finite number (milliseconds)",
            ),
            (
                parse_millis,
                "soon",
                "\"soon\" is not a number (milliseconds)",
            ),
            (
                parse_secs,
                "1e300",
                "\"1e300\" seconds is longer than a year",
            ),
            (
                parse_secs,
                "inf",
                "\"inf\" is not a finite number (seconds)",
            ),
            (
                parse_micros_per_token,
                "1e300",
                "\"1e300\" microseconds per token is more than a second per token",
            ),
            (
                parse_rate,
                "1e-300",
                "\"1e-300\" is not a rate from 1e-6 to 1e6 per second",
            ),
            (parse_rate, "0", "\"0\" is not a positive rate"),
            (
                parse_sigma,
                "1e300",
                "\"1e300\" is not a sigma from 0 to 10",
            ),
            (parse_shape, "0", "\"0\" is not a shape from 0.001 to 1000"),
        ];
        for (parse, text, want) in cases {
            assert_eq!(parse(text), Err(want.to_owned()), "{text}");
        }
        assert_eq!(
            parse_share("1.5"),
            Err("\"1.5\" is not a share from 0 to 1".into())
        );
    }
}
