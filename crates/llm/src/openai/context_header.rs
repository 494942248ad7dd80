//! The optional `x-planwave-*` request headers: how a server learns what a request is about
//! without scraping the prompt.
//!
//! The simulator over HTTP (`planwave sim-llm serve`) answers from the
//! [`RequestContext`] just as the in-process simulator does, so the
//! client sends it as `x-planwave-context` (base64url of its JSON), with
//! `x-planwave-role` and `x-planwave-attempt`. Real providers ignore unknown headers; the
//! context holds nothing the prompt does not already hold (titles, questions, ids, never
//! section text), and is capped at [`MAX_CONTEXT_HEADER`] bytes so no proxy rejects it
//! (sections are dropped from the end to fit). `context_headers = false` turns them off.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::{AgentRole, RequestContext};

pub const ROLE_HEADER: &str = "x-planwave-role";
pub const ATTEMPT_HEADER: &str = "x-planwave-attempt";
pub const CONTEXT_HEADER: &str = "x-planwave-context";
/// Well under the 8 KiB per header line nginx and most gateways allow.
pub const MAX_CONTEXT_HEADER: usize = 6 * 1024;

/// The header value for `ctx`, trimmed to fit; `None` if even the trimmed form is too large.
pub fn encode(ctx: &RequestContext) -> Option<String> {
    let mut ctx = ctx.clone();
    // Tool outputs are prompt text too; the header only needs their gist.
    for r in &mut ctx.tool_results {
        if r.output.chars().count() > 400 {
            r.output = r.output.chars().take(400).collect();
        }
    }
    loop {
        let json = serde_json::to_vec(&ctx).ok()?;
        let v = URL_SAFE_NO_PAD.encode(json);
        if v.len() <= MAX_CONTEXT_HEADER {
            return Some(v);
        }
        if ctx.sections.is_empty() {
            // Then tool schemas, then the oldest tool results.
            if ctx.tools.iter().any(|t| !t.schema.is_null()) {
                for t in &mut ctx.tools {
                    t.schema = serde_json::Value::Null;
                }
                continue;
            }
            if ctx.tool_results.is_empty() {
                return None;
            }
            let drop = ctx.tool_results.len().div_ceil(2);
            ctx.tool_results.drain(..drop);
            continue;
        }
        let keep = ctx.sections.len() / 2;
        ctx.sections.truncate(keep);
    }
}

pub fn decode(value: &str) -> Option<RequestContext> {
    let bytes = URL_SAFE_NO_PAD.decode(value.trim()).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub fn parse_role(s: &str) -> Option<AgentRole> {
    serde_json::from_value(serde_json::Value::String(s.trim().to_owned())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SectionRef;

    #[test]
    fn round_trip_and_size_cap() {
        let mut ctx = RequestContext {
            topic: "特斯拉公司深度分析".into(),
            task_id: Some("3".into()),
            ..Default::default()
        };
        assert_eq!(decode(&encode(&ctx).expect("fits")), Some(ctx.clone()));
        ctx.sections = (0..2000)
            .map(|i| SectionRef {
                id: i.to_string(),
                title: format!("章节标题 {i}"),
                status: "completed".into(),
            })
            .collect();
        let v = encode(&ctx).expect("trimmed");
        assert!(v.len() <= MAX_CONTEXT_HEADER);
        let back = decode(&v).expect("decode");
        assert!(!back.sections.is_empty() && back.sections.len() < 2000);
        assert_eq!(back.sections[0].id, "0", "trimmed from the end");
        assert_eq!(parse_role("planner"), Some(AgentRole::Planner));
        assert_eq!(parse_role("nope"), None);
    }
}
