//! The custom validator of `[validate] command`: a program run directly (never through a
//! shell), the plan's JSON on its stdin, a JSON list of problems expected on its stdout.
//!
//! The program is someone else's code, so what it answers is untrusted input: it has
//! [`ValidatorSettings::timeout`] for a plan (then it is killed), its output is read up to
//! [`MAX_OUTPUT_BYTES`], its answer must be a JSON array of strings (at most
//! [`MAX_PROBLEMS`] kept, each cut to [`MAX_PROBLEM_CHARS`]), and a non-zero exit is a
//! failure of the validator, never a verdict on the plan. Each failure says which program
//! and why.

use std::process::Stdio;

use planwave_config::ValidatorSettings;
use planwave_planner::{PlanValidator, ValidatorFailed};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most of its stdout read: a list of problems is small; more is a runaway program.
pub const MAX_OUTPUT_BYTES: u64 = 1024 * 1024;
/// The most problems kept from one answer; the rest are counted in one more line.
pub const MAX_PROBLEMS: usize = 100;
/// The longest problem kept, in characters (it goes into repair prompts and onto terminals).
pub const MAX_PROBLEM_CHARS: usize = 1000;
/// The end of its stderr quoted when it fails.
const STDERR_TAIL_BYTES: u64 = 2048;

/// Why the validator could not say. Each message names the program.
#[derive(Debug, thiserror::Error)]
pub enum ValidatorError {
    #[error("custom validator {program}: cannot start it: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("custom validator {program}: no answer within {secs}s; it was stopped")]
    Timeout { program: String, secs: f64 },
    #[error("custom validator {program}: {status}{stderr}")]
    Exit {
        program: String,
        status: String,
        stderr: String,
    },
    #[error("custom validator {program}: its answer is longer than {MAX_OUTPUT_BYTES} bytes")]
    TooLong { program: String },
    #[error(
        "custom validator {program}: its answer is not a JSON list of problems (strings): {why}"
    )]
    Malformed { program: String, why: String },
    #[error("custom validator {program}: {source}")]
    Io {
        program: String,
        source: std::io::Error,
    },
}

/// A program checking plans, as `[validate]` configures it.
#[derive(Clone, Debug)]
pub struct CommandValidator {
    settings: ValidatorSettings,
}

impl CommandValidator {
    pub fn new(settings: ValidatorSettings) -> CommandValidator {
        CommandValidator { settings }
    }

    /// How messages name it: the command as configured.
    fn program(&self) -> String {
        let mut words = vec![self.settings.program.display().to_string()];
        words.extend(self.settings.args.iter().cloned());
        words.join(" ")
    }

    /// The plan's problems as the program sees them.
    pub async fn check(&self, plan_json: &str) -> Result<Vec<String>, ValidatorError> {
        let secs = self.settings.timeout.as_secs_f64();
        match tokio::time::timeout(self.settings.timeout, self.run(plan_json)).await {
            Ok(answer) => answer,
            // The child is killed as `run`'s future, which owns it, is dropped.
            Err(_) => Err(ValidatorError::Timeout {
                program: self.program(),
                secs,
            }),
        }
    }

    async fn run(&self, plan_json: &str) -> Result<Vec<String>, ValidatorError> {
        let program = self.program();
        let io = |source| ValidatorError::Io {
            program: program.clone(),
            source,
        };
        let mut child = tokio::process::Command::new(&self.settings.program)
            .args(&self.settings.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| ValidatorError::Spawn {
                program: program.clone(),
                source,
            })?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(io(std::io::Error::other("its pipes were not set up")));
        };
        // Written while its output is read: a program answering before it has read all of a
        // large plan must not leave both sides waiting on full pipes.
        let write = async move {
            // A program that exits without reading its input closes the pipe: not an error
            // of ours; its exit status and answer say what happened.
            let _ = stdin.write_all(plan_json.as_bytes()).await;
            drop(stdin);
        };
        // Its stderr is drained on the side (a program blocked on a full stderr pipe would
        // never answer), so an over-long stdout is refused at once, not after a timeout.
        let read_err = tokio::spawn(async move {
            let mut err = Vec::new();
            let _ = stderr.take(64 * 1024).read_to_end(&mut err).await;
            err
        });
        let mut out = Vec::new();
        let mut stdout = stdout.take(MAX_OUTPUT_BYTES + 1);
        let ((), r_out) = tokio::join!(write, stdout.read_to_end(&mut out));
        r_out.map_err(io)?;
        if out.len() as u64 > MAX_OUTPUT_BYTES {
            read_err.abort();
            return Err(ValidatorError::TooLong { program });
        }
        let status = child.wait().await.map_err(io)?;
        if !status.success() {
            let err = read_err.await.unwrap_or_default();
            return Err(ValidatorError::Exit {
                program,
                status: exit_text(status),
                stderr: stderr_tail(&err),
            });
        }
        read_err.abort();
        parse_answer(&out).map_err(|why| ValidatorError::Malformed { program, why })
    }
}

#[async_trait::async_trait]
impl PlanValidator for CommandValidator {
    async fn problems(&self, plan_json: String) -> Result<Vec<String>, ValidatorFailed> {
        self.check(&plan_json)
            .await
            .map_err(|e| ValidatorFailed(e.to_string()))
    }
}

fn exit_text(status: std::process::ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("it exited with status {code}"),
        None => "it was killed by a signal".to_owned(),
    }
}

/// `: <the last line(s) of stderr>`, escaped and short, or nothing when it wrote none.
fn stderr_tail(err: &[u8]) -> String {
    let start = err.len().saturating_sub(STDERR_TAIL_BYTES as usize);
    let text = String::from_utf8_lossy(&err[start..]);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    format!(": {}", text.escape_debug())
}

/// The problems of a well-formed answer: a JSON array of strings, surrounding whitespace
/// allowed. Each problem is trimmed, cut and freed of control characters; blank ones are
/// dropped.
fn parse_answer(out: &[u8]) -> Result<Vec<String>, String> {
    let text = std::str::from_utf8(out).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.valid_up_to()
        )
    })?;
    if text.trim().is_empty() {
        return Err("it answered nothing (a plan without problems is [])".into());
    }
    let items: Vec<serde_json::Value> =
        serde_json::from_str(text.trim()).map_err(|e| e.to_string())?;
    let mut problems = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let serde_json::Value::String(s) = item else {
            return Err(format!("item {i} is not a string"));
        };
        let cleaned: String = s
            .trim()
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(MAX_PROBLEM_CHARS)
            .collect();
        if !cleaned.is_empty() {
            problems.push(cleaned);
        }
    }
    if problems.len() > MAX_PROBLEMS {
        let more = problems.len() - MAX_PROBLEMS;
        problems.truncate(MAX_PROBLEMS);
        problems.push(format!("... and {more} more problems"));
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::parse_answer;

    #[test]
    fn answers_are_lists_of_strings_cleaned_and_capped() {
        assert_eq!(parse_answer(b" [] \n"), Ok(Vec::new()));
        assert_eq!(
            parse_answer(b"[\"task 2: too vague\", \"  \", \"a\\u001b[31mb\"]"),
            Ok(vec!["task 2: too vague".to_owned(), "a [31mb".to_owned()])
        );
        assert_eq!(
            parse_answer(b"[1]"),
            Err("item 0 is not a string".to_owned())
        );
        assert!(parse_answer(b"{\"problems\": []}").is_err());
        assert!(parse_answer(b"").is_err());
        let many = serde_json::to_vec(&vec!["p"; 150]).expect("json");
        let got = parse_answer(&many).expect("valid");
        assert_eq!(got.len(), 101);
        assert_eq!(got[100], "... and 50 more problems");
        let long = serde_json::to_vec(&vec!["x".repeat(5000)]).expect("json");
        assert_eq!(parse_answer(&long).expect("valid")[0].len(), 1000);
    }
}
