//! Snapshots of the chunks of real Traefik files: a big option table, mkdocs code tabs, a
//! numbered procedure with code, admonitions, and the option table with row records. Review
//! changes with `cargo insta review`.

mod common;

fn render(rel: &str) -> String {
    render_with(&common::chunker(), rel)
}

fn render_with(chunker: &rag_chunker::Chunker, rel: &str) -> String {
    let src = std::fs::read_to_string(format!("{}/{rel}", common::CORPUS)).expect("file");
    let doc = chunker.chunk(rel, &src).expect("chunk");
    let mut out = format!("title: {}\nchunks: {}\n", doc.title, doc.chunks.len());
    for c in &doc.chunks {
        out.push_str(&format!(
            "\n===== #{} tokens={} bytes={:?} id={}\n",
            c.ordinal, c.tokens, c.byte_range, c.id
        ));
        for field in [
            "table_keys",
            "table_group",
            "record",
            "row_key",
            "key_column",
        ] {
            if let Some(value) = c.metadata.get(field) {
                out.push_str(&format!("{field}: {value}\n"));
            }
        }
        out.push_str(&c.text);
        out.push('\n');
    }
    out
}

/// The table alone, as `--no-table-records` indexes it.
#[test]
fn option_table() {
    insta::assert_snapshot!(render_with(
        &common::chunker_without_records(),
        "reference/routing-configuration/http/middlewares/compress.md"
    ));
}

/// The same table with row records: the table's chunks gain `table_group`, records follow.
#[test]
fn option_table_records() {
    insta::assert_snapshot!(render_with(
        &common::chunker_with_records(),
        "reference/routing-configuration/http/middlewares/compress.md"
    ));
}

#[test]
fn code_tabs() {
    insta::assert_snapshot!(render(
        "reference/install-configuration/observability/healthcheck.md"
    ));
}

#[test]
fn numbered_procedure() {
    insta::assert_snapshot!(render(
        "reference/install-configuration/providers/kubernetes/knative.md"
    ));
}

#[test]
fn admonitions() {
    insta::assert_snapshot!(render("deprecation/releases.md"));
}
