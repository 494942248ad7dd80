//! Loading templates (built in, or overridden from a directory) and checking them.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use minijinja::Environment;
use planwave_plan::Lang;

/// Every template, per language.
pub const TEMPLATE_NAMES: &[&str] = &[
    "planner",
    "planner_steps",
    "repair",
    "subagent",
    "integrator",
    "evaluator",
    "reflector",
    "replan",
    "replan_steps",
    "step_reflection",
    "answer_repair",
    "failure_note",
    "reflection_summary",
    "tool_protocol",
    "tool_results",
    "tools_exhausted",
    "data_rule",
    "clarify",
];

const BUILTIN: &[(&str, &str, &str)] = &[
    (
        "zh",
        "step_reflection",
        include_str!("../../../prompts/zh/step_reflection.j2"),
    ),
    (
        "en",
        "step_reflection",
        include_str!("../../../prompts/en/step_reflection.j2"),
    ),
    (
        "zh",
        "planner_steps",
        include_str!("../../../prompts/zh/planner_steps.j2"),
    ),
    (
        "en",
        "planner_steps",
        include_str!("../../../prompts/en/planner_steps.j2"),
    ),
    (
        "zh",
        "planner",
        include_str!("../../../prompts/zh/planner.j2"),
    ),
    (
        "zh",
        "repair",
        include_str!("../../../prompts/zh/repair.j2"),
    ),
    (
        "zh",
        "subagent",
        include_str!("../../../prompts/zh/subagent.j2"),
    ),
    (
        "zh",
        "integrator",
        include_str!("../../../prompts/zh/integrator.j2"),
    ),
    (
        "en",
        "planner",
        include_str!("../../../prompts/en/planner.j2"),
    ),
    (
        "en",
        "repair",
        include_str!("../../../prompts/en/repair.j2"),
    ),
    (
        "en",
        "subagent",
        include_str!("../../../prompts/en/subagent.j2"),
    ),
    (
        "en",
        "integrator",
        include_str!("../../../prompts/en/integrator.j2"),
    ),
    (
        "zh",
        "evaluator",
        include_str!("../../../prompts/zh/evaluator.j2"),
    ),
    (
        "zh",
        "reflector",
        include_str!("../../../prompts/zh/reflector.j2"),
    ),
    (
        "zh",
        "replan",
        include_str!("../../../prompts/zh/replan.j2"),
    ),
    (
        "zh",
        "replan_steps",
        include_str!("../../../prompts/zh/replan_steps.j2"),
    ),
    (
        "zh",
        "answer_repair",
        include_str!("../../../prompts/zh/answer_repair.j2"),
    ),
    (
        "en",
        "evaluator",
        include_str!("../../../prompts/en/evaluator.j2"),
    ),
    (
        "en",
        "reflector",
        include_str!("../../../prompts/en/reflector.j2"),
    ),
    (
        "en",
        "replan",
        include_str!("../../../prompts/en/replan.j2"),
    ),
    (
        "en",
        "replan_steps",
        include_str!("../../../prompts/en/replan_steps.j2"),
    ),
    (
        "en",
        "answer_repair",
        include_str!("../../../prompts/en/answer_repair.j2"),
    ),
    (
        "zh",
        "failure_note",
        include_str!("../../../prompts/zh/failure_note.j2"),
    ),
    (
        "zh",
        "reflection_summary",
        include_str!("../../../prompts/zh/reflection_summary.j2"),
    ),
    (
        "en",
        "failure_note",
        include_str!("../../../prompts/en/failure_note.j2"),
    ),
    (
        "en",
        "reflection_summary",
        include_str!("../../../prompts/en/reflection_summary.j2"),
    ),
    (
        "zh",
        "tool_protocol",
        include_str!("../../../prompts/zh/tool_protocol.j2"),
    ),
    (
        "zh",
        "tool_results",
        include_str!("../../../prompts/zh/tool_results.j2"),
    ),
    (
        "zh",
        "tools_exhausted",
        include_str!("../../../prompts/zh/tools_exhausted.j2"),
    ),
    (
        "en",
        "tool_protocol",
        include_str!("../../../prompts/en/tool_protocol.j2"),
    ),
    (
        "en",
        "tool_results",
        include_str!("../../../prompts/en/tool_results.j2"),
    ),
    (
        "en",
        "tools_exhausted",
        include_str!("../../../prompts/en/tools_exhausted.j2"),
    ),
    (
        "zh",
        "data_rule",
        include_str!("../../../prompts/zh/data_rule.j2"),
    ),
    (
        "en",
        "data_rule",
        include_str!("../../../prompts/en/data_rule.j2"),
    ),
    (
        "zh",
        "clarify",
        include_str!("../../../prompts/zh/clarify.j2"),
    ),
    (
        "en",
        "clarify",
        include_str!("../../../prompts/en/clarify.j2"),
    ),
];

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PromptError {
    #[error("cannot read prompt template {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("prompt template {name}: {message}")]
    Template { name: String, message: String },
}

/// The template set in use: built-in defaults plus any overrides.
pub struct Templates {
    pub(crate) env: Environment<'static>,
    /// `lang/name` of each template that came from the override directory.
    overridden: Vec<String>,
    /// The subagent template of each language (English, then Chinese) split after its
    /// plan-wide opening, when it can be (`render::opening`).
    pub(crate) subagent_split: [Option<crate::render::Split>; 2],
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates")
            .field("overridden", &self.overridden)
            .finish()
    }
}

/// `lang/name.j2`, the template's name in the environment. Those of the known templates are
/// made once: a subagent's prompt is rendered per task, and formatting its key was ~800
/// instructions of that.
pub(crate) fn key(lang: Lang, name: &str) -> Cow<'static, str> {
    static KEYS: OnceLock<Vec<String>> = OnceLock::new();
    let keys = KEYS.get_or_init(|| {
        [Lang::En, Lang::Zh]
            .iter()
            .flat_map(|lang| {
                TEMPLATE_NAMES
                    .iter()
                    .map(move |name| format!("{}/{name}.j2", lang.as_str()))
            })
            .collect()
    });
    let row = match lang {
        Lang::En => 0,
        Lang::Zh => TEMPLATE_NAMES.len(),
    };
    match TEMPLATE_NAMES.iter().position(|n| *n == name) {
        Some(at) => Cow::Borrowed(&keys[row + at]),
        None => Cow::Owned(format!("{}/{name}.j2", lang.as_str())),
    }
}

impl Templates {
    /// The built-in templates.
    pub fn builtin() -> Templates {
        match Templates::load(None) {
            Ok(t) => t,
            // The built-ins are checked by this crate's tests; an error here is a build bug.
            Err(e) => panic!("built-in prompt templates are broken: {e}"),
        }
    }

    /// Built-ins overridden by `dir/{zh,en}/<name>.j2` where such files exist.
    pub fn load(dir: Option<&Path>) -> Result<Templates, PromptError> {
        let mut env = Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Chainable);
        crate::emit::install(&mut env);
        let mut overridden = Vec::new();
        if let Some(d) = dir
            && !d.is_dir()
        {
            return Err(PromptError::Read {
                path: d.to_path_buf(),
                message: "not a directory".into(),
            });
        }
        for (lang, name, source) in BUILTIN {
            let k = format!("{lang}/{name}.j2");
            let over = dir.map(|d| d.join(lang).join(format!("{name}.j2")));
            let text = match over.filter(|p| p.is_file()) {
                Some(p) => {
                    overridden.push(k.clone());
                    std::fs::read_to_string(&p).map_err(|e| PromptError::Read {
                        path: p.clone(),
                        message: e.to_string(),
                    })?
                }
                None => (*source).to_owned(),
            };
            env.add_template_owned(k.clone(), text)
                .map_err(|e| PromptError::Template {
                    name: k.clone(),
                    message: error_text(&e),
                })?;
        }
        let mut t = Templates {
            env,
            overridden,
            subagent_split: [None, None],
        };
        t.check()?;
        for (slot, lang) in [Lang::En, Lang::Zh].into_iter().enumerate() {
            let name = key(lang, "subagent");
            let source = t.env.get_template(&name).map(|t| t.source().to_owned());
            if let Ok(source) = source {
                t.subagent_split[slot] = crate::render::split(&mut t.env, &name, &source);
            }
        }
        Ok(t)
    }

    /// Templates taken from the override directory (`zh/subagent.j2`, ...).
    pub fn overridden(&self) -> &[String] {
        &self.overridden
    }

    /// Renders every template with sample data so errors surface at load time.
    fn check(&self) -> Result<(), PromptError> {
        for lang in [Lang::Zh, Lang::En] {
            for name in TEMPLATE_NAMES {
                self.render_raw(lang, name, crate::render::sample(name))?;
            }
        }
        Ok(())
    }

    /// [`Self::render_raw`] into one buffer of the template's own text plus `hint` bytes (the
    /// size its data will take): a prompt of a hundred KB or more (the integrator's) grew by
    /// doubling, each step a fresh large block.
    pub(crate) fn render_sized(
        &self,
        lang: Lang,
        name: &str,
        ctx: minijinja::Value,
        hint: usize,
    ) -> Result<String, PromptError> {
        let k = key(lang, name);
        let err = |message: String| PromptError::Template {
            name: k.to_string(),
            message,
        };
        let template = self.env.get_template(&k).map_err(|e| err(error_text(&e)))?;
        let mut buf = Vec::with_capacity(template.source().len() + hint);
        template
            .render_captured_to(ctx, &mut buf)
            .map_err(|e| err(error_text(&e)))?;
        String::from_utf8(buf).map_err(|e| err(e.to_string()))
    }

    pub(crate) fn render_raw(
        &self,
        lang: Lang,
        name: &str,
        ctx: minijinja::Value,
    ) -> Result<String, PromptError> {
        let k = key(lang, name);
        let err = |e: minijinja::Error| PromptError::Template {
            name: k.to_string(),
            message: error_text(&e),
        };
        self.env
            .get_template(&k)
            .map_err(err)?
            .render(ctx)
            .map_err(err)
    }
}

pub(crate) fn error_text(e: &minijinja::Error) -> String {
    let mut s = e.to_string();
    if let Some(line) = e.line() {
        s.push_str(&format!(" (line {line})"));
    }
    s
}
