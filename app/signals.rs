//! Ending on a signal. Ctrl-C (SIGINT), SIGTERM (`timeout`, `docker stop`, systemd) and SIGHUP end the process
//! without running destructors, so the hidden temporary files of outputs being written would stay behind. A
//! thread waits for those signals instead, removes the files
//! ([`aerie_pipeline::io::atomic::remove_pending`]) and exits with the shell's code for the signal (128 + its
//! number).

/// Starts the thread; where the signals cannot be caught, they keep their default action.
#[cfg(unix)]
pub fn remove_partial_outputs_on_signal() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                aerie_pipeline::io::atomic::remove_pending();
                std::process::exit(128 + signal);
            }
        });
}

/// Elsewhere the signals keep their default action.
#[cfg(not(unix))]
pub fn remove_partial_outputs_on_signal() {}
