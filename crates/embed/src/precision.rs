//! Which arithmetic the encoder's linear layers use.

use std::fmt;
use std::str::FromStr;

use crate::EmbedError;

/// Arithmetic of the encoder's linear layers (Q/K/V, attention output, feed-forward).
///
/// Attention scores, softmax, layer norm, GELU and pooling are f32 in every mode. The
/// precision changes the vectors (slightly), so it is part of the
/// [`ModelFingerprint`](crate::ModelFingerprint): an index built in one precision refuses an
/// embedder of the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Precision {
    /// f32 everywhere: the vectors sentence-transformers gives (cosine ≥ 0.9999999).
    #[default]
    F32,
    /// Weights quantised to i8 per output channel at load, activations to i8 per token on
    /// every call, integer products with i32 accumulation (AVX2 where the CPU has it).
    Int8,
}

impl Precision {
    /// The spelling [`FromStr`] accepts and fingerprints record: `f32` or `int8`.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Int8 => "int8",
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Precision {
    type Err = EmbedError;

    /// Accepts `f32` and `int8`, ignoring ASCII case and surrounding whitespace.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "f32" => Ok(Precision::F32),
            "int8" => Ok(Precision::Int8),
            _ => Err(EmbedError::InvalidSetting(format!(
                "precision {s:?} is not one of \"f32\", \"int8\""
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_spellings_and_refuses_others() {
        assert_eq!("f32".parse::<Precision>().unwrap(), Precision::F32);
        assert_eq!(" INT8 ".parse::<Precision>().unwrap(), Precision::Int8);
        for p in [Precision::F32, Precision::Int8] {
            assert_eq!(p.to_string().parse::<Precision>().unwrap(), p);
        }
        for bad in ["", "fp32", "i8", "int4", "f16"] {
            let err = bad.parse::<Precision>().unwrap_err();
            assert!(
                matches!(err, EmbedError::InvalidSetting(_)),
                "{bad:?}: {err}"
            );
        }
        assert_eq!(Precision::default(), Precision::F32);
    }
}
