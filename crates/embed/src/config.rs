//! Reading a sentence-transformers model folder: which files, which settings.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::EmbedError;

/// How token vectors become one text vector (`1_Pooling/config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pooling {
    /// Mean over the real (non-padding) tokens.
    Mean,
    /// The `[CLS]` token's vector.
    Cls,
    /// Element-wise max over the real tokens.
    Max,
    /// Sum over the real tokens divided by sqrt(token count).
    MeanSqrtLen,
}

impl Pooling {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
            Pooling::Max => "max",
            Pooling::MeanSqrtLen => "mean_sqrt_len",
        }
    }
}

/// Everything read from the folder except the weights and the tokenizer.
#[derive(Debug)]
pub(crate) struct ModelSpec {
    pub(crate) bert: BertConfig,
    pub(crate) pooling: Pooling,
    pub(crate) max_seq_len: usize,
    pub(crate) weights: PathBuf,
    pub(crate) tokenizer: PathBuf,
}

/// The `config.json` fields the encoder needs (Hugging Face `BertConfig` names).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct BertConfig {
    pub(crate) vocab_size: usize,
    pub(crate) hidden_size: usize,
    pub(crate) num_hidden_layers: usize,
    pub(crate) num_attention_heads: usize,
    pub(crate) intermediate_size: usize,
    #[serde(default = "default_act")]
    pub(crate) hidden_act: String,
    pub(crate) max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub(crate) type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub(crate) layer_norm_eps: f64,
    #[serde(default = "default_position")]
    pub(crate) position_embedding_type: String,
}

fn default_act() -> String {
    "gelu".into()
}
fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}
fn default_position() -> String {
    "absolute".into()
}

#[derive(Deserialize)]
struct PoolingFile {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
}

#[derive(Deserialize)]
struct SbertFile {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct ModuleEntry {
    #[serde(rename = "type")]
    kind: String,
}

pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            EmbedError::MissingFile {
                path: path.to_path_buf(),
            }
        } else {
            EmbedError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    })
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, EmbedError> {
    let bytes = read_file(path)?;
    serde_json::from_slice(&bytes).map_err(|err| EmbedError::InvalidConfig {
        path: path.to_path_buf(),
        message: err.to_string(),
    })
}

fn optional_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, EmbedError> {
    match read_json(path) {
        Ok(value) => Ok(Some(value)),
        Err(EmbedError::MissingFile { .. }) => Ok(None),
        Err(err) => Err(err),
    }
}

impl ModelSpec {
    pub(crate) fn read(dir: &Path) -> Result<ModelSpec, EmbedError> {
        if !dir.is_dir() {
            return Err(EmbedError::MissingFile {
                path: dir.to_path_buf(),
            });
        }
        let config_path = dir.join("config.json");
        let raw: serde_json::Value = read_json(&config_path)?;
        check_architecture(&config_path, &raw)?;
        let bert: BertConfig =
            serde_json::from_value(raw).map_err(|err| EmbedError::InvalidConfig {
                path: config_path.clone(),
                message: err.to_string(),
            })?;
        if bert.num_attention_heads == 0
            || !bert.hidden_size.is_multiple_of(bert.num_attention_heads)
            || bert.num_hidden_layers == 0
            || bert.type_vocab_size == 0
        {
            return Err(EmbedError::InvalidConfig {
                path: config_path,
                message: "hidden_size must be a multiple of num_attention_heads, and layers and \
                          token types at least 1"
                    .into(),
            });
        }
        // The kernels implement exactly these; anything else would give wrong vectors silently.
        for (field, value, supported) in [
            ("hidden_act", &bert.hidden_act, "gelu"),
            (
                "position_embedding_type",
                &bert.position_embedding_type,
                "absolute",
            ),
        ] {
            if value != supported {
                return Err(EmbedError::UnsupportedArchitecture {
                    path: config_path,
                    architecture: format!("{field} {value:?} (only {supported:?} is supported)"),
                });
            }
        }

        // Extra modules (Dense projections, ...) change the vectors; refuse rather than
        // silently produce something that differs from sentence-transformers.
        let modules_path = dir.join("modules.json");
        if let Some(modules) = optional_json::<Vec<ModuleEntry>>(&modules_path)? {
            for module in modules {
                let known = matches!(
                    module.kind.as_str(),
                    "sentence_transformers.models.Transformer"
                        | "sentence_transformers.models.Pooling"
                        | "sentence_transformers.models.Normalize"
                );
                if !known {
                    return Err(EmbedError::UnsupportedArchitecture {
                        path: modules_path,
                        architecture: module.kind,
                    });
                }
            }
        }

        let pooling_path = dir.join("1_Pooling").join("config.json");
        let pooling = match optional_json::<PoolingFile>(&pooling_path)? {
            Some(p) => pooling_from(&pooling_path, &p)?,
            None => {
                log::warn!(
                    "{} not found; using mean pooling like sentence-transformers does",
                    pooling_path.display()
                );
                Pooling::Mean
            }
        };

        let sbert_path = dir.join("sentence_bert_config.json");
        let max_seq_len = match optional_json::<SbertFile>(&sbert_path)? {
            Some(SbertFile {
                max_seq_length: Some(n),
            }) => n,
            _ => {
                log::warn!(
                    "{} gives no max_seq_length; using max_position_embeddings",
                    sbert_path.display()
                );
                bert.max_position_embeddings
            }
        };
        if max_seq_len < 2 {
            return Err(EmbedError::InvalidConfig {
                path: sbert_path,
                message: format!("max_seq_length {max_seq_len} leaves no room for text"),
            });
        }
        // Positions past the embedding table do not exist, whatever the config claims.
        let max_seq_len = max_seq_len.min(bert.max_position_embeddings);

        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            let hint = if dir.join("pytorch_model.bin").is_file() {
                " (only pytorch_model.bin is present; convert it to safetensors)"
            } else {
                ""
            };
            return Err(EmbedError::Weights {
                path: weights,
                message: format!("file not found{hint}"),
            });
        }
        let tokenizer = dir.join("tokenizer.json");
        if !tokenizer.is_file() {
            return Err(EmbedError::MissingFile { path: tokenizer });
        }
        Ok(ModelSpec {
            bert,
            pooling,
            max_seq_len,
            weights,
            tokenizer,
        })
    }
}

fn check_architecture(path: &Path, raw: &serde_json::Value) -> Result<(), EmbedError> {
    let model_type = raw.get("model_type").and_then(|v| v.as_str());
    let architectures: Vec<&str> = raw
        .get("architectures")
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let bert_arch = architectures.iter().any(|a| a.starts_with("Bert"));
    let ok = match model_type {
        Some(t) => t == "bert" && (architectures.is_empty() || bert_arch),
        None => bert_arch,
    };
    if ok {
        Ok(())
    } else {
        let architecture = if architectures.is_empty() {
            format!("model_type {}", model_type.unwrap_or("<none>"))
        } else {
            architectures.join(", ")
        };
        Err(EmbedError::UnsupportedArchitecture {
            path: path.to_path_buf(),
            architecture: format!(
                "{architecture} (only BERT encoders such as BertModel are supported)"
            ),
        })
    }
}

fn pooling_from(path: &Path, p: &PoolingFile) -> Result<Pooling, EmbedError> {
    let modes = [
        (
            p.pooling_mode_mean_tokens,
            Some(Pooling::Mean),
            "mean_tokens",
        ),
        (p.pooling_mode_cls_token, Some(Pooling::Cls), "cls_token"),
        (p.pooling_mode_max_tokens, Some(Pooling::Max), "max_tokens"),
        (
            p.pooling_mode_mean_sqrt_len_tokens,
            Some(Pooling::MeanSqrtLen),
            "mean_sqrt_len_tokens",
        ),
        (
            p.pooling_mode_weightedmean_tokens,
            None,
            "weightedmean_tokens",
        ),
        (p.pooling_mode_lasttoken, None, "lasttoken"),
    ];
    let on: Vec<_> = modes.iter().filter(|m| m.0).collect();
    match on.as_slice() {
        [(_, Some(pooling), _)] => Ok(*pooling),
        [(_, None, name)] => Err(EmbedError::UnsupportedArchitecture {
            path: path.to_path_buf(),
            architecture: format!("pooling mode {name}"),
        }),
        [] => Err(EmbedError::InvalidConfig {
            path: path.to_path_buf(),
            message: "no pooling mode is enabled".into(),
        }),
        several => Err(EmbedError::UnsupportedArchitecture {
            path: path.to_path_buf(),
            architecture: format!(
                "several pooling modes at once ({})",
                several.iter().map(|m| m.2).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}
