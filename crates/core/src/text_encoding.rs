//! The text of a Markdown or plain-text file: UTF-8 as it is, or UTF-16 when a byte order mark
//! says so, decoded, with offsets in the decoded text mapped back to the file's bytes.
//!
//! Windows tools write UTF-16 with a byte order mark (Notepad's "Unicode", PowerShell 5's `>`):
//! documents, not binary files, though every other byte of their ASCII text is NUL. Without a
//! mark the encoding would be a guess, so such a file is still refused, with a reason that says
//! what it looks like rather than "binary".

use std::borrow::Cow;

/// A file's text and where it came from.
pub(crate) struct FileText<'a> {
    pub text: Cow<'a, str>,
    /// UTF-16 byte order, when the text was decoded from UTF-16.
    utf16_big_endian: Option<bool>,
}

impl<'a> FileText<'a> {
    /// Decodes `bytes`; the error is a reason for the user.
    pub(crate) fn decode(bytes: &'a [u8]) -> Result<FileText<'a>, String> {
        if bytes.starts_with(&[0xFF, 0xFE, 0, 0]) || bytes.starts_with(&[0, 0, 0xFE, 0xFF]) {
            return Err("UTF-32 text (byte order mark); not indexed: save it as UTF-8".into());
        }
        let big_endian = match bytes {
            [0xFF, 0xFE, ..] => Some(false),
            [0xFE, 0xFF, ..] => Some(true),
            _ => None,
        };
        if let Some(big_endian) = big_endian {
            let body = &bytes[2..];
            if body.len() % 2 == 1 {
                return Err("UTF-16 text with an odd number of bytes; not indexed".into());
            }
            let units = body.chunks_exact(2).map(|pair| {
                let pair = [pair[0], pair[1]];
                if big_endian {
                    u16::from_be_bytes(pair)
                } else {
                    u16::from_le_bytes(pair)
                }
            });
            let text = char::decode_utf16(units)
                .collect::<Result<String, _>>()
                .map_err(|_| "invalid UTF-16 (an unpaired surrogate); not indexed".to_string())?;
            if text.contains('\0') {
                return Err("binary file (a NUL character in UTF-16 text); not indexed".into());
            }
            return Ok(FileText {
                text: Cow::Owned(text),
                utf16_big_endian: Some(big_endian),
            });
        }
        if let Some(at) = bytes.iter().position(|&b| b == 0) {
            return Err(if looks_like_utf16(bytes) {
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
        Ok(FileText {
            text: Cow::Borrowed(text),
            utf16_big_endian: None,
        })
    }

    /// Whether offsets in the text differ from offsets in the file.
    pub(crate) fn was_decoded(&self) -> bool {
        self.utf16_big_endian.is_some()
    }

    /// Maps offsets into the text (ascending, each on a character boundary) to offsets into the
    /// file, in one pass over the text.
    pub(crate) fn file_offsets(&self, text_offsets: &[usize]) -> Vec<usize> {
        if !self.was_decoded() {
            return text_offsets.to_vec();
        }
        debug_assert!(text_offsets.is_sorted());
        let mut mapped = Vec::with_capacity(text_offsets.len());
        let mut wanted = text_offsets.iter().peekable();
        // The byte order mark comes first in the file.
        let mut file_at = 2;
        for (text_at, c) in self.text.char_indices() {
            while wanted.next_if(|&&o| o <= text_at).is_some() {
                mapped.push(file_at);
            }
            file_at += 2 * c.len_utf16();
        }
        // The end of the text, and anything past it, is the end of the file.
        mapped.resize(text_offsets.len(), file_at);
        mapped
    }
}

/// ASCII text in UTF-16 without a mark: most NUL bytes of its first kilobytes sit at the same
/// parity, with a printable byte beside each.
fn looks_like_utf16(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(4096) & !1];
    let pairs = head.len() / 2;
    if pairs < 4 {
        return false;
    }
    let (mut nul_high, mut nul_low) = (0, 0);
    for pair in head.chunks_exact(2) {
        match pair {
            [0, b] if b.is_ascii_graphic() || b.is_ascii_whitespace() => nul_high += 1,
            [b, 0] if b.is_ascii_graphic() || b.is_ascii_whitespace() => nul_low += 1,
            _ => {}
        }
    }
    nul_high.max(nul_low) * 10 >= pairs * 9
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
    fn utf16_with_a_mark_is_decoded_and_its_offsets_map_to_the_file() {
        let text = "# Café\n\nRoute 🚀 ok.\n";
        for big_endian in [false, true] {
            let bytes = utf16(text, big_endian);
            let decoded = FileText::decode(&bytes).unwrap();
            assert_eq!(decoded.text, text);
            assert!(decoded.was_decoded());
            // "Route" starts after "# Café\n\n": 8 UTF-16 units, 9 UTF-8 bytes.
            let route = text.find("Route").unwrap();
            let rocket = text.find('🚀').unwrap();
            let after_rocket = rocket + '🚀'.len_utf8();
            assert_eq!(
                decoded.file_offsets(&[0, route, rocket, after_rocket, text.len()]),
                [2, 2 + 2 * 8, 2 + 2 * 14, 2 + 2 * 16, bytes.len()]
            );
        }
    }

    #[test]
    fn utf8_passes_through_and_the_rest_is_refused_with_a_reason() {
        let plain = FileText::decode("# Title\n\nbody\n".as_bytes()).unwrap();
        assert!(!plain.was_decoded());
        assert_eq!(plain.file_offsets(&[0, 3]), [0, 3]);

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
    }
}
