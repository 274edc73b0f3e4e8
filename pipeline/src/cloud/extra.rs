//! Extra dimensions: the per-point columns a cloud holds at the width its source stored them, and their kinds.

use serde::{Deserialize, Serialize};

use super::PointIndex;

/// A named per-point dimension we do not model specially, held at the width the source stored it (a LAS scan
/// angle or user data costs 1 byte per point, not 8). The storage is the kind: [`ExtraDim::kind`] is read off
/// [`ExtraValues`]' variant, so the two cannot disagree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExtraDim {
    /// The dimension's name as the source spelled it (a PLY property, a PCD field, a LAS extra-bytes name); writers
    /// keep it.
    pub name: String,
    /// One value per point, parallel to the cloud's positions, at the stored width.
    pub values: ExtraValues,
}

impl ExtraDim {
    /// A dimension holding `values` (a typed `Vec`, or an [`ExtraValues`]).
    pub fn new(name: impl Into<String>, values: impl Into<ExtraValues>) -> ExtraDim {
        ExtraDim {
            name: name.into(),
            values: values.into(),
        }
    }

    /// A dimension of `kind` from f64 values, each converted as [`ExtraValues::from_f64`] says.
    pub fn from_f64(name: impl Into<String>, kind: ScalarKind, values: &[f64]) -> ExtraDim {
        ExtraDim::new(name, ExtraValues::from_f64(kind, values))
    }

    /// How the values are stored (and how writers store them).
    pub fn kind(&self) -> ScalarKind {
        self.values.kind()
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// The values of an extra dimension, one `Vec` of the stored type. Every integer and f32 converts to f64
/// exactly; 64-bit integers beyond 2^53 round when read as f64 ([`ExtraValues::get`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExtraValues {
    /// Stored as `u8`.
    U8(Vec<u8>),
    /// Stored as `i8`.
    I8(Vec<i8>),
    /// Stored as `u16`.
    U16(Vec<u16>),
    /// Stored as `i16`.
    I16(Vec<i16>),
    /// Stored as `u32`.
    U32(Vec<u32>),
    /// Stored as `i32`.
    I32(Vec<i32>),
    /// Stored as `u64`.
    U64(Vec<u64>),
    /// Stored as `i64`.
    I64(Vec<i64>),
    /// Stored as `f32`.
    F32(Vec<f32>),
    /// Stored as `f64`.
    F64(Vec<f64>),
}

/// Run `$body` with `$v` bound to the `Vec` inside `$values`, whatever its type.
macro_rules! each_kind {
    ($values:expr, $v:ident => $body:expr) => {
        match $values {
            ExtraValues::U8($v) => $body,
            ExtraValues::I8($v) => $body,
            ExtraValues::U16($v) => $body,
            ExtraValues::I16($v) => $body,
            ExtraValues::U32($v) => $body,
            ExtraValues::I32($v) => $body,
            ExtraValues::U64($v) => $body,
            ExtraValues::I64($v) => $body,
            ExtraValues::F32($v) => $body,
            ExtraValues::F64($v) => $body,
        }
    };
}
pub(super) use each_kind;

/// Build the variant of `$kind` from `$make`, an expression generic over the element type `$t`.
macro_rules! of_kind {
    ($kind:expr, $t:ident => $make:expr) => {
        match $kind {
            ScalarKind::U8 => ExtraValues::U8({
                type $t = u8;
                $make
            }),
            ScalarKind::I8 => ExtraValues::I8({
                type $t = i8;
                $make
            }),
            ScalarKind::U16 => ExtraValues::U16({
                type $t = u16;
                $make
            }),
            ScalarKind::I16 => ExtraValues::I16({
                type $t = i16;
                $make
            }),
            ScalarKind::U32 => ExtraValues::U32({
                type $t = u32;
                $make
            }),
            ScalarKind::I32 => ExtraValues::I32({
                type $t = i32;
                $make
            }),
            ScalarKind::U64 => ExtraValues::U64({
                type $t = u64;
                $make
            }),
            ScalarKind::I64 => ExtraValues::I64({
                type $t = i64;
                $make
            }),
            ScalarKind::F32 => ExtraValues::F32({
                type $t = f32;
                $make
            }),
            ScalarKind::F64 => ExtraValues::F64({
                type $t = f64;
                $make
            }),
        }
    };
}

/// A scalar type an extra dimension can hold: converts to and from f64 the way `as` does (saturating, integers
/// dropping the fraction, NaN to 0).
pub trait ExtraScalar: Copy + Default + Send + Sync + 'static {
    /// The value as f64 (exact except for 64-bit integers beyond 2^53).
    fn to_f64(self) -> f64;
    /// `v` converted as `as` converts.
    fn from_f64(v: f64) -> Self;
}

macro_rules! extra_scalar {
    ($($t:ty => $variant:ident),*) => {$(
        impl ExtraScalar for $t {
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
        }
        impl From<Vec<$t>> for ExtraValues {
            fn from(v: Vec<$t>) -> ExtraValues {
                ExtraValues::$variant(v)
            }
        }
    )*};
}
extra_scalar!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32, u64 => U64, i64 => I64,
    f32 => F32, f64 => F64);

impl ExtraValues {
    /// The storage type.
    pub fn kind(&self) -> ScalarKind {
        match self {
            ExtraValues::U8(_) => ScalarKind::U8,
            ExtraValues::I8(_) => ScalarKind::I8,
            ExtraValues::U16(_) => ScalarKind::U16,
            ExtraValues::I16(_) => ScalarKind::I16,
            ExtraValues::U32(_) => ScalarKind::U32,
            ExtraValues::I32(_) => ScalarKind::I32,
            ExtraValues::U64(_) => ScalarKind::U64,
            ExtraValues::I64(_) => ScalarKind::I64,
            ExtraValues::F32(_) => ScalarKind::F32,
            ExtraValues::F64(_) => ScalarKind::F64,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        each_kind!(self, v => v.len())
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i` as f64, or `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<f64> {
        each_kind!(self, v => v.get(i).map(|x| x.to_f64()))
    }

    /// Every value as f64, in order.
    pub fn to_f64(&self) -> Vec<f64> {
        each_kind!(self, v => v.iter().map(|x| x.to_f64()).collect())
    }

    /// `kind` values converted from `values` as `as` converts (integers saturate and drop the fraction, NaN
    /// becomes 0; f32 rounds to nearest). Exact for values the kind can hold.
    pub fn from_f64(kind: ScalarKind, values: &[f64]) -> ExtraValues {
        of_kind!(kind, T => values.iter().map(|&x| <T as ExtraScalar>::from_f64(x)).collect())
    }

    /// `n` zeros of `kind`.
    pub fn zeros(kind: ScalarKind, n: usize) -> ExtraValues {
        of_kind!(kind, T => vec![T::default(); n])
    }

    /// The values at `indices`, in that order (panics on an index past the end, as slice indexing does).
    pub fn select<I: PointIndex>(&self, indices: &[I]) -> ExtraValues {
        each_kind!(self, v => indices.iter().map(|&i| v[i.at()]).collect::<Vec<_>>().into())
    }

    /// Append `other`'s values. When the kinds differ, both are first widened to the smallest kind that holds
    /// every value of either exactly ([`ScalarKind::common`]).
    pub fn extend(&mut self, other: &ExtraValues) {
        let kind = self.kind().common(other.kind());
        if kind != self.kind() {
            *self = ExtraValues::from_f64(kind, &self.to_f64());
        }
        fn push_all<T: ExtraScalar>(v: &mut Vec<T>, other: &ExtraValues) {
            v.extend((0..other.len()).map(|i| T::from_f64(other.get(i).unwrap_or(0.0))));
        }
        macro_rules! join {
            ($($variant:ident),*) => {
                match self {
                    $(ExtraValues::$variant(v) => match other {
                        ExtraValues::$variant(o) => v.extend_from_slice(o),
                        o => push_all(v, o),
                    },)*
                }
            };
        }
        join!(U8, I8, U16, I16, U32, I32, U64, I64, F32, F64);
    }
}

/// Storage type of a scalar field in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScalarKind {
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 8-bit integer.
    I8,
    /// Unsigned 16-bit integer.
    U16,
    /// Signed 16-bit integer.
    I16,
    /// Unsigned 32-bit integer.
    U32,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 64-bit integer (exact only up to 2^53 when read as f64).
    U64,
    /// Signed 64-bit integer (exact only up to 2^53 in magnitude when read as f64).
    I64,
    /// 32-bit IEEE float.
    F32,
    /// 64-bit IEEE float.
    F64,
}

impl ScalarKind {
    /// The type's Rust name (`u8`, `f32`), as messages show it.
    pub fn name(self) -> &'static str {
        match self {
            ScalarKind::U8 => "u8",
            ScalarKind::I8 => "i8",
            ScalarKind::U16 => "u16",
            ScalarKind::I16 => "i16",
            ScalarKind::U32 => "u32",
            ScalarKind::I32 => "i32",
            ScalarKind::U64 => "u64",
            ScalarKind::I64 => "i64",
            ScalarKind::F32 => "f32",
            ScalarKind::F64 => "f64",
        }
    }

    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            ScalarKind::U8 | ScalarKind::I8 => 1,
            ScalarKind::U16 | ScalarKind::I16 => 2,
            ScalarKind::U32 | ScalarKind::I32 | ScalarKind::F32 => 4,
            ScalarKind::U64 | ScalarKind::I64 | ScalarKind::F64 => 8,
        }
    }

    /// Whether the kind is a floating-point type: the centroid downsampler averages float dimensions but takes
    /// integer ones from one point, and a PLY list length must not be a float.
    pub fn is_float(self) -> bool {
        matches!(self, ScalarKind::F32 | ScalarKind::F64)
    }

    fn is_signed(self) -> bool {
        matches!(
            self,
            ScalarKind::I8 | ScalarKind::I16 | ScalarKind::I32 | ScalarKind::I64
        )
    }

    /// Whether every value of `other` is a value of `self` (64-bit integers count as held by f64, where they
    /// lived before extra dimensions were typed).
    pub fn holds(self, other: ScalarKind) -> bool {
        let (bits, other_bits) = (8 * self.size(), 8 * other.size());
        match (self.is_float(), other.is_float()) {
            (true, true) => bits >= other_bits,
            (false, true) => false,
            // An f32 holds integers of up to 24 bits, an f64 all of them (exactly up to 53).
            (true, false) => self == ScalarKind::F64 || other_bits <= 16,
            (false, false) => match (self.is_signed(), other.is_signed()) {
                (false, true) => false,
                (true, false) => bits > other_bits,
                _ => bits >= other_bits,
            },
        }
    }

    /// The smallest kind that holds every value of `self` and of `other`.
    pub fn common(self, other: ScalarKind) -> ScalarKind {
        use ScalarKind::*;
        [U8, I8, U16, I16, U32, I32, F32, U64, I64, F64]
            .into_iter()
            .find(|k| k.holds(self) && k.holds(other))
            .unwrap_or(F64)
    }
}
