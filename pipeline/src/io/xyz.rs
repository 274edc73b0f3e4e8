//! Delimited text point clouds (.xyz .txt .csv .pts .asc).
//!
//! Reading: the delimiter is detected from the first data line (`;`, else `,`, else tab, else whitespace).
//! A header line is recognised when it is not numeric: a plain line of names (`x,y,z,intensity`) or a
//! comment line of names (`//X,Y,Z,R,G,B` as CloudCompare writes it, or `# x y z`). Names map like PLY's
//! (`x y z`, `intensity`, `r g b` or `red green blue`, `nx ny nz`, `time`, `ring`, `class`; others become
//! extra dimensions). Without a header the column count decides: 3 -> `x y z`; 4 -> `+ intensity`;
//! 6 -> `x y z r g b`; 7 -> `x y z intensity r g b` (CloudCompare's PTS-like default); any other count ->
//! `x y z` then extras `col_4`, `col_5`, ... (1-based column numbers). `ReadOptions::columns` overrides all of
//! this (`_` skips a column). A leading line holding a single integer (a PTS point count) is skipped, as are
//! later lines starting with `#` or `//`. Colour columns whose values are integers up to 255 are 8-bit.
//!
//! Writing: a header line `//x y z intensity r g b nx ny nz ...` (CloudCompare takes a `//` line of names as
//! its column header, and this reader detects it), then one space-separated line per point: coordinates with
//! 6 decimals (4 when a world coordinate reaches 1e4 m: still a tenth of a millimetre), colour as 0..255.

use std::io::Write;
use std::path::Path;

use crate::cloud::ScalarKind;
use crate::io::atomic::{io_err, write_atomic_buffered};
use crate::io::fields::{
    Column, OutField, Src, Style, Target, assemble, encode_text, lines, out_fields, parse_num,
    parse_rows, quote, target_for, write_value,
};
use crate::io::{ReadOptions, WriteOptions};
use crate::{Cloud, Error, Result};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Delim {
    Char(u8),
    Whitespace,
}

impl Delim {
    fn detect(line: &[u8]) -> Delim {
        if line.contains(&b';') {
            Delim::Char(b';')
        } else if line.contains(&b',') {
            Delim::Char(b',')
        } else if line.contains(&b'\t') {
            Delim::Char(b'\t')
        } else {
            Delim::Whitespace
        }
    }

    fn name(self) -> &'static str {
        match self {
            Delim::Char(b';') => "semicolon-separated",
            Delim::Char(b',') => "comma-separated",
            Delim::Char(_) => "tab-separated",
            Delim::Whitespace => "whitespace-separated",
        }
    }

    /// The tokens of `line`, trimmed; a trailing empty token (a trailing delimiter) is dropped.
    fn split(self, line: &[u8]) -> Vec<&[u8]> {
        match self {
            Delim::Whitespace => line
                .split(u8::is_ascii_whitespace)
                .filter(|t| !t.is_empty())
                .collect(),
            Delim::Char(c) => {
                let mut v: Vec<&[u8]> = line.split(|&b| b == c).map(<[u8]>::trim_ascii).collect();
                if v.len() > 1 && v.last().is_some_and(|t| t.is_empty()) {
                    v.pop();
                }
                v
            }
        }
    }
}

fn is_comment(line: &[u8]) -> bool {
    let t = line.trim_ascii_start();
    t.starts_with(b"#") || t.starts_with(b"//")
}

fn strip_comment(line: &[u8]) -> &[u8] {
    let t = line.trim_ascii_start();
    t.strip_prefix(b"//")
        .or_else(|| t.strip_prefix(b"#"))
        .unwrap_or(t)
}

/// What comes before the data: the header line's names (if any), and the first data line with its byte offset
/// and the number of lines before it.
struct Preamble<'a> {
    header: Option<Vec<String>>,
    first: Option<&'a [u8]>,
    pos: usize,
    line_no: usize,
}

/// Finds the header (a line that is not all numbers, or a comment of three or more names) and the first data
/// line, skipping blank lines, ordinary comments and a PTS point count.
fn preamble(data: &[u8]) -> Preamble<'_> {
    let mut header: Option<Vec<String>> = None;
    let mut pos = 0usize;
    let mut line_no = 0usize;
    let mut pts_count_skipped = false;
    for line in lines(data) {
        let start = pos;
        pos = (pos + line.len() + 1).min(data.len());
        if data.get(start + line.len()) == Some(&b'\r') {
            pos = (pos + 1).min(data.len());
        }
        line_no += 1;
        if line.trim_ascii().is_empty() {
            continue;
        }
        let comment = is_comment(line);
        let body = strip_comment(line);
        let toks = Delim::detect(body).split(body);
        let numeric = toks.iter().all(|t| parse_num(t).is_some());
        if !numeric {
            if comment && toks.len() < 3 {
                continue; // an ordinary comment
            }
            header = Some(
                toks.iter()
                    .map(|t| String::from_utf8_lossy(t).trim().to_string())
                    .collect(),
            );
            continue;
        }
        if comment {
            continue;
        }
        if toks.len() == 1 && !pts_count_skipped && header.is_none() {
            pts_count_skipped = true; // a PTS point count
            continue;
        }
        return Preamble {
            header,
            first: Some(line),
            pos: start,
            line_no: line_no - 1,
        };
    }
    Preamble {
        header,
        first: None,
        pos,
        line_no,
    }
}

/// The names of the `ncols` columns: those given (`--columns`), the header's, or by count (3: x y z, 4 adds
/// intensity, 6: x y z r g b, 7: x y z intensity r g b, more: `col_N`). `line` names the first data line in
/// errors.
fn column_names(
    path: &Path,
    opts: &ReadOptions,
    header: Option<Vec<String>>,
    names_xyz: bool,
    ncols: usize,
    line: &str,
) -> Result<Vec<String>> {
    let names: Vec<String> = if let Some(c) = &opts.columns {
        let named: Vec<&String> = c.iter().filter(|n| n.as_str() != "_").collect();
        if let Some(n) = named
            .iter()
            .enumerate()
            .find_map(|(i, n)| named[..i].contains(n).then_some(n))
        {
            return Err(Error::parameter(
                "columns",
                format!("{n} is named twice; give each column its own name (`_` skips one)"),
            ));
        }
        c.clone()
    } else if let Some(h) = header.filter(|h| h.len() == ncols || names_xyz) {
        if h.len() != ncols {
            return Err(Error::format(
                path,
                line,
                format!(
                    "the header names {} columns ({}), this line has {ncols}: fix the header, or name the \
                     columns with --columns",
                    h.len(),
                    h.join(" ")
                ),
            ));
        }
        h
    } else {
        let base: &[&str] = match ncols {
            3 => &["x", "y", "z"],
            4 => &["x", "y", "z", "intensity"],
            6 => &["x", "y", "z", "r", "g", "b"],
            7 => &["x", "y", "z", "intensity", "r", "g", "b"],
            _ => &["x", "y", "z"],
        };
        let mut v: Vec<String> = base.iter().map(ToString::to_string).collect();
        for k in v.len()..ncols {
            v.push(format!("col_{}", k + 1));
        }
        v
    };
    if names.len() != ncols {
        return Err(Error::format(
            path,
            line,
            if opts.columns.is_some() {
                format!(
                    "{} column names given but the line has {ncols} columns",
                    names.len()
                )
            } else {
                format!("the line has {ncols} columns; expected at least 3 (x y z)")
            },
        ));
    }
    Ok(names)
}

/// Parse a delimited text buffer (see the module documentation for the detection rules).
pub fn read_bytes(data: &[u8], path: &Path, opts: &ReadOptions) -> Result<Cloud> {
    let data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    let Preamble {
        header,
        first,
        pos,
        line_no,
    } = preamble(data);
    // A header naming x, y and z is the file's own column list, not a title line.
    let names_xyz = header.as_ref().is_some_and(|h| {
        ["x", "y", "z"]
            .iter()
            .all(|c| h.iter().any(|n| n.eq_ignore_ascii_case(c)))
    });
    let Some(first) = first else {
        // A header naming x, y and z with no rows under it is a file of no points (what an empty scan writes).
        if names_xyz {
            return Ok(Cloud::default());
        }
        return Err(Error::format(
            path,
            "data",
            "no data lines: expected lines of at least three numbers (x y z), after an optional header line",
        ));
    };
    let delim = Delim::detect(first);
    let ncols = delim.split(first).len();
    let first_line = format!("line {}", line_no + 1);
    let names = column_names(path, opts, header, names_xyz, ncols, &first_line)?;
    let targets: Vec<Target> = names.iter().map(|n| target_for(n)).collect();
    let used = targets.iter().filter(|t| **t != Target::Skip).count();
    let body = data.get(pos..).unwrap_or_default();
    let rows = parse_rows(body, used, |line, cols| {
        if line.trim_ascii().is_empty() || is_comment(line) {
            return Ok(());
        }
        parse_line(&delim.split(line), &names, &targets, cols)
    })
    .map_err(|(line, m)| Error::format(path, format!("line {}", line_no + line + 1), m))?;
    let n = rows.first().map_or(0, Vec::len);
    let cols: Vec<Column> = names
        .iter()
        .zip(targets)
        .filter(|(_, t)| *t != Target::Skip)
        .zip(rows)
        .map(|((name, target), values)| Column {
            name: name.clone(),
            target,
            kind: ScalarKind::F64,
            values,
        })
        .collect();
    let mut cloud = assemble(path, None, cols, n)?;
    cloud.meta.format = Some(format!("XYZ text ({})", delim.name()));
    Ok(cloud)
}

/// One data line's values, pushed onto `cols` (one per column not skipped); an error names the column.
fn parse_line(
    toks: &[&[u8]],
    names: &[String],
    targets: &[Target],
    cols: &mut [Vec<f64>],
) -> std::result::Result<(), String> {
    if toks.len() != names.len() {
        return Err(format!(
            "expected {} columns, found {}",
            names.len(),
            toks.len()
        ));
    }
    let mut c = 0usize;
    for (k, (tok, t)) in toks.iter().zip(targets).enumerate() {
        if *t == Target::Skip {
            continue;
        }
        let name = names.get(k).map_or("", String::as_str);
        let Some(v) = parse_num(tok) else {
            return Err(format!(
                "column {} ({name}): expected a number, found {}",
                k + 1,
                quote(tok)
            ));
        };
        if matches!(t, Target::X | Target::Y | Target::Z) && !v.is_finite() {
            return Err(format!(
                "column {} ({name}): expected a finite coordinate, found {}",
                k + 1,
                quote(tok)
            ));
        }
        if let Some(col) = cols.get_mut(c) {
            col.push(v);
        }
        c += 1;
    }
    Ok(())
}

/// Write `cloud` as space-separated text with a `//` header line (see the module documentation).
pub fn write(cloud: &Cloud, path: &Path, opts: &WriteOptions) -> Result<()> {
    let fields = out_fields(cloud, opts, Style::Text);
    let header = format!(
        "//{}\n",
        fields
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let cell = |s: &mut String, f: &OutField, v: f64| {
        use std::fmt::Write as _;
        if matches!(f.src, Src::X | Src::Y | Src::Z) {
            let _ = if f.kind == ScalarKind::F64 {
                write!(s, "{v:.4}")
            } else {
                write!(s, "{v:.6}")
            };
        } else {
            write_value(s, f, v);
        }
    };
    let body = encode_text(cloud, &fields, ' ', cell);
    write_atomic_buffered(path, |w| {
        w.write_all(header.as_bytes()).map_err(io_err(path))?;
        w.write_all(&body).map_err(io_err(path))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, columns: Option<&[&str]>) -> Result<Cloud> {
        let opts = ReadOptions {
            columns: columns.map(|c| c.iter().map(ToString::to_string).collect()),
            ..Default::default()
        };
        read_bytes(text.as_bytes(), Path::new("t.txt"), &opts)
    }

    #[test]
    fn column_counts_decide_without_a_header() {
        let c = read("1 2 3 9 255 0 0\n4 5 6 8 0 255 0\n", None).unwrap();
        assert_eq!(c.intensity(), Some(&[9.0, 8.0][..]));
        assert_eq!(c.color().unwrap()[1], [0, 65535, 0]);
        let c = read("1,2,3,4,5\n", None).unwrap();
        assert_eq!(c.extra("col_5").unwrap().values.to_f64(), vec![5.0]);
        let c = read("1\t2\t3\n", None).unwrap();
        assert_eq!(c.meta.format.as_deref(), Some("XYZ text (tab-separated)"));
    }

    /// A finite coordinate so far from the others that its f32 offset from the origin overflows must not become
    /// an infinite position: it is refused, naming the point.
    #[test]
    fn coordinates_too_far_apart_for_f32_are_refused() {
        for far in ["1e39", "-1e300"] {
            let e = read(&format!("1 2 3\n{far} 5 6\n"), None)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("t.txt: point ") && e.contains("x spans"),
                "{far}: {e}"
            );
        }
        // A coordinate that is not a number is named by its line, as the user's editor shows it.
        let e = read("# x y z\n1 2 3\n\n4 nan 6\n", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.txt: line 4") && e.contains("(y): expected a finite coordinate"),
            "{e}"
        );
        // Wide but representable: georeferenced coordinates keep their origin.
        assert!(read("1 2 3\n1e30 5 6\n", None).is_ok());
        // Two columns are not x y z, and nobody gave column names.
        let e = read("1 2\n4 5\n", None).unwrap_err().to_string();
        assert!(e.contains("2 columns; expected at least 3"), "{e}");
    }

    #[test]
    fn headers_and_explicit_columns() {
        let c = read("//X,Y,Z,R,G,B,Scalar field\n1,2,3,10,20,30,0.5\n", None).unwrap();
        assert_eq!(c.color().unwrap()[0], [2570, 5140, 7710]);
        assert_eq!(c.extra("Scalar field").unwrap().values.to_f64(), vec![0.5]);
        // One colour scale for the three channels: 16-bit red beside a blue of 100 keeps that blue 16-bit, and a
        // 0/1 blue beside fractional red and green is 0..1 like them.
        let c = read("x y z r g b\n0 0 0 60000 30000 100\n", None).unwrap();
        assert_eq!(c.color().unwrap()[0], [60000, 30000, 100]);
        let c = read("x y z r g b\n0 0 0 0.5 0.25 1\n", None).unwrap();
        assert_eq!(c.color().unwrap()[0], [32768, 16384, 65535]);
        let c = read("x;y;z;ring\n1;2;3;7\n", None).unwrap();
        assert_eq!(c.ring(), Some(&[7][..]));
        // An integer attribute out of its range, or with a fraction, is the file's fault, not clamped.
        for (text, expect) in [
            (
                "x,y,z,classification\n1,2,3,2\n1,2,3,300\n",
                "classification is 300",
            ),
            ("x,y,z,ring\n1,2,3,-5\n", "ring is -5"),
            ("x,y,z,ring\n1,2,3,2.7\n", "ring is 2.7"),
        ] {
            let e = read(text, None).unwrap_err().to_string();
            assert!(e.contains(expect) && e.contains("whole number"), "{e}");
        }
        let c = read("2\n9 1 2 3\n9 4 5 6\n", Some(&["_", "x", "y", "z"])).unwrap();
        assert_eq!(c.positions()[1], [4.0, 5.0, 6.0]);
        let e = read("1 2 3 4\n", Some(&["x", "y", "z", "x"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("x is named twice"), "{e}");
        assert!(read("1 2 3 4 5\n", Some(&["x", "_", "y", "_", "z"])).is_ok());
    }

    /// An empty scan written as XYZ is its header line alone: it reads back as no points. Text with no rows
    /// and no such header is not a point file.
    #[test]
    fn a_header_without_rows_is_an_empty_cloud() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.xyz");
        write(&Cloud::default(), &path, &WriteOptions::default()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("//x y z"), "{text:?}");
        assert_eq!(read(&text, None).unwrap().len(), 0);
        assert_eq!(read("# x y z intensity\n", None).unwrap().len(), 0);
        for text in ["", "hello world, this is text\n", "# a comment\n"] {
            let e = read(text, None).unwrap_err().to_string();
            assert!(
                e.contains("no data lines: expected lines of at least three numbers"),
                "{text:?}: {e}"
            );
        }
    }

    #[test]
    fn malformed_line_names_line_and_column() {
        let e = read("1 2 3\n4 5 6\n7 x 9\n", None).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("column 2"), "{e}");
        let e = read("# c\n1 2 3\n4 5\n", None).unwrap_err().to_string();
        assert!(e.contains("line 3"), "{e}");
        // A header that names x y z but not as many columns as the rows: its names cannot be placed.
        let e = read("x y z intensity\n1 2 3 4 5\n", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("names 4 columns"), "{e}");
        // A title line is not a header.
        assert_eq!(read("Scan of the hall\n1 2 3\n", None).unwrap().len(), 1);
    }
}
