//! Resource limits (docs/reliability.md): a run whose models would not fit in the host's
//! memory is refused before it starts, with the estimate; huge parameters are a clear error
//! naming the field, or run in bounded memory. The host's memory is pinned with `ulimit -v`
//! (976 MiB here), so that the outcome does not depend on the machine running the tests.

mod common;

use common::{text, xlat_in_kib};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Address space the tests allow xlat, in KiB (976 MiB).
const LIMIT_KIB: u64 = 1_000_000;

/// A workload of 20,000 uniform references over 4 MiB and a machine `m` from the
/// `single-tlb` preset with the TOML lines `machine` added.
fn experiment(dir: &Path, machine: &str) {
    let text = format!(
        "[[workload]]\nname = \"u\"\ntype = \"uniform\"\nfootprint = \"4MiB\"\nrefs = 20000\n\n\
         [[machine]]\nname = \"m\"\npreset = \"single-tlb\"\n{machine}\n"
    );
    std::fs::write(dir.join("exp.toml"), text).unwrap();
}

/// Runs `exp.toml` in `dir` under [`LIMIT_KIB`] and asserts exit code 1 with `wanted` in the
/// message, and nothing printed (nothing simulated).
fn refused(dir: &Path, wanted: &str) {
    let out = xlat_in_kib(LIMIT_KIB, &["run", "exp.toml"], dir);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {err}", out.status);
    assert!(err.contains(wanted) && !err.contains("panicked"), "{err}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

/// Runs `exp.toml` in `dir` under [`LIMIT_KIB`] and asserts that it succeeds.
fn fits(dir: &Path) {
    let out = xlat_in_kib(LIMIT_KIB, &["run", "exp.toml", "-q"], dir);
    assert!(out.status.success(), "{:?}: {}", out.status, text(&out.stderr));
}

/// A TLB of 2^24 entries (the most an array may have) takes 496 MiB of host memory: it runs
/// under 976 MiB, and is refused up front, with the estimate, under 390 MiB; 2^25 entries are
/// an error naming the field.
#[test]
fn a_tlb_of_2_pow_24_entries_is_estimated_before_it_is_built() {
    let dir = tempfile::tempdir().unwrap();
    experiment(dir.path(), "entries = 16777216\nways = 4");
    fits(dir.path());
    let out = xlat_in_kib(400_000, &["run", "exp.toml"], dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {err}", out.status);
    let wanted = "machine[0]: cannot allocate 496.50MiB of host memory for machine `m`: 496MiB for its TLBs and caches, 512KiB for the frame state of its 16GiB of simulated memory (this process may use 390.62MiB)";
    assert!(err.contains(wanted), "{err}");
    experiment(dir.path(), "entries = 33554432\nways = 4");
    refused(dir.path(), "machine[0].entries: 33554432 entries exceed the 16777216 an array may have");
}

/// Mosaic TLBs, walk caches and the cycle model's caches count in the estimate too: each
/// too large for the host is refused before anything is built.
#[test]
fn mosaic_tlbs_and_caches_count_in_the_estimate() {
    let dir = tempfile::tempdir().unwrap();
    // 2^24 entries of arity 64: 76 bytes each and the replacement state, 1.36 GiB.
    experiment(dir.path(), "os = { memory = \"64MiB\", placement = \"iceberg\" }\n[[machine.mosaic]]\nname = \"mo\"\nentries = 16777216\nways = 4\narity = 64");
    refused(dir.path(), "machine[0]: cannot allocate 1.36GiB of host memory for machine `m`");
    // Three LRU cache levels of 2^26 lines each: 8 bytes of tag a line, 1.5 GiB.
    let level = |name: &str| format!("{{ name = \"{name}\", size = \"4GiB\", ways = 16, latency = 2 }}");
    let caches = [level("L1"), level("L2"), level("L3")].join(", ");
    experiment(dir.path(), &format!("os = {{ memory = \"64MiB\", page_table = \"radix\" }}\ntiming = {{ caches = [{caches}] }}"));
    refused(dir.path(), "machine[0]: cannot allocate 1.50GiB of host memory for machine `m`");
}

/// 1 PiB of memory: in 4 KiB frames, more than the OS model numbers (an error naming the
/// field); in 1 GiB frames, 2^20 frames whose state under eviction takes 23 MiB.
#[test]
fn a_petabyte_of_memory_is_an_error_or_runs_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    experiment(dir.path(), "os = { memory = \"1PiB\" }");
    refused(dir.path(), "machine[0].os.memory: 1PiB holds more than 2^32 - 2 frames");
    experiment(dir.path(), "os = { memory = \"1PiB\", page_size = \"1GiB\", eviction = \"lru\" }");
    fits(dir.path());
    // A workload over a footprint of 1 PiB touches only the pages it references.
    let big = "[[workload]]\nname = \"u\"\ntype = \"uniform\"\nfootprint = \"1PiB\"\nrefs = 20000\n\n[[machine]]\nname = \"m\"\npreset = \"single-tlb\"\n";
    std::fs::write(dir.path().join("exp.toml"), big).unwrap();
    fits(dir.path());
}

/// 10^12 references stream: nothing grows with the count, so under 976 MiB the run goes on
/// until interrupted, then writes its partial results.
#[test]
fn a_trillion_references_run_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let long = common::EXPERIMENT.replace("refs = 20000", "refs = 1_000_000_000_000");
    std::fs::write(dir.path().join("long.toml"), long).unwrap();
    let script = format!("ulimit -v {LIMIT_KIB} && exec '{}' run long.toml --out res -q", env!("CARGO_BIN_EXE_xlat"));
    let mut child = Command::new("sh").args(["-c", &script]).current_dir(dir.path()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    assert!(child.try_wait().unwrap().is_none(), "the run ended early");
    // `exec` made xlat the shell's process: the pid is xlat's.
    common::interrupt(&child);
    let status = common::wait_at_most(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("res/results.json")).unwrap()).unwrap();
    let refs = json["results"][0]["refs"].as_u64().unwrap();
    assert!(json["partial"] == true && refs > 1_000_000, "{refs} references");
}

/// A built-in workload's own arrays (a GUPS table of 2^36 words, 512 GiB) are allocated
/// fallibly: an error naming the workload and what it could not allocate, never an abort.
#[test]
fn a_workload_too_large_for_the_host_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let gups = "[[workload]]\nname = \"g\"\ntype = \"gups\"\nscale = \"tiny\"\nparams = { table_log2 = 36 }\n\n\
                [[machine]]\nname = \"m\"\npreset = \"single-tlb\"\n";
    std::fs::write(dir.path().join("exp.toml"), gups).unwrap();
    let out = xlat_in_kib(LIMIT_KIB, &["run", "exp.toml", "-q"], dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {err}", out.status);
    assert!(err.contains("cannot allocate 512GiB of host memory for the GUPS table") && !err.contains("panicked"), "{err}");
}

/// Uniform references over 1 PiB touch a new 2 MiB region each, and each region's page-table
/// leaf takes 2.5 KiB of host memory, which no up-front estimate bounds (it depends on the
/// addresses): the table's growth past the host's memory ends the run with an error naming
/// the workload and machine, not an abort.
#[test]
fn a_page_table_outgrowing_the_host_is_an_error_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let sparse = "[[workload]]\nname = \"u\"\ntype = \"uniform\"\nfootprint = \"1PiB\"\nrefs = 2_000_000\n\n[[machine]]\nname = \"m\"\npreset = \"single-tlb\"\n";
    std::fs::write(dir.path().join("exp.toml"), sparse).unwrap();
    let out = xlat_in_kib(LIMIT_KIB, &["run", "exp.toml", "-q"], dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {err}", out.status);
    assert!(err.contains("workload `u`: machine `m`: cannot allocate host memory for more of the page table when asid 0 touches"), "{err}");
}
