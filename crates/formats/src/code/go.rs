//! Go node kinds (tree-sitter-go 0.25) to outline items. Methods are top-level in Go: each
//! carries its receiver type as `key`, and a type with the methods after it becomes one
//! container (`outline::group_by_key`).

use tree_sitter::Node;

use super::outline::{Cx, Item, collapse, item};

pub(super) fn classify(cx: &Cx<'_>, node: Node<'_>, _depth: usize) -> Item {
    let lines = cx.lines(node);
    match node.kind() {
        // Go doc comments are plain `//` lines right above the declaration.
        "comment" => Item {
            attach: true,
            doc_comment: true,
            ..item(lines, None)
        },
        "package_clause" => {
            let name = node.named_child(0).map(|n| cx.text(n).to_string());
            item(lines, name.map(|n| format!("package {n}")))
        }
        "import_declaration" => item(lines, Some("imports".into())),
        "function_declaration" => item(lines, cx.field(node, "name").map(|n| format!("func {n}"))),
        "method_declaration" => {
            let recv = node.child_by_field_name("receiver");
            let name = cx.field(node, "name").unwrap_or_default();
            let label = match recv {
                Some(r) => format!("func {} {name}", collapse(cx.text(r))),
                None => format!("func {name}"),
            };
            Item {
                key: recv.map(|r| receiver_type(cx.text(r))),
                ..item(lines, Some(label))
            }
        }
        "type_declaration" => {
            let name = first_spec(node).and_then(|s| cx.field(s, "name"));
            Item {
                wants_doc: true,
                key: name.clone(),
                ..item(lines, name.map(|n| format!("type {n}")))
            }
        }
        "const_declaration" | "var_declaration" => {
            let kw = if node.kind() == "const_declaration" {
                "const"
            } else {
                "var"
            };
            let name = first_spec(node).and_then(|s| {
                let spec = if s.kind() == "var_spec_list" {
                    s.named_child(0)?
                } else {
                    s
                };
                cx.field(spec, "name")
            });
            item(
                lines,
                Some(name.map_or(kw.to_string(), |n| format!("{kw} {n}"))),
            )
        }
        _ => item(lines, None),
    }
}

fn first_spec(node: Node<'_>) -> Option<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .find(|c| c.kind() != "comment")
}

/// `(r *Reader[T])` -> `Reader`.
fn receiver_type(recv: &str) -> String {
    let inner = recv.trim().trim_start_matches('(').trim_end_matches(')');
    let ty = inner.split_whitespace().last().unwrap_or(inner);
    let ty = ty.trim_start_matches('*');
    ty.split('[').next().unwrap_or(ty).to_string()
}
