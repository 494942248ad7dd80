//! The planner's clarifying questions on the command line: asked on a terminal (and the
//! job planned again with the answers), or printed with exit 5 (`needs_input`) where
//! nobody can answer (no terminal: a pipe, CI, a batch).

use std::io::{BufRead, IsTerminal, Write};

use planwave_planner::Clarification;
use planwave_planner::questions::MAX_ANSWER_CHARS;

/// Someone is there to answer: standard input and error are a terminal.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks each question on standard error and reads one answer per line from standard input
/// (an empty line skips a question). `None` when input ended or nothing was answered.
pub fn ask_on_terminal(questions: &[String]) -> std::io::Result<Option<Vec<Clarification>>> {
    let mut err = planwave_runner::term::Safe(std::io::stderr());
    writeln!(
        err,
        "The goal needs clarifying before it can be planned (an empty line skips a question):"
    )?;
    let stdin = std::io::stdin();
    let mut answers = Vec::new();
    for (i, q) in questions.iter().enumerate() {
        write!(err, "{}/{}: {q}\n> ", i + 1, questions.len())?;
        err.flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let answer: String = line.trim().chars().take(MAX_ANSWER_CHARS).collect();
        if !answer.is_empty() {
            answers.push(Clarification {
                question: Some(q.chars().take(MAX_ANSWER_CHARS).collect()),
                answer,
            });
        }
    }
    Ok((!answers.is_empty()).then_some(answers))
}

/// What a job that ended asking questions prints: the questions, and how to answer them.
pub fn print_needs_input(questions: &[String], out: &std::path::Path) {
    let mut err = planwave_runner::term::Safe(std::io::stderr());
    let _ = writeln!(
        err,
        "needs_input: the goal needs clarifying before it can be planned:"
    );
    for (i, q) in questions.iter().enumerate() {
        let _ = writeln!(err, "  {}. {q}", i + 1);
    }
    let _ = writeln!(
        err,
        "answer them one per line in a file and run again with --answers FILE (the questions are in {}), or --no-questions to plan with what the goal says",
        out.join("run.json").display()
    );
}
