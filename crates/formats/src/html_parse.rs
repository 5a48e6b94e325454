//! HTML parsing with a bound on the tree builder's work.
//!
//! The HTML tree-construction algorithm walks the stack of open elements for most tags (the
//! "has an element in scope" checks, implied end tags, the adoption agency). On real pages that
//! stack is a few dozen elements deep, but markup that nests without closing (`<div>` or
//! `<ul><li>` repeated, misnested `<font><i><b>`) makes every tag walk a stack as deep as the
//! file is long: quadratic, so one 500 KB file took seconds and a 32 MB one would stall a sync
//! for hours. Browsers cap the depth; html5ever does not. Each step of those walks asks the sink
//! for an element's name (or compares two nodes), so the sink here counts them, and the input
//! is fed in pieces: once the count passes a budget proportional to the input, the file is
//! refused with [`FormatError::TooLarge`] instead of parsed on. The tree is otherwise exactly
//! what `scraper::Html::parse_document` builds.

use std::borrow::Cow;
use std::cell::Cell;

use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use scraper::{Html, HtmlTreeSink};

use crate::convert::FormatError;

/// Work allowed per input byte. Real pages stay far below it: the Python and Bash manuals' pages
/// take at most 0.33 steps per byte, their stacks being a few dozen deep. A step per byte is
/// roughly a tenth of the stack's depth (a `<div></div>` pair is 11 bytes and walks the stack
/// once), so this admits pages whose elements sit ~700 deep on average, past the 512 at which
/// browsers stop nesting.
const WORK_PER_BYTE: u64 = 64;
/// Work allowed regardless of size, so small files never meet the bound.
const WORK_FLOOR: u64 = 4 << 20;
/// Bytes fed to the parser between two checks of the count. Bounds the overshoot: a piece adds
/// at most (its tags × the stack depth) steps.
const PIECE: usize = 16 << 10;

/// Parses `text` as an HTML document, or refuses it when building its tree would take more
/// than the budget's steps.
pub(crate) fn parse_document(text: &str) -> Result<Html, FormatError> {
    let budget = WORK_FLOOR.saturating_add(WORK_PER_BYTE.saturating_mul(text.len() as u64));
    parse_counted(text, budget).map(|(html, _)| html)
}

/// [`parse_document`] with `budget` steps; also returns the steps taken.
fn parse_counted(text: &str, budget: u64) -> Result<(Html, u64), FormatError> {
    let work = Cell::new(0u64);
    let sink = CountingSink {
        inner: HtmlTreeSink::new(Html::new_document()),
        work: &work,
    };
    let mut parser = html5ever::driver::parse_document(sink, Default::default());
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(PIECE);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, tail) = rest.split_at(cut);
        parser.process(StrTendril::from_slice(piece));
        rest = tail;
        if work.get() > budget {
            return Err(FormatError::TooLarge {
                what: "the work of building this HTML page's tree (elements nested or misnested \
                       thousands deep), in steps,",
                limit: budget,
            });
        }
    }
    Ok((parser.finish(), work.get()))
}

/// scraper's sink, counting the steps of the tree builder's stack walks in `work`.
struct CountingSink<'w> {
    inner: HtmlTreeSink,
    work: &'w Cell<u64>,
}

impl CountingSink<'_> {
    fn step(&self) {
        self.work.set(self.work.get() + 1);
    }
}

impl TreeSink for CountingSink<'_> {
    type Handle = <HtmlTreeSink as TreeSink>::Handle;
    type Output = Html;
    type ElemName<'a>
        = <HtmlTreeSink as TreeSink>::ElemName<'a>
    where
        Self: 'a;

    fn finish(self) -> Html {
        self.inner.finish()
    }

    fn parse_error(&self, msg: Cow<'static, str>) {
        self.inner.parse_error(msg)
    }

    fn get_document(&self) -> Self::Handle {
        self.inner.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a Self::Handle) -> Self::ElemName<'a> {
        self.step();
        self.inner.elem_name(target)
    }

    fn create_element(
        &self,
        name: QualName,
        attrs: Vec<Attribute>,
        flags: ElementFlags,
    ) -> Self::Handle {
        self.inner.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> Self::Handle {
        self.inner.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Self::Handle {
        self.inner.create_pi(target, data)
    }

    fn append(&self, parent: &Self::Handle, child: NodeOrText<Self::Handle>) {
        self.inner.append(parent, child)
    }

    fn append_based_on_parent_node(
        &self,
        element: &Self::Handle,
        prev_element: &Self::Handle,
        child: NodeOrText<Self::Handle>,
    ) {
        self.inner
            .append_based_on_parent_node(element, prev_element, child)
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.inner
            .append_doctype_to_document(name, public_id, system_id)
    }

    fn mark_script_already_started(&self, node: &Self::Handle) {
        self.inner.mark_script_already_started(node)
    }

    fn pop(&self, node: &Self::Handle) {
        self.inner.pop(node)
    }

    fn get_template_contents(&self, target: &Self::Handle) -> Self::Handle {
        self.inner.get_template_contents(target)
    }

    fn same_node(&self, x: &Self::Handle, y: &Self::Handle) -> bool {
        self.step();
        self.inner.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode)
    }

    fn append_before_sibling(&self, sibling: &Self::Handle, new_node: NodeOrText<Self::Handle>) {
        self.inner.append_before_sibling(sibling, new_node)
    }

    fn add_attrs_if_missing(&self, target: &Self::Handle, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs)
    }

    fn associate_with_form(
        &self,
        target: &Self::Handle,
        form: &Self::Handle,
        nodes: (&Self::Handle, Option<&Self::Handle>),
    ) {
        self.inner.associate_with_form(target, form, nodes)
    }

    fn remove_from_parent(&self, target: &Self::Handle) {
        self.inner.remove_from_parent(target)
    }

    fn reparent_children(&self, node: &Self::Handle, new_parent: &Self::Handle) {
        self.inner.reparent_children(node, new_parent)
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Self::Handle) -> bool {
        self.inner
            .is_mathml_annotation_xml_integration_point(handle)
    }

    fn set_current_line(&self, line_number: u64) {
        self.inner.set_current_line(line_number)
    }

    fn allow_declarative_shadow_roots(&self, intended_parent: &Self::Handle) -> bool {
        self.inner.allow_declarative_shadow_roots(intended_parent)
    }

    fn attach_declarative_shadow(
        &self,
        location: &Self::Handle,
        template: &Self::Handle,
        attrs: &[Attribute],
    ) -> bool {
        self.inner
            .attach_declarative_shadow(location, template, attrs)
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    /// Markup that nests or misnests without end, each quadratic in html5ever: repeated, then
    /// ~1 MB long.
    const HOSTILE: [&str; 5] = [
        "<div>",
        "<ul><li>",
        "<div><span>",
        "<font><i><b>x</font>",
        "<section><p>text",
    ];

    fn page(body: &str) -> String {
        format!("<html><head><title>T</title></head><body>{body}</body></html>")
    }

    #[test]
    fn runaway_nesting_is_refused_by_its_step_count() {
        for unit in HOSTILE {
            // Unbounded, each of these takes minutes; refused, the count stopped it.
            let text = page(&unit.repeat((1 << 20) / unit.len()));
            match parse_document(&text) {
                Err(FormatError::TooLarge { what, limit }) => {
                    assert!(what.contains("HTML"), "{what}");
                    assert!(limit >= WORK_FLOOR, "{limit}");
                }
                other => panic!("{unit}: expected a refusal, got {:?}", other.map(|_| ())),
            }
        }
    }

    #[test]
    fn real_pages_parse_as_scraper_parses_them_and_far_inside_the_budget() {
        let mut pages = 0;
        for dir in ["python-docs", "bash"] {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/corpora")
                .join(dir);
            for path in files(&root) {
                if path.extension().is_none_or(|e| e != "html") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let (bounded, work) = parse_counted(&text, u64::MAX).unwrap();
                assert_eq!(
                    bounded.html(),
                    Html::parse_document(&text).html(),
                    "{}",
                    path.display()
                );
                // A tenth of the per-byte budget: real stacks are shallow.
                assert!(
                    work * 10 < WORK_PER_BYTE * text.len() as u64,
                    "{}",
                    path.display()
                );
                pages += 1;
            }
        }
        assert!(pages >= 10, "{pages} pages");
    }

    #[test]
    fn deep_but_sane_nesting_and_multibyte_pieces_parse() {
        // 400 levels (beyond what real pages use, below a browser's 512), repeated for 2 MB;
        // multi-byte text so that pieces are cut inside characters' reach.
        let block = "<div>".repeat(400) + "é ü 漢字 text " + &"</div>".repeat(400);
        let text = page(&block.repeat((2 << 20) / block.len()));
        let doc = parse_document(&text).unwrap();
        assert_eq!(doc.html(), Html::parse_document(&text).html());
    }

    fn files(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(files(&path));
            } else {
                out.push(path);
            }
        }
        out
    }
}
