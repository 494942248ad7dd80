//! `resume` of a damaged run directory: leftover temporary files removed, a damaged journal
//! line named and skipped, a lost section restored from the journal without a model call,
//! and what cannot be repaired said in words that fit.

use crate::support::{edit_journal, events, plan, planwave, run_plan, tempdir, write_json};

/// A finished run of a two-task chain, in `dir/r`.
fn completed_two_task_run(dir: &std::path::Path) -> std::path::PathBuf {
    let p = write_json(
        dir,
        "plan.json",
        &plan("t", &[("1", "a", &[]), ("2", "b", &["1"])]),
    );
    let out = dir.join("r");
    run_plan(&p, &out).quiet().run().expect_ok();
    out
}

#[test]
fn resume_removes_leftover_temporary_files_and_names_a_damaged_journal_line() {
    let dir = tempdir();
    let out = completed_two_task_run(dir.path());
    // What a kill -9 in the middle of RunDir::write leaves, and damage inside the journal.
    std::fs::write(out.join("run.tmp999"), "half").expect("write");
    std::fs::write(out.join("sections").join("1.tmp4242"), "half").expect("write");
    edit_journal(&out, |mut lines| {
        lines.insert(2, "garbage {not json".into());
        lines
    });

    let r = planwave(["resume"]).arg(&out).quiet().run();
    r.expect_ok();
    assert!(
        r.stderr.contains(&format!(
            "resume: {}/events.jsonl line 3 is not a JSON event (damaged; skipped)",
            out.display()
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("removed 2 temporary file(s)"),
        "{}",
        r.stderr
    );
    assert!(!out.join("run.tmp999").exists());
    assert!(!out.join("sections").join("1.tmp4242").exists());
}

#[test]
fn resume_says_what_is_wrong_in_words_that_fit() {
    let dir = tempdir();
    let out = completed_two_task_run(dir.path());
    std::fs::remove_file(out.join("sections").join("1.md")).expect("rm");
    // A journal from before sections were journaled: no copy to restore from.
    edit_journal(&out, |lines| {
        lines
            .iter()
            .map(|l| {
                let mut e: serde_json::Value = serde_json::from_str(l).expect("event");
                if let Some(o) = e.as_object_mut() {
                    o.remove("section");
                }
                e.to_string()
            })
            .collect()
    });
    let r = planwave(["resume"]).arg(&out).quiet().run();
    r.expect_ok();
    assert!(
        r.stderr.contains(&format!(
            "resume: task 1: its section {} is missing; running it again",
            out.join("sections").join("1.md").display()
        )),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("cannot write"), "{}", r.stderr);

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let r = planwave(["resume"]).arg(&empty).run();
    r.expect_code(2);
    assert_eq!(
        r.stderr.trim(),
        format!(
            "{}: is not a planwave run directory (it has no events.jsonl); nothing to resume",
            empty.display()
        )
    );
}

#[test]
fn a_section_file_lost_after_completion_comes_back_from_the_journal_without_a_model_call() {
    let server = crate::support::SimLlm::start(&[], &[]);
    let dir = tempdir();
    let p = write_json(
        dir.path(),
        "plan.json",
        &plan(
            "t",
            &[("1", "a", &[]), ("2", "b", &["1"]), ("3", "c", &["2"])],
        ),
    );
    let out = dir.path().join("r");
    let stream = dir.path().join("stream.jsonl");
    // (kept outside the run directory, as --events must be)
    run_plan(&p, &out)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .opt("--events", &stream)
        .quiet()
        .run()
        .expect_ok();
    let before = server.stats();
    // The journal's completion carries the text, and so does the live stream (same lines).
    let journaled: Vec<serde_json::Value> = events(&out)
        .into_iter()
        .filter(|e| e["type"] == "task_completed")
        .collect();
    assert_eq!(journaled.len(), 3);
    assert!(journaled.iter().all(|e| e["section"].is_string()));
    let streamed = std::fs::read_to_string(&stream).expect("stream");
    assert_eq!(streamed.matches("\"section\":").count(), 3);

    // What a power loss can do to files written without their own sync.
    let s1 = out.join("sections").join("1.md");
    let original = std::fs::read_to_string(&s1).expect("section");
    std::fs::remove_file(&s1).expect("rm");
    std::fs::write(out.join("sections").join("2.md"), "").expect("truncate");
    let r = planwave(["resume"])
        .arg(&out)
        .env("PLANWAVE_LLM_BASE_URL", &server.base_url)
        .quiet()
        .run();
    r.expect_ok();
    assert!(
        r.stderr
            .contains("task 1: sections/1.md restored from the journal"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("task 2: sections/2.md restored from the journal"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_to_string(&s1).expect("restored"), original);
    let after = server.stats();
    assert_eq!(
        after["tasks"], before["tasks"],
        "no task was sent to the model again"
    );
}
