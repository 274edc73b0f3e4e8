//! A minimal CDR (XCDR1, little endian) writer: what ROS 2 puts in every message of a bag.
//!
//! Hand-written on purpose: the maintained serde-CDR crates (`cdr`, `cdr-encoding`) need a serde type per ROS
//! message and still leave the encapsulation header and the fixed-size-array layout to the caller; the four
//! message types recorded here are a few dozen lines each with this writer, and the tests decode every byte
//! with an independent reader. Rules: a 4-byte encapsulation header (`00 01 00 00`: CDR little endian); each
//! primitive aligned to its size relative to the end of that header; strings as a u32 length including the
//! terminating NUL, then the bytes and the NUL; sequences as a u32 count then the elements; fixed arrays as
//! the bare elements.

/// A CDR message being written.
pub struct Cdr {
    buf: Vec<u8>,
}

impl Default for Cdr {
    fn default() -> Self {
        Cdr::new()
    }
}

impl Cdr {
    /// An empty message: just the encapsulation header.
    pub fn new() -> Cdr {
        Cdr {
            buf: vec![0x00, 0x01, 0x00, 0x00],
        }
    }

    fn align(&mut self, n: usize) {
        let pos = self.buf.len() - 4;
        let pad = (n - pos % n) % n;
        self.buf.extend(std::iter::repeat_n(0u8, pad));
    }

    /// A `uint8` (no alignment).
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// A `bool`, one byte 0 or 1.
    pub fn bool(&mut self, v: bool) {
        self.buf.push(v as u8);
    }

    /// A `uint32`, aligned to 4 bytes.
    pub fn u32(&mut self, v: u32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// An `int32`, aligned to 4 bytes.
    pub fn i32(&mut self, v: i32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A `float64`, aligned to 8 bytes.
    pub fn f64(&mut self, v: f64) {
        self.align(8);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A `string`: u32 length including the NUL, the bytes, the NUL.
    pub fn string(&mut self, s: &str) {
        self.u32(s.len() as u32 + 1);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }

    /// A `uint8[]` sequence.
    pub fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.buf.extend_from_slice(b);
    }

    /// The message's bytes, header included.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}
