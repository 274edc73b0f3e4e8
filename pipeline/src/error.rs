//! Typed errors of the pipeline. Messages are lowercase, name the file and the place, and say what was expected.

use std::path::{Path, PathBuf};

/// Result with the pipeline's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the pipeline, by whose fault: the machine's (`Io`), the file's (`Format`,
/// `Unsupported`, `UnknownFormat`), the caller's (`Parameter`) or nobody's (`Cancelled`). Each variant carries what
/// a message needs (the file, the place, what was expected), so callers can show it as is or match on it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The operating system refused a read or write.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file read or written.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },

    /// The file's contents are not what its format requires.
    #[error("{}: {place}: {message}", path.display())]
    Format {
        /// The file (or the name given to a buffer read from memory).
        path: PathBuf,
        /// Where in the file: a byte offset, a line, a header field, a section.
        place: String,
        /// What was found and what was expected.
        message: String,
    },

    /// The file is valid but uses something Aerie does not support (a newer version, an unknown encoding).
    #[error("{}: unsupported: {message}", path.display())]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What is not supported, and what is.
        message: String,
    },

    /// Neither the file name's extension nor (when reading) the first bytes name a format Aerie knows. The
    /// caller can name the format instead (the CLI says which flag does it).
    #[error(
        "{}: cannot tell the format from the {}; expected .las .laz .e57 .ply .pcd, delimited text \
         (.xyz .txt .csv .pts .asc) or .bin (KITTI)",
        path.display(),
        if *looked_inside { "extension or the contents" } else { "extension" }
    )]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// Whether the first bytes were looked at too (reading), or only the name (writing).
        looked_inside: bool,
    },

    /// A parameter given by the user is out of range or inconsistent.
    #[error("invalid {name}: {message}")]
    Parameter {
        /// The parameter, as the recipe names it (e.g. `filters.sor.k`), or what the value describes.
        name: String,
        /// What is wrong with it and what is accepted.
        message: String,
    },

    /// The operation was cancelled through its progress handle.
    #[error("cancelled")]
    Cancelled,
}

impl Error {
    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    /// An [`Error::Format`]: in `path`, at `place`, `message`.
    pub fn format(
        path: impl AsRef<Path>,
        place: impl Into<String>,
        message: impl Into<String>,
    ) -> Error {
        Error::Format {
            path: path.as_ref().to_path_buf(),
            place: place.into(),
            message: message.into(),
        }
    }

    /// An [`Error::Unsupported`] for `path`.
    pub fn unsupported(path: impl AsRef<Path>, message: impl Into<String>) -> Error {
        Error::Unsupported {
            path: path.as_ref().to_path_buf(),
            message: message.into(),
        }
    }

    /// An [`Error::Parameter`] for the parameter `name`.
    pub fn parameter(name: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Parameter {
            name: name.into(),
            message: message.into(),
        }
    }

    /// True when the error is the user's input rather than the machine (the CLI exits 2 for these).
    pub fn is_bad_input(&self) -> bool {
        match self {
            Error::Io { source, .. } => is_bad_path(source),
            Error::Format { .. }
            | Error::Unsupported { .. }
            | Error::UnknownFormat { .. }
            | Error::Parameter { .. } => true,
            Error::Cancelled => false,
        }
    }
}

/// True when an I/O error says the user named a path that cannot serve (missing, a directory where a file was
/// expected, an existing file where a folder is made, no permission) or a file that ends early or holds bad
/// data, rather than the machine failing (disk full, hardware, interrupted).
pub fn is_bad_path(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::NotFound
            | K::UnexpectedEof
            | K::InvalidData
            | K::IsADirectory
            | K::NotADirectory
            | K::AlreadyExists
            | K::PermissionDenied
            | K::InvalidFilename
            | K::ReadOnlyFilesystem
    )
}

/// A column that does not have one value per point: what [`crate::Cloud::from_columns`] and the cloud's setters
/// refuse, so that the length invariant holds by construction.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{column} has {values} values for {points} points")]
pub struct LengthMismatch {
    /// The column, as messages name it: `attribute intensity`, `extra dimension scan_angle`.
    pub column: String,
    /// How many values it has.
    pub values: usize,
    /// How many points the cloud has.
    pub points: usize,
}

/// A cloud whose origin or positions are not finite ([`crate::Cloud::validate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotFinite {
    /// The origin has a NaN or infinite coordinate.
    #[error("the origin is not finite")]
    Origin,
    /// A point (the first such) has a NaN or infinite coordinate.
    #[error("point {index} has a non-finite coordinate")]
    Point {
        /// The point's index.
        index: usize,
    },
}

/// A cloud given to a stage is the caller's parameter: its problems are [`Error::Parameter`]s named `cloud`.
impl From<LengthMismatch> for Error {
    fn from(e: LengthMismatch) -> Error {
        Error::parameter("cloud", e.to_string())
    }
}

impl From<NotFinite> for Error {
    fn from(e: NotFinite) -> Error {
        Error::parameter("cloud", e.to_string())
    }
}
