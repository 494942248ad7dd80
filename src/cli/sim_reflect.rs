//! The simulator's script for the reflective loop (shared by `research` and
//! `sim-llm serve`): scores and replan decisions per round, invalid first answers, and task
//! failures in a round's first pass.

use clap::Args;
use planwave_llm::AgentRole;
use planwave_sim::{ReflectScript, TaskFault};

use super::exit::InvalidInput;

#[derive(Debug, Args)]
pub struct SimReflectOptions {
    /// Evaluator's correctness per round (comma-separated, 0-100; the last repeats), e.g.
    /// 40,70,96. Default: from the share of completed sections.
    #[arg(long, value_name = "SCORES", value_delimiter = ',')]
    pub sim_scores: Vec<f64>,
    /// Evaluator's overall score per round (default: correctness - 10); `is_successful` is
    /// overall >= 80.
    #[arg(long, value_name = "SCORES", value_delimiter = ',')]
    pub sim_overall: Vec<f64>,
    /// Reflector's should_replan per round, e.g. true,true,false (default: any task failed).
    #[arg(long, value_name = "BOOLS", value_delimiter = ',', action = clap::ArgAction::Append)]
    pub sim_replan: Vec<bool>,
    /// Roles whose first answer per request is invalid (evaluator, reflector), to exercise
    /// the repair of answers.
    #[arg(long, value_name = "ROLES", value_delimiter = ',')]
    pub sim_invalid: Vec<String>,
    /// Task failures in the first execution pass of a round: ROUND:TASK:KIND with KIND
    /// transient or fatal (comma-separated), e.g. 1:2:transient.
    #[arg(long, value_name = "FAULTS", value_delimiter = ',')]
    pub sim_task_fail: Vec<TaskFault>,
    /// The strategy the simulated step-level reflection recommends (retry_step,
    /// replan_from_failure or complete_replan; default: by the failures' kind).
    #[arg(long, value_name = "STRATEGY", value_parser = ["retry_step", "replan_from_failure", "complete_replan"])]
    pub sim_step_strategy: Option<String>,
}

impl SimReflectOptions {
    pub fn script(&self) -> Result<ReflectScript, InvalidInput> {
        let bad = |flag: &str, p: String| InvalidInput {
            source_name: flag.into(),
            problems: vec![p],
        };
        for (flag, list) in [
            ("--sim-scores", &self.sim_scores),
            ("--sim-overall", &self.sim_overall),
        ] {
            if let Some(s) = list
                .iter()
                .find(|s| !(s.is_finite() && (0.0..=100.0).contains(*s)))
            {
                return Err(bad(flag, format!("{s} is not a score from 0 to 100")));
            }
        }
        let invalid = self
            .sim_invalid
            .iter()
            .map(|r| match r.trim() {
                "evaluator" => Ok(AgentRole::Evaluator),
                "reflector" => Ok(AgentRole::Reflector),
                o => Err(bad(
                    "--sim-invalid",
                    format!("{o:?} is not evaluator or reflector"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ReflectScript {
            scores: self.sim_scores.clone(),
            overall: self.sim_overall.clone(),
            replan: self.sim_replan.clone(),
            invalid,
            task_faults: self.sim_task_fail.clone(),
            step_strategy: self.sim_step_strategy.clone(),
        })
    }
}
