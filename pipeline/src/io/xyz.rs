//! xyz reader and writer (not yet written).

use std::path::Path;

use crate::io::{ReadOptions, WriteOptions};
use crate::{Cloud, Error, Result};

pub fn read_bytes(_data: &[u8], path: &Path, _opts: &ReadOptions) -> Result<Cloud> {
    Err(Error::unsupported(
        path,
        "xyz reading is not implemented yet",
    ))
}

pub fn write(_cloud: &Cloud, path: &Path, _opts: &WriteOptions) -> Result<()> {
    Err(Error::unsupported(
        path,
        "xyz writing is not implemented yet",
    ))
}
