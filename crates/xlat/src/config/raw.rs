//! The configuration as written: serde structs that mirror the TOML, with every field optional
//! where a default exists. Nothing here is trusted; [`super::validate`] turns it into specs.

use super::size::ByteSize;
use crate::hash::HashSpec;
use crate::os::eviction::RecencyKind;
use crate::os::kernel_work::KernelWorkSpec;
use crate::os::EvictionSpec;
use crate::sim::MachineKind;
use crate::os::iceberg::{BackyardRanges, TieBreak};
use crate::mmu::PageTableSpec;
use crate::os::Placement;
use crate::tlb::Policy;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// An experiment file: workloads × machines.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    /// Configuration schema version; only 1 exists.
    pub schema: Option<u32>,
    /// Seed of every random choice not given its own seed.
    pub seed: Option<u64>,
    /// References per batch.
    pub batch: Option<usize>,
    /// The workloads, each read once.
    #[serde(default, rename = "workload")]
    pub workloads: Vec<RawWorkload>,
    /// The machine configurations, all fed every workload.
    #[serde(default, rename = "machine")]
    pub machines: Vec<RawMachine>,
    /// Plots of the results, drawn when results are written.
    #[serde(default, rename = "plot")]
    pub plots: Vec<super::plot::RawPlot>,
}

/// Which kind of workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadType {
    /// Synthetic sequential stream.
    Sequential,
    /// Synthetic strided stream.
    Strided,
    /// Synthetic uniform random stream.
    Uniform,
    /// Synthetic Zipf stream.
    Zipf,
    /// A trace file.
    Trace,
    /// Built-in workload: HPCC RandomAccess.
    Gups,
    /// Built-in workload: B+ tree lookups.
    Btree,
    /// Built-in workload: XSBench.
    Xsbench,
    /// Built-in workload: Graph500 BFS.
    Graph500,
    /// Built-in workload: a GAP benchmark suite kernel.
    Gap,
    /// Built-in workload: a memcached-like key-value cache.
    Memcached,
    /// Built-in workload: a Redis-like key-value store.
    Redis,
    /// Built-in workload: sysbench's memory test.
    SysbenchMemory,
    /// Several workloads taking turns, each in its own address space.
    Mix,
    /// GPU applications running together on a `gpu` machine.
    Gpu,
}

impl WorkloadType {
    /// The name as written in files (`graph500`).
    pub fn name(self) -> &'static str {
        match self {
            WorkloadType::Sequential => "sequential",
            WorkloadType::Strided => "strided",
            WorkloadType::Uniform => "uniform",
            WorkloadType::Zipf => "zipf",
            WorkloadType::Trace => "trace",
            WorkloadType::Gups => "gups",
            WorkloadType::Btree => "btree",
            WorkloadType::Xsbench => "xsbench",
            WorkloadType::Graph500 => "graph500",
            WorkloadType::Gap => "gap",
            WorkloadType::Memcached => "memcached",
            WorkloadType::Redis => "redis",
            WorkloadType::SysbenchMemory => "sysbench-memory",
            WorkloadType::Mix => "mix",
            WorkloadType::Gpu => "gpu",
        }
    }

    /// True for the built-in workloads (`crate::workload`).
    pub fn is_builtin(self) -> bool {
        matches!(
            self,
            WorkloadType::Gups
                | WorkloadType::Btree
                | WorkloadType::Xsbench
                | WorkloadType::Graph500
                | WorkloadType::Gap
                | WorkloadType::Memcached
                | WorkloadType::Redis
                | WorkloadType::SysbenchMemory
        )
    }
}

/// One workload as written.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    /// Name in results.
    pub name: String,
    /// The kind of workload.
    #[serde(rename = "type")]
    pub kind: WorkloadType,
    /// Synthetic: bytes covered.
    pub footprint: Option<ByteSize>,
    /// Synthetic: number of references.
    pub refs: Option<u64>,
    /// Synthetic: first address.
    pub base: Option<u64>,
    /// Synthetic: bytes per access.
    pub size: Option<u16>,
    /// Synthetic: probability of a store.
    pub store_fraction: Option<f64>,
    /// Synthetic: address space.
    pub asid: Option<u16>,
    /// Synthetic: generator seed (defaults to the experiment seed).
    pub seed: Option<u64>,
    /// Strided: bytes between accesses.
    pub stride: Option<ByteSize>,
    /// Zipf: exponent.
    pub exponent: Option<f64>,
    /// Trace: file to read (relative to the experiment file).
    pub path: Option<PathBuf>,
    /// Trace: `native`, `lackey` or `champsim` (detected when absent).
    pub format: Option<String>,
    /// Built-in: scale preset (`tiny`, `small`, `paper`).
    pub scale: Option<String>,
    /// Built-in: whether the process's start-up pages (the loader's, the libraries' and the
    /// program's data and the stack, touched before `main`) come first. Default: when the
    /// run starts at the program's start (its first phase is emitted).
    pub startup: Option<bool>,
    /// Built-in: whether the stream carries the process's address-space events (its
    /// mappings first, then what its `malloc`s and `free`s map and unmap). Default: on (every
    /// built-in workload allocates through the address-space model).
    pub address_space_events: Option<bool>,
    /// Built-in: explicit parameters overriding the preset's.
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub params: Option<toml::Table>,
    /// Any: references to skip first.
    pub skip: Option<u64>,
    /// Any: at most this many references.
    pub limit: Option<u64>,
    /// Any: run only on these machines (names; a trailing `*` matches a prefix). All when
    /// absent.
    pub machines: Option<Vec<String>>,
    /// Mix: references per turn.
    pub quantum: Option<u64>,
    /// Mix: the workloads taking turns (any type but `mix`), in rotation order.
    pub parts: Option<Vec<RawWorkload>>,
    /// GPU: the applications running together, each an application's name (`bfs`) or a
    /// table of its name, footprint and seed.
    pub apps: Option<Vec<super::gpu::RawGpuApp>>,
}

/// Associativity as written: a way count, or `"full"` for a fully associative array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawWays {
    /// A way count.
    Count(usize),
    /// Fully associative.
    Full,
}

impl<'de> Deserialize<'de> for RawWays {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RawWays, D::Error> {
        count_or_word(d, "way count", "full").map(|n| n.map_or(RawWays::Full, |n| RawWays::Count(n as usize)))
    }
}

/// A count or one keyword, as written (`ways = 4` or `"full"`): `None` for the keyword. Errors
/// name what the count is (`noun`).
pub(crate) fn count_or_word<'de, D: serde::Deserializer<'de>>(d: D, noun: &'static str, word: &'static str) -> Result<Option<u64>, D::Error> {
    struct V {
        noun: &'static str,
        word: &'static str,
    }
    impl serde::de::Visitor<'_> for V {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "a {} or \"{}\"", self.noun, self.word)
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Option<u64>, E> {
            Ok(Some(v))
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Option<u64>, E> {
            u64::try_from(v).map(Some).map_err(|_| E::custom(format!("a {} of {v} is negative", self.noun)))
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Option<u64>, E> {
            if v == self.word {
                Ok(None)
            } else {
                Err(E::custom(format!("`{v}` is neither a {} nor \"{}\"", self.noun, self.word)))
            }
        }
    }
    d.deserialize_any(V { noun, word })
}

impl schemars::JsonSchema for RawWays {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Ways".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        count_or_word_schema("Associativity: a way count, or \"full\" for a fully associative array", "full")
    }
}

/// The schema of [`count_or_word`]'s values.
pub(crate) fn count_or_word_schema(description: &str, word: &str) -> schemars::Schema {
    schemars::json_schema!({
        "description": description,
        "anyOf": [{ "type": "integer", "minimum": 0 }, { "const": word }]
    })
}

impl Serialize for RawWays {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RawWays::Count(n) => s.serialize_u64(*n as u64),
            RawWays::Full => s.serialize_str("full"),
        }
    }
}

/// One machine configuration as written.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMachine {
    /// Name in results.
    pub name: String,
    /// The kind of machine (`cpu`, the default: one core's TLBs over one OS model).
    pub kind: Option<MachineKind>,
    /// A built-in machine to start from (`skylake-like`, `mosaic-paper`, `single-tlb`).
    pub preset: Option<String>,
    /// Preset parameter: TLB entries (`mosaic-paper`, `single-tlb`).
    pub entries: Option<usize>,
    /// Preset parameter: TLB associativity (`mosaic-paper`, `single-tlb`).
    pub ways: Option<RawWays>,
    /// Preset parameter: replacement policy (`mosaic-paper`, `single-tlb`).
    pub replacement: Option<Policy>,
    /// Seed of this machine's random choices (defaults to the experiment seed).
    pub seed: Option<u64>,
    /// The OS model; fields left out keep the preset's or the default values.
    pub os: Option<RawOs>,
    /// TLB levels, closest to the core first; replaces the preset's levels when given.
    pub tlb: Option<Vec<RawLevel>>,
    /// Mosaic TLBs riding the machine's (iceberg) OS.
    pub mosaic: Option<Vec<RawMosaic>>,
    /// The page walker's walk caches (EMT's radix PWC), for a page-table driver whose walks
    /// read tables.
    pub pwc: Option<RawPwc>,
    /// EMT's cycle model: walk and data references through caches, and cycles.
    pub timing: Option<RawTiming>,
    /// A `gpu` machine's hardware and memory manager; fields left out take GPU Mosaic's.
    pub gpu: Option<super::gpu::RawGpu>,
}

/// EMT's cycle model as written; omitted fields take EMT's values.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTiming {
    /// Cache levels, closest to the core first (default EMT's: L1 split 32 KiB 8-way 2
    /// cycles, L2 512 KiB 8-way 16, LLC 16 MiB 16-way 56).
    pub caches: Option<Vec<RawCacheLevel>>,
    /// Bytes of a cache line (default 64).
    pub line: Option<ByteSize>,
    /// Cycles of a memory access (default 180).
    pub memory: Option<u32>,
    /// The level walk reads enter, by name (default the second level: EMT's L2).
    pub walk_level: Option<String>,
    /// Cycles of a TLB access (default 1).
    pub tlb: Option<f64>,
    /// Cycles of a walk-cache lookup (default 1).
    pub pwc: Option<f64>,
    /// Cycles of an ECPT walk's hash of its address (default 2), in parallel with its
    /// walk-cache lookups.
    pub hash: Option<f64>,
    /// Cycles of a lookup of ECPT's cuckoo walk caches (default 1).
    pub cwc: Option<f64>,
    /// Cycles of an instruction that is not a data reference (default 0.5).
    pub instruction: Option<f64>,
    /// What a data access's latency is divided by (default 8).
    pub data_parallelism: Option<f64>,
}

/// One cache level as written.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCacheLevel {
    /// Name in results.
    pub name: String,
    /// Bytes (of each side of a split level).
    pub size: ByteSize,
    /// Ways.
    pub ways: usize,
    /// Cycles of a hit.
    pub latency: u32,
    /// Whether the level has an instruction side beside its data side (default false).
    pub split: Option<bool>,
    /// Replacement policy (default `lru`).
    pub replacement: Option<Policy>,
}

/// Walk caches as written; omitted fields take EMT's.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPwc {
    /// Entries of each level's cache, top level first (default `[2, 4, 32]`: the PML4, PDPT
    /// and PD entries).
    pub entries: Option<Vec<usize>>,
    /// Ways of each level's cache (default `[1, 4, 4]`).
    pub ways: Option<Vec<usize>>,
    /// Replacement policy of every level (default `lru`).
    pub replacement: Option<Policy>,
}

/// A value or a list of values (a sweep: one TLB per value).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "OneOrMany_{T}")]
pub enum OneOrMany<T> {
    /// One value.
    One(T),
    /// Several values.
    Many(Vec<T>),
}

/// Read by hand rather than as an untagged enum, whose only error is "data did not match any
/// variant": a list is read as values of `T`, anything else as one, so that a bad value gets
/// `T`'s own message (`` `ful` is neither a way count nor "full" ``).
impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<OneOrMany<T>, D::Error> {
        use serde::de::value::{BoolDeserializer, F64Deserializer, I64Deserializer, StrDeserializer, U64Deserializer};
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a value or a list of values")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<OneOrMany<T>, A::Error> {
                let mut values = Vec::new();
                while let Some(value) = seq.next_element()? {
                    values.push(value);
                }
                Ok(OneOrMany::Many(values))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<OneOrMany<T>, E> {
                T::deserialize(U64Deserializer::new(v)).map(OneOrMany::One)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<OneOrMany<T>, E> {
                T::deserialize(I64Deserializer::new(v)).map(OneOrMany::One)
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<OneOrMany<T>, E> {
                T::deserialize(F64Deserializer::new(v)).map(OneOrMany::One)
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<OneOrMany<T>, E> {
                T::deserialize(BoolDeserializer::new(v)).map(OneOrMany::One)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<OneOrMany<T>, E> {
                T::deserialize(StrDeserializer::new(v)).map(OneOrMany::One)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<T: Clone> OneOrMany<T> {
    /// The values as a list.
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// Mosaic TLBs as written: one per combination of the listed arities and associativities.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMosaic {
    /// Name in results (default `mosaic-<arity>`, with `-<ways>w` or `-full` when several
    /// associativities are listed); with several TLBs, a prefix.
    pub name: Option<String>,
    /// Entries (default 1024, the paper's).
    pub entries: Option<usize>,
    /// Ways, `"full"`, or a list of them (default 4).
    pub ways: Option<OneOrMany<RawWays>>,
    /// Replacement policy (default `lru`).
    pub replacement: Option<Policy>,
    /// Pages per Mosaic page, or a list of them (default 4).
    pub arity: Option<OneOrMany<u32>>,
}

/// The OS model as written.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawOs {
    /// Physical memory size.
    pub memory: Option<ByteSize>,
    /// The page size every fault maps.
    pub page_size: Option<ByteSize>,
    /// Transparent huge pages: `never` (the default) or `always` (2 MiB pages at faults and
    /// by khugepaged).
    pub thp: Option<crate::os::Thp>,
    /// khugepaged's parameters (with `thp = "always"`).
    pub khugepaged: Option<crate::os::KhugepagedSpec>,
    /// The page-table driver: the format walks read (`map`, the OS's own map, walked at no
    /// cost).
    pub page_table: Option<PageTableSpec>,
    /// Weights of the kernel-work model: instructions per call and per primitive.
    pub kernel_work: Option<KernelWorkSpec>,
    /// Frame placement.
    pub placement: Option<Placement>,
    /// Frames per set (set-associative placement).
    pub ways: Option<u64>,
    /// Iceberg parameters (iceberg placement).
    pub iceberg: Option<RawIceberg>,
    /// Eviction policy: a name (`"horizon-lru"`), or a table with its `kind` and parameters
    /// (`{ kind = "linux", reserve = 0.01 }`).
    pub eviction: Option<EvictionSpec>,
    /// `reserve`, `inactive_ratio`, `workingset`, `look_twice` and `delta`, written at the
    /// top of `os` as files did before each policy had a table of its own: read only to say
    /// where they go now ([`RawOs::moved`]).
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub reserve: Option<toml::Value>,
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    #[allow(missing_docs)]
    pub inactive_ratio: Option<toml::Value>,
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    #[allow(missing_docs)]
    pub workingset: Option<toml::Value>,
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    #[allow(missing_docs)]
    pub look_twice: Option<toml::Value>,
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    #[allow(missing_docs)]
    pub delta: Option<toml::Value>,
    /// Whether a page swapped in by a load keeps its copy in swap until a store (the
    /// kernel's swap cache), so that evicting it again writes nothing.
    pub swap_cache: Option<bool>,
    /// log2 of the most pages a major fault reads from swap (the kernel's `vm.page-cluster`,
    /// 0 to 5): swap readahead reads the faulting page's swapped-out neighbours with it.
    /// 0 turns readahead off.
    pub page_cluster: Option<u32>,
    /// Size of the swap area (a multiple of the page size); without one, swap never fills.
    pub swap: Option<ByteSize>,
    /// Whether a store to a page still in the swap cache copies it to a new frame (Linux
    /// 5.9 to 5.17) rather than dropping its copy in swap in place.
    pub swap_cache_cow: Option<bool>,
    /// How page use is observed.
    pub recency: Option<RecencyKind>,
    /// Page accesses between accessed-bit scans (`recency = "scan"`); a reference counts once
    /// per page it touches.
    pub scan_period: Option<u64>,
    /// Fraction of hot pages read at each scan.
    pub hot_sample: Option<f64>,
    /// Scans of history that decide whether a page is hot.
    pub scan_history: Option<u32>,
    /// Evictions per window of the eviction-age metric (tracked only when given).
    pub age_window: Option<u64>,
}

/// Iceberg parameters as written; omitted fields take the paper's values.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawIceberg {
    /// Front-yard slots per bucket (56).
    pub front: Option<u32>,
    /// Backyard slots per bucket (8).
    pub back: Option<u32>,
    /// Backyard choices (6).
    pub choices: Option<u32>,
    /// `disjoint` (the prototype's) or `all`.
    pub backyard: Option<BackyardRanges>,
    /// `first` or `random`: which of equally loaded backyard choices is taken.
    pub tie_break: Option<TieBreak>,
    /// CPFN width in bits (7).
    pub cpfn_bits: Option<u32>,
    /// Hash functions (`{ kind = "tabulation", seed = ... }` or `{ kind = "xxhash64" }`).
    pub hash: Option<HashSpec>,
}

/// One TLB level as written.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLevel {
    /// Name in results.
    pub name: String,
    /// Whether this level is inclusive of the levels above it.
    pub inclusive: Option<bool>,
    /// Arrays for data (or all) references.
    pub arrays: Vec<RawArray>,
    /// Arrays for instruction fetches; makes the level split.
    #[serde(default)]
    pub instr_arrays: Vec<RawArray>,
}

/// One TLB array as written.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawArray {
    /// Entries.
    pub entries: usize,
    /// Ways, or `"full"`.
    pub ways: RawWays,
    /// Replacement policy (default `lru`).
    pub replacement: Option<Policy>,
    /// Page sizes held (default `["4KiB"]`).
    pub page_sizes: Option<Vec<ByteSize>>,
}

impl RawOs {
    /// The first of the fields an eviction policy's table holds now that is written at the
    /// top of `os`, with its value as written.
    pub fn moved(&self) -> Option<(&'static str, &toml::Value)> {
        [("reserve", &self.reserve), ("inactive_ratio", &self.inactive_ratio), ("workingset", &self.workingset), ("look_twice", &self.look_twice), ("delta", &self.delta)]
            .into_iter()
            .find_map(|(field, value)| value.as_ref().map(|value| (field, value)))
    }
}
