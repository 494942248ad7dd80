//! Reading and checking a plan given on the command line (`-` is stdin).

use std::io::Read;
use std::path::Path;

use planwave_plan::{ToolCatalog, ValidatedPlan, parse_plan};

use super::exit::InvalidInput;

pub fn read_source(path: &Path) -> Result<(String, Vec<u8>), InvalidInput> {
    if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| InvalidInput {
                source_name: "<stdin>".into(),
                problems: vec![format!("cannot read: {e}")],
            })?;
        return Ok(("<stdin>".into(), buf));
    }
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| InvalidInput {
        source_name: name.clone(),
        problems: vec![format!("cannot read: {e}")],
    })?;
    Ok((name, bytes))
}

/// Reads, parses and validates a plan; any problem is an [`InvalidInput`] (exit 2).
pub fn load_plan(path: &Path) -> Result<ValidatedPlan, InvalidInput> {
    load_plan_with_tools(path, None)
}

/// [`load_plan`], checking tool use against `tools` when given.
pub fn load_plan_with_tools(
    path: &Path,
    tools: Option<&ToolCatalog>,
) -> Result<ValidatedPlan, InvalidInput> {
    let (name, bytes) = read_source(path)?;
    let spec = parse_plan(&bytes).map_err(|e| InvalidInput {
        source_name: name.clone(),
        problems: e.to_string().lines().map(str::to_owned).collect(),
    })?;
    let plan = match tools {
        Some(catalog) => ValidatedPlan::with_tools(spec, catalog),
        None => ValidatedPlan::new(spec),
    }
    .map_err(|e| InvalidInput {
        source_name: name.clone(),
        problems: e.0.iter().map(|p| p.to_string()).collect(),
    })?;
    for w in plan.warnings() {
        eprintln!("{name}: warning: {w}");
    }
    Ok(plan)
}
