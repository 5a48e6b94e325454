//! JavaScript (tree-sitter-javascript 0.25) and TypeScript/TSX (tree-sitter-typescript 0.23)
//! node kinds to outline items: TypeScript's grammar extends JavaScript's, so one table serves.

use tree_sitter::Node;

use super::outline::{Cx, Item, item, marked_comment};

pub(super) fn classify(cx: &Cx<'_>, node: Node<'_>, depth: usize) -> Item {
    let lines = cx.lines(node);
    let name = cx.field(node, "name");
    let named = |kw: &str| name.as_ref().map(|n| format!("{kw} {n}"));
    match node.kind() {
        "comment" => marked_comment(cx, node, &["/**"]),
        "decorator" => Item {
            attach: true,
            ..item(lines, None)
        },
        "export_statement" | "ambient_declaration" => {
            // `export class X`, `declare module M`: the inner declaration's item, whole lines.
            let inner = node
                .child_by_field_name("declaration")
                .or_else(|| (node.kind() == "ambient_declaration").then(|| node.named_child(0))?);
            match inner {
                Some(d) => Item {
                    lines,
                    ..classify(cx, d, depth)
                },
                None => item(lines, Some("export".into())),
            }
        }
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            item(lines, named("function"))
        }
        "class_declaration" | "abstract_class_declaration" | "class" => super::type_item(
            cx,
            node,
            depth,
            classify,
            |_| false,
            named("class"),
            name.clone(),
        ),
        "interface_declaration" => super::type_item(
            cx,
            node,
            depth,
            classify,
            |_| false,
            named("interface"),
            name.clone(),
        ),
        "enum_declaration" => Item {
            wants_doc: true,
            key: name.clone(),
            ..item(lines, named("enum"))
        },
        "type_alias_declaration" => Item {
            wants_doc: true,
            key: name.clone(),
            ..item(lines, named("type"))
        },
        "internal_module" | "module" => {
            super::container_item(cx, node, depth, classify, named("namespace"))
        }
        "lexical_declaration" | "variable_declaration" => {
            let kw = node.child(0).map_or("var", |k| cx.text(k));
            let first = node
                .named_child(0)
                .filter(|d| d.kind() == "variable_declarator")
                .and_then(|d| cx.field(d, "name"));
            item(lines, first.map(|n| format!("{kw} {n}")))
        }
        "import_statement" => item(lines, Some("imports".into())),
        "method_definition" | "method_signature" | "abstract_method_signature" => {
            item(lines, name.map(|n| format!("{n}()")))
        }
        "field_definition" => item(lines, cx.field(node, "property")),
        "public_field_definition" | "property_signature" => item(lines, name),
        _ => item(lines, None),
    }
}
