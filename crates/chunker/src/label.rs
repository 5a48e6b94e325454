//! Titles and headings as labels: one line, and short. Every chunk of a document carries its
//! title and the headings above it, so a megabyte-long `<title>` or heading would be stored
//! once per chunk (a 1.2 MB page made a 1.5 GB index).

/// Longest title or heading a chunk carries, in bytes; real ones stay under 200.
pub(crate) const MAX_LABEL_BYTES: usize = 300;

/// `text` on one line (whitespace runs collapsed), cut at a word (or, for one long word, a
/// character) boundary past [`MAX_LABEL_BYTES`] and marked with `…`.
pub(crate) fn bounded(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_LABEL_BYTES + 4));
    for word in text.split_whitespace() {
        let gap = usize::from(!out.is_empty());
        if out.len() + gap + word.len() <= MAX_LABEL_BYTES {
            if gap == 1 {
                out.push(' ');
            }
            out.push_str(word);
            continue;
        }
        if out.is_empty() {
            let mut end = MAX_LABEL_BYTES;
            while !word.is_char_boundary(end) {
                end -= 1;
            }
            out.push_str(&word[..end]);
        }
        out.push('…');
        break;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_one_short_line() {
        assert_eq!(bounded("  Install \n the   CLI "), "Install the CLI");
        let long = "word ".repeat(200_000);
        let label = bounded(&long);
        assert!(
            label.len() <= MAX_LABEL_BYTES + '…'.len_utf8(),
            "{}",
            label.len()
        );
        assert!(label.ends_with("word…"), "{label}");
        let one_word = "é".repeat(MAX_LABEL_BYTES);
        let label = bounded(&one_word);
        assert!(
            label.ends_with('…') && label.len() <= MAX_LABEL_BYTES + 3,
            "{label}"
        );
    }
}
