//! The research plan as data: what the planner wrote, normalized into one shape.
//!
//! Both plan formats land here: the research plan (`tasks[]` with hints) and
//! the step plan (`steps[]` with a tool and its parameters).

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A task id as the model wrote it: `1` or `"data_upload"`.
///
/// Matching (dependencies, duplicates, lookups) uses [`TaskId::key`], so `1` and `"1"` are
/// the same task; the original form is kept so `plan.json` round-trips what the model wrote.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TaskId {
    Int(i64),
    Str(String),
}

impl TaskId {
    /// Canonical text used for matching and for messages.
    pub fn key(&self) -> Cow<'_, str> {
        match self {
            TaskId::Int(n) => Cow::Owned(n.to_string()),
            TaskId::Str(s) => Cow::Borrowed(s.as_str()),
        }
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // itoa writes what `write!(f, "{n}")` did, without core::fmt's integer path: each
            // subagent's request names its task and prerequisites.
            TaskId::Int(n) => f.write_str(itoa::Buffer::new().format(*n)),
            TaskId::Str(s) => f.write_str(s),
        }
    }
}

impl From<i64> for TaskId {
    fn from(n: i64) -> Self {
        TaskId::Int(n)
    }
}

impl From<&str> for TaskId {
    fn from(s: &str) -> Self {
        TaskId::Str(s.to_owned())
    }
}

/// Execution hints of a research task: they guide the subagent without dictating its calls.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hints {
    #[serde(default)]
    pub data_needs: Vec<String>,
    #[serde(default)]
    pub key_questions: Vec<String>,
    #[serde(default)]
    pub suggested_tools: Vec<String>,
}

impl Hints {
    pub fn is_empty(&self) -> bool {
        self.data_needs.is_empty()
            && self.key_questions.is_empty()
            && self.suggested_tools.is_empty()
    }
}

/// Which input shape a plan came from; kept so messages and reports can speak its language.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanFormat {
    /// The research plan format: `tasks[]` with `hints`.
    #[default]
    Research,
    /// The step plan format: `steps[]` with `tool` and `params`.
    Steps,
}

/// One task (a report chapter, or a tool step) before validation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskSpec {
    pub id: TaskId,
    /// Short name (`name`/`step_name` of step plans); absent in research-task plans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub description: String,
    /// Direct prerequisites only, in the order written (duplicates removed: parsing keeps
    /// what the model wrote, validation drops repeats with a warning).
    #[serde(default)]
    pub dependencies: Vec<TaskId>,
    #[serde(default, skip_serializing_if = "Hints::is_empty")]
    pub hints: Hints,
    /// A tool step runs this tool directly, without a model (step plans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Arguments of the tool step; may hold `{{ID.result}}` references.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_output: Option<String>,
    /// An optional step's failure does not block its dependents: they run, and
    /// references to its result resolve to an empty string.
    #[serde(default, skip_serializing_if = "is_false")]
    pub optional: bool,
    /// Retries of this step after its first attempt (`retryCount`); `None` follows `--retries`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<u32>,
    /// A step whose output is (part of) the plan's answer (`final`). Without any, the
    /// answer is the last step's output.
    #[serde(default, rename = "final", skip_serializing_if = "is_false")]
    pub is_final: bool,
    /// The step's status as the plan gave it (seed 003's `status`, such as `QUEUED`): kept
    /// so `plan.json` round-trips it; how the task ran is `run.json`'s, not this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl TaskSpec {
    /// A research task with no hints: handy for tests and generators.
    pub fn new(id: impl Into<TaskId>, description: impl Into<String>, deps: Vec<TaskId>) -> Self {
        TaskSpec {
            id: id.into(),
            name: None,
            description: description.into(),
            dependencies: deps,
            hints: Hints::default(),
            tool: None,
            params: None,
            expected_output: None,
            optional: false,
            retry_count: None,
            is_final: false,
            status: None,
        }
    }

    /// The heading a section of this task gets: its name if it has one, else its description.
    /// The task's name, else its description; a label, so only its first line, at most
    /// `MAX_TITLE_BYTES`: a title lands in every prompt that lists the task and in the
    /// report's headings and tables, where a long or multi-line one would break the layout.
    pub fn title(&self) -> &str {
        let full = match &self.name {
            Some(n) if !n.trim().is_empty() => n,
            _ => &self.description,
        };
        // The first line: up to a '\n' (memchr), its '\r' trimmed with the other trailing
        // whitespace, as `lines().next()` and `trim_end` did (titles are looked up for every
        // prompt and report line that names a task).
        let full = full.trim_start();
        let line = match memchr::memchr(b'\n', full.as_bytes()) {
            Some(end) => &full[..end],
            None => full,
        }
        .trim_end();
        let mut end = line.len().min(MAX_TITLE_BYTES);
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        &line[..end]
    }
}

/// The longest title [`TaskSpec::title`] gives, in bytes.
pub const MAX_TITLE_BYTES: usize = 200;

/// A plan as parsed: every field present, nothing checked yet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub research_type: Option<String>,
    #[serde(default)]
    pub topic: String,
    #[serde(default)]
    pub objectives: Vec<String>,
    #[serde(default)]
    pub tasks: Vec<TaskSpec>,
    #[serde(default, skip_serializing_if = "is_research")]
    pub format: PlanFormat,
    /// What a plan says about itself beyond its tasks (id, creation time, metadata,
    /// variables), kept so
    /// `plan.json` round-trips it and steps can use it.
    #[serde(flatten)]
    pub about: PlanAbout,
}

/// The `metadata` key that marks a fallback plan (planning failed and one task answers
/// the goal directly); its value says why planning failed.
pub const FALLBACK_KEY: &str = "planwave_fallback";

/// The `metadata` key of a plan reused from the plan cache for a similar goal: the goal it
/// was planned for and the similarity score, `{"goal": "...", "score": 0.875}`.
pub const CACHE_MATCH_KEY: &str = "planwave_cache_match";

impl PlanAbout {
    /// Why planning failed, when this plan is the planner's fallback.
    pub fn fallback(&self) -> Option<&str> {
        self.metadata.get(FALLBACK_KEY).and_then(|v| v.as_str())
    }
}

/// Plan-level fields besides the tasks: the planner's own bookkeeping, the variables steps
/// may reference as `{{vars.NAME}}` and the job's metadata they may reference as
/// `{{meta.KEY}}`. All optional; absent ones stay out of `plan.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanAbout {
    /// The plan's identity: a UUID for every plan the planner writes, else as the file
    /// gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_id: Option<String>,
    /// The task (job) the plan is for, as the file gave it (seed 003's `task_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// When the planner wrote the plan (RFC 3339); from a file, as it was written there: a
    /// date-time string or milliseconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<serde_json::Value>,
    /// The plan's status as the file gave it (seed 003's `status`, such as `CREATED`); the
    /// run's own status is `run.json`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_duration_secs: Option<f64>,
    /// The planner's metadata object (such as `createdBy`, `complexity`, ...).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// `{{vars.NAME}}` in a step's parameters reads `global_variables.NAME`.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub global_variables: serde_json::Map<String, serde_json::Value>,
    /// The job's metadata (`--meta KEY=VALUE`, a job line's `metadata`): shown to the planner
    /// and read by `{{meta.KEY}}`. Set by the runner, not by the model.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub meta: std::collections::BTreeMap<String, String>,
}

fn is_research(f: &PlanFormat) -> bool {
    *f == PlanFormat::Research
}

/// Language of prompts, placeholders and the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    #[default]
    En,
    Zh,
}

impl Lang {
    /// CJK text means Chinese; anything else is English.
    pub fn detect(text: &str) -> Lang {
        let cjk = text
            .chars()
            .filter(|c| matches!(*c as u32, 0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0xF900..=0xFAFF))
            .count();
        if cjk > 0 { Lang::Zh } else { Lang::En }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }
}

impl std::str::FromStr for Lang {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "en" | "english" => Ok(Lang::En),
            "zh" | "cn" | "chinese" | "zh-cn" => Ok(Lang::Zh),
            other => Err(format!("unknown language {other:?} (expected zh or en)")),
        }
    }
}

impl PlanSpec {
    /// The plan's language, read from its topic, objectives and task descriptions.
    pub fn lang(&self) -> Lang {
        let mut probe = String::new();
        probe.push_str(&self.topic);
        for o in &self.objectives {
            probe.push_str(o);
        }
        for t in self.tasks.iter().take(16) {
            probe.push_str(&t.description);
        }
        Lang::detect(&probe)
    }
}

#[cfg(test)]
mod tests {
    use super::TaskId;

    #[test]
    fn integer_ids_display_as_the_integer_does() {
        for n in [
            0,
            7,
            -7,
            10,
            99,
            1000,
            123_456_789,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ] {
            assert_eq!(TaskId::Int(n).to_string(), n.to_string());
            // Flags of an outer format never applied to an id.
            assert_eq!(format!("[{:>25}]", TaskId::Int(n)), format!("[{n}]"));
        }
        assert_eq!(TaskId::Str("a-1".into()).to_string(), "a-1");
    }

    proptest::proptest! {
        #[test]
        fn a_title_is_the_first_line_trimmed_and_capped(
            name in proptest::option::of("[ \t\r\na-z\u{3000}特]{0,12}"),
            description in "[ \t\r\n\u{85}\u{2028}a-zé特]{0,300}",
        ) {
            let mut t = super::TaskSpec::new(TaskId::Int(1), &description, Vec::new());
            t.name = name;
            let full = match &t.name {
                Some(n) if !n.trim().is_empty() => n,
                _ => &t.description,
            };
            let line = full.trim_start().lines().next().unwrap_or("").trim_end();
            let mut end = line.len().min(super::MAX_TITLE_BYTES);
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            proptest::prop_assert_eq!(t.title(), &line[..end]);
        }
    }
}
