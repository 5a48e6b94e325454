//! Config files: the workspace's own TOML, a handmade YAML, and hostile YAML.

use rag_formats::{ConfigKind, Format, FormatError, convert};

#[test]
fn workspace_manifests_have_a_section_per_table() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    for rel in ["Cargo.toml", "crates/formats/Cargo.toml", "rustfmt.toml"] {
        let src = std::fs::read_to_string(format!("{root}/{rel}")).unwrap();
        let c = convert(Format::Config(ConfigKind::Toml), src.as_bytes()).unwrap();
        let table: toml::Table = src.parse().unwrap();
        for key in table.keys() {
            assert!(c.markdown.contains(&format!("# {key}\n")), "{rel}: {key}");
        }
        assert_eq!(c.metadata["format"], "toml");
    }
}

const YAML: &str = "\
# Service settings
name: web
replicas: 3
env:
  - name: PORT
    value: \"8080\"
  - name: MODE
    value: prod
";

#[test]
fn yaml_snapshot_and_exact_spans() {
    let c = convert(Format::Config(ConfigKind::Yaml), YAML.as_bytes()).unwrap();
    insta::assert_snapshot!(c.markdown);
    for s in &c.spans {
        let src = s.source.clone().unwrap();
        assert_eq!(&c.markdown[s.markdown.clone()], &YAML[src]);
    }
}

#[test]
fn yaml_alias_bomb_and_deep_nesting_are_too_large() {
    let mut bomb = String::from("a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n");
    for (p, n) in "abcdefgh".chars().zip("bcdefghi".chars()) {
        bomb.push_str(&format!(
            "{n}: &{n} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
        ));
    }
    assert!(bomb.len() < 460, "{}", bomb.len());
    let e = convert(Format::Config(ConfigKind::Yaml), bomb.as_bytes()).unwrap_err();
    assert!(matches!(e, FormatError::TooLarge { .. }), "{e}");
    let deep = "[".repeat(10_000);
    let e = convert(Format::Config(ConfigKind::Yaml), deep.as_bytes()).unwrap_err();
    assert!(
        matches!(
            e,
            FormatError::TooLarge { .. } | FormatError::Invalid { .. }
        ),
        "{e}"
    );
    let e = convert(Format::Config(ConfigKind::Json), deep.as_bytes()).unwrap_err();
    assert!(matches!(e, FormatError::Invalid { .. }), "{e}");
}

#[test]
fn scalar_documents_are_one_block() {
    let c = convert(Format::Config(ConfigKind::Json), b"[1, 2]").unwrap();
    assert!(c.markdown.contains("# [0]"));
    let c = convert(Format::Config(ConfigKind::Yaml), b"just text\n").unwrap();
    assert_eq!(c.markdown, "```yaml\njust text\n```\n");
}
