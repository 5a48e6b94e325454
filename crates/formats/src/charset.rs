//! A text file's encoding (HTML, config, source code, reStructuredText, AsciiDoc), decided
//! before parsing: a byte order mark (UTF-16 LE or BE), and for an HTML page, as a browser
//! decides it, else a `<meta charset>` (or `http-equiv="Content-Type"`) in the first 1024
//! bytes; else UTF-8. Older manuals and generated API docs are often Latin-1 (windows-1252) or
//! Shift_JIS, and Windows tools write UTF-16 with a mark (PowerShell 5's `ConvertTo-Json >
//! x.json`, editors' "Unicode"): read as UTF-8, their accented letters became U+FFFD, or the
//! file was refused as not text or as binary.
//!
//! `encoding_rs` (Firefox's decoder, already in the tree) maps labels and decodes; the prescan
//! here is the simple part of the WHATWG algorithm (no comment or attribute-order subtleties),
//! which real pages meet. Offsets in the decoded text are mapped back to the file by encoding
//! it again, so source ranges stay exact when the text re-encodes to the file's own bytes.

use std::borrow::Cow;
use std::ops::Range;

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE};

use crate::convert::{Converted, FormatError};

/// How far into the page a `<meta>` declaration is looked for (the WHATWG prescan's bound).
const PRESCAN_BYTES: usize = 1024;

/// A text decoded from an encoding other than UTF-8.
pub struct DecodedPage<'a> {
    /// The decoded text.
    pub text: Cow<'a, str>,
    pub(crate) encoding: &'static Encoding,
    /// Bytes of the byte order mark, before the text.
    bom: usize,
    /// Malformed sequences were replaced with U+FFFD.
    pub(crate) had_errors: bool,
}

/// The text decoded, when a UTF-16 byte order mark starts it; `None`: decode it as UTF-8.
pub fn decode_marked(bytes: &[u8]) -> Option<DecodedPage<'_>> {
    let (encoding, bom) = Encoding::for_bom(bytes)?;
    decoded(bytes, encoding, bom)
}

/// The page decoded, when its bytes say it is not UTF-8; `None`: decode it as UTF-8.
pub(crate) fn decode_declared(bytes: &[u8]) -> Option<DecodedPage<'_>> {
    let (encoding, bom) = match Encoding::for_bom(bytes) {
        Some((encoding, bom)) => (encoding, bom),
        // A meta naming UTF-16 is read as UTF-8: a page whose meta can be read is not UTF-16.
        None => match declared(&bytes[..bytes.len().min(PRESCAN_BYTES)]) {
            Some(e) if e == UTF_16LE || e == UTF_16BE => (UTF_8, 0),
            Some(e) => (e, 0),
            None => (UTF_8, 0),
        },
    };
    decoded(bytes, encoding, bom)
}

fn decoded<'a>(
    bytes: &'a [u8],
    encoding: &'static Encoding,
    bom: usize,
) -> Option<DecodedPage<'a>> {
    if encoding == UTF_8 {
        return None;
    }
    let (text, had_errors) = encoding.decode_without_bom_handling(&bytes[bom..]);
    Some(DecodedPage {
        text,
        encoding,
        bom,
        had_errors,
    })
}

/// Whether a UTF-32 byte order mark starts `bytes`. Check it before [`decode_marked`]: the mark
/// of UTF-32 LE begins with UTF-16 LE's, so a decoder going by the mark would read UTF-32 as
/// UTF-16 with a NUL after every character.
pub fn utf32_marked(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0xFF, 0xFE, 0, 0]) || bytes.starts_with(&[0, 0, 0xFE, 0xFF])
}

/// Refuses UTF-32 (see [`utf32_marked`]).
pub(crate) fn refuse_utf32(format: &'static str, bytes: &[u8]) -> Result<(), FormatError> {
    if utf32_marked(bytes) {
        return Err(FormatError::Invalid {
            format,
            reason: "UTF-32 text (byte order mark); save it as UTF-8".into(),
        });
    }
    Ok(())
}

/// Refuses `bytes` when they hold a NUL byte, which no text format has: as UTF-16 without a
/// byte order mark when they look like it (its ASCII letters alternate with NULs, and such text
/// is also valid UTF-8, so it would otherwise be parsed with a NUL between every two
/// characters), else as binary data. Decoding unmarked UTF-16 would be a guess, so it is not.
pub(crate) fn refuse_nul_bytes(format: &'static str, bytes: &[u8]) -> Result<(), FormatError> {
    let Some(at) = bytes.iter().position(|&b| b == 0) else {
        return Ok(());
    };
    let reason = if looks_like_utf16(bytes) {
        format!(
            "UTF-16 text without a byte order mark (NUL byte at offset {at}); save it as UTF-8, \
             or as UTF-16 with a byte order mark"
        )
    } else {
        let nuls = bytes.iter().filter(|&&b| b == 0).count();
        format!("{nuls} NUL bytes: binary data, not text")
    };
    Err(FormatError::Invalid { format, reason })
}

/// ASCII text in UTF-16 without a mark: most NUL bytes of its first kilobytes sit at the same
/// parity, with a printable byte beside each.
pub fn looks_like_utf16(bytes: &[u8]) -> bool {
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

/// The decoded text for a parser, borrowed from `page` (no copy), refused when it holds NUL
/// characters (binary data).
pub(crate) fn checked_text<'p>(
    page: &'p DecodedPage<'_>,
    format: &'static str,
) -> Result<Cow<'p, str>, FormatError> {
    if page.text.contains('\0') {
        return Err(FormatError::Invalid {
            format,
            reason: format!(
                "NUL characters in {} text: binary data",
                page.encoding.name()
            ),
        });
    }
    Ok(Cow::Borrowed(&page.text))
}

/// Converts a text format whose files may be UTF-16 with a byte order mark (config,
/// reStructuredText, AsciiDoc): refuses inputs over the size bound and UTF-32, decodes a marked text (else UTF-8, as
/// `decode_text` reads it), hands the text to `convert`, and maps the result's source spans
/// back to the file's bytes.
pub(crate) fn convert_text(
    format: &'static str,
    bytes: &[u8],
    convert: impl FnOnce(&str) -> Result<Converted, FormatError>,
) -> Result<Converted, FormatError> {
    crate::convert::check_size(bytes)?;
    refuse_utf32(format, bytes)?;
    let marked = decode_marked(bytes);
    let text = match &marked {
        Some(page) => checked_text(page, format)?,
        None => crate::convert::decode_text(format, bytes)?,
    };
    let mut out = convert(&text)?;
    if let Some(page) = &marked {
        map_spans_to_file(page, bytes, &mut out);
    }
    Ok(out)
}

/// Source ranges of a decoded text count bytes of its UTF-8: maps them to the file's, or says
/// they are approximate.
pub(crate) fn map_spans_to_file(page: &DecodedPage, bytes: &[u8], out: &mut Converted) {
    let ranges: Vec<Range<usize>> = out.spans.iter().filter_map(|s| s.source.clone()).collect();
    match page.file_ranges(bytes, &ranges) {
        Some(mapped) => {
            let sources = out.spans.iter_mut().filter_map(|s| s.source.as_mut());
            for (source, range) in sources.zip(mapped) {
                *source = range;
            }
        }
        None => out.warnings.push(format!(
            "decoded from {}; source offsets are approximate",
            page.encoding.name()
        )),
    }
}

impl DecodedPage<'_> {
    /// Whether malformed sequences (an unpaired surrogate, an odd last byte) were replaced.
    pub fn had_errors(&self) -> bool {
        self.had_errors
    }

    /// Maps ranges in the text (on character boundaries) to ranges in the file, or `None` when
    /// the text does not encode back to the file's bytes (malformed input, or an encoder that
    /// writes other bytes than the page's), so offsets cannot be trusted.
    pub fn file_ranges(&self, bytes: &[u8], ranges: &[Range<usize>]) -> Option<Vec<Range<usize>>> {
        if self.had_errors {
            return None;
        }
        let mut offsets: Vec<usize> = ranges.iter().flat_map(|r| [r.start, r.end]).collect();
        offsets.sort_unstable();
        offsets.dedup();
        let mapped = self.file_offsets(&offsets, bytes.len() - self.bom)?;
        let at = |o: usize| offsets.binary_search(&o).ok().map(|i| mapped[i]);
        ranges
            .iter()
            .map(|r| Some(at(r.start)?..at(r.end)?))
            .collect()
    }

    /// File offsets of the sorted text `offsets`, by encoding the text again character by
    /// character; `None` unless that gives exactly `body_len` bytes.
    fn file_offsets(&self, offsets: &[usize], body_len: usize) -> Option<Vec<usize>> {
        let utf16 = self.encoding == UTF_16LE || self.encoding == UTF_16BE;
        if !utf16 && self.encoding.output_encoding() != self.encoding {
            return None;
        }
        let mut encoder = self.encoding.new_encoder();
        let mut out = Vec::with_capacity(offsets.len());
        let mut wanted = offsets.iter().peekable();
        let mut written = 0;
        let mut buffer = [0u8; 16];
        let mut utf8 = [0u8; 4];
        for (at, c) in self.text.char_indices() {
            while wanted.next_if(|&&o| o <= at).is_some() {
                out.push(self.bom + written);
            }
            if utf16 {
                written += 2 * c.len_utf16();
                continue;
            }
            let (result, _, n, replaced) =
                encoder.encode_from_utf8(c.encode_utf8(&mut utf8), &mut buffer, false);
            if replaced || result != encoding_rs::CoderResult::InputEmpty {
                return None;
            }
            written += n;
        }
        if !utf16 {
            // A stateful encoding (ISO-2022-JP) may end by returning to ASCII.
            let (_, _, n, _) = encoder.encode_from_utf8("", &mut buffer, true);
            written += n;
        }
        if written != body_len {
            return None;
        }
        out.resize(offsets.len(), self.bom + written);
        Some(out)
    }
}

/// The encoding a `<meta>` in `head` declares, if any and known.
fn declared(head: &[u8]) -> Option<&'static Encoding> {
    let lower = head.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = find(&lower[from..], b"<meta") {
        let tag_start = from + found;
        let tag_end = find(&lower[tag_start..], b">").map_or(lower.len(), |e| tag_start + e);
        let tag = &lower[tag_start..tag_end];
        let label = find(tag, b"charset").and_then(|at| charset_value(&tag[at + 7..]));
        if let Some(encoding) = label.and_then(Encoding::for_label) {
            return Some(encoding);
        }
        from = tag_end;
    }
    None
}

/// The label after `charset`: `= value`, the value optionally quoted.
fn charset_value(rest: &[u8]) -> Option<&[u8]> {
    let rest = rest
        .trim_ascii_start()
        .strip_prefix(b"=")?
        .trim_ascii_start();
    let rest = rest
        .strip_prefix(b"\"")
        .or_else(|| rest.strip_prefix(b"'"))
        .unwrap_or(rest);
    let end = rest
        .iter()
        .position(|b| matches!(b, b'"' | b'\'' | b';' | b'/' | b'>') || b.is_ascii_whitespace())
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_bytes_are_refused_as_unmarked_utf16_or_as_binary() {
        let text = "def f(x):\n    return x + 1\n";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        for (bytes, at) in [(&le, 1), (&be, 0)] {
            let reason = refuse_nul_bytes("python", bytes).unwrap_err().to_string();
            assert!(
                reason.contains(&format!(
                    "UTF-16 text without a byte order mark (NUL byte at offset {at})"
                )),
                "{reason}"
            );
        }
        let binary = [
            0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0x3e,
        ];
        let reason = refuse_nul_bytes("python", &binary).unwrap_err().to_string();
        assert!(reason.contains("NUL bytes: binary data"), "{reason}");
        assert!(refuse_nul_bytes("python", text.as_bytes()).is_ok());
    }

    #[test]
    fn the_declaration_or_the_mark_decides_and_utf8_stays_on_its_path() {
        let page = |meta: &str| format!("<html><head>{meta}<title>t</title></head><body>é</body>");
        for meta in [
            "<meta charset=\"windows-1252\">",
            "<META CHARSET=iso-8859-1>",
            "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=ISO-8859-1\">",
            "<meta name=x><meta charset='latin1'/>",
        ] {
            let source = page(meta);
            let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(&source);
            let decoded = decode_declared(&bytes).expect(meta);
            assert_eq!(decoded.encoding, encoding_rs::WINDOWS_1252, "{meta}");
            assert!(decoded.text.contains("<body>é</body>"), "{meta}");
        }
        for meta in [
            "<meta charset=\"utf-8\">",
            "",
            "<meta charset=\"utf-16\">",
            "<meta charset=bogus>",
        ] {
            assert!(decode_declared(page(meta).as_bytes()).is_none(), "{meta}");
        }
        let mut utf16 = vec![0xFF, 0xFE];
        utf16.extend(page("").encode_utf16().flat_map(u16::to_le_bytes));
        let decoded = decode_declared(&utf16).unwrap();
        assert_eq!(decoded.encoding, UTF_16LE);
        assert_eq!(decoded.text, page(""));
    }

    #[test]
    fn ranges_map_to_the_file_only_when_the_text_encodes_back_to_it() {
        let text = "<meta charset=windows-1252><p>Café “quoted” text</p>";
        let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(text);
        let decoded = decode_declared(&bytes).unwrap();
        let quoted = text.find("“").unwrap()..text.find("” text").unwrap() + "”".len();
        let mapped = decoded
            .file_ranges(&bytes, &[quoted.clone(), 0..text.len()])
            .unwrap();
        assert_eq!(&bytes[mapped[0].clone()], b"\x93quoted\x94");
        assert_eq!(mapped[1], 0..bytes.len());

        // UTF-16 maps by code units (its encoder writes UTF-8, so it is not re-encoded).
        let mut utf16 = vec![0xFE, 0xFF];
        utf16.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
        let decoded = decode_declared(&utf16).unwrap();
        let mapped = decoded
            .file_ranges(&utf16, std::slice::from_ref(&quoted))
            .unwrap();
        let units = |s: &str| s.encode_utf16().count();
        let (before, through) = (&text[..quoted.start], &text[..quoted.end]);
        assert_eq!(mapped[0], 2 + 2 * units(before)..2 + 2 * units(through));
        let (slice, _) = UTF_16BE.decode_without_bom_handling(&utf16[mapped[0].clone()]);
        assert_eq!(slice, "“quoted”");

        // An unpaired surrogate is replaced, so offsets after it are not trusted.
        let mut broken = utf16.clone();
        broken.extend(0xD800u16.to_be_bytes());
        let decoded = decode_declared(&broken).unwrap();
        assert!(decoded.had_errors);
        assert!(decoded.file_ranges(&broken, &[quoted]).is_none());
    }
}
