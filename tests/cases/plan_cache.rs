//! `--plan-cache DIR`: a plan the planner wrote is reused for the same question without a
//! planner call, by `research` (its first plan only) and by a batch's goal jobs.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::cases::batch::jsonl;
use crate::support::{Planwave, events, planwave, read_json, tempdir};

/// `research GOAL --out OUT --plan-cache CACHE`, one round, on the instant simulator.
pub(crate) fn research(goal: &str, out: &Path, cache: &Path) -> Planwave {
    planwave(["research", goal])
        .out(out)
        .opt("--plan-cache", cache)
        .opt("--max-rounds", "1")
        .instant()
        .quiet()
}

/// Planner calls a run directory records: `run.json` `calls[]` and the journal's `llm_call`s.
fn planner_calls(dir: &Path) -> usize {
    let run = read_json(&dir.join("run.json"));
    let recorded = run["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter(|c| c["role"] == "planner")
        .count();
    let journaled = events(dir)
        .iter()
        .filter(|e| e["type"] == "llm_call" && e["role"] == "planner")
        .count();
    recorded + journaled
}

/// The cache's plan entries (`call-times.json` beside them is not one).
fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(cache)
        .expect("cache dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| !p.ends_with("call-times.json"))
        .collect();
    v.sort();
    v
}

#[test]
fn research_reuses_its_cached_plan_and_a_new_goal_or_no_plan_cache_plans_again() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let goal = "深度分析特斯拉公司";

    let first = dir.path().join("first");
    research(goal, &first, &cache).run().expect_ok();
    assert_eq!(planner_calls(&first), 2, "one call, recorded and journaled");
    assert_eq!(read_json(&first.join("run.json"))["plan_source"], "planner");
    assert_eq!(entries(&cache).len(), 1);

    let second = dir.path().join("second");
    let r = research(goal, &second, &cache).run();
    r.expect_ok();
    assert!(
        r.stdout.starts_with("plan from the cache: 5 tasks\n"),
        "{}",
        r.stdout
    );
    assert_eq!(planner_calls(&second), 0);
    let run = read_json(&second.join("run.json"));
    assert_eq!(run["plan_source"], "cache");
    assert_eq!(run["status"], "completed");
    assert_eq!(
        read_json(&second.join("rounds/1/run.json"))["plan_source"],
        "cache"
    );
    let plan = |d: &Path| read_json(&d.join("plan.json"))["tasks"].clone();
    assert_eq!(plan(&second), plan(&first));

    // Another goal is another key.
    let other = dir.path().join("other");
    research("深度分析比亚迪公司", &other, &cache)
        .run()
        .expect_ok();
    assert_eq!(planner_calls(&other), 2);
    assert_eq!(read_json(&other.join("run.json"))["plan_source"], "planner");
    assert_eq!(entries(&cache).len(), 2);

    // --no-plan-cache: the planner again, and nothing stored.
    let off = dir.path().join("off");
    planwave(["research", goal])
        .out(&off)
        .arg("--no-plan-cache")
        .opt("--max-rounds", "1")
        .instant()
        .quiet()
        .run()
        .expect_ok();
    assert_eq!(planner_calls(&off), 2);
    assert_eq!(read_json(&off.join("run.json"))["plan_source"], "planner");

    // The same from planwave.toml: `[planner] plan_cache`, which the flag turns off.
    let toml = dir.path().join("planwave.toml");
    std::fs::write(&toml, "[planner]\nplan_cache = \"cache\"\n").expect("toml");
    let from_file = dir.path().join("from_file");
    planwave(["research", goal])
        .out(&from_file)
        .opt("--config", &toml)
        .opt("--max-rounds", "1")
        .instant()
        .quiet()
        .run()
        .expect_ok();
    assert_eq!(planner_calls(&from_file), 0);
    let off_file = dir.path().join("off_file");
    planwave(["research", goal])
        .out(&off_file)
        .opt("--config", &toml)
        .arg("--no-plan-cache")
        .opt("--max-rounds", "1")
        .instant()
        .quiet()
        .run()
        .expect_ok();
    assert_eq!(planner_calls(&off_file), 2);
}

#[test]
fn only_the_first_rounds_plan_comes_from_the_cache() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let goal = "深度分析特斯拉公司";
    research(goal, &dir.path().join("warm"), &cache)
        .run()
        .expect_ok();
    let out = dir.path().join("two");
    planwave(["research", goal])
        .out(&out)
        .opt("--plan-cache", &cache)
        .opt("--max-rounds", "2")
        .opt("--sim-scores", "40,96")
        .instant()
        .quiet()
        .run()
        .expect_ok();
    let round = |k: u32| out.join("rounds").join(k.to_string());
    assert_eq!(
        read_json(&round(1).join("run.json"))["plan_source"],
        "cache"
    );
    assert_eq!(planner_calls(&round(1)), 0);
    // Round 2 is told round 1's reflection: planned afresh, and not stored.
    assert_eq!(
        read_json(&round(2).join("run.json"))["plan_source"],
        "planner"
    );
    assert_eq!(planner_calls(&round(2)), 2);
    assert_eq!(entries(&cache).len(), 1);
}

#[test]
fn a_corrupt_entry_is_a_miss_with_a_warning_and_the_cap_evicts_the_oldest() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let goal = "深度分析特斯拉公司";
    research(goal, &dir.path().join("a"), &cache)
        .run()
        .expect_ok();
    let [entry] = entries(&cache).try_into().expect("one entry");
    std::fs::write(&entry, "{\"planwave_plan_cache\": 1, \"key\": ").expect("corrupt it");

    let b = dir.path().join("b");
    let r = research(goal, &b, &cache).run();
    r.expect_ok();
    assert!(
        r.stderr.contains(&format!(
            "warning: plan cache: {}: not a cache entry: ",
            entry.display()
        )) && r.stderr.contains("; planning instead"),
        "{}",
        r.stderr
    );
    assert_eq!(planner_calls(&b), 2);
    // Stored again, whole: the next run hits.
    let c = dir.path().join("c");
    research(goal, &c, &cache).run().expect_ok();
    assert_eq!(planner_calls(&c), 0);

    // A cap of one: a new goal's plan replaces the older entry.
    planwave(["research", "深度分析比亚迪公司"])
        .out(dir.path().join("d"))
        .opt("--plan-cache", &cache)
        .opt("--plan-cache-max-entries", "1")
        .opt("--max-rounds", "1")
        .instant()
        .quiet()
        .run()
        .expect_ok();
    let left = entries(&cache);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_ne!(left[0], entry);
    let kept: Value = read_json(&left[0]);
    assert_eq!(kept["goal"], "深度分析比亚迪公司");
}

#[test]
fn a_batchs_goal_jobs_reuse_cached_plans_and_say_so() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let jobs = jsonl(
        dir.path(),
        "jobs.jsonl",
        &[
            json!({"id": "tesla", "goal": "深度分析特斯拉公司"}).to_string(),
            json!({"id": "byd", "goal": "深度分析特斯拉公司", "metadata": {"ticker": "002594.SZ"}})
                .to_string(),
        ],
    );
    let batch = |out: &Path| {
        planwave(["batch"])
            .arg(&jobs)
            .out(out)
            .opt("--plan-cache", &cache)
            .instant()
            .quiet()
            .run()
            .expect_ok();
    };
    let first = dir.path().join("first");
    batch(&first);
    // The same goal with other metadata is another key.
    assert_eq!(entries(&cache).len(), 2);
    let second = dir.path().join("second");
    batch(&second);
    for id in ["tesla", "byd"] {
        let (a, b) = (first.join("jobs").join(id), second.join("jobs").join(id));
        // A goal job runs the loop as research does: one call, recorded and journaled.
        assert_eq!(planner_calls(&a), 2, "{id}");
        assert_eq!(read_json(&a.join("run.json"))["plan_source"], "planner");
        assert_eq!(planner_calls(&b), 0, "{id}");
        assert_eq!(read_json(&b.join("run.json"))["plan_source"], "cache");
    }
    assert_eq!(
        read_json(&second.join("jobs/byd/plan.json"))["meta"],
        json!({"ticker": "002594.SZ"})
    );
}

/// A temporary file name planted as a symbolic link in the cache is never written through:
/// the file it points at is unchanged and the plan is still stored.
#[test]
fn the_plan_cache_never_writes_through_a_planted_link() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let research = |out: &str| {
        planwave(["research", "Acme outlook", "--max-rounds", "1", "-q"])
            .opt("--sim-latency-ms", "0")
            .opt("--plan-cache", &cache)
            .out(dir.path().join(out))
    };
    research("first").run().expect_ok();
    let entry = std::fs::read_dir(&cache)
        .expect("cache")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".json") && n != "call-times.json")
        .expect("an entry");
    let key = entry.trim_end_matches(".json").to_owned();
    std::fs::remove_file(cache.join(&entry)).expect("forget the entry");
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious\n").expect("victim");
    // The shell plants `.tmp-KEY-PID-0` for its own pid, then becomes planwave (same pid).
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("ln -s \"$1\" \"$2/.tmp-$3-$$-0\" && exec \"$0\" research 'Acme outlook' --max-rounds 1 -q --sim-latency-ms 0 --plan-cache \"$2\" --out \"$4\"")
        .arg(env!("CARGO_BIN_EXE_planwave"))
        .arg(&victim)
        .arg(&cache)
        .arg(&key)
        .arg(dir.path().join("second"))
        .env_remove("PLANWAVE_CONFIG")
        .status()
        .expect("sh");
    assert!(status.success(), "{status}");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious\n"
    );
    assert!(
        cache.join(&entry).is_file(),
        "the plan was stored all the same"
    );
}

#[test]
fn the_plan_cache_matches_goals_up_to_case_punctuation_and_spacing() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let research = |goal: &str, out: &std::path::Path| {
        planwave(["research", goal])
            .out(out)
            .opt("--plan-cache", &cache)
            .opt("--max-rounds", "1")
            .instant()
            .quiet()
            .run()
    };
    let first = dir.path().join("first");
    research("分析特斯拉", &first).expect_ok();
    assert_eq!(read_json(&first.join("run.json"))["plan_source"], "planner");
    let second = dir.path().join("second");
    research("  分析特斯拉。 ", &second).expect_ok();
    assert_eq!(read_json(&second.join("run.json"))["plan_source"], "cache");
    let third = dir.path().join("third");
    research("Analyse Tesla", &third).expect_ok();
    let fourth = dir.path().join("fourth");
    research("analyse   TESLA!", &fourth).expect_ok();
    assert_eq!(read_json(&fourth.join("run.json"))["plan_source"], "cache");
    // The entries keep the goals as first written.
    let goals: Vec<String> = std::fs::read_dir(&cache)
        .expect("cache")
        .map(|e| e.expect("entry").path())
        .filter(|p| !p.ends_with("call-times.json"))
        .map(|p| read_json(&p)["goal"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(goals.len(), 2, "{goals:?}");
    assert!(
        goals.contains(&"分析特斯拉".to_owned()) && goals.contains(&"Analyse Tesla".to_owned())
    );
}
