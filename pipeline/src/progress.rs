//! Progress reporting and cancellation, without knowing who displays it (terminal bar, app, nothing).

use std::sync::atomic::{AtomicBool, Ordering};

/// Receives progress from long operations. Implementations must be cheap: `advance` is called from worker
/// threads, in chunks (never per point).
pub trait Progress: Sync {
    /// A new stage starts with `total` units of work (0 when unknown).
    fn stage(&self, _name: &str, _total: u64) {}
    /// `n` more units are done.
    fn advance(&self, _n: u64) {}
    /// The user asked to stop; operations check this between chunks and return `Error::Cancelled`.
    fn is_cancelled(&self) -> bool {
        false
    }
}

/// Progress that goes nowhere.
pub struct NoProgress;
impl Progress for NoProgress {}

/// A cancel flag that can be shared with a job and set from elsewhere.
#[derive(Default)]
pub struct CancelFlag(AtomicBool);
impl CancelFlag {
    /// Ask the job to stop; it returns [`crate::Error::Cancelled`] at its next check.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
    /// Whether [`CancelFlag::cancel`] has been called.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
