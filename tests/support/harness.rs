//! A small test harness for checks whose needs only a run can tell: programs and packages outside Rust (an X
//! server and a Vulkan driver for the real window, the Python packages ROS tools use). Test binaries with
//! `harness = false` (tests/gui, simcore/tests/python_peers) include this file with `#[path]`.
//!
//! Why not libtest: it can only ignore a test by an attribute, fixed at build time, and a build script cannot
//! watch for a program or a Python package being installed. A check whose need is missing here prints as
//! `ignored, REASON`, and counts as ignored in the `test result:` line, as libtest prints `#[ignore]`; a check
//! that did not run never counts as passed. Where the need's `AERIE_REQUIRE_*` variable is set (to anything but
//! empty or `0`; CI sets them in `.ci/run`) a missing need fails the check instead.
//!
//! Understood arguments: test-name filters (substrings, or whole names with `--exact`), `--skip FILTER`,
//! `--list`, and `--ignored` (which runs none: no check here is ignored by attribute). Other libtest options
//! are accepted and have no effect: checks run one after another and their output is not captured.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::time::Instant;

/// Something a check needs that the machine may lack.
pub struct Need {
    /// The variable that turns the need's absence into a failure, e.g. `AERIE_REQUIRE_GUI`.
    pub require_var: &'static str,
    /// `None` when the need is met, else why not and what to install (the reason printed after `ignored, `).
    pub missing: fn() -> Option<String>,
}

/// One check: a test function and what it needs.
pub struct Check<'a> {
    /// The name printed and matched by filters.
    pub name: &'static str,
    /// What must be present for it to run.
    pub needs: &'a [&'a Need],
    /// The check; it fails by panicking, as a `#[test]` does.
    pub run: fn(),
}

/// What happened to one check.
enum Outcome {
    Passed,
    Ignored(String),
    Failed,
}

/// Runs `checks` as the command line asks (see the module doc) and prints libtest's lines; the exit code is a
/// failure when any check failed.
pub fn main(checks: &[Check<'_>]) -> ExitCode {
    let args = Args::parse(std::env::args().skip(1));
    let chosen: Vec<&Check<'_>> = checks.iter().filter(|c| args.selects(c.name)).collect();
    if args.list {
        for c in &chosen {
            println!("{}: test", c.name);
        }
        return ExitCode::SUCCESS;
    }
    let start = Instant::now();
    let plural = if chosen.len() == 1 { "" } else { "s" };
    println!("\nrunning {} test{plural}", chosen.len());
    let (mut passed, mut ignored, mut failed) = (0, 0, Vec::new());
    for c in &chosen {
        match run_one(c) {
            Outcome::Passed => {
                passed += 1;
                println!("test {} ... ok", c.name);
            }
            Outcome::Ignored(why) => {
                ignored += 1;
                println!("test {} ... ignored, {why}", c.name);
            }
            Outcome::Failed => {
                println!("test {} ... FAILED", c.name);
                failed.push(c.name);
            }
        }
    }
    if !failed.is_empty() {
        println!("\nfailures:");
        for name in &failed {
            println!("    {name}");
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {} failed; {ignored} ignored; 0 measured; {} filtered out; \
         finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len(),
        checks.len() - chosen.len(),
        start.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs `check` if its needs are met; a missing need is a failure where its variable requires it.
fn run_one(check: &Check<'_>) -> Outcome {
    for need in check.needs {
        if let Some(why) = (need.missing)() {
            if !required(need.require_var) {
                return Outcome::Ignored(why);
            }
            eprintln!(
                "{} is set but the check cannot run: {why}",
                need.require_var
            );
            return Outcome::Failed;
        }
    }
    match catch_unwind(AssertUnwindSafe(check.run)) {
        Ok(()) => Outcome::Passed,
        Err(_) => Outcome::Failed, // the panic hook has printed the message
    }
}

/// Whether the variable `var` requires its need: set, and neither empty nor `0` (as tests/support/build_cfg.rs
/// reads `AERIE_REQUIRE_SHARED_DATA`).
fn required(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The command line, as far as this harness understands it.
#[derive(Default)]
struct Args {
    filters: Vec<String>,
    skips: Vec<String>,
    exact: bool,
    list: bool,
    ignored_only: bool,
}

impl Args {
    /// libtest's options that take a value as the next argument (when not written `--name=value`).
    const WITH_VALUE: &[&str] = &[
        "--skip",
        "--test-threads",
        "--format",
        "--color",
        "--logfile",
        "-Z",
        "--shuffle-seed",
    ];

    fn parse(mut args: impl Iterator<Item = String>) -> Args {
        let mut a = Args::default();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--exact" => a.exact = true,
                "--list" => a.list = true,
                "--ignored" => a.ignored_only = true,
                "--skip" => a.skips.extend(args.next()),
                s if s.starts_with("--skip=") => a.skips.push(s["--skip=".len()..].to_string()),
                s if Self::WITH_VALUE.contains(&s) => {
                    args.next();
                }
                s if s.starts_with('-') => {}
                _ => a.filters.push(arg),
            }
        }
        a
    }

    /// Whether the check named `name` is to run.
    fn selects(&self, name: &str) -> bool {
        let matches = |f: &String| {
            if self.exact {
                name == f
            } else {
                name.contains(f.as_str())
            }
        };
        !self.ignored_only
            && (self.filters.is_empty() || self.filters.iter().any(matches))
            && !self.skips.iter().any(matches)
    }
}
