//! Mapping either plan format's JSON shape onto [`PlanSpec`].
//!
//! Research plans carry `tasks[]` with `hints`; step plans carry
//! `steps[]` with a tool and its parameters. Models drift in naming, so common alternates
//! are accepted; a `null` counts as absent. Anything of the wrong type is a shape problem,
//! collected rather than returned at the first, so one repair prompt can fix them all.

use std::fmt;

use serde_json::{Map, Value};

use super::ParseError;
use super::top::{Item, List, RawTask, Top};
use crate::model::{Hints, PlanAbout, PlanFormat, PlanSpec, TaskId, TaskSpec};

/// A 20,000-task plan with a systematic mistake would otherwise give a 20,000-line error.
const MAX_PROBLEMS: usize = 100;

pub(super) fn plan_from_value(value: Value) -> Result<PlanSpec, ParseError> {
    let Value::Object(top) = value else {
        return Err(ParseError::Shape(vec![
            "plan JSON must be an object".to_owned(),
        ]));
    };
    plan_from_top(Top::from_map(top))
}

/// A plan object (read lean, see [`Top`]) as a plan.
pub(super) fn plan_from_top(mut plan: Top) -> Result<PlanSpec, ParseError> {
    // Some models wrap the plan as {"plan": {...}}; unwrap only when nothing else fits.
    if !plan.tasks.present()
        && !plan.steps.present()
        && let Some(inner) = plan.plan.take()
        && (inner.tasks.present() || inner.steps.present())
    {
        plan = *inner;
    }

    let mut problems = Problems::default();
    let (format, list) = if plan.tasks.present() {
        (
            PlanFormat::Research,
            Some(("tasks", std::mem::take(&mut plan.tasks))),
        )
    } else if plan.steps.present() {
        (
            PlanFormat::Steps,
            Some(("steps", std::mem::take(&mut plan.steps))),
        )
    } else {
        problems.push(r#"plan has neither "tasks" nor "steps""#.to_owned());
        (PlanFormat::Research, None)
    };
    let top = &mut plan.rest;

    let research_type = opt_string(top, &["research_type"], "", &mut problems);
    let topic_keys: &[&'static str] = match format {
        PlanFormat::Research => &["topic", "goal", "title"],
        PlanFormat::Steps => &["goal", "description", "topic", "task", "title"],
    };
    let topic = opt_string(top, topic_keys, "", &mut problems).unwrap_or_default();
    let objectives = match take(top, "objectives") {
        Some(v) => string_list(v, "objectives", &"", &mut problems),
        None => Vec::new(),
    };

    let mut tasks = Vec::new();
    match list {
        Some((_, List::Items(items))) => {
            tasks.reserve(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let position = i + 1;
                match item {
                    Item::Task(raw) => {
                        if let Some(task) = task(raw, position, format, &mut problems) {
                            tasks.push(task);
                        }
                    }
                    Item::NotObject => {
                        problems.push(format!("task #{position}: must be an object"));
                    }
                }
            }
        }
        Some((key, _)) => problems.push(format!("\"{key}\" must be an array")),
        None => {}
    }

    let about = about(top, &mut problems);
    problems.finish()?;
    Ok(PlanSpec {
        research_type,
        topic,
        objectives,
        tasks,
        format,
        about,
    })
}

/// The plan-level fields besides the tasks, under each name plans use for them
/// (snake_case, camelCase and a few synonyms).
fn about(top: &mut Map<String, Value>, problems: &mut Problems) -> PlanAbout {
    let mut label = |keys: &[&'static str]| match take_any(top, keys) {
        None => None,
        Some((_, Value::String(s))) => Some(s),
        Some((_, Value::Number(n))) => Some(n.to_string()),
        Some((key, _)) => {
            problems.push(format!("\"{key}\" must be a string"));
            None
        }
    };
    let plan_id = label(&["plan_id", "planId"]);
    // Seed 003's TaskPlan: the task the plan is for, and the plan's status.
    let task_id = label(&["task_id", "taskId"]);
    let status = label(&["status"]);
    let created_at = take_any(
        top,
        &["created_at", "createdAt", "created_time", "createdTime"],
    )
    .map(|(_, v)| v);
    let estimated_duration_secs =
        match take_any(top, &["estimated_duration_secs", "estimatedDurationSecs"]) {
            None => None,
            Some((_, Value::Number(n))) => n.as_f64().filter(|f| f.is_finite() && *f >= 0.0),
            Some((key, _)) => {
                problems.push(format!("\"{key}\" must be a number of seconds"));
                None
            }
        };
    let mut object = |keys: &[&'static str]| match take_any(top, keys) {
        None => Map::new(),
        Some((_, Value::Object(m))) => m,
        Some((key, _)) => {
            problems.push(format!("\"{key}\" must be an object"));
            Map::new()
        }
    };
    let metadata = object(&["metadata"]);
    let global_variables = object(&["global_variables", "globalVariables", "variables"]);
    // `meta` is the job's metadata, set by the runner; a plan file may carry it from an
    // earlier run (plan.json), so it is read back, as strings.
    let meta = object(&["meta"])
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            (k, text)
        })
        .collect();
    PlanAbout {
        plan_id,
        task_id,
        created_at,
        status,
        estimated_duration_secs,
        metadata,
        global_variables,
        meta,
    }
}

/// The fields of a task, each accepted under several names.
#[derive(Clone, Copy)]
enum Field {
    Id,
    Name,
    Description,
    Dependencies,
    Hints,
    Tool,
    Params,
    ExpectedOutput,
    Optional,
    RetryCount,
    Final,
    Status,
}

const FIELDS: usize = 12;

/// Which field `key` names, and its rank among that field's names (0 is preferred).
fn classify(key: &str, format: PlanFormat) -> Option<(Field, u8)> {
    let steps = format == PlanFormat::Steps;
    Some(match key {
        // Step plans number steps with `step_id`; research plans use `id`.
        "id" => (Field::Id, u8::from(steps)),
        "step_id" => (Field::Id, u8::from(!steps)),
        "task_id" => (Field::Id, 2),
        "name" => (Field::Name, 0),
        "step_name" => (Field::Name, 1),
        "title" => (Field::Name, 2),
        "description" => (Field::Description, 0),
        "dependencies" => (Field::Dependencies, 0),
        "depends_on" => (Field::Dependencies, 1),
        "deps" => (Field::Dependencies, 2),
        "hints" => (Field::Hints, 0),
        "tool" => (Field::Tool, 0),
        "tool_name" => (Field::Tool, 1),
        "tool_id" => (Field::Tool, 2),
        "params" => (Field::Params, 0),
        "parameters" => (Field::Params, 1),
        "tool_parameters" => (Field::Params, 2),
        "expected_output" => (Field::ExpectedOutput, 0),
        "expectedOutput" => (Field::ExpectedOutput, 1),
        "optional" => (Field::Optional, 0),
        "retry_count" => (Field::RetryCount, 0),
        "retryCount" => (Field::RetryCount, 1),
        "retries" => (Field::RetryCount, 2),
        "final" => (Field::Final, 0),
        "is_final" => (Field::Final, 1),
        "status" => (Field::Status, 0),
        _ => return None,
    })
}

/// One task object on its own (a streamed plan's), or its problems.
pub(super) fn one_task(
    m: Map<String, Value>,
    position: usize,
    format: PlanFormat,
) -> Result<TaskSpec, Vec<String>> {
    let mut problems = Problems::default();
    let task = task(RawTask::from_map(m), position, format, &mut problems);
    match (task, problems.messages.is_empty()) {
        (Some(t), true) => Ok(t),
        _ => Err(problems.messages),
    }
}

/// One task or step; `None` when its id is unusable (the problem is already recorded).
fn task(
    m: RawTask,
    position: usize,
    format: PlanFormat,
    problems: &mut Problems,
) -> Option<TaskSpec> {
    // One pass over the object, keeping the preferred name of each field: plans can hold
    // tens of thousands of tasks, and a lookup per alias per task adds up.
    let mut slots: [Option<(u8, &'static str, Value)>; FIELDS] = Default::default();
    for (key, value) in m.fields {
        let Some((field, rank)) = classify(key, format) else {
            continue;
        };
        let slot = &mut slots[field as usize];
        if !value.is_null() && slot.as_ref().is_none_or(|(r, _, _)| rank < *r) {
            *slot = Some((rank, key, value));
        }
    }
    let mut take = |field: Field| slots[field as usize].take().map(|(_, k, v)| (k, v));

    let id = match take(Field::Id) {
        None => {
            problems.push(format!("task #{position}: \"id\" is missing"));
            None
        }
        Some((key, v)) => {
            let out_of_range = out_of_range(&v);
            let id = task_id(v);
            match (&id, out_of_range) {
                (None, Some(n)) => problems.push(format!(
                    "task #{position}: \"{key}\" {n} is out of range (an integer id is at most {}; use a string for larger ones)",
                    i64::MAX
                )),
                (None, None) => problems.push(format!(
                    "task #{position}: \"{key}\" must be an integer or a string"
                )),
                _ => {}
            }
            id
        }
    };
    let label = Label {
        id: id.as_ref(),
        position,
    };

    let string = |slot: Option<(&str, Value)>, problems: &mut Problems| match slot? {
        (_, Value::String(s)) => Some(s),
        (key, _) => {
            problems.push(format!("{label}\"{key}\" must be a string"));
            None
        }
    };
    let name = string(take(Field::Name), problems);
    let description = string(take(Field::Description), problems);
    let dependencies = match take(Field::Dependencies) {
        Some((key, v)) => id_list(v, key, &label, problems),
        None => Vec::new(),
    };
    let hints = match take(Field::Hints) {
        None => Hints::default(),
        Some((_, Value::Object(mut h))) => {
            let mut list = |key: &str, field: &str| match h.remove(key).filter(|v| !v.is_null()) {
                Some(v) => string_list(v, field, &label, problems),
                None => Vec::new(),
            };
            Hints {
                data_needs: list("data_needs", "hints.data_needs"),
                key_questions: list("key_questions", "hints.key_questions"),
                suggested_tools: list("suggested_tools", "hints.suggested_tools"),
            }
        }
        Some(_) => {
            problems.push(format!("{label}\"hints\" must be an object"));
            Hints::default()
        }
    };
    let tool = string(take(Field::Tool), problems);
    let params = take(Field::Params).map(|(_, v)| v);
    let expected_output = string(take(Field::ExpectedOutput), problems);
    let optional = optional_flag(take(Field::Optional), &label, problems);
    let retry_count = retry_count(take(Field::RetryCount), &label, problems);
    let is_final = optional_flag(take(Field::Final), &label, problems);
    let status = string(take(Field::Status), problems);

    Some(TaskSpec {
        id: id?,
        // A step plan often gives only a name; it is then the description as well.
        description: description.or_else(|| name.clone()).unwrap_or_default(),
        name,
        dependencies,
        hints,
        tool,
        params,
        expected_output,
        optional,
        retry_count,
        is_final,
        status,
    })
}

/// A step's `optional` (absent or false: a failure blocks the dependents) or `final`.
fn optional_flag(slot: Option<(&str, Value)>, label: &Label<'_>, problems: &mut Problems) -> bool {
    match slot {
        None | Some((_, Value::Bool(false))) => false,
        Some((_, Value::Bool(true))) => true,
        Some((key, _)) => {
            problems.push(format!("{label}\"{key}\" must be true or false"));
            false
        }
    }
}

/// A step's `retryCount`: retries after the first attempt.
fn retry_count(
    slot: Option<(&str, Value)>,
    label: &Label<'_>,
    problems: &mut Problems,
) -> Option<u32> {
    let (key, v) = slot?;
    match v.as_u64() {
        // More than 10 retries of one step is a typo or a loop, not a policy.
        Some(n) if n <= 10 => Some(n as u32),
        _ => {
            problems.push(format!(
                "{label}\"{key}\" must be a whole number from 0 to 10"
            ));
            None
        }
    }
}

/// How messages name a task: by its id when usable, else by 1-based position. Formatted only
/// when a problem is found. The trailing ": " lets messages read `task 3: "hints" must ...`.
#[derive(Clone, Copy)]
struct Label<'a> {
    id: Option<&'a TaskId>,
    position: usize,
}

impl fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.id {
            Some(TaskId::Str(s)) if s.trim().is_empty() => write!(f, "task #{}: ", self.position),
            Some(id) => write!(f, "task {id}: "),
            None => write!(f, "task #{}: ", self.position),
        }
    }
}

/// `1`, `3.0` and `"a"` are ids; `1.5`, `true`, objects and out-of-range numbers are not.
/// Numeric text stays a string: `"1"` still matches `1` through [`TaskId::key`].
fn task_id(v: Value) -> Option<TaskId> {
    match v {
        Value::String(s) => Some(TaskId::Str(s)),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                return Some(TaskId::Int(i));
            }
            let f = n.as_f64()?;
            // i64::MAX as f64 rounds up to 2^63, hence the strict upper bound.
            let whole = f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64;
            whole.then_some(TaskId::Int(f as i64))
        }
        _ => None,
    }
}

/// The number, when `v` is a whole number too large for an integer id.
fn out_of_range(v: &Value) -> Option<String> {
    let Value::Number(n) = v else { return None };
    let whole = n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0);
    (whole && n.as_i64().is_none()).then(|| n.to_string())
}

/// A list of ids; a single id is a one-element list.
fn id_list(v: Value, key: &str, ctx: &dyn fmt::Display, problems: &mut Problems) -> Vec<TaskId> {
    let parsed = match v {
        Value::Array(items) => items.into_iter().map(task_id).collect::<Option<Vec<_>>>(),
        single => task_id(single).map(|id| vec![id]),
    };
    parsed.unwrap_or_else(|| {
        problems.push(format!("{ctx}\"{key}\" must be a list of ids"));
        Vec::new()
    })
}

/// A list of strings; a single string is a one-element list. `field` names it in messages.
fn string_list(
    v: Value,
    field: &str,
    ctx: &dyn fmt::Display,
    problems: &mut Problems,
) -> Vec<String> {
    let parsed = match v {
        Value::String(s) => Some(vec![s]),
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::String(s) => Some(s),
                _ => None,
            })
            .collect(),
        _ => None,
    };
    parsed.unwrap_or_else(|| {
        problems.push(format!("{ctx}\"{field}\" must be a list of strings"));
        Vec::new()
    })
}

/// The first of `keys` present as a string; a wrong type is recorded under the key used.
fn opt_string(
    m: &mut Map<String, Value>,
    keys: &[&'static str],
    ctx: &str,
    problems: &mut Problems,
) -> Option<String> {
    match take_any(m, keys)? {
        (_, Value::String(s)) => Some(s),
        (key, _) => {
            problems.push(format!("{ctx}\"{key}\" must be a string"));
            None
        }
    }
}

/// Removes `key`, treating `null` as absent. Values are moved out, not cloned.
fn take(m: &mut Map<String, Value>, key: &str) -> Option<Value> {
    m.remove(key).filter(|v| !v.is_null())
}

/// The first non-null value among `keys`, with the key it was found under.
fn take_any(m: &mut Map<String, Value>, keys: &[&'static str]) -> Option<(&'static str, Value)> {
    keys.iter().find_map(|&k| take(m, k).map(|v| (k, v)))
}

#[derive(Default)]
struct Problems {
    messages: Vec<String>,
    dropped: usize,
}

impl Problems {
    fn push(&mut self, msg: String) {
        if self.messages.len() < MAX_PROBLEMS {
            self.messages.push(msg);
        } else {
            self.dropped += 1;
        }
    }

    fn finish(mut self) -> Result<(), ParseError> {
        if self.messages.is_empty() {
            return Ok(());
        }
        if self.dropped > 0 {
            self.messages
                .push(format!("... and {} more problems", self.dropped));
        }
        Err(ParseError::Shape(self.messages))
    }
}
