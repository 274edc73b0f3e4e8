//! How an error reads to a person: its causes without repeats, then the command line's hint. Presentation only,
//! shared by the command line (which prints one cause a line) and the desktop app (one line in its status), so
//! that the app never imports the command line module.

/// A suggestion for the command line, attached as context to an error: which flag fixes it. The libraries describe
/// problems in their own terms (the app shows the same errors, and has no flags); only the command line knows its
/// flags, so it adds them. [`error_lines`] puts the hint after the causes.
#[derive(Debug)]
pub struct Hint(pub String);

impl std::fmt::Display for Hint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Hint {}

/// The error on one line, for a status line: its causes joined by ": ", none repeated (see [`error_lines`]).
#[cfg_attr(not(feature = "app"), allow(dead_code))]
pub fn error_text(err: &anyhow::Error) -> String {
    let (mut parts, hint) = causes(err);
    parts.extend(hint);
    parts.join(": ")
}

/// The error for the terminal: `error: ` and the outermost message, `  caused by: ` and each cause, then
/// `  hint: ` and the hint if there is one.
pub fn error_lines(err: &anyhow::Error) -> Vec<String> {
    let (causes, hint) = causes(err);
    let mut lines: Vec<String> = causes
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            if i == 0 {
                format!("error: {c}")
            } else {
                format!("  caused by: {c}")
            }
        })
        .collect();
    if let Some(hint) = hint {
        lines.push(format!("  hint: {hint}"));
    }
    lines
}

/// The error's causes, outermost first, and its hint. A cause whose text the one before already holds (an error
/// that shows its source in its own message, as `path: source` does) is not repeated.
fn causes(err: &anyhow::Error) -> (Vec<String>, Option<String>) {
    // A context shows in the chain as its own message (the wrapper type is anyhow's), so the hint's layer is
    // recognised by its text.
    let hint = err.downcast_ref::<Hint>().map(ToString::to_string);
    let mut causes: Vec<String> = Vec::new();
    for cause in err.chain().map(ToString::to_string) {
        if Some(&cause) == hint.as_ref() || causes.last().is_some_and(|l| l.contains(&cause)) {
            continue;
        }
        causes.push(cause);
    }
    (causes, hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that shows its source in its own message, as the readers' do.
    #[derive(Debug)]
    struct PathError {
        path: String,
        source: std::io::Error,
    }

    impl std::fmt::Display for PathError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{}: {}", self.path, self.source)
        }
    }

    impl std::error::Error for PathError {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let err = anyhow::Error::new(PathError {
            path: "/x.tum".into(),
            source: io,
        });
        assert_eq!(
            error_lines(&err),
            ["error: /x.tum: No such file or directory"]
        );
        let err = err.context("reading the trajectory");
        assert_eq!(
            error_lines(&err),
            [
                "error: reading the trajectory",
                "  caused by: /x.tum: No such file or directory"
            ]
        );
    }

    #[test]
    fn the_hint_comes_last() {
        let err =
            anyhow::anyhow!("cannot tell the format").context(Hint("name it with --format".into()));
        assert_eq!(
            error_lines(&err),
            [
                "error: cannot tell the format",
                "  hint: name it with --format"
            ]
        );
        assert_eq!(
            error_text(&err),
            "cannot tell the format: name it with --format"
        );
    }
}
