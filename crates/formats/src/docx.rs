//! DOCX to Markdown: the zip is read with bounded decompression, `word/document.xml` gives
//! paragraphs and tables ([`crate::docx_body`]), `word/styles.xml` names their styles (headings,
//! title, code, definition terms), `word/numbering.xml` tells bullets from numbers, and
//! `docProps/core.xml` gives the title.

use std::collections::HashMap;
use std::io::{Cursor, Read};

use quick_xml::Reader;
use quick_xml::events::Event;

use crate::builder::{MarkdownBuilder, escape_cell, starts_like_block};
use crate::convert::{Converted, FormatError, check_size};
use crate::docx_body::{Block, Para, attr, invalid, parse, val};
use crate::html::collapse;

/// Decompressed bytes read from all parts together (a zip bomb stops here).
const MAX_XML: u64 = 64 << 20;

pub(crate) fn convert(bytes: &[u8]) -> Result<Converted, FormatError> {
    check_size(bytes)?;
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| invalid(format!("not a readable zip archive: {e}")))?;
    let mut budget = MAX_XML;
    let document = read_part(&mut zip, "word/document.xml", &mut budget)?
        .ok_or_else(|| invalid("a zip without word/document.xml: not a DOCX".into()))?;
    let styles = match read_part(&mut zip, "word/styles.xml", &mut budget)? {
        Some(xml) => styles(&xml).unwrap_or_default(),
        None => HashMap::new(),
    };
    let numbering = match read_part(&mut zip, "word/numbering.xml", &mut budget)? {
        Some(xml) => numbering(&xml).unwrap_or_default(),
        None => HashMap::new(),
    };
    let core_title = read_part(&mut zip, "docProps/core.xml", &mut budget)?
        .and_then(|xml| core_title(&xml))
        .filter(|t| !t.is_empty());
    let blocks = parse(&document)?;
    let mut r = Render {
        b: MarkdownBuilder::new(),
        styles: &styles,
        numbering: &numbering,
        terms: Vec::new(),
        code: String::new(),
        counters: HashMap::new(),
        first_title: None,
        skip_below: None,
    };
    for block in &blocks {
        r.block(block);
    }
    r.flush_code();
    r.emit_terms();
    let title = core_title.or(r.first_title.take());
    Ok(r.b.into_converted("docx", title))
}

/// Reads one part, counting its decompressed size against `budget`.
fn read_part<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
    budget: &mut u64,
) -> Result<Option<Vec<u8>>, FormatError> {
    let file = match zip.by_name(name) {
        Ok(f) => f,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(invalid(format!("{name}: {e}"))),
    };
    let mut out = Vec::new();
    // The declared size is not trusted: read at most one byte past the budget.
    file.take(*budget + 1)
        .read_to_end(&mut out)
        .map_err(|e| invalid(format!("{name}: {e}")))?;
    if out.len() as u64 > *budget {
        return Err(FormatError::TooLarge {
            what: "decompressed DOCX XML",
            limit: MAX_XML,
        });
    }
    *budget -= out.len() as u64;
    Ok(Some(out))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Heading(usize),
    Title,
    Code,
    Term,
    Body,
}

#[derive(Debug, Default)]
struct Style {
    name: String,
    based_on: Option<String>,
    outline: Option<usize>,
}

/// Style id to name, parent and outline level.
fn styles(xml: &[u8]) -> Result<HashMap<String, Style>, quick_xml::Error> {
    let mut reader = Reader::from_reader(xml);
    let mut out = HashMap::new();
    let mut cur: Option<(String, Style)> = None;
    loop {
        match reader.read_event()? {
            Event::Start(e) | Event::Empty(e) => match e.local_name().as_ref() {
                b"style" => cur = attr(&e, b"styleId").map(|id| (id, Style::default())),
                b"name" => {
                    if let Some((_, s)) = cur.as_mut() {
                        s.name = val(&e).unwrap_or_default();
                    }
                }
                b"basedOn" => {
                    if let Some((_, s)) = cur.as_mut() {
                        s.based_on = val(&e);
                    }
                }
                b"outlineLvl" => {
                    if let Some((_, s)) = cur.as_mut() {
                        s.outline = val(&e).and_then(|v| v.parse().ok());
                    }
                }
                _ => {}
            },
            Event::End(e) if e.local_name().as_ref() == b"style" => {
                if let Some((id, s)) = cur.take() {
                    out.insert(id, s);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

/// numId to whether each level is ordered (not a bullet).
fn numbering(xml: &[u8]) -> Result<HashMap<String, Vec<bool>>, quick_xml::Error> {
    let mut reader = Reader::from_reader(xml);
    let mut abstracts: HashMap<String, Vec<bool>> = HashMap::new();
    let mut nums: HashMap<String, String> = HashMap::new();
    let mut cur_abs: Option<String> = None;
    let mut cur_num: Option<String> = None;
    let mut level = 0usize;
    loop {
        match reader.read_event()? {
            Event::Start(e) | Event::Empty(e) => match e.local_name().as_ref() {
                b"abstractNum" => cur_abs = attr(&e, b"abstractNumId"),
                b"lvl" => level = attr(&e, b"ilvl").and_then(|v| v.parse().ok()).unwrap_or(0),
                b"numFmt" => {
                    if let Some(a) = &cur_abs {
                        let ordered = !matches!(val(&e).as_deref(), Some("bullet" | "none"));
                        let levels = abstracts.entry(a.clone()).or_default();
                        if level < 9 {
                            levels.resize(levels.len().max(level + 1), false);
                            levels[level] = ordered;
                        }
                    }
                }
                b"num" => cur_num = attr(&e, b"numId"),
                b"abstractNumId" => {
                    if let (Some(n), Some(a)) = (&cur_num, val(&e)) {
                        nums.insert(n.clone(), a);
                    }
                }
                _ => {}
            },
            Event::End(e) if e.local_name().as_ref() == b"abstractNum" => cur_abs = None,
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(nums
        .into_iter()
        .filter_map(|(n, a)| Some((n, abstracts.get(&a)?.clone())))
        .collect())
}

fn core_title(xml: &[u8]) -> Option<String> {
    let mut reader = Reader::from_reader(xml);
    let mut in_title = false;
    let mut title = String::new();
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) if e.local_name().as_ref() == b"title" => in_title = true,
            Event::End(e) if e.local_name().as_ref() == b"title" => return Some(collapse(&title)),
            Event::Text(t) if in_title => title.push_str(&t.decode().ok()?),
            Event::GeneralRef(r) if in_title => {
                let name = r.decode().ok()?;
                title.push_str(quick_xml::escape::resolve_predefined_entity(&name).unwrap_or(""));
            }
            Event::Eof => return None,
            _ => {}
        }
    }
}

/// What a style id means, through its name and `basedOn` parents.
fn kind(styles: &HashMap<String, Style>, id: Option<&str>) -> Kind {
    let mut id = id;
    for _ in 0..8 {
        let Some(cur) = id else { break };
        let style = styles.get(cur);
        for key in [style.map(|s| s.name.as_str()).unwrap_or(""), cur] {
            let k: String = key.chars().filter(|c| !c.is_whitespace()).collect();
            let k = k.to_ascii_lowercase();
            if let Some(n) = k
                .strip_prefix("heading")
                .and_then(|n| n.parse::<usize>().ok())
            {
                return Kind::Heading(n.clamp(1, 6));
            }
            match k.as_str() {
                "title" => return Kind::Title,
                "sourcecode" | "code" | "htmlpreformatted" | "plaintext" | "macrotext"
                | "preformattedtext" => return Kind::Code,
                "definitionterm" => return Kind::Term,
                _ => {}
            }
        }
        if let Some(level) = style.and_then(|s| s.outline).filter(|&l| l < 6) {
            return Kind::Heading(level + 1);
        }
        id = style.and_then(|s| s.based_on.as_deref());
    }
    Kind::Body
}

/// Texinfo node navigation copied by pandoc ("Next: X, Previous: Y, Up: Z [Contents][Index]").
fn is_nav_line(text: &str) -> bool {
    (text.starts_with("Next:") || text.starts_with("Previous:") || text.starts_with("Up:"))
        && (text.contains("Up:") || text.contains("Previous:"))
        && text.len() < 400
}

struct Render<'a> {
    b: MarkdownBuilder,
    styles: &'a HashMap<String, Style>,
    numbering: &'a HashMap<String, Vec<bool>>,
    terms: Vec<String>,
    code: String,
    /// Item counters of each list, per level.
    counters: HashMap<String, Vec<u64>>,
    first_title: Option<String>,
    /// Inside a "Table of Contents" section (navigation), skipped up to a heading of this level.
    skip_below: Option<usize>,
}

impl Render<'_> {
    fn block(&mut self, block: &Block) {
        match block {
            Block::Para(p) => self.para(p),
            // Texinfo index letter bars, copied by pandoc.
            Block::Table(rows)
                if rows
                    .first()
                    .and_then(|r| r.first())
                    .is_some_and(|c| c.starts_with("Jump to")) => {}
            Block::Table(_) if self.skip_below.is_some() => {}
            Block::Table(rows) => {
                self.flush_code();
                self.emit_terms();
                self.table(rows);
            }
        }
    }

    fn para(&mut self, p: &Para) {
        let kind = kind(self.styles, p.style.as_deref());
        if kind == Kind::Code {
            self.code.push_str(&p.text);
            self.code.push('\n');
            return;
        }
        self.flush_code();
        let text = collapse(&p.text);
        if text.is_empty() || is_nav_line(&text) {
            return;
        }
        if let Kind::Heading(level) = kind {
            match self.skip_below {
                Some(l) if level > l => return,
                _ => self.skip_below = None,
            }
            if matches!(
                text.as_str(),
                "Table of Contents" | "Contents" | "Short Table of Contents"
            ) {
                self.skip_below = Some(level);
                return;
            }
        } else if self.skip_below.is_some() {
            return;
        }
        match kind {
            Kind::Heading(_) | Kind::Title => {
                self.emit_terms();
                let level = if let Kind::Heading(l) = kind { l } else { 1 };
                if kind == Kind::Title && self.first_title.is_none() {
                    self.first_title = Some(text.clone());
                }
                self.b.heading_prefix(level);
                self.b.markup(&text);
                self.b.end_block();
            }
            Kind::Term => self.terms.push(text),
            _ => {
                self.b.end_block();
                if let Some((id, level)) = &p.num {
                    self.marker(id, *level);
                }
                for (i, term) in std::mem::take(&mut self.terms).iter().enumerate() {
                    if i == 0 && p.num.is_none() && starts_like_block(term) {
                        self.b.markup("\\");
                    }
                    self.b.markup(term);
                    self.b.markup("\n");
                }
                if p.num.is_none() && starts_like_block(&text) {
                    self.b.markup("\\");
                }
                self.b.markup(&text);
                self.b.end_block();
            }
        }
    }

    fn marker(&mut self, id: &str, level: usize) {
        let level = level.min(8);
        let ordered = self
            .numbering
            .get(id)
            .and_then(|l| l.get(level))
            .copied()
            .unwrap_or(false);
        let counters = self.counters.entry(id.to_string()).or_default();
        counters.resize(level + 1, 0);
        counters[level] += 1;
        let n = counters[level];
        self.b.markup(&"   ".repeat(level));
        if ordered {
            self.b.markup(&format!("{n}. "));
        } else {
            self.b.markup("- ");
        }
    }

    fn flush_code(&mut self) {
        if !self.code.is_empty() {
            self.emit_terms();
            let code = std::mem::take(&mut self.code);
            self.b.code_block("", &code, &[]);
        }
    }

    fn emit_terms(&mut self) {
        if self.terms.is_empty() {
            return;
        }
        self.b.end_block();
        let terms = std::mem::take(&mut self.terms);
        if starts_like_block(&terms[0]) {
            self.b.markup("\\");
        }
        self.b.markup(&terms.join("\n"));
        self.b.end_block();
    }

    fn table(&mut self, rows: &[Vec<String>]) {
        let cols = rows.iter().map(Vec::len).max().unwrap_or(0).min(64);
        if cols == 0 {
            return;
        }
        self.b.end_block();
        for (i, row) in rows.iter().enumerate() {
            for c in 0..cols {
                self.b.markup("| ");
                if let Some(cell) = row.get(c) {
                    self.b.markup(&escape_cell(&collapse(cell)));
                }
                self.b.markup(" ");
            }
            self.b.markup("|\n");
            if i == 0 {
                self.b.markup(&"|---".repeat(cols));
                self.b.markup("|\n");
            }
        }
        self.b.end_block();
    }
}
