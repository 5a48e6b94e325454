use std::path::PathBuf;

/// Everything that can go wrong while finding, loading or running a model.
///
/// File-related variants carry the path so a user can see which file to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// No model folder was found anywhere in the resolution order.
    #[error(
        "no embedding model found (looked in: {}); run `./models/fetch-model.sh`, \
         or pass --model-dir / set RAG_INDEX_MODEL_DIR to a sentence-transformers model folder",
        tried.join(", ")
    )]
    ModelNotFound {
        /// Every place that was looked at, in order, with why it did not qualify.
        tried: Vec<String>,
    },
    /// A file the model needs is not in the model folder.
    #[error("model file missing: {}", path.display())]
    MissingFile {
        /// The file that should exist.
        path: PathBuf,
    },
    /// A model file exists but could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file being read.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A JSON configuration file is malformed or has unexpected values.
    #[error("invalid model configuration in {}: {message}", path.display())]
    InvalidConfig {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The model is not a BERT-family encoder this crate can run.
    #[error("unsupported model architecture in {}: {architecture}", path.display())]
    UnsupportedArchitecture {
        /// The file that names the architecture (usually `config.json` or `modules.json`).
        path: PathBuf,
        /// The architecture or module that is not supported.
        architecture: String,
    },
    /// `tokenizer.json` could not be loaded or configured.
    #[error("cannot load tokenizer {}: {message}", path.display())]
    Tokenizer {
        /// The tokenizer file.
        path: PathBuf,
        /// The tokenizer library's message.
        message: String,
    },
    /// The weights file is unreadable, corrupt, or does not match `config.json`.
    #[error("cannot load model weights {}: {message}", path.display())]
    Weights {
        /// The weights file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Tokenizing an input text failed.
    #[error("tokenization failed: {0}")]
    Tokenize(String),
    /// The forward pass failed.
    #[error("inference failed: {0}")]
    Inference(String),
    /// An [`EmbedderConfig`](crate::EmbedderConfig) value is out of range.
    #[error("invalid embedder configuration: {0}")]
    InvalidSetting(String),
    /// Downloading the model from the Hugging Face hub failed or timed out.
    #[error("model download failed: {0}")]
    Download(String),
}

impl From<candle_core::Error> for EmbedError {
    fn from(err: candle_core::Error) -> Self {
        EmbedError::Inference(err.to_string())
    }
}
