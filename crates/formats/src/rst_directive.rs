//! reStructuredText directives (`.. name:: arguments`, options, content) and what each shows:
//! code blocks, boxes (admonitions and object descriptions), tables, version notes, plain
//! content, or nothing (`toctree`, `image`, `raw`, `include`, ...).

use crate::md_out::{Out, OutLine, collapse};
use crate::rst::Reader;
use crate::rst_inline::inline;
use crate::rst_lines::{Line, dedent, indented_end};
use crate::rst_table;

/// Directives whose content is code: shown as a fenced block in the language of their argument.
const CODE: &[&str] = &[
    "code-block",
    "sourcecode",
    "code",
    "code-cell",
    "doctest",
    "testcode",
    "testoutput",
    "testsetup",
    "ipython",
    "jupyter-execute",
    "prompt",
    "parsed-literal",
    "math",
    "productionlist",
];
/// Admonitions: a box whose argument (when any) is the start of its text.
const ADMONITIONS: &[&str] = &[
    "note",
    "warning",
    "tip",
    "hint",
    "important",
    "caution",
    "danger",
    "attention",
    "error",
    "seealso",
    "todo",
];
/// Boxes whose argument is their title.
const TITLED_BOXES: &[&str] = &[
    "admonition",
    "topic",
    "sidebar",
    "dropdown",
    "card",
    "margin",
];
/// Version notes: a paragraph saying what changed when, as Sphinx writes it.
const VERSION_NOTES: &[(&str, &str)] = &[
    ("versionadded", "Added in version"),
    ("versionchanged", "Changed in version"),
    ("deprecated", "Deprecated since version"),
    ("versionremoved", "Removed in version"),
];
/// Directives that show nothing of their own (navigation, images, raw output, settings) or
/// pull text from elsewhere, which is not followed.
const HIDDEN: &[&str] = &[
    "toctree",
    "index",
    "highlight",
    "currentmodule",
    "default-role",
    "default-domain",
    "sectionauthor",
    "moduleauthor",
    "codeauthor",
    "meta",
    "raw",
    "image",
    "include",
    "literalinclude",
    "contents",
    "sectnum",
    "header",
    "footer",
    "tabularcolumns",
    "title",
    "role",
    "autosummary",
    "graphviz",
    "digraph",
    "graph",
    "inheritance-diagram",
    "target-notes",
    "unicode",
    "replace",
    "date",
    "rst-class",
    "cssclass",
    "spelling:word-list",
];
/// Directives whose content is ordinary text, shown without a box.
const CONTENT: &[&str] = &[
    "only",
    "ifconfig",
    "container",
    "tabs",
    "tab-set",
    "tab-set-code",
    "grid",
    "compound",
    "hlist",
    "glossary",
    "highlights",
    "epigraph",
    "pull-quote",
    "line-block",
    "div",
    "figure",
];
/// Object descriptions: Sphinx shows their signature even when they have no text.
const DESCRIPTIONS: &[&str] = &[
    "function",
    "method",
    "classmethod",
    "staticmethod",
    "class",
    "attribute",
    "property",
    "data",
    "exception",
    "decorator",
    "decoratormethod",
    "type",
    "member",
    "macro",
    "var",
    "struct",
    "union",
    "enum",
    "enumerator",
    "envvar",
    "option",
    "confval",
    "describe",
    "object",
];
/// Directives whose argument is a tab or card title over ordinary content.
const TITLED_CONTENT: &[&str] = &[
    "tab",
    "tab-item",
    "group-tab",
    "grid-item",
    "grid-item-card",
];

/// A directive: `.. name:: arguments`, `:option: value` lines, then content.
#[derive(Debug)]
pub(crate) struct Directive<'a> {
    /// Lower-case, with a Sphinx domain (`py:`, `c:`, `js:`, ...) removed.
    pub name: String,
    /// The name as written (`py:function`), for a box's opening line.
    pub written_name: String,
    /// The argument on the directive's line.
    pub argument: String,
    /// `(name, value)` of each option.
    pub options: Vec<(String, String)>,
    /// Lines right below the directive line, before the first blank line, that are not options:
    /// more argument (a long signature), or the start of the content (`.. note::` text).
    pub head: Vec<Line<'a>>,
    /// The content after the first blank line.
    pub body: Vec<Line<'a>>,
    /// Bytes of the whole directive in the source.
    pub src: std::ops::Range<usize>,
}

impl<'a> Directive<'a> {
    /// Parses an explicit markup block (`lines[0]` starts with `..`), if it is a directive.
    pub(crate) fn parse(lines: &[Line<'a>]) -> Option<Directive<'a>> {
        let (written_name, after) = opening(lines[0].text.as_ref())?;
        let name = written_name
            .rsplit(':')
            .next()
            .unwrap_or(written_name)
            .to_ascii_lowercase();
        let argument = after.trim().to_string();
        let block = dedent(&lines[1..]);
        let mut options = Vec::new();
        let mut head = Vec::new();
        let mut k = 0;
        while k < block.len() && !block[k].is_blank() {
            let t = block[k].text.as_ref();
            let option = option_marker(t).filter(|_| head.is_empty());
            match option {
                Some((n, v)) => {
                    let mut value = v.to_string();
                    let end = indented_end(&block, k + 1, 1);
                    for l in &block[k + 1..end] {
                        value.push(' ');
                        value.push_str(l.text.trim());
                    }
                    options.push((n.to_ascii_lowercase(), value));
                    k = end;
                }
                None => {
                    head.push(block[k].clone());
                    k += 1;
                }
            }
        }
        let body = block[k..].to_vec();
        let src = lines[0].src.start..lines[lines.len() - 1].src.end;
        Some(Directive {
            name,
            written_name: written_name.to_string(),
            argument,
            options,
            head,
            body,
            src,
        })
    }

    /// Whether `line` opens a directive: `.. name::` then a space or the line's end.
    pub(crate) fn is_directive_line(line: &str) -> bool {
        opening(line).is_some()
    }

    /// The value of option `name`, if given.
    pub(crate) fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The content lines: the head (when it is content) and the body.
    pub(crate) fn content(&self) -> Vec<Line<'a>> {
        let mut lines = self.head.clone();
        if !lines.is_empty() && !self.body.is_empty() {
            lines.push(Line::new(
                "".into(),
                self.head[self.head.len() - 1].src.clone(),
            ));
        }
        lines.extend(self.body.iter().cloned());
        lines
    }

    /// The argument with the head's lines joined on (a signature over several lines).
    fn full_argument(&self) -> String {
        let mut arg = self.argument.clone();
        for l in &self.head {
            arg.push(' ');
            arg.push_str(l.text.trim());
        }
        collapse(&arg)
    }
}

/// `(name, value)` when `line` is a directive option: `:name:` then whitespace or the line's
/// end, as docutils reads a field marker. A line that opens with a role (`:setting:`FEEDS` is
/// now ignored.`, `:class:`Foo`, which …`) is text: its colon is followed by a backtick.
fn option_marker(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix(':')?;
    let mut chars = rest.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            ' ' | '`' => return None,
            '\\' => {
                chars.next();
            }
            ':' => {
                let name = &rest[..at];
                return match chars.peek() {
                    None => Some((name, "")),
                    Some((_, next)) if next.is_whitespace() => {
                        (!name.is_empty()).then(|| (name, rest[at + 1..].trim()))
                    }
                    _ => None,
                };
            }
            _ => {}
        }
    }
    None
}

/// The name as written and what follows its `::`, when `line` opens a directive: `.. name::`
/// then whitespace or the line's end.
fn opening(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix(".. ")?.trim_start();
    let sep = rest.find("::")?;
    let name = &rest[..sep];
    let after = &rest[sep + 2..];
    let is_name = name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.' | '+'));
    (is_name && after.chars().next().is_none_or(char::is_whitespace)).then_some((name, after))
}

/// Renders `d` into `out`.
pub(crate) fn render(reader: &mut Reader, d: &Directive, depth: usize, out: &mut Out) {
    let name = d.name.as_str();
    // docutils' `class` (a style for the next element) has no content; Sphinx's `class`
    // describes a Python class and has.
    let styling = name == "class" && d.body.iter().all(Line::is_blank);
    if HIDDEN.contains(&name) || styling {
        return;
    }
    if CODE.contains(&name) {
        let language = match name {
            "doctest" | "ipython" => "pycon",
            "math" => "math",
            "testoutput" | "parsed-literal" | "productionlist" => "",
            _ => d.argument.split_whitespace().next().unwrap_or(""),
        };
        let mut content = d.content();
        if name == "math" && !d.argument.is_empty() && content.is_empty() {
            content.push(Line::new(d.argument.clone().into(), d.src.clone()));
        }
        out.code(language, &content);
        return;
    }
    if ADMONITIONS.contains(&name) {
        let mut content = Vec::new();
        if !d.argument.is_empty() {
            content.push(Line::new(d.argument.clone().into(), d.src.clone()));
        }
        content.extend(d.content());
        let body = reader.blocks(&content, depth + 1, false);
        out.extend(body.into_box(&d.written_name.to_ascii_lowercase()));
        return;
    }
    if TITLED_BOXES.contains(&name) {
        // The title may run over the lines below the directive's; the content follows a blank.
        let body = reader.blocks(&d.body, depth + 1, false);
        let title = inline(&d.full_argument());
        let opening = if title.is_empty() {
            name.to_string()
        } else {
            format!("{name} {title}")
        };
        out.extend(body.into_box(&opening));
        return;
    }
    if let Some((_, words)) = VERSION_NOTES.iter().find(|(n, _)| *n == name) {
        // `.. deprecated:: 3.1 Use run() instead.`: the version, then the note's first words.
        let (version, said) = d
            .argument
            .split_once(char::is_whitespace)
            .unwrap_or((d.argument.as_str(), ""));
        let mut version_line = format!("{words} {}", inline(version));
        let mut content = Vec::new();
        if !said.trim().is_empty() {
            content.push(Line::new(said.trim().to_string().into(), d.src.clone()));
        }
        content.extend(d.content());
        let body = reader.blocks(&content, depth + 1, false);
        let mut lines = body.lines.into_iter().skip_while(|l| l.text.is_empty());
        let first = lines.next();
        match first {
            // "Changed in version 2.0: The default is now …", as one paragraph.
            Some(first) if !first.text.starts_with(['`', ':', '|', '-', '\\']) => {
                version_line.push_str(": ");
                version_line.push_str(&first.text);
                out.paragraph(&version_line, Some(d.src.clone()));
            }
            Some(first) => {
                version_line.push('.');
                out.paragraph(&version_line, Some(d.src.clone()));
                out.push(OutLine::blank());
                out.push(first);
            }
            None => {
                version_line.push('.');
                out.paragraph(&version_line, Some(d.src.clone()));
            }
        }
        let rest = Out {
            lines: lines.collect(),
        };
        out.extend(rest);
        return;
    }
    match name {
        "list-table" | "csv-table" | "table" => {
            let title = inline(&d.argument);
            if !title.is_empty() {
                out.paragraph(&format!("**{title}**"), Some(d.src.clone()));
            }
            match name {
                "list-table" => rst_table::list_table(d, out),
                "csv-table" => rst_table::csv_table(d, out),
                _ => out.extend(reader.blocks(&d.content(), depth + 1, false)),
            }
            return;
        }
        "rubric" | "centered" => {
            out.paragraph(&format!("**{}**", inline(&d.argument)), Some(d.src.clone()));
            return;
        }
        _ => {}
    }
    if CONTENT.contains(&name) {
        out.extend(reader.blocks(&d.content(), depth + 1, false));
        return;
    }
    if TITLED_CONTENT.contains(&name) {
        let title = inline(&d.full_argument());
        if !title.is_empty() {
            out.paragraph(&format!("**{title}**"), Some(d.src.clone()));
        }
        out.extend(reader.blocks(&d.body, depth + 1, false));
        return;
    }
    if name == "code-tab" {
        let language = d.argument.split_whitespace().next().unwrap_or("");
        out.code(language, &d.content());
        return;
    }
    // An object description (`function`, `py:class`, `confval`, autodoc's `autofunction`
    // with extra text) or a directive this reader does not know: a box opened by its name
    // and signature, so its text keeps what it describes.
    let signature = d.full_argument();
    let body = reader.blocks(&d.body, depth + 1, false);
    if body.lines.iter().all(|l| l.text.is_empty()) {
        // A bare description still shows its signature; a bare directive of an extension
        // (`.. fixture:: request`, an index entry) most often shows nothing.
        if DESCRIPTIONS.contains(&name) && !signature.is_empty() {
            out.paragraph(&signature, Some(d.src.clone()));
        }
        return;
    }
    let written = d.written_name.to_ascii_lowercase();
    let shown_name = written.strip_prefix("py:").unwrap_or(&written);
    let shown_name = shown_name.strip_prefix("auto").unwrap_or(shown_name);
    out.extend(body.into_box(&format!("{shown_name} {signature}")));
}
