//! The query side on real files with the real model: permission labels and filters never leak
//! (a seeded random search over modes, k, expansions, budgets and label sets), filtered search
//! returns k hits when they exist, a label change takes effect in one sync without embedding,
//! dedup drops only copies, expansion never hands a chunk back twice, and a budget is never
//! exceeded.
//!
//! `RAG_RETRIEVAL_SEARCHES` (default 120) and `RAG_RETRIEVAL_SEED` set how many random searches
//! and which.

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use common::*;
use rag_index_core::{
    ACCESS_KEY, Access, Condition, Error, Expand, Hit, IndexConfig, IndexedChunk, PathGlob,
    RagIndex, SearchMode, SearchRequest, SyncOptions,
};

const LABELS: [&str; 3] = ["finance", "legal", "hr"];
const SECRET: &str =
    "The confidential supplier price for the Zorblax gateway is 4217 euros per node.";

fn open(index_dir: &Path) -> RagIndex {
    RagIndex::open(index_dir, embedder(), IndexConfig::default()).unwrap()
}

/// A synced index of these Traefik pages: (its temp dir, the docs folder, the index).
fn indexed_pages(pages: &[&str]) -> (tempfile::TempDir, std::path::PathBuf, RagIndex) {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    copy_corpus_files(&docs, pages);
    let index = open(&work.path().join("index"));
    sync_in_process(&index, &docs);
    (work, docs, index)
}

/// A folder of real Traefik pages in three subfolders, labelled by rules and front matter.
fn labelled_folder(root: &Path) -> Vec<String> {
    let mut pages: Vec<String> = [
        "getting-started/faq.md",
        "reference/install-configuration/observability/healthcheck.md",
        "reference/routing-configuration/http/middlewares/ratelimit.md",
        "reference/routing-configuration/http/middlewares/basicauth.md",
        "reference/routing-configuration/http/middlewares/headers.md",
        "reference/routing-configuration/http/middlewares/retry.md",
        "reference/routing-configuration/http/middlewares/circuitbreaker.md",
        "reference/install-configuration/entrypoints.md",
        "reference/routing-configuration/http/load-balancing/service.md",
    ]
    .into_iter()
    .filter(|p| corpus_dir().join(p).exists())
    .map(String::from)
    .collect();
    assert!(pages.len() >= 6, "the corpus has the pages this test reads");
    let refs: Vec<&str> = pages.iter().map(String::as_str).collect();
    copy_corpus_files(root, &refs);
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(
        root.join("secret/pricing.md"),
        format!("---\ntitle: Supplier pricing\naccess: [finance]\ntags: [pricing, eu]\n---\n# Pricing\n\n{SECRET}\n"),
    )
    .unwrap();
    pages.push("secret/pricing.md".into());
    std::fs::write(
        root.join(".ragaccess"),
        "# rules for the test\nreference/routing-configuration/http/middlewares/** legal\n\
         **/healthcheck.md hr,finance\n",
    )
    .unwrap();
    pages
}

fn required(chunk: &IndexedChunk) -> Vec<String> {
    match chunk.metadata.get(ACCESS_KEY) {
        None => Vec::new(),
        Some(v) => v
            .as_array()
            .expect("labels are stored as a list")
            .iter()
            .map(|l| l.as_str().unwrap().to_string())
            .collect(),
    }
}

fn chunks_of(hit: &Hit) -> Vec<&IndexedChunk> {
    match hit.passage.is_empty() {
        true => vec![&hit.chunk],
        false => hit.passage.iter().map(|p| &p.chunk).collect(),
    }
}

#[test]
fn labels_and_filters_never_leak() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    labelled_folder(&docs);
    let index = open(&work.path().join("index"));
    sync_in_process(&index, &docs);
    let all = index.dump().unwrap();
    assert!(all.iter().any(|c| required(c) == ["legal"]));
    assert!(all.iter().any(|c| required(c) == ["finance", "hr"]));
    assert!(all.iter().any(|c| required(c) == ["finance"]));

    let questions: Vec<String> = questions()
        .iter()
        .map(|q| q["question"].as_str().unwrap().to_string())
        .chain([SECRET.to_string(), "supplier price Zorblax".into()])
        .collect();
    let globs = [
        "reference/**",
        "secret/*",
        "getting-started/*.md",
        "**/ratelimit.md",
    ];
    let searches = env_number("RAG_RETRIEVAL_SEARCHES", 120);
    let mut rng = fastrand::Rng::with_seed(env_number("RAG_RETRIEVAL_SEED", 0x1abe1));
    let mut full_counts_checked = 0;
    for _ in 0..searches {
        let held: Vec<&str> = LABELS.iter().copied().filter(|_| rng.bool()).collect();
        let access = Access::labels(held.iter().copied()).unwrap();
        let mode = [SearchMode::Dense, SearchMode::Lexical, SearchMode::Hybrid][rng.usize(..3)];
        let k = [1, 3, 10, 60][rng.usize(..4)];
        let expand = [Expand::None, Expand::Neighbors, Expand::Section][rng.usize(..3)];
        let mut request =
            SearchRequest::new(&questions[rng.usize(..questions.len())], access.clone())
                .k(k)
                .mode(mode)
                .expand(expand)
                .dedup(rng.bool())
                .exact(rng.bool());
        let budget = [None, Some(200), Some(1024)][rng.usize(..3)];
        if let Some(b) = budget {
            request = request.budget(b);
        }
        let glob = rng.bool().then(|| globs[rng.usize(..globs.len())]);
        if let Some(g) = glob {
            request = request.path(PathGlob::new(g).unwrap());
        }
        let tag = rng.u8(..4) == 0;
        // Only the finance page has tags: to anyone else the key is unknown, as a typo is, and
        // the search then runs without the filter.
        let tag = tag && {
            let filtered = request
                .clone()
                .filter("tags=pricing,other".parse::<Condition>().unwrap());
            let finance = held.contains(&"finance");
            match index.search_with(&filtered) {
                Err(Error::InvalidRequest { reason }) if !finance => {
                    assert!(reason.contains("\"tags\""), "{reason}");
                }
                Err(e) => panic!("{held:?}: {e}"),
                Ok(_) if finance => request = filtered,
                Ok(hits) => panic!("{held:?} may filter on tags: {} hits", hits.len()),
            }
            finance
        };
        let hits = index.search_with(&request).unwrap();
        let visible = |c: &IndexedChunk| access.may_see(&required(c));
        let passes = |c: &IndexedChunk| {
            glob.is_none_or(|g| PathGlob::new(g).unwrap().matches_path(&c.path))
                && (!tag
                    || c.metadata
                        .get("tags")
                        .is_some_and(|t| t.to_string().contains("pricing")))
        };
        let mut seen = HashSet::new();
        let mut tokens = 0;
        for hit in &hits {
            assert!(
                visible(&hit.chunk) && passes(&hit.chunk),
                "{request:?} leaked {:?}",
                hit.chunk.path
            );
            for c in chunks_of(hit) {
                assert!(
                    visible(c),
                    "{request:?} leaked context {} {:?}",
                    c.path,
                    required(c)
                );
                assert!(
                    seen.insert(c.chunk_id.clone()),
                    "chunk {} handed back twice",
                    c.chunk_id
                );
            }
            tokens += hit.result_tokens as usize;
        }
        assert!(hits.len() <= k);
        if let Some(b) = budget {
            assert!(
                tokens <= b,
                "{tokens} tokens handed back for a budget of {b}"
            );
        }
        // Dense search ranks every allowed chunk: with nothing that drops hits it must return
        // k of them whenever k exist, however few pass the filter.
        if mode == SearchMode::Dense
            && budget.is_none()
            && expand == Expand::None
            && !request.dedups()
        {
            let matching = all.iter().filter(|c| visible(c) && passes(c)).count();
            assert_eq!(hits.len(), k.min(matching), "{request:?}");
            full_counts_checked += 1;
        }
    }
    assert!(full_counts_checked > 0 || searches < 40);

    // Unknown keys are an error, not zero hits; the secret is only for finance.
    let bad = SearchRequest::new("price", Access::public()).filter("colour=red".parse().unwrap());
    let err = index.search_with(&bad).unwrap_err().to_string();
    assert!(err.contains("unknown filter key"), "{err}");
    let public = index.search(SECRET, &Access::public(), 60).unwrap();
    assert!(public.iter().all(|h| !h.chunk.text.contains("Zorblax")));
    let finance = index
        .search(SECRET, &Access::labels(["finance"]).unwrap(), 1)
        .unwrap();
    assert!(finance[0].chunk.text.contains("Zorblax"));
    let by_id = &finance[0].chunk.chunk_id;
    assert!(index.chunk(by_id, &Access::public()).unwrap().is_none());
    assert!(
        index
            .chunk(by_id, &Access::labels(["finance"]).unwrap())
            .unwrap()
            .is_some()
    );
}

/// Ranked `(chunk ID, score)` of `query` for a caller holding `labels`.
fn ranking(index: &RagIndex, query: &str, labels: &[&str], mode: SearchMode) -> Vec<(String, f32)> {
    let request = SearchRequest::new(query, Access::labels(labels.iter().copied()).unwrap())
        .k(10)
        .mode(mode);
    index
        .search_with(&request)
        .unwrap()
        .into_iter()
        .map(|hit| (hit.chunk.chunk_id, hit.score))
        .collect()
}

#[test]
fn chunks_hidden_from_a_caller_move_none_of_its_scores() {
    // Two folders alike but for the words of the finance-only page: what a caller without the
    // label is shown must be the same in both, or its scores say which words hidden pages hold.
    let decoy = "The confidential lunch menu for the Quibble cafeteria is posted every Monday.";
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut indexes = Vec::new();
    for (work, secret) in [(&a, SECRET), (&b, decoy)] {
        let docs = work.path().join("docs");
        labelled_folder(&docs);
        let page = std::fs::read_to_string(docs.join("secret/pricing.md")).unwrap();
        std::fs::write(docs.join("secret/pricing.md"), page.replace(SECRET, secret)).unwrap();
        let index = open(&work.path().join("index"));
        sync_in_process(&index, &docs);
        indexes.push(index);
    }
    let probes = [
        "supplier price per node",
        "gateway price",
        "confidential rate limit price per node",
        "retry attempts gateway",
    ];
    for query in probes {
        for labels in [&[][..], &["legal"][..], &["hr", "legal"][..]] {
            for mode in [SearchMode::Lexical, SearchMode::Hybrid] {
                let seen = ranking(&indexes[0], query, labels, mode);
                assert!(!seen.is_empty(), "{query:?} {labels:?}");
                assert_eq!(
                    seen,
                    ranking(&indexes[1], query, labels, mode),
                    "{query:?} as {labels:?} ({mode:?}): a hidden page moved what it sees"
                );
            }
        }
    }
    // The finance label sees the page, and there the words make the difference.
    let finance = |index: &RagIndex| {
        ranking(
            index,
            "supplier price per node",
            &["finance"],
            SearchMode::Lexical,
        )
    };
    assert_ne!(finance(&indexes[0]), finance(&indexes[1]));
}

#[test]
fn a_label_change_applies_in_one_sync_without_embedding() {
    let (_work, docs, index) = indexed_pages(&[
        "getting-started/faq.md",
        "reference/install-configuration/entrypoints.md",
    ]);
    let query = "In what situation does Traefik send back a Bad Gateway (502) status?";
    let on_faq = |hits: &[Hit]| {
        hits.iter()
            .filter(|h| h.chunk.path == "getting-started/faq.md")
            .count()
    };
    assert!(on_faq(&index.search(query, &Access::public(), 5).unwrap()) > 0);

    std::fs::write(docs.join(".ragaccess"), "getting-started/** legal\n").unwrap();
    let report = sync_in_process(&index, &docs);
    assert_eq!(
        report.chunks.embedded, 0,
        "labels change without re-embedding"
    );
    // The same long-lived index: the next search already sees the new labels.
    assert_eq!(
        on_faq(&index.search(query, &Access::public(), 5).unwrap()),
        0
    );
    let legal = Access::labels(["legal"]).unwrap();
    assert!(on_faq(&index.search(query, &legal, 5).unwrap()) > 0);
    // A second sync has nothing to do; removing the rule makes the page public again.
    assert_eq!(sync_in_process(&index, &docs).files.modified, 0);
    std::fs::remove_file(docs.join(".ragaccess")).unwrap();
    assert_eq!(sync_in_process(&index, &docs).chunks.embedded, 0);
    assert!(on_faq(&index.search(query, &Access::public(), 5).unwrap()) > 0);

    // Rules that cannot be read stop the sync rather than expose what they protect.
    std::fs::write(docs.join(".ragaccess"), "getting-started/**\n").unwrap();
    let err = index
        .sync(
            &docs,
            &SyncOptions::default(),
            &|_| {},
            &AtomicBool::new(false),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(".ragaccess") && err.contains("line 1"),
        "{err}"
    );
    // Front matter that names `access` but cannot be read hides the document.
    std::fs::write(
        docs.join("broken.md"),
        "---\naccess: [finance\ntitle: x\n---\n# Broken\n\nThe quokka protocol rotates keys hourly.\n",
    )
    .unwrap();
    std::fs::remove_file(docs.join(".ragaccess")).unwrap();
    let report = sync_in_process(&index, &docs);
    assert!(
        report.warnings.iter().any(|w| w.path == "broken.md"),
        "{:?}",
        report.warnings
    );
    let hits = index
        .search(
            "quokka protocol rotates keys",
            &Access::labels(LABELS).unwrap(),
            10,
        )
        .unwrap();
    assert!(hits.iter().all(|h| h.chunk.path != "broken.md"));
}

#[test]
fn dedup_expansion_and_budget_shape_the_results() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    let page = "reference/routing-configuration/http/middlewares/ratelimit.md";
    copy_corpus_files(&docs, &[page, "getting-started/faq.md"]);
    std::fs::create_dir_all(docs.join("copy")).unwrap();
    std::fs::copy(docs.join(page), docs.join("copy/ratelimit.md")).unwrap();
    let index = open(&work.path().join("index"));
    sync_in_process(&index, &docs);
    let query = "How does the rate limit middleware count requests over a period?";
    let plain = SearchRequest::new(query, Access::public())
        .k(6)
        .mode(SearchMode::Dense);
    let with_copies = index.search_with(&plain.clone().dedup(false)).unwrap();
    let deduped = index.search_with(&plain.clone().dedup(true)).unwrap();
    let copies = |hits: &[Hit]| {
        let bodies: Vec<&str> = hits.iter().map(|h| h.chunk.body()).collect();
        bodies.len() - bodies.iter().collect::<HashSet<_>>().len()
    };
    assert!(
        copies(&with_copies) > 0,
        "the copied page comes back twice without dedup"
    );
    assert_eq!(copies(&deduped), 0, "dedup keeps one of each copy");
    // Nothing distinct is dropped: every hit missing from the deduped list has a copy in it.
    for hit in &with_copies {
        let in_kept = deduped
            .iter()
            .any(|d| d.chunk.chunk_id == hit.chunk.chunk_id);
        assert!(
            in_kept
                || deduped
                    .iter()
                    .any(|d| rag_index_core::near_duplicates(d.chunk.body(), hit.chunk.body())),
            "dedup dropped a distinct chunk: {} {:?}\n{}\nkept: {:#?}",
            hit.chunk.path,
            hit.chunk.heading_path,
            hit.chunk.body(),
            deduped
                .iter()
                .map(|d| (&d.chunk.path, &d.chunk.heading_path, d.chunk.body()))
                .collect::<Vec<_>>()
        );
    }

    // A section comes back once, in document order, with its hits marked and within budget.
    for budget in [300, 1024] {
        let request = plain.clone().expand(Expand::Section).budget(budget);
        let results = index.search_with(&request).unwrap();
        assert!(!results.is_empty());
        let mut total = 0;
        let mut seen = HashSet::new();
        for r in &results {
            assert!(!r.passage.is_empty());
            assert!(
                r.passage
                    .iter()
                    .any(|p| p.is_hit && p.chunk.chunk_id == r.chunk.chunk_id)
            );
            let ordinals: Vec<u32> = r.passage.iter().map(|p| p.chunk.ordinal).collect();
            assert!(
                ordinals.windows(2).all(|w| w[0] < w[1]),
                "document order: {ordinals:?}"
            );
            assert!(r.passage.iter().all(|p| p.chunk.path == r.chunk.path));
            assert!(
                r.passage
                    .iter()
                    .all(|p| p.chunk.heading_path.starts_with(&r.chunk.heading_path))
            );
            for p in &r.passage {
                assert!(seen.insert(p.chunk.chunk_id.clone()));
            }
            total += r.result_tokens as usize;
        }
        assert!(total <= budget, "{total} > {budget}");
    }
    let neighbours = index
        .search_with(&plain.clone().expand(Expand::Neighbors))
        .unwrap();
    assert!(
        neighbours.iter().any(|r| r.passage.len() > 1),
        "some hit has a neighbour"
    );
}

#[test]
fn an_expanded_passage_hands_back_a_carried_paragraph_once() {
    // Long real pages: the chunker carries a section's last paragraph over a cut, so
    // neighbouring chunks repeat it. A passage joining them must not say it twice.
    let (_work, _docs, index) = indexed_pages(&[
        "migrate/v3.md",
        "reference/install-configuration/entrypoints.md",
    ]);
    let mut chunks = index.dump().unwrap();
    chunks.sort_by(|a, b| (&a.path, a.ordinal).cmp(&(&b.path, b.ordinal)));
    let overlapping: Vec<(&IndexedChunk, &IndexedChunk)> = chunks
        .windows(2)
        .filter(|w| w[0].path == w[1].path && w[0].byte_range.end > w[1].byte_range.start)
        .map(|w| (&w[0], &w[1]))
        .collect();
    assert!(
        !overlapping.is_empty(),
        "these pages have chunks that repeat the paragraph before their cut"
    );
    let mut checked = 0;
    for (earlier, later) in overlapping.iter().take(6) {
        let request = SearchRequest::new(later.body(), Access::public())
            .k(5)
            .mode(SearchMode::Dense)
            .expand(Expand::Neighbors);
        for hit in index.search_with(&request).unwrap() {
            let ids: Vec<&str> = hit
                .passage
                .iter()
                .map(|p| p.chunk.chunk_id.as_str())
                .collect();
            let Some(at) = ids.iter().position(|id| *id == later.chunk_id) else {
                continue;
            };
            if at == 0 || ids[at - 1] != earlier.chunk_id {
                continue;
            }
            let part = &hit.passage[at];
            let overlap = (earlier.byte_range.end - later.byte_range.start) as usize;
            assert_eq!(part.repeated, overlap, "{} #{}", later.path, later.ordinal);
            let repeated = later.body()[..overlap].trim();
            let text = hit.text();
            assert_eq!(
                text.matches(repeated).count(),
                earlier.text.matches(repeated).count(),
                "the repeated text appears only as often as in the earlier chunk:\n{text}"
            );
            assert!(
                text.contains(part.new_body()),
                "the rest of the chunk is kept"
            );
            assert!(text.ends_with(hit.passage.last().unwrap().new_body()));
            checked += 1;
        }
    }
    assert!(checked > 0, "some passage joined two overlapping chunks");
    // Parts that do not overlap are handed back whole.
    let request = SearchRequest::new("entry point address and port", Access::public())
        .k(5)
        .expand(Expand::Section);
    for hit in index.search_with(&request).unwrap() {
        for pair in hit.passage.windows(2) {
            if pair[0].chunk.byte_range.end <= pair[1].chunk.byte_range.start {
                assert_eq!(pair[1].repeated, 0);
                assert_eq!(pair[1].new_body(), pair[1].chunk.body());
            }
        }
    }
}

#[test]
fn the_cli_explains_filters_and_writes_failures() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    labelled_folder(&docs);
    let index = work.path().join("index");
    let index_arg = index.to_str().unwrap();
    common::sync(&docs, &index, 0);
    let explained = run_expect(
        &[
            "query",
            "supplier price for the Zorblax gateway",
            "--index",
            index_arg,
            "--as",
            "finance",
            "-k",
            "2",
            "--explain",
        ],
        0,
    );
    assert!(
        explained.contains(SECRET),
        "the full chunk text is shown: {explained}"
    );
    assert!(explained.contains("┌") && explained.contains("└") && explained.contains("chunk "));
    assert!(explained.contains("dense #") && explained.contains("lexical #"));
    let public = run_expect(
        &[
            "query",
            "supplier price for the Zorblax gateway",
            "--index",
            index_arg,
            "-k",
            "50",
            "--json",
        ],
        0,
    );
    let public = json_lines(&public);
    let public_hits = public[0]["hits"].as_array().unwrap();
    assert!(!public_hits.is_empty());
    assert!(
        public_hits.iter().all(|h| h["path"] != "secret/pricing.md"),
        "without --as only public documents are searched"
    );
    let stderr_of = |args: &[&str]| {
        let out = run(&[&["query", "x", "--index", index_arg][..], args].concat());
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8(out.stderr).unwrap()
    };
    let typo = stderr_of(&["--filter", "colour=red"]);
    assert!(typo.contains("unknown filter key"), "{typo}");
    // `tags` is a key of the finance page alone: to anyone else it is as unknown as a typo,
    // in the same words, so the error does not reveal that such a page exists.
    assert!(!typo.contains("tags"), "{typo}");
    assert_eq!(
        stderr_of(&["--filter", "tags=eu"]),
        typo.replace("\"colour\"", "\"tags\"")
    );
    assert!(stderr_of(&["--as", "finance", "--filter", "colour=red"]).contains("\"tags\""));
    let tagged = json_lines(&run_expect(
        &[
            "query", "price", "--index", index_arg, "--as", "finance", "--filter", "tags=eu",
            "--json",
        ],
        0,
    ));
    let hits = tagged[0]["hits"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.iter().all(|h| h["path"] == "secret/pricing.md"));

    let failures = work.path().join("failures.jsonl");
    run_expect(
        &[
            "eval",
            questions_file().to_str().unwrap(),
            "--index",
            index_arg,
            "-k",
            "3",
            "--failures",
            failures.to_str().unwrap(),
        ],
        0,
    );
    let lines = json_lines(&std::fs::read_to_string(&failures).unwrap());
    assert!(
        !lines.is_empty(),
        "most questions have no source in this small folder"
    );
    for failure in &lines {
        let evidence = failure["evidence"].as_array().unwrap();
        for r in failure["retrieved"].as_array().unwrap() {
            let missing = r["missing"].as_array().unwrap();
            assert!(!missing.is_empty() && missing.len() <= evidence.len());
            let text = collapse(r["text"].as_str().unwrap());
            for m in missing {
                assert!(!text.contains(&collapse(m.as_str().unwrap())));
            }
        }
    }
    // A file rag-index did not write is never overwritten.
    let mine = work.path().join("notes.txt");
    std::fs::write(&mine, "my notes\n").unwrap();
    let out = run(&[
        "eval",
        questions_file().to_str().unwrap(),
        "--index",
        index_arg,
        "--failures",
        mine.to_str().unwrap(),
    ]);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "my notes\n");
}
