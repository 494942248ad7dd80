//! The reflective loop (plan, run, evaluate, reflect, with adaptive
//! controller inside each round):
//!
//! ```text
//! round k: plan (with round k-1's reflection) -> run -> [recover failed tasks] -> evaluate
//!          -> stop? -> reflect -> stop? -> round k+1
//! ```
//!
//! Planning and running belong to the caller ([`Rounds`]): they write files and show
//! progress. This module decides: when to recover and how, when to stop, and what the next
//! round's planner is told.
//!
//! Its rooms: `rounds` (the caller's side), `run` (the loop), `passes` and `recovery` (a
//! round's executions and what follows a failed one), `planning`, `replacement` (partial
//! replans), `evaluation`, `reflection`, `asking` (the loop's questions to the model, kept)
//! and `records` (what is kept of rounds and passes).

mod asking;
mod evaluation;
mod passes;
mod planning;
mod records;
mod recovery;
mod reflection;
mod replacement;
mod rounds;
mod run;

pub use records::{LoopOutcome, PassRecord, RoundRecord, best_round};
pub use rounds::{LoopContext, LoopError, Planned, Rounds};
pub use run::{LoopStart, recover_plan, run_loop, run_loop_from};

#[cfg(test)]
mod tests;
