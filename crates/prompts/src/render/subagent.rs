//! The variables of `subagent.j2`, built straight as minijinja values.
//!
//! Rendered once per task, so its cost is part of every task's: serializing a borrowed vars
//! struct through serde was a tenth of a zero-latency run's CPU, most of it copying each
//! prerequisite's section into a new minijinja string. The values here are the ones that
//! serialization made (each struct a map of its fields in the same order, answering every
//! lookup, iteration and printing as serde's map does; lists the same `Vec<Value>` objects),
//! so a template, the user's own included, sees no difference; `tests` renders both ways and
//! compares. Sections are shared: minijinja's strings are `Arc<str>`, and so are the
//! engine's sections.

use std::cell::RefCell;
use std::sync::Arc;

use minijinja::value::{Enumerator, Object, Value};
use planwave_plan::{PlanSpec, TaskId, ValidatedPlan};

use crate::set::{AnswerForm, PriorSection, TaskText};

/// `task`, `research_type`, `topic`, `objectives`, `prior` and `json_protocol` (the section
/// goes inside the JSON tool protocol's `content`) of the subagent writing task `index`.
pub(crate) fn vars(
    plan: &ValidatedPlan,
    index: usize,
    own: &TaskText<'_>,
    prior: &[PriorSection],
) -> Value {
    let spec = plan.spec();
    let task = plan.task(index);
    let hints = own.hints;
    let hints = Record::value(
        &HINTS,
        [
            strings(&hints.data_needs),
            strings(&hints.key_questions),
            strings(&hints.suggested_tools),
        ],
    );
    let task = Record::value(
        &TASK,
        [
            id(&task.id),
            Value::from(task.title()),
            Value::from(own.description),
            hints,
        ],
    );
    let prior = prior
        .iter()
        .map(|p| {
            Record::value(
                &PRIOR,
                [
                    id(plan.id(p.index)),
                    Value::from(plan.task(p.index).title()),
                    // Data (`crate::data`): the same `Arc` when clean, the usual case.
                    Value::from(crate::data::clean_shared(&p.text)),
                ],
            )
        })
        .collect();
    let [research_type, topic, objectives] = plan_values(spec);
    let json_protocol = Value::from(own.form == AnswerForm::JsonProtocol);
    Record::value(
        &ROOT,
        [task, research_type, topic, objectives, prior, json_protocol],
    )
}

/// `research_type`, `topic` and `objectives`: the plan's, the same for each of its tasks, so
/// made once per plan (per thread) rather than copied for every task. Values are immutable
/// and a render sees one of each, so sharing them is invisible to templates; the cached ones
/// are used only while they hold the same text as the plan's.
fn plan_values(spec: &PlanSpec) -> [Value; 3] {
    thread_local! {
        static CACHED: RefCell<Option<PlanValues>> = const { RefCell::new(None) };
    }
    CACHED.with_borrow_mut(|cached| {
        if let Some(c) = cached.as_ref().filter(|c| c.holds(spec)) {
            return c.values.clone();
        }
        let fresh = PlanValues::of(spec);
        let values = fresh.values.clone();
        *cached = Some(fresh);
        values
    })
}

struct PlanValues {
    values: [Value; 3],
    /// The objectives' strings, also in `values[2]`, to compare with the plan's.
    objectives: Vec<Value>,
}

impl PlanValues {
    fn of(spec: &PlanSpec) -> PlanValues {
        let objectives: Vec<Value> = spec
            .objectives
            .iter()
            .map(|s| Value::from(s.as_str()))
            .collect();
        PlanValues {
            values: [
                Value::from(spec.research_type.as_deref()),
                Value::from(spec.topic.as_str()),
                Value::from_object(objectives.clone()),
            ],
            objectives,
        }
    }

    fn holds(&self, spec: &PlanSpec) -> bool {
        let [research_type, topic, _] = &self.values;
        research_type.as_str() == spec.research_type.as_deref()
            && topic.as_str() == Some(spec.topic.as_str())
            && self.objectives.len() == spec.objectives.len()
            && (self.objectives.iter())
                .zip(&spec.objectives)
                .all(|(v, s)| v.as_str() == Some(s.as_str()))
    }
}

/// The fields of one of the structs the variables were serialized from: their names in
/// order, and which one a name is (a `match`, a few integer compares: lookups are most of a
/// render's variable loads).
struct Fields<const N: usize> {
    names: [&'static str; N],
    find: fn(&str) -> Option<usize>,
}

macro_rules! fields {
    ($fields:ident, $n:literal: $($at:literal => $name:literal),+) => {
        static $fields: Fields<$n> = Fields {
            names: [$($name),+],
            find: |name| match name {
                $($name => Some($at),)+
                _ => None,
            },
        };
    };
}

fields!(ROOT, 6: 0 => "task", 1 => "research_type", 2 => "topic", 3 => "objectives", 4 => "prior", 5 => "json_protocol");
fields!(TASK, 4: 0 => "id", 1 => "title", 2 => "description", 3 => "hints");
fields!(HINTS, 3: 0 => "data_needs", 1 => "key_questions", 2 => "suggested_tools");
fields!(PRIOR, 3: 0 => "id", 1 => "title", 2 => "text");

/// A struct's fields and their values, as serde made a map of it: it answers templates as
/// minijinja's own map of a serialized struct (crate-private, so not usable here) does, in
/// one allocation.
#[derive(Debug)]
struct Record<const N: usize> {
    fields: &'static Fields<N>,
    values: [Value; N],
}

impl<const N: usize> std::fmt::Debug for Fields<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names).finish()
    }
}

impl<const N: usize> Record<N> {
    fn value(fields: &'static Fields<N>, values: [Value; N]) -> Value {
        Value::from_object(Record { fields, values })
    }
}

impl<const N: usize> Object for Record<N> {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.get_value_by_str(key.as_str()?)
    }

    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        let at = (self.fields.find)(key)?;
        Some(self.values[at].clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Str(&self.fields.names)
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(N)
    }
}

/// A task id as the template has always seen it: its text, never a number.
fn id(id: &TaskId) -> Value {
    match id {
        TaskId::Str(s) => Value::from(s.as_str()),
        // itoa writes what `Display` does, without `to_string`'s allocation.
        TaskId::Int(n) => Value::from(itoa::Buffer::new().format(*n)),
    }
}

fn strings(list: &[String]) -> Value {
    list.iter().map(|s| Value::from(s.as_str())).collect()
}

#[cfg(test)]
pub(crate) mod tests;
