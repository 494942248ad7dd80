//! `subagent.j2` compiled to a few steps, when the template is built from the forms the
//! built-in ones use: rendered once per task, through minijinja it was 40 % of a zero-latency
//! chain's instructions (~27 k per task, see docs/benchmarks.md, "the prompt compiled"), here
//! it is a few string copies.
//!
//! The forms are those of `prompts/{en,zh}/subagent.j2`: a string variable printed, `x or
//! "text"`, `list | join("sep") if list else "text"`, `{% if prior %}` and `{% for s in
//! prior %}` with `s.id`, `s.title`, `s.text`. Any other tag, a comment, whitespace control or
//! a string with an escape makes [`Compiled::of`] answer `None`, and the template is rendered
//! by minijinja as before; an override that only rewords the prose keeps the compiled form.
//! The text is minijinja's byte for byte (its default settings: no trimming around blocks, the
//! template's one trailing newline dropped); `tests` renders both ways and compares.

use planwave_plan::{TaskId, ValidatedPlan};

use crate::set::{PriorSection, TaskText};

/// The template as steps.
#[derive(Debug)]
pub(crate) struct Compiled {
    steps: Vec<Step>,
    /// The literal text's length, to size the output once.
    literal_len: usize,
}

#[derive(Debug, PartialEq)]
enum Step {
    Text(String),
    Print(Field),
    /// `field or "text"`.
    Or(Field, String),
    /// `list | join("sep") if list else "text"`.
    Join(List, String, String),
    /// `{% if prior %}`: the steps when there are prerequisite sections.
    IfPrior(Vec<Step>),
    /// `{% for s in prior %}`: the steps for each.
    ForPrior(Vec<Step>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Field {
    TaskId,
    TaskTitle,
    TaskDescription,
    Topic,
    ResearchType,
    PriorId,
    PriorTitle,
    PriorText,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum List {
    Objectives,
    DataNeeds,
    KeyQuestions,
    SuggestedTools,
}

/// What the steps read: one task's variables.
struct Vars<'a> {
    plan: &'a ValidatedPlan,
    index: usize,
    own: &'a TaskText<'a>,
    prior: &'a [PriorSection],
}

impl Compiled {
    /// The compiled form of `source`, if it uses only the forms above.
    pub(crate) fn of(source: &str) -> Option<Compiled> {
        // minijinja drops the template's last newline (`keep_trailing_newline` is off).
        let source = source
            .strip_suffix("\r\n")
            .or_else(|| source.strip_suffix('\n'))
            .unwrap_or(source);
        let mut parser = Parser { rest: source };
        let steps = parser.steps(Scope::Top, None)?;
        let literal_len = literal_len(&steps);
        Some(Compiled { steps, literal_len })
    }

    /// The text minijinja renders for the subagent writing task `index`.
    pub(crate) fn render(
        &self,
        plan: &ValidatedPlan,
        index: usize,
        own: &TaskText<'_>,
        prior: &[PriorSection],
    ) -> String {
        let vars = Vars {
            plan,
            index,
            own,
            prior,
        };
        // Exactly its size: the prompt is held while its model call is in flight, and the
        // message takes this buffer as it is (see `messages_owned`).
        let len = self.literal_len + fields_len(&self.steps, &vars, None);
        let mut out = String::with_capacity(len);
        run(&self.steps, &vars, None, &mut out);
        out
    }
}

/// The literal text of `steps` written once (not in an `if` or a loop, which depend on the
/// sections).
fn literal_len(steps: &[Step]) -> usize {
    steps
        .iter()
        .map(|s| match s {
            Step::Text(t) => t.len(),
            _ => 0,
        })
        .sum()
}

/// The length of what `run` writes besides the literal text of `steps` outside loops.
fn fields_len(steps: &[Step], vars: &Vars<'_>, section: Option<&PriorSection>) -> usize {
    let mut len = 0;
    for step in steps {
        len += match step {
            Step::Text(_) => 0,
            Step::Print(f) => field_len(*f, vars, section),
            Step::Or(f, otherwise) => match field_len(*f, vars, section) {
                0 => otherwise.len(),
                n => n,
            },
            Step::Join(list, sep, otherwise) => match list_of(*list, vars) {
                [] => otherwise.len(),
                items => {
                    items.iter().map(String::len).sum::<usize>() + sep.len() * (items.len() - 1)
                }
            },
            Step::IfPrior(_) if vars.prior.is_empty() => 0,
            Step::IfPrior(body) => literal_len(body) + fields_len(body, vars, section),
            Step::ForPrior(body) => {
                let text = literal_len(body);
                (vars.prior.iter())
                    .map(|s| text + fields_len(body, vars, Some(s)))
                    .sum()
            }
        };
    }
    len
}

fn run(steps: &[Step], vars: &Vars<'_>, section: Option<&PriorSection>, out: &mut String) {
    for step in steps {
        match step {
            Step::Text(t) => out.push_str(t),
            Step::Print(f) => field(*f, vars, section, out),
            Step::Or(f, otherwise) => {
                let at = out.len();
                field(*f, vars, section, out);
                if out.len() == at {
                    out.push_str(otherwise);
                }
            }
            Step::Join(list, sep, otherwise) => {
                let items = list_of(*list, vars);
                if items.is_empty() {
                    out.push_str(otherwise);
                }
                for (at, item) in items.iter().enumerate() {
                    if at > 0 {
                        out.push_str(sep);
                    }
                    out.push_str(item);
                }
            }
            Step::IfPrior(body) => {
                if !vars.prior.is_empty() {
                    run(body, vars, section, out);
                }
            }
            Step::ForPrior(body) => {
                for s in vars.prior {
                    run(body, vars, Some(s), out);
                }
            }
        }
    }
}

fn field_len(f: Field, vars: &Vars<'_>, section: Option<&PriorSection>) -> usize {
    let plan = vars.plan;
    match (f, section) {
        (Field::TaskId, _) => id_len(plan.id(vars.index)),
        (Field::TaskTitle, _) => plan.task(vars.index).title().len(),
        (Field::TaskDescription, _) => vars.own.description.len(),
        (Field::Topic, _) => plan.spec().topic.len(),
        (Field::ResearchType, _) => plan.spec().research_type.as_deref().map_or(0, str::len),
        (Field::PriorId, Some(s)) => id_len(plan.id(s.index)),
        (Field::PriorTitle, Some(s)) => plan.task(s.index).title().len(),
        (Field::PriorText, Some(s)) => s.text.len(),
        (_, None) => 0,
    }
}

fn id_len(id: &TaskId) -> usize {
    match id {
        TaskId::Str(s) => s.len(),
        TaskId::Int(n) => itoa::Buffer::new().format(*n).len(),
    }
}

/// Writes a string variable (a missing research type writes nothing: only `or` prints it).
fn field(f: Field, vars: &Vars<'_>, section: Option<&PriorSection>, out: &mut String) {
    let plan = vars.plan;
    match f {
        Field::TaskId => id(plan.id(vars.index), out),
        Field::TaskTitle => out.push_str(plan.task(vars.index).title()),
        Field::TaskDescription => out.push_str(vars.own.description),
        Field::Topic => out.push_str(&plan.spec().topic),
        Field::ResearchType => out.push_str(plan.spec().research_type.as_deref().unwrap_or("")),
        // The parser allows these only inside the loop.
        Field::PriorId => {
            if let Some(s) = section {
                id(plan.id(s.index), out);
            }
        }
        Field::PriorTitle => {
            if let Some(s) = section {
                out.push_str(plan.task(s.index).title());
            }
        }
        Field::PriorText => {
            if let Some(s) = section {
                out.push_str(&s.text);
            }
        }
    }
}

fn id(id: &TaskId, out: &mut String) {
    match id {
        TaskId::Str(s) => out.push_str(s),
        TaskId::Int(n) => out.push_str(itoa::Buffer::new().format(*n)),
    }
}

fn list_of<'a>(list: List, vars: &'a Vars<'_>) -> &'a [String] {
    let hints = vars.own.hints;
    match list {
        List::Objectives => &vars.plan.spec().objectives,
        List::DataNeeds => &hints.data_needs,
        List::KeyQuestions => &hints.key_questions,
        List::SuggestedTools => &hints.suggested_tools,
    }
}

/// Where a block's steps end.
#[derive(Clone, Copy, PartialEq)]
enum Scope {
    Top,
    If,
    /// Inside `{% for s in prior %}`.
    For,
}

struct Parser<'s> {
    rest: &'s str,
}

/// A tag's tokens: names (dotted paths), string literals and punctuation.
#[derive(Debug, PartialEq)]
enum Token<'s> {
    Name(&'s str),
    Str(&'s str),
    Punct(char),
}

impl<'s> Parser<'s> {
    /// Steps up to the end of `scope` (the end of the text, `endif` or `endfor`); `var` is
    /// the loop variable's name inside `{% for %}`.
    fn steps(&mut self, scope: Scope, var: Option<&str>) -> Option<Vec<Step>> {
        let mut steps = Vec::new();
        loop {
            let Some((at, kind)) = next_tag(self.rest) else {
                push_text(&mut steps, self.rest);
                self.rest = "";
                return (scope == Scope::Top).then_some(steps);
            };
            push_text(&mut steps, &self.rest[..at]);
            let close = match kind {
                b'{' => "}}",
                b'%' => "%}",
                _ => return None, // a comment
            };
            let inner_start = at + 2;
            let end = inner_start + self.rest[inner_start..].find(close)?;
            let inner = &self.rest[inner_start..end];
            self.rest = &self.rest[end + 2..];
            // Whitespace control (`{{-`, `-%}`, `{%+` ...) trims text: not compiled.
            if inner.starts_with(['-', '+']) || inner.ends_with(['-', '+']) {
                return None;
            }
            let tokens = tokens(inner)?;
            if kind == b'{' {
                steps.push(print(&tokens, var)?);
                continue;
            }
            match tokens.as_slice() {
                [Token::Name("if"), Token::Name("prior")] => {
                    let body = self.steps(Scope::If, var)?;
                    steps.push(Step::IfPrior(body));
                }
                [Token::Name("endif")] => return (scope == Scope::If).then_some(steps),
                [
                    Token::Name("for"),
                    Token::Name(name),
                    Token::Name("in"),
                    Token::Name("prior"),
                ] if var.is_none() && is_ident(name) => {
                    let body = self.steps(Scope::For, Some(name))?;
                    steps.push(Step::ForPrior(body));
                }
                [Token::Name("endfor")] => return (scope == Scope::For).then_some(steps),
                _ => return None,
            }
        }
    }
}

/// Where the next tag opens (`{{`, `{%` or `{#`) and its second byte.
fn next_tag(text: &str) -> Option<(usize, u8)> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'{', &bytes[from..]) {
        let at = from + i;
        match bytes.get(at + 1) {
            Some(&k @ (b'{' | b'%' | b'#')) => return Some((at, k)),
            _ => from = at + 1, // a lone brace is text
        }
    }
    None
}

fn push_text(steps: &mut Vec<Step>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(Step::Text(t)) = steps.last_mut() {
        t.push_str(text);
    } else {
        steps.push(Step::Text(text.to_owned()));
    }
}

/// The step printing a `{{ }}` tag's expression.
fn print(tokens: &[Token<'_>], var: Option<&str>) -> Option<Step> {
    match tokens {
        // A missing research type prints as minijinja's `none`: not compiled bare.
        [Token::Name(path)] => match string_field(path, var)? {
            Field::ResearchType => None,
            f => Some(Step::Print(f)),
        },
        [Token::Name(path), Token::Name("or"), Token::Str(otherwise)] => {
            Some(Step::Or(string_field(path, var)?, (*otherwise).to_owned()))
        }
        [
            Token::Name(list),
            Token::Punct('|'),
            Token::Name("join"),
            Token::Punct('('),
            Token::Str(sep),
            Token::Punct(')'),
            Token::Name("if"),
            Token::Name(tested),
            Token::Name("else"),
            Token::Str(otherwise),
        ] if list == tested => Some(Step::Join(
            list_field(list)?,
            (*sep).to_owned(),
            (*otherwise).to_owned(),
        )),
        _ => None,
    }
}

fn string_field(path: &str, var: Option<&str>) -> Option<Field> {
    if let Some(v) = var
        && let Some(member) = path.strip_prefix(v).and_then(|p| p.strip_prefix('.'))
    {
        return match member {
            "id" => Some(Field::PriorId),
            "title" => Some(Field::PriorTitle),
            "text" => Some(Field::PriorText),
            _ => None,
        };
    }
    match path {
        "task.id" => Some(Field::TaskId),
        "task.title" => Some(Field::TaskTitle),
        "task.description" => Some(Field::TaskDescription),
        "topic" => Some(Field::Topic),
        "research_type" => Some(Field::ResearchType),
        _ => None,
    }
}

fn list_field(path: &str) -> Option<List> {
    match path {
        "objectives" => Some(List::Objectives),
        "task.hints.data_needs" => Some(List::DataNeeds),
        "task.hints.key_questions" => Some(List::KeyQuestions),
        "task.hints.suggested_tools" => Some(List::SuggestedTools),
        _ => None,
    }
}

fn is_ident(name: &str) -> bool {
    !name.contains('.')
        && !matches!(
            name,
            "task" | "prior" | "topic" | "objectives" | "research_type" | "loop"
        )
}

/// A tag's tokens, or `None` for anything outside the compiled forms' tokens.
fn tokens(inner: &str) -> Option<Vec<Token<'_>>> {
    let mut out = Vec::new();
    let mut rest = inner.trim_start();
    while let Some(c) = rest.chars().next() {
        let len = match c {
            '|' | '(' | ')' => {
                out.push(Token::Punct(c));
                1
            }
            '"' | '\'' => {
                let body = &rest[1..];
                let end = body.find(c)?;
                let text = &body[..end];
                // An escape means minijinja's unescaping: not compiled.
                if text.contains('\\') {
                    return None;
                }
                out.push(Token::Str(text));
                end + 2
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                    .unwrap_or(rest.len());
                let name = &rest[..end];
                if name.ends_with('.') || name.contains("..") {
                    return None;
                }
                out.push(Token::Name(name));
                end
            }
            _ => return None,
        };
        rest = rest[len..].trim_start();
    }
    Some(out)
}

#[cfg(test)]
mod tests;
