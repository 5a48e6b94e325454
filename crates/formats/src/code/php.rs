//! PHP node kinds (tree-sitter-php 0.25) to outline items. Attributes are part of a
//! declaration's node; `/** */` docblocks are comments joined to what they document.

use tree_sitter::Node;

use super::outline::{Cx, Item, item, marked_comment};

/// `namespace App { ... }` wraps its declarations: they are items of the file, so a class
/// inside still gets its method sections (`namespace App;` has no body to begin with).
pub(super) fn is_transparent(kind: &str) -> bool {
    matches!(kind, "namespace_definition" | "compound_statement")
}

pub(super) fn classify(cx: &Cx<'_>, node: Node<'_>, depth: usize) -> Item {
    let lines = cx.lines(node);
    let name = cx.field(node, "name");
    match node.kind() {
        "comment" => marked_comment(cx, node, &["/**"]),
        "namespace_definition" => item(lines, name.map(|n| format!("namespace {n}"))),
        "namespace_use_declaration" => item(lines, Some("uses".into())),
        kind @ ("class_declaration"
        | "interface_declaration"
        | "trait_declaration"
        | "enum_declaration") => {
            let keyword = kind.trim_end_matches("_declaration");
            let label = name.as_ref().map(|n| format!("{keyword} {n}"));
            super::type_item(cx, node, depth, classify, |_| false, label, name.clone())
        }
        "method_declaration" | "function_definition" => {
            item(lines, name.map(|n| format!("function {n}")))
        }
        "property_declaration" => {
            let mut cursor = node.walk();
            let first = node
                .named_children(&mut cursor)
                .find(|c| c.kind() == "property_element")
                .and_then(|p| p.named_child(0))
                .map(|v| cx.text(v).to_string());
            item(lines, first)
        }
        "const_declaration" => {
            let mut cursor = node.walk();
            let first = node
                .named_children(&mut cursor)
                .find(|c| c.kind() == "const_element")
                .and_then(|c| c.named_child(0))
                .map(|n| format!("const {}", cx.text(n)));
            item(lines, first)
        }
        _ => item(lines, None),
    }
}
