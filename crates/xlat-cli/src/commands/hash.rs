//! `xlat hash`: the hash functions of hashed physical memory, for the hardware model.

use crate::Outcome;
use anyhow::{anyhow, Result};
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;
use xlat::hash::{vectors, HashSpec, DEFAULT_TABLE_SEED};
use xlat::os::iceberg::{BackyardRanges, IcebergSpec, Layout};

/// Subcommands of `xlat hash`.
#[derive(Subcommand)]
pub enum HashCommand {
    /// Write tabulation tables and test vectors (hash outputs, CPFN decodes) for `hw/`.
    Vectors(VectorsArgs),
}

/// Where backyard choices fall, as a command-line value.
#[derive(Clone, Copy, ValueEnum)]
enum Ranges {
    /// Choice i in the i-th of d disjoint bucket ranges (the authors' prototype).
    Disjoint,
    /// Every choice among all buckets.
    All,
}

/// Arguments of `xlat hash vectors`.
#[derive(Args)]
pub struct VectorsArgs {
    /// Directory to write tables.memh, table0.memh .. table7.memh, hash_vectors.txt and
    /// cpfn_vectors.txt into.
    #[arg(long, default_value = "hw/build/vectors")]
    out: PathBuf,
    /// Seed of the tabulation tables.
    #[arg(long, default_value_t = DEFAULT_TABLE_SEED)]
    seed: u64,
    /// Random keys, after the built-in edge cases (at most 1,000,000).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(..=MAX_KEYS))]
    keys: u64,
    /// Seed of the random keys.
    #[arg(long, default_value_t = 1)]
    key_seed: u64,
    /// Key width: every key is cut to its low bits (45 for the paper's circuit, which hashed
    /// a 45-bit VPN).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=64))]
    key_bits: u32,
    /// Buckets of the memory the CPFN decoder addresses (65536 = 16 GiB of 4 KiB frames).
    #[arg(long, default_value_t = 65_536)]
    buckets: u64,
    /// Front-yard slots per bucket.
    #[arg(long, default_value_t = 56)]
    front: u32,
    /// Backyard slots per bucket.
    #[arg(long, default_value_t = 8)]
    back: u32,
    /// Backyard choices.
    #[arg(long, default_value_t = 6)]
    choices: u32,
    /// Where backyard choices fall.
    #[arg(long, value_enum, default_value_t = Ranges::Disjoint)]
    backyard: Ranges,
    /// CPFN width in bits.
    #[arg(long, default_value_t = 7)]
    cpfn_bits: u32,
}

/// Most random keys: 1 M keys already make ~165 MB of vectors, more than a circuit
/// simulation gets through, and the bound keeps a mistyped count from exhausting the host's
/// memory.
const MAX_KEYS: u64 = 1_000_000;

/// Runs a `hash` subcommand.
pub fn run(cmd: &HashCommand) -> Result<Outcome> {
    let HashCommand::Vectors(a) = cmd;
    let spec = IcebergSpec {
        front: a.front,
        back: a.back,
        choices: a.choices,
        backyard: match a.backyard {
            Ranges::Disjoint => BackyardRanges::Disjoint,
            Ranges::All => BackyardRanges::All,
        },
        cpfn_bits: a.cpfn_bits,
        hash: HashSpec::Tabulation { seed: a.seed },
        // Vectors hash and decode; where a page is placed does not enter them.
        ..IcebergSpec::default()
    };
    let frames = a.buckets.checked_mul(spec.bucket_frames()).ok_or_else(|| anyhow!("--buckets {} is too large", a.buckets))?;
    spec.check(frames).map_err(|e| anyhow!("invalid geometry: {e}"))?;
    let layout = Layout::new(spec, frames);
    let keys = vectors::keys(a.keys as usize, a.key_seed, a.key_bits);
    let lines = vectors::write(&a.out, a.seed, &layout, &keys)?;
    eprintln!("wrote {} keys ({lines} vector lines) to {}", keys.len(), a.out.display());
    Ok(Outcome::Done)
}
