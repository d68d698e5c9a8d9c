//! The `xlat` command-line tool.
fn main() {}
