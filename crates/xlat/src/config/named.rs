//! Models chosen by name with parameters of their own (eviction policies, page-table
//! drivers): written as the model's name, every parameter at its default, or as a table of
//! its `kind` and the parameters to change. One reading and one schema serve them all.

use serde::de::{DeserializeOwned, Error, MapAccess, Visitor};
use serde::Deserializer;

/// A model chosen by name, each of whose registered models has a table form `Table` (an
/// enum internally tagged by `kind`).
pub trait Named: Sized {
    /// The table form.
    type Table: DeserializeOwned + schemars::JsonSchema + Into<Self>;
    /// Every model's name, in the order registered.
    const NAMES: &'static [&'static str];
    /// What a value is, for messages (`"an eviction policy"`).
    const WHAT: &'static str;

    /// The model called `name`, every parameter at its default.
    fn named(name: &str) -> Option<Self>;
}

/// Reads a [`Named`] model from its name or its table; a bad name lists the names.
pub fn deserialize<'de, T: Named, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    struct V<T>(std::marker::PhantomData<T>);
    impl<'de, T: Named> Visitor<'de> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "{}'s name or a table with its `kind`", T::WHAT)
        }
        fn visit_str<E: Error>(self, name: &str) -> Result<T, E> {
            T::named(name).ok_or_else(|| E::unknown_variant(name, T::NAMES))
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            let table: T::Table = serde::Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
            Ok(table.into())
        }
    }
    d.deserialize_any(V(std::marker::PhantomData))
}

/// The JSON Schema of a [`Named`] model: one of its names, or its table.
pub fn schema<T: Named>(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let table = generator.subschema_for::<T::Table>();
    let mut description = format!("{}: its name, every parameter at its default, or a table with its `kind` and parameters", T::WHAT);
    description[..1].make_ascii_uppercase();
    schemars::json_schema!({
        "description": description,
        "anyOf": [{ "enum": T::NAMES }, table]
    })
}
