//! Two steps of every render taken the short way where minijinja's own way gives the same
//! text: printing a string, and `join` of a list by a plain string. Each task's prompt is a
//! render, so these were a measurable part of each task's CPU (see docs/benchmarks.md, "the
//! subagent prompt's cost"). Anything else goes to minijinja's own formatter and filter,
//! unchanged; `tests` compares both ways over varied values.

use std::fmt::Write;
use std::sync::OnceLock;

use minijinja::value::{Rest, Value, ValueKind, ValueOrKwargs};
use minijinja::{AutoEscape, Environment, Error, Output, State};

/// Installs both on `env`.
pub(crate) fn install(env: &mut Environment<'_>) {
    env.set_formatter(format);
    env.add_filter("join", join);
}

/// minijinja's default formatter, but a string printed without escaping is written as it is
/// rather than through `Display` and `format_args!` (most of the cost of a `{{ }}`).
fn format(out: &mut Output<'_>, state: &mut State<'_, '_>, value: &Value) -> Result<(), Error> {
    if matches!(state.auto_escape(), AutoEscape::None)
        && value.kind() == ValueKind::String
        && let Some(s) = value.as_str()
    {
        return out.write_str(s).map_err(Error::from);
    }
    minijinja::escape_formatter(out, state, value)
}

/// minijinja's `join` filter; a list joined by a string (or by nothing) without escaping is
/// joined here, without the keyword-argument bookkeeping that was most of the filter's cost.
fn join(state: &mut State<'_, '_>, args: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    if let Some(joined) = join_plain(state, &args) {
        return Ok(joined);
    }
    builtin_join().call(state, &args.into_values())
}

fn builtin_join() -> &'static Value {
    static JOIN: OnceLock<Value> = OnceLock::new();
    JOIN.get_or_init(|| Value::from_function(minijinja::filters::join))
}

/// What minijinja's `join` makes of `list | join(joiner)` when auto-escaping is off (its
/// `join_plain`), or `None` for any other call.
fn join_plain(state: &State<'_, '_>, args: &[ValueOrKwargs]) -> Option<Value> {
    let (list, joiner) = match args {
        [list] => (&**list, ""),
        [list, joiner] if joiner.kind() == ValueKind::String => (&**list, joiner.as_str()?),
        _ => return None,
    };
    if !matches!(state.auto_escape(), AutoEscape::None) || list.kind() != ValueKind::Seq {
        return None;
    }
    let mut out = String::new();
    for (at, item) in list.try_iter().ok()?.enumerate() {
        if at > 0 {
            out.push_str(joiner);
        }
        match item.kind() {
            ValueKind::String => out.push_str(item.as_str()?),
            // An invalid item is the builtin's error to report.
            ValueKind::Invalid => return None,
            _ => {
                let _ = write!(out, "{item}");
            }
        }
    }
    Some(Value::from(out))
}

#[cfg(test)]
mod tests;
