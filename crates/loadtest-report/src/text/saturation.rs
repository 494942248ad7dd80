//! A rate sweep's saturation check as the table shows it: one column per point, then the
//! saturation point.

use std::fmt::Write as _;

use planwave_loadtest::{RateUnit, SaturationReason, SaturationReport};

/// Why a point saturated, in words.
fn reason(r: SaturationReason) -> &'static str {
    match r {
        SaturationReason::AchievedBelowSent => "completed below the rate sent",
        SaturationReason::SentBelowOffered => "sent below the rate asked",
        SaturationReason::TtftOverSlo => "TTFT p99 over the SLO",
    }
}

/// The unit of a point's rates.
fn short(unit: RateUnit) -> &'static str {
    match unit {
        RateUnit::Requests => "req/s",
        RateUnit::Conversations => "conv/s",
    }
}

/// The check as the table shows it: one line per point, then the saturation point.
pub(crate) fn render_saturation(s: &SaturationReport) -> String {
    let rate = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.1}"));
    let unit = s.checked.first().map_or(RateUnit::Requests, |c| c.unit);
    let (offered, sent, achieved) = (
        format!("offered {}", short(unit)),
        format!("sent {}", short(unit)),
        format!("achieved {}", short(unit)),
    );
    let mut rows: Vec<(&str, Vec<String>)> = vec![
        ("point", Vec::new()),
        (offered.as_str(), Vec::new()),
        (sent.as_str(), Vec::new()),
        (achieved.as_str(), Vec::new()),
        ("TTFT p99", Vec::new()),
        ("verdict", Vec::new()),
    ];
    for c in &s.checked {
        let cells = [
            c.point.clone().unwrap_or_else(|| "-".into()),
            rate(c.offered_rate),
            rate(c.sent_rate),
            rate(c.achieved_rate),
            c.ttft_p99_ms
                .map_or_else(|| "-".into(), |v| format!("{v:.1} ms")),
            if c.saturated() {
                format!(
                    "saturated: {}",
                    c.reasons
                        .iter()
                        .map(|r| reason(*r))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                "kept up".into()
            },
        ];
        for (row, cell) in rows.iter_mut().zip(cells) {
            row.1.push(cell);
        }
    }
    let mut out = format!(
        "saturation check (tolerance {} %{}):\n",
        s.tolerance * 100.0,
        s.ttft_slo_ms
            .map(|t| format!(", TTFT SLO {t} ms"))
            .unwrap_or_default()
    );
    out.push_str(&super::layout(&rows));
    match &s.point {
        Some(p) => {
            let _ = write!(out, "saturation point: {p}");
            if !s.skipped.is_empty() {
                let _ = write!(out, "; not run: {}", s.skipped.join(", "));
            }
            out.push('\n');
        }
        None => out.push_str("saturation point: none (every rate kept up)\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use planwave_loadtest::PointCheck;

    use super::*;

    fn check(point: &str, unit: RateUnit, reasons: Vec<SaturationReason>) -> PointCheck {
        PointCheck {
            point: Some(point.into()),
            unit,
            offered_rate: None,
            sent_rate: Some(10.0),
            achieved_rate: Some(5.0),
            ttft_p99_ms: None,
            reasons,
        }
    }

    fn report(checked: Vec<PointCheck>, point: Option<&str>, skipped: &[&str]) -> SaturationReport {
        SaturationReport {
            tolerance: 0.1,
            ttft_slo_ms: None,
            checked,
            point: point.map(str::to_owned),
            skipped: skipped.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn the_table_names_each_verdict_and_the_saturation_point() {
        let saturated = vec![SaturationReason::AchievedBelowSent];
        let s = report(
            vec![
                check("rate=5", RateUnit::Requests, vec![]),
                check("rate=10", RateUnit::Requests, saturated.clone()),
                check("rate=20", RateUnit::Requests, saturated),
            ],
            Some("rate=10"),
            &["rate=40"],
        );
        let text = render_saturation(&s);
        assert!(
            text.starts_with("saturation check (tolerance 10 %):\n"),
            "{text}"
        );
        assert!(
            text.ends_with("saturation point: rate=10; not run: rate=40\n"),
            "{text}"
        );
        assert!(
            text.contains("saturated: completed below the rate sent"),
            "{text}"
        );
        assert!(
            text.contains("kept up") && text.contains("achieved req/s"),
            "{text}"
        );
        let none = render_saturation(&report(
            vec![check("rate=5", RateUnit::Requests, vec![])],
            None,
            &[],
        ));
        assert!(
            none.ends_with("saturation point: none (every rate kept up)\n"),
            "{none}"
        );
    }

    #[test]
    fn sessions_are_counted_in_conversations() {
        let s = report(
            vec![check(
                "rate=10",
                RateUnit::Conversations,
                vec![SaturationReason::AchievedBelowSent],
            )],
            Some("rate=10"),
            &[],
        );
        let text = render_saturation(&s);
        assert!(text.contains("achieved conv/s"), "{text}");
    }
}
