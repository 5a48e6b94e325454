//! reStructuredText inline markup to the text the rendered page shows: ``literal``, *emphasis*,
//! **strong**, roles (`:meth:`~flask.Flask.route`` shows "route()"), hyperlink references
//! (`` `the docs <https://…>`_ `` shows "the docs"), footnote references, escapes.
//!
//! Markup is recognised by docutils' rules in their simple form: a start-string follows
//! whitespace, an opening bracket or quote (or the start) and is followed by non-whitespace; an
//! end-string follows non-whitespace and is followed by whitespace, punctuation or the end.
//! Anything that does not close stays as written, so a stray `*` or `` ` `` loses nothing.

/// Roles that name a code object: shown as code is, with `()` after callables as Sphinx adds.
const CODE_ROLES: &[&str] = &[
    "func",
    "meth",
    "class",
    "attr",
    "mod",
    "data",
    "exc",
    "obj",
    "const",
    "member",
    "var",
    "type",
    "macro",
    "struct",
    "enum",
    "enumerator",
    "union",
    "function",
    "method",
    "attribute",
    "exception",
    "module",
    "property",
    "decorator",
    "any",
];
/// Code roles after whose target Sphinx shows `()`.
const CALLABLE_ROLES: &[&str] = &["func", "meth", "function", "method"];

/// The shown text of `text`'s inline markup.
pub(crate) fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut unclosed = Unclosed::default();
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let c = rest.chars().next().unwrap_or(' ');
        if c == '\\' {
            // An escape shows the next character; an escaped space shows nothing (it joins
            // markup to a word: ``dict``\ s).
            let next = rest[1..].chars().next();
            match next {
                Some(n) if !n.is_whitespace() => out.push(n),
                _ => {}
            }
            i += 1 + next.map_or(0, char::len_utf8);
            continue;
        }
        if can_start(text, i)
            && let Some((shown, len)) = markup(rest, i, &mut unclosed)
        {
            out.push_str(&shown);
            i += len;
            continue;
        }
        if c == '_' && is_reference_end(text, i) {
            // `word_` and `word__` are references to a target: the page shows the word.
            i += if rest.starts_with("__") { 2 } else { 1 };
            continue;
        }
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Where a search for each kind of closing delimiter found none to the end of the text: a
/// later start of the same kind cannot close either (whether a delimiter closes depends only on
/// the characters around it), so text full of unclosed markup costs linear time, not
/// quadratic.
#[derive(Debug, Default)]
struct Unclosed {
    /// Per delimiter (`` `` ``, `**`, `*`, `` ` ``, `|`, `]_`): the start that failed.
    from: [Option<usize>; 6],
}

impl Unclosed {
    fn slot(delim: &str) -> usize {
        match delim {
            "``" => 0,
            "**" => 1,
            "*" => 2,
            "`" => 3,
            "|" => 4,
            _ => 5,
        }
    }

    /// The content and length of `delim`-markup at the start of `s` (byte `at` of the text).
    fn find<'s>(&mut self, s: &'s str, at: usize, delim: &str) -> Option<(&'s str, usize)> {
        let slot = Self::slot(delim);
        if self.from[slot].is_some_and(|failed| failed <= at) {
            return None;
        }
        let found = delimited(s, delim);
        if found.is_none()
            && s.len() > delim.len()
            && !s[delim.len()..].starts_with(char::is_whitespace)
        {
            self.from[slot] = Some(at);
        }
        found
    }
}

/// Inline markup starting `rest` (byte `at` of the text), if it is complete: its shown text
/// and its length.
fn markup(rest: &str, at: usize, unclosed: &mut Unclosed) -> Option<(String, usize)> {
    if rest.starts_with("``") {
        let (content, len) = unclosed.find(rest, at, "``")?;
        return Some((content.to_string(), len));
    }
    if rest.starts_with("**") {
        let (content, len) = unclosed.find(rest, at, "**")?;
        return Some((content.to_string(), len));
    }
    if rest.starts_with('*') {
        let (content, len) = unclosed.find(rest, at, "*")?;
        return Some((content.to_string(), len));
    }
    if rest.starts_with(':') {
        let role_len = role_prefix(rest)?;
        let role = &rest[1..role_len - 1];
        let (content, len) = unclosed.find(&rest[role_len..], at + role_len, "`")?;
        return Some((render_role(role, content), role_len + len));
    }
    if rest.starts_with("_`") {
        // An inline target shows its text.
        let (content, len) = unclosed.find(&rest[1..], at + 1, "`")?;
        return Some((content.to_string(), 1 + len));
    }
    if rest.starts_with('`') {
        let (content, len) = unclosed.find(rest, at, "`")?;
        let after = &rest[len..];
        if after.starts_with("__") {
            return Some((reference(content), len + 2));
        }
        if after.starts_with('_') {
            return Some((reference(content), len + 1));
        }
        if after.starts_with(':')
            && let Some(role_len) = role_prefix(after)
        {
            let role = &after[1..role_len - 1];
            return Some((render_role(role, content), len + role_len));
        }
        return Some((render_role("", content), len));
    }
    if rest.starts_with('|') {
        // A substitution reference: its value is defined elsewhere; the name stays.
        let (content, len) = unclosed.find(rest, at, "|")?;
        let underscores = rest[len..].len() - rest[len..].trim_start_matches('_').len();
        return Some((format!("|{content}|"), len + underscores.min(2)));
    }
    if rest.starts_with('[') {
        // A footnote or citation reference `[1]_`: shown as `[1]`.
        if unclosed.from[5].is_some_and(|failed| failed <= at) {
            return None;
        }
        let Some(close) = rest.find("]_") else {
            unclosed.from[5] = Some(at);
            return None;
        };
        let label = &rest[1..close];
        let simple = !label.is_empty()
            && label.len() <= 40
            && !label.contains(char::is_whitespace)
            && !label.contains(['[', ']', '`']);
        return simple.then(|| (format!("[{label}]"), close + 2));
    }
    None
}

/// `:role:` at the start of `s` (a name of letters, digits and `-_.:+`): its length.
fn role_prefix(s: &str) -> Option<usize> {
    let body = s.strip_prefix(':')?;
    let end = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | ':')))?;
    // The name ends at the last colon before that character: `:py:meth:` is one role.
    let name_with_colon = &body[..end];
    let last_colon = name_with_colon.rfind(':')?;
    let name = &name_with_colon[..last_colon];
    if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    // The role is followed by the backquote of its text (prefix form) or ends the markup.
    Some(1 + last_colon + 1)
}

/// Content between `delim` at the start of `s` and the first closing `delim` that ends
/// markup; returns the content and the whole length.
fn delimited<'s>(s: &'s str, delim: &str) -> Option<(&'s str, usize)> {
    let body = s.strip_prefix(delim)?;
    if body.starts_with(char::is_whitespace) || body.is_empty() {
        return None;
    }
    let literal = delim == "``";
    let mut from = 0;
    while let Some(p) = body[from..].find(delim) {
        let at = from + p;
        let before = body[..at].chars().next_back();
        let after = body[at + delim.len()..].chars().next();
        let closes = at > 0
            && before.is_some_and(|c| !c.is_whitespace() && (literal || c != '\\'))
            && after.is_none_or(|c| {
                c.is_whitespace()
                    || is_end_punctuation(c)
                    || (delim == "`" || delim == "|") && c == '_'
                    || delim == "`" && c == ':'
            });
        // `*a**` is not emphasis closed early: a closing `*` next to another is strong's.
        let doubled = delim == "*" && after == Some('*');
        if closes && !doubled {
            return Some((&body[..at], delim.len() * 2 + at));
        }
        // One further, not past the delimiter: in ```` ``a`b``` ```` the closing `` is the last two.
        from = at + 1;
        if from >= body.len() {
            break;
        }
    }
    None
}

/// Characters that may follow an end-string.
fn is_end_punctuation(c: char) -> bool {
    matches!(
        c,
        '\'' | '"'
            | ')'
            | ']'
            | '}'
            | '>'
            | '-'
            | '/'
            | ':'
            | '.'
            | ','
            | ';'
            | '!'
            | '?'
            | '\\'
            | '’'
            | '”'
            | '»'
    )
}

/// Whether markup may start at byte `i` of `text`: at the start, or after whitespace or an
/// opening bracket, quote or dash, and not before whitespace.
fn can_start(text: &str, i: usize) -> bool {
    let before = text[..i].chars().next_back();
    before.is_none_or(|c| {
        c.is_whitespace()
            || matches!(
                c,
                '\'' | '"' | '(' | '[' | '{' | '<' | '-' | '/' | ':' | '‘' | '“' | '«'
            )
    })
}

/// Whether the `_` at byte `i` ends a `word_` reference: after a word character, at the end of
/// a word, and the word does not begin with `_` (a dunder name such as `__init__` is a word).
fn is_reference_end(text: &str, i: usize) -> bool {
    let before = text[..i].chars().next_back();
    let rest = &text[i..];
    let after_underscores = rest.trim_start_matches('_');
    let underscores = rest.len() - after_underscores.len();
    let at_word_end = before.is_some_and(char::is_alphanumeric)
        && underscores <= 2
        && after_underscores
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || is_end_punctuation(c));
    // Looked back only at a word's end, so once per word.
    at_word_end && {
        let word_start = text[..i]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
            .map_or(0, |p| p + 1);
        !text[word_start..i].starts_with('_')
    }
}

/// `Title <target>` shows Title; `<target>` alone or a bare target shows the target.
fn split_title(content: &str) -> (Option<&str>, &str) {
    let content = content.trim();
    if content.ends_with('>')
        && let Some(open) = content.rfind('<')
    {
        let title = content[..open].trim_end();
        let target = &content[open + 1..content.len() - 1];
        if !title.is_empty() {
            return (Some(title), target);
        }
        return (None, target);
    }
    (None, content)
}

/// The shown text of a hyperlink reference's content.
fn reference(content: &str) -> String {
    let (title, target) = split_title(content);
    title.unwrap_or(target).to_string()
}

/// The shown text of `:role:`content``, as Sphinx renders the common roles.
fn render_role(role: &str, content: &str) -> String {
    let role = role.rsplit(':').next().unwrap_or(role).to_ascii_lowercase();
    let role = role.as_str();
    let (title, target) = split_title(content);
    if CODE_ROLES.contains(&role) {
        if let Some(title) = title {
            return title.to_string();
        }
        let name = target.trim_start_matches('!');
        let short = name.starts_with('~');
        let name = name.trim_start_matches(['~', '.']);
        let mut shown = if short {
            name.rsplit('.').next().unwrap_or(name).to_string()
        } else {
            name.to_string()
        };
        if CALLABLE_ROLES.contains(&role) && !shown.ends_with(')') {
            shown.push_str("()");
        }
        return shown;
    }
    match role {
        "pep" => format!("PEP {}", title.unwrap_or(target)),
        "rfc" => format!("RFC {}", title.unwrap_or(target)),
        "abbr" | "math" | "kbd" | "code" | "literal" | "sub" | "sup" | "subscript"
        | "superscript" => content.to_string(),
        "guilabel" | "menuselection" => content
            .replace("&&", "\u{0}")
            .replace('&', "")
            .replace('\u{0}', "&"),
        "samp" => content.replace(['{', '}'], ""),
        _ => title.unwrap_or(target).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::inline;

    #[test]
    fn markup_shows_its_text() {
        assert_eq!(inline("Use ``flask run`` now."), "Use flask run now.");
        assert_eq!(inline("a *very* **bold** move"), "a very bold move");
        assert_eq!(inline("see `the docs <https://x.org/>`_."), "see the docs.");
        assert_eq!(
            inline("see `Flask`_ and Werkzeug_, too"),
            "see Flask and Werkzeug, too"
        );
        assert_eq!(inline("the :class:`~flask.Flask` class"), "the Flask class");
        assert_eq!(
            inline("the :meth:`~flask.Flask.route` decorator"),
            "the route() decorator"
        );
        assert_eq!(inline(":func:`flask.url_for`"), "flask.url_for()");
        assert_eq!(inline(":py:data:`SECRET_KEY`"), "SECRET_KEY");
        assert_eq!(inline(":ref:`the tutorial <tutorial>`"), "the tutorial");
        assert_eq!(inline("see :pep:`8`"), "see PEP 8");
        assert_eq!(inline("a note [1]_ here"), "a note [1] here");
        assert_eq!(inline("``dict``\\ s"), "dicts");
    }

    #[test]
    fn what_is_not_markup_stays() {
        assert_eq!(inline("2 * 3 * 4"), "2 * 3 * 4");
        assert_eq!(inline("def f(*args, **kwargs)"), "def f(*args, **kwargs)");
        assert_eq!(
            inline("call __init__ and _private_"),
            "call __init__ and _private_"
        );
        assert_eq!(inline("an `unclosed quote"), "an `unclosed quote");
        assert_eq!(inline("snake_case_name here"), "snake_case_name here");
        assert_eq!(inline("time: 10:30 am"), "time: 10:30 am");
    }
}
