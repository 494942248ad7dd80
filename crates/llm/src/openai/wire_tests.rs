//! Every usage shape in use, read into one [`Usage`].

use super::*;

fn usage(json: &str) -> Usage {
    match serde_json::from_str::<WireUsage>(json) {
        Ok(u) => u.to_usage(),
        Err(e) => panic!("{json}: {e}"),
    }
}

fn expect(prompt: u64, completion: u64, reasoning: u64, cached: u64, written: u64) -> Usage {
    Usage {
        cached_tokens: cached,
        cache_write_tokens: written,
        ..Usage::new(prompt, completion, reasoning)
    }
}

#[test]
fn openai_cached_tokens_are_part_of_the_prompt() {
    let u = usage(
        r#"{"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
            "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 100}}"#,
    );
    assert_eq!(u, expect(2006, 200, 100, 1920, 0));
    assert_eq!(u.uncached_prompt_tokens(), 86);
}

#[test]
fn deepseek_hit_and_miss_add_up_to_the_prompt() {
    let u = usage(
        r#"{"prompt_tokens": 1000, "completion_tokens": 50,
            "prompt_cache_hit_tokens": 768, "prompt_cache_miss_tokens": 232}"#,
    );
    assert_eq!(u, expect(1000, 50, 0, 768, 0));
    // Without prompt_tokens the two parts are the prompt.
    let u = usage(
        r#"{"completion_tokens": 5, "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36}"#,
    );
    assert_eq!(u, expect(100, 5, 0, 64, 0));
}

#[test]
fn anthropic_counts_through_a_proxy_that_includes_them_in_the_prompt() {
    let u = usage(
        r#"{"prompt_tokens": 3000, "completion_tokens": 10,
            "cache_read_input_tokens": 2048, "cache_creation_input_tokens": 512}"#,
    );
    assert_eq!(u, expect(3000, 10, 0, 2048, 512));
}

#[test]
fn anthropic_input_tokens_leave_the_cached_parts_out() {
    // Anthropic's own shape: input_tokens counts only what was neither read nor written.
    let u = usage(
        r#"{"input_tokens": 40, "output_tokens": 12,
            "cache_read_input_tokens": 2048, "cache_creation_input_tokens": 512}"#,
    );
    assert_eq!(u, expect(2600, 12, 0, 2048, 512));
    // A proxy that passed input_tokens on as prompt_tokens: the parts are added back.
    let u =
        usage(r#"{"prompt_tokens": 40, "completion_tokens": 12, "cache_read_input_tokens": 2048}"#);
    assert_eq!(u, expect(2088, 12, 0, 2048, 0));
}

#[test]
fn responses_api_input_details() {
    let u = usage(
        r#"{"input_tokens": 500, "output_tokens": 20,
            "input_tokens_details": {"cached_tokens": 256}}"#,
    );
    assert_eq!(u, expect(500, 20, 0, 256, 0));
}

#[test]
fn no_cache_figures_and_odd_values_mean_nothing_cached() {
    assert_eq!(
        usage(r#"{"prompt_tokens": 7, "completion_tokens": 3}"#),
        expect(7, 3, 0, 0, 0)
    );
    assert_eq!(
        usage(r#"{"prompt_tokens": 7, "completion_tokens": 3, "prompt_tokens_details": null}"#),
        expect(7, 3, 0, 0, 0)
    );
    assert_eq!(
        usage(r#"{"prompt_tokens": 7, "prompt_tokens_details": {"cached_tokens": "x"}}"#),
        expect(7, 0, 0, 0, 0)
    );
    assert!(serde_json::from_str::<WireUsage>(r#"{"prompt_cache_hit_tokens": -1}"#).is_err());
}
