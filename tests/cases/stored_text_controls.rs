//! Text from a tool or a model is stored without the characters that act on a terminal or
//! hide what text says (ESC, BEL, the other controls, bidirectional overrides): a section
//! file, `report.md` or `report.html` opened with `cat` or a viewer shows what it holds.

use serde_json::json;

use crate::cases::mcp::everything_config;
use crate::support::{all_files, run_plan, tempdir, write_json};

#[test]
fn control_characters_from_a_tool_are_not_stored_in_sections_or_reports() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    // echo returns the message: the controls come back as a real MCP server's output.
    let p = write_json(
        dir.path(),
        "plan.json",
        &json!({"topic": "Controls", "steps": [
            {"step_id": "say", "description": "Echo a message", "tool": "echo",
             "params": {"message": "before \u{1b}]0;pwned\u{7} \u{1b}[2J\u{8}\u{202e}after"}}
        ]}),
    );
    let out = dir.path().join("out");
    run_plan(&p, &out)
        .opt("--mcp-config", &cfg)
        .run()
        .expect_ok();
    let stored: Vec<_> = all_files(&out)
        .into_iter()
        .filter(|(p, _)| {
            p.starts_with(out.join("sections"))
                || p.ends_with("report.md")
                || p.ends_with("report.html")
        })
        .collect();
    assert_eq!(stored.len(), 3, "{stored:?}");
    for (path, text) in &stored {
        assert!(
            text.contains("before ]0;pwned [2Jafter"),
            "{}: the text is kept: {text}",
            path.display()
        );
        let bad: Vec<char> = text
            .chars()
            .filter(|c| (c.is_control() && !matches!(c, '\n' | '\t')) || *c == '\u{202e}')
            .collect();
        assert_eq!(bad, Vec::<char>::new(), "{}", path.display());
    }
}
