//! Everything the binary prints goes through here (the `print!` family is shadowed in
//! `main.rs`): control characters from plans and model output are escaped (see
//! `planwave_runner::printable`), and a closed pipe ends the process as it ends Unix tools.

use std::io::Write;

/// What `print!`/`println!` print.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    finish(stdout.write_all(planwave_runner::printable(text).as_bytes()));
}

/// What `eprint!`/`eprintln!` print.
pub fn err(text: &str) {
    let mut stderr = std::io::stderr().lock();
    finish(stderr.write_all(planwave_runner::printable(text).as_bytes()));
}

fn finish(written: std::io::Result<()>) {
    if let Err(e) = written
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        super::exit::die_of_sigpipe();
    }
}

/// A writer for people (stdout or stderr) with the same escaping, for `writeln!`.
pub struct Safe<W: Write>(pub W);

impl<W: Write> Write for Safe<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(text) => self
                .0
                .write_all(planwave_runner::printable(text).as_bytes()),
            Err(_) => self.0.write_all(buf),
        }?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// The log lines' writer (`-v`, `RUST_LOG`): libraries log URLs as they have them (rmcp's
/// transport errors carry `?token=...`), so each line loses URL credentials on the way out.
/// Control characters are left alone: the log formatter's own colours use them.
pub fn log_writer() -> LogWriter {
    LogWriter
}

pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(planwave_redact::redact_urls_in(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
