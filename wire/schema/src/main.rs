//! Prints the wire format's JSON Schema, or with `--tags` the table of enum tags in
//! docs/wire-format.md. After a change to the types:
//! `cargo run -q -p duetime-wire-schema > docs/wire-format.schema.json` (the test in
//! `tests/` fails until then, and until the doc's table is the one `--tags` prints).

fn main() {
    if std::env::args().any(|a| a == "--tags") {
        print!("{}", duetime_wire_schema::tag_table());
    } else {
        print!("{}", duetime_wire_schema::schema_text());
    }
}
