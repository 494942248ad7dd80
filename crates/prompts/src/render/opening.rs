//! The subagent prompt's opening, rendered once per plan instead of once per task.
//!
//! A subagent prompt is rendered for every task (at zero latency, the render was the largest
//! part of a task's instructions), and the built-in `subagent.j2` opens with instructions
//! and the run's background (research type, topic, objectives, the answer's form) that are
//! the same for every task of a plan. So at load time the template's source is split where
//! that opening ends: the opening is rendered once per plan (per thread), and each task
//! renders only the rest, after a copy of it.
//!
//! The split is taken only where it cannot change a byte of any prompt; otherwise (a user's
//! template that starts with something else) the template renders whole, as before:
//! - the opening is a template on its own: it compiles alone, so it ends outside every
//!   tag, comment, string and raw block of the whole (any of those would be left open);
//! - it holds only text, `{{ }}` expressions and `if`/`elif`/`else`/`endif` tags, and reads
//!   only the plan-wide variables, so it renders the same for every task of a plan;
//! - the rest starts with a tag that does not trim the whitespace before it (`{{-`, `{%-`,
//!   `{#-`), and compiles alone;
//! - the template has no `extends` or `block` (with either, the opening's text would not
//!   be output) and calls no `debug()` (which prints the template's name).
//!
//! The opening is compiled with an empty `{{ "" }}` after it, so a newline it ends with is
//! kept (minijinja drops one newline at the end of a template's source). The tests render
//! every built-in subagent prompt both ways and compare the bytes.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use minijinja::{Environment, Value};
use planwave_plan::{Lang, PlanSpec};

/// The variables of `subagent.j2` that are the same for every task of a plan.
const PLAN_WIDE: [&str; 4] = ["research_type", "topic", "objectives", "json_protocol"];

/// The only tags the opening may hold.
const OPENING_TAGS: [&str; 4] = ["if", "elif", "else", "endif"];

/// Appended to the opening's source: outputs nothing, and keeps a final newline.
const KEEP_END: &str = "{{ \"\" }}";

/// A subagent template split in two: the names of its parts in the environment.
#[derive(Debug)]
pub(crate) struct Split {
    opening: String,
    rest: String,
    /// Which `Templates` (and language) made it: a thread's cached opening is used only by
    /// the split it was rendered from.
    id: u64,
}

/// Splits the template `name` (source `source`) of `env` after its plan-wide opening, when
/// that changes no output, and adds both parts to `env`.
pub(crate) fn split(env: &mut Environment<'static>, name: &str, source: &str) -> Option<Split> {
    let at = split_point(source)?;
    let (head, tail) = source.split_at(at);
    let base = name.strip_suffix(".j2").unwrap_or(name);
    let opening = format!("{base}.opening.j2");
    let rest = format!("{base}.rest.j2");
    env.add_template_owned(opening.clone(), format!("{head}{KEEP_END}"))
        .ok()?;
    env.add_template_owned(rest.clone(), tail.to_owned()).ok()?;
    static IDS: AtomicU64 = AtomicU64::new(1);
    Some(Split {
        opening,
        rest,
        id: IDS.fetch_add(1, Ordering::Relaxed),
    })
}

/// Where the longest opening that may be split off ends, if any.
fn split_point(source: &str) -> Option<usize> {
    split_point_of(source)
}

/// [`split_point`], for the tests.
pub(super) fn split_point_of(source: &str) -> Option<usize> {
    // `debug()` prints the template's name, which the parts do not share with the whole.
    if tag_names(source).any(|t| t == "extends" || t == "block") || source.contains("debug") {
        return None;
    }
    let mut best = None;
    for at in tag_starts(source) {
        let (head, tail) = source.split_at(at);
        if head.trim().is_empty() || tail[2..].starts_with('-') {
            continue;
        }
        if !tag_names(head).all(|t| OPENING_TAGS.contains(&t)) {
            break; // every later opening holds this tag too
        }
        let kept = format!("{head}{KEEP_END}");
        // Syntax only: a default environment lexes and parses as the real one does (same
        // delimiters and whitespace rules; filters and formatters play no part here).
        let scratch = Environment::new();
        let (Ok(opening), Ok(_), Ok(_)) = (
            scratch.template_from_str(head),
            scratch.template_from_str(&kept),
            scratch.template_from_str(tail),
        ) else {
            continue; // cut inside a tag, block or string: a later point may close it
        };
        if !opening
            .undeclared_variables(false)
            .iter()
            .all(|v| PLAN_WIDE.contains(&v.as_str()))
        {
            break; // reads a task's variable: so does every later opening
        }
        best = Some(at);
    }
    best
}

/// Where each `{{`, `{%` and `{#` of `source` starts (overlapping ones included).
fn tag_starts(source: &str) -> impl Iterator<Item = usize> + '_ {
    let b = source.as_bytes();
    memchr::memchr_iter(b'{', b).filter(move |&i| matches!(b.get(i + 1), Some(b'{' | b'%' | b'#')))
}

/// The keyword of each `{% %}` tag of `source` (read loosely: a `{%` inside a string or a
/// comment counts too, which can only refuse a split).
fn tag_names(source: &str) -> impl Iterator<Item = &str> {
    source.match_indices("{%").map(move |(at, _)| {
        let rest = source[at + 2..].trim_start_matches(['-', '+']).trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        &rest[..end]
    })
}

impl Split {
    /// Renders the template for `vars` (the whole template's variables) into one buffer: the
    /// opening, rendered once per plan and kept per thread, then the rest (`hint`: the bytes
    /// its variables will add to its text).
    pub(crate) fn render(
        &self,
        env: &Environment<'static>,
        lang: Lang,
        spec: &PlanSpec,
        json_protocol: bool,
        vars: Value,
        hint: usize,
    ) -> Result<String, minijinja::Error> {
        thread_local! {
            static OPENING: RefCell<Option<Opening>> = const { RefCell::new(None) };
        }
        let rest = env.get_template(&self.rest)?;
        let opening = OPENING.with_borrow_mut(|cached| {
            if let Some(o) = cached
                .as_ref()
                .filter(|o| o.holds(self.id, lang, spec, json_protocol))
            {
                return Ok(o.text.clone());
            }
            let text: std::sync::Arc<str> = env
                .get_template(&self.opening)?
                .render(vars.clone())?
                .into();
            *cached = Some(Opening::of(
                self.id,
                lang,
                spec,
                json_protocol,
                text.clone(),
            ));
            Ok::<_, minijinja::Error>(text)
        })?;
        let mut buf = Vec::with_capacity(opening.len() + rest.source().len() + hint);
        buf.extend_from_slice(opening.as_bytes());
        rest.render_captured_to(vars, &mut buf)?;
        // Both parts are UTF-8, and the opening ends outside any character.
        String::from_utf8(buf).map_err(|e| {
            minijinja::Error::new(minijinja::ErrorKind::BadSerialization, e.to_string())
        })
    }
}

/// A thread's rendered opening, with what it was rendered from.
struct Opening {
    id: u64,
    lang: Lang,
    json_protocol: bool,
    research_type: Option<String>,
    topic: String,
    objectives: Vec<String>,
    text: std::sync::Arc<str>,
}

impl Opening {
    fn of(
        id: u64,
        lang: Lang,
        spec: &PlanSpec,
        json_protocol: bool,
        text: std::sync::Arc<str>,
    ) -> Opening {
        Opening {
            id,
            lang,
            json_protocol,
            research_type: spec.research_type.clone(),
            topic: spec.topic.clone(),
            objectives: spec.objectives.clone(),
            text,
        }
    }

    /// Whether it was rendered by split `id` for this plan's values (compared as text, so a
    /// new plan with the same background shares it, and a different one never does).
    fn holds(&self, id: u64, lang: Lang, spec: &PlanSpec, json_protocol: bool) -> bool {
        self.id == id
            && self.lang == lang
            && self.json_protocol == json_protocol
            && self.research_type == spec.research_type
            && self.topic == spec.topic
            && self.objectives == spec.objectives
    }
}
