//! `subagent.j2` compiled to a few steps, when the template is built from the forms the
//! built-in ones use: rendered once per task, through minijinja it was 43 % of a zero-latency
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

use planwave_plan::{Hints, TaskId, ValidatedPlan};

use crate::set::{PriorSection, TaskText};

/// The template as steps.
#[derive(Debug)]
pub(crate) struct Compiled {
    steps: Vec<Step>,
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
    description: &'a str,
    hints: &'a Hints,
    prior: &'a [PriorSection],
}

/// A piece of the output: text, or an integer id (written by itoa).
enum Piece<'a> {
    Text(&'a str),
    Int(i64),
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
        Some(Compiled { steps })
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
            description: own.description,
            hints: own.hints,
            prior,
        };
        // The pieces first, each variable looked up once; then the text, in a buffer of
        // exactly its size: the prompt is held while its model call is in flight, and the
        // message takes this buffer as it is (see `messages_owned`).
        let mut pieces = Vec::with_capacity(self.steps.len() * 2);
        collect(&self.steps, &vars, None, &mut pieces);
        let len = pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.len(),
                Piece::Int(n) => itoa::Buffer::new().format(*n).len(),
            })
            .sum();
        let mut out = String::with_capacity(len);
        for p in &pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Int(n) => out.push_str(itoa::Buffer::new().format(*n)),
            }
        }
        out
    }
}

fn collect<'a>(
    steps: &'a [Step],
    vars: &Vars<'a>,
    section: Option<&'a PriorSection>,
    out: &mut Vec<Piece<'a>>,
) {
    for step in steps {
        match step {
            Step::Text(t) => out.push(Piece::Text(t)),
            Step::Print(f) => out.push(field(*f, vars, section)),
            Step::Or(f, otherwise) => out.push(match field(*f, vars, section) {
                Piece::Text("") => Piece::Text(otherwise),
                p => p,
            }),
            Step::Join(list, sep, otherwise) => match list_of(*list, vars) {
                [] => out.push(Piece::Text(otherwise)),
                items => {
                    for (at, item) in items.iter().enumerate() {
                        if at > 0 {
                            out.push(Piece::Text(sep));
                        }
                        out.push(Piece::Text(item));
                    }
                }
            },
            Step::IfPrior(body) => {
                if !vars.prior.is_empty() {
                    collect(body, vars, section, out);
                }
            }
            Step::ForPrior(body) => {
                for s in vars.prior {
                    collect(body, vars, Some(s), out);
                }
            }
        }
    }
}

/// A string variable (a missing research type is empty: only `or` prints it).
fn field<'a>(f: Field, vars: &Vars<'a>, section: Option<&'a PriorSection>) -> Piece<'a> {
    let plan = vars.plan;
    let text = match (f, section) {
        (Field::TaskId, _) => return id(plan.id(vars.index)),
        (Field::TaskTitle, _) => plan.task(vars.index).title(),
        (Field::TaskDescription, _) => vars.description,
        (Field::Topic, _) => &plan.spec().topic,
        (Field::ResearchType, _) => plan.spec().research_type.as_deref().unwrap_or(""),
        (Field::PriorId, Some(s)) => return id(plan.id(s.index)),
        (Field::PriorTitle, Some(s)) => plan.task(s.index).title(),
        (Field::PriorText, Some(s)) => &s.text,
        // The parser allows these only inside the loop.
        (_, None) => "",
    };
    Piece::Text(text)
}

fn id(id: &TaskId) -> Piece<'_> {
    match id {
        TaskId::Str(s) => Piece::Text(s),
        TaskId::Int(n) => Piece::Int(*n),
    }
}

fn list_of<'a>(list: List, vars: &Vars<'a>) -> &'a [String] {
    let hints = vars.hints;
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
