//! `duetime`: the reference host's command line.

fn main() {}
