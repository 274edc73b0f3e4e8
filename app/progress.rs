//! Terminal progress bars (indicatif) behind the library's `Progress` trait.

use std::sync::Mutex;

use aerie_pipeline::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// One bar per stage, drawn on stderr; hidden when stderr is not a terminal or `quiet` is set.
pub struct TerminalProgress {
    bar: Mutex<Option<ProgressBar>>,
    quiet: bool,
}

impl TerminalProgress {
    pub fn new(quiet: bool) -> TerminalProgress {
        TerminalProgress {
            bar: Mutex::new(None),
            quiet,
        }
    }

    /// Close the current bar, leaving its final line on screen.
    pub fn finish(&self) {
        if let Ok(mut b) = self.bar.lock()
            && let Some(bar) = b.take()
        {
            bar.finish();
        }
    }
}

impl Progress for TerminalProgress {
    fn stage(&self, name: &str, total: u64) {
        self.finish();
        let bar = if self.quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(total)
        };
        if !self.quiet {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        let template = if total > 0 {
            "{prefix:>24} [{bar:30}] {percent:>3}% {elapsed_precise} eta {eta}"
        } else {
            "{prefix:>24} {spinner} {elapsed_precise}"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(name.to_string());
        if let Ok(mut b) = self.bar.lock() {
            *b = Some(bar);
        }
    }

    fn advance(&self, n: u64) {
        if let Ok(b) = self.bar.lock()
            && let Some(bar) = b.as_ref()
        {
            bar.inc(n);
        }
    }
}

impl Drop for TerminalProgress {
    fn drop(&mut self) {
        self.finish();
    }
}
