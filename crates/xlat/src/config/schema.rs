//! The JSON Schema of experiment files, generated from the types that read them ([`super::raw`]),
//! so that an editor can check and complete an experiment file while it is written (with the
//! `#:schema` line of Taplo and the editors built on it, or an editor's own schema setting).
//!
//! The schema says what a file may contain, not whether its values fit together (ways dividing
//! entries, placements allowing an eviction policy...): `xlat run` still checks that, and its
//! errors name the field. `docs/experiment.schema.json` is this schema as `xlat schema` prints
//! it; a test keeps the two equal.

use super::presets;
use super::raw::ExperimentFile;
use crate::trace::TraceFormat;
use crate::workload::Scale;
use serde_json::{json, Value};

/// The JSON Schema (draft 7) of an experiment file.
pub fn experiment_schema() -> Value {
    // Draft 7, the newest draft that the schema support of editors (Taplo's among them)
    // generally reads.
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    let mut schema = generator.into_root_schema_for::<ExperimentFile>().to_value();
    fit_toml(&mut schema);
    schema["title"] = json!("xlat experiment file");
    schema["description"] = json!("Workloads × machines for `xlat run`; every field is described in docs/configuration.md.");
    // Names the raw types keep as strings, checked later against lists each kept in one place.
    name_enum(&mut schema, "RawMachine", "preset", presets::NAMES.iter().copied());
    name_enum(&mut schema, "RawWorkload", "scale", Scale::ALL.iter().map(|s| s.name()));
    name_enum(&mut schema, "RawWorkload", "format", TraceFormat::ALL.iter().map(|f| f.name()));
    schema
}

/// Fits every schema within `schema` to what xlat reads from TOML, which the generator,
/// written for JSON, does not know: TOML has no null, so an optional field is one left out,
/// not one that may be null (the generator allows null for every `Option`); and a `u32`
/// field has an upper bound (the generator bounds only `u16` fields), so that an editor
/// flags a value xlat cannot read.
fn fit_toml(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = &types[..] {
                    let only = only.clone();
                    map.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(options)) = map.get_mut("anyOf") {
                options.retain(|option| *option != json!({ "type": "null" }));
                if let [only] = &options[..] {
                    let only = only.clone();
                    map.remove("anyOf");
                    match only {
                        // Draft 7 ignores the keywords beside a `$ref`, this field's
                        // description among them: the reference goes under `allOf`.
                        Value::Object(only) if only.contains_key("$ref") => {
                            map.insert("allOf".into(), json!([only]));
                        }
                        Value::Object(only) => map.extend(only),
                        _ => unreachable!("a schema is an object"),
                    }
                }
            }
            if map.get("format").is_some_and(|f| f == "uint32") {
                map.entry("maximum").or_insert(json!(u32::MAX));
            }
            map.values_mut().for_each(fit_toml);
        }
        Value::Array(items) => items.iter_mut().for_each(fit_toml),
        _ => {}
    }
}

/// Restricts string property `property` of definition `definition` to `names`.
fn name_enum<'a>(schema: &mut Value, definition: &str, property: &str, names: impl Iterator<Item = &'a str>) {
    let field = &mut schema["definitions"][definition]["properties"][property];
    assert!(field.is_object(), "the schema has no {definition}.{property}");
    field["enum"] = names.map(Value::from).collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preset_scale_and_format_are_closed_lists() {
        let schema = experiment_schema();
        let enum_of = |def: &str, prop: &str| schema["definitions"][def]["properties"][prop]["enum"].clone();
        assert_eq!(enum_of("RawMachine", "preset"), json!(["skylake-like", "mosaic-paper", "single-tlb"]));
        assert_eq!(enum_of("RawWorkload", "scale"), json!(["tiny", "small", "paper"]));
        assert_eq!(enum_of("RawWorkload", "format"), json!(["native", "lackey", "champsim", "accelsim"]));
    }
}
