//! Indexed text made safe to print: file names and document text come from whatever folder was
//! indexed, and a terminal obeys the control characters in them (an escape sequence can clear
//! the screen, retitle the window, set the clipboard or move the cursor to overwrite earlier
//! results; a bidirectional override reorders what is shown). Every line the CLI prints passes
//! through here, so such characters are shown as Rust escapes (`\u{1b}`, `\r`) instead.

use std::borrow::Cow;

/// Whether `c` would steer a terminal instead of being shown: control characters (C0, DEL,
/// C1) and the bidirectional embeddings, overrides and isolates that rustc also flags in
/// source ("Trojan Source"). Tab and newline are decided by the caller.
fn steers_terminal(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn escaped(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let hidden = |c: char| steers_terminal(c) && !keep(c);
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` for a block of lines: newlines and tabs are kept, every other control escaped.
pub fn lines(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t')
}

/// `text` for one line (a path, a heading, a message): newlines are escaped too, so a file
/// named `a\n 2. 0.999 b.md` cannot pass for a second result.
pub fn one_line(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c == '\t')
}

/// A serialised JSON value with the characters a terminal obeys written as `\uXXXX` escapes.
/// serde_json escapes C0 controls itself but writes DEL, C1 and bidi controls raw; every
/// non-ASCII character of serialised JSON is inside a string, where the escape means the same
/// character, so the value a reader parses is unchanged.
pub fn json(serialised: String) -> String {
    if !serialised.chars().any(steers_terminal) {
        return serialised;
    }
    let mut out = String::with_capacity(serialised.len() + 16);
    for c in serialised.chars() {
        if steers_terminal(c) {
            // Every character matched here is in the Basic Multilingual Plane: one escape.
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_not_obeyed() {
        let text = "red \u{1b}[31mtext\u{1b}[0m, bell \u{7}, CR\rover, \u{9b}2J, del \u{7f}";
        let shown = lines(text);
        assert!(!shown.chars().any(steers_terminal), "{shown}");
        assert_eq!(
            shown,
            "red \\u{1b}[31mtext\\u{1b}[0m, bell \\u{7}, CR\\rover, \\u{9b}2J, del \\u{7f}"
        );
        // Trojan Source: an override that would show `evil.exe` reversed as `exe.live`.
        assert_eq!(one_line("evil\u{202E}dm.exe"), "evil\\u{202e}dm.exe");
    }

    #[test]
    fn newlines_and_tabs_depend_on_the_context() {
        assert_eq!(lines("a\n\tb"), "a\n\tb");
        assert_eq!(one_line("a\n 2. 0.999 b.md\tc"), "a\\n 2. 0.999 b.md\tc");
        // Ordinary text, including right-to-left text and its marks, is left alone.
        let plain = "naïve café, שלום\u{200F}, 日本語 ┌── box";
        assert!(matches!(one_line(plain), Cow::Borrowed(_)));
    }

    #[test]
    fn json_escapes_keep_the_value() {
        let value = serde_json::json!({"path": "a\u{9b}b\u{202E}c\u{7f}\u{1b}", "n": 1});
        let text = json(serde_json::to_string(&value).unwrap());
        assert!(!text.chars().any(steers_terminal), "{text}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            value
        );
    }
}
