//! Write-then-rename, so that a failed or interrupted write never leaves a partial output file.
//!
//! Every output of the program (scans, maps, exports, reports) goes through here, so two things a user meets
//! are handled once for all of them: a missing output directory is created, and an error names the user's
//! own path, never the hidden temporary file beside it.
//!
//! A process killed by a signal (Ctrl-C, `timeout`, a container stopping) runs no destructors, so the temporary
//! files in progress are also listed in a registry ([`Pending`]) that the program's signal handler empties with
//! [`remove_pending`] before it exits. The library installs no handler itself.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::{Error, Result};

/// Create `path` by calling `write` on a temporary file in the same directory, then renaming it over `path`.
/// The directory is created first when it does not exist. On any error the temporary file is removed, `path` is
/// left untouched, and the error names `path` (the temporary file's name never reaches the user).
pub fn write_atomic<F>(path: &Path, write: F) -> Result<()>
where
    F: FnOnce(&mut File) -> Result<()>,
{
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::io(
                path,
                std::io::Error::new(
                    e.kind(),
                    format!("cannot create the directory {}: {e}", dir.display()),
                ),
            )
        })?;
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".aerie-tmp-")
        .tempfile_in(dir)
        .map_err(|e| Error::io(path, bare(&e)))?;
    let _pending = Pending::new(tmp.path());
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
        .map_err(|e| Error::io(path, bare(&e.error)))?;
    Ok(())
}

/// The error without the context `tempfile` adds: its message names the temporary file ("... at path
/// \".aerie-tmp-XXXX\""), which means nothing to the user; our error names the output path instead. (`tempfile`
/// keeps the original error private, so the context is cut from the message.)
fn bare(e: &std::io::Error) -> std::io::Error {
    if let Some(code) = e.raw_os_error() {
        return std::io::Error::from_raw_os_error(code);
    }
    let text = e.to_string();
    let text = match text.find(" at path ") {
        Some(i) => text[..i].to_string(),
        None => text,
    };
    std::io::Error::new(e.kind(), text)
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

/// Temporary files being written now, by any thread.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A temporary output file listed for [`remove_pending`] while this guard lives. Writers that keep their own
/// temporary file (the flight recorder's MCAP) hold one too.
#[derive(Debug)]
pub struct Pending(PathBuf);

impl Pending {
    /// Lists `tmp` until the guard is dropped.
    pub fn new(tmp: &Path) -> Pending {
        if let Ok(mut list) = PENDING.lock() {
            list.push(tmp.to_path_buf());
        }
        Pending(tmp.to_path_buf())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Ok(mut list) = PENDING.lock()
            && let Some(at) = list.iter().position(|p| *p == self.0)
        {
            list.swap_remove(at);
        }
    }
}

/// Removes every temporary output file still being written: for a signal handler, just before the process
/// exits. Returns how many were removed.
pub fn remove_pending() -> usize {
    let Ok(list) = PENDING.lock() else {
        return 0;
    };
    // A folder written whole before its rename (a Gazebo model) is listed as one temporary path too.
    list.iter()
        .filter(|p| std::fs::remove_file(p).is_ok() || std::fs::remove_dir_all(p).is_ok())
        .count()
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

    #[test]
    fn pending_files_are_listed_while_written() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.bin");
        // Only this test's files: other tests may be writing in this process at the same time.
        let listed = || -> Vec<PathBuf> {
            let list = PENDING.lock().unwrap();
            list.iter()
                .filter(|p| p.starts_with(dir.path()))
                .cloned()
                .collect()
        };
        write_atomic(&out, |f| {
            let now = listed();
            assert_eq!(now.len(), 1);
            assert!(now[0].exists() && now[0] != out);
            f.write_all(b"whole").map_err(io_err(&out))
        })
        .unwrap();
        assert!(listed().is_empty());
        let _ = write_atomic(&out, |_| Err(Error::format(&out, "test", "forced failure")));
        assert!(listed().is_empty());
    }

    #[test]
    fn bare_errors_keep_the_os_message_and_drop_context() {
        let e = std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "No such file at path \".aerie-tmp-x\"",
        );
        let b = bare(&e);
        assert_eq!(b.kind(), std::io::ErrorKind::NotFound);
        assert!(!b.to_string().contains("aerie-tmp"), "{b}");
        let os = bare(&std::io::Error::from_raw_os_error(13));
        assert_eq!(os.raw_os_error(), Some(13));
    }
}
