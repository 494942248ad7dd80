//! The plan cache (`--plan-cache DIR`): a plan the planner wrote is kept under a key, and a
//! later job asking the same question gets it back without a planner call.
//!
//! The key hashes everything the planner's answer depends on: the goal, the planner's model,
//! the first planning prompt as rendered (so the template's text, the language, the plan
//! format and its schema, the task bounds, the tools with their schemas and the job's
//! metadata, all of which the prompt shows), and, in case a custom template leaves them out,
//! the tools, the metadata, the language and the format once more on their own.
//!
//! The cache never fails a job: an entry that cannot be read, parsed or validated (or is for
//! another goal) is a miss with a warning, and a store that fails is a warning. Entries are
//! written whole (temporary file, then rename) so a reader never sees half of one; the oldest
//! (by modification time, refreshed on each hit) go once there are more than `max_entries`.
//!
//! Beside the entries, `call-times.json` keeps recent model-call times per model
//! (`plan_cache/call_times.rs`), for the duration `plan` and `waves` estimate.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use planwave_config::PlanCacheSettings;
use planwave_plan::{ToolCatalog, ValidatedPlan, plan_from_value};
use planwave_planner::Planner;
use serde::{Deserialize, Serialize};

use crate::Notes;

mod call_times;
mod similar;

pub use call_times::MedianCall;
pub use similar::Similar;

/// Entries of another layout are misses.
const VERSION: u32 = 1;

/// A temporary file this old was left by a crash, not by a writer still at work.
const STALE_TEMP: Duration = Duration::from_secs(3600);
/// Names tried for a temporary file before storing gives up (each taken one was planted or
/// is another writer's).
const TEMP_NAMES: usize = 8;

#[derive(Clone, Debug)]
pub struct PlanCache {
    dir: PathBuf,
    max_entries: usize,
}

/// A goal as the cache matches it: lower case, punctuation dropped, runs of whitespace one
/// space ("分析特斯拉。" and "分析特斯拉" are the same question). The entry keeps the goal
/// as it was written.
pub fn goal_key(goal: &str) -> String {
    let kept: String = goal
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Which entry a planning request maps to (32 hex digits).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheKey(String);

impl CacheKey {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One file of the cache. The goal and model are kept to recognise (and explain) an entry.
#[derive(Serialize, Deserialize)]
struct Entry {
    planwave_plan_cache: u32,
    key: String,
    goal: String,
    model: String,
    /// The request's key without its goal ([`PlanCache::context`]): entries of the same
    /// context may serve a similar goal. Absent in entries of earlier builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context: Option<String>,
    plan: serde_json::Value,
}

/// An entry read for its goal and context only (its plan is skipped unread).
#[derive(Deserialize)]
struct Header {
    planwave_plan_cache: u32,
    key: String,
    goal: String,
    #[serde(default)]
    context: Option<String>,
}

impl PlanCache {
    pub fn new(settings: &PlanCacheSettings) -> PlanCache {
        PlanCache {
            dir: settings.dir.clone(),
            max_entries: settings.max_entries.max(1),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of `planner`'s first request for `goal` to `model`; `None` when the prompt
    /// does not render (planning will say why).
    ///
    /// The goal is keyed as `goal_key` gives it (and the prompt rendered with that), so
    /// goals that differ only in case, punctuation or spacing share an entry.
    pub fn key(planner: &Planner, goal: &str, model: &str) -> Option<CacheKey> {
        request_hash(planner, &goal_key(goal), model).map(CacheKey)
    }

    /// The key of the same request with the goal left out (a placeholder in the goal's
    /// language in its place): what two requests must share for one's plan to serve the
    /// other's similar goal (the template, the tools, the metadata, the process spec...).
    pub fn context(planner: &Planner, goal: &str, model: &str) -> Option<String> {
        let placeholder = match planwave_plan::Lang::detect(goal) {
            planwave_plan::Lang::Zh => "目标",
            planwave_plan::Lang::En => "goal",
        };
        request_hash(planner, placeholder, model)
    }

    fn entry_path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(format!("{}.json", key.0))
    }

    /// The stored plan for `key`, validated again (against today's tools, with the job's
    /// metadata); `None` on a miss. Only a missing entry is a silent miss.
    pub fn load(
        &self,
        key: &CacheKey,
        goal: &str,
        tools: &ToolCatalog,
        meta: &std::collections::BTreeMap<String, String>,
        notes: &dyn Notes,
    ) -> Option<ValidatedPlan> {
        let path = self.entry_path(key);
        let miss = |why: String| {
            notes.note(&format!(
                "warning: plan cache: {}: {why}; planning instead",
                path.display()
            ));
            None
        };
        let bytes = match crate::input_size::read_input(&path) {
            Ok(b) => b,
            Err(crate::InputError::Read(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                return None;
            }
            Err(e) => return miss(format!("cannot read it: {e}")),
        };
        let entry: Entry = match serde_json::from_slice(&bytes) {
            Ok(e) => e,
            Err(e) => return miss(format!("not a cache entry: {e}")),
        };
        if entry.planwave_plan_cache != VERSION || entry.key != key.0 {
            return miss("written for another key or by another version".into());
        }
        if goal_key(&entry.goal) != goal_key(goal) {
            return miss(format!("holds the plan of another goal ({:?})", entry.goal));
        }
        let mut spec = match plan_from_value(entry.plan) {
            Ok(s) => s,
            Err(e) => return miss(format!("its plan does not parse: {e}")),
        };
        spec.about.meta = meta.clone();
        let plan = match ValidatedPlan::with_tools(spec, tools) {
            Ok(p) => p,
            Err(e) => {
                let problems: Vec<String> = e.0.iter().map(ToString::to_string).collect();
                return miss(format!("its plan is invalid: {}", problems.join("; ")));
            }
        };
        // A hit makes the entry the newest, so eviction drops the least recently used.
        if let Ok(f) = std::fs::File::options().write(true).open(&path) {
            let _ = f.set_modified(SystemTime::now());
        }
        Some(plan)
    }

    /// Keeps `plan` under `key` (whole or not at all), then evicts beyond the cap. Failures
    /// are warnings: the job has its plan either way.
    pub fn store(
        &self,
        key: &CacheKey,
        context: Option<String>,
        goal: &str,
        model: &str,
        plan: &ValidatedPlan,
        notes: &dyn Notes,
    ) {
        if let Err(e) = self.write_entry(key, context, goal, model, plan) {
            notes.note(&format!(
                "warning: plan cache: cannot store {}: {e}",
                self.entry_path(key).display()
            ));
            return;
        }
        self.evict();
    }

    fn write_entry(
        &self,
        key: &CacheKey,
        context: Option<String>,
        goal: &str,
        model: &str,
        plan: &ValidatedPlan,
    ) -> std::io::Result<()> {
        let entry = Entry {
            planwave_plan_cache: VERSION,
            key: key.0.clone(),
            goal: goal.trim().to_owned(),
            model: model.to_owned(),
            context,
            plan: serde_json::to_value(plan.spec())?,
        };
        let mut bytes = serde_json::to_vec_pretty(&entry)?;
        bytes.push(b'\n');
        std::fs::create_dir_all(&self.dir)?;
        let (tmp, mut file) = self.new_temp(&key.0)?;
        let written = file
            .write_all(&bytes)
            .and_then(|()| std::fs::rename(&tmp, self.entry_path(key)));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// A temporary file of our own for the file `stem` (an entry's key), created new: a
    /// name that exists already (a symbolic link planted to make us write elsewhere, or
    /// another writer's file) is never opened, and the next name is tried instead.
    fn new_temp(&self, stem: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
        // Unique per writer: jobs of a batch, and other processes, may store the same key.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut last = None;
        for _ in 0..TEMP_NAMES {
            let tmp = self.dir.join(format!(
                ".tmp-{}-{}-{}",
                stem,
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            // `create_new` is O_CREAT | O_EXCL, which does not follow a symbolic link.
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
            {
                Ok(file) => return Ok((tmp, file)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
    }

    /// The entry of `context` whose goal is most similar to `goal` (same subjects, a score
    /// of at least `similar::THRESHOLD`), with its key; `None` when none is. Entries that
    /// cannot be read are skipped here: [`PlanCache::load`] says why when one is used.
    pub fn find_similar(&self, context: &str, goal: &str) -> Option<(CacheKey, Similar)> {
        let dir = std::fs::read_dir(&self.dir).ok()?;
        let asked = goal_key(goal);
        let mut best: Option<(CacheKey, Similar)> = None;
        for e in dir.flatten() {
            let name = e.file_name();
            if !is_entry_name(&name.to_string_lossy()) {
                continue;
            }
            let Ok(bytes) = crate::input_size::read_input(&e.path()) else {
                continue;
            };
            let Ok(h) = serde_json::from_slice::<Header>(&bytes) else {
                continue;
            };
            if h.planwave_plan_cache != VERSION
                || !name.to_string_lossy().starts_with(h.key.as_str())
                || h.context.as_deref() != Some(context)
                || goal_key(&h.goal) == asked
            {
                continue;
            }
            let Some(score) = similar::matches(goal, &h.goal) else {
                continue;
            };
            // Named by its file, not by what it says of itself: a key is a file name here.
            let stem = name.to_string_lossy().trim_end_matches(".json").to_owned();
            if best.as_ref().is_none_or(|(_, b)| score > b.score) {
                best = Some((
                    CacheKey(stem),
                    Similar {
                        goal: h.goal,
                        score,
                    },
                ));
            }
        }
        best
    }

    /// Removes the oldest entries beyond `max_entries`, and temporary files a crash left.
    /// Another process may be evicting too: a file already gone is fine.
    fn evict(&self) {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut entries: Vec<(SystemTime, PathBuf)> = Vec::new();
        for e in dir.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(meta) = e.metadata() else { continue };
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if name.starts_with(".tmp-") {
                if now.duration_since(modified).unwrap_or_default() > STALE_TEMP {
                    let _ = std::fs::remove_file(e.path());
                }
            } else if meta.is_file() && is_entry_name(&name) {
                entries.push((modified, e.path()));
            }
        }
        if entries.len() <= self.max_entries {
            return;
        }
        entries.sort();
        let excess = entries.len() - self.max_entries;
        for (_, path) in entries.into_iter().take(excess) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The hash of everything a planner's first request for `goal` depends on (see the
/// module's documentation), as 32 hex digits.
fn request_hash(planner: &Planner, goal: &str, model: &str) -> Option<String> {
    let (messages, lang) = planner.first_prompt(goal, None).ok()?;
    let config = planner.config();
    let mut h = Fnv128::new();
    h.field("planwave-plan-cache-v2");
    h.field(goal);
    h.field(model);
    h.field(&json_text(&lang));
    h.field(&json_text(&config.format));
    for m in &messages {
        h.field(&json_text(&m.role));
        h.field(&m.content);
    }
    h.field(&config.min_tasks.to_string());
    h.field(&config.max_tasks.to_string());
    for t in planner.tools() {
        h.field(&t.name);
        h.field(&t.description);
        h.field(&t.input_schema);
    }
    h.field("meta");
    for (k, v) in &config.meta {
        h.field(k);
        h.field(v);
    }
    Some(format!("{:032x}", h.finish()))
}

/// `<32 hex digits>.json`: only the cache's own entries are ever evicted.
fn is_entry_name(name: &str) -> bool {
    name.strip_suffix(".json")
        .is_some_and(|stem| stem.len() == 32 && stem.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn json_text<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// FNV-1a, 128 bits: stable across builds and platforms (unlike `std`'s hasher), and wide
/// enough that distinct requests do not collide in a cache of thousands. Not a defence
/// against someone crafting collisions: the cache directory is the user's own.
struct Fnv128(u128);

impl Fnv128 {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

    fn new() -> Fnv128 {
        Fnv128(Self::OFFSET)
    }

    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u128::from(x);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    /// Length-prefixed, so `("ab", "c")` and `("a", "bc")` differ.
    fn field(&mut self, s: &str) {
        self.bytes(&(s.len() as u64).to_le_bytes());
        self.bytes(s.as_bytes());
    }

    fn finish(&self) -> u128 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv128_matches_the_reference_values_and_fields_are_unambiguous() {
        // FNV-1a 128 of "" and "a" (the published test vectors).
        assert_eq!(Fnv128::new().finish(), 0x6c62272e07bb014262b821756295c58d);
        let mut a = Fnv128::new();
        a.bytes(b"a");
        assert_eq!(a.finish(), 0xd228cb696f1a8caf78912b704e4a8964);
        let (mut x, mut y) = (Fnv128::new(), Fnv128::new());
        x.field("ab");
        x.field("c");
        y.field("a");
        y.field("bc");
        assert_ne!(x.finish(), y.finish());
    }

    #[test]
    fn only_the_caches_own_files_are_entries() {
        assert!(is_entry_name("0123456789abcdef0123456789ABCDEF.json"));
        assert!(!is_entry_name("notes.json"));
        assert!(!is_entry_name(".tmp-0123456789abcdef0123456789abcdef-1-0"));
    }
}
