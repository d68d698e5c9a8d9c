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

/// Declares the spec enum `$spec` of a registration list (each variant a model's name and
/// its parameters' type, tagged by `kind` in files and results), its table form `$table`,
/// their names (`NAMES`, `named`, `name`), and their reading from a name or a table and
/// their schema (definition `$schema`, described as `$what`).
macro_rules! named_models {
    (
        $(#[$spec_doc:meta])* $spec:ident, $(#[$table_doc:meta])* $table:ident, $what:literal, $schema:literal,
        [$($(#[$doc:meta])* $variant:ident = $name:literal => $module:ident::$params:ident,)+]
    ) => {
        $(#[$spec_doc])*
        #[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
        #[serde(tag = "kind")]
        pub enum $spec {
            $($(#[$doc])* #[serde(rename = $name)] $variant($module::$params),)+
        }

        $(#[$table_doc])*
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[serde(tag = "kind")]
        pub enum $table {
            $($(#[$doc])* #[serde(rename = $name)] $variant($module::$params),)+
        }

        impl From<$table> for $spec {
            fn from(table: $table) -> $spec {
                match table {
                    $($table::$variant(params) => $spec::$variant(params),)+
                }
            }
        }

        impl $spec {
            /// Every model's name, in the order registered.
            pub const NAMES: &[&str] = &[$($name,)+];

            /// The model called `name`, every parameter at its default.
            pub fn named(name: &str) -> Option<$spec> {
                match name {
                    $($name => Some($spec::$variant(Default::default())),)+
                    _ => None,
                }
            }

            /// The model's name in configurations.
            pub fn name(&self) -> &'static str {
                match self {
                    $($spec::$variant(_) => $name,)+
                }
            }
        }

        impl $crate::config::named::Named for $spec {
            type Table = $table;
            const NAMES: &'static [&'static str] = $spec::NAMES;
            const WHAT: &'static str = $what;

            fn named(name: &str) -> Option<$spec> {
                $spec::named(name)
            }
        }

        /// Read from the model's name, or from a table with its `kind` and parameters.
        impl<'de> serde::Deserialize<'de> for $spec {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$spec, D::Error> {
                $crate::config::named::deserialize(d)
            }
        }

        impl schemars::JsonSchema for $spec {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                $schema.into()
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $crate::config::named::schema::<$spec>(generator)
            }
        }
    };
}

pub(crate) use named_models;
