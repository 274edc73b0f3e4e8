//! Typed errors of the pipeline. Messages are lowercase, name the file and the place, and say what was expected.

use std::path::{Path, PathBuf};

/// Result with the pipeline's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The operating system refused a read or write.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    /// The file's contents are not what its format requires. `place` says where (a byte offset, a line, a
    /// header field, a section), `message` what was found and what was expected.
    #[error("{}: {place}: {message}", path.display())]
    Format {
        path: PathBuf,
        place: String,
        message: String,
    },

    /// The file is valid but uses something Aerie does not support (a newer version, an unknown encoding).
    #[error("{}: unsupported: {message}", path.display())]
    Unsupported { path: PathBuf, message: String },

    /// Neither the file name's extension nor (when reading, `looked_inside`) the first bytes name a format
    /// Aerie knows. The caller can name the format instead (the CLI says which flag does it).
    #[error(
        "{}: cannot tell the format from the {}; expected .las .laz .e57 .ply .pcd, delimited text \
         (.xyz .txt .csv .pts .asc) or .bin (KITTI)",
        path.display(),
        if *looked_inside { "extension or the contents" } else { "extension" }
    )]
    UnknownFormat { path: PathBuf, looked_inside: bool },

    /// A parameter given by the user is out of range or inconsistent.
    #[error("invalid {name}: {message}")]
    Parameter { name: String, message: String },

    /// The operation was cancelled through its progress handle.
    #[error("cancelled")]
    Cancelled,
}

impl Error {
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

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

    pub fn unsupported(path: impl AsRef<Path>, message: impl Into<String>) -> Error {
        Error::Unsupported {
            path: path.as_ref().to_path_buf(),
            message: message.into(),
        }
    }

    pub fn parameter(name: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Parameter {
            name: name.into(),
            message: message.into(),
        }
    }

    /// True when the error is the user's input rather than the machine (the CLI exits 2 for these).
    pub fn is_bad_input(&self) -> bool {
        match self {
            Error::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::InvalidData
            ),
            Error::Format { .. }
            | Error::Unsupported { .. }
            | Error::UnknownFormat { .. }
            | Error::Parameter { .. } => true,
            Error::Cancelled => false,
        }
    }
}
