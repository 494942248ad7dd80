//! The web view: the runs list at `/`, a run's page at `/runs/{id}` (its DAG drawn here as
//! SVG by the same code as `report.html`, then kept live by `run.js` from the run's events),
//! and the assets, compiled into the binary: nothing is fetched from anywhere else.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use planwave_plan::ValidatedPlan;
use planwave_record::TaskRecord;
use planwave_report::{dag_svg, gantt_svg};

use crate::error::ApiError;
use crate::state::AppState;

const INDEX: &str = include_str!("../assets/index.html");
const RUN: &str = include_str!("../assets/run.html");
const CSS: &str = include_str!("../assets/app.css");
const RUN_JS: &str = include_str!("../assets/run.js");
const LIST_JS: &str = include_str!("../assets/list.js");
const ANSWERS_JS: &str = include_str!("../assets/answers.js");

/// Scripts only from this server; inline styles for the SVG and the report.
pub const CSP: &str = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                       frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'";

fn page(html: String) -> Response {
    (
        [
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Html(html),
    )
        .into_response()
}

pub async fn index() -> Response {
    page(INDEX.to_owned())
}

pub async fn asset(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "app.css" => (CSS, "text/css; charset=utf-8"),
        "run.js" => (RUN_JS, "text/javascript; charset=utf-8"),
        "list.js" => (LIST_JS, "text/javascript; charset=utf-8"),
        "answers.js" => (ANSWERS_JS, "text/javascript; charset=utf-8"),
        _ => return ApiError::NotFound(format!("no asset {name:?}")).into_response(),
    };
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// A run's current plan and its task records, what the SVG pictures are drawn from.
type Picture = (Arc<ValidatedPlan>, Vec<TaskRecord>);

/// The run's current plan and task records: live, or from its files.
fn picture(state: &AppState, id: &str) -> Result<Option<Picture>, ApiError> {
    let dir = crate::api::existing(state, id)?;
    if let Some(live) = state.live(id) {
        let s = live.state();
        if let Some(plan) = &s.plan
            && (!live.is_done_locked(&s) || !dir.join("run.json").is_file())
        {
            return Ok(Some((plan.clone(), s.records.clone())));
        }
    }
    let plan = crate::run_files::read(&dir, "plan.json")
        .ok()
        .and_then(|bytes| planwave_plan::parse_plan(&bytes).ok())
        .and_then(|spec| ValidatedPlan::new(spec).ok());
    let Some(plan) = plan else {
        return Ok(None);
    };
    let records: Vec<TaskRecord> = crate::listing::read_run_json(&dir)
        .and_then(|v| serde_json::from_value(v.get("tasks")?.clone()).ok())
        .unwrap_or_default();
    Ok(Some((Arc::new(plan), records)))
}

pub async fn run_page(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    // The log's length before the picture: the page follows the events after it (a few may
    // be in both, and applying them again changes nothing).
    let after = state.live(&id).map_or(0, |l| l.log.len());
    let pic = picture(&state, &id)?;
    // A run waiting on answers shows its questions with a form for them (`answers.js`).
    let questions = state
        .run_dir(&id)
        .filter(|_| state.live(&id).is_none_or(|l| l.is_done()))
        .and_then(|dir| planwave_runner::ops::questions_in(&dir))
        .map(|w| w.questions)
        .unwrap_or_default();
    let (title, lang, dag, gantt) = match &pic {
        Some((plan, records)) => (
            plan.spec().topic.clone(),
            match plan.lang() {
                planwave_plan::Lang::Zh => "zh",
                planwave_plan::Lang::En => "en",
            },
            dag_svg(plan, records),
            gantt_svg(plan, records),
        ),
        None => (String::new(), "en", String::new(), String::new()),
    };
    let title = if title.trim().is_empty() {
        id.clone()
    } else {
        title
    };
    // One pass of the template engine, HTML-escaping every value but the two pictures
    // (drawn by planwave_report, which escapes what it draws): text from the plan is never
    // read as a placeholder or as markup.
    let mut env = minijinja::Environment::new();
    env.add_template("run.html", RUN)
        .map_err(|e| ApiError::Internal(format!("the run page: {e}")))?;
    let html = env
        .get_template("run.html")
        .and_then(|t| {
            t.render(minijinja::context! {
                id => id, title => title, lang => lang, after => after, dag => dag, gantt => gantt,
                questions => questions,
            })
        })
        .map_err(|e| ApiError::Internal(format!("the run page: {e}")))?;
    Ok(page(html))
}

fn svg(body: String) -> Response {
    (
        [(header::CONTENT_TYPE, "image/svg+xml; charset=utf-8")],
        body,
    )
        .into_response()
}

pub async fn dag(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (plan, records) =
        picture(&state, &id)?.ok_or_else(|| ApiError::NotFound("no plan yet".into()))?;
    Ok(svg(dag_svg(&plan, &records)))
}

pub async fn gantt(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (plan, records) =
        picture(&state, &id)?.ok_or_else(|| ApiError::NotFound("no plan yet".into()))?;
    Ok(svg(gantt_svg(&plan, &records)))
}
