//! PDF to Markdown: pdf-extract (on lopdf) decodes every glyph with its position and size; lines
//! are rebuilt from the glyphs, running headers/footers and page numbers dropped, hyphenation
//! at line ends undone, and lines set clearly larger than the body text become headings by
//! size rank. Every piece of text carries its page.

use std::collections::HashMap;

use pdf_extract::{Document, MediaBox, OutputDev, OutputError, Transform};

use crate::builder::MarkdownBuilder;
use crate::convert::{Converted, FormatError, check_size};

/// More pages than this are refused (bounds the work on one file).
const MAX_PAGES: usize = 5_000;

#[derive(Debug, Clone)]
struct Line {
    text: String,
    y: f64,
    size: f64,
}

/// Collects lines per page from the glyph stream.
#[derive(Default)]
struct Collector {
    pages: Vec<Vec<Line>>,
    height: f64,
    last_y: f64,
    last_end: f64,
    word_start: bool,
}

impl OutputDev for Collector {
    fn begin_page(
        &mut self,
        _page: u32,
        media_box: &MediaBox,
        _art: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        self.height = media_box.ury - media_box.lly;
        self.pages.push(Vec::new());
        self.last_y = f64::NAN;
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        _spacing: f64,
        font_size: f64,
        ch: &str,
    ) -> Result<(), OutputError> {
        // The font size vector through the text matrix (as pdf-extract's own text output does).
        let vx = font_size * (trm.m11 + trm.m21);
        let vy = font_size * (trm.m12 + trm.m22);
        let size = (vx * vy).abs().sqrt();
        let (x, y) = (trm.m31, self.height - trm.m32);
        let Some(page) = self.pages.last_mut() else {
            return Ok(());
        };
        let same_line = (y - self.last_y).abs() <= size * 0.5 && x >= self.last_end - size;
        if !same_line || page.is_empty() {
            page.push(Line {
                text: String::new(),
                y,
                size,
            });
        } else if x > self.last_end + size * if self.word_start { 0.1 } else { 0.3 }
            && let Some(line) = page.last_mut()
            && !line.text.ends_with(' ')
        {
            line.text.push(' ');
        }
        if let Some(line) = page.last_mut() {
            line.text.push_str(ch);
            line.size = line.size.max(size);
        }
        self.word_start = false;
        self.last_y = y;
        self.last_end = x + width * size;
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        self.word_start = true;
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}

pub(crate) fn convert(bytes: &[u8]) -> Result<Converted, FormatError> {
    check_size(bytes)?;
    let invalid = |reason: String| FormatError::Invalid {
        format: "pdf",
        reason,
    };
    let doc = Document::load_mem(bytes).map_err(|e| invalid(e.to_string()))?;
    if doc.is_encrypted() {
        return Err(invalid("encrypted PDF".into()));
    }
    let pages = doc.get_pages().len();
    if pages > MAX_PAGES {
        return Err(FormatError::TooLarge {
            what: "PDF page count",
            limit: MAX_PAGES as u64,
        });
    }
    let title = info_title(&doc);
    let mut c = Collector::default();
    pdf_extract::output_doc(&doc, &mut c).map_err(|e| invalid(format!("{e:?}")))?;
    let mut pages: Vec<Vec<Line>> = c.pages;
    for page in &mut pages {
        for l in page.iter_mut() {
            l.text = l.text.split_whitespace().collect::<Vec<_>>().join(" ");
        }
        page.retain(|l| !l.text.is_empty());
    }
    if pages.iter().flatten().map(|l| l.text.len()).sum::<usize>() < 16 {
        return Err(FormatError::NoTextLayer);
    }
    drop_running_lines(&mut pages);
    let mut out = render(&pages).into_converted("pdf", title);
    out.metadata.insert("pages".into(), pages.len().into());
    Ok(out)
}

fn info_title(doc: &Document) -> Option<String> {
    let info = doc.trailer.get(b"Info").ok()?;
    let info = match info {
        pdf_extract::Object::Reference(id) => doc.get_object(*id).ok()?,
        other => other,
    };
    let bytes = info.as_dict().ok()?.get(b"Title").ok()?.as_str().ok()?;
    let text = match bytes.strip_prefix(&[0xFE, 0xFF]) {
        Some(utf16) => {
            let units: Vec<u16> = utf16
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16_lossy(&units)
        }
        // PDFDocEncoding agrees with Latin-1 on the printable range.
        None => bytes.iter().map(|&b| char::from(b)).collect(),
    };
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

/// A line with its digits masked: running headers differ only in the page number.
fn shape(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect()
}

fn is_page_number(s: &str) -> bool {
    let s = s.trim();
    !s.is_empty()
        && s.len() <= 8
        && (s.chars().all(|c| c.is_ascii_digit())
            || s.chars().all(|c| matches!(c, 'i' | 'v' | 'x' | 'l' | 'c')))
}

/// Drops page numbers and lines repeated at the top or bottom of many pages.
fn drop_running_lines(pages: &mut [Vec<Line>]) {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for page in pages.iter() {
        let ends = [page.first(), page.last()];
        for l in ends.into_iter().flatten() {
            *counts.entry(shape(&l.text)).or_default() += 1;
        }
    }
    let min = (pages.len() / 10).max(3);
    for page in pages.iter_mut() {
        for _ in 0..2 {
            if page.first().is_some_and(|l| {
                is_page_number(&l.text) || counts.get(&shape(&l.text)).is_some_and(|&n| n >= min)
            }) {
                page.remove(0);
            }
            if page.last().is_some_and(|l| {
                is_page_number(&l.text) || counts.get(&shape(&l.text)).is_some_and(|&n| n >= min)
            }) {
                page.pop();
            }
        }
    }
}

fn size_key(size: f64) -> i64 {
    (size * 10.0).round() as i64
}

fn render(pages: &[Vec<Line>]) -> MarkdownBuilder {
    // Body size: the size most characters are set in.
    let mut by_size: HashMap<i64, usize> = HashMap::new();
    for l in pages.iter().flatten() {
        *by_size.entry(size_key(l.size)).or_default() += l.text.len();
    }
    let body = by_size
        .iter()
        .max_by_key(|&(_, n)| *n)
        .map_or(0, |(&k, _)| k);
    let mut heading_sizes: Vec<i64> = by_size
        .keys()
        .copied()
        .filter(|&k| k * 100 > body * 115)
        .collect();
    heading_sizes.sort_unstable_by(|a, b| b.cmp(a));
    heading_sizes.truncate(5);
    let level = |size: f64| {
        heading_sizes
            .iter()
            .position(|&k| k == size_key(size))
            .map(|i| i + 1)
    };

    let mut b = MarkdownBuilder::new();
    let mut prev: Option<(f64, f64)> = None; // (y, size) of the previous body line
    let mut in_heading: Option<usize> = None;
    for (pi, page) in pages.iter().enumerate() {
        let pn = Some(pi as u32 + 1);
        for (li, l) in page.iter().enumerate() {
            let lvl = (l.text.len() < 200 && !is_toc_entry(&l.text))
                .then(|| level(l.size))
                .flatten();
            if let Some(lvl) = lvl {
                if in_heading == Some(lvl) && li > 0 {
                    b.markup(" ");
                } else {
                    b.heading_prefix(lvl);
                }
                b.text(&l.text, None, pn);
                in_heading = Some(lvl);
                prev = None;
                continue;
            }
            if in_heading.take().is_some() {
                b.end_block();
            }
            let gap = match prev {
                Some((y, _)) if li > 0 => l.y - y,
                _ => f64::NAN,
            };
            let new_para = match prev {
                None => true,
                Some(_) if li == 0 => ends_sentence(b.as_str()),
                Some(_) => !gap.is_finite() || gap < 0.0 || gap > l.size * 1.35,
            };
            if new_para {
                b.end_block();
            } else if hyphenated(b.as_str(), &l.text) {
                b.pop_char();
            } else {
                b.markup("\n");
            }
            if l.text.starts_with(['#', '>', '|']) || l.text.starts_with("```") {
                b.markup("\\");
            }
            b.text(&l.text, None, pn);
            prev = Some((l.y, l.size));
        }
    }
    b
}

/// `2.3 Simple parsing . . . . . 4`: an entry of a table of contents, often set in the size of
/// the heading it names, but not a heading (as one, a run of entries became a single heading
/// of leader dots over every chunk below it). A dot leader, then a page number.
fn is_toc_entry(text: &str) -> bool {
    let line = text.trim_end();
    let before_page = line.trim_end_matches(|c: char| c.is_ascii_digit() || "ivxlcdm".contains(c));
    if before_page.len() == line.len() {
        return false;
    }
    let leader: usize = (before_page.chars().rev())
        .take_while(|c| matches!(c, '.' | '…' | ' ' | '\u{a0}' | '\t'))
        .map(|c| match c {
            '.' => 1,
            '…' => 3,
            _ => 0,
        })
        .sum();
    leader >= 3
}

fn ends_sentence(md: &str) -> bool {
    md.trim_end().ends_with(['.', ':', '!', '?']) || md.ends_with("\n\n") || md.is_empty()
}

/// `exam-` + `ple`: a word broken at the line end.
fn hyphenated(md: &str, next: &str) -> bool {
    let mut tail = md.chars().rev();
    tail.next() == Some('-')
        && tail.next().is_some_and(char::is_alphabetic)
        && next.chars().next().is_some_and(char::is_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_lines_and_hyphens() {
        let page = |n: usize, body: &str| {
            vec![
                Line {
                    text: format!("Chapter 1: Intro {n}"),
                    y: 10.0,
                    size: 10.0,
                },
                Line {
                    text: body.into(),
                    y: 50.0,
                    size: 10.0,
                },
                Line {
                    text: n.to_string(),
                    y: 700.0,
                    size: 10.0,
                },
            ]
        };
        let mut pages: Vec<_> = (1..=5).map(|n| page(n, "body text")).collect();
        drop_running_lines(&mut pages);
        assert!(
            pages
                .iter()
                .all(|p| p.len() == 1 && p[0].text == "body text")
        );
        assert!(is_toc_entry(
            "2.3 Simple parsing. . . . . . . . . . . . . . . . . . 4"
        ));
        assert!(is_toc_entry("Preface........ix"));
        assert!(is_toc_entry("3 Utilities … 15 "));
        assert!(!is_toc_entry("2.3 Simple parsing"));
        assert!(!is_toc_entry("Wait for it..."));
        assert!(!is_toc_entry("Version 1.2.3"));
        assert!(hyphenated("an exam-", "ple"));
        assert!(!hyphenated("an exam-", "Ple"));
    }
}
