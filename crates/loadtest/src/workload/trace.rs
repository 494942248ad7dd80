//! Trace replay: requests sent at the arrival times of a trace file, each with the input
//! length the trace gives, the times scaled by a speed factor.
//!
//! File format: CSV with a header row naming the columns, as the Azure LLM inference traces
//! publish them (`TIMESTAMP,ContextTokens,GeneratedTokens`). `TIMESTAMP` is either seconds
//! (a number) or a date and time `YYYY-MM-DD HH:MM:SS[.fraction]`; times are taken relative
//! to the earliest row. Column names are matched without regard to case; `GeneratedTokens`,
//! when every row has it, is each request's `max_tokens` (see `Shaping`).

use std::path::{Path, PathBuf};
use std::time::Duration;

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
    let err = |line: Option<usize>, problem: String| TraceError {
        path: path.to_owned(),
        line,
        problem,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(None, e.to_string()))?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or_else(|| err(None, "empty file".into()))?;
    let names: Vec<String> = header
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    let col = |name: &str| names.iter().position(|n| n == name);
    let (Some(ts), Some(input)) = (col("timestamp"), col("contexttokens")) else {
        return Err(err(
            Some(1),
            "the header must name TIMESTAMP and ContextTokens columns".into(),
        ));
    };
    let output = col("generatedtokens");
    let mut rows = Vec::new();
    for (i, line) in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let bad = |what: &str, v: &str| err(Some(i + 1), format!("{what} {v:?} is not valid"));
        let cell = |c: usize| cells.get(c).copied().unwrap_or("");
        let at = seconds(cell(ts)).ok_or_else(|| bad("TIMESTAMP", cell(ts)))?;
        let input_tokens = cell(input)
            .parse::<u64>()
            .map_err(|_| bad("ContextTokens", cell(input)))?;
        let output_tokens = match output {
            Some(c) => Some(
                cell(c)
                    .parse::<u64>()
                    .map_err(|_| bad("GeneratedTokens", cell(c)))?,
            ),
            None => None,
        };
        rows.push(TraceRequest {
            at_s: at,
            input_tokens: input_tokens.max(1),
            output_tokens,
        });
    }
    if rows.is_empty() {
        return Err(err(None, "no requests in it".into()));
    }
    rows.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    let first = rows[0].at_s;
    for r in &mut rows {
        r.at_s -= first;
    }
    Ok(rows)
}

/// Each request's send time, the trace's times divided by `speed` (2 = twice as fast).
pub fn trace_arrivals(rows: &[TraceRequest], speed: f64) -> Vec<Duration> {
    let speed = if speed.is_finite() && speed > 0.0 {
        speed
    } else {
        1.0
    };
    rows.iter()
        .map(|r| Duration::from_secs_f64(r.at_s / speed))
        .collect()
}

/// Seconds: a number, or `YYYY-MM-DD HH:MM:SS[.fraction]` as seconds since 1970 (UTC).
fn seconds(text: &str) -> Option<f64> {
    if let Ok(v) = text.parse::<f64>() {
        return v.is_finite().then_some(v);
    }
    let (date, time) = text.split_once([' ', 'T'])?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.trim_end_matches('Z').split(':');
    let (h, min) = (
        t.next()?.parse::<f64>().ok()?,
        t.next()?.parse::<f64>().ok()?,
    );
    let s = t.next().map_or(Some(0.0), |s| s.parse::<f64>().ok())?;
    Some(days_from_civil(y, m, day) as f64 * 86_400.0 + h * 3600.0 + min * 60.0 + s)
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
        let at = trace_arrivals(&rows, 3.0);
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
