//! Write-then-rename, so that a failed or interrupted write never leaves a partial output file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::{Error, Result};

/// Create `path` by calling `write` on a temporary file in the same directory, then renaming it over `path`.
/// On any error the temporary file is removed and `path` is left untouched.
pub fn write_atomic<F>(path: &Path, write: F) -> Result<()>
where
    F: FnOnce(&mut File) -> Result<()>,
{
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // Outputs may go into a folder that does not exist yet (`-o run/scan.pcd`).
    std::fs::create_dir_all(dir).map_err(|e| Error::io(path, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".aerie-tmp-")
        .tempfile_in(dir)
        .map_err(|e| Error::io(path, without_temp_path(e)))?;
    write(tmp.as_file_mut())?;
    tmp.as_file_mut().flush().map_err(|e| Error::io(path, e))?;
    // Temporary files are created private (0600); an output file gets the usual permissions.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0o644);
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(mode))
            .map_err(|e| Error::io(path, e))?;
    }
    tmp.persist(path)
        .map_err(|e| Error::io(path, without_temp_path(e.error)))?;
    Ok(())
}

/// The OS error alone: `tempfile` appends the temporary file's name, which means nothing to the user (the
/// error already names their file).
fn without_temp_path(e: std::io::Error) -> std::io::Error {
    match e.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::new(e.kind(), e.kind().to_string()),
    }
}

/// [`write_atomic`] with a buffered writer, for formats written front to back.
pub fn write_atomic_buffered<F>(path: &Path, write: F) -> Result<()>
where
    F: FnOnce(&mut BufWriter<&mut File>) -> Result<()>,
{
    write_atomic(path, |file| {
        let mut w = BufWriter::with_capacity(1 << 20, file);
        write(&mut w)?;
        w.flush().map_err(|e| Error::io(path, e))
    })
}

/// Map a std::io::Error from writing `path` into our error.
pub fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.bin");
        let r = write_atomic(&out, |f| {
            f.write_all(b"half").unwrap();
            Err(Error::format(&out, "test", "forced failure"))
        });
        assert!(r.is_err());
        assert!(!out.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        write_atomic_buffered(&out, |w| w.write_all(b"whole").map_err(io_err(&out))).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"whole");
    }
}
