//! Replays fuzz inputs without libFuzzer, printing what each decodes to first:
//! `cargo run --example replay -- <target> FILE...` (from fuzz/).

fn main() {
    let mut args = std::env::args().skip(1);
    let target = args.next().expect("usage: replay <target> FILE...");
    for path in args {
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        println!(
            "== {path}\n{}",
            duetime_fuzz::targets::describe(&target, &data)
        );
        duetime_fuzz::targets::run(&target, &data);
    }
}
