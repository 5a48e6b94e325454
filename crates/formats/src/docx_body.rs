//! `word/document.xml` to a flat list of paragraphs (with style and list numbering) and tables.
//!
//! Streaming (quick-xml events), so nesting costs no recursion; text boxes nested inside a
//! paragraph join that paragraph, tables nested in a cell join the cell's text, and the
//! `mc:Fallback` copy of alternate content is skipped (its `mc:Choice` already gave the text).

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use crate::convert::FormatError;

/// Deeper XML is refused (real documents nest a few dozen levels).
const MAX_XML_DEPTH: usize = 512;

#[derive(Debug, Default, PartialEq)]
pub(crate) struct Para {
    /// `w:pStyle` id.
    pub style: Option<String>,
    /// `w:numPr`: numbering id and level.
    pub num: Option<(String, usize)>,
    /// Text with `\n` for breaks and `\t` for tabs.
    pub text: String,
}

#[derive(Debug, PartialEq)]
pub(crate) enum Block {
    Para(Para),
    Table(Vec<Vec<String>>),
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    cell: Option<String>,
}

pub(crate) fn invalid(reason: String) -> FormatError {
    FormatError::Invalid {
        format: "docx",
        reason,
    }
}

/// The `val` attribute (any namespace prefix).
pub(crate) fn val(e: &BytesStart<'_>) -> Option<String> {
    attr(e, b"val")
}

pub(crate) fn attr(e: &BytesStart<'_>, local: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == local)
        .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
}

pub(crate) fn parse(xml: &[u8]) -> Result<Vec<Block>, FormatError> {
    let mut reader = Reader::from_reader(xml);
    reader.config_mut().trim_text(false);
    let mut blocks = Vec::new();
    let mut depth = 0usize;
    let mut para: Option<Para> = None;
    let mut p_depth = 0usize;
    let mut tables: Vec<Table> = Vec::new();
    let mut in_t = false;
    let mut in_ppr = false;
    let mut skip = 0usize; // inside mc:Fallback
    loop {
        let ev = reader.read_event().map_err(|e| {
            invalid(format!(
                "word/document.xml at byte {}: {e}",
                reader.error_position()
            ))
        })?;
        match ev {
            Event::Start(e) => {
                depth += 1;
                if depth > MAX_XML_DEPTH {
                    return Err(FormatError::TooLarge {
                        what: "XML nesting depth",
                        limit: MAX_XML_DEPTH as u64,
                    });
                }
                let name = e.local_name();
                if skip > 0 || name.as_ref() == b"Fallback" {
                    skip += 1;
                    continue;
                }
                match name.as_ref() {
                    b"p" => {
                        p_depth += 1;
                        match para.as_mut() {
                            Some(p) => p.text.push(' '),
                            None => para = Some(Para::default()),
                        }
                    }
                    b"pPr" => in_ppr = true,
                    b"t" => in_t = true,
                    b"tbl" => tables.push(Table::default()),
                    b"tr" => {
                        if let Some(t) = tables.last_mut() {
                            t.rows.push(Vec::new());
                        }
                    }
                    b"tc" => {
                        if let Some(t) = tables.last_mut() {
                            t.cell = Some(String::new());
                        }
                    }
                    _ => empty_element(&e, para.as_mut(), p_depth, in_ppr),
                }
            }
            Event::Empty(e) if skip == 0 => empty_element(&e, para.as_mut(), p_depth, in_ppr),
            Event::End(e) => {
                depth = depth.saturating_sub(1);
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                match e.local_name().as_ref() {
                    b"t" => in_t = false,
                    b"pPr" => in_ppr = false,
                    b"p" => {
                        p_depth = p_depth.saturating_sub(1);
                        if p_depth == 0
                            && let Some(p) = para.take()
                        {
                            if tables.is_empty() {
                                blocks.push(Block::Para(p));
                            } else if let Some(cell) =
                                tables.last_mut().and_then(|t| t.cell.as_mut())
                            {
                                if !cell.is_empty() {
                                    cell.push(' ');
                                }
                                cell.push_str(&p.text);
                            } // else: text directly in a row (malformed), dropped
                        }
                    }
                    b"tc" => {
                        if let Some(t) = tables.last_mut()
                            && let Some(cell) = t.cell.take()
                        {
                            match t.rows.last_mut() {
                                Some(row) => row.push(cell),
                                None => t.rows.push(vec![cell]),
                            }
                        }
                    }
                    b"tbl" => {
                        if let Some(t) = tables.pop() {
                            match tables.last_mut().and_then(|o| o.cell.as_mut()) {
                                // A nested table reads as text of the outer cell.
                                Some(cell) => {
                                    for row in t.rows {
                                        cell.push(' ');
                                        cell.push_str(&row.join(" "));
                                    }
                                }
                                None => blocks.push(Block::Table(t.rows)),
                            }
                        }
                    }
                    _ => {}
                }
            }
            Event::Text(t) if in_t && skip == 0 => {
                if let Some(p) = para.as_mut() {
                    let s = t
                        .decode()
                        .map_err(|e| invalid(format!("text encoding: {e}")))?;
                    p.text.push_str(&s);
                }
            }
            Event::CData(t) if in_t && skip == 0 => {
                if let Some(p) = para.as_mut() {
                    p.text.push_str(&String::from_utf8_lossy(&t));
                }
            }
            Event::GeneralRef(r) if in_t && skip == 0 => {
                if let Some(p) = para.as_mut() {
                    if let Ok(Some(c)) = r.resolve_char_ref() {
                        p.text.push(c);
                    } else {
                        let name = r.decode().map_err(|e| invalid(format!("entity: {e}")))?;
                        match quick_xml::escape::resolve_predefined_entity(&name) {
                            Some(s) => p.text.push_str(s),
                            None => return Err(invalid(format!("unknown entity &{name};"))),
                        }
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(blocks)
}

/// Elements that matter without content: style, numbering, breaks and tabs.
fn empty_element(e: &BytesStart<'_>, para: Option<&mut Para>, p_depth: usize, in_ppr: bool) {
    let Some(p) = para else { return };
    match e.local_name().as_ref() {
        b"pStyle" if in_ppr && p_depth == 1 => p.style = val(e),
        b"numId" if in_ppr && p_depth == 1 => {
            let level = p.num.take().map_or(0, |(_, l)| l);
            p.num = val(e).map(|id| (id, level));
        }
        b"ilvl" if in_ppr && p_depth == 1 => {
            let level = val(e).and_then(|v| v.parse().ok()).unwrap_or(0);
            let id = p.num.take().map_or_else(String::new, |(id, _)| id);
            p.num = Some((id, level));
        }
        b"br" | b"cr" if !in_ppr => p.text.push('\n'),
        b"tab" if !in_ppr => p.text.push('\t'),
        b"noBreakHyphen" if !in_ppr => p.text.push('-'),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_tables_and_breaks() {
        let xml = br#"<w:document xmlns:w="x"><w:body>
            <w:p><w:pPr><w:pStyle w:val="Heading1"/><w:numPr><w:ilvl w:val="2"/><w:numId w:val="7"/></w:numPr></w:pPr>
            <w:r><w:t>A &amp; B</w:t><w:br/><w:t xml:space="preserve"> c</w:t></w:r></w:p>
            <w:tbl><w:tr><w:tc><w:p><w:r><w:t>x</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>y</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
            </w:body></w:document>"#;
        let blocks = parse(xml).unwrap();
        assert_eq!(
            blocks[0],
            Block::Para(Para {
                style: Some("Heading1".into()),
                num: Some(("7".into(), 2)),
                text: "A & B\n c".into()
            })
        );
        assert_eq!(blocks[1], Block::Table(vec![vec!["x".into(), "y".into()]]));
    }

    #[test]
    fn broken_xml_is_invalid() {
        assert!(matches!(
            parse(b"<w:p><w:t>x</w:p>"),
            Err(FormatError::Invalid { .. })
        ));
    }
}
