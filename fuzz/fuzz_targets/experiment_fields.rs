//! Experiment files, structure-aware: one of the project's experiments with arbitrary values
//! put at real field paths (the paths the experiment has, and every field name of the schema
//! under each of its tables), then validated. Where the text target (`experiment`) mostly
//! tests the TOML parser, this one reaches every field's checks with values of every type
//! and size. An error names what is wrong; a panic or a hang is a finding.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use toml::{Table, Value};

/// The experiments edited: the project's own.
const BASES: [&str; 8] = [
    include_str!("../../experiments/default.toml"),
    include_str!("../../experiments/emt-fig16.toml"),
    include_str!("../../experiments/emt-fig18.toml"),
    include_str!("../../experiments/emt-mosaic.toml"),
    include_str!("../../experiments/micro-fig3.toml"),
    include_str!("../../experiments/mosaic-fig6.toml"),
    include_str!("../../experiments/mosaic-table3.toml"),
    include_str!("../../experiments/mosaic-table4.toml"),
];

/// Every field name of the schema: the keys of the text target's dictionary (`"name = "`).
fn field_names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        include_str!("../experiment.dict")
            .lines()
            .filter_map(|line| line.strip_prefix('"')?.strip_suffix(" = \"").map(str::to_owned))
            .collect()
    })
}

/// An arbitrary value: numbers at the edges of their types and of units, strings with and
/// without units, nested arrays and tables.
fn value(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let edges = [0, 1, -1, 2, 3, 64, 4096, i64::MAX, i64::MIN, 1 << 32, 1 << 48, 1 << 62];
    let words = ["", "0", "1KiB", "4KiB", "2MiB", "1GiB", "1PiB", "16EiB", "-1MiB", "lru", "random", "fifo", "radix", "ecpt", "fpt", "map", "iceberg", "skylake-like", "nan", "1e400"];
    Ok(match u.int_in_range(0..=8)? {
        0 => Value::Integer(*u.choose(&edges)?),
        1 => Value::Integer(u.arbitrary()?),
        2 => Value::Float(*u.choose(&[0.0, -0.0, 0.5, 1.0, 1.5, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300, f64::MIN_POSITIVE])?),
        3 => Value::Float(u.arbitrary()?),
        4 => Value::Boolean(u.arbitrary()?),
        5 => Value::String((*u.choose(&words)?).to_owned()),
        6 => Value::String(u.arbitrary()?),
        7 if depth < 3 => Value::Array((0..u.int_in_range(0..=4)?).map(|_| value(u, depth + 1)).collect::<Result<_>>()?),
        _ if depth < 3 => {
            let mut table = Table::new();
            for _ in 0..u.int_in_range(0..=3)? {
                table.insert(u.choose(field_names())?.clone(), value(u, depth + 1)?);
            }
            Value::Table(table)
        }
        _ => Value::Integer(0),
    })
}

/// One edit of `doc`: a field of one of its tables (an existing key or any schema name) set
/// to an arbitrary value, or removed.
fn edit(u: &mut Unstructured, doc: &mut Value) -> Result<()> {
    let count = count_tables(doc);
    let target = u.int_in_range(0..=count.saturating_sub(1))?;
    let Some(table) = nth_table(doc, target) else { return Ok(()) };
    let existing: Vec<String> = table.keys().cloned().collect();
    let key = if !existing.is_empty() && u.arbitrary()? { u.choose(&existing)?.clone() } else { u.choose(field_names())?.clone() };
    if u.ratio(1, 8)? {
        table.remove(&key);
    } else {
        table.insert(key, value(u, 0)?);
    }
    Ok(())
}

/// The tables of `v`, depth first.
fn count_tables(v: &Value) -> usize {
    match v {
        Value::Table(t) => 1 + t.values().map(count_tables).sum::<usize>(),
        Value::Array(a) => a.iter().map(count_tables).sum(),
        _ => 0,
    }
}

/// The `n`th table of `v` in the order of [`count_tables`].
fn nth_table(v: &mut Value, mut n: usize) -> Option<&mut Table> {
    fn walk<'a>(v: &'a mut Value, n: &mut usize) -> Option<&'a mut Table> {
        match v {
            Value::Table(t) => {
                if *n == 0 {
                    return Some(t);
                }
                *n -= 1;
                t.iter_mut().find_map(|(_, v)| walk(v, n))
            }
            Value::Array(a) => a.iter_mut().find_map(|v| walk(v, n)),
            _ => None,
        }
    }
    walk(v, &mut n)
}

/// The experiments, parsed once.
fn bases() -> &'static [Table] {
    static PARSED: OnceLock<Vec<Table>> = OnceLock::new();
    PARSED.get_or_init(|| BASES.iter().map(|text| text.parse::<Table>().expect("the project's experiments parse")).collect())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(base) = u.choose(bases()) else { return };
    let mut doc = Value::Table(base.clone());
    for _ in 0..u.int_in_range(1..=6).unwrap_or(1) {
        if edit(&mut u, &mut doc).is_err() {
            break;
        }
    }
    let Ok(text) = toml::to_string(&doc) else { return };
    let _ = xlat::config::parse_experiment(&text, std::path::Path::new("/nonexistent"));
});
