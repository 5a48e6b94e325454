//! Technical tokens are found whole and by their parts, and the exact token ranks first.

mod common;

use common::{chunk_id, index_docs, points};
use rag_lexical::LexicalIndex;

/// A small realistic corpus: each doc is the best answer to one case, with near-misses beside it.
const DOCS: &[(u64, &str, &str)] = &[
    (
        1,
        "routing/entrypoints.md",
        "EntryPoints > HTTP/2\nUse `maxConcurrentStreams` to limit the number of concurrent streams per connection.",
    ),
    (
        2,
        "routing/entrypoints.md",
        "EntryPoints > Limits\nThe max number of streams is not the same as the max body size.",
    ),
    (
        3,
        "reference/cli.md",
        "CLI > EntryPoints\n`--entrypoints.web.address=:80` sets the address the web entry point listens on.",
    ),
    (
        4,
        "reference/static.md",
        "Static > Web\nThe web UI address is printed at startup; entrypoints are listed there.",
    ),
    (
        5,
        "middlewares/headers.md",
        "Headers > Proxy\nTraefik sets `X-Forwarded-For` with the client address before forwarding the request.",
    ),
    (
        6,
        "middlewares/forward.md",
        "ForwardAuth > Address\nThe request is forwarded to the auth server; X is not a header.",
    ),
    (
        7,
        "providers/docker.md",
        "Docker > Labels\nDefine `traefik.http.routers.r1.rule=Host(`example.com`)` on the container.",
    ),
    (
        8,
        "routing/routers/index.md",
        "Routing > Routers > Rule\nA router has a rule; traefik evaluates http routers in order of priority.",
    ),
    (
        9,
        "plugins/naming.md",
        "Plugins > Naming\nConfiguration keys such as `snake_case_name` are accepted as written.",
    ),
    (
        10,
        "plugins/style.md",
        "Plugins > Style\nThe name of a case is written in snake style.",
    ),
    (
        11,
        "middlewares/errors.md",
        "Errors > Status\nWhen the service is down, Traefik answers HTTP 503 Service Unavailable.",
    ),
    (
        12,
        "middlewares/retry.md",
        "Retry > Codes\nHTTP 502 and 504 are retried; error pages list codes such as 404.",
    ),
];

fn corpus() -> (tempfile::TempDir, LexicalIndex) {
    let dir = tempfile::tempdir().unwrap();
    let index = LexicalIndex::open_or_create(&dir.path().join("lexical")).unwrap();
    index_docs(&index, DOCS, 1);
    (dir, index)
}

#[test]
fn camel_case_whole_and_parts() {
    let (_dir, index) = corpus();
    assert_eq!(points(&index, "maxConcurrentStreams", 3)[0], 1);
    // Lowercased as a user may type it, and by its parts alone.
    assert_eq!(points(&index, "maxconcurrentstreams", 3)[0], 1);
    assert_eq!(points(&index, "concurrent", 3), [1]);
    // The exact token outranks a doc that only has `max` and `streams` (twice `max`, even).
    let hits = index.search("maxConcurrentStreams", 3, None).unwrap();
    assert_eq!(hits[0].point, 1);
    assert_eq!(hits[1].point, 2);
    assert!(hits[0].score > hits[1].score * 1.5, "{hits:?}");
}

#[test]
fn dotted_and_dashed_cli_flag() {
    let (_dir, index) = corpus();
    assert_eq!(points(&index, "--entrypoints.web.address", 3)[0], 3);
    assert_eq!(points(&index, "entrypoints.web.address", 3)[0], 3);
    // Parts match too: both the flag and the prose about the web address.
    let parts = points(&index, "web address", 5);
    assert!(parts.contains(&3) && parts.contains(&4), "{parts:?}");
}

#[test]
fn dashed_header_name() {
    let (_dir, index) = corpus();
    assert_eq!(points(&index, "X-Forwarded-For", 3)[0], 5);
    assert_eq!(points(&index, "x-forwarded-for header", 3)[0], 5);
    assert!(
        points(&index, "forwarded", 5).contains(&6),
        "a part (stemmed) matches prose"
    );
}

#[test]
fn docker_label_key() {
    let (_dir, index) = corpus();
    assert_eq!(points(&index, "traefik.http.routers.r1.rule", 3)[0], 7);
    // Prose about routers still finds the doc on routers first, and the label by its parts.
    assert_eq!(points(&index, "router rule", 3)[0], 8);
    assert!(points(&index, "r1", 3).contains(&7));
}

#[test]
fn snake_case_identifier() {
    let (_dir, index) = corpus();
    assert_eq!(points(&index, "snake_case_name", 3)[0], 9);
    assert!(points(&index, "snake case", 3).contains(&10));
}

#[test]
fn status_code_numbers_are_kept() {
    let (_dir, index) = corpus();
    assert_eq!(points(&index, "HTTP 503", 3)[0], 11);
    assert_eq!(points(&index, "503", 3), [11]);
    assert_eq!(points(&index, "504", 3), [12]);
}

#[test]
fn path_words_match() {
    let (_dir, index) = corpus();
    // `docker` is only in doc 7's path and heading; `naming` only in doc 9's.
    assert_eq!(points(&index, "providers docker", 3)[0], 7);
    assert_eq!(points(&index, "naming.md", 3)[0], 9);
}

#[test]
fn any_user_text_is_a_query() {
    let (_dir, index) = corpus();
    for query in [
        "foo:bar", "\"", "(", ")", "a AND", "-", "*", "title:(x", "", "   ", "~^\\",
    ] {
        index.search(query, 5, None).unwrap();
    }
    assert!(index.search("", 5, None).unwrap().is_empty());
    assert!(index.search("web", 0, None).unwrap().is_empty());
    // Syntax characters are separators, not operators: `headers:forwarded` finds a header doc.
    assert!(!points(&index, "headers:forwarded", 3).is_empty());
}

#[test]
fn deleted_doc_words_return_nothing() {
    let (_dir, index) = corpus();
    assert_eq!(points(&index, "snake_case_name", 3)[0], 9);
    let mut batch = index.writer().unwrap();
    batch.delete(&chunk_id(9));
    batch.commit(2).unwrap();
    // `snake_case_name` (whole) and `accepted` were only in doc 9.
    assert!(
        index
            .search("snake_case_name accepted", 5, None)
            .unwrap()
            .iter()
            .all(|h| h.point != 9)
    );
    assert!(points(&index, "accepted", 5).is_empty());
    assert_eq!(index.point_of(&chunk_id(9)).unwrap(), None);
    assert_eq!(index.point_of(&chunk_id(10)).unwrap(), Some(10));
    assert_eq!(index.num_docs(), DOCS.len() as u64 - 1);
}

#[test]
fn hits_carry_chunk_ids() {
    let (_dir, index) = corpus();
    let hit = &index.search("X-Forwarded-For", 1, None).unwrap()[0];
    assert_eq!(
        (hit.point, hit.chunk_id.as_str()),
        (5, chunk_id(5).as_str())
    );
    let mut ids = index.chunk_ids().unwrap();
    ids.sort();
    let expected: Vec<(String, u64)> = DOCS.iter().map(|d| (chunk_id(d.0), d.0)).collect();
    assert_eq!(ids, expected);
}
