//! The `aerie` command line: parse, run, print the error chain, exit 2 on bad input. With the `app` feature (the
//! default), also the desktop app.

// Without the app, the command-line helpers the app shares (report reading, export notes) go unused.
#![cfg_attr(not(feature = "app"), allow(dead_code))]

mod cli;
#[cfg(feature = "app")]
mod gui;
#[cfg(feature = "app")]
mod jobs;
mod plots;
mod progress;
mod signals;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    aerie_pipeline::memory::keep_freed_memory_for_reuse();
    signals::remove_partial_outputs_on_signal();
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // A closed pipe (`aerie info x | head`) is not an error worth reporting.
            if err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            cli::print_error(&err);
            ExitCode::from(cli::exit_code(&err))
        }
    }
}
