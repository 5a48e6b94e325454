//! DOCX to Markdown: built in another branch; this stub keeps the dispatch compiling.

use crate::convert::{Converted, FormatError};

pub(crate) fn convert(_bytes: &[u8]) -> Result<Converted, FormatError> {
    Err(FormatError::Invalid {
        format: "docx",
        reason: "not built in this branch".into(),
    })
}
