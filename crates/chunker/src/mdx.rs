//! MDX (`.mdx`, Markdown with JSX): the module lines a page opens with (`import Tabs from
//! '@theme/Tabs';`) are code for the site generator, never shown to a reader. They are left out
//! of the chunks like front matter, and elsewhere they never count as text.

/// An MDX module line: `import X from './x'`, `import './style.css'`, `export const meta = …`.
/// Prose does not quote a module path after `from`, nor open with `export const`.
pub(crate) fn is_module_line(line: &str) -> bool {
    let line = line.trim();
    if let Some(rest) = line.strip_prefix("import ") {
        let rest = rest.trim_start();
        return ends_quoted(rest) && (rest.starts_with(['\'', '"']) || rest.contains(" from "));
    }
    line.strip_prefix("export ").is_some_and(|rest| {
        ["const ", "let ", "default ", "function "]
            .iter()
            .any(|k| rest.trim_start().starts_with(k))
    })
}

/// Whether `s` ends with a quoted module path (`'x'`, `"x";`).
fn ends_quoted(s: &str) -> bool {
    let s = s.trim_end().trim_end_matches(';').trim_end();
    s.len() >= 2 && (s.ends_with('\'') || s.ends_with('"'))
}

/// Where the page's text starts after `start`: on an MDX page (`path` ends in `.mdx`), past the
/// blank lines and import statements (one line, or `import {` … `} from '…'` over several) that
/// open it. Any other page, or one that opens with anything else, starts at `start`.
pub(crate) fn text_start(path: &str, source: &str, start: usize) -> usize {
    if !crate::has_extension(path, "mdx") {
        return start;
    }
    let mut end = start;
    let mut pos = start;
    let mut open_import = false;
    for line in source[start..].split_inclusive('\n') {
        let t = line.trim();
        pos += line.len();
        if open_import {
            // A multi-line import ends at its `} from '…'` line.
            if t.starts_with('}') && ends_quoted(t) {
                open_import = false;
                end = pos;
            } else if t.is_empty() || t.starts_with("import ") || t.starts_with('#') {
                // Not an import after all: the text starts at its first line.
                break;
            }
        } else if t.is_empty() {
            continue;
        } else if is_module_line(t) {
            end = pos;
        } else if t.starts_with("import {") || t == "import" || t.starts_with("import * as") {
            open_import = true;
        } else {
            break;
        }
    }
    if open_import {
        return end.max(start);
    }
    // Blank lines after the last module line belong to the skipped part.
    let rest = &source[end..];
    end + (rest.len() - rest.trim_start_matches(['\n', '\r', ' ', '\t']).len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_lines_and_prose() {
        for module in [
            "import CommandTabs from '@components/CommandTabs.astro';",
            "import { Tabs, TabItem } from \"@astrojs/starlight/components\"",
            "import './custom.css';",
            "export const meta = { title: 'x' };",
            "export default function Layout() {",
        ] {
            assert!(is_module_line(module), "{module}");
        }
        for prose in [
            "import the data from the old system first.",
            "import from 'x' is how modules load",
            "export the key before you run it.",
            "Import X from 'y'",
        ] {
            assert!(!is_module_line(prose), "{prose}");
        }
    }

    #[test]
    fn text_starts_after_the_opening_imports() {
        let page = "import A from 'a';\nimport {\n  B,\n  C,\n} from \"bc\";\n\n# Title\n\nText.\n";
        assert_eq!(&page[text_start("p.mdx", page, 0)..], "# Title\n\nText.\n");
        let after_front_matter = "---\nt: 1\n---\n\nimport A from 'a';\n\nText.\n";
        assert_eq!(
            &after_front_matter[text_start("p.mdx", after_front_matter, 12)..],
            "Text.\n"
        );
        let prose = "import the data first.\n";
        assert_eq!(text_start("p.mdx", prose, 0), 0);
        let unclosed = "import {\n\n# Title\n";
        assert_eq!(text_start("p.mdx", unclosed, 0), 0);
        assert_eq!(text_start("a.md", page, 0), 0);
        assert_eq!(text_start("mdx", page, 0), 0);
        assert_eq!(
            text_start("docs/A.MDX", page, 0),
            text_start("p.mdx", page, 0)
        );
    }
}
