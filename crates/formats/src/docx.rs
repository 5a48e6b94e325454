//! stub
use crate::convert::{Converted, FormatError};
pub(crate) fn convert(_b: &[u8]) -> Result<Converted, FormatError> {
    Err(FormatError::NoTextLayer)
}
