//! PLY (Stanford polygon format) point clouds: `ascii`, `binary_little_endian` and `binary_big_endian` 1.0.
//!
//! The parser is written by hand rather than using the `ply-rs-bw` crate (no longer a dependency): it builds a
//! generic key-value map per element instance (a heap allocation and hashing per point and property), which is far
//! slower than Open3D, and it must materialise every element, including huge list elements such as a range scanner's
//! `range_grid`, that a point reader only needs to step over. Here the header gives each vertex property's byte
//! offset in the fixed-size record, and each property is decoded straight from the byte slice into a column, in
//! parallel over chunks of records.
//!
//! Vertex properties are mapped by name: `x y z`; `intensity`, `scalar_intensity`, `reflectance` ->
//! intensity; `red green blue` (uchar widened by 257, ushort kept) -> colour; `nx ny nz` -> normals;
//! `gamma`; `time`, `timestamp`, `gps_time` -> time; `ring`, `line` -> ring; `class`, `classification`,
//! `scalar_Classification` -> classification; any other scalar -> an extra dimension with its type. List
//! properties of the vertex element are stepped over. Other elements (faces, `range_grid`) are stepped over
//! when they precede the vertices (binary: by reading each list length, bounds-checked; ascii: one line per
//! instance) and not read at all when they follow them.
//!
//! Writing: `x y z` as `float`, or as `double` when a world coordinate reaches 1e4 m (float spacing there
//! would lose millimetres; `double` keeps world coordinates readable by every PLY tool, unlike an offset in
//! a comment). Then normals (`nx ny nz`), colour as `uchar red green blue`, `intensity` as float and the
//! other attributes and extra dimensions (64-bit integers as `double`, which PLY lacks).

use std::io::Write;
use std::path::Path;

use crate::cloud::ScalarKind;
use crate::io::atomic::{io_err, write_atomic_buffered};
use crate::io::fields::{
    Column, CoordField, OutField, Positions, Style, Target, as_kind, assemble, data_after_points,
    decode_column, decode_positions, encode_rows, encode_text, lines, out_fields, parse_num,
    parse_rows, quote, read_scalar, target_for, write_value,
};
use crate::io::{Encoding, ReadOptions, WriteOptions};
use crate::{Cloud, Error, Result};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Enc {
    Ascii,
    Little,
    Big,
}

impl Enc {
    fn name(self) -> &'static str {
        match self {
            Enc::Ascii => "ascii",
            Enc::Little => "binary_little_endian",
            Enc::Big => "binary_big_endian",
        }
    }
}

#[derive(Clone, Debug)]
struct Prop {
    name: String,
    kind: ScalarKind,
    /// For a list property, the type of its length (`kind` is then the item type).
    list: Option<ScalarKind>,
}

#[derive(Clone, Debug)]
struct Element {
    name: String,
    count: usize,
    props: Vec<Prop>,
}

struct Header {
    enc: Enc,
    elements: Vec<Element>,
    data_start: usize,
}

/// The scalar type a PLY header names (`uchar`, `float32`), also for the mesh reader (`mesh::io`).
pub(crate) fn kind_of(t: &str) -> Option<ScalarKind> {
    Some(match t {
        "char" | "int8" => ScalarKind::I8,
        "uchar" | "uint8" => ScalarKind::U8,
        "short" | "int16" => ScalarKind::I16,
        "ushort" | "uint16" => ScalarKind::U16,
        "int" | "int32" => ScalarKind::I32,
        "uint" | "uint32" => ScalarKind::U32,
        "float" | "float32" => ScalarKind::F32,
        "double" | "float64" => ScalarKind::F64,
        _ => return None,
    })
}

fn type_name(kind: ScalarKind) -> &'static str {
    match kind {
        ScalarKind::I8 => "char",
        ScalarKind::U8 => "uchar",
        ScalarKind::I16 => "short",
        ScalarKind::U16 => "ushort",
        ScalarKind::I32 => "int",
        ScalarKind::U32 => "uint",
        ScalarKind::F32 => "float",
        _ => "double",
    }
}

/// One line of a PLY header: its bytes (quoted in messages), its text and its place (`header line N`).
struct HeaderLine<'a> {
    raw: &'a [u8],
    text: &'a str,
    place: String,
}

/// The header's lines in turn; `pos` is just past the last one read, where the data starts after `end_header`.
struct HeaderLines<'a> {
    data: &'a [u8],
    pos: usize,
    line_no: usize,
}

impl<'a> HeaderLines<'a> {
    fn next(&mut self, path: &Path) -> Result<HeaderLine<'a>> {
        let rest = self.data.get(self.pos..).unwrap_or_default();
        if rest.is_empty() {
            return Err(Error::format(
                path,
                format!("byte {}", self.pos),
                "header ended without end_header",
            ));
        }
        let len = rest.iter().position(|&b| b == b'\n');
        let raw = &rest[..len.unwrap_or(rest.len())];
        self.pos += len.map_or(rest.len(), |l| l + 1);
        self.line_no += 1;
        let place = format!("header line {}", self.line_no);
        let text = std::str::from_utf8(raw)
            .map_err(|_| Error::format(path, &place, "expected a text header line"))?
            .trim_end_matches('\r');
        Ok(HeaderLine { raw, text, place })
    }
}

fn parse_header(data: &[u8], path: &Path) -> Result<Header> {
    let mut lines = HeaderLines {
        data,
        pos: 0,
        line_no: 0,
    };
    let magic = lines.next(path)?;
    if magic.text != "ply" {
        return Err(Error::format(
            path,
            "byte 0",
            format!(
                "expected the magic line \"ply\", found {}",
                quote(magic.raw)
            ),
        ));
    }
    let mut enc: Option<Enc> = None;
    let mut elements: Vec<Element> = Vec::new();
    loop {
        let line = lines.next(path)?;
        let toks: Vec<&str> = line.text.split_ascii_whitespace().collect();
        match toks.as_slice() {
            [] | ["comment", ..] | ["obj_info", ..] => {}
            ["format", e, v] => enc = Some(encoding_of(e, v, path)?),
            ["element", name, count] => elements.push(element_of(name, count, &line.place, path)?),
            ["property", "list", ct, it, name] => {
                let prop = list_property(ct, it, name, &line.place, path)?;
                add_property(&mut elements, prop, &line.place, path)?;
            }
            ["property", t, name] => {
                let prop = scalar_property(t, name, &line.place, path)?;
                add_property(&mut elements, prop, &line.place, path)?;
            }
            ["end_header"] => break,
            [key, ..] => return Err(unexpected_line(key, &line, path)),
        }
    }
    let Some(enc) = enc else {
        return Err(Error::format(path, "header", "missing format line"));
    };
    Ok(Header {
        enc,
        elements,
        data_start: lines.pos,
    })
}

/// The encoding of a `format ENCODING VERSION` line.
fn encoding_of(enc: &str, version: &str, path: &Path) -> Result<Enc> {
    let enc = match enc {
        "ascii" => Enc::Ascii,
        "binary_little_endian" => Enc::Little,
        "binary_big_endian" => Enc::Big,
        other => {
            return Err(Error::unsupported(
                path,
                format!(
                    "ply format {other:?}; expected ascii, binary_little_endian or binary_big_endian"
                ),
            ));
        }
    };
    if !matches!(version, "1.0" | "1") {
        return Err(Error::unsupported(
            path,
            format!("ply version {version:?}; expected 1.0"),
        ));
    }
    Ok(enc)
}

/// An `element NAME COUNT` line, with no properties yet.
fn element_of(name: &str, count: &str, place: &str, path: &Path) -> Result<Element> {
    let count = count.parse::<usize>().map_err(|_| {
        Error::format(
            path,
            place,
            format!("element {name}: expected a count, found {count:?}"),
        )
    })?;
    Ok(Element {
        name: name.to_string(),
        count,
        props: Vec::new(),
    })
}

/// A `property list COUNT_TYPE ITEM_TYPE NAME` line.
fn list_property(ct: &str, it: &str, name: &str, place: &str, path: &Path) -> Result<Prop> {
    let (Some(ck), Some(ik)) = (kind_of(ct), kind_of(it)) else {
        return Err(Error::format(
            path,
            place,
            format!("property list {ct} {it}: expected known scalar types"),
        ));
    };
    if ck.is_float() {
        return Err(Error::format(
            path,
            place,
            "list length type must be an integer",
        ));
    }
    Ok(Prop {
        name: name.to_string(),
        kind: ik,
        list: Some(ck),
    })
}

/// A `property TYPE NAME` line.
fn scalar_property(t: &str, name: &str, place: &str, path: &Path) -> Result<Prop> {
    let Some(kind) = kind_of(t) else {
        return Err(Error::format(
            path,
            place,
            format!(
                "property type {t:?}; expected char, uchar, short, ushort, int, uint, float or double"
            ),
        ));
    };
    Ok(Prop {
        name: name.to_string(),
        kind,
        list: None,
    })
}

/// Adds a property to the element declared last.
fn add_property(elements: &mut [Element], prop: Prop, place: &str, path: &Path) -> Result<()> {
    let Some(e) = elements.last_mut() else {
        return Err(Error::format(path, place, "property before any element"));
    };
    e.props.push(prop);
    Ok(())
}

/// The error for a header line that is none of the known forms: a known keyword with the wrong number of
/// words (a line cut short) names the form it needs.
fn unexpected_line(key: &str, line: &HeaderLine, path: &Path) -> Error {
    let form = match key {
        "format" => "format ascii|binary_little_endian|binary_big_endian 1.0",
        "element" => "element NAME COUNT",
        "property" => "property TYPE NAME or property list COUNT_TYPE ITEM_TYPE NAME",
        _ => {
            return Error::format(
                path,
                &line.place,
                format!(
                    "expected format, comment, element, property or end_header, found {}",
                    quote(line.raw)
                ),
            );
        }
    };
    Error::format(
        path,
        &line.place,
        format!("expected `{form}`, found {}", quote(line.raw)),
    )
}

/// Parse a PLY buffer (see the module documentation for the property mapping).
pub fn read_bytes(data: &[u8], path: &Path, _opts: &ReadOptions) -> Result<Cloud> {
    let h = parse_header(data, path)?;
    let Some(vi) = h.elements.iter().position(|e| e.name == "vertex") else {
        return Err(Error::format(path, "header", "no vertex element"));
    };
    let vertex = &h.elements[vi];
    let n = vertex.count;
    let (positions, cols, warning) = if h.enc == Enc::Ascii {
        let cols = read_ascii(data, path, &h, vi)?;
        (None, cols, lines_after_elements(data, &h, path))
    } else {
        let be = h.enc == Enc::Big;
        let mut pos = h.data_start;
        for e in &h.elements[..vi] {
            pos = walk(data, pos, e, be, None, path)?;
        }
        let (positions, cols) = read_binary_vertex(data, pos, vertex, be, path)?;
        (
            positions,
            cols,
            bytes_after_elements(data, pos, &h, vi, be, path),
        )
    };
    let mut cloud = assemble(path, positions, cols, n)?;
    cloud.meta.format = Some(format!("PLY {} 1.0", h.enc.name()));
    cloud.meta.read_warnings.extend(warning);
    Ok(cloud)
}

/// The warning for bytes left after every element of a binary file (from the vertex element at `pos`), when they
/// could hold another vertex. Elements after the vertex that run past the end are left to other tools, as
/// before: the vertices were read.
fn bytes_after_elements(
    data: &[u8],
    mut pos: usize,
    h: &Header,
    vi: usize,
    be: bool,
    path: &Path,
) -> Option<String> {
    for e in h.elements.get(vi..).unwrap_or_default() {
        pos = walk(data, pos, e, be, None, path).ok()?;
    }
    let vertex = h.elements.get(vi)?;
    let record: usize = vertex.props.iter().map(|p| p.kind.size()).sum();
    data_after_points(path, vertex.count, record, data.len().saturating_sub(pos))
}

/// The warning for non-blank lines left after every element of an ASCII file.
fn lines_after_elements(data: &[u8], h: &Header, path: &Path) -> Option<String> {
    let mut pos = h.data_start;
    for e in &h.elements {
        pos = skip_lines(data, pos, e.count)?;
    }
    let left = lines(data.get(pos..).unwrap_or_default())
        .filter(|l| l.iter().any(|b| !b.is_ascii_whitespace()))
        .count();
    let n = h.elements.iter().find(|e| e.name == "vertex")?.count;
    (left > 0).then(|| {
        format!(
            "{}: {left} lines follow the elements the header declares ({n} points); only the declared points \
             were read: is the header's point count right?",
            path.display()
        )
    })
}

fn columns_for(props: &[&Prop]) -> Vec<Column> {
    props
        .iter()
        .map(|p| Column {
            name: p.name.clone(),
            target: target_for(&p.name),
            kind: p.kind,
            values: Vec::new(),
        })
        .collect()
}

/// Step over the instances of a binary element starting at `pos`, returning the position after them. With
/// `compact`, the scalar properties of each instance are appended to it (lists dropped).
fn walk(
    data: &[u8],
    mut pos: usize,
    e: &Element,
    be: bool,
    mut compact: Option<&mut Vec<u8>>,
    path: &Path,
) -> Result<usize> {
    let short = |at: usize| {
        Error::format(
            path,
            format!("byte {at}"),
            format!(
                "element {} (count {}) runs past the end of the file ({} bytes)",
                e.name,
                e.count,
                data.len()
            ),
        )
    };
    if e.props.is_empty() {
        return Ok(pos);
    }
    if e.props.iter().all(|p| p.list.is_none()) {
        let rec: usize = e.props.iter().map(|p| p.kind.size()).sum();
        let end = e
            .count
            .checked_mul(rec)
            .and_then(|b| b.checked_add(pos))
            .filter(|&end| end <= data.len())
            .ok_or_else(|| short(pos))?;
        if let Some(c) = compact {
            c.extend_from_slice(data.get(pos..end).unwrap_or_default());
        }
        return Ok(end);
    }
    // Every instance takes at least one byte, so this loop ends within the file's length.
    for _ in 0..e.count {
        for p in &e.props {
            match p.list {
                None => {
                    let s = p.kind.size();
                    let b = data.get(pos..pos + s).ok_or_else(|| short(pos))?;
                    if let Some(c) = compact.as_deref_mut() {
                        c.extend_from_slice(b);
                    }
                    pos += s;
                }
                Some(ck) => {
                    let len = data
                        .get(pos..)
                        .and_then(|b| read_scalar(b, ck, be))
                        .ok_or_else(|| short(pos))?;
                    if len < 0.0 {
                        return Err(Error::format(
                            path,
                            format!("byte {pos}"),
                            format!("list {} has negative length {len}", p.name),
                        ));
                    }
                    pos = (len as usize)
                        .checked_mul(p.kind.size())
                        .and_then(|b| b.checked_add(pos + ck.size()))
                        .filter(|&end| end <= data.len())
                        .ok_or_else(|| short(pos))?;
                }
            }
        }
    }
    Ok(pos)
}

fn read_binary_vertex(
    data: &[u8],
    pos: usize,
    vertex: &Element,
    be: bool,
    path: &Path,
) -> Result<(Option<Positions>, Vec<Column>)> {
    let n = vertex.count;
    let scalars: Vec<&Prop> = vertex.props.iter().filter(|p| p.list.is_none()).collect();
    let rec: usize = scalars.iter().map(|p| p.kind.size()).sum();
    let compacted;
    let (buf, base) = if scalars.len() == vertex.props.len() {
        // Bounds check (count * record against the bytes present) before any allocation.
        walk(data, pos, vertex, be, None, path)?;
        (data, pos)
    } else {
        let end = walk(data, pos, vertex, be, None, path)?;
        // The walk proved that all `n` instances are present, so this allocation is backed by the file.
        let mut c = Vec::with_capacity(n.saturating_mul(rec).min(end - pos));
        walk(data, pos, vertex, be, Some(&mut c), path)?;
        compacted = c;
        (compacted.as_slice(), 0)
    };
    let mut cols = columns_for(&scalars);
    let offsets: Vec<usize> = scalars
        .iter()
        .scan(0, |off, p| {
            let at = *off;
            *off += p.kind.size();
            Some(at)
        })
        .collect();
    // x, y and z go straight into positions (the first property of each name; later ones become extras).
    let coord = |t: Target| cols.iter().position(|c| c.target == t);
    let mut positions = None;
    if let (Some(ix), Some(iy), Some(iz)) = (coord(Target::X), coord(Target::Y), coord(Target::Z)) {
        let field = |i: usize| CoordField {
            off: offsets[i],
            kind: scalars[i].kind,
            name: &scalars[i].name,
        };
        let xyz = [field(ix), field(iy), field(iz)];
        positions = Some(decode_positions(buf, path, n, (base, rec), &xyz, be)?);
        for i in [ix, iy, iz] {
            cols[i].target = Target::Skip;
        }
    }
    for ((c, p), &off) in cols.iter_mut().zip(&scalars).zip(&offsets) {
        if c.target == Target::Skip {
            continue;
        }
        c.values = decode_column(buf, n, base, rec, off, p.kind, be, false).ok_or_else(|| {
            Error::format(
                path,
                format!("property {}", p.name),
                "values run past the end of the file",
            )
        })?;
    }
    Ok((positions, cols))
}

/// Byte position after `count` non-blank lines from `pos`, or `None` when the text ends first.
fn skip_lines(data: &[u8], pos: usize, count: usize) -> Option<usize> {
    let mut p = pos;
    let mut left = count;
    while left > 0 {
        let rest = data.get(p..)?;
        if rest.is_empty() {
            return None;
        }
        let len = rest.iter().position(|&b| b == b'\n');
        let line = &rest[..len.unwrap_or(rest.len())];
        if line.iter().any(|b| !b.is_ascii_whitespace()) {
            left -= 1;
        }
        p += len.map_or(rest.len(), |l| l + 1);
    }
    Some(p)
}

/// An ASCII PLY value as [`write_value`] writes it, but an infinity (a point's plane thickness where it has no
/// plane) as its type's largest finite value: RPly, the PLY reader of Open3D and CloudCompare, refuses a whole
/// file at the first `inf`. [`from_ascii_extreme`] reads it back as the infinity.
fn write_ascii_value(s: &mut String, f: &OutField, v: f64) {
    let v = match f.kind {
        ScalarKind::F32 if v.is_infinite() => v.signum() * f64::from(f32::MAX),
        ScalarKind::F64 if v.is_infinite() => v.signum() * f64::MAX,
        _ => v,
    };
    write_value(s, f, v);
}

/// An ASCII PLY float property at its type's largest magnitude is the infinity [`write_ascii_value`] wrote.
fn from_ascii_extreme(v: f64, kind: ScalarKind) -> f64 {
    match kind {
        ScalarKind::F32 if v.abs() == f64::from(f32::MAX) => v.signum() * f64::INFINITY,
        ScalarKind::F64 if v.abs() == f64::MAX => v.signum() * f64::INFINITY,
        _ => v,
    }
}

fn read_ascii(data: &[u8], path: &Path, h: &Header, vi: usize) -> Result<Vec<Column>> {
    let mut pos = h.data_start;
    for e in &h.elements[..vi] {
        pos = skip_lines(data, pos, e.count).ok_or_else(|| {
            Error::format(
                path,
                format!("element {}", e.name),
                format!("expected {} lines, the file ends first", e.count),
            )
        })?;
    }
    let vertex = &h.elements[vi];
    let n = vertex.count;
    let end = skip_lines(data, pos, n).ok_or_else(|| {
        let found = lines(data.get(pos..).unwrap_or_default())
            .filter(|l| l.iter().any(|b| !b.is_ascii_whitespace()))
            .count();
        Error::format(
            path,
            "element vertex",
            format!("expected {n} vertex lines, found {found}"),
        )
    })?;
    let region = data.get(pos..end).unwrap_or_default();
    let scalars: Vec<&Prop> = vertex.props.iter().filter(|p| p.list.is_none()).collect();
    let props = &vertex.props;
    let rows = parse_rows(region, scalars.len(), |line, cols| {
        let mut toks = line
            .split(u8::is_ascii_whitespace)
            .filter(|t| !t.is_empty());
        let mut c = 0usize;
        let mut any = false;
        for (k, p) in props.iter().enumerate() {
            let Some(tok) = toks.next() else {
                if !any {
                    return Ok(()); // blank line
                }
                return Err(format!("property {} (column {}): missing", p.name, k + 1));
            };
            any = true;
            let Some(v) = parse_num(tok) else {
                return Err(format!(
                    "property {} (column {}): expected a number, found {}",
                    p.name,
                    k + 1,
                    quote(tok)
                ));
            };
            if p.list.is_some() {
                if v < 0.0 || v.fract() != 0.0 {
                    return Err(format!("list {}: bad length {}", p.name, quote(tok)));
                }
                for _ in 0..v as usize {
                    if toks.next().is_none() {
                        return Err(format!("list {}: fewer items than its length", p.name));
                    }
                }
            } else {
                let Some(v) = as_kind(v, p.kind) else {
                    return Err(format!(
                        "property {} (column {}): {} does not fit its type {}",
                        p.name,
                        k + 1,
                        quote(tok),
                        type_name(p.kind)
                    ));
                };
                if let Some(col) = cols.get_mut(c) {
                    col.push(from_ascii_extreme(v, p.kind));
                }
                c += 1;
            }
        }
        if toks.next().is_some() {
            return Err(format!("expected {} values, found more", props.len()));
        }
        Ok(())
    })
    .map_err(|(line, m)| {
        let before = data
            .get(..pos)
            .unwrap_or_default()
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        Error::format(path, format!("line {}", before + line + 1), m)
    })?;
    let mut cols = columns_for(&scalars);
    for (c, v) in cols.iter_mut().zip(rows) {
        c.values = v;
    }
    // A vertex element without scalar properties still fails in assemble (no x y z).
    if cols.iter().any(|c| c.values.len() != n) {
        return Err(Error::format(
            path,
            "element vertex",
            format!("expected {n} vertex lines"),
        ));
    }
    Ok(cols)
}

/// Write `cloud` as PLY (see the module documentation). `opts.encoding`: `Binary` (little endian, the
/// default), `BinaryBigEndian` or `Ascii`; `Compressed` is refused.
pub fn write(cloud: &Cloud, path: &Path, opts: &WriteOptions) -> Result<()> {
    let enc = match opts.encoding {
        None | Some(Encoding::Binary) => Enc::Little,
        Some(Encoding::BinaryBigEndian) => Enc::Big,
        Some(Encoding::Ascii) => Enc::Ascii,
        Some(Encoding::Compressed) => {
            return Err(Error::parameter(
                "encoding",
                "ply has no compressed encoding; use binary, big endian or ascii",
            ));
        }
    };
    let mut fields = out_fields(cloud, opts, Style::Ply);
    for f in &mut fields {
        if matches!(f.kind, ScalarKind::U64 | ScalarKind::I64) {
            f.kind = ScalarKind::F64;
        }
    }
    let mut header = format!(
        "ply\nformat {} 1.0\ncomment written by aerie\nelement vertex {}\n",
        enc.name(),
        cloud.len()
    );
    for f in &fields {
        header.push_str(&format!("property {} {}\n", type_name(f.kind), f.name));
    }
    header.push_str("end_header\n");
    let body = match enc {
        Enc::Ascii => encode_text(cloud, &fields, ' ', write_ascii_value),
        Enc::Little => encode_rows(cloud, &fields, false),
        Enc::Big => encode_rows(cloud, &fields, true),
    };
    write_atomic_buffered(path, |w| {
        w.write_all(header.as_bytes()).map_err(io_err(path))?;
        w.write_all(&body).map_err(io_err(path))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8]) -> Result<Cloud> {
        read_bytes(text, Path::new("t.ply"), &ReadOptions::default())
    }

    /// A header line cut short names the form it should have, not the keyword it starts with as unknown.
    #[test]
    fn a_header_line_cut_short_says_what_it_needs() {
        for (text, want) in [
            (
                "ply\nformat\n",
                "line 2: expected `format ascii|binary_little_endian",
            ),
            (
                "ply\nformat ascii 1.0\nelement vertex\n",
                "expected `element NAME COUNT`",
            ),
        ] {
            let e = read_bytes(text.as_bytes(), Path::new("t.ply"), &ReadOptions::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    /// Every way a header can be wrong is told with its place and what was expected.
    #[test]
    fn each_header_error_names_its_place_and_what_was_expected() {
        let v = "ply\nformat ascii 1.0\nelement vertex 1\n";
        for (text, want) in [
            ("", "byte 0: header ended without end_header".to_string()),
            (
                "plx\nformat ascii 1.0\n",
                "byte 0: expected the magic line \"ply\", found \"plx\"".into(),
            ),
            (v, "byte 38: header ended without end_header".into()),
            (
                "ply\nformat binary_middle_endian 1.0\nend_header\n",
                "ply format \"binary_middle_endian\"; expected ascii, binary_little_endian".into(),
            ),
            (
                "ply\nformat ascii 2.0\nend_header\n",
                "ply version \"2.0\"; expected 1.0".into(),
            ),
            (
                "ply\nformat ascii 1.0\nelement vertex many\nend_header\n",
                "header line 3: element vertex: expected a count, found \"many\"".into(),
            ),
            (
                &format!("{v}property list uchar quad idx\nend_header\n"),
                "header line 4: property list uchar quad: expected known scalar types".into(),
            ),
            (
                &format!("{v}property list float int idx\nend_header\n"),
                "header line 4: list length type must be an integer".into(),
            ),
            (
                &format!("{v}property real x\nend_header\n"),
                "header line 4: property type \"real\"; expected char, uchar".into(),
            ),
            (
                &format!("{v}property list x\nend_header\n"),
                "header line 4: property type \"list\"".into(),
            ),
            (
                "ply\nformat ascii 1.0\nproperty float x\nend_header\n",
                "header line 3: property before any element".into(),
            ),
            (
                "ply\nformat ascii 1.0\nvertices 3\nend_header\n",
                "header line 3: expected format, comment, element, property or end_header, found \"vertices 3\""
                    .into(),
            ),
            (
                &format!("{v}property float x y z\nend_header\n"),
                "header line 4: expected `property TYPE NAME or property list COUNT_TYPE ITEM_TYPE NAME`".into(),
            ),
            (
                "ply\nelement vertex 1\nproperty float x\nend_header\n",
                "header: missing format line".into(),
            ),
        ] {
            let e = read(text.as_bytes()).unwrap_err().to_string();
            assert!(e.contains(&want), "{text:?}: {e}");
        }
        let e = read(b"ply\nformat ascii 1.0\ncomment \xff\nend_header\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("header line 3: expected a text header line"),
            "{e}"
        );
    }

    #[test]
    fn ascii_with_faces_before_and_colour() {
        let text =
            b"ply\nformat ascii 1.0\nelement face 2\nproperty list uchar int vertex_indices\n\
                     element vertex 2\nproperty float x\nproperty float y\nproperty float z\n\
                     property uchar red\nproperty uchar green\nproperty uchar blue\n\
                     property list uchar float junk\nproperty float scalar_Intensity\nend_header\n\
                     3 0 1 2\n0\n1 2 3 255 0 1 2 0.5 0.5 7\n4 5 6 0 0 0 0 8\n";
        let c = read(text).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c.color().unwrap()[0], [65535, 0, 257]);
        assert_eq!(c.intensity().unwrap(), &vec![7.0, 8.0]);
        assert_eq!(c.positions()[1], [4.0, 5.0, 6.0]);
        // A value its declared type cannot hold is an error, not a clamp: `300` for a uchar, `2.5` likewise.
        for bad in ["300", "2.5", "-1"] {
            let t =
                String::from_utf8_lossy(text).replace("4 5 6 0 0 0", &format!("4 5 6 0 {bad} 0"));
            let e = read(t.as_bytes()).unwrap_err().to_string();
            assert!(
                e.contains("line 18") && e.contains("property green") && e.contains("uchar"),
                "{bad}: {e}"
            );
        }
    }

    /// A plane thickness of +inf (no plane) is written as FLT_MAX, which RPly accepts where it refuses `inf`, and
    /// read back as +inf.
    #[test]
    fn ascii_infinities_are_written_as_the_largest_float() {
        let dir = tempfile::tempdir().unwrap();
        let cols = crate::Columns {
            positions: vec![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
            gamma: Some(vec![0.01, f32::INFINITY]),
            ..crate::Columns::default()
        };
        let cloud = Cloud::from_columns([0.0; 3], cols).unwrap();
        let out = dir.path().join("g.ply");
        let ascii = WriteOptions {
            encoding: Some(Encoding::Ascii),
            ..WriteOptions::default()
        };
        crate::io::write(&cloud, &out, None, &ascii).unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(!text.contains("inf"), "{text}");
        let back = crate::io::read(&out, None, &ReadOptions::default()).unwrap();
        assert_eq!(back.gamma(), Some(&[0.01, f32::INFINITY][..]));
    }

    #[test]
    fn binary_with_lists_in_the_vertex_and_faces_first() {
        let mut d = b"ply\nformat binary_big_endian 1.0\nelement face 1\nproperty list uchar int idx\n\
                      element vertex 2\nproperty list uchar uchar junk\nproperty double x\nproperty float y\n\
                      property float z\nproperty ushort ring\nend_header\n"
            .to_vec();
        d.extend_from_slice(&[2, 0, 0, 0, 1, 0, 0, 0, 2]);
        for i in 0..2u8 {
            d.push(i);
            d.extend(std::iter::repeat_n(9u8, i as usize));
            d.extend_from_slice(&(100_000.5f64 + i as f64).to_be_bytes());
            d.extend_from_slice(&2.0f32.to_be_bytes());
            d.extend_from_slice(&3.0f32.to_be_bytes());
            d.extend_from_slice(&(7u16 + i as u16).to_be_bytes());
        }
        let c = read(&d).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c.world(1), [100_001.5, 2.0, 3.0]);
        assert_eq!(c.ring(), Some(&[7, 8][..]));
        assert!(read(&d[..d.len() - 1]).is_err());
    }

    #[test]
    fn binary_positions_name_a_bad_point_and_keep_a_second_x() {
        let header = b"ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\n\
                       property float y\nproperty float z\nproperty float x\nend_header\n";
        let mut d = header.to_vec();
        for i in 0..3 {
            for v in [i as f32, 1.0, 2.0, 10.0 + i as f32] {
                d.extend_from_slice(&v.to_le_bytes());
            }
        }
        let c = read(&d).unwrap();
        assert_eq!(
            c.positions(),
            vec![[0.0, 1.0, 2.0], [1.0, 1.0, 2.0], [2.0, 1.0, 2.0]]
        );
        assert_eq!(c.extras().len(), 1);
        assert_eq!(c.extras()[0].values.to_f64(), vec![10.0, 11.0, 12.0]);
        // Point 1's y is NaN: the error names the point and the field.
        let at = header.len() + 16 + 4;
        d[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        let e = read(&d).unwrap_err().to_string();
        assert!(e.contains("point 1") && e.contains("y is NaN"), "{e}");
    }
}
