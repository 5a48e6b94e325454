//! The formats this crate converts, and how they are recognised from a file path.

/// A convertible file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// HTML page.
    Html,
    /// PDF with a text layer.
    Pdf,
    /// Word document (Office Open XML).
    Docx,
    /// reStructuredText source (Sphinx, docutils).
    Rst,
    /// AsciiDoc source (Asciidoctor, Antora).
    Asciidoc,
    /// Jupyter notebook (nbformat 2 to 4).
    Notebook,
    /// Source code of one language.
    Code(Language),
    /// Configuration file.
    Config(ConfigKind),
}

/// A programming language parsed with tree-sitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Language {
    /// Rust (`.rs`).
    Rust,
    /// Python (`.py`).
    Python,
    /// JavaScript, JSX included (`.js`, `.mjs`, `.cjs`, `.jsx`).
    JavaScript,
    /// TypeScript, TSX included (`.ts`, `.tsx`).
    TypeScript,
    /// Go (`.go`).
    Go,
    /// Java (`.java`).
    Java,
    /// C (`.c`; `.h`, read by whichever of the C and C++ grammars leaves fewer bytes unread).
    C,
    /// C++ (`.cc`, `.cpp`, `.cxx`, `.hpp`, `.hh`, `.hxx`).
    Cpp,
    /// C# (`.cs`).
    CSharp,
    /// Ruby (`.rb`).
    Ruby,
    /// PHP (`.php`).
    Php,
}

/// A configuration file syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigKind {
    /// YAML (`.yaml`, `.yml`).
    Yaml,
    /// JSON (`.json`).
    Json,
    /// TOML (`.toml`).
    Toml,
}

/// Extension (lower-case) to format, in `known_extensions` order.
const BY_EXTENSION: &[(&str, Format)] = &[
    ("html", Format::Html),
    ("htm", Format::Html),
    ("pdf", Format::Pdf),
    ("docx", Format::Docx),
    ("rst", Format::Rst),
    ("adoc", Format::Asciidoc),
    ("asciidoc", Format::Asciidoc),
    ("ipynb", Format::Notebook),
    ("rs", Format::Code(Language::Rust)),
    ("py", Format::Code(Language::Python)),
    ("js", Format::Code(Language::JavaScript)),
    ("mjs", Format::Code(Language::JavaScript)),
    ("cjs", Format::Code(Language::JavaScript)),
    ("jsx", Format::Code(Language::JavaScript)),
    ("ts", Format::Code(Language::TypeScript)),
    ("tsx", Format::Code(Language::TypeScript)),
    ("go", Format::Code(Language::Go)),
    ("java", Format::Code(Language::Java)),
    ("c", Format::Code(Language::C)),
    ("h", Format::Code(Language::C)),
    ("cc", Format::Code(Language::Cpp)),
    ("cpp", Format::Code(Language::Cpp)),
    ("cxx", Format::Code(Language::Cpp)),
    ("hpp", Format::Code(Language::Cpp)),
    ("hh", Format::Code(Language::Cpp)),
    ("hxx", Format::Code(Language::Cpp)),
    ("cs", Format::Code(Language::CSharp)),
    ("rb", Format::Code(Language::Ruby)),
    ("php", Format::Code(Language::Php)),
    ("yaml", Format::Config(ConfigKind::Yaml)),
    ("yml", Format::Config(ConfigKind::Yaml)),
    ("json", Format::Config(ConfigKind::Json)),
    ("toml", Format::Config(ConfigKind::Toml)),
];

const EXTENSIONS: &[&str] = &[
    "html", "htm", "pdf", "docx", "rst", "adoc", "asciidoc", "ipynb", "rs", "py", "js", "mjs",
    "cjs", "jsx", "ts", "tsx", "go", "java", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx",
    "cs", "rb", "php", "yaml", "yml", "json", "toml",
];

/// The extension of the file `path` names: None for a dot file such as `.json`.
fn extension(path: &str) -> Option<&str> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let (stem, ext) = name.rsplit_once('.')?;
    (!stem.is_empty()).then_some(ext)
}

impl Format {
    /// By file extension (case-insensitive): html/htm, pdf, docx, rst, adoc/asciidoc, ipynb, rs, py, js/mjs/cjs/jsx,
    /// ts/tsx, go, java, c/h, cc/cpp/cxx/hpp/hh/hxx, cs, rb, php, yaml/yml, json, toml.
    /// Markdown and plain text are NOT formats of this crate (the chunker reads them directly):
    /// None.
    pub fn from_path(path: &str) -> Option<Format> {
        let ext = extension(path)?;
        BY_EXTENSION
            .iter()
            .find(|(e, _)| e.eq_ignore_ascii_case(ext))
            .map(|&(_, f)| f)
    }

    /// Like [`from_path`](Self::from_path); besides, a `.txt` file whose text is
    /// reStructuredText (Django and docutils name their pages so: section titles underlined,
    /// and directives or roles) is [`Format::Rst`]. Other `.txt` stays plain text: None.
    pub fn from_path_and_bytes(path: &str, bytes: &[u8]) -> Option<Format> {
        if let Some(format) = Format::from_path(path) {
            return Some(format);
        }
        if !extension(path).is_some_and(|ext| ext.eq_ignore_ascii_case("txt")) {
            return None;
        }
        let head = &bytes[..bytes.len().min(crate::rst::SNIFF_BYTES)];
        let text = match crate::charset::decode_marked(head) {
            Some(page) => page.text,
            None => String::from_utf8_lossy(head),
        };
        crate::rst::looks_like_rst(&text).then_some(Format::Rst)
    }

    /// Every extension this crate knows, lower-case, for `--ext` help and the walker.
    pub fn known_extensions() -> &'static [&'static str] {
        EXTENSIONS
    }

    /// Short name: "html", "pdf", "docx", "rust", "python", ..., "yaml", "json", "toml".
    pub fn name(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Pdf => "pdf",
            Format::Docx => "docx",
            Format::Rst => "rst",
            Format::Asciidoc => "asciidoc",
            Format::Notebook => "notebook",
            Format::Code(lang) => lang.name(),
            Format::Config(ConfigKind::Yaml) => "yaml",
            Format::Config(ConfigKind::Json) => "json",
            Format::Config(ConfigKind::Toml) => "toml",
        }
    }
}

impl Language {
    /// Short name, also the fenced code block's info string: "rust", "python", ...
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Go => "go",
            Language::Java => "java",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::CSharp => "csharp",
            Language::Ruby => "ruby",
            Language::Php => "php",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_path_by_extension() {
        assert_eq!(Format::from_path("a/b/Page.HTM"), Some(Format::Html));
        assert_eq!(
            Format::from_path("src/walk.rs"),
            Some(Format::Code(Language::Rust))
        );
        assert_eq!(
            Format::from_path("x.tsx"),
            Some(Format::Code(Language::TypeScript))
        );
        assert_eq!(
            Format::from_path("ci.yml"),
            Some(Format::Config(ConfigKind::Yaml))
        );
        assert_eq!(Format::from_path("README.md"), None);
        assert_eq!(Format::from_path("notes.txt"), None);
        assert_eq!(Format::from_path("Makefile"), None);
        assert_eq!(Format::from_path("dir.rs/.json"), None);
    }

    #[test]
    fn every_known_extension_maps_and_names_are_short() {
        assert_eq!(EXTENSIONS.len(), BY_EXTENSION.len());
        for (ext, (e2, f)) in EXTENSIONS.iter().zip(BY_EXTENSION) {
            assert_eq!(ext, e2);
            assert_eq!(Format::from_path(&format!("f.{ext}")), Some(*f));
        }
        assert_eq!(Format::Code(Language::Python).name(), "python");
        assert_eq!(Format::Config(ConfigKind::Toml).name(), "toml");
    }
}
