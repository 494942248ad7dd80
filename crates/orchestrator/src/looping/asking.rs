//! Asking the evaluator, reflector or planner from inside the loop: cut short by Ctrl-C, and
//! what was asked kept in the round's files and calls.

use planwave_record::RunResult;
use serde::Serialize;
use serde_json::json;

use super::rounds::{LoopContext, LoopError, Rounds};
use crate::ask::{Asked, LoopQuestion, ask, with_raw};

/// `ask`, unless interrupted first (`Ok(None)`).
pub(super) async fn interruptible<T, E>(
    cx: &LoopContext,
    f: impl std::future::Future<Output = Result<Asked<T>, E>>,
) -> Result<Option<Asked<T>>, E> {
    tokio::select! {
        r = f => r.map(Some),
        _ = cx.interrupt.cancelled() => Ok(None),
    }
}

/// Asks the evaluator or reflector and keeps what happened: `rounds/<k>/<name>.json` holds
/// the answer (under `name`) with every attempt, and the attempts join the round's calls.
/// `Ok(None)` when interrupted first.
pub(super) async fn ask_and_keep<R: Rounds, T: Serialize>(
    cx: &LoopContext,
    driver: &mut R,
    k: u32,
    result: &mut RunResult,
    question: LoopQuestion<'_, T>,
    name: &str,
) -> Result<Option<Asked<T>>, LoopError<R::Error>> {
    let role = question.role;
    let Some(asked) = interruptible(cx, ask(&cx.provider, &cx.templates, question)).await? else {
        return Ok(None);
    };
    let mut kept = serde_json::Map::new();
    kept.insert(name.to_owned(), json!(asked.value));
    kept.insert("attempts".to_owned(), json!(with_raw(&asked.attempts)));
    driver
        .save(k, &format!("{name}.json"), &serde_json::Value::Object(kept))
        .map_err(LoopError::Driver)?;
    driver
        .add_calls(k, asked.call_records(role), Some(result))
        .map_err(LoopError::Driver)?;
    Ok(Some(asked))
}
