//! The kept conformance replays (`tests/wire/`) answered byte for byte by `Core`, here in
//! the wire crate's own tests, so a change to decoding that would change an answer fails
//! where it is made (the host's conformance test replays 200 worlds; the Node and Python
//! packages replay these four).

use duetime_wire::Core;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/wire");

#[test]
fn the_kept_replays_are_answered_as_recorded() {
    let mut seen = 0;
    for seed in [0, 1, 3, 5] {
        let read = |kind: &str| std::fs::read_to_string(format!("{DIR}/seed-{seed}.{kind}.jsonl"));
        let (requests, answers) = (read("requests").unwrap(), read("answers").unwrap());
        let mut core = Core::default();
        for (i, (request, answer)) in requests.lines().zip(answers.lines()).enumerate() {
            assert_eq!(
                core.handle_line(request),
                answer,
                "seed {seed}, line {}",
                i + 1
            );
            seen += 1;
        }
        assert_eq!(requests.lines().count(), answers.lines().count());
    }
    assert!(seen > 1000, "{seen} lines");
}
