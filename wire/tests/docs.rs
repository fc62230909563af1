//! docs/wire-format.md states the versions this crate speaks (issue 48: it said state
//! format 7 while `{"op":"version"}` answered 8). Every place the doc names a version is
//! read here and held to the constants, so the next format bump fails this test instead
//! of leaving the doc behind.

const DOC: &str = include_str!("../../docs/wire-format.md");

/// The integer right after the first `marker` at or after `from`, if any.
fn number_after(text: &str, marker: &str) -> Option<u64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Every integer the doc writes after `marker`, in order.
fn all_after(marker: &str) -> Vec<u64> {
    DOC.match_indices(marker)
        .filter_map(|(i, _)| number_after(&DOC[i..], marker))
        .collect()
}

#[test]
fn the_docs_versions_are_the_ones_the_crate_answers() {
    assert_eq!(
        number_after(DOC, "**Wire version "),
        Some(u64::from(duetime_wire::WIRE_VERSION)),
        "docs/wire-format.md's wire version"
    );
    let state_format = u64::from(duetime::FORMAT_VERSION);
    assert_eq!(
        number_after(DOC, "**, state format "),
        Some(state_format),
        "docs/wire-format.md's state format (its first line of versions)"
    );
    let mentions = [
        all_after("\"format\":"),
        all_after("\"format\": "),
        all_after("(`format`, now "),
    ]
    .concat();
    assert!(
        mentions.len() >= 3,
        "the doc's examples moved: {mentions:?}"
    );
    assert!(
        mentions.iter().all(|&f| f == state_format),
        "docs/wire-format.md names state formats {mentions:?}; this core writes {state_format}"
    );
}
