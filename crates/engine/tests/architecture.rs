//! What ARCHITECTURE.md claims of this crate's shape, checked on its source: the run's facts
//! have one owner (no lock anywhere in the engine's code), and no module imports one that
//! imports it back (the actors meet only in `messages`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `src/`, with its text up to its test module (tests may share
/// state with the code under test; the code may not).
fn sources() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("source");
                let rel = path.strip_prefix(&root).expect("under src").to_path_buf();
                if rel == Path::new("tests.rs") {
                    continue; // the crate's own test module
                }
                let code = match text.find("#[cfg(test)]\nmod tests") {
                    Some(at) => text[..at].to_owned(),
                    None => text,
                };
                out.push((rel, code));
            }
        }
    }
    out.sort();
    out
}

/// The top-level module a file belongs to (`supervisor/settle.rs` is `supervisor`'s).
fn module_of(path: &Path) -> String {
    let first = path.components().next().expect("a component");
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_owned()
}

#[test]
fn no_lock_in_the_engine() {
    let locked: Vec<String> = sources()
        .into_iter()
        .flat_map(|(path, code)| {
            code.lines()
                .enumerate()
                .filter(|(_, l)| l.contains("Mutex") || l.contains("RwLock"))
                .map(|(n, l)| format!("{}:{}: {}", path.display(), n + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        locked.is_empty(),
        "locks in the engine:\n{}",
        locked.join("\n")
    );
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let sources = sources();
    let modules: BTreeSet<String> = sources.iter().map(|(p, _)| module_of(p)).collect();
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, code) in &sources {
        let from = module_of(path);
        for (at, _) in code.match_indices("crate::") {
            let name: String = code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if name != from && modules.contains(&name) {
                uses.entry(from.clone()).or_default().insert(name);
            }
        }
    }
    // Depth-first search for a path back to where it started.
    fn reaches(uses: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_owned()];
        while let Some(m) = stack.pop() {
            for next in uses.get(&m).into_iter().flatten() {
                if next == to {
                    return true;
                }
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        false
    }
    let cyclic: Vec<&String> = modules.iter().filter(|m| reaches(&uses, m, m)).collect();
    assert!(
        cyclic.is_empty(),
        "modules in an import cycle: {cyclic:?}\n{uses:#?}"
    );
    // The actors meet only in the protocol module.
    for actor in ["supervisor", "subagent", "integrator"] {
        assert!(
            uses.get(actor).is_some_and(|u| u.contains("messages")),
            "{actor}"
        );
    }
    for (a, b) in [("subagent", "supervisor"), ("integrator", "supervisor")] {
        assert!(
            !uses.get(a).is_some_and(|u| u.contains(b)),
            "{a} imports {b}"
        );
    }
}
