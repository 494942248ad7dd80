//! Per-task timestamps of a run, for finding out *when* and *why* dispatch was late.
//!
//! The figures say how long the slowest dispatches took; the timeline says which tasks they
//! were and when in the run they happened. Lined up with the kernel's view of the same
//! seconds (`perf sched record -k CLOCK_MONOTONIC`, `perf record -k CLOCK_MONOTONIC`) through
//! `epoch_monotonic_ns`, it shows what the workers were doing meanwhile: that is how the
//! allocator stalls in `docs/benchmarks.md` were found.

use std::io::Write;

use planwave_plan::ValidatedPlan;
use serde::Serialize;

use super::ProbeSnapshot;

/// A run's timeline: the header line and one entry per task.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub header: TimelineHeader,
    pub tasks: Vec<TaskTiming>,
}

impl Timeline {
    /// Writes a header line and one JSON line per task.
    pub(crate) fn write_jsonl(&self, out: &mut impl Write) -> std::io::Result<()> {
        serde_json::to_writer(&mut *out, &self.header)?;
        out.write_all(b"\n")?;
        for t in &self.tasks {
            serde_json::to_writer(&mut *out, t)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// The first line of a timeline: what the times are relative to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimelineHeader {
    pub schedule: String,
    /// The run's time zero on the CLOCK_MONOTONIC clock (what `perf -k CLOCK_MONOTONIC`
    /// stamps its samples with), in ns; `None` off Linux.
    pub epoch_monotonic_ns: Option<u64>,
}

/// One task of a run. Times in ms since the run's time zero.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskTiming {
    pub task: String,
    pub wave: u32,
    /// The prerequisite whose model call returned last (the one the task waited for).
    pub last_prerequisite: Option<String>,
    /// When that call returned: the task could start from here.
    pub ready_ms: Option<f64>,
    /// The task's first model call began.
    pub call_start_ms: Option<f64>,
    /// Its last successful model call returned.
    pub call_end_ms: Option<f64>,
    /// call_start - ready: the engine's own delay (the run's dispatch figures).
    pub dispatch_ms: Option<f64>,
}

/// Every task's timing, in plan order.
pub(crate) fn timings(plan: &ValidatedPlan, seen: &ProbeSnapshot) -> Vec<TaskTiming> {
    let ms = |ns: u64| ns as f64 / 1e6;
    (0..plan.len())
        .map(|i| {
            // The latest prerequisite to return; unknown if any never returned.
            let ready = plan
                .deps(i)
                .iter()
                .map(|&d| seen.last_done_ns[d as usize].map(|t| (t, d as usize)))
                .try_fold(None, |m: Option<(u64, usize)>, t| {
                    t.map(|t| Some(m.map_or(t, |m| if t.0 > m.0 { t } else { m })))
                })
                .flatten();
            let start = seen.first_start_ns[i];
            TaskTiming {
                task: plan.id(i).to_string(),
                wave: plan.wave(i),
                last_prerequisite: ready.map(|(_, d)| plan.id(d).to_string()),
                ready_ms: ready.map(|(t, _)| ms(t)),
                call_start_ms: start.map(ms),
                call_end_ms: seen.last_done_ns[i].map(ms),
                dispatch_ms: match (ready, start) {
                    (Some((r, _)), Some(s)) => Some(ms(s.saturating_sub(r))),
                    _ => None,
                },
            }
        })
        .collect()
}

/// CLOCK_MONOTONIC now, in ns (the clock `std::time::Instant` reads on Linux).
pub(crate) fn monotonic_now_ns() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: writes one timespec we own.
        if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } == 0 {
            return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
        }
        None
    }
    #[cfg(not(target_os = "linux"))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use planwave_plan::generate;

    fn plan() -> ValidatedPlan {
        // c waits on a and b; d on c.
        let json = r#"{"topic": "t", "tasks": [
            {"id": "a", "description": "a"},
            {"id": "b", "description": "b"},
            {"id": "c", "description": "c", "dependencies": ["a", "b"]},
            {"id": "d", "description": "d", "dependencies": ["c"]}
        ]}"#;
        ValidatedPlan::new(planwave_plan::parse_plan_str(json).expect("parse")).expect("valid")
    }

    #[test]
    fn ready_is_when_the_last_prerequisite_returned() {
        let plan = plan();
        let seen = ProbeSnapshot {
            first_start_ns: vec![Some(0), Some(0), Some(7_500_000), None],
            last_done_ns: vec![Some(5_000_000), Some(7_000_000), None, None],
            calls: 3,
            errors: 0,
            max_in_flight: 2,
            integrator_sent: 0,
            integrator_local: 0,
        };
        let t = timings(&plan, &seen);
        assert_eq!(
            (t[0].ready_ms, t[0].dispatch_ms),
            (None, None),
            "no prerequisites"
        );
        assert_eq!(t[2].ready_ms, Some(7.0));
        assert_eq!(t[2].last_prerequisite.as_deref(), Some("b"));
        assert_eq!(t[2].dispatch_ms, Some(0.5));
        assert_eq!(t[2].call_end_ms, None, "still running");
        // d's prerequisite never returned: not ready, never started.
        assert_eq!((t[3].ready_ms, t[3].call_start_ms), (None, None));
        assert_eq!((t[3].wave, t[2].wave, t[1].wave), (2, 1, 0));
    }

    #[test]
    fn jsonl_has_a_header_then_a_line_per_task() {
        let plan = ValidatedPlan::new(generate::wide(3)).expect("valid");
        let seen = ProbeSnapshot {
            first_start_ns: vec![Some(1); 3],
            last_done_ns: vec![Some(2); 3],
            calls: 3,
            errors: 0,
            max_in_flight: 3,
            integrator_sent: 0,
            integrator_local: 0,
        };
        let mut buf = Vec::new();
        let timeline = Timeline {
            header: TimelineHeader {
                schedule: "dataflow".into(),
                epoch_monotonic_ns: monotonic_now_ns(),
            },
            tasks: timings(&plan, &seen),
        };
        timeline.write_jsonl(&mut buf).expect("write");
        let lines: Vec<serde_json::Value> = String::from_utf8(buf)
            .expect("utf8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0]["schedule"], "dataflow");
        assert_eq!(lines[1]["task"], plan.id(0).to_string());
        assert_eq!(lines[3]["call_end_ms"], 2e-6);
    }
}
