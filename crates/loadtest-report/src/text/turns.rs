//! Multi-turn sessions' figures per turn number, as text lines after a run's table.

use planwave_loadtest::{Percentiles, TurnFigures};

/// The per-turn figures as text lines (after a run's table).
pub fn render_turns(turns: &[TurnFigures]) -> String {
    let mut out = String::from(
        "  per turn     requests  ok  cancelled  prompt tokens p50  TTFT p50/p99 ms  ITL p50/p99 ms  e2e p50/p99 ms\n",
    );
    let f = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
    let pair = |p: &Percentiles| format!("{}/{}", f(p.p50), f(p.p99));
    for t in turns {
        out.push_str(&format!(
            "  turn {:<7} {:>8} {:>3} {:>10} {:>18} {:>16} {:>15} {:>15}\n",
            t.turn,
            t.requests,
            t.ok,
            t.cancelled,
            f(t.prompt_tokens.p50),
            pair(&t.ttft_ms),
            pair(&t.itl_ms),
            pair(&t.e2e_ms)
        ));
    }
    out
}
