use std::collections::HashMap;

use planwave_llm::AgentRole;
use planwave_llm::openai::{OpenAiConfig, ResponseFormatMode};

use super::*;

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn openai(s: &Settings) -> &OpenAiConfig {
    match &s.llm {
        LlmChoice::OpenAi { config, .. } => config,
        LlmChoice::Sim => panic!("expected openai, got sim"),
    }
}

fn key_source(s: &Settings) -> Option<&str> {
    match &s.llm {
        LlmChoice::OpenAi { api_key_source, .. } => api_key_source.as_deref(),
        LlmChoice::Sim => panic!("expected openai, got sim"),
    }
}

#[test]
fn nothing_configured_means_the_simulator() {
    let s = resolve_settings(
        &ConfigFile::default(),
        &env(&[("OPENAI_API_KEY", "k")]),
        &Flags::default(),
    )
    .expect("settings");
    assert!(matches!(s.llm, LlmChoice::Sim));
    assert_eq!(s.planner.attempts, 3);
    assert_eq!(
        s.run.context_budget_tokens,
        Some(planwave_engine::DEFAULT_CONTEXT_BUDGET_TOKENS)
    );
}

#[test]
fn flags_beat_env_beat_file_beat_openai_env() {
    let file = ConfigFile::parse(
        r#"
[llm]
base_url = "http://file/v1"
model = "file-model"
api_key = "file-key"
response_format = "json_schema"
[llm.models]
planner = "big"
[llm.limits]
max_in_flight = 4
"#,
        None,
    )
    .expect("parse");
    let e = env(&[
        ("PLANWAVE_LLM_MODEL", "env-model"),
        ("OPENAI_BASE_URL", "http://openai-env/v1"),
        ("OPENAI_API_KEY", "openai-key"),
    ]);
    let s = resolve_settings(&file, &e, &Flags::default()).expect("settings");
    let o = openai(&s);
    assert_eq!(o.base_url, "http://file/v1");
    assert_eq!(o.models.default, "env-model");
    assert_eq!(o.models.for_role(AgentRole::Planner), "big");
    assert_eq!(o.models.for_role(AgentRole::Integrator), "env-model");
    assert_eq!(o.api_key.as_ref().map(|k| k.expose()), Some("file-key"));
    assert_eq!(o.response_format, ResponseFormatMode::JsonSchema);
    assert_eq!(o.limits.max_in_flight, Some(4));

    let flags = Flags {
        base_url: Some("http://flag/v1/".into()),
        model: Some("flag-model".into()),
        ..Flags::default()
    };
    let e2 = env(&[
        ("PLANWAVE_LLM_BASE_URL", "http://env/v1"),
        ("PLANWAVE_LLM_API_KEY", "pw"),
    ]);
    let s = resolve_settings(&file, &e2, &flags).expect("settings");
    let o = openai(&s);
    assert_eq!(o.base_url, "http://flag/v1", "trailing slash trimmed");
    assert_eq!(o.models.default, "flag-model");
    assert_eq!(key_source(&s), Some("PLANWAVE_LLM_API_KEY"));
    let s = resolve_settings(
        &ConfigFile::default(),
        &e2,
        &Flags {
            model: Some("m".into()),
            ..Flags::default()
        },
    )
    .expect("settings");
    assert_eq!(openai(&s).base_url, "http://env/v1");
}

#[test]
fn the_key_never_shows_in_debug_output() {
    let e = env(&[
        ("PLANWAVE_LLM_API_KEY", "sk-very-secret-0000"),
        ("PLANWAVE_LLM_MODEL", "m"),
    ]);
    let s = resolve_settings(&ConfigFile::default(), &e, &Flags::default()).expect("settings");
    let dbg = format!("{s:?}");
    assert!(!dbg.contains("very-secret"), "{dbg}");
    assert!(dbg.contains("[redacted]"));
}

#[test]
fn errors_are_specific() {
    let err = ConfigFile::parse("[llm]\nmodle = \"x\"\n", None).expect_err("typo");
    assert!(err.to_string().contains("modle"), "{err}");
    let err = resolve_settings(
        &ConfigFile::default(),
        &env(&[]),
        &Flags {
            llm: Some(LlmKind::OpenAi),
            ..Flags::default()
        },
    )
    .expect_err("no model");
    assert!(err.to_string().contains("no model configured"), "{err}");
    let f =
        ConfigFile::parse("[llm]\nmodel = \"m\"\napi_key_env = \"MY_KEY\"\n", None).expect("parse");
    let err = resolve_settings(&f, &env(&[]), &Flags::default()).expect_err("unset var");
    assert_eq!(
        err.to_string(),
        "[llm] api_key_env names MY_KEY, which is not set"
    );
    let f = ConfigFile::parse(
        "[llm]\nmodel = \"m\"\nbase_url = \"localhost:11434\"\n",
        None,
    )
    .expect("parse");
    assert!(resolve_settings(&f, &env(&[]), &Flags::default()).is_err());
    let f = ConfigFile::parse("[llm]\nmodel = \"m\"\nresponse_format = \"xml\"\n", None)
        .expect("parse");
    assert!(resolve_settings(&f, &env(&[]), &Flags::default()).is_err());
}

#[test]
fn llm_sim_flag_wins_over_a_configured_model_and_names_are_guessed() {
    let e = env(&[
        ("PLANWAVE_LLM_MODEL", "deepseek-chat"),
        ("PLANWAVE_LLM_BASE_URL", "https://api.deepseek.com/v1"),
    ]);
    let s = resolve_settings(
        &ConfigFile::default(),
        &e,
        &Flags {
            llm: Some(LlmKind::Sim),
            ..Flags::default()
        },
    )
    .expect("settings");
    assert!(matches!(s.llm, LlmChoice::Sim));
    let s = resolve_settings(&ConfigFile::default(), &e, &Flags::default()).expect("settings");
    assert_eq!(openai(&s).provider, "deepseek");
}

#[test]
fn the_example_config_parses_and_prompt_dir_is_relative_to_it() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/planwave.toml");
    let f = ConfigFile::read(&path).expect("examples/planwave.toml parses");
    let mut e = env(&[]);
    if let Some(var) = &f.llm.api_key_env {
        e.insert(var.clone(), "x".into());
    }
    let s = resolve_settings(&f, &e, &Flags::default()).expect("resolves");
    assert!(matches!(s.llm, LlmChoice::OpenAi { .. }));
    assert!(!s.run.prices.is_empty());
    if let Some(dir) = &s.prompts_dir {
        assert!(dir.starts_with(path.parent().expect("dir")));
    }
}

#[test]
fn openai_api_key_is_not_sent_to_other_servers() {
    let e = env(&[("OPENAI_API_KEY", "sk-openai"), ("PLANWAVE_LLM_MODEL", "m")]);
    let to = |url: Option<&str>| {
        let flags = Flags {
            base_url: url.map(str::to_owned),
            ..Flags::default()
        };
        let s = resolve_settings(&ConfigFile::default(), &e, &flags).expect("settings");
        openai(&s).api_key.as_ref().map(|k| k.expose().to_owned())
    };
    assert_eq!(
        to(None),
        Some("sk-openai".into()),
        "default base URL is OpenAI's"
    );
    assert_eq!(
        to(Some("https://api.openai.com/v1")),
        Some("sk-openai".into())
    );
    assert_eq!(to(Some("https://api.deepseek.com/v1")), None);
    let e2 = env(&[
        ("OPENAI_API_KEY", "sk-x"),
        ("OPENAI_BASE_URL", "http://proxy/v1"),
        ("PLANWAVE_LLM_MODEL", "m"),
    ]);
    let s = resolve_settings(&ConfigFile::default(), &e2, &Flags::default()).expect("settings");
    assert_eq!(
        openai(&s).api_key.as_ref().map(|k| k.expose()),
        Some("sk-x"),
        "the OPENAI_* pair goes together"
    );
}

#[test]
fn reflective_loop_settings_have_defaults_and_reject_nonsense() {
    let s = resolve_settings(&ConfigFile::default(), &env(&[]), &Flags::default()).expect("ok");
    assert_eq!(s.policy, DEFAULT_LOOP_POLICY);
    assert_eq!(s.policy.max_rounds, 5);
    assert_eq!(s.policy.success_threshold, 80.0);
    let f = ConfigFile::parse(
        "[orchestrator]\nmax_reflection_rounds = 2\nsuccess_threshold = 70.0\n[reflection]\nmax_step_retries = 0\nmax_task_replanning_attempts = 2\n",
        None,
    )
    .expect("parses");
    let s = resolve_settings(&f, &env(&[]), &Flags::default()).expect("ok");
    assert_eq!((s.policy.max_rounds, s.policy.success_threshold), (2, 70.0));
    assert_eq!(
        (
            s.policy.max_step_retries,
            s.policy.max_task_replanning_attempts
        ),
        (0, 2)
    );
    let f = ConfigFile::parse("[orchestrator]\nsuccess_threshold = 120.0\n", None).expect("p");
    let err = resolve_settings(&f, &env(&[]), &Flags::default()).expect_err("range");
    assert!(err.to_string().contains("success_threshold = 120"), "{err}");
    assert!(ConfigFile::parse("[reflection]\nmax_retries = 1\n", None).is_err());
}

#[test]
fn run_limits_come_from_the_run_section_and_must_be_positive() {
    let file = ConfigFile::parse(
        "[run]\ntask_timeout_secs = 90\ndeadline_secs = 3600.5\n",
        None,
    )
    .expect("parse");
    let s = resolve_settings(&file, &env(&[]), &Flags::default()).expect("settings");
    assert_eq!(s.run.task_timeout, Some(std::time::Duration::from_secs(90)));
    assert_eq!(s.deadline, Some(std::time::Duration::from_secs_f64(3600.5)));
    let none =
        resolve_settings(&ConfigFile::default(), &env(&[]), &Flags::default()).expect("settings");
    assert_eq!((none.run.task_timeout, none.deadline), (None, None));
    let bad = ConfigFile::parse("[run]\ndeadline_secs = -1\n", None).expect("parse");
    let err = resolve_settings(&bad, &env(&[]), &Flags::default()).expect_err("negative");
    assert!(
        err.to_string()
            .contains("[run] deadline_secs = -1: expected a positive number of seconds"),
        "{err}"
    );
}

mod flags;
mod mcp;
mod only_key;
mod prices;

#[test]
fn plan_cache_comes_from_the_flag_over_the_file_and_no_plan_cache_turns_it_off() {
    let file = ConfigFile::parse(
        "[planner]\nplan_cache = \"cache\"\nplan_cache_max_entries = 5\n",
        Some(std::path::Path::new("/etc/pw/planwave.toml")),
    )
    .expect("file");
    let resolve = |flags: Flags| resolve_settings(&file, &env(&[]), &flags).map(|s| s.plan_cache);
    assert_eq!(
        resolve(Flags::default()).expect("file"),
        Some(PlanCacheSettings {
            dir: "/etc/pw/cache".into(),
            max_entries: 5
        })
    );
    let flag = Flags {
        plan_cache: Some("here".into()),
        plan_cache_max_entries: Some(9),
        ..Flags::default()
    };
    assert_eq!(
        resolve(flag).expect("flag"),
        Some(PlanCacheSettings {
            dir: "here".into(),
            max_entries: 9
        })
    );
    let off = Flags {
        no_plan_cache: true,
        ..Flags::default()
    };
    assert_eq!(resolve(off).expect("off"), None);
    let none =
        resolve_settings(&ConfigFile::default(), &env(&[]), &Flags::default()).expect("defaults");
    assert_eq!(none.plan_cache, None);
    let zero = Flags {
        plan_cache_max_entries: Some(0),
        ..Flags::default()
    };
    assert!(resolve(zero).is_err());
}
