//! The checked-in schema and the doc's table of tags are what the types generate today.

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{path}")).unwrap_or_default()
}

#[test]
fn docs_wire_format_schema_json_is_what_the_types_generate() {
    assert!(
        duetime_wire_schema::schema_text() == read("docs/wire-format.schema.json"),
        "docs/wire-format.schema.json is out of date: run \
         `cargo run -q -p duetime-wire-schema > docs/wire-format.schema.json`"
    );
}

#[test]
fn the_docs_table_of_tags_is_what_the_types_generate() {
    let doc = read("docs/wire-format.md");
    let table = doc
        .split_once("<!-- tags: begin -->\n")
        .and_then(|(_, rest)| rest.split_once("<!-- tags: end -->"))
        .map(|(table, _)| table.to_string());
    assert_eq!(
        table.as_deref(),
        Some(duetime_wire_schema::tag_table().as_str()),
        "docs/wire-format.md's table of tags is out of date: put \
         `cargo run -q -p duetime-wire-schema -- --tags` between its markers"
    );
}

#[test]
fn every_enum_of_the_format_has_its_tags_in_the_table() {
    let table = duetime_wire_schema::tag_table();
    for (name, tag) in [
        ("Event", "`tick`"),
        ("Effect", "`start`"),
        ("Outcome", "`timed_out`"),
        ("Schedule", "`every`"),
        ("Request", "`next_wake_for`"),
        ("ErrorKind", "`inconsistent_state`"),
        ("Status", "`no_run`"),
    ] {
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")));
        assert!(
            row.is_some_and(|r| r.contains(tag)),
            "{name} lacks {tag}:\n{table}"
        );
    }
}
