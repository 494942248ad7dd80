//! What clients send that the library's own `ChatMessage` does not take as it is: a message's
//! `content` as an array of parts (`[{"type": "text", "text": "..."}]`, which OpenAI accepts
//! and guidellm sends), `null` content beside tool calls, and the `developer` role.

use std::fmt;

use planwave_llm::{ChatMessage, MessageRole, ToolCall};
use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

#[derive(Deserialize)]
struct WireMessage {
    role: WireRole,
    #[serde(default, deserialize_with = "content")]
    content: String,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum WireRole {
    System,
    /// OpenAI's newer name for the system role.
    Developer,
    User,
    Assistant,
    Tool,
}

/// `messages` as the simulator reads them.
pub(crate) fn messages<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ChatMessage>, D::Error> {
    let wire = Vec::<WireMessage>::deserialize(d)?;
    Ok(wire
        .into_iter()
        .map(|m| ChatMessage {
            role: match m.role {
                WireRole::System | WireRole::Developer => MessageRole::System,
                WireRole::User => MessageRole::User,
                WireRole::Assistant => MessageRole::Assistant,
                WireRole::Tool => MessageRole::Tool,
            },
            content: m.content,
            tool_calls: m.tool_calls,
            tool_call_id: m.tool_call_id,
        })
        .collect())
}

/// One part of an array `content`; parts without text (images, audio) count as nothing.
#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    text: Option<String>,
}

/// A string, an array of parts (their texts joined by newlines, as vLLM joins them), or null.
fn content<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    struct Content;
    impl<'de> Visitor<'de> for Content {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string, an array of content parts, or null")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_owned())
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
            Ok(v)
        }
        fn visit_unit<E: de::Error>(self) -> Result<String, E> {
            Ok(String::new())
        }
        fn visit_none<E: de::Error>(self) -> Result<String, E> {
            Ok(String::new())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<String, A::Error> {
            let mut text = String::new();
            while let Some(part) = seq.next_element::<Part>()? {
                if let Some(t) = part.text {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&t);
                }
            }
            Ok(text)
        }
    }
    d.deserialize_any(Content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Body {
        #[serde(deserialize_with = "messages")]
        messages: Vec<ChatMessage>,
    }

    #[test]
    fn content_parts_strings_and_null_all_read_as_text() {
        let body: Body = serde_json::from_str(
            r#"{"messages": [
                {"role": "developer", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "a"},
                    {"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "b"}]},
                {"role": "assistant", "content": null}
            ]}"#,
        )
        .expect("parses");
        let got: Vec<(MessageRole, &str)> = body
            .messages
            .iter()
            .map(|m| (m.role, m.content.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (MessageRole::System, "be brief"),
                (MessageRole::User, "a\nb"),
                (MessageRole::Assistant, "")
            ]
        );
        assert!(
            serde_json::from_str::<Body>(r#"{"messages": [{"role": "user", "content": 3}]}"#)
                .is_err()
        );
    }
}
