//! HTML to Markdown: html5ever (through `scraper`) builds the DOM exactly as a browser would, then
//! one walk over the main content emits headings, paragraphs, lists, definition lists, tables and
//! code blocks. Navigation and page furniture (Sphinx sidebars, Texinfo node headers, permalinks)
//! are dropped.

use std::collections::HashSet;
use std::ops::Range;

use ego_tree::iter::Edge;
use ego_tree::{NodeId, NodeRef};
use scraper::{ElementRef, Html, Node, Selector, node::Element};

use crate::builder::{CodePiece, MarkdownBuilder, escape_cell, starts_like_block};
use crate::charset;
use crate::convert::{Converted, FormatError, check_size, decode_text};
use crate::html_locate::Locator;
use crate::html_parse;

/// Deeper elements are read as plain text (keeps the walk's recursion bounded).
const MAX_DEPTH: usize = 160;
/// Wider tables are cut (a hostile `colspan` soup cannot blow up the Markdown).
const MAX_COLUMNS: usize = 64;

pub(crate) fn convert(bytes: &[u8]) -> Result<Converted, FormatError> {
    check_size(bytes)?;
    charset::refuse_utf32("html", bytes)?;
    let declared = charset::decode_declared(bytes);
    let text = match &declared {
        Some(page) => charset::checked_text(page, "html")?,
        None => decode_text("html", bytes)?,
    };
    let lossy = declared.is_none() && matches!(text, std::borrow::Cow::Owned(_));
    let doc = html_parse::parse_document(&text)?;
    let title = select_first(&doc, "title").map(|t| collapse(&t.text().collect::<String>()));
    // A page without a `<title>` or an `<h1>` may still show one in an element so named
    // (Doxygen's `div.title`, "Json::Value Class Reference", under a custom header).
    let title = title.filter(|t| !t.is_empty()).or_else(|| {
        select_first(&doc, "h1")
            .is_none()
            .then(|| select_first(&doc, ".title"))
            .flatten()
            .map(|t| collapse(&t.text().collect::<String>()))
            .filter(|t| !t.is_empty() && t.len() <= MAX_SHOWN_TITLE_BYTES)
    });
    let (root, rooted) = main_content(&doc);
    let body_at = find_ascii_ci(&text, "<body").unwrap_or(0);
    let mut w = Walker {
        b: MarkdownBuilder::new(),
        loc: Locator::new(&text, body_at),
        inline: Inline::default(),
        terms: Vec::new(),
        marker: None,
        indents: Vec::new(),
        lists: Vec::new(),
        inline_mode: false,
        rooted,
        lang: String::new(),
        boxes: 0,
        listing_gutters: HashSet::new(),
    };
    w.walk(*root, 0);
    w.flush();
    w.emit_terms();
    let exhausted = w.loc.exhausted();
    let mut out = w.b.into_converted("html", title);
    if let Some(page) = &declared {
        charset::map_spans_to_file(page, bytes, &mut out);
    }
    if lossy {
        out.warnings
            .push("invalid UTF-8 bytes were replaced; source offsets are approximate".into());
    }
    if exhausted {
        out.warnings
            .push("source offsets were given up part way (text not found)".into());
    }
    Ok(out)
}

/// Longest text taken as a page's title from an element classed `title`: longer, it is no
/// title.
const MAX_SHOWN_TITLE_BYTES: usize = 200;

fn select_first<'a>(doc: &'a Html, css: &str) -> Option<ElementRef<'a>> {
    let sel = Selector::parse(css).ok()?;
    doc.select(&sel).next()
}

/// The article of the page (`[role=main]`, `main`, `article`, Sphinx `div.body`), else `body`.
/// The flag says whether a content element was found (then `header` elements are content).
fn main_content(doc: &Html) -> (ElementRef<'_>, bool) {
    for css in ["[role=main]", "main", "article", "div.body"] {
        if let Some(e) = select_first(doc, css) {
            return (e, true);
        }
    }
    (
        select_first(doc, "body").unwrap_or_else(|| doc.root_element()),
        false,
    )
}

fn find_ascii_ci(hay: &str, needle: &str) -> Option<usize> {
    let n = needle.as_bytes();
    hay.as_bytes()
        .windows(n.len())
        .position(|w| w.eq_ignore_ascii_case(n))
}

fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c' | '\u{a0}')
}

/// Collapses whitespace runs (and no-break spaces) to one space, trimmed.
pub(crate) fn collapse(s: &str) -> String {
    s.split(is_ws)
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prose being gathered: whitespace-collapsed text plus where each piece came from.
#[derive(Debug, Default)]
struct Inline {
    text: String,
    marks: Vec<(Range<usize>, Range<usize>)>,
    space: bool,
}

impl Inline {
    fn push(&mut self, t: &str, src: Option<Range<usize>>) {
        let mut start = None;
        for ch in t.chars() {
            if is_ws(ch) {
                self.space = !self.text.is_empty();
                continue;
            }
            if std::mem::take(&mut self.space) {
                self.text.push(' ');
            }
            start.get_or_insert(self.text.len());
            self.text.push(ch);
        }
        if let (Some(s), Some(src)) = (start, src) {
            self.marks.push((s..self.text.len(), src));
        }
    }

    fn space(&mut self) {
        self.space = !self.text.is_empty();
    }

    fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Writes the text, escaping a leading character that Markdown would read as block syntax.
    fn write(self, b: &mut MarkdownBuilder, escape_start: bool) {
        if escape_start && starts_like_block(&self.text) {
            b.markup("\\");
        }
        let base = b.len();
        b.markup(&self.text);
        for (r, src) in self.marks {
            b.span(base + r.start..base + r.end, Some(src), None);
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum List {
    Bullet,
    Ordered(u64),
}

struct Walker<'a> {
    b: MarkdownBuilder,
    loc: Locator<'a>,
    inline: Inline,
    /// Definition-list terms waiting for their description's first paragraph.
    terms: Vec<Inline>,
    /// List marker waiting for the item's first paragraph.
    marker: Option<String>,
    /// Continuation indent of each open list item.
    indents: Vec<usize>,
    lists: Vec<List>,
    /// Inside a heading, table cell or term: blocks are flattened to text.
    inline_mode: bool,
    rooted: bool,
    /// Info string for code blocks (Sphinx `highlight-LANG` wrappers).
    lang: String,
    /// Open boxes (notes, warnings): a heading in one titles the box, not a section.
    boxes: usize,
    /// The line-number gutters of the open tables laid out around a code listing: they drop out.
    listing_gutters: HashSet<NodeId>,
}

impl Walker<'_> {
    fn walk(&mut self, node: NodeRef<'_, Node>, depth: usize) {
        match node.value() {
            Node::Text(t) => {
                let src = self.loc.locate(t);
                self.inline.push(t, src);
            }
            Node::Element(e) => {
                if depth > MAX_DEPTH {
                    self.flat_text(node);
                } else if !self.skip(node, e) {
                    self.element(node, e, depth);
                }
            }
            _ => {}
        }
    }

    fn children(&mut self, node: NodeRef<'_, Node>, depth: usize) {
        for c in node.children() {
            self.walk(c, depth + 1);
        }
    }

    /// All text below `node` as prose, without recursion.
    fn flat_text(&mut self, node: NodeRef<'_, Node>) {
        for d in node.descendants() {
            if let Node::Text(t) = d.value() {
                let src = self.loc.locate(t);
                self.inline.push(t, src);
            }
        }
    }

    fn skip(&self, node: NodeRef<'_, Node>, e: &Element) -> bool {
        const DROPPED: &[&str] = &[
            "script", "style", "noscript", "template", "head", "nav", "aside", "form", "button",
            "input", "select", "textarea", "svg", "math", "iframe", "object", "canvas", "audio",
            "video", "map", "footer",
        ];
        const NAV_CLASSES: &[&str] = &[
            "headerlink",       // Sphinx ¶ permalinks
            "copiable-anchor",  // Texinfo ¶ anchors
            "sphinxsidebar",    // Sphinx sidebar
            "related",          // Sphinx top/bottom navigation bars
            "section-toc",      // Texinfo per-node menu
            "Contents_element", // Texinfo table of contents
            "Overview_element", // Texinfo short table of contents
            "mini-toc",
            "navheader", // DocBook Prev/Up/Home/Next bars
            "navfooter",
            "ttc", // Doxygen's tooltips on code, shown on hover (`display: none`)
        ];
        let name = e.name();
        if DROPPED.contains(&name)
            || (name == "header" && !self.rooted)
            || self.listing_gutters.contains(&node.id())
        {
            return true;
        }
        if e.attr("hidden").is_some() || e.attr("aria-hidden") == Some("true") {
            return true;
        }
        if let Some(role) = e.attr("role")
            && [
                "navigation",
                "banner",
                "contentinfo",
                "search",
                "complementary",
            ]
            .contains(&role)
        {
            return true;
        }
        // A link that holds words is content whatever its class: mdBook wraps every heading's
        // text in `<a class="header">`, the class Texinfo gives its navigation bars. The
        // permalinks these classes mark hold only a sign (`¶`) or nothing.
        let worded_link = name == "a" && has_words(node);
        // A link to a place on the page that shows only a sign (`§`, `¶`, `#`) is a permalink
        // beside a heading, whatever the generator calls it.
        if !worded_link
            && Links::InPage.counts(node)
            && !node
                .descendants()
                .any(|d| matches!(d.value(), Node::Element(x) if x.name() == "img"))
        {
            return true;
        }
        if !worded_link
            && e.classes()
                .any(|c| NAV_CLASSES.contains(&c) || c.starts_with("index-"))
        {
            return true;
        }
        // Tables of contents (Texinfo, docutils, DocBook) and Texinfo's Next/Previous/Up bars
        // (`header`) are mostly links; Doxygen calls its whole page body `contents`, Javadoc
        // puts a page's `<h1>` in a `header`. Dropped only when most of the text is links.
        if !worded_link
            && e.classes().any(|c| LINK_LIST_CLASSES.contains(&c))
            && mostly_links(node, Links::Any)
        {
            return true;
        }
        // A page's own table of contents, whatever the generator calls it (Node.js:
        // `<details id="toc">`; a bare "On this page" list): an element so named, or a list,
        // whose text is mostly links to places on this page. Indexed, it outranks the sections
        // it lists for any question that names them, and holds none of their text.
        let is_list = matches!(name, "ul" | "ol");
        let toc_id = e.id().is_some_and(|id| TOC_IDS.contains(&id));
        if (toc_id || is_list)
            && has_links(node, Links::InPage, MIN_TOC_LINKS)
            && mostly_links(node, Links::InPage)
        {
            return true;
        }
        // A site's menu of pages (Node.js's sidebar: three bare lists in a `div`; SQLite's
        // table of contents: nested `div`s): many links and next to no other text. A list that
        // says something of each link is content, and so is a table whose cells are all links
        // (SQLite's release dates, each a link to its release's changes) and code whose names
        // are (rustdoc's and Javadoc's signatures link every type).
        if name != "body" && !is_data_part(name) && has_links(node, Links::Any, MIN_MENU_LINKS) {
            let (linked, all) = link_letters(node, Links::Any);
            let holds_data = || {
                node.descendants()
                    .any(|d| matches!(d.value(), Node::Element(x) if is_data_part(x.name())))
            };
            if linked * 10 >= all * 9 && !holds_data() {
                return true;
            }
        }
        // Texinfo index "Jump to:" letter bars.
        name == "table"
            && node.descendants().any(|d| {
                matches!(d.value(), Node::Element(x) if x.classes().any(|c| c == "summary-letter"))
            })
    }

    fn element(&mut self, node: NodeRef<'_, Node>, e: &Element, depth: usize) {
        let name = e.name();
        if self.inline_mode {
            let block = is_block(name);
            if block || name == "br" {
                self.inline.space();
            }
            if name == "img" {
                self.alt(e);
            }
            self.children(node, depth);
            if block {
                self.inline.space();
            }
            return;
        }
        match name {
            // A box's title read as a heading would make the rest of its section look like
            // part of the box (DocBook titles each note and warning with an `<h3>`).
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" if self.boxes > 0 => {
                self.block_start();
                self.children(node, depth);
                self.flush();
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let level = usize::from(name.as_bytes()[1] - b'0');
                self.block_start();
                let text = self.gather(node, depth);
                if !text.is_empty() {
                    self.b.heading_prefix(level);
                    text.write(&mut self.b, false);
                    self.b.end_block();
                }
            }
            "pre" | "xmp" | "listing" | "plaintext" => self.code(&[node], false),
            // Code laid out one element per line (Doxygen's `div.fragment` of `div.line`s, in
            // its examples and source pages): a code block, not a paragraph per line. What else
            // it holds (Doxygen's hover tooltips, hidden) is walked after it as usual.
            "div" if is_listing(node) => {
                let lines: Vec<_> = node.children().filter(|c| is_line(*c)).collect();
                self.code(&lines, true);
                for child in node.children().filter(|c| !is_line(*c)) {
                    self.walk(child, depth + 1);
                }
                self.flush();
            }
            "ul" | "ol" | "menu" => {
                self.block_start();
                let list = if name == "ol" {
                    List::Ordered(
                        e.attr("start")
                            .and_then(|s| s.trim().parse().ok())
                            .unwrap_or(1),
                    )
                } else {
                    List::Bullet
                };
                self.lists.push(list);
                self.children(node, depth);
                self.lists.pop();
                self.flush();
            }
            "li" => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(List::Ordered(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "- ".to_string(),
                };
                self.indents.push(marker.len());
                self.marker = Some(marker);
                self.children(node, depth);
                self.flush();
                self.marker = None;
                self.indents.pop();
            }
            "dl" => {
                self.block_start();
                self.children(node, depth);
                self.flush();
                self.emit_terms();
            }
            "dt" => {
                self.flush();
                let term = self.gather(node, depth);
                if !term.is_empty() {
                    self.terms.push(term);
                }
            }
            "dd" => {
                self.flush();
                self.children(node, depth);
                self.flush();
                self.emit_terms();
            }
            // A code listing laid out as a table (Pygments' and Rouge's `linenos`, Chroma's
            // `lntable`): the gutter's cell drops out and the code is a code block.
            "table" => match listing_gutters(node) {
                Some(found) => {
                    let outer = std::mem::replace(&mut self.listing_gutters, found);
                    self.listing_gutters.extend(outer.iter().copied());
                    self.children(node, depth);
                    self.listing_gutters = outer;
                }
                None => self.table(node, depth),
            },
            "hr" => self.block_start(),
            "br" => self.inline.space(),
            "img" => self.alt(e),
            _ if is_block(name) => {
                let saved = self.lang.clone();
                if let Some(l) = e.classes().find_map(|c| c.strip_prefix("highlight-")) {
                    self.lang = match l {
                        "default" | "none" | "text" => String::new(),
                        "python3" => "python".into(),
                        other => other.to_string(),
                    };
                }
                let is_box = e.classes().any(|c| BOX_CLASSES.contains(&c));
                self.boxes += usize::from(is_box);
                self.flush();
                self.children(node, depth);
                self.flush();
                self.boxes -= usize::from(is_box);
                self.lang = saved;
            }
            _ => self.children(node, depth),
        }
    }

    fn alt(&mut self, e: &Element) {
        if let Some(alt) = e.attr("alt").filter(|a| !a.trim().is_empty()) {
            self.inline.space();
            self.inline.push(alt, None);
            self.inline.space();
        }
    }

    /// Text of `node`'s children as one line (heading, term, cell).
    fn gather(&mut self, node: NodeRef<'_, Node>, depth: usize) -> Inline {
        let outer = std::mem::take(&mut self.inline);
        let mode = std::mem::replace(&mut self.inline_mode, true);
        self.children(node, depth);
        self.inline_mode = mode;
        std::mem::replace(&mut self.inline, outer)
    }

    /// Before a block that is not a paragraph: pending prose and lone terms go out first.
    fn block_start(&mut self) {
        self.flush();
        self.emit_terms();
    }

    /// Emits gathered prose as a paragraph (with a pending list marker and term lines).
    fn flush(&mut self) {
        if self.inline.is_empty() {
            self.inline = Inline::default();
            return;
        }
        let para = std::mem::take(&mut self.inline);
        self.b.end_block();
        let indent: usize = self.indents.iter().sum();
        match self.marker.take() {
            Some(m) => {
                self.b.markup(&" ".repeat(indent - m.len()));
                self.b.markup(&m);
            }
            None => self.b.markup(&" ".repeat(indent)),
        }
        for (i, term) in std::mem::take(&mut self.terms).into_iter().enumerate() {
            term.write(&mut self.b, i == 0);
            self.b.markup("\n");
        }
        para.write(&mut self.b, true);
        self.b.end_block();
    }

    /// Terms whose description had no paragraph: a paragraph of their own.
    fn emit_terms(&mut self) {
        if self.terms.is_empty() {
            return;
        }
        self.b.end_block();
        let terms = std::mem::take(&mut self.terms);
        let n = terms.len();
        for (i, term) in terms.into_iter().enumerate() {
            term.write(&mut self.b, i == 0);
            if i + 1 < n {
                self.b.markup("\n");
            }
        }
        self.b.end_block();
    }

    /// `pre` (or the lines of a listing, `line_per_root`): text kept verbatim (whitespace and
    /// all) in a fenced block, without its line-number gutter.
    fn code(&mut self, roots: &[NodeRef<'_, Node>], line_per_root: bool) {
        self.block_start();
        let mut code = String::new();
        let mut pieces = Vec::new();
        for (k, &node) in roots.iter().enumerate() {
            if line_per_root && k > 0 {
                code.push('\n');
            }
            self.code_text(node, &mut code, &mut pieces);
        }
        let lang = self.lang.clone();
        // Inside a list item the block is indented to the item's text, or it would end the list
        // (Javadoc puts every method's examples in a `<li>`; Sphinx, a step's commands).
        let indent = self.indents.iter().sum();
        let marker = self.marker.take();
        (self.b).code_block_in_item(&lang, &code, &pieces, indent, marker.as_deref());
    }

    /// Appends the text below `node` to `code`, less its gutters, and where it came from.
    fn code_text(
        &mut self,
        node: NodeRef<'_, Node>,
        code: &mut String,
        pieces: &mut Vec<CodePiece>,
    ) {
        let gutters = gutters(node);
        let mut in_gutter = 0usize;
        // The no-break space a generator puts between a line's number and its code (Doxygen).
        let mut after_gutter = false;
        for edge in node.traverse() {
            let d = match edge {
                Edge::Open(d) => d,
                Edge::Close(d) => {
                    if in_gutter > 0 && matches!(d.value(), Node::Element(_)) {
                        in_gutter -= 1;
                    }
                    continue;
                }
            };
            if in_gutter > 0 || gutters.contains(&d.id()) {
                in_gutter += usize::from(matches!(d.value(), Node::Element(_)));
                after_gutter = true;
                continue;
            }
            match d.value() {
                Node::Text(t) => {
                    let t: &str = t;
                    let t = match std::mem::take(&mut after_gutter) {
                        true => t.strip_prefix('\u{a0}').unwrap_or(t),
                        false => t,
                    };
                    let start = code.len();
                    code.push_str(t);
                    if let Some(src) = self.loc.locate(t) {
                        let lead = t.len() - t.trim_start().len();
                        pieces.push((start + lead..code.len(), Some(src), None));
                    }
                }
                Node::Element(e) if e.name() == "br" => code.push('\n'),
                _ => {}
            }
        }
    }

    fn table(&mut self, node: NodeRef<'_, Node>, depth: usize) {
        self.block_start();
        let mut rows: Vec<Vec<Inline>> = Vec::new();
        let mut caption = None;
        self.rows(node, depth, &mut rows, &mut caption);
        if let Some(c) = caption.filter(|c: &Inline| !c.is_empty()) {
            self.b.end_block();
            c.write(&mut self.b, true);
            self.b.end_block();
        }
        rows.retain(|cells| cells.iter().any(|c| !c.is_empty()));
        let cols = rows
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
            .min(MAX_COLUMNS);
        if cols == 0 {
            return;
        }
        if cols == 1 && rows.len() == 1 {
            // A layout table around one block of text.
            let cells = rows.pop().unwrap_or_default();
            self.inline = cells.into_iter().next().unwrap_or_default();
            self.flush();
            return;
        }
        self.b.end_block();
        for (i, cells) in rows.into_iter().enumerate() {
            let mut cells = cells.into_iter();
            for _ in 0..cols {
                self.b.markup("| ");
                if let Some(cell) = cells.next() {
                    let base = self.b.len();
                    let text = escape_cell(&cell.text);
                    self.b.markup(&text);
                    if text.len() == cell.text.len() {
                        for (r, src) in cell.marks {
                            self.b.span(base + r.start..base + r.end, Some(src), None);
                        }
                    }
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

    /// Rows of a table (through `thead`/`tbody`/`tfoot`, not into nested tables).
    fn rows(
        &mut self,
        node: NodeRef<'_, Node>,
        depth: usize,
        rows: &mut Vec<Vec<Inline>>,
        caption: &mut Option<Inline>,
    ) {
        for c in node.children() {
            let Node::Element(e) = c.value() else {
                continue;
            };
            if self.skip(c, e) {
                continue;
            }
            match e.name() {
                "thead" | "tbody" | "tfoot" if depth < MAX_DEPTH => {
                    self.rows(c, depth + 1, rows, caption)
                }
                "caption" => *caption = Some(self.gather(c, depth)),
                "tr" => {
                    let mut cells = Vec::new();
                    for cell in c.children() {
                        let Node::Element(ce) = cell.value() else {
                            continue;
                        };
                        if matches!(ce.name(), "td" | "th") && cells.len() < MAX_COLUMNS {
                            cells.push(self.gather(cell, depth + 1));
                        }
                    }
                    rows.push(cells);
                }
                _ => {}
            }
        }
    }
}

fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "section"
            | "article"
            | "main"
            | "header"
            | "blockquote"
            | "figure"
            | "figcaption"
            | "center"
            | "address"
            | "body"
            | "html"
            | "details"
            | "summary"
            | "fieldset"
            | "legend"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "pre"
            | "ul"
            | "ol"
            | "li"
            | "dl"
            | "dt"
            | "dd"
            | "table"
            | "tr"
            | "td"
            | "th"
            | "caption"
            | "hr"
    )
}

/// Classes of boxes set beside the text: admonitions (DocBook, docutils, Sphinx) and alerts.
const BOX_CLASSES: &[&str] = &[
    "note",
    "warning",
    "tip",
    "caution",
    "important",
    "admonition",
    "attention",
    "danger",
    "hint",
    "callout",
    "alert",
];

/// Classes that name a list of links on some generators and the page itself on others
/// (Doxygen's body is `contents`, Javadoc's `<h1>` sits in a `header`): judged by their links.
const LINK_LIST_CLASSES: &[&str] = &["contents", "toc", "header"];

/// Ids that name a page's table of contents (Node.js, Pandoc, kramdown, GitHub wikis).
const TOC_IDS: &[&str] = &["toc", "TOC", "table-of-contents", "markdown-toc"];

/// Links to places on the page that make a list a table of contents; fewer are a "see also".
const MIN_TOC_LINKS: usize = 4;

/// Links that make a list of nothing but links a menu of pages rather than a "see also".
const MIN_MENU_LINKS: usize = 8;

/// Letters read to judge whether an element is mostly links: enough for any table of contents,
/// and a bound on the work, since such elements may nest (up to `MAX_DEPTH`) around a whole page.
const LINK_SAMPLE_LETTERS: usize = 16_384;

/// Which links count when an element is judged by its links.
#[derive(Clone, Copy)]
enum Links {
    Any,
    /// Links to places on this page (`href="#…"`).
    InPage,
}

impl Links {
    fn counts(self, node: NodeRef<'_, Node>) -> bool {
        match node.value() {
            Node::Element(x) if x.name() == "a" => match self {
                Links::Any => true,
                Links::InPage => x
                    .attr("href")
                    .is_some_and(|h| h.trim_start().starts_with('#')),
            },
            _ => false,
        }
    }
}

/// Letters and digits below `node` (the first [`LINK_SAMPLE_LETTERS`]): those in links of
/// kind `links`, and all.
fn link_letters(node: NodeRef<'_, Node>, links: Links) -> (usize, usize) {
    let (mut linked, mut all, mut open_links) = (0usize, 0usize, 0usize);
    for edge in node.traverse() {
        match edge {
            Edge::Open(n) if links.counts(n) => open_links += 1,
            Edge::Close(n) if links.counts(n) => open_links -= 1,
            Edge::Open(n) => {
                if let Node::Text(t) = n.value() {
                    let letters = (t.chars().filter(|c| c.is_alphanumeric()))
                        .take(LINK_SAMPLE_LETTERS - all)
                        .count();
                    all += letters;
                    if open_links > 0 {
                        linked += letters;
                    }
                    if all >= LINK_SAMPLE_LETTERS {
                        break;
                    }
                }
            }
            Edge::Close(_) => {}
        }
    }
    (linked, all)
}

/// Whether most letters and digits below `node` are the text of links of kind `links`.
fn mostly_links(node: NodeRef<'_, Node>, links: Links) -> bool {
    let (linked, all) = link_letters(node, links);
    linked * 2 > all
}

/// Whether `node` has at least `at_least` links of kind `links`.
fn has_links(node: NodeRef<'_, Node>, links: Links, at_least: usize) -> bool {
    node.descendants()
        .filter(|&d| links.counts(d))
        .take(at_least)
        .count()
        >= at_least
}

/// Tables and code blocks: their links are data (a release's date, a signature's types), never
/// a menu. (Inline `code` is not: menus set names in it.)
fn is_data_part(name: &str) -> bool {
    matches!(
        name,
        "table" | "thead" | "tbody" | "tfoot" | "tr" | "td" | "th" | "caption" | "pre"
    )
}

/// Class words of line-number gutters: Pygments `linenos`/`linenodiv`, Rouge `lineno` and
/// `rouge-gutter`, Javadoc `source-line-no`, Shiki `line-number`, highlight.js `hljs-ln-n`.
const GUTTER_CLASS_WORDS: &[&str] = &["lineno", "linenum", "line-num", "line-no", "gutter", "ln-n"];

/// Whether `node` is marked as a code listing's line-number gutter: numbers a reader sees
/// beside the code, never part of it (rustdoc's source pages number each line in a
/// `data-nosnippet` link inside the `pre`). Only a marked element holding nothing but digits is
/// a gutter ([`gutters`]), so a `<pre class="line-numbers">` of code never is.
fn marked_gutter(node: NodeRef<'_, Node>) -> bool {
    let Node::Element(e) = node.value() else {
        return false;
    };
    // Prism calls the code itself `line-numbers`: code is never a gutter, though a gutter may
    // hold a `pre` (Pygments, Rouge).
    if matches!(e.name(), "pre" | "code") {
        return false;
    }
    e.attr("data-nosnippet").is_some()
        || e.attr("data-line-number").is_some()
        || e.classes().any(|c| {
            let c = c.to_ascii_lowercase();
            // Chroma (Hugo): `ln` inline, `lnt` in a table's gutter cell.
            matches!(c.as_str(), "ln" | "lnt") || GUTTER_CLASS_WORDS.iter().any(|w| c.contains(w))
        })
}

fn only_digits(node: &Node) -> bool {
    match node {
        Node::Text(t) => t.chars().all(|c| c.is_ascii_digit() || c.is_whitespace()),
        _ => true,
    }
}

/// The gutters below `node`: marked elements ([`marked_gutter`]) holding nothing but digits,
/// found in one pass however deep they nest.
fn gutters(node: NodeRef<'_, Node>) -> HashSet<NodeId> {
    let mut found = HashSet::new();
    // Per open element: whether all text so far below it is digits.
    let mut digits_only: Vec<bool> = Vec::new();
    for edge in node.traverse() {
        match edge {
            Edge::Open(d) if matches!(d.value(), Node::Element(_)) => digits_only.push(true),
            Edge::Open(d) => {
                if !only_digits(d.value())
                    && let Some(top) = digits_only.last_mut()
                {
                    *top = false;
                }
            }
            Edge::Close(d) if matches!(d.value(), Node::Element(_)) => {
                let all_digits = digits_only.pop().unwrap_or(true);
                if all_digits && marked_gutter(d) {
                    found.insert(d.id());
                }
                if let Some(parent) = digits_only.last_mut() {
                    *parent &= all_digits;
                }
            }
            Edge::Close(_) => {}
        }
    }
    found
}

/// The gutters of a table laid out around a code listing (it holds a `pre` and a line-number
/// gutter); `None` for any other table.
fn listing_gutters(node: NodeRef<'_, Node>) -> Option<HashSet<NodeId>> {
    let has_pre = node
        .descendants()
        .any(|d| matches!(d.value(), Node::Element(x) if x.name() == "pre"));
    if !has_pre {
        return None;
    }
    Some(gutters(node)).filter(|g| !g.is_empty())
}

/// A listing has at least this many line elements.
const MIN_LISTING_LINES: usize = 2;

/// Whether `node` is a listing: at least [`MIN_LISTING_LINES`] children that are lines
/// ([`is_line`]) and no text of its own.
fn is_listing(node: NodeRef<'_, Node>) -> bool {
    let mut lines = 0;
    for child in node.children() {
        match child.value() {
            Node::Text(t) if !t.trim().is_empty() => return false,
            _ => lines += usize::from(is_line(child)),
        }
    }
    lines >= MIN_LISTING_LINES
}

/// An element of a listing holding one line of code (`class="line"`).
fn is_line(node: NodeRef<'_, Node>) -> bool {
    matches!(node.value(), Node::Element(e) if e.classes().any(|c| c.eq_ignore_ascii_case("line")))
}

/// Whether any text below `node` holds a letter or a digit.
fn has_words(node: NodeRef<'_, Node>) -> bool {
    node.descendants().any(|d| match d.value() {
        Node::Text(t) => t.chars().any(char::is_alphanumeric),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(html: &str) -> String {
        convert(html.as_bytes())
            .map(|c| c.markdown)
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn blocks_and_inline_text() {
        let out = md(
            "<html><head><title> T  x </title><style>p{}</style></head><body>\
            <h2>Head<a class=headerlink>¶</a></h2><p>One <code>two</code>\n  three</p>\
            <ul><li>a</li><li><p>b</p><ol><li>c</li></ol></li></ul>\
            <dl><dt>-N <var>file</var></dt><dd><p>True if file</p><p>More.</p></dd></dl>\
            <pre>x  = 1\n  y</pre><table><tr><th>K</th><th>V</th></tr><tr><td>a|b</td></tr></table>\
            <script>bad()</script></body></html>",
        );
        insta::assert_snapshot!(out);
    }

    #[test]
    fn main_content_wins_over_furniture() {
        let out = md(
            "<body><div class=nav>menu</div><div role=main><p>text</p></div>\
            <div class=footer>foot</div></body>",
        );
        assert_eq!(out, "text\n");
    }

    #[test]
    fn headings_written_as_links_keep_their_text() {
        // mdBook puts each heading's text in `<a class="header">`; Sphinx follows it with a `¶`
        // permalink, rustdoc with a `§` one; Texinfo's `<div class="header">` is a navigation bar.
        let out = md(
            "<body><div class=header><p>Next: <a href=n.html>Later node</a></p></div><main>\
            <h1 id=own><a class=header href=#own>What Is Ownership?</a></h1><p>Rules.</p>\
            <h2 id=rules><a class=header href=#rules>Ownership <code>Rules</code></a>\
            <a class=headerlink href=#rules>¶</a></h2><p>Each value has an owner.</p>\
            <h2 id=ex>Examples<a href=#ex class=anchor>§</a></h2><p>See <a href=#fn1>1</a>.</p>\
            </main></body>",
        );
        assert_eq!(
            out,
            "# What Is Ownership?\n\nRules.\n\n## Ownership Rules\n\nEach value has an owner.\n\n\
             ## Examples\n\nSee 1.\n"
        );
    }

    #[test]
    fn a_heading_in_a_box_titles_the_box_not_the_rest_of_the_section() {
        // DocBook: navigation bars, a per-page table of contents, and an `<h3>` titling a
        // warning box in the middle of a section whose text goes on after the box.
        let out = md(
            "<body><div class=navheader><table><tr><td><a href=p.html>Prev</a></td>\
            <td>Home</td></tr></table></div><div class=sect1><div class=toc><dl>\
            <dt><a href=#a>12.3.1. Parsing</a></dt></dl></div>\
            <h2 class=title>12.3.4. Highlighting Results</h2><p>ts_headline marks terms.</p>\
            <div class=warning><h3 class=title>Warning: XSS safety</h3><p>Sanitize it.</p></div>\
            <p>It can be slow.</p></div><div class=navfooter><table><tr><td>Next</td></tr>\
            </table></div></body>",
        );
        assert_eq!(
            out,
            "## 12.3.4. Highlighting Results\n\nts_headline marks terms.\n\n\
             Warning: XSS safety\n\nSanitize it.\n\nIt can be slow.\n"
        );
    }

    #[test]
    fn contents_and_header_are_navigation_only_when_they_are_mostly_links() {
        // docutils' table of contents and Texinfo's Next/Up bar are dropped; Javadoc's header
        // (the page's `<h1>`) and Doxygen's page body (`div.contents`) are the page.
        let out = md(
            "<body><div class=\"contents topic\"><p>Contents</p><ul><li><a href=#a>Setup \
            and first steps</a></li><li><a href=#b>Configuration reference</a></li></ul></div>\
            <div class=header><p>Next: <a href=n.html>Shell Syntax</a>, Up: \
            <a href=u.html>Basic Shell Features</a></p></div>\
            <div class=header><h1 class=title>Class Vector</h1></div>\
            <div class=contents><div class=textblock><p>A standard container which offers \
            fixed time access to individual elements in any order.</p></div></div></body>",
        );
        assert_eq!(
            out,
            "# Class Vector\n\nA standard container which offers fixed time access to \
             individual elements in any order.\n"
        );
    }

    #[test]
    fn a_link_share_is_judged_on_a_bounded_sample() {
        // Elements judged by their links may nest around a whole page: each reads a bounded
        // sample, so the work does not grow with depth times page size.
        let words = "word ".repeat(5_000); // 20,000 letters
        let links = "<a href=#x>link</a> ".repeat(10_000); // 40,000 letters of links
        let share = |html: String| {
            let doc = Html::parse_document(&html);
            let div = doc.select(&Selector::parse("div").unwrap()).next().unwrap();
            mostly_links(*div, Links::Any)
        };
        assert!(!share(format!("<div><p>{words}</p>{links}</div>")));
        assert!(share(format!("<div>{links}<p>{words}</p></div>")));
    }

    #[test]
    fn tables_of_contents_and_menus_of_pages_are_navigation_whatever_they_are_called() {
        // Node.js: a sidebar menu of pages in a bare `<ul>`, the page's own table of contents in
        // `<details id="toc">`; a bare list of links to the page's sections mid-page. A list
        // that says something of each link, and a short "see also", are content.
        let menu = |pages: std::ops::Range<u32>| -> String {
            pages
                .map(|i| format!("<li><a href=p{i}.html>Module {i}</a></li>"))
                .collect()
        };
        let releases: String = (1..=8)
            .map(|i| {
                format!(
                    "<tr><td><a href=t{i}>2022-0{i}-01</a></td><td><a href=r{i}>3.{i}</a></td></tr>"
                )
            })
            .collect();
        let signature: String = (1..=8)
            .map(|i| format!("<a href=T{i}.html>Type{i}</a>, "))
            .collect();
        let out = md(&format!(
            "<body><div id=column2><ul>{}</ul><hr><ul>{}</ul></div>\
            <details id=toc open><summary>Table of contents</summary><ul>\
            <li><a href=#dns>DNS</a><ul><li><a href=#lookup><code>dns.lookup()</code></a></li>\
            <li><a href=#resolve><code>dns.resolve()</code></a></li>\
            <li><a href=#reverse><code>dns.reverse()</code></a></li></ul></li></ul></details>\
            <h2 id=dns>DNS</h2><p>Name resolution.</p>\
            <ul><li><a href=#lookup>lookup</a></li><li><a href=#resolve>resolve</a></li>\
            <li><a href=#reverse>reverse</a></li><li><a href=#servers>servers</a></li></ul>\
            <ul><li><a href=#lookup>lookup</a> reads /etc/hosts through the system resolver</li>\
            <li><a href=#resolve>resolve</a> always queries a DNS server on the network</li>\
            <li><a href=#reverse>reverse</a> maps an address back to host names</li>\
            <li><a href=#servers>servers</a> lists the servers in use</li></ul>\
            <p>See also <a href=#lookup>lookup</a>.</p><ul><li><a href=#a>Caveats</a></li>\
            <li><a href=#b>Examples</a></li></ul><table>{releases}</table>\
            <pre>{signature}</pre></body>",
            menu(1..5),
            menu(5..9)
        ));
        let (text, table) = out.split_at(out.find("| 2022").expect("the table is kept"));
        assert_eq!(
            text,
            "## DNS\n\nName resolution.\n\n\
             - lookup reads /etc/hosts through the system resolver\n\n\
             - resolve always queries a DNS server on the network\n\n\
             - reverse maps an address back to host names\n\n\
             - servers lists the servers in use\n\n\
             See also lookup.\n\n- Caveats\n\n- Examples\n\n"
        );
        assert!(table.contains("| 2022-08-01 | 3.8 |\n"), "{table}");
        assert!(table.ends_with("Type8,\n```\n"), "{table}");
    }

    #[test]
    fn line_numbers_beside_code_are_not_part_of_it() {
        // rustdoc's source pages: a `data-nosnippet` link per line inside the `pre`; Pygments
        // (Sphinx, MkDocs) and Rouge (Jekyll): the numbers in a table cell of their own; Chroma
        // (Hugo): numbered spans in a cell of their own; Javadoc: a span per line.
        let out = md("<body>\
            <pre class=rust><code><a href=#1 id=1 data-nosnippet>1</a><span>// one</span>\n\
            <a href=#2 id=2 data-nosnippet>2</a>let two = 2;\n</code></pre>\
            <table class=highlighttable><tr><td class=linenos><div class=linenodiv><pre>\
            <span class=normal>1</span>\n<span class=normal>2</span></pre></div></td>\
            <td class=code><div class=highlight><pre>def f():\n    return 42\n</pre></div></td>\
            </tr></table>\
            <table class=rouge-table><tr><td class='rouge-gutter gl'><pre class=lineno>1\n2\n</pre>\
            </td><td class=rouge-code><pre>echo hi\necho there\n</pre></td></tr></table>\
            <table class=lntable><tr><td class=lntd><pre><code><span class=lnt>7\n</span>\
            <span class=lnt>8\n</span></code></pre></td><td class=lntd><pre><code>package main\n\
            func main() {}\n</code></pre></td></tr></table>\
            <pre><span class=source-line-no>001</span><span id=line-1>class A {}</span></pre>\
            <pre class=line-numbers><code>10 20 30</code></pre>\
            <table><tr><th>Line</th><th>Fix</th></tr><tr><td class=lineno>12</td><td>E1</td></tr>\
            <tr><td class=lineno>14</td><td>E2</td></tr></table></body>");
        assert_eq!(
            out,
            "```\n// one\nlet two = 2;\n```\n\n\
             ```\ndef f():\n    return 42\n```\n\n\
             ```\necho hi\necho there\n```\n\n\
             ```\npackage main\nfunc main() {}\n```\n\n\
             ```\nclass A {}\n```\n\n\
             ```\n10 20 30\n```\n\n\
             | Line | Fix |\n|---|---|\n| 12 | E1 |\n| 14 | E2 |\n"
        );
    }

    #[test]
    fn code_laid_out_one_element_per_line_is_a_code_block() {
        // Doxygen: examples and source pages are a `div.fragment` of `div.line`s, numbered in
        // a `span.lineno` on source pages, followed by hidden hover tooltips (`div.ttc`).
        let out = md("<body><p>Usage:</p><div class=\"fragment\">\
            <div class=\"line\"><span class=\"lineno\">    1</span>&#160;<span class=\"keyword\">using namespace </span><a class=\"code\" href=\"n.html\">Json</a>;</div>\n\
            <div class=\"line\"><span class=\"lineno\">    2</span>&#160;Value value;</div>\n\
            <div class=\"line\"><span class=\"lineno\">    3</span>&#160;</div>\n\
            <div class=\"line\"><span class=\"lineno\">    4</span>&#160;<span class=\"keywordtype\">bool</span> ok = parse(builder, &amp;value);</div>\n\
            <div class=\"ttc\" id=\"a1\"><div class=\"ttname\">Json</div><div class=\"ttdoc\">JSON (JavaScript Object Notation).</div></div>\
            </div><div><div class=\"line\">Only one line is a paragraph.</div></div></body>");
        assert_eq!(
            out,
            "Usage:\n\n```\nusing namespace Json;\nValue value;\n\nbool ok = parse(builder, &value);\n```\n\n\
             Only one line is a paragraph.\n"
        );
    }

    #[test]
    fn a_page_without_title_or_h1_is_titled_by_an_element_so_named() {
        let title = |html: &str| convert(html.as_bytes()).ok().and_then(|c| c.title);
        // Doxygen under a custom header: no `<title>`, the page's name in `div.title`.
        let doxygen = "<html><head></head><body><div class=\"header\"><div class=\"headertitle\">\
            <div class=\"title\">Json::Value Class Reference</div></div></div><p>Represents a JSON value.</p></body></html>";
        assert_eq!(
            title(doxygen).as_deref(),
            Some("Json::Value Class Reference")
        );
        // A `<title>` or an `<h1>` wins (the chunker takes the `<h1>` when there is no title).
        let titled =
            "<title>JsonCpp: Json::Value</title><body><div class=\"title\">Other</div></body>";
        assert_eq!(title(titled).as_deref(), Some("JsonCpp: Json::Value"));
        let h1 = "<body><h1>Values</h1><div class=\"title\">Other</div></body>";
        assert_eq!(title(h1), None);
    }

    #[test]
    fn code_in_a_list_item_stays_in_the_item() {
        // A step's commands (Sphinx) and a method's examples (Javadoc: every member is an
        // `<li>`): a fence at the margin would end the list, and what follows the code in the
        // item would read as an indented code block.
        let out = md(
            "<body><ol><li><p>Install it:</p><pre>pip install x\n\npip check</pre>\
            </li><li><pre>run it</pre><p>Then check.</p></li></ol>\
            <ul><li><section><h3>isBlank</h3><div>Checks for whitespace.</div>\
            <pre> isBlank(\"\")  = true</pre><dl><dt>Returns:</dt><dd>true if blank</dd></dl>\
            </section></li></ul></body>",
        );
        assert_eq!(
            out,
            "1. Install it:\n\n   ```\n   pip install x\n\n   pip check\n   ```\n\n\
             2. ```\n   run it\n   ```\n\n   Then check.\n\n\
             ### isBlank\n\n- Checks for whitespace.\n\n  ```\n   isBlank(\"\")  = true\n  ```\n\n\
             \x20 Returns:\ntrue if blank\n"
        );
    }

    #[test]
    fn spans_point_at_source_text() {
        let src = "<body><p>Hello <b>bold</b> world</p><pre>a &lt; b</pre></body>";
        let c = convert(src.as_bytes()).unwrap();
        for s in &c.spans {
            let m = &c.markdown[s.markdown.clone()];
            let r = s.source.clone().unwrap();
            assert!(src[r].contains(m.split(' ').next().unwrap()), "{m:?}");
        }
        let p = c.provenance(0..5);
        assert_eq!(p.source.map(|r| &src[r]), Some("Hello <b>bold</b> world"));
    }

    #[test]
    fn deep_nesting_and_binary_are_bounded() {
        // Past MAX_DEPTH, read as plain text.
        let deep = "<div>".repeat(2_000) + "deep text" + &"</div>".repeat(2_000);
        assert_eq!(md(&deep), "deep text\n");
        // So deep that building the tree is quadratic work: refused (html_parse.rs).
        let deeper = "<div>".repeat(20_000) + "deep text" + &"</div>".repeat(20_000);
        assert!(matches!(
            convert(deeper.as_bytes()),
            Err(FormatError::TooLarge { .. })
        ));
        let bin = [0u8, 1, 2, 0, 0xff, 0xfe, 0].repeat(100);
        assert!(matches!(convert(&bin), Err(FormatError::Invalid { .. })));
        assert_eq!(md("<p>unclosed <b>bold <i>it"), "unclosed bold it\n");
    }
}
