//! `run --force` replaces an earlier run's files and only those: a file of the user's inside
//! `sections/`, `planner/` or a round's directory survives, while every section the earlier
//! run wrote is gone before the new run writes its own.

use crate::support::{plan, run_plan, tempdir, write_json};

#[test]
fn force_removes_the_earlier_run_s_files_and_keeps_the_user_s() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let first = write_json(
        dir.path(),
        "first.json",
        &plan("t", &[("1", "a", &[]), ("old-only", "b", &["1"])]),
    );
    run_plan(&first, &out).run().expect_ok();
    assert!(out.join("sections/old-only.md").is_file());
    let mine = [
        "sections/notes.md",
        "sections/draft.txt",
        "planner/mine.txt",
        "rounds/mine.txt",
    ];
    for rel in mine {
        let p = out.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "the user's own").unwrap();
    }
    let second = write_json(dir.path(), "second.json", &plan("t", &[("1", "a", &[])]));
    run_plan(&second, &out).arg("--force").run().expect_ok();
    for rel in mine {
        assert_eq!(
            std::fs::read_to_string(out.join(rel)).ok().as_deref(),
            Some("the user's own"),
            "{rel} was removed"
        );
    }
    assert!(
        !out.join("sections/old-only.md").exists(),
        "the earlier run's section was removed"
    );
    assert!(out.join("sections/1.md").is_file());
}
