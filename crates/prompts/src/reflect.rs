//! The reflective loop's prompts: evaluator, reflector, partial replan and answer repair.
//! The variables are plain data so the orchestrator fills them without knowing minijinja.

use minijinja::value::{Serde, Value};
use planwave_llm::ChatMessage;
use planwave_plan::Lang;
use serde::Serialize;
use serde_json::json;

use crate::render::messages;
use crate::templates::{PromptError, Templates};

/// One task of a round as the evaluator, reflector and replanner see it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RoundSection {
    pub id: String,
    pub title: String,
    /// `completed`, `failed` or `blocked`.
    pub status: String,
    pub deps: Vec<String>,
    /// The section (possibly shortened), for completed tasks: data (`crate::data`).
    #[serde(serialize_with = "crate::data::serialize_clean")]
    pub text: Option<String>,
    /// Why it failed, which may quote a tool: cleaned as data.
    #[serde(serialize_with = "crate::data::serialize_clean")]
    pub error: Option<String>,
    /// What the plan said the task should produce (a step's `expected_output`).
    #[serde(default)]
    pub expected: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct RoundStats {
    pub tasks: usize,
    pub completed: usize,
    pub failed: usize,
    pub blocked: usize,
}

/// Variables of `evaluator.j2`.
#[derive(Clone, Debug, Serialize)]
pub struct EvaluatorVars<'a> {
    pub goal: &'a str,
    pub round: u32,
    pub max_rounds: u32,
    pub stats: RoundStats,
    pub sections: &'a [RoundSection],
}

/// Variables of `reflector.j2`. `evaluation` is the validated evaluation as JSON.
#[derive(Clone, Debug, Serialize)]
pub struct ReflectorVars<'a> {
    pub goal: &'a str,
    pub round: u32,
    pub max_rounds: u32,
    pub tasks: &'a [RoundSection],
    pub evaluation: &'a serde_json::Value,
}

/// A failed task as `step_reflection.j2` names it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FailedStep {
    pub id: String,
    pub title: String,
    /// `transient`, `fatal` or `crashed`.
    pub kind: String,
    /// Why it failed, which may quote a tool: cleaned as data.
    #[serde(serialize_with = "crate::data::serialize_clean_text")]
    pub error: String,
}

/// Variables of `step_reflection.j2` (the step-level reflection before a recovery pass).
#[derive(Clone, Debug, Serialize)]
pub struct StepReflectionVars<'a> {
    pub goal: &'a str,
    pub round: u32,
    pub pass: u32,
    pub failed: &'a [FailedStep],
    pub completed: usize,
    pub blocked: usize,
    pub total: usize,
    /// The strategies whose budget is not spent, the rule's choice first.
    pub allowed: &'a [&'a str],
}

/// A task named in `replan.j2`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplanTask {
    pub id: String,
    pub title: String,
    pub status: String,
    pub deps: Vec<String>,
    /// Why it failed, which may quote a tool: cleaned as data.
    #[serde(serialize_with = "crate::data::serialize_clean")]
    pub error: Option<String>,
}

/// Variables of `replan.j2`.
#[derive(Clone, Debug, Serialize)]
pub struct ReplanVars<'a> {
    pub goal: &'a str,
    pub kept: &'a [ReplanTask],
    pub replace: &'a [ReplanTask],
    /// The first id the replacements should use (one past the largest integer id).
    pub next_id: u64,
    /// The step-level reflection's analysis of the failures, when one was asked for.
    pub analysis: Option<&'a str>,
}

/// A step named in `replan_steps.j2`: a kept one with its result, or one to replace with
/// its error.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplanStep {
    pub id: String,
    pub title: String,
    pub tool: String,
    /// The step's parameters as compact JSON.
    pub params: String,
    pub status: String,
    pub deps: Vec<String>,
    /// Why it failed, which may quote a tool: cleaned as data.
    #[serde(serialize_with = "crate::data::serialize_clean")]
    pub error: Option<String>,
    /// A kept step's result (shortened), which new steps may reference: data
    /// (`crate::data`), cleaned as it is handed to the template.
    #[serde(serialize_with = "crate::data::serialize_clean")]
    pub result: Option<String>,
}

/// Variables of `replan_steps.j2`: a step plan's partial replan.
#[derive(Clone, Debug, Serialize)]
pub struct ReplanStepsVars<'a> {
    pub goal: &'a str,
    /// The tools steps may call, with their input schemas (the step planner's catalogue).
    pub tools: &'a [crate::PlannerTool],
    pub kept: &'a [ReplanStep],
    pub replace: &'a [ReplanStep],
    pub analysis: Option<&'a str>,
}

/// Variables of `answer_repair.j2`.
#[derive(Clone, Debug, Serialize)]
pub struct AnswerRepairVars<'a> {
    /// What was asked for, in the prompt's language ("evaluation", "评估结果").
    pub what: &'a str,
    /// The attempt being made (2 for the first repair).
    pub attempt: u32,
    pub problems: &'a [String],
}

impl Templates {
    pub fn evaluator(
        &self,
        lang: Lang,
        vars: &EvaluatorVars<'_>,
    ) -> Result<Vec<ChatMessage>, PromptError> {
        Ok(messages(&self.render_raw(
            lang,
            "evaluator",
            Value::from(Serde(vars)),
        )?))
    }

    pub fn reflector(
        &self,
        lang: Lang,
        vars: &ReflectorVars<'_>,
    ) -> Result<Vec<ChatMessage>, PromptError> {
        Ok(messages(&self.render_raw(
            lang,
            "reflector",
            Value::from(Serde(vars)),
        )?))
    }

    pub fn step_reflection(
        &self,
        lang: Lang,
        vars: &StepReflectionVars<'_>,
    ) -> Result<Vec<ChatMessage>, PromptError> {
        Ok(messages(&self.render_raw(
            lang,
            "step_reflection",
            Value::from(Serde(vars)),
        )?))
    }

    pub fn replan(
        &self,
        lang: Lang,
        vars: &ReplanVars<'_>,
    ) -> Result<Vec<ChatMessage>, PromptError> {
        Ok(messages(&self.render_raw(
            lang,
            "replan",
            Value::from(Serde(vars)),
        )?))
    }

    /// A step plan's partial replan: replacement steps, given the tool catalogue.
    pub fn replan_steps(
        &self,
        lang: Lang,
        vars: &ReplanStepsVars<'_>,
    ) -> Result<Vec<ChatMessage>, PromptError> {
        Ok(messages(&self.render_raw(
            lang,
            "replan_steps",
            Value::from(Serde(vars)),
        )?))
    }

    /// The follow-up message after an invalid evaluation, reflection or replacement.
    pub fn answer_repair(
        &self,
        lang: Lang,
        vars: &AnswerRepairVars<'_>,
    ) -> Result<String, PromptError> {
        Ok(self
            .render_raw(lang, "answer_repair", Value::from(Serde(vars)))?
            .trim()
            .to_owned())
    }
}

/// Variables of `failure_note.j2`: what the planner is told when a round's plan failed.
#[derive(Debug, Serialize)]
pub struct FailureNoteVars<'a> {
    /// `description (error)` of each failed task; an error may quote a tool: cleaned as data.
    #[serde(serialize_with = "crate::data::serialize_clean_list")]
    pub failed: &'a [String],
}

/// Variables of `reflection_summary.j2`: each part's items (parts without items are left
/// out).
#[derive(Debug, Default, Serialize)]
pub struct ReflectionSummaryVars {
    pub evaluation: Vec<String>,
    pub root_causes: Vec<String>,
    pub incorrect_assumptions: Vec<String>,
    pub suggestions: Vec<String>,
    pub alternative_approaches: Vec<String>,
    pub lessons_learned: Vec<String>,
}

impl Templates {
    /// The note a complete replan gets about the plan that failed.
    pub fn failure_note(
        &self,
        lang: Lang,
        vars: &FailureNoteVars<'_>,
    ) -> Result<String, PromptError> {
        Ok(self
            .render_raw(lang, "failure_note", Value::from(Serde(vars)))?
            .trim()
            .to_owned())
    }

    /// The reflection summary the next round's planner is told.
    pub fn reflection_summary(
        &self,
        lang: Lang,
        vars: &ReflectionSummaryVars,
    ) -> Result<String, PromptError> {
        Ok(self
            .render_raw(lang, "reflection_summary", Value::from(Serde(vars)))?
            .trim_end()
            .to_owned())
    }
}

/// Sample variables for the load-time check.
pub(crate) fn sample(name: &str) -> Value {
    let section = json!({"id": "1", "title": "t", "status": "completed", "deps": ["0"],
                         "text": "## t", "error": null});
    let v = match name {
        "evaluator" => json!({"goal": "g", "round": 1, "max_rounds": 3,
            "stats": {"tasks": 2, "completed": 1, "failed": 1, "blocked": 0},
            "sections": [section, {"id": "2", "title": "u", "status": "failed", "deps": [],
                                   "text": null, "error": "e"}]}),
        "reflector" => json!({"goal": "g", "round": 1, "max_rounds": 3, "tasks": [section],
            "evaluation": {"overall_score": 50.0, "is_successful": false,
                "dimensions": {"completeness": 1.0, "correctness": 2.0, "efficiency": 3.0,
                               "reliability": 4.0},
                "successes": ["s"], "failures": ["f"], "improvement_suggestions": ["i"]}}),
        "replan" => json!({"goal": "g",
            "kept": [{"id": "1", "title": "t", "status": "completed", "deps": [], "error": null}],
            "replace": [{"id": "2", "title": "u", "status": "failed", "deps": ["1"], "error": "e"}],
            "next_id": 3, "analysis": "a"}),
        "replan_steps" => json!({"goal": "g",
            "tools": [{"name": "t", "description": "d", "input_schema": "{}"}],
            "kept": [{"id": "a", "title": "t", "tool": "t", "params": "{}", "status": "completed",
                      "deps": [], "error": null, "result": "r"}],
            "replace": [{"id": "b", "title": "u", "tool": "t", "params": "{}", "status": "failed",
                         "deps": ["a"], "error": "e", "result": null}],
            "analysis": "a"}),
        "step_reflection" => json!({"goal": "g", "round": 1, "pass": 1,
            "failed": [{"id": "2", "title": "u", "kind": "fatal", "error": "e"}],
            "completed": 1, "blocked": 0, "total": 2,
            "allowed": ["replan_from_failure", "retry_step"]}),
        "failure_note" => json!({"failed": ["t (e)"]}),
        "reflection_summary" => json!({"evaluation": ["e"], "root_causes": ["r"],
            "incorrect_assumptions": [], "suggestions": ["s"], "alternative_approaches": [],
            "lessons_learned": ["l"]}),
        _ => json!({"what": "evaluation", "attempt": 2, "problems": ["p"]}),
    };
    Value::from(Serde(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluator_prompt_carries_the_round_and_each_section() {
        let t = Templates::builtin();
        let sections = vec![
            RoundSection {
                id: "1".into(),
                title: "Overview".into(),
                status: "completed".into(),
                text: Some("## Overview\n\nbody".into()),
                expected: Some("the business model".into()),
                ..Default::default()
            },
            RoundSection {
                id: "2".into(),
                title: "Financials".into(),
                status: "failed".into(),
                error: Some("timeout".into()),
                ..Default::default()
            },
        ];
        let m = t
            .evaluator(
                Lang::En,
                &EvaluatorVars {
                    goal: "Analyze X",
                    round: 2,
                    max_rounds: 4,
                    stats: RoundStats {
                        tasks: 2,
                        completed: 1,
                        failed: 1,
                        blocked: 0,
                    },
                    sections: &sections,
                },
            )
            .expect("renders");
        assert_eq!(m.len(), 2);
        assert!(m[0].content.contains("run time is not a criterion"));
        let user = &m[1].content;
        assert!(user.contains("Round 2 of 4"), "{user}");
        assert!(
            user.contains("## Task 2: Financials (failed)\nFailure: timeout"),
            "{user}"
        );
        assert!(user.contains("## Overview\n\nbody"), "{user}");
        assert!(
            user.contains(
                "(completed)\nExpected output: the business model\n<data source=\"task 1\">\n## Overview"
            ),
            "{user}"
        );
    }

    #[test]
    fn answer_repair_lists_the_problems() {
        let t = Templates::builtin();
        let s = t
            .answer_repair(
                Lang::Zh,
                &AnswerRepairVars {
                    what: "评估结果",
                    attempt: 2,
                    problems: &["dimensions.correctness: 150 is not between 0 and 100".into()],
                },
            )
            .expect("renders");
        assert!(s.starts_with("你上面输出的评估结果（第 1 次尝试）"), "{s}");
        assert!(s.contains("- dimensions.correctness: 150"), "{s}");
    }

    #[test]
    fn failure_note_names_each_failed_task_in_the_plans_language() {
        let t = Templates::builtin();
        let failed = ["a (e1)".to_owned(), "b (e2)".to_owned()];
        let vars = FailureNoteVars { failed: &failed };
        assert_eq!(
            t.failure_note(Lang::Zh, &vars).expect("zh"),
            "注意：本轮之前的计划执行失败了（2 个任务失败：a (e1)；b (e2)）。请调整计划，避免类似问题。"
        );
        assert_eq!(
            t.failure_note(Lang::En, &vars).expect("en"),
            "Note: this round's previous plan failed (2 task(s) failed: a (e1); b (e2)). Adjust the plan to avoid the same problems."
        );
    }

    #[test]
    fn reflection_summary_lists_only_the_parts_with_items() {
        let t = Templates::builtin();
        let vars = ReflectionSummaryVars {
            evaluation: vec!["overall 50, correctness 40, completeness 60".into()],
            root_causes: vec!["  thin data ".into()],
            suggestions: vec!["scope: too wide -> narrow it".into()],
            lessons_learned: vec!["cite sources".into()],
            ..Default::default()
        };
        assert_eq!(
            t.reflection_summary(Lang::En, &vars).expect("en"),
            "Previous evaluation:\n- overall 50, correctness 40, completeness 60\nRoot causes:\n- thin data\nSuggestions:\n- scope: too wide -> narrow it\nLessons learned:\n- cite sources"
        );
        assert_eq!(
            t.reflection_summary(Lang::Zh, &ReflectionSummaryVars::default())
                .expect("zh"),
            ""
        );
        let zh = t.reflection_summary(Lang::Zh, &vars).expect("zh");
        assert!(zh.starts_with("上一轮评估：\n- overall 50"), "{zh}");
        assert!(zh.contains("\n根本原因：\n- thin data\n优化建议："), "{zh}");
    }

    #[test]
    fn answer_repair_names_what_was_asked_for_in_chinese() {
        let t = Templates::builtin();
        let problems = ["p".to_owned()];
        for (what, zh) in [
            ("evaluation", "评估结果"),
            ("reflection", "反思结果"),
            ("replacement tasks", "替代任务"),
        ] {
            let text = t
                .answer_repair(
                    Lang::Zh,
                    &AnswerRepairVars {
                        what,
                        attempt: 2,
                        problems: &problems,
                    },
                )
                .expect("zh");
            assert!(
                text.starts_with(&format!("你上面输出的{zh}（第 1 次尝试）")),
                "{text}"
            );
        }
    }
}
