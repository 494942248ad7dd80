//! `Settings::use_only_key_from`: a load test sends the key it names and no other.

use super::*;

/// Settings for an OpenAI-compatible server whose key came from `PLANWAVE_LLM_API_KEY`.
fn with_found_key() -> Settings {
    let e = env(&[
        ("PLANWAVE_LLM_BASE_URL", "http://env/v1"),
        ("PLANWAVE_LLM_API_KEY", "found"),
    ]);
    let flags = Flags {
        model: Some("m".into()),
        ..Flags::default()
    };
    let s = resolve_settings(&ConfigFile::default(), &e, &flags).expect("settings");
    assert_eq!(key_source(&s), Some("PLANWAVE_LLM_API_KEY"));
    s
}

#[test]
fn the_named_variable_replaces_the_key_found() {
    let mut s = with_found_key();
    let e = env(&[("LOAD_KEY", " named ")]);
    s.use_only_key_from("--api-key-env", Some("LOAD_KEY"), &e)
        .expect("key");
    assert_eq!(
        openai(&s).api_key.as_ref().map(|k| k.expose()),
        Some("named")
    );
    assert_eq!(key_source(&s), Some("$LOAD_KEY"));
}

#[test]
fn no_variable_means_no_key_at_all() {
    let mut s = with_found_key();
    s.use_only_key_from("--api-key-env", None, &env(&[]))
        .expect("no key");
    assert!(openai(&s).api_key.is_none());
    assert_eq!(key_source(&s), None);
}

#[test]
fn an_unset_or_blank_variable_is_reported_under_the_flag() {
    for e in [env(&[]), env(&[("LOAD_KEY", "  ")])] {
        let mut s = with_found_key();
        let err = s
            .use_only_key_from("--api-key-env", Some("LOAD_KEY"), &e)
            .expect_err("unset");
        assert_eq!(err.source_name(), "--api-key-env");
        assert_eq!(err.problems(), ["$LOAD_KEY is not set or empty"]);
    }
}

#[test]
fn the_simulator_is_left_alone() {
    let mut s =
        resolve_settings(&ConfigFile::default(), &env(&[]), &Flags::default()).expect("settings");
    s.use_only_key_from("--api-key-env", Some("LOAD_KEY"), &env(&[]))
        .expect("sim takes no key");
    assert!(matches!(s.llm, LlmChoice::Sim));
}
