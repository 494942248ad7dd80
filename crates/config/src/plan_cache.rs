//! `--plan-cache DIR`, `--no-plan-cache`, `--plan-cache-max-entries` and `[planner]
//! plan_cache`, `plan_cache_max_entries` into [`PlanCacheSettings`].

use crate::SettingsError;
use crate::file::ConfigFile;
use crate::flags::Flags;
use crate::settings::PlanCacheSettings;

pub(crate) fn resolve(
    file: &ConfigFile,
    flags: &Flags,
) -> Result<Option<PlanCacheSettings>, SettingsError> {
    let max_entries = match flags
        .plan_cache_max_entries
        .or(file.planner.plan_cache_max_entries)
    {
        Some(0) => {
            return Err(SettingsError::Invalid(
                "plan cache: max entries must be at least 1 (use --no-plan-cache to turn it off)"
                    .into(),
            ));
        }
        Some(n) => n,
        None => PlanCacheSettings::DEFAULT_MAX_ENTRIES,
    };
    if flags.no_plan_cache {
        return Ok(None);
    }
    let dir = flags
        .plan_cache
        .clone()
        .or_else(|| file.planner.plan_cache.as_deref().map(|d| file.relative(d)));
    Ok(dir.map(|dir| PlanCacheSettings { dir, max_entries }))
}
