//! What can go wrong in an export: [`ExportError`], in the library's terms (no command-line flag, no widget).

use std::path::PathBuf;

use super::Target;
use crate::io::{Encoding, Format};

/// An export that could not be written. Each variant names the file and says what was expected; a caller that
/// has its own way of fixing it (the CLI's flags) adds it as a hint.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The target's reader loads one format, and neither the output's name nor the format asked is it.
    #[error(
        "{}: a file for {} must be {}: name it .{}",
        path.display(),
        target.reader(),
        format_words(*format),
        format.extension()
    )]
    WrongFormat {
        /// The output file.
        path: PathBuf,
        /// Whom the export is for.
        target: Target,
        /// The format the target's reader loads.
        format: Format,
    },

    /// The target's reader loads one encoding, and another was asked.
    #[error(
        "{}: a file for {} must be {} {}, not {}",
        path.display(),
        target.reader(),
        encoding_words(*required),
        format_words(*format),
        encoding_words(*asked)
    )]
    WrongEncoding {
        /// The output file.
        path: PathBuf,
        /// Whom the export is for.
        target: Target,
        /// The format written.
        format: Format,
        /// The encoding the target's reader loads.
        required: Encoding,
        /// The encoding asked.
        asked: Encoding,
    },

    /// The target's own writer writes one kind of file, and the output's name is not it.
    #[error("{}: a file for {} must be named .{extension}", path.display(), target.reader())]
    WrongExtension {
        /// The output file.
        path: PathBuf,
        /// Whom the export is for.
        target: Target,
        /// The extension its file takes.
        extension: &'static str,
    },

    /// The map has no points: the export would hold nothing.
    #[error("{}: the map has no points, so there is nothing to export", path.display())]
    EmptyMap {
        /// The output file.
        path: PathBuf,
    },

    /// The resolution asked is out of the range the target takes, or too fine for the map's extent.
    #[error("{}: the resolution {resolution_m} m is out of range: {reason}", path.display())]
    BadResolution {
        /// The output file.
        path: PathBuf,
        /// The resolution asked, metres.
        resolution_m: f64,
        /// What is accepted.
        reason: String,
    },

    /// The output is one of the files read (the same file by any path), which writing would replace.
    #[error(
        "the output {} is the input {}: write to another file",
        output.display(),
        input.display()
    )]
    OverwritesInput {
        /// The output file, as given.
        output: PathBuf,
        /// The input it is, as given.
        input: PathBuf,
    },

    /// A mesh export (Gazebo, Isaac Sim) could not make its mesh of the map.
    #[error("{}: cannot make a mesh of the map: {source}", path.display())]
    Mesh {
        /// The output.
        path: PathBuf,
        /// Why.
        source: crate::mesh::MeshError,
    },

    /// The mesh to write has no triangle: the export would hold nothing to see or collide with.
    #[error("{}: the mesh has no triangles, so there is nothing to export", path.display())]
    EmptyMesh {
        /// The output.
        path: PathBuf,
    },

    /// The mesh to write cannot be written as it is (a vertex that is not a number).
    #[error("{}: the mesh cannot be written: {reason}", path.display())]
    BadMesh {
        /// The output.
        path: PathBuf,
        /// What is wrong, and where.
        reason: String,
    },

    /// A target that writes a folder (a Gazebo model) was given a folder that already holds files.
    #[error(
        "{}: the folder exists and is not empty: a model for {} is written to a new or empty folder, so that \
         nothing of yours is replaced: remove it or name another",
        path.display(),
        target.reader()
    )]
    FolderNotEmpty {
        /// The output folder.
        path: PathBuf,
        /// Whom the export is for.
        target: Target,
    },

    /// A target that writes a folder was given a name that is not one: an existing file, or a file's name.
    #[error("{}: a model for {} is a folder: {reason}", path.display(), target.reader())]
    NotAFolder {
        /// The output.
        path: PathBuf,
        /// Whom the export is for.
        target: Target,
        /// What is wrong with the name, and what would do.
        reason: String,
    },

    /// The writer failed: the format could not be told, the options do not apply to it, or the file could not be
    /// written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The output file.
        path: PathBuf,
        /// Why.
        source: crate::Error,
    },
}

impl ExportError {
    /// True when the error is the user's input rather than the machine (the CLI exits 2 for these).
    pub fn is_bad_input(&self) -> bool {
        match self {
            ExportError::WrongFormat { .. }
            | ExportError::WrongEncoding { .. }
            | ExportError::WrongExtension { .. }
            | ExportError::EmptyMap { .. }
            | ExportError::BadResolution { .. }
            | ExportError::OverwritesInput { .. }
            | ExportError::EmptyMesh { .. }
            | ExportError::BadMesh { .. }
            | ExportError::FolderNotEmpty { .. }
            | ExportError::NotAFolder { .. } => true,
            ExportError::Mesh { source, .. } => matches!(source, crate::mesh::MeshError::Input(_)),
            ExportError::Write { source, .. } => source.is_bad_input(),
        }
    }
}

/// A format as messages name it: `PCD`.
fn format_words(format: Format) -> String {
    format.name().to_ascii_uppercase()
}

/// An encoding as messages name it: `binary`, `compressed`.
fn encoding_words(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::Ascii => "ascii",
        Encoding::Binary => "binary",
        Encoding::BinaryBigEndian => "big-endian binary",
        Encoding::Compressed => "compressed",
    }
}
