//! A job's plan template: a plan (JSON) whose string values are minijinja templates, rendered
//! with the job's `vars` into the job's own plan, without a planner call.
//!
//! Only string values are rendered, one at a time, after the JSON is parsed: keys, numbers
//! and the JSON structure are never text to a template engine, so a value like `"A\"B"` in
//! `vars` cannot break the plan's JSON. Undefined variables are errors (strict), and a missing
//! one is named.
//!
//! `{{ID.result}}`, `{{vars.NAME}}`, `{{meta.KEY}}`, `@{{steps.ID.result}}` and `{{input}}`
//! belong to the plan (they are resolved when the step runs): an expression that is exactly
//! such a dotted name ([`planwave_plan::refs::is_plan_expression`], no filter, call or
//! operator) is kept verbatim. So template variables are plain names (`{{ company }}`,
//! `{{ ticker | lower }}`), never dotted ones.

use std::collections::BTreeMap;

use minijinja::syntax::SyntaxConfig;
use minijinja::value::Serde;
use minijinja::{Environment, UndefinedBehavior};
use serde_json::Value;

/// Renders templates; one per job file, shared by its jobs.
pub(crate) struct Renderer {
    env: Environment<'static>,
}

impl Renderer {
    pub(crate) fn new() -> Renderer {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // A string is data, not a file: its last newline is part of it.
        if let Ok(syntax) = SyntaxConfig::builder().keep_trailing_newline(true).build() {
            env.set_syntax(syntax);
        }
        Renderer { env }
    }

    /// The template with every string value rendered with `vars`; the first problem, named
    /// by its place in the plan (`tasks[1].description: ...`), otherwise.
    pub(crate) fn render(
        &self,
        template: &Value,
        vars: &BTreeMap<String, Value>,
    ) -> Result<Value, String> {
        let ctx = minijinja::Value::from(Serde(vars));
        let mut out = template.clone();
        // Iterative, like every walk over user-sized input here.
        let mut stack: Vec<(&mut Value, String)> = vec![(&mut out, String::new())];
        while let Some((v, path)) = stack.pop() {
            match v {
                Value::String(s) => {
                    if let Some(rendered) = self.render_str(s, vars, &ctx).map_err(|e| {
                        if path.is_empty() {
                            e
                        } else {
                            format!("{path}: {e}")
                        }
                    })? {
                        *s = rendered;
                    }
                }
                Value::Array(items) => {
                    for (i, item) in items.iter_mut().enumerate().rev() {
                        stack.push((item, format!("{path}[{i}]")));
                    }
                }
                Value::Object(map) => {
                    let mut fields: Vec<(&mut Value, String)> = map
                        .iter_mut()
                        .map(|(k, item)| {
                            let at = if path.is_empty() {
                                k.clone()
                            } else {
                                format!("{path}.{k}")
                            };
                            (item, at)
                        })
                        .collect();
                    fields.reverse();
                    stack.extend(fields);
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// `None` when the string holds no template syntax (kept as it is).
    fn render_str(
        &self,
        s: &str,
        vars: &BTreeMap<String, Value>,
        ctx: &minijinja::Value,
    ) -> Result<Option<String>, String> {
        if !["{{", "{%", "{#"].iter().any(|m| s.contains(m)) {
            return Ok(None);
        }
        let source = protect_plan_expressions(s);
        let tmpl = self
            .env
            .template_from_str(&source)
            .map_err(|e| describe(&e))?;
        let mut missing: Vec<String> = tmpl
            .undeclared_variables(false)
            .into_iter()
            .filter(|n| !vars.contains_key(n) && !self.env.globals().any(|(g, _)| g == n))
            .collect();
        if !missing.is_empty() {
            missing.sort();
            let names: Vec<String> = missing.iter().map(|n| format!("{n:?}")).collect();
            return Err(format!(
                "undefined template variable {} (not in the job's vars)",
                names.join(", ")
            ));
        }
        tmpl.render(ctx).map(Some).map_err(|e| describe(&e))
    }
}

/// Wraps the plan's own `{{...}}` expressions in `{% raw %}`, so minijinja copies them.
fn protect_plan_expressions(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut from = 0;
    while let Some(open) = s[from..].find("{{").map(|i| i + from) {
        let Some(close) = s[open + 2..].find("}}").map(|i| i + open + 2) else {
            break;
        };
        let inner = &s[open + 2..close];
        out.push_str(&s[from..open]);
        if is_plain_name(inner) && planwave_plan::refs::is_plan_expression(inner) {
            out.push_str("{% raw %}");
            out.push_str(&s[open..close + 2]);
            out.push_str("{% endraw %}");
        } else {
            out.push_str(&s[open..close + 2]);
        }
        from = close + 2;
    }
    out.push_str(&s[from..]);
    out
}

/// A bare (possibly dotted) name: no filter, call, operator, literal or inner space. Anything
/// else is a template expression, even if the plan's parser would accept it.
fn is_plain_name(inner: &str) -> bool {
    let t = inner.trim();
    !t.is_empty()
        && !t
            .chars()
            .any(|c| c.is_whitespace() || "|()[]'\"~+*/%,=<>!{}:".contains(c))
}

/// minijinja's message without its `(in <string>:1)`: the plan path says where.
fn describe(e: &minijinja::Error) -> String {
    let mut msg = e.kind().to_string();
    if let Some(d) = e.detail() {
        msg.push_str(": ");
        msg.push_str(d);
    }
    match e.line() {
        Some(l) if l > 1 => format!("{msg} (line {l} of the string)"),
        _ => msg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(v: Value) -> BTreeMap<String, Value> {
        serde_json::from_value(v).expect("vars")
    }

    #[test]
    fn strings_are_rendered_and_plan_references_and_structure_are_kept() {
        let r = Renderer::new();
        let t = json!({
            "topic": "{{ company }} ({{ ticker }})",
            "steps": [{
                "id": "quote", "tool": "get_quote", "params": {"symbol": "{{ticker}}", "n": 3},
            }, {
                "id": "sum", "tool": "llm_call", "dependencies": ["quote"],
                "params": {"prompt": "{{ company | upper }}: {{quote.result}} @{{steps.quote.result}} {{ meta.year }} {{vars.x}} {{input}}"},
            }],
            "{{ company }}": "key untouched",
        });
        let out = r
            .render(
                &t,
                &vars(json!({"company": "Byd\"\n}", "ticker": "002594.SZ"})),
            )
            .expect("render");
        assert_eq!(out["topic"], "Byd\"\n} (002594.SZ)");
        assert_eq!(out["steps"][0]["params"]["symbol"], "002594.SZ");
        assert_eq!(out["steps"][0]["params"]["n"], 3);
        assert_eq!(
            out["steps"][1]["params"]["prompt"],
            "BYD\"\n}: {{quote.result}} @{{steps.quote.result}} {{ meta.year }} {{vars.x}} {{input}}"
        );
        assert_eq!(out["{{ company }}"], "key untouched");
    }

    #[test]
    fn a_missing_variable_and_a_syntax_error_name_their_place() {
        let r = Renderer::new();
        let t = json!({"topic": "t", "tasks": [{"id": 1, "description": "{{ company }} {{ ticker }}"}]});
        assert_eq!(
            r.render(&t, &vars(json!({"company": "c"}))).unwrap_err(),
            "tasks[0].description: undefined template variable \"ticker\" (not in the job's vars)"
        );
        let t = json!({"topic": "{{ company", "tasks": []});
        let e = r.render(&t, &vars(json!({"company": "c"}))).unwrap_err();
        assert!(e.starts_with("topic: syntax error: "), "{e}");
        // Strict: an undefined attribute of a defined variable fails too.
        let t = json!({"topic": "{{ company | default(nope) }}"});
        assert!(r.render(&t, &vars(json!({"company": "c"}))).is_err());
    }
}
