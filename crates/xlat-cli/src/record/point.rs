//! Where a recording starts or stops: the N-th entry of a function of the recorded program
//! (`--start-at SYMBOL[:N]`, `--stop-at SYMBOL[:N]`), checked against the program's symbols
//! before it runs.

use anyhow::{anyhow, bail, Context, Result};
use object::{Object, ObjectSymbol};
use std::fmt;
use std::path::Path;

/// The `count`-th entry of the function named `name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// The function's name, as the program's symbols (demangled, for C++) give it.
    pub name: String,
    /// Which entry, from 1.
    pub count: u64,
}

impl Point {
    /// Parses `SYMBOL` or `SYMBOL:N` (N ≥ 1), as clap's value parser.
    pub fn parse(text: &str) -> Result<Point, String> {
        let (name, count) = match text.rsplit_once(':') {
            // `ns::f` (a C++ name) has no count; `f:2` has one.
            Some((name, n)) if !name.ends_with(':') && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                (name, n.parse::<u64>().map_err(|e| format!("{n}: {e}"))?)
            }
            _ => (text, 1),
        };
        if name.is_empty() {
            return Err("a function name is needed (SYMBOL or SYMBOL:N)".into());
        }
        if count == 0 {
            return Err(format!("{text}: entries count from 1"));
        }
        Ok(Point { name: name.to_string(), count })
    }

    /// The tool's options for this point as the start (`start`) or the stop.
    pub fn tool_args(&self, which: &str) -> [String; 2] {
        [format!("--xlat-{which}-at={}", self.name), format!("--xlat-{which}-count={}", self.count)]
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}:{}", self.name, self.count)
    }
}

/// Checks that `program` names a function `point.name` in its symbol table or its dynamic
/// symbols (a function it defines, or one it imports from a shared library); the error for
/// `option` says which it lacks.
pub fn check_symbol(program: &Path, point: &Point, option: &str) -> Result<()> {
    let data = std::fs::read(program).with_context(|| format!("reading {}", program.display()))?;
    let file = object::File::parse(&*data).map_err(|e| anyhow!("{}: not an ELF executable ({e})", program.display()))?;
    // A versioned symbol (`malloc@GLIBC_2.2.5`) names its function before the `@`.
    let named = |s: object::Symbol| s.name().is_ok_and(|n| n.split('@').next() == Some(&point.name));
    if file.symbols().any(named) || file.dynamic_symbols().any(named) {
        return Ok(());
    }
    let stripped = file.symbols().next().is_none();
    bail!(
        "{option} {}: {} has no function `{}` in its {}",
        point,
        program.display(),
        point.name,
        if stripped { "dynamic symbols (it is stripped: only functions it exports or imports can be named)" } else { "symbols" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_parse_with_and_without_a_count() {
        assert_eq!(Point::parse("run_bfs:2"), Ok(Point { name: "run_bfs".into(), count: 2 }));
        assert_eq!(Point::parse("main"), Ok(Point { name: "main".into(), count: 1 }));
        assert_eq!(Point::parse("ns::f"), Ok(Point { name: "ns::f".into(), count: 1 }));
        assert_eq!(Point::parse("ns::f:3"), Ok(Point { name: "ns::f".into(), count: 3 }));
        assert!(Point::parse("f:0").unwrap_err().contains("from 1"));
        assert!(Point::parse(":4").is_err());
        assert_eq!(Point::parse("f:4").unwrap().to_string(), "f:4");
    }

    /// The test binary itself has a symbol table: `main` is there, a made-up name is not.
    #[test]
    fn symbols_are_looked_up_in_the_program() {
        let me = std::env::current_exe().unwrap();
        assert!(check_symbol(&me, &Point::parse("main").unwrap(), "--start-at").is_ok());
        let e = check_symbol(&me, &Point::parse("no_such_function_here").unwrap(), "--start-at").unwrap_err().to_string();
        assert!(e.starts_with("--start-at no_such_function_here:1: ") && e.contains("has no function `no_such_function_here`"), "{e}");
    }
}
