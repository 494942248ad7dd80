//! Lines for the person running a job: planning attempts, warnings, servers that did not
//! start. The CLI prints them on stderr; a server would log them or send them to a client.

/// Where the runner's human-readable lines go.
pub trait Notes: Send + Sync {
    fn note(&self, line: &str);
}

/// Every line on stderr, as the CLI shows them.
pub struct Stderr;

impl Notes for Stderr {
    fn note(&self, line: &str) {
        eprintln!("{line}");
    }
}

/// Lines are dropped (tests, embedding).
pub struct Silent;

impl Notes for Silent {
    fn note(&self, _line: &str) {}
}
