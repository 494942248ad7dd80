//! Bounds on a JSON Schema so a server that turns it into a grammar (llama.cpp, vLLM) stops a
//! runaway answer itself: every array without `maxItems` gets one, every string without
//! `maxLength` too. A weak model then cannot repeat one list item until the output cap.

use serde_json::Value;

/// Adds `maxItems: items` to every array schema and `maxLength: chars` to every string
/// schema in `schema` that has none, at any depth (`$defs`, `properties`, `items`, ...).
pub fn bound_schema(schema: &mut Value, items: u64, chars: u64) {
    match schema {
        Value::Object(map) => {
            let kind = map.get("type").cloned();
            let is = |t: &str| match &kind {
                Some(Value::String(s)) => s == t,
                Some(Value::Array(a)) => a.iter().any(|v| v == t),
                _ => false,
            };
            if is("array") && !map.contains_key("maxItems") {
                map.insert("maxItems".into(), items.into());
            }
            if is("string") && !map.contains_key("maxLength") && !map.contains_key("enum") {
                map.insert("maxLength".into(), chars.into());
            }
            for v in map.values_mut() {
                bound_schema(v, items, chars);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| bound_schema(v, items, chars)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arrays_and_strings_get_bounds_and_set_ones_stay() {
        let mut s = json!({"type": "object", "properties": {
            "tasks": {"type": "array", "maxItems": 3, "items": {"type": "string"}},
            "notes": {"type": ["array", "null"], "items": {"type": "string", "maxLength": 9}},
            "kind": {"type": "string", "enum": ["a", "b"]}
        }});
        bound_schema(&mut s, 8, 400);
        let p = &s["properties"];
        assert_eq!(p["tasks"]["maxItems"], 3);
        assert_eq!(p["tasks"]["items"]["maxLength"], 400);
        assert_eq!(p["notes"]["maxItems"], 8);
        assert_eq!(p["notes"]["items"]["maxLength"], 9);
        assert!(p["kind"].get("maxLength").is_none());
    }
}
