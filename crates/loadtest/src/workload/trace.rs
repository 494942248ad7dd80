//! Trace replay: requests sent at the arrival times of a trace file, each with the input
//! length the trace gives, the times scaled by a speed factor.
//!
//! File format: CSV with a header row naming the columns, as the Azure LLM inference traces
//! publish them (`TIMESTAMP,ContextTokens,GeneratedTokens`). `TIMESTAMP` is either seconds
//! (a number) or a date and time `YYYY-MM-DD HH:MM:SS[.fraction]`; times are taken relative
//! to the earliest row. Column names are matched without regard to case; `GeneratedTokens`,
//! when every row has it, is each request's `max_tokens` (see `Shaping`).
//!
//! Bounds (`limits`): a count of at most a million tokens, the prompts' tokens at most
//! 100 million in all, a date that exists, a trace spanning at most a year, and its replay
//! after `--speed` at most a year too; a line past one is refused by number.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::limits::{MAX_PROMPT_TOKENS, MAX_PROMPT_TOKENS_TOTAL, MAX_TRACE_SPAN, check_speed};

/// One request of a trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceRequest {
    /// Seconds after the trace's first request (before the speed factor).
    pub at_s: f64,
    pub input_tokens: u64,
    pub output_tokens: Option<u64>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{path}{}: {problem}", .line.map(|l| format!(", line {l}")).unwrap_or_default())]
pub struct TraceError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub problem: String,
}

/// The requests of the trace at `path`, in arrival order.
pub fn read_trace(path: &Path) -> Result<Vec<TraceRequest>, TraceError> {
    let text = std::fs::read_to_string(path).map_err(|e| TraceError {
        path: path.to_owned(),
        line: None,
        problem: e.to_string(),
    })?;
    parse_trace(&text).map_err(|(line, problem)| TraceError {
        path: path.to_owned(),
        line,
        problem,
    })
}

/// A trace's problem: the line it is on (from 1), if any, and what it is.
type LineProblem = (Option<usize>, String);

/// The requests of a trace's text, in arrival order; each number within its bound
/// ([`MAX_PROMPT_TOKENS`], [`MAX_PROMPT_TOKENS_TOTAL`], [`MAX_TRACE_SPAN`]).
pub fn parse_trace(text: &str) -> Result<Vec<TraceRequest>, LineProblem> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or((None, "empty file".to_owned()))?;
    let names: Vec<String> = header
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    let col = |name: &str| names.iter().position(|n| n == name);
    let (Some(ts), Some(input)) = (col("timestamp"), col("contexttokens")) else {
        return Err((
            Some(1),
            "the header must name TIMESTAMP and ContextTokens columns".into(),
        ));
    };
    let columns = Columns {
        ts,
        input,
        output: col("generatedtokens"),
    };
    // Each row with its line, to name the lines that make the trace too long.
    let mut rows: Vec<(usize, &str, TraceRequest)> = Vec::new();
    let mut total = 0u64;
    for (i, line) in lines {
        let (stamp, row) = columns.row(line).map_err(|p| (Some(i + 1), p))?;
        total = total.saturating_add(row.input_tokens);
        if total > MAX_PROMPT_TOKENS_TOTAL {
            return Err((
                Some(i + 1),
                format!(
                    "the prompts up to here add up to more than {MAX_PROMPT_TOKENS_TOTAL} tokens, the most a load test holds in memory"
                ),
            ));
        }
        if rows.len() >= MAX_TRACE_ROWS {
            return Err((Some(i + 1), format!("more than {MAX_TRACE_ROWS} requests")));
        }
        rows.push((i + 1, stamp, row));
    }
    if rows.is_empty() {
        return Err((None, "no requests in it".into()));
    }
    rows.sort_by(|a, b| a.2.at_s.total_cmp(&b.2.at_s));
    check_span(&rows)?;
    let first = rows[0].2.at_s;
    Ok(rows
        .into_iter()
        .map(|(_, _, r)| TraceRequest {
            at_s: r.at_s - first,
            ..r
        })
        .collect())
}

/// The most requests a trace may hold, as `--requests` bounds a workload's.
const MAX_TRACE_ROWS: usize = 10_000_000;

/// Where a trace's columns are.
struct Columns {
    ts: usize,
    input: usize,
    output: Option<usize>,
}

impl Columns {
    /// One line's request (its time not yet relative to the first), with its TIMESTAMP as
    /// written.
    fn row<'a>(&self, line: &'a str) -> Result<(&'a str, TraceRequest), String> {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let cell = |c: usize| cells.get(c).copied().unwrap_or("");
        let bad = |what: &str, c: usize| format!("{what} {:?} is not valid", cell(c));
        let at_s = seconds(cell(self.ts)).ok_or_else(|| bad("TIMESTAMP", self.ts))?;
        let input_tokens = tokens(cell(self.input), "ContextTokens")?;
        let output_tokens = match self.output {
            Some(c) => Some(tokens(cell(c), "GeneratedTokens")?),
            None => None,
        };
        Ok((
            cell(self.ts),
            TraceRequest {
                at_s,
                input_tokens: input_tokens.max(1),
                output_tokens,
            },
        ))
    }
}

/// A token count of a trace's `column`, at most [`MAX_PROMPT_TOKENS`].
fn tokens(text: &str, column: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n) if n <= MAX_PROMPT_TOKENS => Ok(n),
        Ok(_) => Err(format!(
            "{column} {text:?} is more than {MAX_PROMPT_TOKENS} tokens"
        )),
        Err(_) => Err(format!("{column} {text:?} is not valid")),
    }
}

/// Refuses a trace spanning more than [`MAX_TRACE_SPAN`], naming its first and last
/// lines (`rows` in time order).
fn check_span(rows: &[(usize, &str, TraceRequest)]) -> Result<(), LineProblem> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Ok(());
    };
    let span = last.2.at_s - first.2.at_s;
    if span <= MAX_TRACE_SPAN.as_secs_f64() {
        return Ok(());
    }
    Err((
        Some(last.0),
        format!(
            "TIMESTAMP {:?} comes {span:e} s after line {}'s {:?}: a trace may span at most {} days",
            last.1,
            first.0,
            first.1,
            MAX_TRACE_SPAN.as_secs() / 86_400
        ),
    ))
}

/// Each request's send time, the trace's times divided by `speed` (2 = twice as fast);
/// refused when the replay would take longer than [`MAX_TRACE_SPAN`] or the speed is not
/// in [`SPEED_RANGE`](super::limits::SPEED_RANGE).
pub fn trace_arrivals(rows: &[TraceRequest], speed: f64) -> Result<Vec<Duration>, String> {
    check_speed(speed)?;
    let longest = rows.iter().map(|r| r.at_s).fold(0.0, f64::max) / speed;
    if longest.is_nan() || longest > MAX_TRACE_SPAN.as_secs_f64() {
        return Err(format!(
            "the trace replayed at speed {speed} takes {longest:e} s, more than {} days",
            MAX_TRACE_SPAN.as_secs() / 86_400
        ));
    }
    rows.iter()
        .map(|r| Duration::try_from_secs_f64(r.at_s / speed).map_err(|e| e.to_string()))
        .collect()
}

/// Seconds: a number, or `YYYY-MM-DD HH:MM:SS[.fraction]` as seconds since 1970 (UTC), a
/// date that exists in the years 1 to 9999.
fn seconds(text: &str) -> Option<f64> {
    if let Ok(v) = text.parse::<f64>() {
        return v.is_finite().then_some(v);
    }
    let (date, time) = text.split_once([' ', 'T'])?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    if d.next().is_some() || !(1..=9999).contains(&y) || !(1..=12).contains(&m) {
        return None;
    }
    if !(1..=days_in_month(y, m)).contains(&day) {
        return None;
    }
    let mut t = time.trim_end_matches('Z').split(':');
    let (h, min) = (
        t.next()?.parse::<f64>().ok()?,
        t.next()?.parse::<f64>().ok()?,
    );
    let s = t.next().map_or(Some(0.0), |s| s.parse::<f64>().ok())?;
    // 60 for a leap second.
    let in_range =
        (0.0..24.0).contains(&h) && (0.0..60.0).contains(&min) && (0.0..61.0).contains(&s);
    if t.next().is_some() || !in_range {
        return None;
    }
    Some(days_from_civil(y, m, day) as f64 * 86_400.0 + h * 3600.0 + min * 60.0 + s)
}

/// Days in month `m` of year `y` (proleptic Gregorian).
fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_azure_style_rows_relative_to_the_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.csv");
        std::fs::write(
            &path,
            "TIMESTAMP,ContextTokens,GeneratedTokens\n\
             2023-11-16 23:59:59.5000000,374,44\n\
             2023-11-17 00:00:01.0,396,109\n",
        )
        .expect("write");
        let rows = read_trace(&path).expect("reads");
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].at_s, rows[0].input_tokens), (0.0, 374));
        assert!((rows[1].at_s - 1.5).abs() < 1e-6, "{rows:?}");
        assert_eq!(rows[1].output_tokens, Some(109));
        let at = trace_arrivals(&rows, 3.0).expect("replays");
        assert_eq!(at[1], Duration::from_millis(500));

        std::fs::write(&path, "timestamp,contexttokens\n0.5,10\nsoon,3\n").expect("write");
        assert_eq!(
            read_trace(&path).unwrap_err().to_string(),
            format!(
                "{}, line 3: TIMESTAMP \"soon\" is not valid",
                path.display()
            )
        );
    }
}
