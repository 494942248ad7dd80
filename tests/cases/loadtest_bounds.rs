//! One number of a load test's input must not cost without bound: token counts, a trace's
//! times and lengths, `--speed` and a tokenizer's sizing are checked where they are read,
//! and a value past its bound is refused as bad input (exit 2) naming its flag or line,
//! never a panic (exit 101), an abort (134) or a wait of centuries.

use crate::support::{Output, planwave, tempdir};

/// Asserts bad input (exit 2) whose message says each of `says`, and no panic.
#[track_caller]
fn refused(out: &Output, says: &[&str]) {
    out.expect_code(2);
    for s in says {
        assert!(
            out.stderr.contains(s),
            "expected {s:?} in stderr:\n{}",
            out.stderr
        );
    }
    assert!(!out.stderr.contains("panic"), "{}", out.stderr);
}

/// `planwave loadtest --trace FILE ARGS` on a trace of `rows` under its Azure header.
fn trace_run(rows: &[&str], args: &[&str]) -> Output {
    let dir = tempdir();
    let path = dir.path().join("trace.csv");
    let mut text = String::from("TIMESTAMP,ContextTokens,GeneratedTokens\n");
    for r in rows {
        text.push_str(r);
        text.push('\n');
    }
    std::fs::write(&path, text).expect("write");
    planwave(["loadtest"])
        .opt("--trace", &path)
        .args(args)
        .run()
}

#[test]
fn huge_input_tokens_are_refused_by_their_flag() {
    for value in ["1e300", "1e10", "1000001", "512,1e300", "inf", "NaN"] {
        let out = planwave(["loadtest", "--requests", "2", "--input-tokens", value]).run();
        refused(
            &out,
            &[
                "--input-tokens",
                "a mean from 1 to 1000000 and a spread of at most 1000000",
            ],
        );
    }
}

#[test]
fn trace_lines_with_impossible_times_or_lengths_are_refused_by_line() {
    let cases: [(&[&str], &[&str]); 8] = [
        (
            &["0,10,5", "1e300,10,5"],
            &[
                "--trace",
                "line 3",
                "TIMESTAMP \"1e300\"",
                "at most 366 days",
            ],
        ),
        (
            &["-1e308,10,5", "1e308,10,5"],
            &[
                "--trace",
                "line 3",
                "line 2's \"-1e308\"",
                "at most 366 days",
            ],
        ),
        (
            &["2023-02-30 00:00:00,10,5"],
            &[
                "--trace",
                "line 2",
                "TIMESTAMP \"2023-02-30 00:00:00\" is not valid",
            ],
        ),
        (
            &["0,1,1", "99999999999999-01-01 00:00:00,10,5"],
            &["--trace", "line 3", "is not valid"],
        ),
        (
            &["2023-11-16 25:00:00,10,5"],
            &["--trace", "line 2", "is not valid"],
        ),
        (
            &["0,18446744073709551615,5"],
            &[
                "--trace",
                "line 2",
                "ContextTokens \"18446744073709551615\" is more than 1000000 tokens",
            ],
        ),
        (
            &["0,10,5", "1,10000000000000,5"],
            &["--trace", "line 3", "more than 1000000 tokens"],
        ),
        (
            &["0,10,99999999999"],
            &["--trace", "line 2", "GeneratedTokens \"99999999999\""],
        ),
    ];
    for (rows, says) in cases {
        refused(&trace_run(rows, &[]), says);
    }
}

#[test]
fn a_trace_spanning_ten_thousand_years_is_refused_with_its_line() {
    // 10,000 years in seconds, then the same span as dates.
    let out = trace_run(&["0,10,5", "1,10,5", "315576000000,10,5"], &[]);
    refused(
        &out,
        &[
            "--trace",
            "line 4: TIMESTAMP \"315576000000\" comes 3.15576e11 s after line 2's \"0\": a trace may span at most 366 days",
        ],
    );
    let out = trace_run(
        &["0001-01-01 00:00:00,10,5", "9999-12-31 23:59:59,10,5"],
        &[],
    );
    refused(&out, &["--trace", "line 3", "at most 366 days"]);
}

#[test]
fn a_speed_outside_its_range_is_refused_by_its_flag() {
    for speed in ["1e-300", "0", "-1", "NaN", "inf", "1e300"] {
        let out = trace_run(&["0,10,5", "1,10,5"], &[&format!("--speed={speed}")]);
        refused(&out, &["--speed", "is not a speed from 0.001 to 1e6"]);
    }
    // In range, but a day-long trace replayed a thousand times slower takes 1,000 days.
    let out = trace_run(&["0,10,5", "86400,10,5"], &["--speed", "0.001"]);
    refused(&out, &["--speed", "more than 366 days"]);
}

/// A tokenizer.json whose count never grows: every character unknown, and unknowns fused
/// into one `[UNK]` token, so any text is one token.
fn one_token_tokenizer(dir: &std::path::Path) -> std::path::PathBuf {
    crate::cases::loadtest_requests::bpe_tokenizer(dir, "", true)
}

#[test]
fn a_tokenizer_whose_count_does_not_grow_makes_the_sizing_give_up() {
    let dir = tempdir();
    let tok = one_token_tokenizer(dir.path());
    let out = planwave(["loadtest", "--requests", "2", "--input-tokens", "1000"])
        .opt("--tokenizer", &tok)
        .run();
    refused(
        &out,
        &[
            "--tokenizer",
            "count as only 1 tokens: its count does not grow with the text, so a prompt of 1000 tokens cannot be made",
        ],
    );
    let out = trace_run(&["0,500,5"], &["--tokenizer", tok.to_str().expect("utf-8")]);
    refused(&out, &["--tokenizer", "does not grow with the text"]);
}

/// A few dozen generated values through the binary, each past its bound: powers of ten up
/// to the largest doubles, both signs, as token counts, times, lengths and speeds.
#[test]
fn generated_out_of_range_numbers_all_exit_2_with_their_flag_or_line() {
    let exponents = (8..=308).step_by(25);
    for k in exponents {
        let big = format!("1e{k}");
        let out = planwave(["loadtest", "--requests", "2", "--input-tokens", &big]).run();
        refused(&out, &["--input-tokens"]);
        let out = trace_run(&["0,10,5", &format!("{big},10,5")], &[]);
        refused(&out, &["--trace", "line 3"]);
        let out = trace_run(&[&format!("-{big},10,5"), "0,10,5"], &[]);
        refused(&out, &["--trace", "line 3"]);
        let out = trace_run(&["0,10,5", "1,10,5"], &["--speed", &format!("1e-{k}")]);
        refused(&out, &["--speed"]);
    }
    for digits in [7, 13, 19, 20, 40] {
        let len = "9".repeat(digits);
        let out = trace_run(&[&format!("0,{len},5")], &[]);
        refused(&out, &["--trace", "line 2", "ContextTokens"]);
    }
}
