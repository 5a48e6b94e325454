//! Python node kinds (tree-sitter-python 0.25) to outline items.

use tree_sitter::Node;

use super::outline::{Body, Cx, Item, item, summarize};

pub(super) fn classify(cx: &Cx<'_>, node: Node<'_>, depth: usize) -> Item {
    let lines = cx.lines(node);
    match node.kind() {
        "comment" => Item {
            attach: true,
            ..item(lines, None)
        },
        "decorated_definition" => match node.child_by_field_name("definition") {
            // Decorators are part of this node: the definition's item widened to them.
            Some(def) => Item {
                lines,
                ..classify(cx, def, depth)
            },
            None => item(lines, None),
        },
        "function_definition" => item(lines, cx.field(node, "name").map(|n| format!("def {n}"))),
        "class_definition" => class(cx, node, depth),
        "import_statement" | "import_from_statement" | "future_import_statement" => {
            item(lines, Some("imports".into()))
        }
        "expression_statement" => {
            // `_MAXLINE = 65536` is labelled by its target; a docstring or call is not.
            let label = node
                .named_child(0)
                .filter(|c| matches!(c.kind(), "assignment" | "augmented_assignment"))
                .and_then(|a| a.child_by_field_name("left"))
                .filter(|l| l.kind() == "identifier")
                .map(|l| cx.text(l).to_string());
            item(lines, label)
        }
        _ => item(lines, None),
    }
}

fn class(cx: &Cx<'_>, node: Node<'_>, depth: usize) -> Item {
    let name = cx.field(node, "name");
    let block = node.child_by_field_name("body");
    let summary = block
        .and_then(|b| b.named_child(0))
        .filter(|s| s.kind() == "expression_statement")
        .and_then(|s| s.named_child(0))
        .filter(|s| s.kind() == "string")
        .and_then(|s| summarize(cx.text(s)));
    // The docstring and class attributes before the first method stay with the class line.
    let body = block
        .and_then(|b| super::members(cx, b, depth, classify, |k| !is_member(k)))
        .map(|children| Body {
            children,
            context: summary.clone(),
            context_in_prologue: true,
        });
    Item {
        wants_doc: true,
        summary,
        key: name.clone(),
        body,
        ..item(cx.lines(node), name.map(|n| format!("class {n}")))
    }
}

fn is_member(kind: &str) -> bool {
    matches!(
        kind,
        "function_definition" | "decorated_definition" | "class_definition"
    )
}
