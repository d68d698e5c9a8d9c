//! Test vectors for the hardware hash circuit and CPFN decoder (`xlat hash vectors`): the
//! tables as `$readmemh` files and, for edge-case and random keys, every hash output and the
//! frame each CPFN decodes to. `docs/hashing.md` describes the files.

use super::tabulation::{Tabulation, KEY_BYTES, TABLE_ENTRIES};
use crate::atomic::write_atomically;
use crate::os::iceberg::{Layout, Slot};
use crate::Result;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::io::Write;
use std::path::Path;

/// Hash outputs per vector line: the most the circuit is built with (H = 8).
pub const OUTPUTS: usize = 8;

/// Keys that exercise the byte-wrap of probing and the extremes of every byte.
fn edge_keys() -> Vec<u64> {
    let mut keys = vec![0, u64::MAX, 0x0101_0101_0101_0101, 0x8080_8080_8080_8080, 0xfefe_fefe_fefe_fefe];
    for byte in 0..KEY_BYTES {
        keys.push(0xff << (8 * byte));
        keys.push(0xf9 << (8 * byte));
    }
    keys.extend((0..64).map(|bit| 1u64 << bit));
    keys
}

/// The edge-case keys followed by `random` keys drawn from `seed`, all cut to their low
/// `key_bits` bits (1..=64) for circuits with a narrower key, such as the paper's 45-bit VPN.
/// Cut edge cases that coincide are kept once and the all-ones key of the width is added, so
/// 64-bit keys are exactly the uncut list.
pub fn keys(random: usize, seed: u64, key_bits: u32) -> Vec<u64> {
    assert!((1..=64).contains(&key_bits), "key_bits = {key_bits} is not in 1..=64");
    let mask = u64::MAX >> (64 - key_bits);
    let mut keys: Vec<u64> = Vec::new();
    for key in edge_keys().into_iter().chain([mask]) {
        if !keys.contains(&(key & mask)) {
            keys.push(key & mask);
        }
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    keys.extend((0..random).map(|_| rng.random::<u64>() & mask));
    keys
}

/// Writes `dir/tables.memh` (and each table alone in `dir/table0.memh` .. `table7.memh`),
/// `dir/hash_vectors.txt` and `dir/cpfn_vectors.txt` for the
/// tabulation tables of `table_seed`, the decoder of `layout` (whose hash must be tabulation
/// with the same seed) and `keys`. Returns the number of vector lines written.
pub fn write(dir: &Path, table_seed: u64, layout: &Layout, keys: &[u64]) -> Result<usize> {
    crate::atomic::check_output_dir(dir)?;
    let tables = Tabulation::new(table_seed);
    write_atomically(&dir.join("tables.memh"), |w| {
        writeln!(w, "// tabulation tables, seed {table_seed}: table t entry e at line t*256+e")?;
        for t in 0..KEY_BYTES {
            for e in 0..TABLE_ENTRIES {
                writeln!(w, "{:08x}", tables.entry(t, e))?;
            }
        }
        Ok(())
    })?;
    // The same words one table per file: a circuit with one ROM per table loads each from its
    // own file ($readmemh cannot start at a line of a file).
    for t in 0..KEY_BYTES {
        write_atomically(&dir.join(format!("table{t}.memh")), |w| {
            writeln!(w, "// tabulation table {t}, seed {table_seed}: entry e at line e")?;
            for e in 0..TABLE_ENTRIES {
                writeln!(w, "{:08x}", tables.entry(t, e))?;
            }
            Ok(())
        })?;
    }
    write_atomically(&dir.join("hash_vectors.txt"), |w| {
        writeln!(w, "// key h0 h1 .. h{} (hex), tabulation seed {table_seed}", OUTPUTS - 1)?;
        for &key in keys {
            write!(w, "{key:016x}")?;
            for k in 0..OUTPUTS {
                write!(w, " {:08x}", tables.hash(k, key))?;
            }
            writeln!(w)?;
        }
        Ok(())
    })?;
    let mut lines = keys.len();
    write_atomically(&dir.join("cpfn_vectors.txt"), |w| {
        let s = layout.spec();
        writeln!(
            w,
            "// key cpfn valid frame (hex); buckets {} front {} back {} choices {} backyard {:?} cpfn_bits {}",
            layout.buckets(), s.front, s.back, s.choices, s.backyard, s.cpfn_bits
        )?;
        for (i, &key) in keys.iter().enumerate() {
            // Every code for the first keys, then one front and one backyard code per key.
            let codes: Vec<u8> = if i < 8 {
                (0..1u32 << s.cpfn_bits).map(|c| c as u8).collect()
            } else {
                let choice = 1 + (key >> 32) as u32 % s.choices;
                vec![
                    layout.encode(Slot::Front(key as u32 % s.front)),
                    layout.encode(Slot::Back { choice, slot: (key >> 16) as u32 % s.back }),
                ]
            };
            for cpfn in codes {
                let frame = layout.decode_frame(key, cpfn);
                writeln!(w, "{key:016x} {cpfn:02x} {} {:016x}", u8::from(frame.is_some()), frame.unwrap_or(0))?;
                lines += 1;
            }
        }
        Ok(())
    })?;
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::HashSpec;
    use crate::os::iceberg::IcebergSpec;

    #[test]
    fn files_agree_with_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let spec = IcebergSpec { hash: HashSpec::Tabulation { seed: 9 }, ..IcebergSpec::default() };
        let layout = Layout::new(spec, 64 * 1000);
        let keys = keys(10, 1, 64);
        write(dir.path(), 9, &layout, &keys).unwrap();
        let tables = std::fs::read_to_string(dir.path().join("tables.memh")).unwrap();
        let words: Vec<&str> = tables.lines().filter(|l| !l.starts_with("//")).collect();
        assert_eq!(words.len(), 2048);
        for table in 0..KEY_BYTES {
            let one = std::fs::read_to_string(dir.path().join(format!("table{table}.memh"))).unwrap();
            let one: Vec<&str> = one.lines().filter(|l| !l.starts_with("//")).collect();
            assert_eq!(one[..], words[256 * table..256 * (table + 1)], "table {table}");
        }
        let t = Tabulation::new(9);
        let vectors = std::fs::read_to_string(dir.path().join("hash_vectors.txt")).unwrap();
        let line = vectors.lines().nth(1).unwrap();
        let fields: Vec<u64> = line.split(' ').map(|f| u64::from_str_radix(f, 16).unwrap()).collect();
        assert_eq!(fields.len(), 1 + OUTPUTS);
        assert_eq!(fields[0], keys[0]);
        assert_eq!(fields[3], u64::from(t.hash(2, keys[0])));
        let cpfn = std::fs::read_to_string(dir.path().join("cpfn_vectors.txt")).unwrap();
        let valid = cpfn.lines().filter(|l| l.split(' ').nth(2) == Some("1")).count();
        assert_eq!(valid, 8 * 104 + 2 * (keys.len() - 8));
    }

    #[test]
    fn narrow_keys_fit_their_width_and_wide_keys_are_uncut() {
        let wide = keys(100, 5, 64);
        assert_eq!(wide.len(), edge_keys().len() + 100);
        assert_eq!(wide[..edge_keys().len()], edge_keys()[..]);
        let narrow = keys(100, 5, 45);
        assert!(narrow.iter().all(|&k| k >> 45 == 0));
        assert!(narrow.contains(&((1 << 45) - 1)) && narrow.contains(&(1 << 44)));
        let edges = narrow.len() - 100;
        let mut distinct = narrow[..edges].to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), edges, "cut edge cases are kept once");
    }
}
