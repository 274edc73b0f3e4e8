//! pcd reader and writer (not yet written).

use std::path::Path;

use crate::io::{ReadOptions, WriteOptions};
use crate::{Cloud, Error, Result};

pub fn read_bytes(_data: &[u8], path: &Path, _opts: &ReadOptions) -> Result<Cloud> {
    Err(Error::unsupported(
        path,
        "pcd reading is not implemented yet",
    ))
}

pub fn write(_cloud: &Cloud, path: &Path, _opts: &WriteOptions) -> Result<()> {
    Err(Error::unsupported(
        path,
        "pcd writing is not implemented yet",
    ))
}
