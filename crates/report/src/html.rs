//! `report.html`: the Markdown report as one self-contained page. The CSS is inline, the DAG
//! and the timeline are inline SVG drawn here instead of Mermaid (which needs a script), and
//! there is nothing to fetch, so the page opens offline and prints. Model text is data: raw
//! HTML in it is shown as text, images become their text, and a link stays a link only to an
//! `http`, `https` or `mailto` address or an anchor of the page (a `javascript:` link would run
//! when clicked in the page opened from disk, or in the PDF printed from it), so no section
//! can run a script or make a request.

mod svg;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd, html};

use planwave_plan::{Lang, ValidatedPlan};

use planwave_record::TaskRecord;

/// The plan laid out by waves as inline SVG (a `<g class="node STATUS" data-task="ID">` per
/// task, status by colour and label), as `report.html` draws it; `planwave serve`'s run page
/// shows the same picture and updates it live.
pub fn dag_svg(plan: &ValidatedPlan, records: &[TaskRecord]) -> String {
    svg::dag(plan, records)
}

/// The timeline of the tasks that ran (start to finish, by wave) as inline SVG.
pub fn gantt_svg(plan: &ValidatedPlan, records: &[TaskRecord]) -> String {
    svg::gantt(plan, records)
}

/// The page for `markdown` (the rendered `report.md`) of a run of `plan`.
pub fn render_html(markdown: &str, plan: &ValidatedPlan, records: &[TaskRecord]) -> String {
    let mut body = String::with_capacity(markdown.len() * 2);
    html::push_html(&mut body, Rewrite::new(markdown, plan, records));
    let lang = match plan.lang() {
        Lang::Zh => "zh",
        Lang::En => "en",
    };
    let title = plan.spec().topic.trim();
    let title = if title.is_empty() {
        "Research report"
    } else {
        title
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"{lang}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        escape(title)
    )
}

/// The Markdown events, with Mermaid blocks drawn as SVG, raw HTML as text, images as
/// their alternative text and links to anything but [`safe_link`] as their text.
struct Rewrite<'a> {
    parser: Parser<'a>,
    plan: &'a ValidatedPlan,
    records: &'a [TaskRecord],
    /// Inside a link shown as text: its end is dropped too (links do not nest).
    in_dropped_link: bool,
}

impl<'a> Rewrite<'a> {
    fn new(markdown: &'a str, plan: &'a ValidatedPlan, records: &'a [TaskRecord]) -> Self {
        Rewrite {
            parser: Parser::new_ext(markdown, Options::ENABLE_TABLES),
            plan,
            records,
            in_dropped_link: false,
        }
    }

    /// The text of a code block up to its end.
    fn block_text(&mut self) -> String {
        let mut text = String::new();
        for ev in self.parser.by_ref() {
            match ev {
                Event::Text(t) => text.push_str(&t),
                Event::End(TagEnd::CodeBlock) => break,
                _ => {}
            }
        }
        text
    }

    /// An image's alternative text and address, shown as text (never fetched).
    fn image_text(&mut self, url: &str) -> String {
        let mut alt = String::new();
        for ev in self.parser.by_ref() {
            match ev {
                Event::Text(t) | Event::Code(t) => alt.push_str(&t),
                Event::End(TagEnd::Image) => break,
                _ => {}
            }
        }
        format!("[{alt}]({url})")
    }
}

impl<'a> Iterator for Rewrite<'a> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        let mut ev = self.parser.next()?;
        loop {
            match &ev {
                Event::Start(Tag::Link { dest_url, .. }) if !safe_link(dest_url) => {
                    self.in_dropped_link = true;
                }
                Event::End(TagEnd::Link) if self.in_dropped_link => {
                    self.in_dropped_link = false;
                }
                _ => break,
            }
            ev = self.parser.next()?;
        }
        Some(match ev {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang))) if &*lang == "mermaid" => {
                let text = self.block_text();
                let svg = if text.trim_start().starts_with("gantt") {
                    svg::gantt(self.plan, self.records)
                } else {
                    svg::dag(self.plan, self.records)
                };
                Event::Html(svg.into())
            }
            Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
            Event::Start(Tag::Image { dest_url, .. }) => {
                let url = dest_url.to_string();
                Event::Text(self.image_text(&url).into())
            }
            other => other,
        })
    }
}

/// Whether a link to `url` may stay a link: `http`, `https` and `mailto` addresses and
/// anchors of the page. Everything else (`javascript:`, `data:`, `file:`, relative paths that
/// would resolve against the file's directory) is shown as the link's text. Browsers ignore
/// ASCII tabs, newlines and leading spaces and controls in a scheme, so the check does too.
fn safe_link(url: &str) -> bool {
    let url: String = url
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect::<String>()
        .trim_start_matches(|c: char| c <= ' ')
        .to_ascii_lowercase();
    url.starts_with('#')
        || ["http://", "https://", "mailto:"]
            .iter()
            .any(|scheme| url.starts_with(scheme))
}

/// Text for HTML content and attribute values.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const CSS: &str = "
body{margin:0;background:#fff;color:#1f2328;font:16px/1.6 -apple-system,'Segoe UI',Helvetica,Arial,'PingFang SC','Noto Sans CJK SC',sans-serif}
main{max-width:980px;margin:0 auto;padding:24px}
h1{font-size:2em;border-bottom:1px solid #d0d7de;padding-bottom:.3em}
h2{font-size:1.5em;border-bottom:1px solid #d0d7de;padding-bottom:.3em;margin-top:1.6em}
blockquote{margin:0;padding:0 1em;color:#57606a;border-left:.25em solid #d0d7de}
table{border-collapse:collapse;margin:1em 0;display:block;overflow:auto}
th,td{border:1px solid #d0d7de;padding:4px 10px}
th{background:#f6f8fa}
pre{background:#f6f8fa;padding:12px;overflow:auto}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9em}
svg{max-width:100%;height:auto;display:block;margin:1em 0}
svg text{font:12px -apple-system,'Segoe UI',Helvetica,Arial,sans-serif;fill:#1f2328}
svg .edge{stroke:#8c959f;stroke-width:1.2;fill:none}
svg .node rect{stroke:#57606a;stroke-width:1}
svg .completed rect{fill:#dafbe1}
svg .failed rect{fill:#ffebe9;stroke:#cf222e}
svg .blocked rect{fill:#eaeef2;stroke-dasharray:4 3}
svg .pending rect,svg .running rect{fill:#fff8c5}
svg .bar.completed{fill:#2da44e}
svg .bar.failed{fill:#cf222e}
svg .bar.other{fill:#bf8700}
@media print{main{max-width:none;padding:0}h2{break-after:avoid}svg,table,pre{break-inside:avoid}}
";

#[cfg(test)]
mod tests {
    use super::*;
    use planwave_plan::{PlanSpec, TaskId, TaskSpec};
    use planwave_record::TaskStatus;

    fn plan() -> ValidatedPlan {
        ValidatedPlan::new(PlanSpec {
            topic: "Acme <review>".into(),
            tasks: vec![
                TaskSpec::new(1, "Business", vec![]),
                TaskSpec::new(2, "Outlook", vec![TaskId::Int(1)]),
            ],
            ..Default::default()
        })
        .expect("valid")
    }

    fn records(p: &ValidatedPlan) -> Vec<TaskRecord> {
        use chrono::TimeZone;
        (0..p.len())
            .map(|i| TaskRecord {
                status: if i == 0 {
                    TaskStatus::Completed
                } else {
                    TaskStatus::Blocked
                },
                attempts: 1,
                started_at: (i == 0).then(|| chrono::Utc.timestamp_millis_opt(1_000).unwrap()),
                finished_at: (i == 0).then(|| chrono::Utc.timestamp_millis_opt(2_000).unwrap()),
                blocked_by: (i == 1).then_some(TaskId::Int(1)),
                ..TaskRecord::pending(p, i)
            })
            .collect()
    }

    #[test]
    fn model_text_cannot_script_or_fetch_and_mermaid_becomes_svg() {
        let p = plan();
        let md = "# Acme\n\n## Business\n\n<script>alert(1)</script> ok ![chart](https://example.com/x.png)\n\n```mermaid\ngraph TD\n  t1 --> t2\n```\n";
        let page = render_html(md, &p, &records(&p));
        assert!(!page.contains("<script"), "{page}");
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{page}"
        );
        assert!(!page.contains("<img") && page.contains("[chart](https://example.com/x.png)"));
        assert!(page.contains("<title>Acme &lt;review&gt;</title>"));
        assert!(page.contains("data-task=\"1\"") && page.contains("data-task=\"2\""));
        assert!(!page.contains("```") && !page.contains("graph TD"));
        for needle in ["src=\"http", "href=\"http", "@import", "url("] {
            assert!(!page.contains(needle), "{needle}");
        }
    }

    #[test]
    fn only_web_mail_and_anchor_links_stay_links() {
        let p = plan();
        let md = "[a](javascript:alert(1)) [b](https://example.com/ok) [c](mailto:a@b.c) \
                  [d](#sec) [e](other.html) <javascript:alert(2)> [f](data:text/html,x) \
                  [g]( JaVaScRiPt:alert(3)) [h](java%0Ascript:x) [**i**](file:///etc/passwd) \
                  [j](HTTP://EXAMPLE.COM)";
        let page = render_html(md, &p, &records(&p));
        let hrefs: Vec<&str> = page
            .split("href=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect();
        assert_eq!(
            hrefs,
            [
                "https://example.com/ok",
                "mailto:a@b.c",
                "#sec",
                "HTTP://EXAMPLE.COM"
            ],
            "{page}"
        );
        // Dropped links keep their text, markup included.
        for text in ["a ", " e ", " f ", " g ", " h ", "<strong>i</strong>"] {
            assert!(page.contains(text), "{text}: {page}");
        }
        assert_eq!(page.matches("</a>").count(), 4, "{page}");
    }
}
