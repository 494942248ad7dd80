//! The `planwave` command: argument parsing and wiring only; the work lives in the crates.

// The `print!` family, shadowed for the whole binary (textual scope: before `mod cli`): all
// output goes through `planwave_runner::term`, which escapes control characters from plan
// and model text and ends the process quietly on a closed pipe.
macro_rules! print {
    ($($arg:tt)*) => { planwave_runner::print!($($arg)*) };
}
macro_rules! println {
    ($($arg:tt)*) => { planwave_runner::println!($($arg)*) };
}
macro_rules! eprintln {
    ($($arg:tt)*) => { planwave_runner::eprintln!($($arg)*) };
}

mod cli;

use std::process::ExitCode;

use clap::Parser;

// mimalloc, with settings that keep heap growth and collection from stalling workers.
#[global_allocator]
static GLOBAL: planwave_alloc::Allocator = planwave_alloc::Allocator;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::install_panic_hook();
    // Before the runtime starts its threads (see crates/alloc).
    planwave_alloc::configure();
    // One TLS provider for every client of the process, the NATS client's included.
    planwave_tls::install();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("planwave")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(cli::exit::OTHER);
        }
    };
    let mut telemetry = match cli::telemetry::init(args.verbose, &args.telemetry, runtime.handle())
    {
        Ok(t) => t,
        Err(e) => return cli::exit::report(Err(e.into())),
    };
    let result = runtime.block_on(cli::dispatch(args));
    // Spans are exported on every way out: success, failure and Ctrl-C (which ends the
    // command normally, as interrupted) all come back here before the process exits.
    if let Err(e) = telemetry.shutdown() {
        eprintln!(
            "warning: {}",
            planwave_redact::redact_urls_in(&e.to_string())
        );
    }
    // Don't wait on stray blocking tasks (e.g. a stdin reader) after the command is done.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    cli::exit::report(result)
}
