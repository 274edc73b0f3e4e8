//! Tests of the LAS and LAZ reader's paths against each other.

use std::path::Path;

use super::header::parse_header;
use super::layout::Layout;
use super::laz::{read_chunk_table, read_laz_sequential};
use super::read_bytes;
use crate::cloud::{self, ExtraDim};
use crate::io::{ReadOptions, WriteOptions, take_skipped};
use crate::{Attribute, Cloud};

/// A LAZ file (LAS 1.4 point format 8 when `nir`, else 1.2 format 3) of `n` points with time, colour,
/// returns, class and an extra-bytes dimension.
fn laz_bytes(n: usize, nir: bool) -> Vec<u8> {
    let mut columns = cloud::Columns {
        positions: (0..n)
            .map(|i| [i as f32 * 0.01, (i % 7) as f32, (i % 13) as f32 * 0.1])
            .collect(),
        intensity: Some((0..n).map(|i| (i % 1000) as f32).collect()),
        color: Some((0..n).map(|i| [i as u16, (2 * i) as u16, 300]).collect()),
        time: Some((0..n).map(|i| 1.0e5 + i as f64 * 1e-3).collect()),
        return_number: Some((0..n).map(|i| 1 + (i % 2) as u8).collect()),
        number_of_returns: Some(vec![2; n]),
        classification: Some((0..n).map(|i| (i % 20) as u8).collect()),
        ..cloud::Columns::default()
    };
    columns.extra.push(ExtraDim::new(
        "range",
        (0..n).map(|i| i as f32 * 0.5).collect::<Vec<f32>>(),
    ));
    if nir {
        columns.extra.push(ExtraDim::new("nir", vec![700u16; n]));
    }
    let cloud = Cloud::from_columns([1000.0, 2000.0, 10.0], columns).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.laz");
    crate::io::write(&cloud, &path, None, &WriteOptions::default()).unwrap();
    std::fs::read(&path).unwrap()
}

/// The sequential LAZ decoder (files without a chunk table, point-wise compression, implausible chunks)
/// grows its arrays batch by batch: it must skip the same columns as the chunked one, which sizes them once.
#[test]
fn sequential_laz_decoding_skips_what_chunked_decoding_skips() {
    let path = Path::new("t.laz");
    for (n, nir) in [(3_000, false), (70_000, true)] {
        let data = laz_bytes(n, nir);
        let header = parse_header(&data, path).unwrap();
        assert!(header.compressed);
        let vlr = header
            .vlrs
            .iter()
            .find(|v| v.is("laszip encoded", 22204))
            .unwrap();
        let laz_vlr = laz::LazVlr::from_buffer(vlr.data).unwrap();
        // `read_bytes` takes the chunked path: the file has a chunk table.
        let table = read_chunk_table(&data, path, &header, &laz_vlr).unwrap();
        assert!(table.is_some_and(|(entries, _)| !entries.is_empty()));
        let full = read_bytes(&data, path, &ReadOptions::default()).unwrap();
        for opts in [
            ReadOptions::default(),
            crate::prepare::map_read_options(),
            ReadOptions {
                skip: vec![Attribute::NumberOfReturns, Attribute::Color],
                ..ReadOptions::default()
            },
            ReadOptions {
                skip: vec![Attribute::Intensity, Attribute::ReturnNumber],
                skip_extras: true,
                ..ReadOptions::default()
            },
        ] {
            let layout = Layout::new(&header, path).unwrap().skipping(&opts);
            let laz_vlr = laz::LazVlr::from_buffer(vlr.data).unwrap();
            let sequential = read_laz_sequential(&data, path, &header, &layout, laz_vlr, u64::MAX)
                .unwrap()
                .into_cloud(&header, &layout, path)
                .unwrap();
            let chunked = read_bytes(&data, path, &opts).unwrap();
            let mut want = full.clone();
            take_skipped(&mut want, &opts);
            let what = format!(
                "{n} points, skip {:?} extras {}",
                opts.skip, opts.skip_extras
            );
            assert!(sequential == want, "{what}: sequential read");
            assert!(chunked == want, "{what}: chunked read");
            for a in &opts.skip {
                assert!(!sequential.attributes().contains(a), "{what}: {a:?}");
            }
        }
    }
}
