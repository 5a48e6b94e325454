use serde::{Deserialize, Serialize};

use crate::Precision;

/// Everything that shapes the vectors an [`Embedder`](crate::Embedder) produces.
///
/// Store it next to the vectors and refuse to mix vectors whose fingerprints differ: two models
/// (or the same model with a different pooling, length cap or prefix) live in different spaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFingerprint {
    /// Model name, from the folder name (or the repository name for a Hugging Face cache folder).
    pub name: String,
    /// blake3 of `model.safetensors`, hex.
    pub weights_blake3: String,
    /// Vector dimension.
    pub dim: usize,
    /// Pooling mode: `mean`, `cls`, `max` or `mean_sqrt_len`.
    pub pooling: String,
    /// Whether vectors are L2-normalised (always true for this crate).
    pub normalize: bool,
    /// Tokens per text, including special tokens, after which text is cut off.
    pub max_seq_len: usize,
    /// Prefix added to queries (E5's `query: `); empty when unset.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub query_prefix: String,
    /// Prefix added to documents (E5's `passage: `); empty when unset.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub passage_prefix: String,
    /// Arithmetic of the linear layers. Left out of the serialised form and of [`id`](Self::id)
    /// when f32, so fingerprints written before int8 existed still match.
    #[serde(default, skip_serializing_if = "is_f32", with = "precision_name")]
    pub precision: Precision,
}

fn is_f32(p: &Precision) -> bool {
    *p == Precision::F32
}

/// Serialises [`Precision`] as its `f32`/`int8` name.
mod precision_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::Precision;

    pub(super) fn serialize<S: Serializer>(p: &Precision, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Precision, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl ModelFingerprint {
    /// One stable string that changes whenever any field changes, for quick equality checks
    /// and log lines, e.g. `all-MiniLM-L6-v2@53aa5117…;dim=384;pool=mean;norm=1;max=256`.
    ///
    /// The weights hash is cut to 16 hex digits (64 bits), plenty to tell models apart.
    pub fn id(&self) -> String {
        let hash = self
            .weights_blake3
            .get(..16)
            .unwrap_or(&self.weights_blake3);
        let mut id = format!(
            "{}@{};dim={};pool={};norm={};max={}",
            self.name,
            hash,
            self.dim,
            self.pooling,
            u8::from(self.normalize),
            self.max_seq_len
        );
        // Debug-quoting keeps trailing spaces ("query: ") visible and unambiguous.
        if !self.query_prefix.is_empty() {
            id.push_str(&format!(";query_prefix={:?}", self.query_prefix));
        }
        if !self.passage_prefix.is_empty() {
            id.push_str(&format!(";passage_prefix={:?}", self.passage_prefix));
        }
        // Appended only when not f32, so every f32 id stays what it was before int8 existed.
        if self.precision != Precision::F32 {
            id.push_str(&format!(";precision={}", self.precision));
        }
        id
    }
}
