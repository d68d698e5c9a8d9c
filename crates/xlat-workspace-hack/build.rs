//! Empty: cargo only takes a package's build dependencies into account when it has a build
//! script, and the feature unification covers those too.
fn main() {}
