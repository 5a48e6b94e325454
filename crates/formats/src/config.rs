//! YAML/JSON/TOML to Markdown: built in another branch; this stub keeps the dispatch compiling.

use crate::convert::{Converted, FormatError};
use crate::format::ConfigKind;

pub(crate) fn convert(_kind: ConfigKind, _bytes: &[u8]) -> Result<Converted, FormatError> {
    Err(FormatError::Invalid {
        format: "config",
        reason: "not built in this branch".into(),
    })
}
