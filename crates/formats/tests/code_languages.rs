//! Handmade sources per language: heading paths of methods, verbatim blocks that map back to
//! their bytes, syntax errors, and hostile inputs.

mod common;

use common::{assert_every_line_in_order, block_with, convert_path, heading_path_at};
use rag_formats::{Format, FormatError, Language, convert};

/// `n` lines of `line`, each indented by `indent`.
fn filler(indent: &str, line: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("{indent}{}\n", line.replace('N', &i.to_string())))
        .collect()
}

fn path_at(md: &str, needle: &str) -> Vec<String> {
    heading_path_at(
        md,
        md.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing")),
    )
}

fn rust_source() -> String {
    format!(
        "//! Counting things.\n\nuse std::fmt;\n\n/// A counter that counts.\npub struct Counter<T> {{\n    n: T,\n}}\n\n\
         impl<T: Clone> Counter<T> {{\n    /// Makes one.\n    pub fn new(n: T) -> Self {{\n        Counter {{ n }}\n    }}\n\n\
         \x20   /// Counts a lot.\n    #[inline]\n    pub fn big(&mut self) -> u64 {{\n        let mut total = 0;\n{}        total\n    }}\n\n\
         \x20   fn after(&self) -> T {{\n        self.n.clone()\n    }}\n}}\n\nfn main() {{}}\n",
        filler("        ", "total += N; // step N of the count", 30)
    )
}

#[test]
fn rust_method_heading_path_context_and_provenance() {
    let src = rust_source();
    let doc = convert_path("src/count.rs", src.as_bytes());
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    assert_eq!(doc.metadata["language"], "rust");
    assert_eq!(
        path_at(&doc.markdown, "pub fn big"),
        ["impl<T: Clone> Counter<T>", "fn big"]
    );
    // The heading escapes `<` so CommonMark does not read `<T: Clone>` as HTML.
    assert!(doc.markdown.contains("\n# impl\\<T: Clone> Counter\\<T>\n"));
    // The struct's doc comment is repeated as context in the method's section.
    let section = &doc.markdown[doc.markdown.find("## fn big").unwrap()..];
    assert!(section.starts_with("## fn big\n\nContext: A counter that counts.\n\n```rust\n"));
    // The block of `big` is its doc comment, attribute and body: exactly its bytes.
    let (text, source) = block_with(&doc, "pub fn big");
    let start = src.find("    /// Counts a lot.").unwrap();
    let end = src.find("\n    fn after").unwrap();
    assert_eq!(source, start..end);
    assert_eq!(text, &src[source]);
    assert_every_line_in_order(&src, &doc);
}

#[test]
fn python_method_heading_path() {
    let src = format!(
        "\"\"\"Greeting helpers.\"\"\"\nimport os\n\n\nclass Greeter(object):\n    \"\"\"Greets people politely.\n\n    More text.\n    \"\"\"\n\n    \
         greeting = 'hi'\n\n    def small(self):\n        return 1\n\n    @staticmethod\n    def big(name):\n        parts = []\n{}        \
         return parts\n\n    # trailing comment\n\n\ndef __helper__():\n    pass\n",
        filler(
            "        ",
            "parts.append(name + ' number N of the greeting')",
            30
        )
    );
    let doc = convert_path("greet.py", src.as_bytes());
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    assert_eq!(
        path_at(&doc.markdown, "def big"),
        ["class Greeter", "def big"]
    );
    // The decorator belongs to the method's block; the docstring summary is its context.
    let (text, _) = block_with(&doc, "def big(name)");
    assert!(text.starts_with("    @staticmethod\n    def big(name):\n"));
    assert!(
        doc.markdown
            .contains("## def big\n\nContext: Greets people politely.\n\n")
    );
    // Small members before the first big one stay under the class heading itself.
    assert_eq!(path_at(&doc.markdown, "def small"), ["class Greeter"]);
    // `__helper__` is not read as bold: the heading comes back literally.
    assert_eq!(path_at(&doc.markdown, "def __helper__"), ["def __helper__"]);
    assert_every_line_in_order(&src, &doc);
}

#[test]
fn javascript_method_heading_path() {
    let src = format!(
        "/** Shapes. */\nimport fs from 'fs';\n\n/** A shape with an area. */\nexport class Shape {{\n  constructor(w) {{\n    this.w = w;\n  }}\n\n  \
         area() {{\n    let a = 0;\n{}    return a;\n  }}\n}}\n\nconst twice = (x) => x * 2;\n",
        filler(
            "    ",
            "a += this.w * N; // accumulate the area piece N",
            30
        )
    );
    let doc = convert_path("shape.mjs", src.as_bytes());
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    assert_eq!(doc.metadata["language"], "javascript");
    assert_eq!(
        path_at(&doc.markdown, "area() {"),
        ["class Shape", "area()"]
    );
    assert!(
        doc.markdown
            .contains("## area()\n\nContext: A shape with an area.\n\n```javascript\n")
    );
    assert_every_line_in_order(&src, &doc);
}

#[test]
fn typescript_method_heading_path_and_tsx() {
    let src = format!(
        "export interface Props {{\n  name: string;\n}}\n\n// Renders widgets.\nexport abstract class Widget<P extends Props> {{\n  \
         private props: P;\n\n  render(): string {{\n    const out: string[] = [];\n{}    return out.join('');\n  }}\n}}\n\n\
         type Id = number;\nenum Color {{ Red, Green }}\n",
        filler(
            "    ",
            "out.push(`<li>${this.props.name} item N</li>`);",
            30
        )
    );
    let doc = convert_path("widget.ts", src.as_bytes());
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    assert_eq!(
        path_at(&doc.markdown, "render(): string"),
        ["class Widget", "render()"]
    );
    assert_every_line_in_order(&src, &doc);

    // JSX only parses with the TSX grammar, which `.tsx` (same Language) falls back to.
    let tsx = "export function App(): JSX.Element {\n  return <div className=\"a\">hi</div>;\n}\n";
    let doc = convert_path("app.tsx", tsx.as_bytes());
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    assert_every_line_in_order(tsx, &doc);
}

#[test]
fn go_method_heading_path_groups_methods_under_their_type() {
    let src = format!(
        "// Package geo does geometry.\npackage geo\n\nimport \"fmt\"\n\n// Point is a point in the plane.\ntype Point struct {{\n\tX, Y int\n}}\n\n\
         // Norm is small.\nfunc (p Point) Norm() int {{ return p.X*p.X + p.Y*p.Y }}\n\n// Big is big.\nfunc (p *Point) Big() int {{\n\ttotal := 0\n{}\t\
         return total\n}}\n\nfunc main() {{ fmt.Println(Point{{}}) }}\n",
        filler("\t", "total += p.X * N // add the Nth multiple", 30)
    );
    let doc = convert_path("geo.go", src.as_bytes());
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    assert_eq!(
        path_at(&doc.markdown, "func (p *Point) Big"),
        ["type Point", "func (p *Point) Big"]
    );
    assert_eq!(
        path_at(&doc.markdown, "func (p Point) Norm"),
        ["type Point"]
    );
    assert!(
        doc.markdown
            .contains("Context: Point is a point in the plane.\n\n```go\n// Big is big.")
    );
    let (_, source) = block_with(&doc, "func (p *Point) Big");
    assert_eq!(&src[source.clone()][..14], "// Big is big.");
    assert!(src[source].ends_with("\treturn total\n}\n"));
    assert_every_line_in_order(&src, &doc);
}

#[test]
fn syntax_errors_are_rendered_with_a_warning() {
    let src =
        "fn ok() -> u8 {\n    1\n}\n\nfn broken( {\n    let x = ;\n}}\n\nstruct After { a: u8 }\n";
    let doc = convert(Format::Code(Language::Rust), src.as_bytes()).expect("never fails on syntax");
    assert_eq!(doc.warnings.len(), 1, "{:?}", doc.warnings);
    assert!(
        doc.warnings[0].contains("syntax errors near line"),
        "{:?}",
        doc.warnings
    );
    assert_every_line_in_order(src, &doc);
    let py = "def f(:\n    return )\n\nclass A:\n    pass\n";
    let doc = convert(Format::Code(Language::Python), py.as_bytes()).expect("renders");
    assert!(!doc.warnings.is_empty());
    assert_every_line_in_order(py, &doc);
}

#[test]
fn non_utf8_is_invalid_and_huge_is_too_large() {
    let err = convert(Format::Code(Language::Go), b"package x\n\xff\xfe\n").unwrap_err();
    assert!(
        matches!(err, FormatError::Invalid { format: "go", .. }),
        "{err:?}"
    );
    let huge = vec![b' '; (32 << 20) + 1];
    let err = convert(Format::Code(Language::Python), &huge).unwrap_err();
    assert!(matches!(err, FormatError::TooLarge { .. }), "{err:?}");
}

#[test]
fn java_method_heading_path_with_javadoc_and_annotations() {
    let src = format!(
        "package org.example.geo;\n\nimport java.util.List;\n\n/** A point in the plane. */\npublic class Point {{\n    \
         private final int x;\n\n    public Point(int x) {{ this.x = x; }}\n\n    /** Sums a lot. */\n    @Override\n    \
         public int big() {{\n        int total = 0;\n{}        return total;\n    }}\n\n    enum Kind {{ NEAR, FAR }}\n}}\n",
        filler("        ", "total += x * N; // add the Nth multiple", 30)
    );
    let doc = convert_path("geo/Point.java", src.as_bytes());
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    assert_eq!(doc.metadata["language"], "java");
    assert_eq!(
        path_at(&doc.markdown, "public int big()"),
        ["class Point", "big()"]
    );
    // The Javadoc and the annotation open the method's block.
    let (_, source) = block_with(&doc, "public int big()");
    assert!(src[source.clone()].starts_with("    /** Sums a lot. */\n    @Override\n"));
    assert!(src[source].ends_with("        return total;\n    }\n"));
    assert!(
        doc.markdown.contains("Context: A point in the plane."),
        "{}",
        doc.markdown
    );
    assert_every_line_in_order(&src, &doc);
}

#[test]
fn c_functions_are_labelled_by_their_declarators_inside_an_include_guard() {
    let src = format!(
        "#ifndef RING_H\n#define RING_H\n\n#include <stddef.h>\n\n/** A ring buffer. */\ntypedef struct ring {{\n    \
         size_t head;\n}} ring_t;\n\nextern \"C\" {{\nint ring_push(ring_t *r, int v);\n}}\n\n\
         /* Drains the ring. */\nstatic size_t *ring_drain(ring_t *r)\n{{\n    size_t n = 0;\n{}    return NULL;\n}}\n\n#endif\n",
        filler("    ", "n += r->head * N; /* step N */", 30)
    );
    let doc = convert_path("ring.h", src.as_bytes());
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    assert_eq!(doc.metadata["language"], "c");
    // The guard is no section of its own: the function inside it is a top-level item,
    // labelled through its pointer declarator.
    assert_eq!(
        path_at(&doc.markdown, "n += r->head * 3;"),
        ["ring_drain()"]
    );
    // Small declarations before it stay in the file's opening blocks, the guard's lines too.
    assert!(path_at(&doc.markdown, "} ring_t;").is_empty());
    assert!(path_at(&doc.markdown, "#define RING_H").is_empty());
    assert_every_line_in_order(&src, &doc);
}

#[test]
fn cpp_members_of_a_class_in_a_namespace_and_a_header_read_as_cpp() {
    let src = format!(
        "#include <vector>\n\nnamespace geo {{\n\n/// A polygon.\nclass Polygon {{\npublic:\n    explicit Polygon(int n);\n\n    \
         template <typename T>\n    T area() const {{\n        T total = 0;\n{}        return total;\n    }}\n\nprivate:\n    \
         std::vector<int> xs_;\n}};\n\nint Polygon::sides() const {{ return 3; }}\n\n}}  // namespace geo\n",
        filler("        ", "total += xs_[N] * N;  // the Nth side", 30)
    );
    for name in ["polygon.hpp", "polygon.h"] {
        let doc = convert_path(name, src.as_bytes());
        // A `.h` is tried as C first; only C++ reads this one cleanly, so C++ is kept.
        assert!(doc.warnings.is_empty(), "{name}: {:?}", doc.warnings);
        assert_eq!(
            path_at(&doc.markdown, "T area() const"),
            ["class Polygon", "area()"],
            "{name}"
        );
        assert!(doc.markdown.contains("Polygon::sides()"), "{name}");
        assert_every_line_in_order(&src, &doc);
    }
}

#[test]
fn a_header_neither_grammar_reads_cleanly_is_read_by_the_one_that_reads_more() {
    // A C++ header C cannot read (a template class) with one construct the C++ grammar does
    // not know either: the C++ tree, which leaves far fewer bytes unread, gives the outline.
    let src = format!(
        "#ifndef ACCESSOR_H\n#define ACCESSOR_H\n\ntemplate <typename array_t>\nclass Accessor\n{{\n\
         \tusing release_fn = void (Frame::*)(array_t, jint);\n\npublic:\n\
         \tint total(int k)\n\t{{\n\t\tint t = 0;\n{}\t\treturn t;\n\t}}\n}};\n\n#endif\n",
        filler("\t\t", "t += k * N; // add step N", 30)
    );
    let doc = convert_path("accessor.h", src.as_bytes());
    assert_eq!(
        path_at(&doc.markdown, "t += k * 3;"),
        ["class Accessor", "total()"],
        "{}",
        doc.markdown
    );
    assert_every_line_in_order(&src, &doc);
}

#[test]
fn csharp_members_of_a_class_in_a_file_scoped_namespace() {
    let src = format!(
        "using System;\n\nnamespace Geo.Shapes;\n\n/// <summary>A polygon.</summary>\npublic sealed class Polygon\n{{\n    \
         public int Sides {{ get; }}\n\n    /// <summary>Sums a lot.</summary>\n    [Obsolete]\n    public int Big()\n    {{\n        \
         var total = 0;\n{}        return total;\n    }}\n}}\n",
        filler("        ", "total += Sides * N; // the Nth step", 30)
    );
    let doc = convert_path("Shapes/Polygon.cs", src.as_bytes());
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    assert_eq!(doc.metadata["language"], "csharp");
    assert_eq!(
        path_at(&doc.markdown, "public int Big()"),
        ["class Polygon", "Big()"]
    );
    let (_, source) = block_with(&doc, "public int Big()");
    assert!(src[source].starts_with("    /// <summary>Sums a lot.</summary>\n    [Obsolete]\n"));
    assert_every_line_in_order(&src, &doc);
}

#[test]
fn ruby_methods_of_a_class_inside_a_module() {
    let src = format!(
        "require 'set'\n\nmodule Shop\n  # A cart of items.\n  class Cart\n    attr_reader :items\n\n    # Sums a lot.\n    \
         def total\n      sum = 0\n{}      sum\n    end\n\n    def self.empty\n      new\n    end\n  end\nend\n",
        filler("      ", "sum += items[N].price # the Nth item", 30)
    );
    let doc = convert_path("lib/shop/cart.rb", src.as_bytes());
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    assert_eq!(doc.metadata["language"], "ruby");
    // The module wraps the file: the class's methods are sections under the class.
    assert_eq!(
        path_at(&doc.markdown, "def total"),
        ["class Cart", "def total"]
    );
    let (_, source) = block_with(&doc, "sum = 0");
    assert!(src[source].starts_with("    # Sums a lot.\n    def total\n"));
    assert!(
        doc.markdown.contains("Context: A cart of items."),
        "{}",
        doc.markdown
    );
    assert_every_line_in_order(&src, &doc);
}

#[test]
fn php_methods_of_a_class_in_a_namespace_block() {
    let src = format!(
        "<?php\n\nnamespace App\\Billing {{\n\nuse App\\Money;\n\n/** An invoice. */\nfinal class Invoice\n{{\n    \
         private array $lines = [];\n\n    /** Sums a lot. */\n    public function total(): int\n    {{\n        $sum = 0;\n{}        \
         return $sum;\n    }}\n}}\n\n}}\n",
        filler(
            "        ",
            "$sum += $this->lines[N]->amount; // the Nth line",
            30
        )
    );
    let doc = convert_path("src/Billing/Invoice.php", src.as_bytes());
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    assert_eq!(doc.metadata["language"], "php");
    assert_eq!(
        path_at(&doc.markdown, "$sum = 0;"),
        ["class Invoice", "function total"]
    );
    let (_, source) = block_with(&doc, "$sum = 0;");
    assert!(src[source].starts_with("    /** Sums a lot. */\n    public function total()"));
    assert!(
        doc.markdown.contains("Context: An invoice."),
        "{}",
        doc.markdown
    );
    assert_every_line_in_order(&src, &doc);
}

#[test]
fn empty_bom_and_crlf_sources() {
    for lang in [
        Language::Rust,
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Go,
        Language::Java,
        Language::C,
        Language::Cpp,
        Language::CSharp,
        Language::Ruby,
        Language::Php,
    ] {
        let doc = convert(Format::Code(lang), b"").expect("empty converts");
        assert!(doc.markdown.is_empty() && doc.spans.is_empty());
    }
    let src = "\u{feff}/// Doc.\r\nfn a() {}\r\n";
    let doc = convert(Format::Code(Language::Rust), src.as_bytes()).expect("converts");
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    assert_eq!(
        doc.provenance(0..doc.markdown.len()).source,
        Some(0..src.len())
    );
    assert_every_line_in_order(src, &doc);
}

#[test]
fn deep_nesting_stays_bounded() {
    let n = 50_000;
    let py = format!("x = {}1{}\n", "(".repeat(n), ")".repeat(n));
    let js = format!("let x = {}1{};\n", "[".repeat(n), "]".repeat(n));
    let rs = format!("fn f() {{ {}1{} }}\n", "(".repeat(n), ")".repeat(n));
    for (lang, src) in [
        (Language::Python, &py),
        (Language::JavaScript, &js),
        (Language::Rust, &rs),
    ] {
        let doc = convert(Format::Code(lang), src.as_bytes()).expect("converts");
        assert_every_line_in_order(src, &doc);
    }
    // Ten nested big classes: headings stop at level 3, the rest is one block.
    let mut py = String::new();
    for d in 0..10 {
        py.push_str(&format!("{}class C{d}:\n", "    ".repeat(d)));
    }
    py.push_str(&filler(
        &"    ".repeat(10),
        "v_N = N  # a long enough line of filler",
        40,
    ));
    let doc = convert(Format::Code(Language::Python), py.as_bytes()).expect("converts");
    let levels: Vec<usize> = common::headings(&doc.markdown)
        .iter()
        .map(|h| h.0)
        .collect();
    assert!(levels.iter().all(|&l| l <= 3), "{levels:?}");
    assert_every_line_in_order(&py, &doc);
}

#[test]
fn small_items_share_a_section_one_block_per_run() {
    let src = "use a::b;\nuse c::d;\n\nconst X: u8 = 1;\nconst Y: u8 = 2;\n\nfn tiny() {}\n";
    let doc = convert(Format::Code(Language::Rust), src.as_bytes()).expect("converts");
    // Opening section: no heading; runs without a blank line share a fenced block.
    assert!(common::headings(&doc.markdown).is_empty());
    assert_eq!(
        common::blocks(&doc),
        [
            "use a::b;\nuse c::d;\n",
            "const X: u8 = 1;\nconst Y: u8 = 2;\n",
            "fn tiny() {}\n"
        ]
    );
}

#[test]
fn fences_outgrow_backtick_runs() {
    let src = "def f():\n    \"\"\"Example:\n\n    ````text\n    x\n    ````\n    \"\"\"\n";
    let doc = convert(Format::Code(Language::Python), src.as_bytes()).expect("converts");
    assert!(
        doc.markdown.starts_with("`````python\n"),
        "{}",
        doc.markdown
    );
    assert!(doc.markdown.ends_with("\n`````\n"));
}
