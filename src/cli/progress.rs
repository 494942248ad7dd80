//! Live progress: an indicatif display on a terminal, plain log lines otherwise.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use planwave_engine::{Event, EventKind, EventSink};
use planwave_plan::ValidatedPlan;

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

struct Counts {
    failed: usize,
    blocked: usize,
    running: BTreeMap<String, String>,
}

pub struct Progress {
    plan: Arc<ValidatedPlan>,
    bars: Option<Bars>,
    lines: bool,
    start: Instant,
    counts: Mutex<Counts>,
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
            counts: Mutex::new(Counts {
                failed: 0,
                blocked: 0,
                running: BTreeMap::new(),
            }),
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
        let t = self.start.elapsed().as_secs_f64();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "[{t:>8.3}s] {text}");
    }

    fn update_bars(&self, c: &Counts) {
        let Some(b) = &self.bars else { return };
        let mut msg = String::new();
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
        b.running.set_message(running);
    }
}

impl EventSink for Progress {
    fn emit(&self, event: &Event) {
        let Ok(mut c) = self.counts.lock() else {
            return;
        };
        match &event.kind {
            EventKind::TaskStarted { task, wave } => {
                let title = self.title(task);
                if self.lines {
                    self.line(format!("task {task} started (wave {wave}): {title}"));
                }
                c.running.insert(task.to_string(), title);
            }
            EventKind::TaskCompleted {
                task,
                attempts,
                duration_ms,
                ..
            } => {
                c.running.remove(&task.to_string());
                if let Some(b) = &self.bars {
                    b.overall.inc(1);
                }
                if self.lines {
                    self.line(format!(
                        "task {task} completed in {:.2}s ({attempts} attempt(s))",
                        duration_ms / 1000.0
                    ));
                }
            }
            EventKind::TaskRetry {
                task,
                attempt,
                error,
                delay_ms,
            } => {
                if self.lines {
                    self.line(format!(
                        "task {task} attempt {attempt} failed, retrying in {delay_ms} ms: {error}"
                    ));
                }
            }
            EventKind::TaskFailed { task, error, .. } => {
                c.running.remove(&task.to_string());
                c.failed += 1;
                if let Some(b) = &self.bars {
                    b.overall.inc(1);
                }
                if self.lines {
                    self.line(format!("task {task} FAILED: {error}"));
                }
            }
            EventKind::TaskBlocked { task, blocked_by } => {
                c.blocked += 1;
                if let Some(b) = &self.bars {
                    b.overall.inc(1);
                }
                if self.lines {
                    self.line(format!(
                        "task {task} blocked: prerequisite {blocked_by} failed"
                    ));
                }
            }
            _ => return,
        }
        self.update_bars(&c);
    }
}
