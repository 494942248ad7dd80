use minijinja::value::Value;
use minijinja::{Environment, UndefinedBehavior, context};
use proptest::strategy::Strategy;

use super::install;

/// Renders each template with minijinja's own formatter and `join`, and with ours.
fn both(name: &str, source: &str, ctx: &Value) -> (Result<String, String>, Result<String, String>) {
    let render = |ours: bool| {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Chainable);
        if ours {
            install(&mut env);
        }
        env.add_template_owned(name.to_owned(), source.to_owned())
            .map_err(|e| e.to_string())?;
        let t = env.get_template(name).map_err(|e| e.to_string())?;
        t.render(ctx).map_err(|e| format!("{e:#}"))
    };
    (render(false), render(true))
}

fn values() -> Value {
    context! {
        s => "plain",
        padded => "  padded\n",
        long => "a string longer than a small string's twenty-two bytes",
        markup => "<b>&\"'</b>",
        safe => Value::from_safe_string("<i>safe</i>".into()),
        n => 42,
        f => 1.5,
        b => true,
        none => (),
        strings => vec!["a", "<b>", "", "中文, \"q\""],
        mixed => vec![Value::from("x"), Value::from(3), Value::from(()), Value::from(vec![1, 2]),
                      Value::from_safe_string("<s>".into()), Value::from(false)],
        empty => Vec::<Value>::new(),
        one => vec!["only"],
        records => vec![context! { a => "1", b => 2 }, context! { a => "3" }],
        map => context! { k => "v", l => vec!["w"] },
        bytes => Value::from_bytes(b"raw".to_vec()),
        sep => ", ",
    }
}

const EXPRESSIONS: &[&str] = &[
    "{{ s }}|{{ padded }}|{{ long }}|{{ markup }}|{{ safe }}|{{ n }}|{{ f }}|{{ b }}|{{ none }}|{{ missing }}",
    "{{ strings }}|{{ mixed }}|{{ empty }}|{{ records }}|{{ map }}|{{ bytes }}|{{ missing.x.y }}",
    "{{ s ~ n }}|{{ s | upper }}|{{ strings[1] }}|{{ map.k }}|{{ 'lit' }}|{{ safe | safe }}",
    "{{ strings | join }}|{{ strings | join(', ') }}|{{ strings | join(sep) }}|{{ one | join('-') }}",
    "{{ empty | join(', ') }}|{{ mixed | join('/') }}|{{ mixed | join }}|{{ records | join(';') }}",
    "{{ strings | join(1) }}|{{ strings | join(none) }}|{{ strings | join(safe) }}",
    "{{ strings | join(missing) }}|{{ strings | join(b) }}|{{ strings | join(f) }}",
    "{{ s | join('-') }}|{{ map | join(',') }}|{{ none | join(',') }}|{{ missing | join(',') }}",
    "{{ records | join(', ', 'a') }}|{{ records | join(', ', attribute='a') }}",
    "{{ strings | join(d='+') }}|{{ records | join(attribute='b') }}",
    "{{ strings | join(', ', nope=1) }}",
    "{{ strings | join(**{'d': '*'}) }}",
    "{{ strings | join(', ', 'x', 'y') }}",
    "{{ records | join(none, 'a') }}|{{ records | join(missing, 'a') }}|{{ strings | join(none) }}",
    "{{ n | join(',') }}",
    "{{ bytes | join(',') }}",
    "{{ strings | join(', ') | upper }}|{{ (strings | join(', ')) ~ '!' }}",
    "{% autoescape 'html' %}{{ markup }}|{{ safe }}|{{ strings | join(', ') }}|{{ mixed | join(safe) }}|{{ strings | join('<&>') }}{% endautoescape %}",
    "{% autoescape false %}{{ markup }}|{{ strings | join('<&>') }}{% endautoescape %}",
    "{% for x in mixed %}[{{ x }}]{% endfor %}{% filter upper %}{{ strings | join(',') }}{% endfilter %}",
];

#[test]
fn printing_and_join_match_minijinja_s_own() {
    let ctx = values();
    let mut checked = 0;
    for source in EXPRESSIONS {
        // `.j2` names render without escaping (every template here); `.html` ones escape.
        for name in ["t.j2", "t.html", "t.json"] {
            let (theirs, ours) = both(name, source, &ctx);
            assert_eq!(ours, theirs, "{name}: {source}");
            checked += usize::from(theirs.is_ok());
        }
    }
    // The table is not all errors.
    assert!(checked > EXPRESSIONS.len() * 2, "{checked}");
}

proptest::proptest! {
    #[test]
    fn join_matches_minijinja_s_own_on_any_list(
        items in proptest::collection::vec(
            proptest::prop_oneof![
                ".{0,30}".prop_map(Value::from),
                proptest::num::i64::ANY.prop_map(Value::from),
                proptest::bool::ANY.prop_map(Value::from),
                proptest::collection::vec(".{0,5}", 0..3).prop_map(Value::from),
            ],
            0..8,
        ),
        joiner in ".{0,4}",
    ) {
        let ctx = context! { items, joiner };
        for source in ["{{ items | join(joiner) }}|{{ items | join }}|{{ items }}", "{% for i in items %}{{ i }}{% endfor %}"] {
            let (theirs, ours) = both("p.j2", source, &ctx);
            proptest::prop_assert_eq!(ours, theirs);
        }
    }
}
