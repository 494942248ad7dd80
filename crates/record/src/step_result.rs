//! A finished task's result as `{{ID.result}}` references read it, and what of it a record
//! keeps. The first pass reads the step's own result (a tool's structured content, a model's
//! answer as text); a record keeps that result only when its section text would not read as
//! the same value, so replans, resumes and streamed plans give later steps what the first
//! pass gave, while most records (and journal lines) carry nothing extra.

use serde_json::Value;

/// What a section reads as when no result was kept with it: JSON if it parses, else the
/// text. It is also how run directories written before results were kept are read.
pub fn result_from_section(section: &str) -> Value {
    serde_json::from_str(section).unwrap_or_else(|_| Value::String(section.to_owned()))
}

/// The result to keep with a record whose section is `section`: `None` when the section
/// reads as `result` anyway.
pub fn result_to_keep(section: &str, result: &Value) -> Option<Box<Value>> {
    (result_from_section(section) != *result).then(|| Box::new(result.clone()))
}

/// [`result_to_keep`] for a result that is the section's own text (a model's answer): kept
/// only when the text parses as JSON, which would otherwise be read back as that JSON.
pub fn text_result_to_keep(section: &str) -> Option<Box<Value>> {
    serde_json::from_str::<serde::de::IgnoredAny>(section)
        .is_ok()
        .then(|| Box::new(Value::String(section.to_owned())))
}

/// A finished task's result: the one kept with its record, else its section read as one.
pub fn read_result(kept: Option<&Value>, section: &str) -> Value {
    match kept {
        Some(v) => v.clone(),
        None => result_from_section(section),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_is_kept_only_when_the_section_would_not_read_as_it() {
        let structured = json!({"result": "hello team"});
        let kept = result_to_keep("hello team", &structured);
        assert_eq!(kept.as_deref(), Some(&structured));
        assert_eq!(read_result(kept.as_deref(), "hello team"), structured);
        // Text that reads as itself, and JSON text whose result is that JSON: nothing kept.
        assert_eq!(result_to_keep("plain", &json!("plain")), None);
        assert_eq!(result_to_keep("{\"a\":1}", &json!({"a": 1})), None);
        assert_eq!(read_result(None, "{\"a\":1}"), json!({"a": 1}));
        // A model's answer stays text, even when it parses as JSON.
        assert_eq!(text_result_to_keep("## Heading\n\ntext"), None);
        let answer = text_result_to_keep("42");
        assert_eq!(read_result(answer.as_deref(), "42"), json!("42"));
    }
}
