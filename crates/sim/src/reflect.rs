//! The simulator as evaluator and reflector, and the per-round script that lets tests drive
//! the reflective loop: correctness and overall scores per round, `should_replan` per round,
//! invalid first answers (to exercise repair) and task failures in a round's first pass.
//!
//! Without a script the answers follow the run: the share of completed sections sets the
//! scores, so a clean run scores high and a run with failures asks for another round; the
//! reflector asks for another round whenever correctness is below 95.

use serde_json::{Value, json};

use planwave_llm::{AgentRole, RequestContext};
use planwave_record::RoundTag;

/// How a scripted task failure presents itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// A retryable error on every attempt of the pass (a flaky upstream).
    Transient,
    /// A non-retryable refusal (the task as phrased cannot be answered).
    Fatal,
}

/// Task `task` fails in the first execution pass of round `round`; recovery passes and later
/// rounds succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskFault {
    pub round: u32,
    pub task: String,
    pub kind: FaultKind,
}

impl std::str::FromStr for TaskFault {
    type Err = String;
    /// `ROUND:TASK:KIND`, e.g. `1:2:transient`, `1:3:fatal`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.trim().split(':').collect();
        let [round, task, kind] = parts.as_slice() else {
            return Err(format!(
                "{s:?}: expected ROUND:TASK:KIND, e.g. 1:2:transient"
            ));
        };
        let round: u32 = round
            .parse()
            .ok()
            .filter(|r| *r >= 1)
            .ok_or_else(|| format!("{s:?}: round {round:?} is not a number from 1"))?;
        let kind = match *kind {
            "transient" => FaultKind::Transient,
            "fatal" | "refuse" => FaultKind::Fatal,
            k => return Err(format!("{s:?}: kind {k:?} is not transient or fatal")),
        };
        if task.is_empty() {
            return Err(format!("{s:?}: the task id is empty"));
        }
        Ok(TaskFault {
            round,
            task: (*task).to_owned(),
            kind,
        })
    }
}

/// The loop's script. Lists are per round (entry k for round k + 1); rounds past a list's
/// end repeat its last entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReflectScript {
    /// `dimensions.correctness` per round.
    pub scores: Vec<f64>,
    /// `overall_score` per round.
    pub overall: Vec<f64>,
    /// `should_replan` per round.
    pub replan: Vec<bool>,
    /// Roles whose first answer of each request is invalid (out of range, wrong types).
    pub invalid: Vec<AgentRole>,
    pub task_faults: Vec<TaskFault>,
    /// The strategy the step-level reflection recommends (default: `retry_step` when every
    /// failure was transient, else `replan_from_failure`, as the loop's own rule).
    pub step_strategy: Option<String>,
}

fn per_round<T: Copy>(list: &[T], round: u32) -> Option<T> {
    list.get(round.saturating_sub(1) as usize)
        .or(list.last())
        .copied()
}

impl ReflectScript {
    /// The scripted failure of a subagent request, if any.
    pub fn task_fault(&self, ctx: &RequestContext) -> Option<FaultKind> {
        let RoundTag { round, pass } = ctx.round?;
        let id = ctx.task_id.as_deref()?;
        if pass != 1 {
            return None;
        }
        self.task_faults
            .iter()
            .find(|f| f.round == round && f.task == id)
            .map(|f| f.kind)
    }
}

/// Share of the round's sections that completed (1 when the request names none).
fn completed_share(ctx: &RequestContext) -> f64 {
    if ctx.sections.is_empty() {
        return 1.0;
    }
    let done = ctx
        .sections
        .iter()
        .filter(|s| s.status == "completed")
        .count();
    done as f64 / ctx.sections.len() as f64
}

fn round_of(ctx: &RequestContext) -> u32 {
    ctx.round.map(|r| r.round).unwrap_or(1)
}

fn titles(ctx: &RequestContext, completed: bool) -> Vec<String> {
    ctx.sections
        .iter()
        .filter(|s| (s.status == "completed") == completed)
        .map(|s| format!("{} ({})", s.title, s.status))
        .collect()
}

/// The round's correctness: scripted, else from the share of completed sections (a clean
/// run gets 96, enough to stop the loop).
fn correctness(ctx: &RequestContext, script: &ReflectScript) -> f64 {
    per_round(&script.scores, round_of(ctx)).unwrap_or((60.0 + 36.0 * completed_share(ctx)).round())
}

/// The evaluator's answer for a request.
pub fn evaluation(ctx: &RequestContext, attempt: u32, script: &ReflectScript) -> String {
    if attempt <= 1 && script.invalid.contains(&AgentRole::Evaluator) {
        return r#"{"overall_score": 150, "is_successful": "maybe", "dimensions": {"completeness": 80, "correctness": "high"}, "successes": [], "failures": []}"#.into();
    }
    let round = round_of(ctx);
    let share = completed_share(ctx);
    let correctness = correctness(ctx, script);
    let overall = per_round(&script.overall, round).unwrap_or((correctness - 10.0).max(0.0));
    let failures = titles(ctx, false);
    let v = json!({
        "evaluation_id": format!("sim-eval-{round}"),
        "overall_score": overall,
        "is_successful": overall >= 80.0,
        "dimensions": {
            "completeness": (100.0 * share).round(),
            "correctness": correctness,
            "efficiency": 85.0,
            "reliability": (70.0 + 30.0 * share).round(),
        },
        "successes": titles(ctx, true),
        "failures": failures,
        "improvement_suggestions": if failures.is_empty() {
            vec!["(simulated) deepen the analysis with more primary sources".to_owned()]
        } else {
            vec!["(simulated) rephrase or narrow the failed sections".to_owned()]
        },
    });
    format!(
        "```json\n{}\n```",
        serde_json::to_string_pretty(&v).unwrap_or_default()
    )
}

/// The reflector's answer for a request.
pub fn reflection(ctx: &RequestContext, attempt: u32, script: &ReflectScript) -> String {
    if attempt <= 1 && script.invalid.contains(&AgentRole::Reflector) {
        return r#"{"root_causes": "thin data", "should_replan": "perhaps", "optimization_suggestions": [{"aspect": 3}]}"#.into();
    }
    let round = round_of(ctx);
    let failed = titles(ctx, false);
    // Unscripted, the reflector wants another round exactly when the evaluator was not
    // satisfied (it sees the same sections and script).
    let should_replan = per_round(&script.replan, round).unwrap_or(correctness(ctx, script) < 95.0);
    let v: Value = json!({
        "reflection_id": format!("sim-refl-{round}"),
        "root_causes": if failed.is_empty() {
            vec!["(simulated) the sections rely on secondary sources".to_owned()]
        } else {
            failed.iter().map(|t| format!("(simulated) {t} did not produce a section")).collect()
        },
        "incorrect_assumptions": ["(simulated) every data source would answer"],
        "alternative_approaches": ["(simulated) split broad chapters into narrower ones"],
        "optimization_suggestions": [{
            "aspect": "plan",
            "current_issue": "(simulated) broad chapters",
            "proposed_solution": "(simulated) narrower chapters with explicit data needs",
            "expected_improvement": "(simulated) higher correctness"
        }],
        "lessons_learned": [format!("(simulated) lesson of round {round}")],
        "should_replan": should_replan,
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// A step-level reflection on the failed tasks in `ctx.sections` (`failed:<kind>`).
pub fn step_reflection(ctx: &RequestContext, script: &ReflectScript) -> String {
    let transient = ctx.sections.iter().all(|s| s.status == "failed:transient");
    let strategy = script.step_strategy.clone().unwrap_or_else(|| {
        if transient {
            "retry_step"
        } else {
            "replan_from_failure"
        }
        .to_owned()
    });
    let names: Vec<&str> = ctx.sections.iter().map(|s| s.title.as_str()).collect();
    let v = json!({
        "analysis": format!("(simulated) {} failed {}", names.join(", "),
                            if transient { "for a passing reason" } else { "as phrased" }),
        "strategy": strategy,
        "reason": "(simulated) the failures' kind decides",
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use planwave_llm::SectionRef;

    fn ctx(round: u32, statuses: &[&str]) -> RequestContext {
        RequestContext {
            round: Some(RoundTag { round, pass: 1 }),
            sections: statuses
                .iter()
                .enumerate()
                .map(|(i, s)| SectionRef {
                    id: (i + 1).to_string(),
                    title: format!("t{i}"),
                    status: (*s).into(),
                })
                .collect(),
            ..Default::default()
        }
    }

    fn json_of(s: &str) -> Value {
        planwave_plan::extract_json(s).expect("json")
    }

    #[test]
    fn scores_follow_the_run_unless_scripted_per_round() {
        let none = ReflectScript::default();
        let clean = json_of(&evaluation(&ctx(1, &["completed"; 5]), 1, &none));
        assert_eq!(clean["dimensions"]["correctness"], 96.0);
        let broken = json_of(&evaluation(
            &ctx(1, &["completed", "failed", "blocked", "completed"]),
            1,
            &none,
        ));
        assert_eq!(broken["dimensions"]["correctness"], 78.0);
        assert_eq!(broken["is_successful"], false);
        let script = ReflectScript {
            scores: vec![40.0, 70.0],
            replan: vec![true, false],
            ..Default::default()
        };
        let at = |r| json_of(&evaluation(&ctx(r, &["completed"]), 1, &script));
        assert_eq!(at(1)["dimensions"]["correctness"], 40.0);
        assert_eq!(at(2)["dimensions"]["correctness"], 70.0);
        assert_eq!(
            at(3)["dimensions"]["correctness"],
            70.0,
            "the last entry repeats"
        );
        let refl = |r| json_of(&reflection(&ctx(r, &["completed"]), 1, &script));
        assert_eq!(
            (
                refl(1)["should_replan"].clone(),
                refl(2)["should_replan"].clone()
            ),
            (json!(true), json!(false))
        );
    }

    #[test]
    fn task_faults_hit_only_the_first_pass_of_their_round() {
        let script = ReflectScript {
            task_faults: vec!["1:2:fatal".parse().expect("parses")],
            ..Default::default()
        };
        let mut c = RequestContext {
            task_id: Some("2".into()),
            round: Some(RoundTag { round: 1, pass: 1 }),
            ..Default::default()
        };
        assert_eq!(script.task_fault(&c), Some(FaultKind::Fatal));
        c.round = Some(RoundTag { round: 1, pass: 2 });
        assert_eq!(script.task_fault(&c), None);
        c.round = Some(RoundTag { round: 2, pass: 1 });
        assert_eq!(script.task_fault(&c), None);
        assert!("1:2".parse::<TaskFault>().is_err());
        assert!("0:2:fatal".parse::<TaskFault>().is_err());
        assert!("1:2:weird".parse::<TaskFault>().is_err());
    }
}
