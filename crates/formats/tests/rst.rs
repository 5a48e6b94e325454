//! reStructuredText: a Sphinx page's structure reaches the chunker as Markdown it packs well
//! (headings by adornment order, boxes, code, tables, lists), with the text the rendered page
//! shows, and hostile input converts without a panic (its speed: the `parse` bench).

mod support;
use support::between;

use rag_formats::{Format, convert};

#[path = "../benches/inputs/hostile_rst.rs"]
mod hostile_rst;
use hostile_rst::hostile_rst;

const PAGE: &str = include_str!("fixtures/sphinx_page.rst");

fn markdown(src: &str) -> String {
    convert(Format::Rst, src.as_bytes()).unwrap().markdown
}

#[test]
fn section_levels_follow_the_order_adornments_first_appear() {
    let c = convert(Format::Rst, PAGE.as_bytes()).unwrap();
    assert_eq!(c.title.as_deref(), Some("Deploying Widgets"));
    let headings: Vec<&str> = c.markdown.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(
        headings,
        [
            "# Deploying Widgets",
            "## Installing",
            "### Configuration",
            "### Limits",
            "#### Steps",
            "### Back to the overview",
        ]
    );
    assert_eq!(c.metadata["format"], "rst");
}

#[test]
fn boxes_keep_their_text_and_descriptions_nest_with_more_colons() {
    let md = markdown(PAGE);
    assert_eq!(
        between(&md, "::: note", ":::"),
        [
            "::: note",
            "The daemon refuses to start when the WIDGET_HOME folder is writable by other users.",
            "",
            "Fix the permissions first.",
            ":::",
        ]
    );
    assert!(md.contains(
        "::: admonition Running as root\nNever run serve_forever() as root; drop privileges with the --user option instead.\n:::"
    ));
    let class = between(&md, "::::: class Server(port=8470, *, workers=4)", ":::::");
    assert!(class.contains(&":::: method reload(config)"), "{class:?}");
    assert!(class.contains(&"::: warning"), "{class:?}");
    assert!(class.contains(&"- param workers: how many worker threads serve requests."));
    assert!(md.contains("Changed in version 2.1: The default port is now 8470."));
}

#[test]
fn literal_blocks_and_code_directives_are_fenced_code_without_their_options() {
    let md = markdown(PAGE);
    assert!(md.contains("Install the daemon with pip:\n\n```\n$ pip install widgetd\n```"));
    // "text ::" shows no colon.
    assert!(
        md.contains("installs into your home folder\n\n```\n$ pip install --user widgetd\n```")
    );
    assert!(md.contains("```python\nfrom widgetd import Server\nserver = Server(port=8470)\n"));
    assert!(!md.contains("linenos"));
    // A code block inside a numbered item stays inside it.
    assert!(
        md.contains(
            "2. Copy the new binary:\n\n   ```shell\n   cp widgetd /usr/local/bin/\n   ```"
        )
    );
}

#[test]
fn every_table_kind_is_a_table_with_its_rows_whole() {
    let md = markdown(PAGE);
    assert!(md.contains(
        "| Setting | Default | Meaning |\n| --- | --- | --- |\n| max_widgets | 512 | Widgets one worker holds at once. |\n| timeout | 30 | Seconds before a stuck request is dropped. |"
    ));
    assert!(md.contains(
        "| SIGTERM | stop | the service manager stops widgetd (after draining connections) |"
    ));
    assert!(md.contains("| Signal | Action | When |\n| --- | --- | --- |\n| SIGHUP |"));
    assert!(md.contains(
        "**Ports**\n\n| Port | Protocol |\n| --- | --- |\n| 8470 | HTTP |\n| 8471 | gRPC |"
    ));
    assert!(md.contains("| Code | Meaning |\n| --- | --- |\n| 0 | clean stop |\n| 3 | bad configuration, see \"widgetd check\" |"));
}

#[test]
fn lists_keep_their_items_and_markup_shows_its_text() {
    let md = markdown(PAGE);
    assert!(md.contains("1. Stop the old daemon.\n2. Copy the new binary:"));
    assert!(md.contains("- widgetd check validates the file.\n- widgetd run starts serving."));
    assert!(md.contains("- **term one**\n\n  The definition of term one."));
    assert!(md.contains("- -v, --verbose: Print every request."));
    assert!(md.contains(
        "This guide covers running widgetd behind a proxy. See the configuration reference and /install first, and read the upstream notes too."
    ));
    assert!(md.contains("[#limits] Limits apply per worker."));
    assert!(md.contains("**Changelog**\n\nNothing yet."));
}

#[test]
fn what_a_reader_never_sees_is_dropped() {
    let md = markdown(PAGE);
    for hidden in [
        "orphan",
        "deploy-guide",
        "On this page",
        "maxdepth",
        "install\nconfig",
        "Widget Daemon",
        "This comment",
        "Not even this line",
        "diagram.png",
        "A diagram",
        "---------",
    ] {
        assert!(!md.contains(hidden), "{hidden:?} shown in\n{md}");
    }
}

#[test]
fn provenance_points_into_the_rst_file() {
    let c = convert(Format::Rst, PAGE.as_bytes()).unwrap();
    let at = c.markdown.find("Fix the permissions first.").unwrap();
    let source = c.provenance(at..at + 26).source.unwrap();
    assert!(PAGE[source].contains("Fix the permissions first."));
}

/// Hostile inputs: each converts, without a panic, to Markdown no bigger than a bound. Their
/// speed (linear, not quadratic) is measured in `cargo bench -p rag-formats --bench parse`.
#[test]
fn hostile_input_converts_without_a_panic() {
    for (name, src) in hostile_rst() {
        let c = convert(Format::Rst, src.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(c.markdown.len() <= src.len() * 2 + 1024, "{name}");
    }
    let e = convert(Format::Rst, b"a\0b").unwrap_err();
    assert!(e.to_string().contains("not"), "{e}");
}

#[test]
fn bare_descriptions_show_their_signature_and_bare_extension_directives_nothing() {
    let md = markdown(
        ".. fixture:: capfd\n\ncapfd\n~~~~~\n\nText.\n\n.. py:data:: MAX_SIZE\n\n.. autofunction:: capfd\n",
    );
    assert_eq!(md, "# capfd\n\nText.\n\nMAX_SIZE\n");
}

#[test]
fn a_field_body_continues_its_item_not_an_indented_code_block() {
    let md =
        markdown(":param filter: A warning filter.\n\n   For example::\n\n      ignore::Warning\n");
    assert_eq!(
        md,
        "- param filter: A warning filter.\n\n  For example:\n\n  ```\n  ignore::Warning\n  ```\n"
    );
}

#[test]
fn a_txt_page_in_restructured_text_is_read_as_such_and_plain_text_is_not() {
    let django_like = "==========\nMiddleware\n==========\n\n.. module:: django.middleware\n\nSee :doc:`/topics/http`.\n";
    assert_eq!(
        Format::from_path_and_bytes("docs/ref/middleware.txt", django_like.as_bytes()),
        Some(Format::Rst)
    );
    assert_eq!(
        Format::from_path_and_bytes("ref/roles.TXT", b"Roles\n=====\n\nUse :ref:`x`.\n"),
        Some(Format::Rst)
    );
    // Plain text with an underlined title but nothing only reStructuredText writes.
    let policy = "Returns Policy\n==============\n\n3. Safety Stock\n\nKeep two weeks of stock: see section 4.\n";
    assert_eq!(
        Format::from_path_and_bytes("policy.txt", policy.as_bytes()),
        None
    );
    // Markup without a title, and other extensions, are not sniffed.
    assert_eq!(
        Format::from_path_and_bytes("notes.txt", b"Run it.\n\n.. note:: a\n"),
        None
    );
    assert_eq!(
        Format::from_path_and_bytes("notes.md", django_like.as_bytes()),
        None
    );
    assert_eq!(
        Format::from_path_and_bytes("page.rst", b""),
        Some(Format::Rst)
    );
}

#[test]
fn a_version_note_reads_as_sphinx_words_it() {
    assert_eq!(
        markdown(".. deprecated:: 3.1 Use run() instead.\n"),
        "Deprecated since version 3.1: Use run() instead.\n"
    );
    assert_eq!(
        markdown(".. versionadded:: 2.0\n"),
        "Added in version 2.0.\n"
    );
    // The note may start on the next line, even with a role: it is text, not an option.
    assert_eq!(
        markdown(".. versionchanged:: 2.18.0\n   :setting:`FEEDS` is now ignored.\n"),
        "Changed in version 2.18.0: FEEDS is now ignored.\n"
    );
}

#[test]
fn a_directive_line_opening_with_a_role_is_text_and_options_are_still_options() {
    let md = markdown(
        ".. caution:: Cookies set in the header are not handled by\n    \
         :class:`~scrapy.CookiesMiddleware`, which\n    drops that header.\n\n\
         .. note::\n   :class: tip\n   :name: the-note\n\n   Noted.\n",
    );
    assert_eq!(
        md,
        "::: caution\nCookies set in the header are not handled by CookiesMiddleware, which \
         drops that header.\n:::\n\n::: note\nNoted.\n:::\n"
    );
}
