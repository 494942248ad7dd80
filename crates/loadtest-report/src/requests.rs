//! `--requests-out FILE`: one row per request of every run, as JSON lines (CSV when the file
//! ends in `.csv`): when it was sent, what the client measured, the tokens and how many the
//! server read from its cache, its status, and the server's own timings when it gave them
//! (llama.cpp's `timings`).

use serde::Serialize;

use planwave_loadtest::{CallRecord, LoadReport, ServerTimings};

/// One request's row.
#[derive(Serialize)]
struct Row<'a> {
    /// The sweep point or schedule of its run.
    run: &'a str,
    task: Option<&'a str>,
    /// Sent, in ms from the run's start.
    send_ms: f64,
    ttft_ms: Option<f64>,
    /// Send to the first answer content (after any reasoning).
    first_content_ms: Option<f64>,
    itl_mean_ms: Option<f64>,
    e2e_ms: f64,
    prompt_tokens: u64,
    cached_tokens: u64,
    output_tokens: u64,
    /// `ok`, `cancelled` or the error's class.
    status: &'a str,
    retries: u32,
    server: Option<&'a ServerTimings>,
}

fn rows(runs: &[LoadReport]) -> impl Iterator<Item = Row<'_>> {
    runs.iter().flat_map(|r| {
        let run = r.label.as_deref().unwrap_or(&r.schedule);
        r.calls
            .iter()
            .filter(|c| c.role == "subagent")
            .map(move |c| row(run, c))
    })
}

fn row<'a>(run: &'a str, c: &'a CallRecord) -> Row<'a> {
    Row {
        run,
        task: c.task.as_deref(),
        send_ms: c.start_ms,
        ttft_ms: c.ttft_ms,
        first_content_ms: c.first_content_ms,
        itl_mean_ms: c.itl_mean_ms(),
        e2e_ms: c.e2e_ms,
        prompt_tokens: c.prompt_tokens,
        cached_tokens: c.cached_tokens,
        output_tokens: c.output_tokens,
        status: &c.outcome,
        retries: c.retries,
        server: c.server.as_ref(),
    }
}

/// Every request of `runs` as one JSON object a line.
pub fn render_requests_jsonl(runs: &[LoadReport]) -> String {
    let mut out = String::new();
    for r in rows(runs) {
        out.push_str(&serde_json::to_string(&r).unwrap_or_default());
        out.push('\n');
    }
    out
}

const HEADER: &str = "run,task,send_ms,ttft_ms,first_content_ms,itl_mean_ms,e2e_ms,\
prompt_tokens,cached_tokens,output_tokens,status,retries,server_cache_n,server_prompt_n,\
server_prompt_ms,server_predicted_n,server_predicted_ms,server_predicted_per_token_ms";

/// Every request of `runs` as CSV, a header line first; empty cells where a figure is absent.
pub fn render_requests_csv(runs: &[LoadReport]) -> String {
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    let int = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let mut out = String::from(HEADER);
    out.push('\n');
    for r in rows(runs) {
        let s = r.server.cloned().unwrap_or_default();
        let cells = [
            crate::csv::quoted(r.run),
            crate::csv::quoted(r.task.unwrap_or("")),
            r.send_ms.to_string(),
            opt(r.ttft_ms),
            opt(r.first_content_ms),
            opt(r.itl_mean_ms),
            r.e2e_ms.to_string(),
            r.prompt_tokens.to_string(),
            r.cached_tokens.to_string(),
            r.output_tokens.to_string(),
            crate::csv::quoted(r.status),
            r.retries.to_string(),
            int(s.cache_n),
            int(s.prompt_n),
            opt(s.prompt_ms),
            int(s.predicted_n),
            opt(s.predicted_ms),
            opt(s.predicted_per_token_ms),
        ];
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_per_request_with_the_server_s_timings() {
        let timings = ServerTimings {
            prompt_ms: Some(12.5),
            cache_n: Some(4),
            ..ServerTimings::default()
        };
        let call = |role: &str, server| CallRecord {
            role: role.into(),
            outcome: "ok".into(),
            itl_ms: vec![2.0, 4.0],
            server,
            ..CallRecord::default()
        };
        let run = LoadReport {
            label: Some("rate=2".into()),
            calls: vec![
                call("subagent", Some(timings)),
                call("integrator", None),
                call("subagent", None),
            ],
            ..LoadReport::default()
        };
        let lines: Vec<serde_json::Value> = render_requests_jsonl(std::slice::from_ref(&run))
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON"))
            .collect();
        assert_eq!(lines.len(), 2, "the workload's requests only");
        assert_eq!(lines[0]["server"]["prompt_ms"], 12.5);
        assert_eq!(
            (lines[0]["run"].as_str(), lines[0]["itl_mean_ms"].as_f64()),
            (Some("rate=2"), Some(3.0))
        );
        assert!(lines[1]["server"].is_null());
        let csv = render_requests_csv(&[run]);
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows.len(), 3);
        assert!(rows[1].ends_with(",4,,12.5,,,"), "{}", rows[1]);
    }
}
