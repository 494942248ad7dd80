//! What the context budget cut from a task's prompt, as `run.json` records it per task.

use planwave_plan::TaskId;
use serde::{Deserialize, Serialize};

/// What part of a prompt a cut shortened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CutPart {
    /// A prerequisite's section.
    #[default]
    Section,
    /// The task's own description.
    Description,
    /// The task's own hints (data needs, key questions, suggested tools).
    Hints,
    /// A tool's output handed back to the model.
    ToolOutput,
}

impl CutPart {
    fn is_section(&self) -> bool {
        *self == CutPart::Section
    }
}

/// One piece of prompt text that was shortened for a task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionCut {
    /// The task the text came from: the prerequisite for a section, else the task itself.
    pub from: TaskId,
    /// Absent for a prerequisite's section (as in run files before other parts were cut).
    #[serde(default, skip_serializing_if = "CutPart::is_section")]
    pub part: CutPart,
    /// The tool, for a tool output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub original_tokens: u64,
    pub kept_tokens: u64,
    pub original_chars: usize,
    pub kept_chars: usize,
}
