//! What a plan may call: the tool names known at validation time, and the checks of
//! `suggested_tools` and tool steps against them.

use std::collections::BTreeSet;

use crate::model::PlanSpec;
use crate::validate::{Problem, Warning};

/// The built-in tool of step plans: a direct model call with a `prompt` parameter.
pub const LLM_CALL: &str = "llm_call";

/// The tools available to a run, by the unique names tasks use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolCatalog {
    names: BTreeSet<String>,
    /// Configured servers that did not start: their tools are missing for a reason the
    /// messages about missing tools should give.
    down: Vec<String>,
}

impl ToolCatalog {
    pub fn new(names: impl IntoIterator<Item = String>) -> ToolCatalog {
        ToolCatalog {
            names: names.into_iter().collect(),
            down: Vec::new(),
        }
    }

    /// Names configured servers that did not start (`server`, `reason`).
    pub fn with_servers_down(mut self, down: impl IntoIterator<Item = (String, String)>) -> Self {
        self.down = down
            .into_iter()
            .map(|(server, reason)| format!("MCP server {server} did not start: {reason}"))
            .collect();
        self
    }

    /// `; MCP server X did not start: …` when servers are down, else nothing.
    fn why_missing(&self) -> String {
        if self.down.is_empty() {
            String::new()
        } else {
            format!("; {}", self.down.join("; "))
        }
    }

    /// Whether `name` can be called (`llm_call` always can).
    pub fn contains(&self, name: &str) -> bool {
        name == LLM_CALL || self.names.contains(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    fn known(&self) -> String {
        let mut all: Vec<&str> = self.names().collect();
        all.push(LLM_CALL);
        all.join(", ")
    }
}

/// Drops unknown `suggested_tools` (one warning each) and reports tool steps whose tool is
/// unknown, naming the task, the tool and the tools known.
pub(crate) fn check_tools(
    spec: &mut PlanSpec,
    catalog: &ToolCatalog,
) -> (Vec<Warning>, Vec<Problem>) {
    let mut warnings = Vec::new();
    let mut problems = Vec::new();
    // With no tools at all (no MCP server configured), one line naming the dropped tools says
    // everything; a warning per task would bury the run's output under the same message.
    let no_tools = catalog.names.is_empty();
    let mut ignored = BTreeSet::new();
    for task in &mut spec.tasks {
        let id = task.id.clone();
        task.hints.suggested_tools.retain(|t| {
            let known = catalog.contains(t.trim());
            if !known && no_tools {
                ignored.insert(t.trim().to_owned());
            } else if !known {
                warnings.push(Warning(format!(
                    "task {id}: suggested tool {t} is not available; dropped"
                )));
            }
            known
        });
        if let Some(tool) = &task.tool
            && !catalog.contains(tool.trim())
        {
            problems.push(Problem::Other(format!(
                "task {id}: unknown tool {tool} (known tools: {}{})",
                catalog.known(),
                catalog.why_missing()
            )));
        }
    }
    if !ignored.is_empty() {
        let names: Vec<&str> = ignored.iter().map(String::as_str).collect();
        let why = if catalog.down.is_empty() {
            "no MCP tools are configured (--mcp-config)".to_owned()
        } else {
            format!("no MCP tools are available ({})", catalog.down.join("; "))
        };
        warnings.push(Warning(format!(
            "{why}: suggested tools ignored: {}",
            names.join(", ")
        )));
    }
    (warnings, problems)
}
