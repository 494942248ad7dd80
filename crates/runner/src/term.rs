//! What a command-line front end prints goes through here: control characters from plans
//! and model output are escaped ([`printable`]), and a closed pipe ends the process as it
//! ends Unix tools. The binary shadows the `print!` family with these for all its modules
//! (`src/main.rs`); a crate's front end (`planwave_loadtest_cli`) imports the macros below,
//! which shadow the standard ones where they are imported.

use std::io::Write;

use crate::printable;

/// `print!` through [`out`].
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::term::out(&format!($($arg)*)) };
}

/// `println!` through [`out`].
#[macro_export]
macro_rules! println {
    () => { $crate::term::out("\n") };
    ($($arg:tt)*) => { $crate::term::out(&format!("{}\n", format_args!($($arg)*))) };
}

/// `eprintln!` through [`err`].
#[macro_export]
macro_rules! eprintln {
    () => { $crate::term::err("\n") };
    ($($arg:tt)*) => { $crate::term::err(&format!("{}\n", format_args!($($arg)*))) };
}

/// What `print!`/`println!` print.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    finish(stdout.write_all(printable(text).as_bytes()));
}

/// What `eprintln!` prints.
pub fn err(text: &str) {
    let mut stderr = std::io::stderr().lock();
    finish(stderr.write_all(printable(text).as_bytes()));
}

fn finish(written: std::io::Result<()>) {
    if let Err(e) = written
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        die_of_sigpipe();
    }
}

/// A writer for people (stdout or stderr) with the same escaping, for `writeln!`.
pub struct Safe<W: Write>(pub W);

impl<W: Write> Write for Safe<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(text) => self.0.write_all(printable(text).as_bytes()),
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

/// Ends the process the way a Unix tool ends when its output pipe is closed: killed by
/// SIGPIPE (status 141 in a shell), with nothing printed.
pub fn die_of_sigpipe() -> ! {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition and raising the signal in our own process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(128 + 13)
}
