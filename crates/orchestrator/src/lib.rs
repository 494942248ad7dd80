//! The reflective research loop: plan, run, evaluate, reflect, and plan
//! again with the reflection, until the result is good enough; inside each round, recovery
//! from failed tasks by `retry_step`, `replan_from_failure` or `complete_replan`.
//!
//! [`model`] holds the evaluator's and reflector's answers, [`judge`] parses them tolerantly
//! and validates them strictly, [`ask`] asks with repair, [`policy`] decides when to stop and
//! how to recover (pure), [`replan`] merges a partial replan into the kept tasks ([`replan_steps`] a step plan's,
//! with the tool catalogue), and
//! [`looping`] runs the loop through the caller's [`Rounds`] (planning and execution with
//! files and progress).
//!
//! This crate knows nothing of the command line, terminals or file layout.

pub mod ask;
pub mod judge;
pub mod looping;
pub mod model;
pub mod policy;
pub mod replan;
pub mod replan_steps;
pub mod schemas;

pub use judge::{parse_evaluation, parse_reflection};
pub use looping::{
    LoopContext, LoopError, LoopOutcome, LoopStart, PassRecord, Planned, RoundRecord, Rounds,
    best_round, recover_plan, run_loop, run_loop_from,
};
pub use model::{Dimensions, Evaluation, Reflection, Suggestion};
pub use policy::{LoopPolicy, StopReason, Strategy};
