//! Writing a map as Aerie keeps it ([`write_map`]: the `.amap` and its report), and the check every writer of an
//! output makes first ([`not_an_input`]).

use std::path::{Path, PathBuf};

use super::ExportError;
use crate::map::{PackedMap, amap};
use crate::report::{MapReport, PrepareSummary};
use crate::{Error, Result};

/// Writes `map` to `output` (`.amap`) and its report beside it ([`MapReport::path_for`]); returns the report's
/// path. The one way the command line, the demo and the app save a map.
///
/// The report is written first: a report path that cannot be written fails before the map is, so a failed save
/// leaves neither; a map that cannot be written takes its new report with it.
pub fn write_map(map: &PackedMap, summary: &PrepareSummary, output: &Path) -> Result<PathBuf> {
    let report_file = MapReport::path_for(output);
    let text = MapReport::new(output, map.len(), summary).to_json()?;
    crate::io::atomic::write_atomic(&report_file, |f| {
        use std::io::Write;
        f.write_all(text.as_bytes())
            .map_err(|e| Error::io(&report_file, e))
    })?;
    if let Err(e) = amap::write(map, output) {
        let _ = std::fs::remove_file(&report_file);
        return Err(e);
    }
    Ok(report_file)
}

/// Refuses to write `output` over one of `inputs` (the same file by any path, [`same_file`]): a slip such as
/// `aerie convert scan.las scan.las` would otherwise replace the user's data with a converted copy, which loses
/// whatever the output format cannot hold.
pub fn not_an_input(output: &Path, inputs: &[&Path]) -> std::result::Result<(), ExportError> {
    match inputs.iter().find(|i| same_file(output, i)) {
        Some(input) => Err(ExportError::OverwritesInput {
            output: output.to_path_buf(),
            input: input.to_path_buf(),
        }),
        None => Ok(()),
    }
}

/// Whether two paths name one existing file (hard links and symbolic links included).
pub fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        ma.dev() == mb.dev() && ma.ino() == mb.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
    }
}
