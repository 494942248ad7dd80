//! The batch's success metrics, for watching how planning and execution go: planning
//! success rate, mean
//! planning time and plan execution success rate, from the jobs' summaries. Pure.

use serde::{Deserialize, Serialize};

use crate::summary::{JobState, JobSummary};

/// How a goal job's planning went, from its `planner/attempts.json`. Jobs given a plan
/// (`plan`, `plan_file`) do not plan and have none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobPlanning {
    /// Some attempt produced a valid plan.
    pub valid: bool,
    pub attempts: usize,
    /// The attempts' model time summed (repairs included): what planning cost this job.
    pub ms: f64,
}

/// `batch.json`'s `metrics`. A rate is `null` when its denominator is zero (no goal job
/// planned, or no job executed a plan), never a made-up 0 or 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchMetrics {
    /// Goal jobs whose planning ended, with or without a valid plan.
    pub planned: usize,
    /// Of those, the ones whose planning produced a valid plan.
    pub plans_valid: usize,
    /// `plans_valid / planned` (规划成功率).
    pub planning_success_rate: Option<f64>,
    /// Mean of [`JobPlanning::ms`] over the goal jobs that planned (平均规划时间).
    pub mean_planning_ms: Option<f64>,
    /// Jobs that executed a plan to its end (see [`JobSummary::executed`]).
    pub executed: usize,
    /// Of those, the ones where every task completed.
    pub executed_completed: usize,
    /// `executed_completed / executed` (计划执行成功率).
    pub execution_success_rate: Option<f64>,
}

impl JobSummary {
    /// The job ran its plan to the end: it has a run's verdict, not a job-level error (no
    /// plan, I/O) and was not cancelled. A job whose planning failed never executed.
    pub fn executed(&self) -> bool {
        self.error.is_none() && !matches!(self.state, JobState::Cancelled | JobState::NeedsInput)
    }
}

fn rate(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

impl BatchMetrics {
    pub fn of(jobs: &[JobSummary]) -> BatchMetrics {
        let planned: Vec<&JobPlanning> = jobs.iter().filter_map(|j| j.planning.as_ref()).collect();
        let plans_valid = planned.iter().filter(|p| p.valid).count();
        let executed = jobs.iter().filter(|j| j.executed()).count();
        let executed_completed = jobs
            .iter()
            .filter(|j| j.executed() && j.state == JobState::Completed)
            .count();
        BatchMetrics {
            planned: planned.len(),
            plans_valid,
            planning_success_rate: rate(plans_valid, planned.len()),
            mean_planning_ms: (!planned.is_empty())
                .then(|| planned.iter().map(|p| p.ms).sum::<f64>() / planned.len() as f64),
            executed,
            executed_completed,
            execution_success_rate: rate(executed_completed, executed),
        }
    }

    /// Two lines for the table under a batch and `planwave show BATCH_DIR`.
    pub fn lines(&self) -> String {
        let pct =
            |r: Option<f64>| r.map_or_else(|| "-".to_owned(), |r| format!("{:.1}%", r * 100.0));
        let planning = match self.mean_planning_ms {
            Some(ms) => format!(
                "planning: {}/{} goal job(s) got a valid plan ({}), mean planning time {ms:.1} ms",
                self.plans_valid,
                self.planned,
                pct(self.planning_success_rate)
            ),
            None => "planning: no goal job planned (jobs given a plan do not plan)".to_owned(),
        };
        format!(
            "{planning}\nexecution: {}/{} executed job(s) completed ({})\n",
            self.executed_completed,
            self.executed,
            pct(self.execution_success_rate)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(state: JobState, planning: Option<(bool, f64)>, error: Option<&str>) -> JobSummary {
        JobSummary {
            id: "j".into(),
            line: 1,
            kind: if planning.is_some() { "goal" } else { "plan" }.into(),
            run_dir: "jobs/j".into(),
            state,
            tasks: 0,
            completed: 0,
            failed: 0,
            blocked: 0,
            tokens: 0,
            prompt_tokens: 0,
            cached_tokens: 0,
            cost: None,
            currency: None,
            unpriced: false,
            wall_ms: 0.0,
            error: error.map(str::to_owned),
            planning: planning.map(|(valid, ms)| JobPlanning {
                valid,
                attempts: 1,
                ms,
            }),
            questions: Vec::new(),
        }
    }

    #[test]
    fn rates_count_goal_jobs_that_planned_and_jobs_that_executed() {
        let m = BatchMetrics::of(&[
            job(JobState::Completed, Some((true, 10.0)), None),
            job(
                JobState::Failed,
                Some((false, 30.0)),
                Some("planning failed"),
            ),
            job(JobState::Partial, None, None),
            job(JobState::Cancelled, None, None),
        ]);
        assert_eq!((m.planned, m.plans_valid), (2, 1));
        assert_eq!(m.planning_success_rate, Some(0.5));
        assert_eq!(m.mean_planning_ms, Some(20.0));
        assert_eq!((m.executed, m.executed_completed), (2, 1));
        assert_eq!(m.execution_success_rate, Some(0.5));
    }

    #[test]
    fn without_goal_jobs_there_is_no_planning_rate() {
        let m = BatchMetrics::of(&[job(JobState::Completed, None, None)]);
        assert_eq!(m.planning_success_rate, None);
        assert_eq!(m.mean_planning_ms, None);
        assert_eq!(m.execution_success_rate, Some(1.0));
        assert!(m.lines().starts_with("planning: no goal job planned"));
        assert_eq!(BatchMetrics::of(&[]).execution_success_rate, None);
    }
}
