//! The `aerie` command line: parse, run, print the error chain, exit 2 on bad input. With the `app` feature (the
//! default), also the desktop app.

mod cli;
mod errors;
#[cfg(feature = "app")]
mod gui;
#[cfg(feature = "app")]
mod jobs;
mod plots;
mod progress;
mod signals;

fn main() -> std::process::ExitCode {
    aerie_pipeline::memory::keep_freed_memory_for_reuse();
    signals::remove_partial_outputs_on_signal();
    cli::main()
}
