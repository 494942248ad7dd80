//! Property test of the command's input (issue 48): arbitrary numbers and lines through every
//! parser `planwave loadtest` reads its workload with — the flags (clap and their value
//! parsers), a trace, a dataset (one request a line, or multi-turn conversations), synthetic
//! prompts and sessions, a tokenizer's sizing — up to the options a sweep would run.
//! Whatever they are, the outcome is bad input (clap's usage error or an [`InvalidInput`],
//! both exit 2) or options, never a panic; and nothing it builds outgrows the bounds of
//! `planwave_loadtest`'s limits. The real binary is driven with the nasty values in
//! `tests/cases/loadtest_bounds.rs`; here, hundreds of cases run in-process in seconds.

use std::path::Path;
use std::sync::Arc;

use clap::Parser;
use planwave_runner::ops::InvalidInput;
use proptest::prelude::*;
use serde_json::json;

use crate::LoadtestArgs;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    a: LoadtestArgs,
}

/// Text a number flag or cell may hold: any double, integer or power of ten, the special
/// values, and short runs of number-like characters.
fn number() -> BoxedStrategy<String> {
    prop_oneof![
        any::<f64>().prop_map(|v| v.to_string()),
        any::<u64>().prop_map(|v| v.to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        (-400i32..400).prop_map(|e| format!("1e{e}")),
        (0u32..3000).prop_map(|v| v.to_string()),
        prop::sample::select(vec![
            "NaN",
            "inf",
            "-inf",
            "-0",
            "0",
            "",
            "1e308",
            "-1e308",
            "1e-300",
            "18446744073709551615",
            "10000000000000",
            "1,",
            ",1",
            "1,2,3",
            "0x10",
        ])
        .prop_map(str::to_owned),
        "[0-9eE.,+-]{0,12}",
    ]
    .boxed()
}

/// A number within `range` twice as often as any [`number`]: a case must get past its
/// other flags for the one out of range to be read.
fn mostly_in(range: std::ops::Range<f64>) -> BoxedStrategy<String> {
    prop_oneof![2 => range.prop_map(|v| format!("{}", v.round())), 1 => number()].boxed()
}

/// A `MEAN,SPREAD` value, or a lone number.
fn mean_spread() -> BoxedStrategy<String> {
    let n = || mostly_in(1.0..2000.0);
    prop_oneof![n(), (n(), n()).prop_map(|(m, s)| format!("{m},{s}"))].boxed()
}

/// A trace line: a time (a number or a date) and two token counts, often within their
/// bounds (so that later lines are read too), or any text.
fn trace_line() -> BoxedStrategy<String> {
    let tokens = || prop_oneof![2 => (0u64..5000).prop_map(|n| n.to_string()), 1 => number()];
    let at = prop_oneof![
        1 => number(),
        3 => date(),
        1 => (0f64..1e7).prop_map(|t| t.to_string())
    ];
    prop_oneof![
        6 => (at, tokens(), tokens()).prop_map(|(t, i, o)| format!("{t},{i},{o}")),
        1 => "\\PC{0,40}",
    ]
    .boxed()
}

/// A date and time of any parts, most of them within their ranges (so that the one out of
/// range is the one read).
fn date() -> BoxedStrategy<String> {
    let year = prop_oneof![2 => any::<i64>(), 1 => 1i64..3000, 1 => -100i64..12_000];
    let second = prop_oneof![3 => (0f64..62.0).prop_map(|s| s.to_string()), 1 => number()];
    (year, 0i64..14, 0i64..33, 0i64..26, 0i64..62, second)
        .prop_map(|(y, m, d, h, mi, s)| format!("{y}-{m}-{d} {h}:{mi}:{s}"))
        .boxed()
}

/// A dataset line: a prompt, a chat, a ShareGPT conversation (of any roles and turns), a
/// number where text belongs, or any text.
fn dataset_line() -> BoxedStrategy<String> {
    let role = prop::sample::select(vec!["user", "assistant", "system", "tool", "human", "gpt"]);
    prop_oneof![
        "\\PC{0,30}".prop_map(|p| json!({ "prompt": p }).to_string()),
        prop::collection::vec((role.clone(), "\\PC{0,10}"), 0..6).prop_map(|ms| {
            let ms: Vec<_> = ms
                .iter()
                .map(|(r, c)| json!({"role": r, "content": c}))
                .collect();
            json!({ "messages": ms }).to_string()
        }),
        prop::collection::vec((role, "\\PC{0,3}"), 0..3200).prop_map(|ts| {
            let ts: Vec<_> = ts
                .iter()
                .map(|(f, v)| json!({"from": f, "value": v}))
                .collect();
            json!({ "conversations": ts }).to_string()
        }),
        number().prop_map(|n| format!("{{\"prompt\": {n}}}")),
        "\\PC{0,40}",
    ]
    .boxed()
}

/// One workload's flags and the files they name.
#[derive(Clone, Debug)]
enum Workload {
    Synthetic {
        input: String,
        output: Option<String>,
        turns: Option<(String, String)>,
        think: Option<String>,
    },
    Trace {
        header: bool,
        lines: Vec<String>,
        speed: String,
    },
    Dataset {
        lines: Vec<String>,
        multi_turn: Option<String>,
    },
}

fn workload() -> BoxedStrategy<Workload> {
    prop_oneof![
        1 => (
            mean_spread(),
            prop::option::of(mean_spread()),
            prop::option::of((mean_spread(), mostly_in(1.0..50.0))),
            prop::option::of(mostly_in(0.0..100.0)),
        )
            .prop_map(|(input, output, turns, think)| Workload::Synthetic {
                input,
                output,
                turns,
                think,
            }),
        2 => (
            prop::bool::weighted(0.9),
            prop::collection::vec(trace_line(), 0..12),
            prop_oneof![2 => (0.001f64..100.0).prop_map(|v| v.to_string()), 1 => number()]
        )
            .prop_map(|(header, lines, speed)| Workload::Trace {
                header,
                lines,
                speed,
            }),
        1 => (
            prop::collection::vec(dataset_line(), 0..8),
            prop::option::of(mostly_in(1.0..50.0))
        )
            .prop_map(|(lines, multi_turn)| Workload::Dataset { lines, multi_turn }),
    ]
    .boxed()
}

/// Which tokenizer sizes the prompts, if any.
#[derive(Clone, Copy, Debug)]
enum Tokenizer {
    None,
    /// Every character one token.
    Chars,
    /// Any text one token: a count that does not grow with the text.
    One,
}

/// A `tokenizer.json` of a BPE model without merges: every character of `letters` a token,
/// any other unknown (fused into one token when `fuse`).
fn write_tokenizer(dir: &Path, letters: &str, fuse: bool) -> String {
    let mut vocab = serde_json::Map::new();
    vocab.insert("[UNK]".into(), 0.into());
    for (i, c) in letters.chars().enumerate() {
        vocab.insert(c.to_string(), (i + 1).into());
    }
    let doc = json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": null, "post_processor": null, "decoder": null,
        "model": {"type": "BPE", "dropout": null, "unk_token": "[UNK]",
                  "continuing_subword_prefix": null, "end_of_word_suffix": null,
                  "fuse_unk": fuse, "byte_fallback": false, "vocab": vocab, "merges": []}
    });
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, doc.to_string()).expect("write");
    path.display().to_string()
}

/// The command line of one case, its files written into `dir`.
fn command_line(dir: &Path, w: &Workload, tokenizer: Tokenizer, requests: &str) -> Vec<String> {
    let mut args: Vec<String> = vec!["loadtest".into()];
    let flag = |args: &mut Vec<String>, name: &str, value: &str| {
        args.push(format!("{name}={value}"));
    };
    let file = |name: &str, lines: &[String]| {
        let path = dir.join(name);
        std::fs::write(&path, lines.join("\n")).expect("write");
        path.display().to_string()
    };
    match w {
        Workload::Synthetic {
            input,
            output,
            turns,
            think,
        } => {
            flag(&mut args, "--input-tokens", input);
            if let Some(o) = output {
                flag(&mut args, "--output-tokens", o);
            }
            match (turns, think) {
                (Some((t, sessions)), think) => {
                    flag(&mut args, "--turns", t);
                    flag(&mut args, "--sessions", sessions);
                    if let Some(ms) = think {
                        flag(&mut args, "--think-time", &format!("fixed:{ms}"));
                    }
                }
                (None, _) => flag(&mut args, "--requests", requests),
            }
        }
        Workload::Trace {
            header,
            lines,
            speed,
        } => {
            let mut all = Vec::new();
            if *header {
                all.push("TIMESTAMP,ContextTokens,GeneratedTokens".to_owned());
            }
            all.extend(lines.iter().cloned());
            flag(&mut args, "--trace", &file("trace.csv", &all));
            flag(&mut args, "--speed", speed);
        }
        Workload::Dataset { lines, multi_turn } => {
            flag(&mut args, "--dataset", &file("data.jsonl", lines));
            if let Some(sessions) = multi_turn {
                args.push("--multi-turn".into());
                args.push(format!("--sessions={sessions}"));
            }
        }
    }
    match tokenizer {
        Tokenizer::None => {}
        Tokenizer::Chars => {
            let path = write_tokenizer(dir, "abcdefghijklmnopqrstuvwxyz ", false);
            args.push(format!("--tokenizer={path}"));
        }
        Tokenizer::One => {
            args.push(format!("--tokenizer={}", write_tokenizer(dir, "", true)));
        }
    }
    args
}

/// Bad input as the binary reports it with exit 2.
fn is_bad_input(e: &anyhow::Error) -> bool {
    e.downcast_ref::<InvalidInput>().is_some()
        || e.downcast_ref::<planwave_config::SettingsError>().is_some()
}

/// How the command's input ends: `Ok` for options or bad input (exit 2), else what it was.
fn outcome_of(args: &[String]) -> Result<(), String> {
    match Cli::try_parse_from(args) {
        Err(e) if e.exit_code() == 2 => Ok(()),
        Err(e) => Err(format!("clap exits {}: {e}", e.exit_code())),
        Ok(cli) => match crate::options::sweep_options(&Arc::new(cli.a), unwrapped, 0) {
            Ok(_) => Ok(()),
            Err(e) if is_bad_input(&e) => Ok(()),
            Err(e) => Err(format!("not bad input: {e:#}")),
        },
    }
}

fn unwrapped(p: Arc<dyn planwave_llm::LlmProvider>) -> Arc<dyn planwave_llm::LlmProvider> {
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn any_numbers_and_lines_are_options_or_bad_input_never_a_panic(
        w in workload(),
        tokenizer in prop_oneof![
            6 => Just(Tokenizer::None), 1 => Just(Tokenizer::Chars), 1 => Just(Tokenizer::One)
        ],
        requests in mostly_in(1.0..6.0),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        // A tokenizer's sizing encodes every prompt a few times, slow in a debug build: its
        // cases ask for a few requests (its bounds do not depend on how many).
        let requests = if matches!(tokenizer, Tokenizer::None) { requests } else { "3".into() };
        let args = command_line(dir.path(), &w, tokenizer, &requests);
        let shown = format!("{args:?}");
        // On a thread with the stack of a program's main thread (8 MiB): clap's parser of
        // this many flags takes more than a test thread's 2 MiB in a debug build.
        let outcome = std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(move || outcome_of(&args))
            .expect("thread")
            .join();
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(problem)) => prop_assert!(false, "{}: {}", shown, problem),
            Err(_) => prop_assert!(false, "{}: panicked", shown),
        }
    }
}
