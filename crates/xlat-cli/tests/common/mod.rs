//! Helpers shared by the tests of the `xlat` binary (`cli.rs`, `faults.rs`, `record.rs`).

// Each test binary includes this module and uses a different part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

/// Runs xlat with `args` in `dir` and collects its output.
pub fn xlat(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xlat")).args(args).current_dir(dir).output().expect("xlat runs")
}

/// Bytes of a command's output as text, for messages and `contains`.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A small experiment: one uniform workload of 20,000 references on one 64-entry TLB.
pub const EXPERIMENT: &str = r#"
[[workload]]
name = "uniform"
type = "uniform"
footprint = "4MiB"
refs = 20000

[[machine]]
name = "m"
preset = "single-tlb"
entries = 64
ways = 4
"#;

/// Waits for `child` at most `limit`, killing it if it is still running then.
pub fn wait_at_most(child: &mut Child, limit: Duration) -> ExitStatus {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    panic!("still running after {limit:?}");
}

/// Sends SIGINT to `child`.
pub fn interrupt(child: &Child) {
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
}

/// The names of the entries of `dir`, sorted.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

/// Runs xlat with `args` in `dir` under an address-space limit of `kib` KiB (`ulimit -v`),
/// so that a test can show what happens where memory runs out without using it.
pub fn xlat_in_kib(kib: u64, args: &[&str], dir: &Path) -> Output {
    let script = format!("ulimit -v {kib} && exec '{}' \"$@\"", env!("CARGO_BIN_EXE_xlat"));
    Command::new("sh").args(["-c", &script, "xlat"]).args(args).current_dir(dir).output().unwrap()
}
