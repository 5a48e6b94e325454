//! Ruby node kinds (tree-sitter-ruby 0.23) to outline items. A `# comment` right above a
//! definition documents it, as in Go.

use tree_sitter::Node;

use super::outline::{Cx, Item, comment, item};

/// Modules wrap whole files (`module Rack` around every class of a gem): their classes and
/// methods are items of the file, so a class's methods still get sections.
pub(super) fn is_transparent(kind: &str) -> bool {
    matches!(kind, "module" | "body_statement")
}

pub(super) fn classify(cx: &Cx<'_>, node: Node<'_>, depth: usize) -> Item {
    let lines = cx.lines(node);
    let name = cx.field(node, "name");
    match node.kind() {
        "comment" => comment(lines, true),
        "class" | "singleton_class" => {
            let label = Some(match &name {
                Some(n) => format!("class {n}"),
                None => "class << self".to_string(),
            });
            super::type_item(cx, node, depth, classify, |_| false, label, name.clone())
        }
        "module" => {
            let label = name.as_ref().map(|n| format!("module {n}"));
            super::type_item(cx, node, depth, classify, |_| false, label, name.clone())
        }
        "method" => item(lines, name.map(|n| format!("def {n}"))),
        "singleton_method" => {
            let object = cx.field(node, "object").unwrap_or_else(|| "self".into());
            item(lines, name.map(|n| format!("def {object}.{n}")))
        }
        "call" => {
            let method = cx.field(node, "method").unwrap_or_default();
            let label = match method.as_str() {
                "require" | "require_relative" | "load" => Some("requires".to_string()),
                _ => None,
            };
            item(lines, label)
        }
        "assignment" => {
            let left = node
                .child_by_field_name("left")
                .filter(|l| l.kind() == "constant")
                .map(|l| cx.text(l).to_string());
            item(lines, left)
        }
        _ => item(lines, None),
    }
}
