//! The tantivy schema of the lexical index: one document per chunk.

use tantivy::schema::{
    FAST, Field, IndexRecordOption, NumericOptions, STRING, Schema, TextFieldIndexing, TextOptions,
};

use crate::analyzer::ANALYZER_NAME;

/// Field names, as stored in the index's `meta.json`.
pub(crate) const CHUNK_ID: &str = "chunk_id";
pub(crate) const POINT: &str = "point";
pub(crate) const TEXT: &str = "text";
pub(crate) const PATH: &str = "path";

/// The fields of the schema, resolved once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fields {
    /// Raw (untokenized) key: deletes go by this term. A fast field too, so hits and
    /// [`chunk_ids`](crate::LexicalIndex::chunk_ids) read it from the columnar store without a
    /// document store.
    pub chunk_id: Field,
    /// The chunk's numeric id, a fast field so the search filter reads it per matching doc.
    pub point: Field,
    /// The embedded text, analyzed.
    pub text: Field,
    /// The file path, analyzed the same way so its words match.
    pub path: Field,
}

/// The schema this crate writes. Nothing is stored in the document store: every value a search
/// returns comes from fast fields.
pub(crate) fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let chunk_id = builder.add_text_field(CHUNK_ID, STRING | FAST);
    let point = builder.add_u64_field(POINT, NumericOptions::default() | FAST);
    // Frequencies but no positions: queries are bags of terms, never phrases, and positions
    // would roughly double the postings on disk.
    let analyzed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let text = builder.add_text_field(TEXT, analyzed.clone());
    let path = builder.add_text_field(PATH, analyzed);
    (
        builder.build(),
        Fields {
            chunk_id,
            point,
            text,
            path,
        },
    )
}

/// The fields of `found` if it is exactly the schema this crate writes, else `None`.
pub(crate) fn check(found: &Schema) -> Option<Fields> {
    let (expected, fields) = schema();
    (found == &expected).then_some(fields)
}
