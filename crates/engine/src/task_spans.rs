//! The `task` spans of a run: one per task, children of the run's span, each linked to the
//! span of every prerequisite it started after, so a trace viewer shows the plan's DAG.
//!
//! Kept out of the supervisor so scheduling code only says *when* (started, settled); this
//! file says what a span records. With no trace export installed the spans cost next to
//! nothing and the links are skipped. Integers are recorded as i64 because
//! tracing-opentelemetry exports u64 fields as strings.

use planwave_plan::TaskId;
use planwave_record::Usage;
use planwave_telemetry::{LinkTarget, add_link, link_target, set_error};
use tracing::Span;
use tracing::field::Empty;

use crate::shared::RunShared;

pub struct TaskSpans {
    /// The plan's number of tasks. The lists below stay empty until a span records
    /// something: with no trace export none does, and two entries per task were 80 bytes a
    /// task, written when the run starts (~90 page faults at 5,000 tasks, 80 MB at a million).
    tasks: usize,
    open: Vec<Option<Span>>,
    /// Kept after a task's span closes: later tasks link to it.
    targets: Vec<Option<LinkTarget>>,
}

impl TaskSpans {
    pub fn new(tasks: usize) -> TaskSpans {
        TaskSpans {
            tasks,
            open: Vec::new(),
            targets: Vec::new(),
        }
    }

    /// The lists, one entry per task, made when the first span records something.
    fn lists(&mut self) {
        if self.open.len() != self.tasks {
            self.open.resize_with(self.tasks, || None);
            self.targets.resize_with(self.tasks, || None);
        }
    }

    fn new_span(shared: &RunShared, index: usize) -> Span {
        let plan = &shared.plan;
        let span = tracing::info_span!(
            target: "planwave::engine",
            parent: &shared.span,
            "task",
            otel.name = format!("task {}", plan.id(index)),
            planwave.task.id = %plan.id(index),
            planwave.task.wave = i64::from(plan.wave(index)),
            planwave.task.status = Empty,
            planwave.task.attempts = Empty,
            planwave.task.context_from = Empty,
            planwave.task.blocked_by = Empty,
            planwave.task.input_tokens = Empty,
            planwave.task.output_tokens = Empty,
        );
        span
    }

    /// The span a subagent works in.
    pub fn start(&mut self, shared: &RunShared, index: usize, context_from: &[TaskId]) -> Span {
        let span = Self::new_span(shared, index);
        // Without a subscriber that wants task spans, skip the per-task string work.
        if span.is_disabled() {
            return span;
        }
        self.lists();
        self.link_prerequisites(shared, index, &span);
        let joined = context_from
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(",");
        span.record("planwave.task.context_from", joined.as_str());
        span.record("planwave.task.status", "running");
        self.targets[index] = link_target(&span);
        self.open[index] = Some(span.clone());
        span
    }

    fn link_prerequisites(&self, shared: &RunShared, index: usize, span: &Span) {
        for &d in shared.plan.deps(index) {
            if let Some(t) = self.targets.get(d as usize).and_then(Option::as_ref) {
                add_link(span, t, "prerequisite");
            }
        }
    }

    pub fn completed(&mut self, index: usize, attempts: u32, usage: Usage) {
        if let Some(span) = self.open.get_mut(index).and_then(Option::take) {
            span.record("planwave.task.status", "completed");
            span.record("planwave.task.attempts", i64::from(attempts));
            span.record("planwave.task.input_tokens", usage.prompt_tokens as i64);
            span.record(
                "planwave.task.output_tokens",
                (usage.completion_tokens + usage.reasoning_tokens) as i64,
            );
        }
    }

    pub fn failed(&mut self, index: usize, attempts: u32, error: &str) {
        if let Some(span) = self.open.get_mut(index).and_then(Option::take) {
            span.record("planwave.task.status", "failed");
            span.record("planwave.task.attempts", i64::from(attempts));
            set_error(&span, error);
        }
    }

    /// A blocked task never runs; it still gets a (zero-length) span so every task of the
    /// plan appears in the trace, linked to its prerequisites.
    pub fn blocked(&mut self, shared: &RunShared, index: usize, blocked_by: &str) {
        let span = Self::new_span(shared, index);
        if span.is_disabled() {
            return;
        }
        self.lists();
        self.link_prerequisites(shared, index, &span);
        span.record("planwave.task.status", "blocked");
        span.record("planwave.task.blocked_by", blocked_by);
        span.record("planwave.task.attempts", 0i64);
        set_error(&span, &format!("blocked by failed task {blocked_by}"));
        self.targets[index] = link_target(&span);
    }

    /// The spans of a plan rebuilt while it runs (a streamed plan growing or closing): task
    /// `i` becomes task `map[i]` of a plan of `tasks`; a task mapped to nothing was stopped.
    pub fn remap(&mut self, map: &[Option<usize>], tasks: usize) {
        self.tasks = tasks;
        if self.open.is_empty() {
            return; // no span recorded anything yet
        }
        let mut open = vec![None; tasks];
        let mut targets = vec![None; tasks];
        for (i, to) in map.iter().enumerate() {
            match to {
                Some(j) => {
                    open[*j] = self.open.get_mut(i).and_then(Option::take);
                    targets[*j] = self.targets.get_mut(i).and_then(Option::take);
                }
                None => {
                    if let Some(span) = self.open.get_mut(i).and_then(Option::take) {
                        span.record("planwave.task.status", "cancelled");
                        set_error(&span, "its definition changed when the plan was repaired");
                    }
                }
            }
        }
        self.open = open;
        self.targets = targets;
    }

    /// Tasks still running when the run is cancelled.
    pub fn cancel_open(&mut self) {
        for span in self.open.iter_mut().filter_map(Option::take) {
            span.record("planwave.task.status", "cancelled");
            set_error(&span, "cancelled");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_kept_per_task_until_a_span_records_something() {
        let mut spans = TaskSpans::new(1_000);
        // What settling does for tasks whose spans recorded nothing (no trace export).
        spans.completed(5, 1, Usage::default());
        spans.failed(7, 2, "boom");
        spans.cancel_open();
        spans.remap(&[Some(1), None, Some(0)], 3);
        assert!(spans.open.is_empty() && spans.targets.is_empty());
        assert_eq!(spans.tasks, 3);
        // The first span to record anything gets one entry per task of the current plan.
        spans.lists();
        assert_eq!((spans.open.len(), spans.targets.len()), (3, 3));
        spans.remap(&[Some(0), Some(1), Some(2)], 5);
        assert_eq!(spans.open.len(), 5);
    }
}
