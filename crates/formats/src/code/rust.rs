//! Rust node kinds (tree-sitter-rust 0.24) to outline items.

use tree_sitter::Node;

use super::outline::{Cx, Item, collapse, item};

pub(super) fn classify(cx: &Cx<'_>, node: Node<'_>, depth: usize) -> Item {
    let lines = cx.lines(node);
    let name = cx.field(node, "name");
    let named = |kw: &str| name.as_ref().map(|n| format!("{kw} {n}"));
    match node.kind() {
        "line_comment" | "block_comment" => {
            let t = cx.text(node);
            let inner = t.starts_with("//!") || t.starts_with("/*!");
            Item {
                // Module docs (`//!`) describe the file, not the next item.
                attach: !inner,
                doc_comment: (t.starts_with("///") && !t.starts_with("////"))
                    || (t.starts_with("/**") && !t.starts_with("/***")),
                ..item(lines, None)
            }
        }
        "attribute_item" => Item {
            attach: true,
            ..item(lines, None)
        },
        "function_item" | "function_signature_item" => item(lines, named("fn")),
        "struct_item" | "enum_item" | "union_item" | "type_item" => {
            let kw = match node.kind() {
                "struct_item" => "struct",
                "enum_item" => "enum",
                "union_item" => "union",
                _ => "type",
            };
            Item {
                wants_doc: true,
                key: name.clone(),
                ..item(lines, named(kw))
            }
        }
        "trait_item" => {
            let mut it = container(cx, node, depth, named("trait"));
            it.wants_doc = true;
            it.key = name.clone();
            if let Some(b) = &mut it.body {
                b.context_in_prologue = true;
            }
            it
        }
        "impl_item" => {
            let target = cx.field(node, "type");
            let mut label = String::from("impl");
            if let Some(tp) = cx.field(node, "type_parameters") {
                label.push_str(&tp);
            }
            label.push(' ');
            if let Some(tr) = cx.field(node, "trait") {
                label.push_str(&tr);
                label.push_str(" for ");
            }
            label.push_str(target.as_deref().unwrap_or("?"));
            let mut it = container(cx, node, depth, Some(label));
            it.key = target.as_deref().map(base_name);
            it
        }
        "mod_item" => container(cx, node, depth, named("mod")),
        "foreign_mod_item" => container(cx, node, depth, Some("extern block".into())),
        "const_item" => item(lines, named("const")),
        "static_item" => item(lines, named("static")),
        "associated_type" => item(lines, named("type")),
        "macro_definition" => item(lines, named("macro_rules!")),
        "use_declaration" => item(lines, Some("imports".into())),
        "extern_crate_declaration" => item(lines, named("extern crate")),
        "macro_invocation" => item(lines, cx.field(node, "macro").map(|m| format!("{m}!"))),
        "expression_statement" => {
            let label = node
                .named_child(0)
                .filter(|c| c.kind() == "macro_invocation")
                .and_then(|m| cx.field(m, "macro"))
                .map(|m| format!("{m}!"));
            item(lines, label)
        }
        _ => item(lines, None),
    }
}

fn container(cx: &Cx<'_>, node: Node<'_>, depth: usize, label: Option<String>) -> Item {
    super::container_item(cx, node, depth, classify, label)
}

/// `ignore::Walk<'a, T>` -> `Walk`: the name a struct definition has.
fn base_name(ty: &str) -> String {
    let ty = ty.split('<').next().unwrap_or(ty);
    let ty = ty.rsplit("::").next().unwrap_or(ty);
    collapse(ty.trim_start_matches(['&', '*']))
}
