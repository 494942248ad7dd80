//! A run writes only what is its own: never over the user's files or another run's
//! directory, never its journal through `--events`, never a batch job's directory while the
//! batch drives it, and never through a link planted inside a run directory.

use crate::support::{events, plan, planwave, read_json, run_plan, tempdir, write_json};

#[test]
fn out_never_overwrites_the_users_files_or_another_run() {
    let dir = tempdir();
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).expect("mkdir");
    // The user's plan, with prose around the JSON, in the directory given as --out.
    let text = "My notes.\n{\"topic\": \"t\", \"tasks\": [{\"id\": 1, \"description\": \"a\"}]}\n";
    let own = mine.join("plan.json");
    std::fs::write(&own, text).expect("write");
    let r = run_plan(&own, &mine).quiet().run();
    r.expect_code(2);
    assert!(
        r.stderr.contains("which the run would write over"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_to_string(&own).expect("read"), text);

    std::fs::write(mine.join("report.md"), "my report").expect("write");
    let other = write_json(dir.path(), "other.json", &plan("o", &[("9", "x", &[])]));
    let r = run_plan(&other, &mine).quiet().run();
    r.expect_code(2);
    assert!(
        r.stderr
            .contains("is not empty and is not a planwave run directory"),
        "{}",
        r.stderr
    );
    let r = run_plan(&other, &mine).quiet().arg("--force").run();
    r.expect_code(2);
    assert_eq!(
        std::fs::read_to_string(mine.join("report.md")).expect("kept"),
        "my report"
    );

    // An earlier run's directory: refused, or replaced whole with --force.
    let first = write_json(
        dir.path(),
        "first.json",
        &plan("first", &[("a", "x", &[]), ("b", "y", &[])]),
    );
    let out = dir.path().join("out");
    run_plan(&first, &out).quiet().run().expect_ok();
    let again = run_plan(&other, &out).quiet().run();
    again.expect_code(2);
    assert!(
        again.stderr.contains(&format!(
            "`planwave resume {}` continues it, --force replaces it",
            out.display()
        )),
        "{}",
        again.stderr
    );
    run_plan(&other, &out)
        .quiet()
        .arg("--force")
        .run()
        .expect_ok();
    let started = events(&out)
        .iter()
        .filter(|e| e["type"] == "run_started")
        .count();
    assert_eq!(started, 1, "one run in the journal");
    let sections: Vec<_> = std::fs::read_dir(out.join("sections"))
        .expect("sections")
        .collect();
    assert_eq!(sections.len(), 1, "no section of the earlier run is left");
    assert_eq!(read_json(&out.join("plan.json"))["topic"], "o");
}

#[test]
fn events_pointed_into_the_run_directory_are_refused_before_anything_runs() {
    let dir = tempdir();
    let p = write_json(dir.path(), "plan.json", &plan("t", &[("1", "a", &[])]));
    let out = dir.path().join("r");
    for target in [out.join("events.jsonl"), out.join("sub/../events.jsonl")] {
        let r = run_plan(&p, &out).quiet().opt("--events", &target).run();
        r.expect_code(2);
        assert!(
            r.stderr.contains("is inside the run directory"),
            "{}",
            r.stderr
        );
        assert!(!out.exists(), "nothing was started");
    }
    let r = planwave(["research", "goal"])
        .out(&out)
        .quiet()
        .opt("--events", out.join("x.jsonl"))
        .run();
    r.expect_code(2);
}

#[test]
fn a_batch_job_directory_is_locked_while_the_batch_drives_it() {
    let dir = tempdir();
    let lines = vec![format!(
        r#"{{"id": "k0", "plan": {}}}"#,
        crate::cases::batch::chain("k", 4)
    )];
    let jobs = crate::cases::batch::jsonl(dir.path(), "jobs.jsonl", &lines);
    let out = dir.path().join("b");
    let mut child = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .opt("--sim-latency-ms", "300")
        .opt("--sim-sigma", "0")
        .spawn();
    child.wait_for("job k0: task k1 completed", 1);
    let job_dir = out.join("jobs").join("k0");
    let p = write_json(dir.path(), "p.json", &plan("intruder", &[("1", "a", &[])]));
    let intruder = run_plan(&p, &job_dir).quiet().arg("--force").run();
    intruder.expect_code(2);
    assert!(
        intruder
            .stderr
            .contains("is in use by another planwave process"),
        "{}",
        intruder.stderr
    );
    child.interrupt();
    child.wait();
    // The job's files are the batch's own, untouched by the refused intruder.
    assert!(job_dir.join("events.jsonl").is_file());
    assert!(
        !events(&job_dir)
            .iter()
            .any(|e| e["type"] == "run_started" && e["topic"] == "intruder")
    );
}

#[test]
fn links_inside_a_run_directory_are_refused_not_followed() {
    let dir = tempdir();
    let p = write_json(dir.path(), "plan.json", &plan("t", &[("1", "a", &[])]));
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    std::fs::write(elsewhere.join("1.md"), "precious").expect("write");

    // A run directory (an earlier run's) whose sections/ points elsewhere.
    let out = dir.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    std::fs::write(out.join("run.json"), "{}").expect("marker");
    std::os::unix::fs::symlink(&elsewhere, out.join("sections")).expect("link");
    let r = run_plan(&p, &out).quiet().arg("--force").run();
    // --force removes the link itself (never what it points to), so the run proceeds inside.
    r.expect_ok();
    assert!(out.join("sections").is_dir() && !out.join("sections").is_symlink());
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("1.md")).expect("read"),
        "precious"
    );

    // A journal that is a link, planted in a run being resumed.
    let journal_target = dir.path().join("journal-elsewhere.jsonl");
    std::fs::write(&journal_target, "").expect("write");
    std::fs::remove_file(out.join("events.jsonl")).expect("rm");
    std::os::unix::fs::symlink(&journal_target, out.join("events.jsonl")).expect("link");
    let r = planwave(["resume"]).arg(&out).quiet().run();
    assert_ne!(r.code, 0);
    assert!(
        r.stderr
            .contains("is a symbolic link; planwave does not follow links inside a run directory"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_to_string(&journal_target).expect("read"), "");

    // A sections/ link planted in a run being resumed.
    std::fs::remove_file(out.join("events.jsonl")).expect("rm");
    std::fs::remove_dir_all(out.join("sections")).expect("rm");
    std::os::unix::fs::symlink(&elsewhere, out.join("sections")).expect("link");
    let r = planwave(["resume"]).arg(&out).quiet().run();
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("sections is a symbolic link"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("1.md")).expect("read"),
        "precious"
    );
}
