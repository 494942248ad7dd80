//! Live progress: an indicatif display on a terminal, plain log lines otherwise.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use planwave_plan::ValidatedPlan;
use planwave_record::{Event, EventKind, EventSink, Tally};
use planwave_runner::ops::{Watch, Watcher};

/// Running tasks listed by name on the display; the rest are counted.
const RUNNING_SHOWN: usize = 4;

pub enum Mode {
    Bars,
    Lines,
    Quiet,
}

impl Mode {
    /// Bars when stdout is a terminal, plain lines otherwise, nothing when asked to be quiet.
    pub fn detect(quiet: bool) -> Mode {
        if quiet {
            Mode::Quiet
        } else if std::io::stdout().is_terminal() && std::io::stderr().is_terminal() {
            Mode::Bars
        } else {
            Mode::Lines
        }
    }
}

struct Bars {
    _multi: MultiProgress,
    overall: ProgressBar,
    running: ProgressBar,
}

pub struct Progress {
    plan: Arc<ValidatedPlan>,
    bars: Option<Bars>,
    lines: bool,
    start: Instant,
    /// The time lines count from: when the display opened, or the first event it was
    /// handed if earlier (a streamed plan's events wait for the display, then arrive at once:
    /// timed by when they happened, they do not all read 0.000s).
    origin: Mutex<chrono::DateTime<chrono::Utc>>,
    counts: Mutex<Tally>,
    /// The provider batch the run last heard of (`--batch-api`), as the display shows it.
    batch: Mutex<Option<String>>,
}

/// How a provider batch's state is shown: the run waits on it until it has ended.
pub fn batch_line(batch_id: &str, state: &str, total: u64, completed: u64, failed: u64) -> String {
    let ended = matches!(state, "completed" | "failed" | "expired" | "cancelled");
    let verb = if ended {
        "provider batch"
    } else {
        "waiting on provider batch"
    };
    let mut s = format!("{verb} {batch_id}: {state}");
    if total > 0 {
        s.push_str(&format!(" ({completed} of {total} requests done"));
        if failed > 0 {
            s.push_str(&format!(", {failed} failed"));
        }
        s.push(')');
    }
    s
}

impl Progress {
    pub fn new(plan: Arc<ValidatedPlan>, mode: Mode) -> Progress {
        let total = plan.len() as u64;
        let bars = matches!(mode, Mode::Bars).then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10));
            let overall = multi.add(ProgressBar::new(total));
            overall.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:32.cyan/blue} {pos}/{len} tasks {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let running = multi.add(ProgressBar::new_spinner());
            running.set_style(
                ProgressStyle::with_template("  {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            overall.enable_steady_tick(Duration::from_millis(120));
            Bars {
                _multi: multi,
                overall,
                running,
            }
        });
        Progress {
            plan,
            bars,
            lines: matches!(mode, Mode::Lines),
            start: Instant::now(),
            origin: Mutex::new(chrono::Utc::now()),
            counts: Mutex::new(Tally::default()),
            batch: Mutex::new(None),
        }
    }

    /// Clears the display; call before printing the final summary.
    pub fn finish(&self) {
        if let Some(b) = &self.bars {
            b.running.finish_and_clear();
            b.overall.finish_and_clear();
        }
    }

    fn title(&self, task: &planwave_plan::TaskId) -> String {
        self.plan
            .index_of(task)
            .map(|i| self.plan.task(i).title().chars().take(32).collect())
            .unwrap_or_default()
    }

    fn line(&self, text: String) {
        self.line_at(self.start.elapsed().as_secs_f64(), text);
    }

    /// A line for an event, at the time it happened.
    fn event_line(&self, at: chrono::DateTime<chrono::Utc>, text: String) {
        let t = match self.origin.lock() {
            Ok(mut origin) => {
                if at < *origin {
                    *origin = at;
                }
                (at - *origin).num_microseconds().unwrap_or(0) as f64 / 1e6
            }
            Err(_) => self.start.elapsed().as_secs_f64(),
        };
        self.line_at(t, text);
    }

    fn line_at(&self, t: f64, text: String) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "[{t:>8.3}s] {}",
            planwave_runner::ops::printable(&text)
        );
    }

    /// `1.2k tokens, ETA 14s`: the rate so far applied to the tasks left (no estimate
    /// before the first task settles).
    fn tokens_and_eta(&self, c: &Tally) -> String {
        let mut s = format!("{} tokens", compact(c.tokens));
        if let Some(left) = c.eta_secs(self.plan.len(), self.start.elapsed().as_secs_f64()) {
            s.push_str(&format!(", ETA {}", human_secs(left)));
        }
        s
    }

    fn update_bars(&self, c: &Tally) {
        let Some(b) = &self.bars else { return };
        let mut msg = format!("{} ", self.tokens_and_eta(c));
        if c.failed > 0 {
            msg.push_str(&format!("{} failed ", c.failed));
        }
        if c.blocked > 0 {
            msg.push_str(&format!("{} blocked", c.blocked));
        }
        b.overall.set_message(msg);
        let names: Vec<String> = c
            .running
            .iter()
            .take(RUNNING_SHOWN)
            .map(|(id, title)| format!("{id} {title}"))
            .collect();
        let more = c.running.len().saturating_sub(RUNNING_SHOWN);
        let mut running = if names.is_empty() {
            String::new()
        } else {
            format!("running: {}", names.join(" | "))
        };
        if more > 0 {
            running.push_str(&format!(" (+{more} more)"));
        }
        if let Some(batch) = self.batch.lock().ok().and_then(|b| b.clone()) {
            if !running.is_empty() {
                running.push_str(" · ");
            }
            running.push_str(&batch);
        }
        b.running
            .set_message(planwave_runner::ops::printable(&running).into_owned());
    }
}

impl EventSink for Progress {
    fn emit(&self, event: &Event) {
        if let EventKind::ProviderBatch {
            batch_id,
            state,
            total,
            completed,
            failed,
            ..
        } = &event.kind
        {
            let text = batch_line(batch_id, state, *total, *completed, *failed);
            if self.lines {
                self.line(text.clone());
            }
            if let Ok(mut b) = self.batch.lock() {
                *b = Some(text);
            }
            if let Ok(c) = self.counts.lock() {
                self.update_bars(&c);
            }
            return;
        }
        let Ok(mut c) = self.counts.lock() else {
            return;
        };
        // The title the event carries: a streamed plan's display opened on its first tasks
        // and does not know the later ones.
        let described = match &event.kind {
            EventKind::TaskStarted { description, .. } if !description.is_empty() => {
                Some(description.chars().take(32).collect::<String>())
            }
            _ => None,
        };
        if !c.count(&event.kind, |task| {
            described.unwrap_or_else(|| self.title(task))
        }) {
            return;
        }
        let settled = matches!(
            event.kind,
            EventKind::TaskCompleted { .. }
                | EventKind::TaskFailed { .. }
                | EventKind::TaskBlocked { .. }
        );
        if let Some(b) = &self.bars
            && settled
        {
            b.overall.inc(1);
        }
        if self.lines
            && let Some(line) = line_of(&event.kind, &c, || self.tokens_and_eta(&c))
        {
            self.event_line(event.ts, line);
        }
        self.update_bars(&c);
    }
}

/// The plain line for an event (`Lines` mode); a model call has none.
fn line_of(kind: &EventKind, c: &Tally, tokens_and_eta: impl FnOnce() -> String) -> Option<String> {
    Some(match kind {
        EventKind::TaskStarted { task, wave, .. } => {
            let title = c.running.get(&task.to_string()).map_or("", String::as_str);
            format!("task {task} started (wave {wave}): {title}")
        }
        EventKind::TaskCompleted {
            task,
            attempts,
            duration_ms,
            ..
        } => format!(
            "task {task} completed in {:.2}s ({attempts} attempt(s)); {}",
            duration_ms / 1000.0,
            tokens_and_eta()
        ),
        EventKind::TaskRetry {
            task,
            attempt,
            error,
            delay_ms,
        } => format!("task {task} attempt {attempt} failed, retrying in {delay_ms} ms: {error}"),
        EventKind::TaskFailed { task, error, .. } => format!("task {task} FAILED: {error}"),
        EventKind::TaskBlocked {
            task,
            reason: Some(why),
            ..
        } => format!("task {task} blocked: {why}"),
        EventKind::TaskBlocked {
            task, blocked_by, ..
        } => format!("task {task} blocked: prerequisite {blocked_by} failed"),
        _ => return None,
    })
}

/// `950`, `12.3k`, `4.1M`.
fn compact(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// `45s`, `3m05s`, `2h04m`.
fn human_secs(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// The terminal's view of each execution: a [`Progress`] per plan.
pub struct Terminal {
    pub quiet: bool,
}

impl Watch for Terminal {
    fn open(&self, plan: &Arc<ValidatedPlan>) -> Arc<dyn Watcher> {
        Arc::new(Progress::new(plan.clone(), Mode::detect(self.quiet)))
    }

    fn resumed(&self, run_id: uuid::Uuid, completed: usize, tasks: usize) {
        println!("resuming run {run_id}: {completed} of {tasks} tasks already completed");
    }
}

impl Watcher for Progress {
    fn finish(&self) {
        Progress::finish(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_numbers_and_durations() {
        assert_eq!(compact(950), "950");
        assert_eq!(compact(12_345), "12.3k");
        assert_eq!(compact(4_100_000), "4.1M");
        assert_eq!(human_secs(44.6), "45s");
        assert_eq!(human_secs(185.0), "3m05s");
        assert_eq!(human_secs(7440.0), "2h04m");
    }
}
