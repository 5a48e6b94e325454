//! Which converter a file goes to, by its extension.

/// A file format this crate converts to Markdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// `.html`, `.htm`.
    Html,
    /// `.pdf`.
    Pdf,
    /// `.docx` (Office Open XML word processing).
    Docx,
    /// Source code of a language.
    Code(Language),
    /// Configuration and data files.
    Config(ConfigKind),
}

/// A programming language of [`Format::Code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Language {
    /// `.rs`.
    Rust,
    /// `.py`.
    Python,
    /// `.js`, `.mjs`, `.cjs`, `.jsx`.
    JavaScript,
    /// `.ts`, `.tsx`.
    TypeScript,
    /// `.go`.
    Go,
}

/// A syntax of [`Format::Config`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigKind {
    /// `.yaml`, `.yml`.
    Yaml,
    /// `.json`.
    Json,
    /// `.toml`.
    Toml,
}

const EXTENSIONS: &[(&str, Format)] = &[
    ("html", Format::Html),
    ("htm", Format::Html),
    ("pdf", Format::Pdf),
    ("docx", Format::Docx),
    ("rs", Format::Code(Language::Rust)),
    ("py", Format::Code(Language::Python)),
    ("js", Format::Code(Language::JavaScript)),
    ("mjs", Format::Code(Language::JavaScript)),
    ("cjs", Format::Code(Language::JavaScript)),
    ("jsx", Format::Code(Language::JavaScript)),
    ("ts", Format::Code(Language::TypeScript)),
    ("tsx", Format::Code(Language::TypeScript)),
    ("go", Format::Code(Language::Go)),
    ("yaml", Format::Config(ConfigKind::Yaml)),
    ("yml", Format::Config(ConfigKind::Yaml)),
    ("json", Format::Config(ConfigKind::Json)),
    ("toml", Format::Config(ConfigKind::Toml)),
];

const NAMES: &[&str] = &[
    "html", "htm", "pdf", "docx", "rs", "py", "js", "mjs", "cjs", "jsx", "ts", "tsx", "go", "yaml",
    "yml", "json", "toml",
];

impl Format {
    /// By file extension (case-insensitive): html/htm, pdf, docx, rs, py, js/mjs/cjs/jsx, ts/tsx, go, yaml/yml, json, toml.
    /// Markdown and plain text are NOT formats of this crate (the chunker reads them directly): None.
    pub fn from_path(path: &str) -> Option<Format> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let (stem, ext) = name.rsplit_once('.')?;
        if stem.is_empty() {
            return None; // a dot file such as `.json` has no extension
        }
        EXTENSIONS
            .iter()
            .find(|(e, _)| e.eq_ignore_ascii_case(ext))
            .map(|&(_, f)| f)
    }

    /// Every extension this crate knows, lower-case, for `--ext` help and the walker.
    pub fn known_extensions() -> &'static [&'static str] {
        NAMES
    }

    /// Short name: "html", "pdf", "docx", "rust", "python", ..., "yaml", "json", "toml".
    pub fn name(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Pdf => "pdf",
            Format::Docx => "docx",
            Format::Code(Language::Rust) => "rust",
            Format::Code(Language::Python) => "python",
            Format::Code(Language::JavaScript) => "javascript",
            Format::Code(Language::TypeScript) => "typescript",
            Format::Code(Language::Go) => "go",
            Format::Config(ConfigKind::Yaml) => "yaml",
            Format::Config(ConfigKind::Json) => "json",
            Format::Config(ConfigKind::Toml) => "toml",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_map_to_formats() {
        assert_eq!(Format::from_path("a/b/Page.HTM"), Some(Format::Html));
        assert_eq!(
            Format::from_path("x.tsx"),
            Some(Format::Code(Language::TypeScript))
        );
        assert_eq!(
            Format::from_path("c.yml"),
            Some(Format::Config(ConfigKind::Yaml))
        );
        assert_eq!(Format::from_path("README.md"), None);
        assert_eq!(Format::from_path("notes.txt"), None);
        assert_eq!(Format::from_path(".json"), None);
        assert_eq!(Format::from_path("dir.d/Makefile"), None);
        for ext in Format::known_extensions() {
            assert!(Format::from_path(&format!("f.{ext}")).is_some(), "{ext}");
        }
        assert_eq!(Format::known_extensions().len(), EXTENSIONS.len());
    }
}
