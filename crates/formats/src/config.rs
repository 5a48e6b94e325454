//! stub
use crate::convert::{Converted, FormatError};
pub(crate) fn convert(_k: crate::format::ConfigKind, _b: &[u8]) -> Result<Converted, FormatError> {
    Err(FormatError::NoTextLayer)
}
