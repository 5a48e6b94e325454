//! Java node kinds (tree-sitter-java 0.23) to outline items. Annotations and modifiers are part
//! of a declaration's node; Javadoc (`/** */`) is a comment joined to the declaration after it.

use tree_sitter::Node;

use super::outline::{Cx, Item, item, marked_comment};

pub(super) fn classify(cx: &Cx<'_>, node: Node<'_>, depth: usize) -> Item {
    let lines = cx.lines(node);
    let name = cx.field(node, "name");
    let named = |kw: &str| name.as_ref().map(|n| format!("{kw} {n}"));
    match node.kind() {
        "line_comment" | "block_comment" => marked_comment(cx, node, &["/**"]),
        "package_declaration" => {
            let package = node.named_child(0).map(|n| cx.text(n).to_string());
            item(lines, package.map(|p| format!("package {p}")))
        }
        "import_declaration" => item(lines, Some("imports".into())),
        // An enum's constants stay with its first line; members get sections when it is big.
        kind @ ("class_declaration"
        | "interface_declaration"
        | "enum_declaration"
        | "record_declaration"
        | "annotation_type_declaration") => {
            let keyword = match kind {
                "annotation_type_declaration" => "@interface",
                other => other.trim_end_matches("_declaration"),
            };
            let in_prologue = |member: &str| member == "enum_constant";
            super::type_item(
                cx,
                node,
                depth,
                classify,
                in_prologue,
                named(keyword),
                name.clone(),
            )
        }
        "method_declaration" | "constructor_declaration" | "compact_constructor_declaration" => {
            item(lines, name.map(|n| format!("{n}()")))
        }
        "field_declaration" | "constant_declaration" => {
            let first = node
                .child_by_field_name("declarator")
                .and_then(|d| cx.field(d, "name"));
            item(lines, first)
        }
        "static_initializer" => item(lines, Some("static initializer".into())),
        _ => item(lines, None),
    }
}
