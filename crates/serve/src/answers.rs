//! `POST /api/runs/{id}/answers`: the answers to a `needs_input` run's clarifying
//! questions. The body is checked as `--answers` is (at most ten answers, none empty or over
//! 2,000 characters, no unknown key; no more answers than questions), the questions are
//! paired with the answers given without one, and the run starts again in its directory
//! with them: the goal is planned and run, as `planwave research --answers` would.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use planwave_config::spec::{Answers, Work};
use planwave_plan::clarification::Clarification;
use planwave_runner::ops::{Invocation, questions_in};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::api::{Created, RunLinks, existing, parse_json};
use crate::error::ApiError;
use crate::state::AppState;

/// The answers, in the order of the questions: strings, or `{"question", "answer"}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswersBody {
    #[schema(value_type = Vec<Object>)]
    pub answers: Answers,
}

#[utoipa::path(post, path = "/api/runs/{id}/answers", params(("id" = String, Path)),
    request_body = AnswersBody,
    responses((status = 202, body = Created), (status = 409, body = crate::error::ErrorBody),
              (status = 422, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn post_answers(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let dir = existing(&state, &id)?;
    if state.remote.is_some() {
        return Err(ApiError::Conflict(
            "a server reading a NATS fleet takes no answers: submit the job again with its answers"
                .into(),
        ));
    }
    if state.live(&id).is_some_and(|l| !l.is_done()) {
        return Err(ApiError::Conflict(format!("run {id:?} is running")));
    }
    let waiting = questions_in(&dir)
        .ok_or_else(|| ApiError::Conflict(format!("run {id:?} is not waiting for answers")))?;
    let body: AnswersBody = parse_json(&body)?;
    let answers = paired(body.answers.0, &waiting.questions)?;
    let inv = Invocation::read(&dir).map_err(|e| {
        ApiError::Unprocessable("invalid invocation.json".into(), e.problems.clone())
    })?;
    let mut spec = inv.spec.clone();
    match &mut spec.work {
        Work::Goal { research, .. } => research.planner.answers = Some(Answers(answers)),
        Work::Plan { .. } => {
            return Err(ApiError::Conflict(format!(
                "run {id:?} runs a plan, not a goal"
            )));
        }
    }
    crate::jobs::restart(&state, &id, dir, spec)?;
    let links = RunLinks::of(&id);
    Ok((StatusCode::ACCEPTED, Json(Created { id, links })).into_response())
}

/// The answers with the question each one answers (the one at its place, unless it names
/// its own); more answers than questions is an error.
fn paired(
    answers: Vec<Clarification>,
    questions: &[String],
) -> Result<Vec<Clarification>, ApiError> {
    if answers.len() > questions.len() {
        return Err(ApiError::Unprocessable(
            "invalid answers".into(),
            vec![format!(
                "answers: {} answers to {} question(s)",
                answers.len(),
                questions.len()
            )],
        ));
    }
    Ok(answers
        .into_iter()
        .zip(questions)
        .map(|(a, q)| Clarification {
            question: a.question.or_else(|| Some(q.clone())),
            answer: a.answer,
        })
        .collect())
}
