//! C# node kinds (tree-sitter-c-sharp 0.23) to outline items. Attributes are part of a
//! declaration's node; `///` XML doc comments are comments joined to what they document.

use tree_sitter::Node;

use super::outline::{Cx, Item, item, marked_comment};

/// Namespaces (block or file-scoped) wrap whole files: their types are items of the file, so
/// a class's members still get sections.
pub(super) fn is_transparent(kind: &str) -> bool {
    matches!(
        kind,
        "namespace_declaration" | "file_scoped_namespace_declaration" | "declaration_list"
    )
}

pub(super) fn classify(cx: &Cx<'_>, node: Node<'_>, depth: usize) -> Item {
    let lines = cx.lines(node);
    let name = cx.field(node, "name");
    match node.kind() {
        "comment" => marked_comment(cx, node, &["///", "/**"]),
        "using_directive" => item(lines, Some("usings".into())),
        kind @ ("class_declaration"
        | "struct_declaration"
        | "interface_declaration"
        | "record_declaration"
        | "enum_declaration") => {
            let keyword = kind.trim_end_matches("_declaration");
            let label = name.as_ref().map(|n| format!("{keyword} {n}"));
            super::type_item(cx, node, depth, classify, |_| false, label, name.clone())
        }
        "method_declaration"
        | "constructor_declaration"
        | "destructor_declaration"
        | "local_function_statement"
        | "operator_declaration" => item(lines, name.map(|n| format!("{n}()"))),
        "property_declaration" | "event_declaration" | "indexer_declaration" => item(lines, name),
        "field_declaration" | "event_field_declaration" => {
            let mut cursor = node.walk();
            let first = node
                .named_children(&mut cursor)
                .find(|c| c.kind() == "variable_declaration")
                .and_then(|v| {
                    let mut c = v.walk();
                    v.named_children(&mut c)
                        .find(|d| d.kind() == "variable_declarator")
                })
                .and_then(|d| cx.field(d, "name"));
            item(lines, first)
        }
        "delegate_declaration" => item(lines, name.map(|n| format!("delegate {n}"))),
        _ => item(lines, None),
    }
}
