//! What `planwave loadtest` shows on stderr while it runs: the run-start lines, and the live
//! view (rate, in flight, TTFT/ITL p50/p99 so far, errors) once a second. On a terminal
//! the view is one line redrawn in place; elsewhere, with `--live`, a plain line a second;
//! `--quiet` turns it off. The view reads the probe's own counters and lock-free histograms
//! from a task of its own: the request path never waits for it.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use planwave_runner::eprintln;

use planwave_loadtest::{LiveSnapshot, Probe, RunStart, SweepWatch};

#[derive(Debug, Args)]
pub(crate) struct ViewOptions {
    /// Show the live view (rate, in flight, done, errors, TTFT and ITL p50/p99 so far) on
    /// stderr every second even when stderr is not a terminal, as plain lines. On a
    /// terminal it is on by default, redrawn in place.
    #[arg(long, conflicts_with = "quiet")]
    pub(crate) live: bool,
    /// No live view on stderr, not even on a terminal.
    #[arg(long)]
    pub(crate) quiet: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Off,
    /// A plain line a second (stderr is not a terminal).
    Lines,
    /// One line redrawn in place (a terminal).
    InPlace,
}

/// The front end's [`SweepWatch`]: run-start lines and the live view.
pub(crate) struct Terminal {
    mode: Mode,
    /// The run being shown (set as it starts, taken as it ends).
    current: Arc<Mutex<Option<Showing>>>,
}

struct Showing {
    probe: Arc<Probe>,
    total: usize,
    /// Set under the lock as the run ends, so no periodic line follows the last one.
    ended: Arc<Mutex<bool>>,
    ticker: tokio::task::JoinHandle<()>,
}

impl Terminal {
    pub(crate) fn new(v: &ViewOptions) -> Terminal {
        let terminal = std::io::stderr().is_terminal();
        let mode = match (v.quiet, v.live, terminal) {
            (true, _, _) => Mode::Off,
            (false, _, true) => Mode::InPlace,
            (false, true, false) => Mode::Lines,
            (false, false, false) => Mode::Off,
        };
        Terminal {
            mode,
            current: Arc::default(),
        }
    }
}

fn show(mode: Mode, line: &str, last: bool) {
    match (mode, last) {
        // The erase-line sequence is written as it is; `term::err` would escape its ESC (the
        // line's own text is escaped, as all output is).
        (Mode::InPlace, false) => erase_line_then(line, ""),
        (Mode::InPlace, true) => erase_line_then(line, "\n"),
        (Mode::Lines, false) => eprintln!("planwave loadtest: live {line}"),
        (Mode::Lines, true) => eprintln!("planwave loadtest: live final {line}"),
        (Mode::Off, _) => {}
    }
}

/// `\r`, ESC `[2K` (erase the line), then the line and `end`, escaped.
fn erase_line_then(line: &str, end: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(b"\r\x1b[2K");
    let _ = stderr.write_all(planwave_runner::ops::printable(&format!("{line}{end}")).as_bytes());
}

/// Shows the probe's figures every second until the run ends.
async fn tick(mode: Mode, probe: Arc<Probe>, total: usize, ended: Arc<Mutex<bool>>) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    every.tick().await;
    let (mut at, mut done) = (Instant::now(), 0);
    loop {
        every.tick().await;
        let s = probe.live_snapshot();
        let secs = at.elapsed().as_secs_f64();
        let rate = (s.done.saturating_sub(done)) as f64 / secs.max(1e-9);
        (at, done) = (Instant::now(), s.done);
        let Ok(ended) = ended.lock() else { break };
        if *ended {
            break;
        }
        show(mode, &render_live_line(&s, total, rate), false);
    }
}

/// One line of the live view: `total` tasks in the run, `rate` the answers per second since
/// the previous line.
fn render_live_line(s: &LiveSnapshot, total: usize, rate: f64) -> String {
    let ms = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.2}"));
    format!(
        "{:.1} s | {rate:.1} req/s | {} in flight | {}/{total} done | {} errors | TTFT p50 {} p99 {} ms | ITL p50 {} p99 {} ms",
        s.elapsed.as_secs_f64(),
        s.in_flight,
        s.done,
        s.errors,
        ms(s.ttft_p50_ms),
        ms(s.ttft_p99_ms),
        ms(s.itl_p50_ms),
        ms(s.itl_p99_ms),
    )
}

/// The last line of a run: its totals, the rate over the whole run.
fn final_line(s: &LiveSnapshot, total: usize) -> String {
    let rate = s.done as f64 / s.elapsed.as_secs_f64().max(1e-9);
    render_live_line(s, total, rate)
}

impl SweepWatch for Terminal {
    fn run_starts(&self, run: &RunStart<'_>) {
        eprintln!(
            "planwave loadtest: {} tasks, {} schedule{}, model: {}",
            run.tasks,
            run.schedule.as_str(),
            run.label.map(|l| format!(", {l}")).unwrap_or_default(),
            run.model
        );
    }

    fn progress(&self, total: usize) -> Option<Box<dyn FnOnce(Arc<Probe>) + Send>> {
        if self.mode == Mode::Off {
            return None;
        }
        let (mode, current) = (self.mode, self.current.clone());
        Some(Box::new(move |probe: Arc<Probe>| {
            let ended = Arc::new(Mutex::new(false));
            let ticker = tokio::spawn(tick(mode, probe.clone(), total, ended.clone()));
            if let Ok(mut c) = current.lock() {
                *c = Some(Showing {
                    probe,
                    total,
                    ended,
                    ticker,
                });
            }
        }))
    }

    fn live_latencies(&self) -> bool {
        self.mode != Mode::Off
    }

    fn run_ends(&self) {
        let Some(s) = self.current.lock().ok().and_then(|mut c| c.take()) else {
            return;
        };
        if let Ok(mut ended) = s.ended.lock() {
            *ended = true;
            show(
                self.mode,
                &final_line(&s.probe.live_snapshot(), s.total),
                true,
            );
        }
        s.ticker.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_line_shows_the_rate_the_counts_and_the_latencies_so_far() {
        let s = LiveSnapshot {
            elapsed: Duration::from_millis(2500),
            sent: 12,
            done: 9,
            errors: 1,
            in_flight: 3,
            ttft_p50_ms: Some(10.0),
            ttft_p99_ms: Some(12.5),
            itl_p50_ms: Some(2.0),
            itl_p99_ms: None,
        };
        assert_eq!(
            render_live_line(&s, 20, 1.5),
            "2.5 s | 1.5 req/s | 3 in flight | 9/20 done | 1 errors | TTFT p50 10.00 p99 12.50 ms | ITL p50 2.00 p99 - ms"
        );
        let end = final_line(&s, 20);
        assert!(end.contains("| 3.6 req/s |"), "{end}");
    }
}
