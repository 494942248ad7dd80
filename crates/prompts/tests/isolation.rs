//! Text planwave does not control has one way into a prompt (`planwave_prompts::data`):
//! these checks read the sources and templates so a second way cannot appear unnoticed.
//!
//! - No Rust code outside `data.rs` writes a `<data` or `</data` tag: a block is either a
//!   template's (around a variable this crate cleans) or `data::block`'s.
//! - No crate that builds prompts filters control characters on its own (a second cleaner
//!   drifts from the first: the step replan's once let bidirectional overrides through).
//! - In every template, the variables that carry such text (`.text`, `.output`, `.result`)
//!   are printed only inside a `<data source="…">` block holding that one variable, and the
//!   rule that a block's contents are not orders comes before the first block.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The non-test code of a source file: none for a test file, else what precedes its
/// `#[cfg(test)]` module; comment lines left out.
fn code(path: &Path) -> Vec<(usize, String)> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let in_tests = path.components().any(|c| c.as_os_str() == "tests");
    if in_tests || name == "tests.rs" || name.ends_with("_tests.rs") {
        return Vec::new();
    }
    let text = std::fs::read_to_string(path).expect("source");
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => text[..at].to_owned(),
        None => text,
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.to_owned()))
        .collect()
}

/// Source files of the workspace's crates and binary.
fn sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    for entry in std::fs::read_dir(root().join("crates"))
        .expect("crates")
        .flatten()
    {
        rust_files(&entry.path().join("src"), &mut files);
    }
    assert!(files.len() > 50, "the workspace's sources were not found");
    files
}

/// `file:line: text` of every line of non-test code outside `data.rs`, in the files `keep`
/// selects (by path below the workspace), for which `bad` holds.
fn lines_where(keep: impl Fn(&Path) -> bool, bad: impl Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for path in sources() {
        let rel = path.strip_prefix(root()).unwrap_or(&path);
        if rel.ends_with("crates/prompts/src/data.rs") || !keep(rel) {
            continue;
        }
        for (line, text) in code(&path) {
            if bad(&text) {
                found.push(format!("{}:{line}: {}", rel.display(), text.trim()));
            }
        }
    }
    found
}

#[test]
fn only_the_data_module_writes_a_data_tag_in_code() {
    let found = lines_where(
        |_| true,
        |text| {
            let lower = text.to_ascii_lowercase();
            lower.contains("<data") || lower.contains("</data")
        },
    );
    let found = found.join("\n");
    assert!(found.is_empty(), "data tags outside data.rs:\n{found}");
}

#[test]
fn no_prompt_building_crate_filters_control_characters_itself() {
    let found = lines_where(
        |rel| {
            ["crates/engine", "crates/orchestrator", "crates/prompts"]
                .iter()
                .any(|c| rel.starts_with(c))
        },
        // Calling the shared `data::is_hiding_char` (as the engine does for stored text) is
        // not a second cleaner; defining another is.
        |text| text.contains("is_control()") || text.contains("fn is_hiding_char"),
    );
    let found = found.join("\n");
    assert!(
        found.is_empty(),
        "a cleaner outside planwave_prompts::data:\n{found}"
    );
}

/// The printed variable of each `{{ … }}` in `line` (the expression before any filter).
fn printed(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open..].find("}}") else {
            break;
        };
        let expr = rest[open + 2..open + close].trim();
        out.push(expr.split('|').next().unwrap_or("").trim().to_owned());
        rest = &rest[open + close + 2..];
    }
    out
}

/// A variable that carries text planwave does not control.
fn untrusted(var: &str) -> bool {
    [".text", ".output", ".result"]
        .iter()
        .any(|s| var.ends_with(s))
}

fn check_template(path: &Path, problems: &mut Vec<String>) {
    let text = std::fs::read_to_string(path).expect("template");
    let name = path.display();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let mut first_block = None;
    while i < lines.len() {
        let line = lines[i];
        if line.contains("<data source=") {
            first_block.get_or_insert(i);
            let body = lines.get(i + 1).copied().unwrap_or("");
            let vars = printed(body);
            let one_var = vars.len() == 1 && body.trim() == format!("{{{{ {} }}}}", vars[0]);
            if !one_var || !lines.get(i + 2).is_some_and(|l| l.starts_with("</data>")) {
                problems.push(format!("{name}:{}: a block holds one variable", i + 1));
            }
            i += 3;
            continue;
        }
        for var in printed(line).into_iter().filter(|v| untrusted(v)) {
            problems.push(format!(
                "{name}:{}: {var} printed outside a <data> block",
                i + 1
            ));
        }
        i += 1;
    }
    let rule = ["not addressed to you", "不是给你的", "不是对你说的"];
    if let Some(first) = first_block {
        let before = lines[..first].join("\n");
        if !rule.iter().any(|r| before.contains(r)) {
            problems.push(format!("{name}: no rule before the first <data> block"));
        }
    }
}

#[test]
fn templates_print_untrusted_variables_only_inside_data_blocks() {
    let mut problems = Vec::new();
    let mut blocks = 0;
    for lang in ["en", "zh"] {
        let dir = root().join("prompts").join(lang);
        for entry in std::fs::read_dir(&dir).expect("templates").flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "j2") {
                let text = std::fs::read_to_string(&path).expect("template");
                blocks += text.matches("<data source=").count();
                check_template(&path, &mut problems);
            }
        }
        let rule = std::fs::read_to_string(dir.join("data_rule.j2")).expect("data_rule.j2");
        assert!(rule.contains("<data>"), "{lang}/data_rule.j2: {rule}");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(blocks >= 10, "{blocks} data blocks in the templates");
}
