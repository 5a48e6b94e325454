//! Source code: built in another branch; this stub keeps the dispatch in place.

use crate::convert::{Converted, FormatError};
use crate::format::Language;

/// Not built in this branch.
pub(crate) fn convert(_lang: Language, _bytes: &[u8]) -> Result<Converted, FormatError> {
    Err(FormatError::Invalid {
        format: "code",
        reason: "source code support is not built in this branch".into(),
    })
}
