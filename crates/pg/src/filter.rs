//! Labels and metadata filters as SQL conditions, so they apply inside the vector and text
//! searches themselves rather than to a short list afterwards.

use postgres::types::ToSql;

/// A comparison of [`PgCondition`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PgOp {
    /// Any value equals one of the given ones.
    Eq,
    /// No value equals any of the given ones.
    Ne,
    /// Some value is at least the given one.
    Ge,
    /// Some value is greater.
    Gt,
    /// Some value is at most the given one.
    Le,
    /// Some value is less.
    Lt,
}

/// One condition on a chunk field: `path`, `title`, or a metadata key (whose list values match
/// on any element). Numbers compare as numbers, everything else as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgCondition {
    /// Field.
    pub key: String,
    /// Comparison.
    pub op: PgOp,
    /// Values (any of them, for `Eq` and `Ne`; one for the others).
    pub values: Vec<String>,
}

/// Which chunks a search may return.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PgFilter {
    /// The caller's labels: a chunk is returned only when every label it requires is held.
    pub held_labels: Vec<String>,
    /// All must hold.
    pub conditions: Vec<PgCondition>,
    /// POSIX regular expressions on the path, any of which must match (none: any path).
    pub path_patterns: Vec<String>,
}

/// Parameters of a statement, numbered in push order.
#[derive(Default)]
pub(crate) struct Params(Vec<Box<dyn ToSql + Sync>>);

impl Params {
    /// Adds a parameter and returns its placeholder (`$n`).
    pub(crate) fn push(&mut self, value: impl ToSql + Sync + 'static) -> String {
        self.0.push(Box::new(value));
        format!("${}", self.0.len())
    }

    pub(crate) fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.0
            .iter()
            .map(|b| b.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }
}

impl PgFilter {
    /// The SQL condition on table alias `c`, with its parameters pushed to `params`.
    pub(crate) fn sql(&self, params: &mut Params) -> String {
        let mut parts = vec![format!(
            "c.labels <@ {}::text[]",
            params.push(self.held_labels.clone())
        )];
        if !self.path_patterns.is_empty() {
            let any: Vec<String> = self
                .path_patterns
                .iter()
                .map(|p| format!("c.path ~ {}", params.push(p.clone())))
                .collect();
            parts.push(format!("({})", any.join(" OR ")));
        }
        for condition in &self.conditions {
            let values = match condition.key.as_str() {
                "path" => "ARRAY[c.path]".to_string(),
                "title" => "ARRAY[c.title]".to_string(),
                key => format!(
                    "rag_index.scalars(c.metadata -> {})",
                    params.push(key.to_string())
                ),
            };
            let wanted = params.push(condition.values.clone());
            parts.push(match condition.op {
                PgOp::Eq => format!("({values} && {wanted}::text[])"),
                PgOp::Ne => format!("NOT ({values} && {wanted}::text[])"),
                op => {
                    let test = match op {
                        PgOp::Ge => ">= 0",
                        PgOp::Gt => "> 0",
                        PgOp::Le => "<= 0",
                        _ => "< 0",
                    };
                    format!(
                        "EXISTS (SELECT 1 FROM unnest({values}) AS v \
                         WHERE rag_index.compare(v, ({wanted}::text[])[1]) {test})"
                    )
                }
            });
        }
        parts.join(" AND ")
    }
}
