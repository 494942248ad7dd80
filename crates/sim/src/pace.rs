//! Streaming the simulator's answers at a set token rate, so the effect of streaming (plans
//! executed while they arrive, serving metrics) can be measured offline.
//!
//! With a rate, a call's simulated latency is its time to first token; the answer then
//! arrives one token (three characters, as the simulator counts tokens) at a time, paced from
//! the first token so timer overshoot does not accumulate.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use planwave_llm::{AgentRole, CallTiming, DeltaSink, StreamEvent};

use super::timer;

/// Characters per simulated token (as [`super::text::estimate_tokens`] counts them).
const CHARS_PER_TOKEN: usize = 3;

/// Deliveries closer together than this are merged: per-token wake-ups at thousands of tokens
/// per second would measure the timer, not the engine.
const MIN_TICK: Duration = Duration::from_millis(1);

/// Output tokens per second, for all roles or per role; 0 (the default) means the whole
/// answer at once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TokenRate {
    pub default: f64,
    pub per_role: HashMap<AgentRole, f64>,
    /// Per-token jitter as a share of the token interval (0 = even pacing, 0.5 = each gap
    /// drawn uniformly from 0.5x to 1.5x): real decoders do not tick like a clock.
    pub jitter: f64,
}

impl TokenRate {
    pub fn uniform(tokens_per_sec: f64) -> TokenRate {
        TokenRate {
            default: tokens_per_sec,
            per_role: HashMap::new(),
            jitter: 0.0,
        }
    }

    pub fn for_role(&self, role: AgentRole) -> f64 {
        self.per_role.get(&role).copied().unwrap_or(self.default)
    }

    pub fn is_instant(&self) -> bool {
        self.default <= 0.0 && self.per_role.values().all(|r| *r <= 0.0)
    }

    /// `40` (every role), `planner=40,subagent=20`, or both (`30,planner=40`).
    pub fn parse(text: &str) -> Result<TokenRate, String> {
        let mut rate = TokenRate::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (role, value) = match part.split_once('=') {
                Some((r, v)) => (Some(r.trim()), v.trim()),
                None => (None, part),
            };
            let tps: f64 = value
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| {
                    format!("{value:?} is not a token rate (a number of tokens per second, >= 0)")
                })?;
            match role {
                None => rate.default = tps,
                Some(r) => {
                    let role = parse_role(r).ok_or_else(|| {
                        format!(
                            "unknown role {r:?} (planner, subagent, integrator, evaluator, reflector)"
                        )
                    })?;
                    rate.per_role.insert(role, tps);
                }
            }
        }
        Ok(rate)
    }
}

fn parse_role(text: &str) -> Option<AgentRole> {
    [
        AgentRole::Planner,
        AgentRole::Subagent,
        AgentRole::Integrator,
        AgentRole::Evaluator,
        AgentRole::Reflector,
    ]
    .into_iter()
    .find(|r| r.as_str().eq_ignore_ascii_case(text))
}

/// How one answer is paced: tokens per second, jitter (share of the interval) and the seed of
/// the jitter draws.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pace {
    pub tokens_per_sec: f64,
    pub jitter: f64,
    pub seed: u64,
}

/// Whether `content` is delivered over time at `pace` (else all at once, without waiting).
pub fn is_paced(pace: &Pace, content: &str) -> bool {
    pace.tokens_per_sec > 0.0 && !content.is_empty()
}

/// [`deliver`] of an answer that is not paced ([`is_paced`]): all of it now.
pub fn at_once(content: &str, pace: Pace, start: Instant, sink: Option<&DeltaSink>) -> CallTiming {
    let ttft = start.elapsed();
    if let Some(sink) = sink
        && !content.is_empty()
    {
        sink.emit(StreamEvent::Delta(content));
    }
    CallTiming {
        ttft,
        streamed: pace.tokens_per_sec > 0.0,
        e2e: start.elapsed(),
        ..CallTiming::default()
    }
}

/// Delivers `content` to `sink` at the pace's rate starting now (the first token), and
/// returns the call's timing measured from `start` (when the call began).
pub async fn deliver(
    content: &str,
    pace: Pace,
    start: Instant,
    sink: Option<&DeltaSink>,
) -> CallTiming {
    let tokens_per_sec = pace.tokens_per_sec;
    if !is_paced(&pace, content) {
        return at_once(content, pace, start, sink);
    }
    let mut timing = CallTiming {
        ttft: start.elapsed(),
        streamed: true,
        ..CallTiming::default()
    };
    let per_token = Duration::from_secs_f64(1.0 / tokens_per_sec);
    // Tokens per delivery, so deliveries are at least MIN_TICK apart.
    let group = (MIN_TICK.as_secs_f64() / per_token.as_secs_f64())
        .ceil()
        .max(1.0) as usize;
    let jitter = pace.jitter.clamp(0.0, 1.0);
    let mut due = Instant::now();
    let mut emitted = 0usize; // tokens delivered so far
    let mut rest = content;
    while !rest.is_empty() {
        if emitted > 0 {
            // Deadlines accumulate from the first token, so timer overshoot does not.
            let u = (planwave_record::stable_hash(pace.seed, "token", emitted as u32) >> 11) as f64
                / (1u64 << 53) as f64;
            let gap = per_token.as_secs_f64() * group as f64 * (1.0 + jitter * (2.0 * u - 1.0));
            due += Duration::from_secs_f64(gap.max(0.0));
            timer::sleep_until(due).await;
            timing.chunks.push(start.elapsed());
        }
        let cut = rest
            .char_indices()
            .nth(CHARS_PER_TOKEN * group)
            .map_or(rest.len(), |(i, _)| i);
        if let Some(sink) = sink {
            sink.emit(StreamEvent::Delta(&rest[..cut]));
        }
        rest = &rest[cut..];
        emitted += group;
    }
    timing.e2e = start.elapsed();
    timing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_uniform_and_per_role_rates() {
        let r = TokenRate::parse("30, planner=40").unwrap();
        assert_eq!(r.for_role(AgentRole::Planner), 40.0);
        assert_eq!(r.for_role(AgentRole::Subagent), 30.0);
        assert!(TokenRate::parse("").unwrap().is_instant());
        assert!(
            TokenRate::parse("writer=3")
                .unwrap_err()
                .contains("unknown role")
        );
        assert!(TokenRate::parse("-1").is_err());
    }

    #[tokio::test]
    async fn delivers_every_character_in_order_one_token_at_a_time() {
        let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let g = got.clone();
        let sink = DeltaSink::new(move |e| {
            if let StreamEvent::Delta(d) = e {
                g.lock().unwrap().push(d.to_owned());
            }
        });
        let text = "特斯拉2024年营收abcdefg";
        let pace = Pace {
            tokens_per_sec: 500.0,
            ..Pace::default()
        };
        let t = deliver(text, pace, Instant::now(), Some(&sink)).await;
        let pieces = got.lock().unwrap().clone();
        assert_eq!(pieces.concat(), text);
        assert!(pieces.iter().all(|p| p.chars().count() <= CHARS_PER_TOKEN));
        assert_eq!(t.chunks.len(), pieces.len() - 1);
        assert!(t.chunks.windows(2).all(|w| w[0] <= w[1]));
        // Paced: the last token cannot arrive before (tokens - 1) / rate.
        let tokens = pieces.len() as u32;
        assert!(t.e2e >= Duration::from_secs_f64(1.0 / 500.0) * (tokens - 1));
    }
}
