//! Long work on a background thread, with progress and cancel: what the app runs so that its window never
//! freezes. A job reports through the library's [`Progress`] trait, exactly as the CLI's terminal bar does, so
//! the library calls are the same in both.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::sync::{Arc, Mutex, PoisonError};

use aerie_pipeline::Progress;

/// Progress of one job, shared between the worker and the window.
pub struct JobProgress {
    stage: Mutex<String>,
    total: AtomicU64,
    done: AtomicU64,
    cancelled: AtomicBool,
    wake: Box<dyn Fn() + Send + Sync>,
}

impl JobProgress {
    fn new(wake: Box<dyn Fn() + Send + Sync>) -> JobProgress {
        JobProgress {
            stage: Mutex::new(String::new()),
            total: AtomicU64::new(0),
            done: AtomicU64::new(0),
            cancelled: AtomicBool::new(false),
            wake,
        }
    }

    /// The current stage's name.
    pub fn stage_name(&self) -> String {
        self.stage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Fraction of the current stage done, when its size is known.
    pub fn fraction(&self) -> Option<f32> {
        let total = self.total.load(Ordering::Relaxed);
        (total > 0)
            .then(|| (self.done.load(Ordering::Relaxed) as f64 / total as f64).min(1.0) as f32)
    }
}

impl Progress for JobProgress {
    fn stage(&self, name: &str, total: u64) {
        if let Ok(mut s) = self.stage.lock() {
            *s = name.to_string();
        }
        self.total.store(total, Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
        (self.wake)();
    }

    fn advance(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
        (self.wake)();
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
}

/// A job running on its own thread; poll it for the result.
pub struct Job<T> {
    /// What the job does, for the status line ("prepare map").
    pub name: String,
    progress: Arc<JobProgress>,
    result: Receiver<Result<T, String>>,
}

impl<T: Send + 'static> Job<T> {
    /// Starts `work` on a new thread. `wake` is called whenever there is news (a repaint request). A panic in
    /// `work` becomes an error message: a bad file must never take the app down.
    pub fn spawn(
        name: &str,
        wake: impl Fn() + Send + Sync + 'static,
        work: impl FnOnce(&JobProgress) -> anyhow::Result<T> + Send + 'static,
    ) -> Job<T> {
        let progress = Arc::new(JobProgress::new(Box::new(wake)));
        let (tx, rx) = channel();
        let p = Arc::clone(&progress);
        let job_name = name.to_string();
        std::thread::spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&p)));
            let result = match outcome {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(crate::errors::error_text(&e)),
                Err(panic) => Err(format!(
                    "{job_name} failed with an internal error: {}",
                    panic_message(&panic)
                )),
            };
            let _ = tx.send(result);
            (p.wake)();
        });
        Job {
            name: name.to_string(),
            progress,
            result: rx,
        }
    }

    /// The result, once the job has finished (then only once).
    pub fn poll(&mut self) -> Option<Result<T, String>> {
        match self.result.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(format!("{} stopped", self.name))),
        }
    }

    /// Asks the job to stop at its next check; it then finishes with a "cancelled" error.
    pub fn cancel(&self) {
        self.progress.cancelled.store(true, Ordering::Relaxed);
    }

    pub fn progress(&self) -> &JobProgress {
        &self.progress
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait<T: Send + 'static>(mut job: Job<T>) -> Result<T, String> {
        loop {
            if let Some(r) = job.poll() {
                return r;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    #[test]
    fn result_error_and_panic_all_come_back() {
        assert_eq!(wait(Job::spawn("a", || {}, |_| Ok(7))), Ok(7));
        let err = wait(Job::<()>::spawn(
            "b",
            || {},
            |_| anyhow::bail!("bad file x.las"),
        ));
        assert_eq!(err, Err("bad file x.las".into()));
        let err = wait(Job::<()>::spawn("c", || {}, |_| panic!("boom")));
        assert!(err.unwrap_err().contains("boom"));
    }

    #[test]
    fn cancel_reaches_the_worker() {
        let job = Job::spawn(
            "spin",
            || {},
            |p| {
                while !p.is_cancelled() {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Ok(p.is_cancelled())
            },
        );
        job.cancel();
        assert_eq!(wait(job), Ok(true));
    }
}
