//! Properties of the job-file parser: it never panics, never loses a line (every non-blank
//! line is a job or a bad line, with its own number), and reads back the jobs it was given.

use planwave_batch::{JobSource, parse_jobs};
use proptest::prelude::*;
use serde_json::json;

fn job_line() -> impl Strategy<Value = (String, serde_json::Value)> {
    let id = "[a-zA-Z0-9._/-][a-zA-Z0-9 ._/-]{0,11}";
    let source = prop_oneof![
        "[^\\n]{1,40}"
            .prop_filter("non-blank", |g| !g.trim().is_empty())
            .prop_map(|g| json!({"goal": g})),
        "[a-z]{1,8}\\.json".prop_map(|p| json!({"plan_file": p})),
        Just(json!({"plan": {"topic": "t", "tasks": []}})),
        ("[a-z]{1,8}\\.json", "[^\\n]{0,20}")
            .prop_map(|(p, c)| json!({"template": p, "vars": {"company": c}})),
    ];
    (id, source).prop_map(|(id, mut src)| {
        src["id"] = json!(id);
        (id, src)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_and_accounts_for_every_line(text in "[\\PC\\n{}\":,\\[\\]]{0,400}") {
        let f = parse_jobs(&text);
        let non_blank = text.lines().filter(|l| !l.trim().is_empty()).count();
        prop_assert_eq!(f.jobs.len() + f.bad.len(), non_blank);
        for b in &f.bad {
            prop_assert!(b.line >= 1 && b.line <= text.lines().count());
        }
    }

    #[test]
    fn good_lines_read_back_among_garbage(
        lines in prop::collection::vec(prop_oneof![
            3 => job_line().prop_map(Some),
            1 => Just(None),
        ], 0..20)
    ) {
        let mut text = String::new();
        let mut expected = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, l) in lines.iter().enumerate() {
            match l {
                Some((id, v)) => {
                    text.push_str(&v.to_string());
                    if seen.insert(id.clone()) {
                        expected.push((i + 1, id.clone(), v.clone()));
                    }
                }
                None => text.push_str("{\"id\": oops"),
            }
            text.push('\n');
        }
        let f = parse_jobs(&text);
        prop_assert_eq!(f.jobs.len(), expected.len());
        for (job, (line, id, v)) in f.jobs.iter().zip(&expected) {
            prop_assert_eq!(job.line, *line);
            prop_assert_eq!(&job.id, id);
            let ok = match &job.source {
                JobSource::Goal(g) => v["goal"] == json!(g),
                JobSource::PlanFile(p) => v["plan_file"] == json!(p.to_string_lossy()),
                JobSource::Plan(p) => &v["plan"] == p,
                JobSource::Template { path, vars } => {
                    v["template"] == json!(path.to_string_lossy())
                        && v["vars"] == json!(vars)
                }
            };
            prop_assert!(ok, "{:?} vs {}", job.source, v);
        }
        prop_assert_eq!(f.jobs.len() + f.bad.len(), lines.len());
    }
}
