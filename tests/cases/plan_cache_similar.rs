//! The plan cache serves a similar goal ("特斯拉公司深度分析" after "深度分析特斯拉公司",
//! "Analyze Tesla" after "Analyse Tesla", "请深度分析一下特斯拉公司"), saying which goal it
//! was planned for and how similar; it never serves another subject ("Analyse Nvidia" does
//! not reuse "Analyse Tesla"'s plan, nor "深度分析比亚迪公司" Tesla's).

use std::path::Path;

use serde_json::{Value, json};

use super::plan_cache::research;
use crate::support::{planwave, read_json, tempdir};

fn source(out: &Path) -> (Value, Value) {
    let run = read_json(&out.join("run.json"));
    (run["plan_source"].clone(), run["plan_cache_match"].clone())
}

#[test]
fn a_similar_goal_reuses_the_plan_and_another_subject_does_not() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let out = |name: &str| dir.path().join(name);

    research("深度分析特斯拉公司", &out("first"), &cache)
        .run()
        .expect_ok();
    assert_eq!(source(&out("first")).0, "planner");

    // The same question reordered: the cached plan, with the goal it was planned for.
    let r = planwave(["research", "特斯拉公司深度分析"])
        .out(out("reordered"))
        .opt("--plan-cache", &cache)
        .opt("--max-rounds", "1")
        .instant()
        .run();
    r.expect_ok();
    assert!(
        r.stderr.contains(
            "plan from the cache: 5 tasks, planned for the similar goal \"深度分析特斯拉公司\" (score 0.875)"
        ),
        "{}",
        r.stderr
    );
    assert_eq!(
        source(&out("reordered")),
        (
            json!("cache"),
            json!({"goal": "深度分析特斯拉公司", "score": 0.875})
        )
    );
    assert_eq!(
        read_json(&out("reordered").join("plan.json"))["tasks"],
        read_json(&out("first").join("plan.json"))["tasks"]
    );
    assert_eq!(
        read_json(&out("reordered").join("plan.json"))["metadata"]["planwave_cache_match"]["goal"],
        "深度分析特斯拉公司"
    );

    // Politeness around it changes nothing.
    research("请深度分析一下特斯拉公司", &out("polite"), &cache)
        .run()
        .expect_ok();
    assert_eq!(
        source(&out("polite")),
        (
            json!("cache"),
            json!({"goal": "深度分析特斯拉公司", "score": 1.0})
        )
    );

    // Another subject is planned for, and stored as its own.
    research("深度分析比亚迪公司", &out("byd"), &cache)
        .run()
        .expect_ok();
    assert_eq!(source(&out("byd")), (json!("planner"), Value::Null));
    // ... and, the other way round, Tesla's goal still gets Tesla's plan, not BYD's.
    research("特斯拉公司深度分析", &out("again"), &cache)
        .run()
        .expect_ok();
    assert_eq!(source(&out("again")).1["goal"], "深度分析特斯拉公司");
}

#[test]
fn english_spellings_match_and_another_company_does_not() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let out = |name: &str| dir.path().join(name);

    research("Analyse Tesla", &out("tesla"), &cache)
        .run()
        .expect_ok();
    research("Analyze Tesla", &out("spelling"), &cache)
        .run()
        .expect_ok();
    assert_eq!(
        source(&out("spelling")),
        (
            json!("cache"),
            json!({"goal": "Analyse Tesla", "score": 1.0})
        )
    );

    research("Analyse Nvidia", &out("nvidia"), &cache)
        .run()
        .expect_ok();
    assert_eq!(source(&out("nvidia")), (json!("planner"), Value::Null));
    // Both directions: Tesla's goal does not take Nvidia's plan either.
    research("Analyze Tesla", &out("tesla_again"), &cache)
        .run()
        .expect_ok();
    assert_eq!(source(&out("tesla_again")).1["goal"], "Analyse Tesla");

    // Without a cache nothing is matched.
    let plain = out("plain");
    planwave(["research", "Analyze Tesla"])
        .out(&plain)
        .arg("--no-plan-cache")
        .opt("--max-rounds", "1")
        .instant()
        .run()
        .expect_ok();
    assert_eq!(source(&plain), (json!("planner"), Value::Null));
}
