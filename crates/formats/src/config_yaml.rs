//! YAML members from yaml-rust2's event parser, without building (or expanding) a tree.
//!
//! Aliases are never resolved; their expanded size is counted arithmetically (each anchor's
//! event count is remembered), so an alias bomb fails with `TooLarge` after a few hundred events.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, Parser};

use crate::config::Member;
use crate::convert::FormatError;

/// Nodes the document would have with every alias expanded.
const MAX_NODES: u64 = 1_000_000;
const MAX_DEPTH: usize = 256;

struct Frame {
    map: bool,
    expect_key: bool,
    index: usize,
    members: Vec<Member>,
    /// The member being read, with its start (char index); ends where the next one starts.
    cur: Option<(Member, usize)>,
    /// Events counted when the container started, and its anchor.
    anchor: (usize, u64),
}

struct Builder {
    frames: Vec<Frame>,
    /// Finished members: (member, start char, end char) ranges are fixed up at the end.
    top: Vec<Member>,
    ranges: Vec<(usize, usize)>,
    /// A member was started by a container event, whose mark can lie after the container's
    /// first key (block mappings): the next event's mark may move the start back.
    pending_start: bool,
}

pub(crate) fn members(src: &str) -> Result<Vec<Member>, FormatError> {
    let mut parser = Parser::new_from_str(src);
    let mut b = Builder {
        frames: Vec::new(),
        top: Vec::new(),
        ranges: Vec::new(),
        pending_start: false,
    };
    let mut nodes: u64 = 0;
    let mut anchors: HashMap<usize, u64> = HashMap::new();
    loop {
        let (ev, mark) = parser.next_token().map_err(|e| FormatError::Invalid {
            format: "yaml",
            reason: e.to_string(),
        })?;
        let at = mark.index();
        nodes += 1;
        if std::mem::take(&mut b.pending_start) {
            b.pull_start(at);
        }
        match ev {
            Event::StreamEnd => break,
            Event::Scalar(value, _, anchor, _) => {
                if anchor > 0 {
                    anchors.insert(anchor, 1);
                }
                b.scalar(value, at);
            }
            Event::Alias(id) => {
                nodes = nodes.saturating_add(anchors.get(&id).copied().unwrap_or(1));
                b.scalar(String::from("*alias"), at);
            }
            Event::MappingStart(anchor, _) | Event::SequenceStart(anchor, _) => {
                let map = matches!(ev, Event::MappingStart(..));
                b.value_start(at);
                b.pending_start = true;
                if b.frames.len() >= MAX_DEPTH {
                    return Err(FormatError::TooLarge {
                        what: "YAML nesting depth",
                        limit: MAX_DEPTH as u64,
                    });
                }
                b.frames.push(Frame {
                    map,
                    expect_key: true,
                    index: 0,
                    members: Vec::new(),
                    cur: None,
                    anchor: (anchor, nodes),
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                if let Some(f) = b.frames.last()
                    && f.anchor.0 > 0
                {
                    anchors.insert(f.anchor.0, nodes.saturating_sub(f.anchor.1));
                }
                b.container_end(at);
            }
            _ => {}
        }
        if nodes > MAX_NODES {
            return Err(FormatError::TooLarge {
                what: "YAML nodes (aliases expanded)",
                limit: MAX_NODES,
            });
        }
    }
    b.fix_ranges(src);
    Ok(b.top)
}

impl Builder {
    /// A value (or key) event begins in the innermost container.
    fn value_start(&mut self, at: usize) {
        let Some(f) = self.frames.last_mut() else {
            return;
        };
        if f.map && f.expect_key {
            // A complex (non-scalar) key.
            Self::start_member(f, "?".into(), at, &mut self.ranges);
            f.expect_key = false;
        } else if !f.map {
            let key = format!("[{}]", f.index);
            f.index += 1;
            Self::start_member(f, key, at, &mut self.ranges);
        }
    }

    /// Moves the start of the member holding the innermost container back to `at`.
    fn pull_start(&mut self, at: usize) {
        let n = self.frames.len();
        if n >= 2
            && let Some((_, start)) = self.frames[n - 2].cur.as_mut()
        {
            *start = (*start).min(at);
        }
    }

    fn scalar(&mut self, value: String, at: usize) {
        let Some(f) = self.frames.last_mut() else {
            return;
        };
        if f.map && f.expect_key {
            Self::start_member(f, value, at, &mut self.ranges);
            f.expect_key = false;
        } else {
            self.value_start(at);
            if let Some(f) = self.frames.last_mut() {
                f.expect_key = true;
            }
        }
    }

    fn start_member(f: &mut Frame, key: String, at: usize, ranges: &mut Vec<(usize, usize)>) {
        if let Some((m, start)) = f.cur.take() {
            Self::finish(f, m, start, at, ranges);
        }
        f.cur = Some((
            Member {
                key,
                ..Member::default()
            },
            at,
        ));
    }

    fn finish(f: &mut Frame, mut m: Member, start: usize, end: usize, r: &mut Vec<(usize, usize)>) {
        // Char indices for now; `fix_ranges` turns them into bytes and slices the text.
        m.range = Some(r.len()..r.len());
        r.push((start, end));
        f.members.push(m);
    }

    fn container_end(&mut self, at: usize) {
        let Some(mut f) = self.frames.pop() else {
            return;
        };
        if let Some((m, start)) = f.cur.take() {
            Self::finish(&mut f, m, start, at, &mut self.ranges);
        }
        match self.frames.last_mut() {
            Some(parent) => {
                if let Some((m, _)) = parent.cur.as_mut() {
                    m.children = f.members;
                }
                if parent.map {
                    parent.expect_key = true;
                }
            }
            None => self.top.extend(f.members),
        }
    }

    /// Char ranges to byte ranges (one pass), widened to whole lines where only indentation and
    /// `- ` markers precede them, trailing blank space dropped, and the text sliced.
    fn fix_ranges(&mut self, src: &str) {
        let mut wanted: Vec<usize> = self.ranges.iter().flat_map(|&(a, b)| [a, b]).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut map = HashMap::with_capacity(wanted.len());
        let mut w = wanted.iter().peekable();
        for (ci, (bi, _)) in src.char_indices().enumerate() {
            while w.peek() == Some(&&ci) {
                map.insert(ci, bi);
                w.next();
            }
            if w.peek().is_none() {
                break;
            }
        }
        let byte = |c: usize| map.get(&c).copied().unwrap_or(src.len());
        let ranges: Vec<(usize, usize)> = self
            .ranges
            .iter()
            .map(|&(a, b)| (byte(a), byte(b)))
            .collect();
        fn fix(members: &mut [Member], ranges: &[(usize, usize)], src: &str) {
            for m in members {
                let Some(i) = m.range.as_ref().map(|r| r.start) else {
                    continue;
                };
                let (mut a, b) = ranges[i];
                let line = src[..a].rfind('\n').map_or(0, |p| p + 1);
                if src[line..a].chars().all(|c| c == ' ' || c == '-') {
                    a = line;
                }
                let b = a.max(a + src[a..b.max(a)].trim_end().len());
                m.range = Some(a..b);
                m.text = src[a..b].to_string();
                fix(&mut m.children, ranges, src);
            }
        }
        fix(&mut self.top, &ranges, src);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_keys_are_whole_lines() {
        let src = "# c\nname: app\nlist:\n  - a\n  - b: 1\nnested:\n  x: 1\n";
        let m = members(src).unwrap();
        let texts: Vec<_> = m
            .iter()
            .map(|m| (m.key.as_str(), m.text.as_str()))
            .collect();
        assert_eq!(
            texts,
            [
                ("name", "name: app"),
                ("list", "list:\n  - a\n  - b: 1"),
                ("nested", "nested:\n  x: 1")
            ]
        );
        assert_eq!(m[1].children[1].text, "  - b: 1");
    }

    #[test]
    fn alias_bomb_fails_fast() {
        let mut src = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for (prev, name) in "abcdefgh".chars().zip("bcdefghi".chars()) {
            let refs = vec![format!("*{prev}"); 9].join(",");
            src.push_str(&format!("{name}: &{name} [{refs}]\n"));
        }
        assert!(src.len() < 600);
        let t = std::time::Instant::now();
        assert!(matches!(members(&src), Err(FormatError::TooLarge { .. })));
        assert!(t.elapsed().as_millis() < 500);
    }
}
