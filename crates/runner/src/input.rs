//! Input a job is given: plan files (`-` is stdin), and the error every front end reports as
//! bad input (the CLI's exit 2, a server's 422).

use std::path::Path;

use planwave_config::SettingsError;
use planwave_plan::{PlanSpec, ToolCatalog, ValidatedPlan, parse_plan};

use crate::Notes;

/// Bad input: one problem per line, each about `source_name` (a file, `config`, `goal`...).
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {} problem(s)", problems.len())]
pub struct InvalidInput {
    pub source_name: String,
    pub problems: Vec<String>,
}

impl InvalidInput {
    pub fn one(source_name: impl Into<String>, problem: impl Into<String>) -> InvalidInput {
        InvalidInput {
            source_name: source_name.into(),
            problems: vec![problem.into()],
        }
    }
}

/// Printed as `source: problem` lines, exit 2: `config: ...` for the config file, else the
/// flag, setting or MCP server file concerned.
impl From<SettingsError> for InvalidInput {
    fn from(e: SettingsError) -> Self {
        InvalidInput {
            source_name: e.source_name().to_owned(),
            problems: e.problems(),
        }
    }
}

/// The bytes of `path` (`-` reads stdin) and the name to report them under.
pub fn read_source(path: &Path) -> Result<(String, Vec<u8>), InvalidInput> {
    if path == Path::new("-") {
        let buf =
            crate::input_size::read_bounded(std::io::stdin(), crate::input_size::max_input_bytes())
                .map_err(|e| InvalidInput::one("<stdin>", e.to_string()))?;
        return Ok(("<stdin>".into(), buf));
    }
    let name = path.display().to_string();
    let bytes =
        crate::input_size::read_input(path).map_err(|e| InvalidInput::one(&name, e.to_string()))?;
    Ok((name, bytes))
}

/// Reads and parses a plan, without validating it yet (that may need the tool catalog of
/// servers not started yet).
pub fn parse_plan_source(path: &Path) -> Result<(String, PlanSpec), InvalidInput> {
    let (name, bytes) = read_source(path)?;
    let spec = parse_plan(&bytes).map_err(|e| InvalidInput {
        source_name: name.clone(),
        problems: e.to_string().lines().map(str::to_owned).collect(),
    })?;
    Ok((name, spec))
}

/// Validates a parsed plan, checking tool use against `tools` when given; warnings become
/// notes (`NAME: warning: ...`).
pub fn validate_plan(
    name: &str,
    spec: PlanSpec,
    tools: Option<&ToolCatalog>,
    notes: &dyn Notes,
) -> Result<ValidatedPlan, InvalidInput> {
    let plan = match tools {
        Some(catalog) => ValidatedPlan::with_tools(spec, catalog),
        None => ValidatedPlan::new(spec),
    }
    .map_err(|e| InvalidInput {
        source_name: name.to_owned(),
        problems: e.0.iter().map(|p| p.to_string()).collect(),
    })?;
    for w in plan.warnings() {
        notes.note(&format!("{name}: warning: {w}"));
    }
    Ok(plan)
}

/// Reads, parses and validates a plan; any problem is an [`InvalidInput`].
pub fn load_plan(path: &Path, notes: &dyn Notes) -> Result<ValidatedPlan, InvalidInput> {
    load_plan_with_tools(path, None, notes)
}

/// [`load_plan`], checking tool use against `tools` when given.
pub fn load_plan_with_tools(
    path: &Path,
    tools: Option<&ToolCatalog>,
    notes: &dyn Notes,
) -> Result<ValidatedPlan, InvalidInput> {
    let (name, spec) = parse_plan_source(path)?;
    validate_plan(&name, spec, tools, notes)
}
