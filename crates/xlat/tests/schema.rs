//! The JSON Schema of experiment files against what it describes: the committed copy, the
//! files xlat reads (every experiment, the README's example, every preset), the files it
//! rejects, and the configuration reference that documents every field.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use xlat::config::schema::experiment_schema;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&experiment_schema()).expect("the schema is a valid JSON Schema")
}

/// `text` (TOML) as the JSON value the schema describes.
fn as_json(text: &str) -> Value {
    let table: toml::Table = toml::from_str(text).expect("TOML");
    serde_json::to_value(table).expect("TOML values are JSON values")
}

/// The schema's complaints about experiment TOML `text`, one line each.
fn complaints(text: &str) -> Vec<String> {
    validator().iter_errors(&as_json(text)).map(|e| format!("{}: {e}", e.instance_path())).collect()
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let path = repo().join("docs/experiment.schema.json");
    let committed = std::fs::read_to_string(&path).expect("docs/experiment.schema.json");
    let generated = serde_json::to_string_pretty(&experiment_schema()).unwrap() + "\n";
    assert!(committed == generated, "{} is stale: regenerate it with `cargo run --release -- schema > docs/experiment.schema.json`", path.display());
}

/// The experiments of `experiments/` and `examples/`.
#[test]
fn every_experiment_file_satisfies_the_schema() {
    let dirs = ["experiments", "examples"].map(|dir| std::fs::read_dir(repo().join(dir)).unwrap());
    let mut files: Vec<PathBuf> = dirs.into_iter().flatten().map(|e| e.unwrap().path()).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    assert!(files.len() >= 7, "the paper experiments and the default are there");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(complaints(&text), Vec::<String>::new(), "{}", file.display());
        // Each names the schema for editors (Taplo's directive), by a path that exists.
        let schema = text.lines().next().and_then(|line| line.strip_prefix("#:schema ")).unwrap_or_else(|| panic!("{} does not start with a #:schema line", file.display()));
        assert!(file.parent().unwrap().join(schema).is_file(), "{}: no schema at {schema}", file.display());
    }
}

#[test]
fn the_readme_example_satisfies_the_schema() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let example = readme.split("```toml\n").nth(1).and_then(|rest| rest.split("```").next()).expect("a TOML example in the README");
    assert_eq!(complaints(example), Vec::<String>::new());
}

#[test]
fn every_preset_spelled_out_satisfies_the_schema() {
    // What `xlat presets NAME` prints: the preset's levels and OS as a `[[machine]]` table,
    // serialized by the same types the schema is generated from.
    use xlat::config::presets::{self, PresetParams};
    use xlat::config::raw::{ExperimentFile, RawMachine};
    for name in presets::NAMES {
        let preset = presets::preset(name, PresetParams::default()).unwrap();
        let machine = RawMachine { name: name.into(), os: Some(preset.os), tlb: Some(preset.tlb), ..RawMachine::default() };
        let file = ExperimentFile { machines: vec![machine], ..ExperimentFile::default() };
        let text = toml::to_string(&file).unwrap();
        assert_eq!(complaints(&text), Vec::<String>::new(), "{name}:\n{text}");
    }
}

#[test]
fn what_xlat_rejects_by_shape_the_schema_rejects_too() {
    let base = "[[workload]]\nname = \"u\"\ntype = \"uniform\"\nfootprint = \"1MiB\"\nrefs = 10\n[[machine]]\nname = \"m\"\npreset = \"single-tlb\"\n";
    assert_eq!(complaints(base), Vec::<String>::new());
    let cases = [
        ("an unknown field", "os = { memroy = \"1GiB\" }\n"),
        ("an unknown eviction policy", "os = { eviction = \"clock\" }\n"),
        ("a size that is not one", "os = { memory = \"12 parsecs\" }\n"),
        ("ways neither a count nor full", "ways = \"half\"\n"),
        ("an unknown preset", "[[machine]]\nname = \"n\"\npreset = \"haswell\"\n"),
        ("a hash with a seed it cannot take", "os = { iceberg = { hash = { kind = \"xxhash64\", seed = 3 } } }\n"),
    ];
    for (what, tail) in cases {
        let text = format!("{base}{tail}");
        assert!(!complaints(&text).is_empty(), "the schema accepts {what}");
        assert!(xlat::config::parse_experiment(&text, Path::new(".")).is_err(), "xlat accepts {what}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

    /// The schema's sizes against `parse_bytes`, which reads them, over strings of the
    /// characters sizes are made of: the schema accepts every size xlat reads, and rejects
    /// every string xlat rejects for its shape (it leaves to xlat only whether the number is
    /// whole in bytes and below 2^64).
    #[test]
    fn the_schema_reads_sizes_as_xlat_does(text in proptest::prop_oneof![
        "[0-9_. kKmMgGtTiIbBx]{0,12}",
        " ?[0-9_]{0,5}(\\.[0-9_]{0,3})? ?([kKmMgGtT]([iI]?[bB])?|[bB])? ?",
    ]) {
        let sizes = jsonschema::validator_for(&experiment_schema()["definitions"]["ByteSize"]).unwrap();
        let schema_accepts = sizes.is_valid(&Value::from(text.as_str()));
        match xlat::units::parse_bytes(&text) {
            Ok(_) => proptest::prop_assert!(schema_accepts, "xlat reads {text:?}, the schema rejects it"),
            Err(e) if e.contains("is not a whole number of bytes") => {}
            Err(e) => proptest::prop_assert!(!schema_accepts, "the schema accepts {text:?}: {e}"),
        }
    }
}

#[test]
fn u32_fields_are_bounded_and_descriptions_survive_references() {
    let schema = experiment_schema();
    let front = &schema["definitions"]["RawIceberg"]["properties"]["front"];
    assert_eq!(front["maximum"], u32::MAX, "{front}");
    let memory = &schema["definitions"]["RawOs"]["properties"]["memory"];
    assert_eq!((&memory["allOf"][0]["$ref"], memory.get("$ref")), (&"#/definitions/ByteSize".into(), None), "{memory}");
    assert!(memory["description"].is_string());
    assert!(!complaints("[[machine]]\nname = \"m\"\nos = { iceberg = { front = 8589934592 } }\n").is_empty());
}

/// Words in backticks in `text` (`a = { b, c }` gives a, b and c).
fn backticked_words(text: &str) -> BTreeSet<String> {
    let spans = text.split('`').skip(1).step_by(2);
    spans.flat_map(|span| span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).map(str::to_string).collect::<Vec<_>>()).collect()
}

/// The part of `doc` from the heading `heading` to the next heading.
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc.find(&format!("\n{heading}\n")).unwrap_or_else(|| panic!("docs/configuration.md has no heading `{heading}`"));
    let body = &doc[start + heading.len() + 2..];
    body.find("\n#").map_or(body, |end| &body[..end])
}

#[test]
fn the_configuration_reference_documents_every_field_and_value() {
    let doc = std::fs::read_to_string(repo().join("docs/configuration.md")).unwrap();
    let schema = experiment_schema();
    // Each definition's fields are documented in the section of the table they are written in.
    let sections = [
        ("ExperimentFile", "## Top level"),
        ("RawWorkload", "## `[[workload]]`"),
        ("RawMachine", "## `[[machine]]`"),
        ("RawOs", "### `[machine.os]`"),
        ("RawIceberg", "### `[machine.os]`"),
        ("HashSpec", "### `[machine.os]`"),
        ("EvictionTable", "### `[machine.os]`"),
        ("PageTableTable", "### `[machine.os]`"),
        ("RawMosaic", "### `[[machine.mosaic]]`"),
        ("RawPwc", "### `[machine.pwc]`"),
        ("RawTiming", "### `[machine.timing]`"),
        ("RawCacheLevel", "### `[machine.timing]`"),
        ("RawLevel", "### `[[machine.tlb]]` (one table per level)"),
        ("RawArray", "### `[[machine.tlb]]` (one table per level)"),
        ("RawGpu", "### `[machine.gpu]`"),
        ("RawGpuTlb", "### `[machine.gpu]`"),
        ("RawGpuManager", "### `[machine.gpu]`"),
        ("RawGpuAppTable", "## `[[workload]]`"),
        ("RawPlot", "## `[[plot]]`"),
        ("RawSplit", "## `[[plot]]`"),
    ];
    let mut missing = Vec::new();
    for (definition, heading) in sections {
        let words = backticked_words(section(&doc, heading));
        let def = if definition == "ExperimentFile" { &schema } else { &schema["definitions"][definition] };
        let mut fields = BTreeSet::new();
        collect_properties(def, &mut fields);
        assert!(!fields.is_empty(), "{definition} has fields");
        missing.extend(fields.into_iter().filter(|f| !words.contains(f)).map(|f| format!("{definition}.{f} under {heading}")));
    }
    // Every value of every closed list (policies, placements, plot kinds...) appears somewhere.
    let words = backticked_words(&doc);
    let mut values = BTreeSet::new();
    collect_values(&schema, &mut values);
    missing.extend(values.into_iter().filter(|v| !words.contains(v)).map(|v| format!("value `{v}`")));
    assert!(missing.is_empty(), "docs/configuration.md does not document: {missing:?}");
}

/// The property names of the object schema `def` (of each variant, for a tagged enum).
fn collect_properties(def: &Value, out: &mut BTreeSet<String>) {
    if let Some(props) = def["properties"].as_object() {
        out.extend(props.keys().cloned());
    }
    for variant in def["oneOf"].as_array().into_iter().flatten() {
        collect_properties(variant, out);
    }
}

/// Every string of an `enum` or `const` anywhere in `schema`.
fn collect_values(schema: &Value, out: &mut BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("enum", Value::Array(items)) => out.extend(items.iter().filter_map(Value::as_str).map(str::to_string)),
                    ("const", Value::String(s)) => {
                        out.insert(s.clone());
                    }
                    _ => collect_values(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_values(item, out)),
        _ => {}
    }
}
