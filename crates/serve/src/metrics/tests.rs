//! The sinks count as events are emitted: what each series says after a run's events.

use std::sync::Arc;
use std::time::Duration;

use planwave_llm::{ModelPrice, PriceTable};
use planwave_plan::TaskId;
use planwave_record::Usage;
use planwave_record::{Event, EventKind, EventSink, NullSink};

use super::{MeteredSink, Metrics};

/// The value of the sample `name` (with its labels, as encoded) in `text`.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

fn started(n: i64, waited: Option<Duration>) -> Event {
    Event::now(EventKind::TaskStarted {
        task: TaskId::Int(n),
        wave: 0,
        description: String::new(),
        tool: None,
        waited,
    })
}

fn completed(n: i64) -> Event {
    Event::now(EventKind::TaskCompleted {
        task: TaskId::Int(n),
        attempts: 1,
        duration_ms: 1.0,
        usage: Usage::default(),
        section_file: None,
        section_hash: None,
        section: None,
        preview: None,
        result: None,
        truncated: false,
    })
}

fn failed(n: i64) -> Event {
    Event::now(EventKind::TaskFailed {
        task: TaskId::Int(n),
        attempts: 1,
        error: "boom".into(),
    })
}

fn call(model: &str, usage: Usage, error: Option<&str>) -> Event {
    Event::now(EventKind::LlmCall {
        task: None,
        role: "subagent".into(),
        model: model.into(),
        attempt: 1,
        duration_ms: 250.0,
        usage,
        error: error.map(str::to_owned),
    })
}

fn sink(m: &Arc<Metrics>) -> MeteredSink<NullSink> {
    MeteredSink::new(Arc::new(NullSink), m.clone(), None)
}

#[test]
fn tasks_in_flight_rise_and_fall_with_starts_and_ends() {
    let m = Metrics::new();
    let s = sink(&m);
    for n in 1..=3 {
        s.emit(&started(n, None));
    }
    assert_eq!(
        sample(&m.encode(), "planwave_subagents_in_flight"),
        Some(3.0)
    );
    s.emit(&completed(1));
    s.emit(&failed(2));
    let text = m.encode();
    assert_eq!(sample(&text, "planwave_subagents_in_flight"), Some(1.0));
    assert_eq!(
        sample(&text, "planwave_tasks_total{outcome=\"completed\"}"),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "planwave_tasks_total{outcome=\"failed\"}"),
        Some(1.0)
    );
}

#[test]
fn a_run_that_ends_with_tasks_running_gives_them_back_and_no_more() {
    let m = Metrics::new();
    let (a, b) = (sink(&m), sink(&m));
    a.emit(&started(1, None));
    a.emit(&started(2, None));
    b.emit(&started(1, None));
    // A cancelled run: its tasks end with no event of their own.
    a.emit(&Event::now(EventKind::RunFinished {
        run_id: uuid::Uuid::nil(),
        status: "cancelled".into(),
        completed: 0,
        failed: 0,
        blocked: 0,
        duration_ms: 1.0,
        reason: None,
    }));
    assert_eq!(
        sample(&m.encode(), "planwave_subagents_in_flight"),
        Some(1.0)
    );
    // An end the sink never saw start (it joined late) takes nothing from another run's.
    a.emit(&completed(3));
    assert_eq!(
        sample(&m.encode(), "planwave_subagents_in_flight"),
        Some(1.0)
    );
    b.emit(&completed(1));
    assert_eq!(
        sample(&m.encode(), "planwave_subagents_in_flight"),
        Some(0.0)
    );
}

#[test]
fn dispatch_latency_is_the_wait_the_start_carries() {
    let m = Metrics::new();
    let s = sink(&m);
    s.emit(&started(1, Some(Duration::from_millis(3))));
    s.emit(&started(2, Some(Duration::from_millis(5))));
    // A start without a wait (replayed, or no ready event) is not a dispatch.
    s.emit(&started(3, None));
    let text = m.encode();
    assert_eq!(
        sample(&text, "planwave_task_dispatch_latency_seconds_count"),
        Some(2.0)
    );
    let sum = sample(&text, "planwave_task_dispatch_latency_seconds_sum").expect("sum");
    assert!((sum - 0.008).abs() < 1e-9, "{sum}");
}

#[test]
fn calls_count_tokens_by_type_errors_by_class_and_cost_by_price() {
    let m = Metrics::new();
    let mut prices = PriceTable::default();
    prices
        .models
        .insert("m".into(), ModelPrice::new(1_000_000.0, 2_000_000.0));
    let s = MeteredSink::new(Arc::new(NullSink), m.clone(), Some(Arc::new(prices)));
    let usage = Usage {
        prompt_tokens: 100,
        completion_tokens: 20,
        cached_tokens: 60,
        ..Usage::default()
    };
    s.emit(&call("m", usage, None));
    s.emit(&call("m", usage, None));
    s.emit(&call(
        "m",
        Usage::default(),
        Some("HTTP 429 Too Many Requests"),
    ));
    let text = m.encode();
    let tokens = |t: &str| {
        sample(
            &text,
            &format!("planwave_model_tokens_total{{role=\"subagent\",model=\"m\",type=\"{t}\"}}"),
        )
    };
    assert_eq!(tokens("prompt"), Some(200.0));
    assert_eq!(tokens("completion"), Some(40.0));
    assert_eq!(tokens("cached"), Some(120.0));
    assert_eq!(
        sample(
            &text,
            "planwave_model_calls_total{role=\"subagent\",model=\"m\",outcome=\"ok\",error_class=\"\"}"
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &text,
            "planwave_model_calls_total{role=\"subagent\",model=\"m\",outcome=\"error\",error_class=\"rate_limited\"}"
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "planwave_model_call_duration_seconds_count{role=\"subagent\"}"
        ),
        Some(3.0)
    );
    let cost = sample(&text, "planwave_estimated_cost_total{currency=\"USD\"}").expect("cost");
    let one = ModelPrice::new(1_000_000.0, 2_000_000.0).cost(&usage);
    assert!(
        cost > 0.0 && (cost - 2.0 * one).abs() < 1e-6,
        "{cost} vs 2 × {one}"
    );
}

#[test]
fn more_role_and_model_pairs_than_slots_still_count_each_and_model_labels_are_capped() {
    let m = Metrics::new();
    let s = sink(&m);
    let usage = Usage {
        prompt_tokens: 7,
        ..Usage::default()
    };
    let label = |model: &str| {
        format!(
            "planwave_model_tokens_total{{role=\"subagent\",model=\"{model}\",type=\"prompt\"}}"
        )
    };
    for round in 1..=2 {
        for n in 0..40 {
            s.emit(&call(&format!("model-{n}"), usage, None));
        }
        let text = m.encode();
        for n in 0..16 {
            let name = label(&format!("model-{n}"));
            assert_eq!(sample(&text, &name), Some(7.0 * f64::from(round)), "{name}");
        }
        // The 17th name on are folded into one series.
        assert_eq!(sample(&text, &label("model-16")), None);
        assert_eq!(
            sample(&text, &label("other")),
            Some(24.0 * 7.0 * f64::from(round))
        );
        assert_eq!(text.matches("planwave_model_calls_total{").count(), 17);
    }
}
