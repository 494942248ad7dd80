//! Flags > environment > config file > defaults, into [`Settings`], one phase per part.

use std::path::Path;

use crate::env::{ENV_CONFIG, EnvSource};
use crate::file::ConfigFile;
use crate::flags::Flags;
use crate::settings::Settings;
use crate::{SettingsError, caps, llm, mcp, plan_cache, planner, reflect, run};

/// Finds the config file: `explicit` (must exist), else `$PLANWAVE_CONFIG` (must exist),
/// else `./planwave.toml` if present, else none.
pub fn load_file(
    explicit: Option<&Path>,
    env: &dyn EnvSource,
) -> Result<ConfigFile, SettingsError> {
    if let Some(p) = explicit {
        return ConfigFile::read(p);
    }
    if let Some(p) = env.var(ENV_CONFIG) {
        return ConfigFile::read(Path::new(&p));
    }
    let local = Path::new("planwave.toml");
    if local.is_file() {
        return ConfigFile::read(local);
    }
    Ok(ConfigFile::default())
}

/// The config file `flags` name (see [`load_file`]) resolved with `env` and `flags`.
pub fn load_settings(flags: &Flags, env: &dyn EnvSource) -> Result<Settings, SettingsError> {
    let file = load_file(flags.config.as_deref(), env)?;
    resolve_settings(&file, env, flags)
}

/// Every setting, each from the first of `flags`, `env`, `file` and the defaults that has it.
/// The first problem found is the error; files named by settings (MCP server lists) are read.
pub fn resolve_settings(
    file: &ConfigFile,
    env: &dyn EnvSource,
    flags: &Flags,
) -> Result<Settings, SettingsError> {
    let kind = llm::kind(file, env, flags)?;
    let planner = planner::resolve(file, flags)?;
    let prompts_dir = flags
        .prompts_dir
        .clone()
        .or_else(|| file.prompts.dir.as_deref().map(|d| file.relative(d)));
    let mut run = run::from_flags(flags);
    let llm = llm::resolve(kind, file, env, flags, run.seed)?;
    let output_caps = caps::resolve(kind, file, flags)?;
    let policy = reflect::resolve(file, flags)?;
    let deadline = run::resolve(&mut run, file, flags)?;
    let mcp = mcp::resolve(&mut run, file, flags.mcp.as_ref())?;
    let plan_cache = plan_cache::resolve(file, flags)?;
    let batch_api = crate::batch_api::resolve(file, flags, &llm)?;
    run.prices.batch_api = batch_api.is_some();
    Ok(Settings {
        llm,
        output_caps,
        planner,
        prompts_dir,
        run,
        deadline,
        policy,
        mcp,
        config_path: file.path.clone(),
        plan_cache,
        batch_api,
    })
}
