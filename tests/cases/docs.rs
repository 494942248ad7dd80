//! The documentation checked against the code, so it cannot drift:
//! - every relative link and `#anchor` in README, ARCHITECTURE, CONTRIBUTING and `docs/**`
//!   resolves (anchors by the GitHub/mdBook slug rule);
//! - every flag each command's `--help` lists (the real binary, every subcommand walked) is in
//!   the option tables of `docs/guide/commands.md`, and every flag of a command's own table is
//!   still in its `--help`;
//! - every key `planwave.toml` accepts (read from `crates/config/src/file.rs`, the serde types
//!   that parse it) and every environment variable the code reads is in
//!   `docs/guide/configuration.md`, and nothing documented there is unknown to the code.
//!
//! Failures list exactly what is missing, per command or per key, so a new flag or key is
//! one table row away from passing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::support::{planwave, repo_file};

const COMMANDS_PAGE: &str = "docs/guide/commands.md";
const CONFIG_PAGE: &str = "docs/guide/configuration.md";
/// The section of `commands.md` whose flags every command takes.
const GLOBAL_SECTION: &str = "options-every-command-takes";
/// Names in the code that look like environment variables but are JetStream stream names.
const NOT_ENV: &[&str] = &["PLANWAVE_JOBS", "PLANWAVE_JOURNAL"];
/// Variables read by libraries on planwave's behalf, with no literal in planwave's code.
const LIBRARY_ENV: &[&str] = &["RUST_LOG"];

// ---- Markdown, just enough of it -------------------------------------------------------

/// The lines of a Markdown file outside fenced code blocks, with their 1-based numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        // A backtick fence's info string has no backtick: "```` ```json ````" is inline code.
        let marker = ["```", "~~~"].into_iter().find(|m| {
            t.starts_with(m) && !(*m == "```" && t.trim_start_matches('`').contains('`'))
        });
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(f), Some(m)) if f == m => fence = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// The line without its inline code spans (a link written as code is not a link).
fn without_code(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|c| *c == '`').count();
        let after = &rest[start + ticks..];
        match after.find(&"`".repeat(ticks)) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                rest = after;
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of inline links `[text](target "title")` in one line of prose.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code(line);
    let mut out = Vec::new();
    let mut rest = line.as_str();
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let mut depth = 0usize;
        let end = after.char_indices().find(|&(_, c)| match c {
            '(' => {
                depth += 1;
                false
            }
            ')' if depth == 0 => true,
            ')' => {
                depth -= 1;
                false
            }
            _ => false,
        });
        let Some((end, _)) = end else { break };
        let target = after[..end].trim();
        let target = target.split_whitespace().next().unwrap_or("");
        out.push(target.trim_matches(['<', '>']).to_owned());
        rest = &after[end..];
    }
    out
}

/// The heading's level and text, if the line is an ATX heading.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let text = &line[level..];
    (text.is_empty() || text.starts_with(' '))
        .then(|| (level, text.trim().trim_end_matches('#').trim()))
}

/// A heading's anchor as GitHub and mdBook make it: link text kept, code marks and
/// punctuation dropped, lowercased, spaces as hyphens.
fn slug(text: &str) -> String {
    let mut plain = String::new();
    let mut rest = text;
    // `[text](url)` reads as `text`.
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](") else {
            break;
        };
        let Some(close) = rest[open + mid..].find(')') else {
            break;
        };
        plain.push_str(&rest[..open]);
        plain.push_str(&rest[open + 1..open + mid]);
        rest = &rest[open + mid + close + 1..];
    }
    plain.push_str(rest);
    plain
        .chars()
        .flat_map(char::to_lowercase)
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// Every anchor a Markdown file defines (duplicates numbered `-1`, `-2`, ... as GitHub does).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some((_, h)) = heading(line) else {
            continue;
        };
        let base = slug(h);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// A section of a page: its heading's anchor and the prose lines up to the next heading.
struct Section<'a> {
    anchor: String,
    title: String,
    lines: Vec<&'a str>,
}

fn sections(text: &str) -> Vec<Section<'_>> {
    let mut out: Vec<Section<'_>> = Vec::new();
    for (_, line) in prose_lines(text) {
        match heading(line) {
            Some((_, h)) => out.push(Section {
                anchor: slug(h),
                title: h.to_owned(),
                lines: Vec::new(),
            }),
            None => {
                if let Some(s) = out.last_mut() {
                    s.lines.push(line);
                }
            }
        }
    }
    out
}

/// The first cell of each table row that is not a header or separator row.
fn first_cells<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let rows: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.trim_start().starts_with('|'))
        .collect();
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let is_sep = |r: &str| r.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
        let header = rows.get(i + 1).is_some_and(|next| is_sep(next));
        if is_sep(row) || header {
            continue;
        }
        // A `|` inside code (`a\|b`) is escaped, so the first unescaped one ends the cell.
        let body = &row.trim_start()[1..];
        let mut end = body.len();
        let mut prev = ' ';
        for (j, c) in body.char_indices() {
            if c == '|' && prev != '\\' {
                end = j;
                break;
            }
            prev = c;
        }
        out.push(&body[..end]);
    }
    out
}

/// The code spans of a piece of Markdown.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

// ---- (a) links ---------------------------------------------------------------------------

fn markdown_files() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
        .iter()
        .map(|f| repo_file(f))
        .collect();
    let mut dirs = vec![repo_file("docs")];
    while let Some(dir) = dirs.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for p in entries {
            // mdBook's output directory is built, not written.
            if p.is_dir() && p != repo_file("docs/guide/book") {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "md") {
                out.push(p);
            }
        }
    }
    out
}

/// Every broken relative link of one file, as `FILE:LINE: target (why)`.
fn broken_links(file: &Path, anchors_of: &mut dyn FnMut(&Path) -> BTreeSet<String>) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let rel = file
        .strip_prefix(repo_file(""))
        .unwrap_or(file)
        .display()
        .to_string();
    let mut out = Vec::new();
    for (n, line) in prose_lines(&text) {
        for target in link_targets(line) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                file.to_path_buf()
            } else {
                file.parent().expect("a file has a directory").join(path)
            };
            if !dest.exists() {
                out.push(format!("{rel}:{n}: {target} (no such file)"));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if dest.extension().is_some_and(|e| e == "md") && !anchors_of(&dest).contains(anchor) {
                out.push(format!(
                    "{rel}:{n}: {target} (no heading with anchor #{anchor})"
                ));
            }
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_in_the_docs_resolves() {
    let mut cache: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut anchors_of = |p: &Path| {
        let key = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        cache
            .entry(key)
            .or_insert_with(|| anchors(&std::fs::read_to_string(p).unwrap_or_default()))
            .clone()
    };
    let files = markdown_files();
    assert!(files.iter().any(|f| f.ends_with("docs/guide/SUMMARY.md")));
    let broken: Vec<String> = files
        .iter()
        .flat_map(|f| broken_links(f, &mut anchors_of))
        .collect();
    assert!(
        broken.is_empty(),
        "broken links in the docs:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_slug_rule_matches_github() {
    assert_eq!(
        slug("The server and web view (`planwave serve`)"),
        "the-server-and-web-view-planwave-serve"
    );
    assert_eq!(slug("`[llm.timeouts]`"), "llmtimeouts");
    assert_eq!(
        slug("Batches across machines (NATS JetStream)"),
        "batches-across-machines-nats-jetstream"
    );
    assert_eq!(slug("See [the guide](x.md) now"), "see-the-guide-now");
    let a = anchors("# A\n```\n# not a heading\n```\n## A\n```` ```json ```` inline\n# B\n");
    assert_eq!(
        a,
        BTreeSet::from(["a".to_owned(), "a-1".to_owned(), "b".to_owned()])
    );
    assert_eq!(
        link_targets("[a](x.md#y) `[b](no.md)` [c](<z.md> \"t\") [d](f(1).md)"),
        ["x.md#y", "z.md", "f(1).md"]
    );
}

// ---- (b) every flag of every command -----------------------------------------------------

/// A help text's flags (`--name`, and `-x` for short-only flags), without clap's own
/// `--help` and `--version`. Flags start at column 2 (`-v, --verbose`) or 6 (`--out`);
/// descriptions are indented further.
fn help_flags(help: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in help.lines() {
        let mut flags = Vec::new();
        if let Some(rest) = line.strip_prefix("      --") {
            flags.push(format!("--{}", name_of(rest)));
        } else if let Some(rest) = line.strip_prefix("  -")
            && let Some(short) = rest.chars().next().filter(char::is_ascii_alphanumeric)
        {
            flags.push(format!("-{short}"));
            if let Some(long) = rest.get(1..).and_then(|r| r.strip_prefix(", --")) {
                flags.push(format!("--{}", name_of(long)));
            }
        }
        let clap_own = ["-h", "--help", "-V", "--version"];
        out.extend(
            flags
                .into_iter()
                .filter(|f| !clap_own.contains(&f.as_str())),
        );
    }
    out
}

fn name_of(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The subcommands a help text lists (clap's `help` left out).
fn help_subcommands(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in help.lines() {
        if line == "Commands:" {
            inside = true;
        } else if inside && !line.starts_with("  ") {
            inside = false;
        } else if inside && line.len() > 2 && !line.starts_with("   ") {
            let name = name_of(&line[2..]);
            if !name.is_empty() && name != "help" {
                out.push(name.to_owned());
            }
        }
    }
    out
}

/// Every command path (`["batch", "status"]`, ...) with the flags its `--help` lists.
fn commands_and_flags() -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    let mut todo: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(path) = todo.pop() {
        let out_ = planwave(path.iter().chain([&"--help".to_owned()])).run();
        out_.expect_ok();
        for sub in help_subcommands(&out_.stdout) {
            let mut p = path.clone();
            p.push(sub);
            todo.push(p);
        }
        if !path.is_empty() {
            out.insert(path.join(" "), help_flags(&out_.stdout));
        }
    }
    out
}

/// The flags in the first column of a section's tables.
fn table_flags(lines: &[&str]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for cell in first_cells(lines) {
        for span in code_spans(cell) {
            for word in span.split([' ', ',', '\\', '|', '=']) {
                let is_flag = word.starts_with('-')
                    && word.len() > 1
                    && word
                        .trim_start_matches('-')
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-');
                if is_flag {
                    out.insert(word.to_owned());
                }
            }
        }
    }
    out
}

/// Per command (`run`, `batch status`): the flags the guide documents for it, its own
/// table's flags, and whether it has a section at all.
struct Documented {
    all: BTreeSet<String>,
    own: BTreeSet<String>,
}

fn documented_flags(page: &str) -> BTreeMap<String, Documented> {
    let secs = sections(page);
    let by_anchor: BTreeMap<&str, &Section<'_>> =
        secs.iter().map(|s| (s.anchor.as_str(), s)).collect();
    let global = by_anchor
        .get(GLOBAL_SECTION)
        .map(|s| table_flags(&s.lines))
        .unwrap_or_default();
    let mut out = BTreeMap::new();
    for s in &secs {
        let Some(cmd) = code_spans(&s.title)
            .first()
            .and_then(|c| c.strip_prefix("planwave "))
        else {
            continue;
        };
        let own = table_flags(&s.lines);
        let mut all = own.clone();
        all.extend(global.iter().cloned());
        for line in &s.lines {
            for target in link_targets(line) {
                if let Some(group) = target.strip_prefix('#').and_then(|a| by_anchor.get(a)) {
                    all.extend(table_flags(&group.lines));
                }
            }
        }
        out.insert(cmd.to_owned(), Documented { all, own });
    }
    out
}

#[test]
fn every_flag_of_every_command_is_in_the_guide() {
    let page = std::fs::read_to_string(repo_file(COMMANDS_PAGE)).expect(COMMANDS_PAGE);
    let documented = documented_flags(&page);
    let mut problems = Vec::new();
    let commands = commands_and_flags();
    assert!(commands.contains_key("batch status") && commands.contains_key("sim-llm serve"));
    for (cmd, flags) in &commands {
        let Some(doc) = documented.get(cmd) else {
            problems.push(format!(
                "planwave {cmd}: no section headed `planwave {cmd}` (flags: {})",
                flags.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
            continue;
        };
        let missing: Vec<&str> = flags
            .iter()
            .filter(|f| !doc.all.contains(*f))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "planwave {cmd}: not in the guide: {}",
                missing.join(", ")
            ));
        }
        let stale: Vec<&str> = doc
            .own
            .iter()
            .filter(|f| !flags.contains(*f))
            .map(String::as_str)
            .collect();
        if !stale.is_empty() {
            problems.push(format!(
                "planwave {cmd}: in the guide but not in --help: {}",
                stale.join(", ")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{COMMANDS_PAGE} and the commands' --help differ (add a row to the command's table, \
         or to an option group it links):\n{}",
        problems.join("\n")
    );
}

#[test]
fn help_flags_are_read_from_their_columns_only() {
    let help = "Options:\n      --out <DIR>\n          Run directory; see --force\n  -q, --quiet\n  \
                -x\n  -h, --help\n      --max-input-bytes <SIZE>    The largest\n";
    let got: Vec<String> = help_flags(help).into_iter().collect();
    assert_eq!(got, ["--max-input-bytes", "--out", "--quiet", "-q", "-x"]);
    let cmds = "Commands:\n  status  A\n          wrapped\n  fetch   B\n  help    C\n\nOptions:\n";
    assert_eq!(help_subcommands(cmds), ["status", "fetch"]);
}

// ---- (c) every config key and environment variable ---------------------------------------

/// Fields of the `pub struct`s in a Rust file: struct name -> [(field, type)], without
/// `#[serde(skip)]` fields.
fn struct_fields(source: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut skip_next = false;
    for line in source.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("pub struct ") {
            let name = name_of(rest).to_owned();
            out.entry(name.clone()).or_default();
            current = rest.trim_end().ends_with('{').then_some(name);
        } else if t == "}" {
            current = None;
        } else if t.starts_with("#[serde(skip") {
            skip_next = true;
        } else if let (Some(s), Some(rest)) = (&current, t.strip_prefix("pub "))
            && let Some((field, ty)) = rest.split_once(':')
            // A `#[serde(skip)]` field is not a key; the flag holds for the next field only.
            && !std::mem::take(&mut skip_next)
        {
            let entry = out.get_mut(s).expect("struct seen");
            entry.push((
                field.trim().to_owned(),
                ty.trim().trim_end_matches(',').to_owned(),
            ));
        }
    }
    out
}

/// Every key `planwave.toml` accepts, dotted (`llm.timeouts.connect_secs`); a map's entries
/// are `NAME` (`prices.models.NAME.input_per_mtok`).
fn config_keys() -> BTreeSet<String> {
    let mut structs = struct_fields(
        &std::fs::read_to_string(repo_file("crates/config/src/file.rs")).expect("file.rs"),
    );
    structs.extend(struct_fields(
        &std::fs::read_to_string(repo_file("crates/llm/src/pricing.rs")).expect("pricing.rs"),
    ));
    structs.extend(struct_fields(
        &std::fs::read_to_string(repo_file("crates/llm/src/caps.rs")).expect("caps.rs"),
    ));
    let mut out = BTreeSet::new();
    let mut todo = vec![(String::new(), "ConfigFile".to_owned())];
    while let Some((prefix, name)) = todo.pop() {
        for (field, ty) in structs
            .get(&name)
            .unwrap_or_else(|| panic!("struct {name}"))
        {
            let key = if prefix.is_empty() {
                field.clone()
            } else {
                format!("{prefix}.{field}")
            };
            let inner = ty
                .trim_start_matches("Option<")
                .trim_end_matches('>')
                .rsplit(", ")
                .next()
                .unwrap_or(ty)
                .trim_end_matches('>');
            let map = ty.starts_with("BTreeMap<");
            if structs.contains_key(inner) {
                out.insert(key.clone());
                let under = if map { format!("{key}.NAME") } else { key };
                out.insert(under.clone());
                todo.push((under, inner.to_owned()));
            } else {
                out.insert(key);
            }
        }
    }
    out
}

/// The keys the configuration page documents: each `[table]` heading, and each table row's
/// key in the first column under it, dotted.
fn documented_keys(page: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for s in sections(page) {
        let Some(table) = code_spans(&s.title)
            .into_iter()
            .find_map(|c| c.strip_prefix('[').and_then(|c| c.strip_suffix(']')))
        else {
            continue;
        };
        out.insert(table.to_owned());
        for cell in first_cells(&s.lines) {
            if let Some(key) = code_spans(cell).first() {
                out.insert(format!("{table}.{key}"));
            }
        }
    }
    out
}

/// Environment variable names the code reads: `"PLANWAVE_…"`, `"OPENAI_…"`, `"OTEL_…"` and
/// `"MIMALLOC_…"` literals in non-test sources of the binary and the crates.
fn env_vars_in_code() -> BTreeSet<String> {
    let mut files = Vec::new();
    let mut dirs = vec![repo_file("src")];
    for c in std::fs::read_dir(repo_file("crates"))
        .expect("crates")
        .flatten()
    {
        dirs.push(c.path().join("src"));
    }
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let test_only = p.file_stem().is_some_and(|s| s == "tests");
            if p.is_dir() && !test_only {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && !test_only {
                files.push(p);
            }
        }
    }
    let mut out = BTreeSet::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for lit in text.split('"').skip(1).step_by(2) {
            let env_like = ["PLANWAVE_", "OPENAI_", "OTEL_", "MIMALLOC_"]
                .iter()
                .any(|p| lit.starts_with(p))
                && lit
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if env_like && !NOT_ENV.contains(&lit) {
                out.insert(lit.to_owned());
            }
        }
    }
    out.extend(LIBRARY_ENV.iter().map(|s| (*s).to_owned()));
    out
}

#[test]
fn every_config_key_and_environment_variable_is_in_the_guide() {
    let page = std::fs::read_to_string(repo_file(CONFIG_PAGE)).expect(CONFIG_PAGE);
    let code = config_keys();
    assert!(
        code.contains("llm.timeouts.connect_secs")
            && code.contains("prices.models.NAME.input_per_mtok")
    );
    let documented = documented_keys(&page);
    let missing: Vec<&String> = code.difference(&documented).collect();
    let unknown: Vec<&String> = documented.difference(&code).collect();
    let rows: BTreeSet<&str> = sections(&page)
        .iter()
        .flat_map(|s| first_cells(&s.lines))
        .flat_map(code_spans)
        .collect();
    let env_missing: Vec<String> = env_vars_in_code()
        .into_iter()
        .filter(|v| !rows.contains(v.as_str()))
        .collect();
    assert!(
        missing.is_empty() && unknown.is_empty() && env_missing.is_empty(),
        "{CONFIG_PAGE} and the code differ:\nkeys planwave.toml accepts, not in the guide: {missing:?}\n\
         keys in the guide planwave.toml does not accept: {unknown:?}\n\
         environment variables the code reads, not in the guide: {env_missing:?}"
    );
}
