//! The text of a Markdown or plain-text file: UTF-8 as it is, or UTF-16 when a byte order mark
//! says so, decoded by `rag-formats` (the same decoder its converters use), with ranges in the
//! decoded text mapped back to the file's bytes.
//!
//! Windows tools write UTF-16 with a byte order mark (Notepad's "Unicode", PowerShell 5's `>`):
//! documents, not binary files, though every other byte of their ASCII text is NUL. Without a
//! mark the encoding would be a guess, so such a file is still refused, with a reason that says
//! what it looks like rather than "binary". A converter may index a page with a few replaced
//! characters and a warning; a plain-text file is the user's own text, so malformed UTF-16 is
//! refused as malformed UTF-8 is.

use std::ops::Range;

use rag_formats::DecodedPage;

/// A file's text and where it came from.
pub(crate) enum FileText<'a> {
    Utf8(&'a str),
    Utf16(DecodedPage<'a>),
}

impl<'a> FileText<'a> {
    /// Decodes `bytes`; the error is a reason for the user.
    pub(crate) fn decode(bytes: &'a [u8]) -> Result<FileText<'a>, String> {
        // Before the UTF-16 check: a UTF-32 LE mark starts with UTF-16 LE's.
        if rag_formats::utf32_marked(bytes) {
            return Err("UTF-32 text (byte order mark); not indexed: save it as UTF-8".into());
        }
        if let Some(page) = rag_formats::decode_marked(bytes) {
            if bytes.len() % 2 == 1 {
                return Err("UTF-16 text with an odd number of bytes; not indexed".into());
            }
            if page.had_errors() {
                return Err("invalid UTF-16 (an unpaired surrogate); not indexed".into());
            }
            if page.text.contains('\0') {
                return Err("binary file (a NUL character in UTF-16 text); not indexed".into());
            }
            return Ok(FileText::Utf16(page));
        }
        if let Some(at) = bytes.iter().position(|&b| b == 0) {
            return Err(if rag_formats::looks_like_utf16(bytes) {
                format!(
                    "UTF-16 text without a byte order mark (NUL byte at offset {at}); not \
                     indexed: save it as UTF-8, or as UTF-16 with a byte order mark"
                )
            } else {
                format!("binary file (NUL byte at offset {at}); not indexed")
            });
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|e| format!("invalid UTF-8 at byte {}; not indexed", e.valid_up_to()))?;
        Ok(FileText::Utf8(text))
    }

    pub(crate) fn text(&self) -> &str {
        match self {
            FileText::Utf8(text) => text,
            FileText::Utf16(page) => &page.text,
        }
    }

    /// Ranges of the text (on character boundaries) as ranges of the file `bytes` it was decoded
    /// from; `None` if they cannot be mapped (not expected: the text was decoded without errors,
    /// so it encodes back to exactly the file's bytes).
    pub(crate) fn file_ranges(
        &self,
        bytes: &[u8],
        ranges: &[Range<usize>],
    ) -> Option<Vec<Range<usize>>> {
        match self {
            FileText::Utf8(_) => Some(ranges.to_vec()),
            FileText::Utf16(page) => page.file_ranges(bytes, ranges),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
        let mut bytes = if big_endian {
            vec![0xFE, 0xFF]
        } else {
            vec![0xFF, 0xFE]
        };
        for unit in text.encode_utf16() {
            let pair = if big_endian {
                unit.to_be_bytes()
            } else {
                unit.to_le_bytes()
            };
            bytes.extend_from_slice(&pair);
        }
        bytes
    }

    #[test]
    fn utf16_with_a_mark_is_decoded_and_its_ranges_map_to_the_file() {
        let text = "# Café\n\nRoute 🚀 ok.\n";
        for big_endian in [false, true] {
            let bytes = utf16(text, big_endian);
            let decoded = FileText::decode(&bytes).unwrap();
            assert_eq!(decoded.text(), text);
            // "Route" starts after "# Café\n\n": 8 UTF-16 units, 9 UTF-8 bytes.
            let route = text.find("Route").unwrap();
            let rocket = text.find('🚀').unwrap();
            let after_rocket = rocket + '🚀'.len_utf8();
            assert_eq!(
                decoded.file_ranges(&bytes, &[0..route, rocket..after_rocket, route..text.len()]),
                Some(vec![
                    2..2 + 2 * 8,
                    2 + 2 * 14..2 + 2 * 16,
                    2 + 2 * 8..bytes.len()
                ])
            );
        }
    }

    #[test]
    fn utf8_passes_through_and_the_rest_is_refused_with_a_reason() {
        let bytes = "# Title\n\nbody\n".as_bytes();
        let plain = FileText::decode(bytes).unwrap();
        assert!(matches!(plain, FileText::Utf8(_)));
        assert_eq!(
            plain.file_ranges(bytes, &[0..3, 9..13]),
            Some(vec![0..3, 9..13])
        );

        let no_mark: Vec<u8> = "# Title\n\nSome text here.\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let reason = FileText::decode(&no_mark).err().unwrap();
        assert!(
            reason.contains("UTF-16 text without a byte order mark"),
            "{reason}"
        );

        let binary = [
            0x7Fu8, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0,
        ];
        let reason = FileText::decode(&binary).err().unwrap();
        assert!(
            reason.starts_with("binary file (NUL byte at offset 7)"),
            "{reason}"
        );

        let reason = FileText::decode(b"caf\xe9 cr\xe8me").err().unwrap();
        assert_eq!(reason, "invalid UTF-8 at byte 3; not indexed");

        let mut unpaired = utf16("ab", false);
        unpaired.extend_from_slice(&0xD800u16.to_le_bytes());
        assert!(
            FileText::decode(&unpaired)
                .err()
                .unwrap()
                .contains("surrogate")
        );
        let odd = [0xFF, 0xFE, b'a', 0, b'b'];
        assert!(FileText::decode(&odd).err().unwrap().contains("odd number"));
        let utf32 = [0xFF, 0xFE, 0, 0, b'a', 0, 0, 0];
        assert!(FileText::decode(&utf32).err().unwrap().contains("UTF-32"));
        let nul = utf16("a\0b", true);
        assert!(
            FileText::decode(&nul)
                .err()
                .unwrap()
                .contains("NUL character")
        );
    }
}
