//! Helpers shared by the reader tests.

/// The lines of `md` from the one equal to `first` to the one equal to `last`, both included.
pub fn between<'a>(md: &'a str, first: &str, last: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = md.lines().collect();
    let start = lines
        .iter()
        .position(|l| *l == first)
        .unwrap_or_else(|| panic!("no {first:?} in\n{md}"));
    let end = start
        + lines[start..]
            .iter()
            .position(|l| *l == last)
            .unwrap_or_else(|| panic!("no {last:?} after {first:?} in\n{md}"));
    lines[start..=end].to_vec()
}
