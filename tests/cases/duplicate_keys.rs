//! A key given twice in one JSON object of a plan file is refused, wherever the object is:
//! serde keeps the last value silently, so a task with two `"id"`s (or two `"dependencies"`)
//! would run as something its author did not read. The message names the key and where.

use crate::support::{planwave, tempdir};

#[test]
fn a_key_given_twice_inside_a_task_is_refused_with_its_place() {
    let dir = tempdir();
    for (text, says) in [
        (
            r#"{"topic": "t", "tasks": [{"id": 1, "description": "a"}, {"id": 2, "description": "b", "id": 1}]}"#,
            r#"the plan has "id" more than once in tasks #2; give it once"#,
        ),
        (
            r#"{"topic": "t", "tasks": [{"id": 1, "description": "a", "dependencies": [], "dependencies": [2]}, {"id": 2, "description": "b"}]}"#,
            r#"the plan has "dependencies" more than once in tasks #1; give it once"#,
        ),
        (
            r#"{"topic": "t", "metadata": {"k": 1, "k": 2}, "tasks": [{"id": 1, "description": "a"}]}"#,
            r#"the plan has "k" more than once in metadata; give it once"#,
        ),
        (
            r#"{"topic": "t", "tasks": [{"id": 1, "description": "a"}], "tasks": []}"#,
            r#"the plan has "tasks" more than once; give it once"#,
        ),
    ] {
        let p = dir.path().join("plan.json");
        std::fs::write(&p, text).expect("write");
        for cmd in ["validate", "run"] {
            let mut c = planwave([cmd]).arg(&p);
            if cmd == "run" {
                c = c.opt("--out", dir.path().join("out"));
            }
            let r = c.run();
            r.expect_code(2);
            assert!(r.stderr.contains(says), "{cmd} {text}: {}", r.stderr);
            assert!(!dir.path().join("out").exists(), "nothing ran");
        }
    }
}
