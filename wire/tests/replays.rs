//! The kept conformance replays (`tests/wire/`) answered byte for byte by `Core`, here in
//! the wire crate's own tests, so a change to decoding that would change an answer fails
//! where it is made (the host's conformance test replays 200 worlds; the Node and Python
//! packages replay these four). Each in wire version 1 (`seed-N.*`) and version 2
//! (`seed-N.v2.*`), on one core each.

use duetime_wire::Core;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/wire");

#[test]
fn the_kept_replays_are_answered_as_recorded() {
    let mut seen = 0;
    for (seed, version) in [0, 1, 3, 5].into_iter().flat_map(|s| [(s, ""), (s, "v2.")]) {
        let read = |kind: &str| {
            std::fs::read_to_string(format!("{DIR}/seed-{seed}.{version}{kind}.jsonl"))
        };
        let (requests, answers) = (read("requests").unwrap(), read("answers").unwrap());
        let mut core = Core::default();
        for (i, (request, answer)) in requests.lines().zip(answers.lines()).enumerate() {
            assert_eq!(
                core.handle_line(request),
                answer,
                "seed {seed} {version}, line {}",
                i + 1
            );
            seen += 1;
        }
        assert_eq!(requests.lines().count(), answers.lines().count());
    }
    assert!(seen > 2000, "{seen} lines");
}
