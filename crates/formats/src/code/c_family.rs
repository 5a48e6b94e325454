//! C (tree-sitter-c 0.24) and C++ (tree-sitter-cpp 0.23) node kinds to outline items: C++'s
//! grammar extends C's, so one table serves both. A function is labelled by its declarator
//! (`parse_header()`, `Reader::next()`); structs, classes and namespaces hold their members.

use tree_sitter::Node;

use super::outline::{Cx, Item, collapse, item, marked_comment};

/// Preprocessor conditionals (an include guard wraps a whole header), `extern "C" { }` blocks
/// and namespaces (which often wrap a whole file, nested): their declarations are items of the
/// list they sit in, so a class in a namespace still gets sections for its members.
pub(super) fn is_transparent(kind: &str) -> bool {
    matches!(
        kind,
        "namespace_definition"
            | "preproc_ifdef"
            | "preproc_if"
            | "preproc_else"
            | "preproc_elif"
            | "preproc_elifdef"
            | "linkage_specification"
            | "declaration_list"
    )
}

pub(super) fn classify(cx: &Cx<'_>, node: Node<'_>, depth: usize) -> Item {
    let lines = cx.lines(node);
    let name = cx.field(node, "name");
    match node.kind() {
        "comment" => marked_comment(cx, node, &["/**", "/*!", "///", "//!"]),
        "preproc_include" | "using_declaration" => item(lines, Some("includes".into())),
        "preproc_def" | "preproc_function_def" => item(lines, name.map(|n| format!("#define {n}"))),
        "function_definition" | "declaration" | "field_declaration" => {
            item(lines, declared(cx, node))
        }
        "type_definition" => {
            let alias = declarator_name(cx, node);
            Item {
                wants_doc: true,
                key: alias.clone(),
                ..item(lines, alias.map(|a| format!("typedef {a}")))
            }
        }
        "alias_declaration" => item(lines, name.map(|n| format!("using {n}"))),
        "struct_specifier" | "union_specifier" | "enum_specifier" | "class_specifier" => {
            let keyword = node.kind().trim_end_matches("_specifier");
            super::type_item(
                cx,
                node,
                depth,
                classify,
                |_| false,
                name.as_ref().map(|n| format!("{keyword} {n}")),
                name,
            )
        }
        // Reached only past the depth at which namespaces are transparent.
        "namespace_definition" => {
            let label = Some(match &name {
                Some(n) => format!("namespace {n}"),
                None => "namespace".to_string(),
            });
            super::container_item(cx, node, depth, classify, label)
        }
        // `template <class T>` is part of the declaration it introduces.
        "template_declaration" => {
            let mut cursor = node.walk();
            let inner = node
                .named_children(&mut cursor)
                .filter(|c| c.kind() != "template_parameter_list")
                .last();
            match inner {
                Some(d) => Item {
                    lines,
                    ..classify(cx, d, depth)
                },
                None => item(lines, None),
            }
        }
        _ => item(lines, None),
    }
}

/// What a definition or declaration declares: `name()` for a function, else the name of its
/// first declarator; a `struct X { } x;` declaration is labelled by its type.
fn declared(cx: &Cx<'_>, node: Node<'_>) -> Option<String> {
    let name = declarator_name(cx, node);
    if declares_function(node) {
        return name.map(|n| format!("{n}()"));
    }
    name.or_else(|| {
        let ty = node.child_by_field_name("type")?;
        matches!(
            ty.kind(),
            "struct_specifier" | "union_specifier" | "enum_specifier" | "class_specifier"
        )
        .then(|| cx.field(ty, "name"))?
    })
}

/// Declarators nest (`*`, `&`, arrays, `(...)`, `= value`); the name is at the bottom.
const MAX_DECLARATOR_DEPTH: usize = 16;

fn declarator_name(cx: &Cx<'_>, node: Node<'_>) -> Option<String> {
    let mut d = node.child_by_field_name("declarator")?;
    for _ in 0..MAX_DECLARATOR_DEPTH {
        match d.kind() {
            "identifier"
            | "field_identifier"
            | "type_identifier"
            | "qualified_identifier"
            | "destructor_name"
            | "operator_name"
            | "template_function"
            | "primitive_type" => {
                return Some(collapse(cx.text(d)));
            }
            _ => {
                d = d
                    .child_by_field_name("declarator")
                    .or_else(|| d.named_child(0))?
            }
        }
    }
    None
}

fn declares_function(node: Node<'_>) -> bool {
    let mut d = node.child_by_field_name("declarator");
    for _ in 0..MAX_DECLARATOR_DEPTH {
        match d {
            Some(n) if n.kind() == "function_declarator" => return true,
            Some(n) => d = n.child_by_field_name("declarator"),
            None => return false,
        }
    }
    false
}
