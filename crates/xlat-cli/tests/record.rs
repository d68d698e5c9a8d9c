//! Tests of `xlat trace record` on real Debian programs (sqlite3, sh) under Valgrind.
//!
//! They need valgrind, sqlite3 and a C compiler. `scripts/test` installs them and sets
//! `XLAT_REQUIRE_RECORD=1`, which turns their absence into a failure; otherwise the tests
//! that need them print a note and return.

mod common;

use common::text;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Rows enough to leave SQLite's start-up behind: B-tree inserts, an index build, a scan with
/// aggregates.
const QUERIES: &str = "CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);
BEGIN;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)
  INSERT INTO t(k, v) SELECT (x * 7919) % 1000, printf('row-%d', x) FROM c;
COMMIT;
CREATE INDEX tk ON t(k);
SELECT k, count(*), sum(length(v)) FROM t GROUP BY k ORDER BY 2 DESC, 1 LIMIT 3;
";

const LIMIT: u64 = 1_500_000;

/// The Valgrind tool is built once into this cache for all tests (concurrent first builds are
/// safe), not into the user's home.
fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("xlat-cache")
}

fn xlat(args: &[&str], dir: &Path, stdin: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xlat"));
    cmd.args(args).current_dir(dir).env("XDG_CACHE_HOME", cache_dir());
    if let Some(file) = stdin {
        cmd.stdin(std::fs::File::open(file).unwrap());
    }
    cmd.output().expect("xlat runs")
}

/// True when valgrind, sqlite3 and cc are installed. When they are not: a failure under
/// `XLAT_REQUIRE_RECORD=1`, else a printed note (the test then passes without checking).
fn tools_present(test: &str) -> bool {
    let missing: Vec<&str> = ["valgrind", "sqlite3", "cc"].into_iter().filter(|t| which::which(t).is_err()).collect();
    if missing.is_empty() {
        return true;
    }
    let what = missing.join(" ");
    assert!(
        std::env::var("XLAT_REQUIRE_RECORD").as_deref() != Ok("1"),
        "{test}: {what} missing; install with: apt-get install valgrind sqlite3 gcc"
    );
    eprintln!("note: {test} skipped: {what} not installed (apt-get install valgrind sqlite3 gcc)");
    false
}

/// Records `sqlite3 :memory:` running [`QUERIES`] into `dir/NAME`.
fn record_sqlite(dir: &Path, name: &str) -> Output {
    let queries = dir.join("queries.sql");
    std::fs::write(&queries, QUERIES).unwrap();
    let limit = LIMIT.to_string();
    xlat(&["trace", "record", "-q", "-o", name, "--limit", &limit, "--", "sqlite3", ":memory:"], dir, Some(&queries))
}

fn info_json(dir: &Path, file: &str) -> serde_json::Value {
    let out = xlat(&["trace", "info", file, "--json"], dir, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn records_sqlite_and_replays_the_trace() {
    if !tools_present("records_sqlite_and_replays_the_trace") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = record_sqlite(dir.path(), "sqlite.xlat");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info = info_json(dir.path(), "sqlite.xlat");
    assert_eq!(info["references"], LIMIT, "{info}");
    let (loads, stores) = (info["loads"].as_u64().unwrap(), info["stores"].as_u64().unwrap());
    assert_eq!((loads + stores, info["ifetches"].as_u64().unwrap()), (LIMIT, 0), "{info}");
    // Compiled code loads about twice as often as it stores.
    let load_share = loads as f64 / LIMIT as f64;
    assert!((0.5..0.85).contains(&load_share), "loads are {:.0}% of references", 100.0 * load_share);
    let instructions = info["instructions"].as_u64().unwrap();
    assert!(instructions > LIMIT && instructions < 5 * LIMIT, "{instructions} instructions");
    assert!(info["pages"].as_u64().unwrap() > 50, "{info}");

    let meta = &info["metadata"];
    let program = &meta["program"];
    assert_eq!(program["path"], which::which("sqlite3").unwrap().canonicalize().unwrap().display().to_string());
    assert_eq!(program["args"], serde_json::json!([":memory:"]));
    assert!(program["size"].as_u64().unwrap() > 10_000, "{program}");
    assert_eq!(program["xxh64"].as_str().unwrap().len(), 16, "{program}");
    assert_eq!((&meta["recording"]["stopped"], &meta["partial"]), (&"limit".into(), &false.into()), "{meta}");
    assert_eq!(meta["recorder"]["aslr"], "off", "{meta}");
    // The program's mappings reach the file as address-space events: its segments and
    // libraries at the start, then what sqlite3 maps and unmaps as it runs.
    let recording = &meta["recording"];
    let (maps, unmaps) = (info["map_events"].as_u64().unwrap(), info["unmap_events"].as_u64().unwrap());
    assert_eq!((&recording["maps"], &recording["unmaps"]), (&maps.into(), &unmaps.into()), "{info}");
    assert!(maps >= 10, "{info}");

    let experiment = "[[workload]]\nname = \"sqlite\"\ntype = \"trace\"\npath = \"sqlite.xlat\"\n\n\
                      [[machine]]\nname = \"tlb\"\npreset = \"single-tlb\"\nentries = 64\nways = 4\n";
    std::fs::write(dir.path().join("replay.toml"), experiment).unwrap();
    let run = xlat(&["run", "replay.toml", "--out", "res", "--quiet"], dir.path(), None);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let csv = std::fs::read_to_string(dir.path().join("res/results.csv")).unwrap();
    let row = csv.lines().nth(1).unwrap();
    let accesses: u64 = row.split(',').nth(8).unwrap().parse().unwrap();
    // One access per reference, plus one per reference that straddles a page boundary.
    assert!((LIMIT..LIMIT + LIMIT / 100).contains(&accesses), "{row}");
    // The replay applied the events, and the program touched only what it had mapped.
    let results: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("res/results.json")).unwrap()).unwrap();
    let space = &results["results"][0]["machines"][0]["os"]["address_space"];
    assert_eq!((&space["maps"], &space["unmaps"]), (&maps.into(), &unmaps.into()), "{space}");
    assert_eq!(space["faults_outside_mappings"], 0, "{space}");
}

/// With address-space randomization off, recording the same command twice gives the same
/// file, byte for byte (the header holds no time or process id).
#[test]
fn recordings_are_reproducible() {
    if !tools_present("recordings_are_reproducible") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.xlat", "b.xlat"] {
        let out = record_sqlite(dir.path(), name);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let (a, b) = (std::fs::read(dir.path().join("a.xlat")).unwrap(), std::fs::read(dir.path().join("b.xlat")).unwrap());
    assert!(a == b, "two recordings of the same command differ");
}

/// A failing program still gives a complete trace whose header keeps its exit status, and
/// xlat exits with code 3 (0 with `--allow-failure`), also for a death by a signal;
/// fetches are recorded on request, one instruction each.
#[test]
fn failing_program_is_recorded_with_its_status() {
    if !tools_present("failing_program_is_recorded_with_its_status") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = xlat(&["trace", "record", "--ifetch", "-o", "fail.xlat", "--", "sh", "-c", "exit 4"], dir.path(), None);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("error: ") && text(&out.stderr).contains("exited with status 4"), "{}", text(&out.stderr));
    let allowed = xlat(&["trace", "record", "--allow-failure", "-o", "allowed.xlat", "--", "sh", "-c", "exit 4"], dir.path(), None);
    assert!(allowed.status.success(), "{}", text(&allowed.stderr));
    assert!(text(&allowed.stderr).contains("note: ") && text(&allowed.stderr).contains("exited with status 4"), "{}", text(&allowed.stderr));
    let signalled = xlat(&["trace", "record", "-q", "-o", "killed.xlat", "--", "sh", "-c", "kill -SEGV $$"], dir.path(), None);
    assert_eq!(signalled.status.code(), Some(3), "{}", text(&signalled.stderr));
    assert!(text(&signalled.stderr).contains("killed by signal 11"), "{}", text(&signalled.stderr));
    let info = info_json(dir.path(), "killed.xlat");
    assert_eq!(info["metadata"]["recording"]["exit_status"], "killed by signal 11", "{info}");
    let info = info_json(dir.path(), "fail.xlat");
    assert_eq!(info["metadata"]["recording"]["exit_status"], "exited with status 4", "{info}");
    assert_eq!(
        (&info["metadata"]["recording"]["stopped"], &info["metadata"]["partial"]),
        (&"exit".into(), &false.into())
    );
    assert_eq!(info["ifetches"], info["instructions"], "{info}");
    // The tool counts every instruction up to the exit; the trace, those up to the last reference.
    let executed = info["metadata"]["recording"]["instructions_executed"].as_u64().unwrap();
    assert!(executed >= info["instructions"].as_u64().unwrap(), "{info}");
}

/// Ctrl-C (or SIGTERM) kills the program and leaves a valid trace marked partial, and no
/// temporary file; exit code 130. Also when the signal reaches the whole process group, as a
/// terminal's Ctrl-C does, and the program dies of it before xlat kills it.
#[test]
fn ctrl_c_keeps_a_partial_trace() {
    use std::os::unix::process::CommandExt;
    if !tools_present("ctrl_c_keeps_a_partial_trace") {
        return;
    }
    for (signal, group) in [("INT", false), ("TERM", false), ("INT", true)] {
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_xlat"))
            .args(["trace", "record", "-q", "-o", "loop.xlat", "--", "sh", "-c", "while :; do :; done"])
            .current_dir(dir.path())
            .env("XDG_CACHE_HOME", cache_dir())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        // Long enough to build the tool on a cold cache and record for a while.
        std::thread::sleep(std::time::Duration::from_millis(3000));
        // A negative pid signals the process group (xlat, Valgrind and the program).
        let target = if group { format!("-{}", child.id()) } else { child.id().to_string() };
        assert!(Command::new("kill").args([&format!("-{signal}"), "--", &target]).status().unwrap().success());
        let out = child.wait_with_output().unwrap();
        let case = format!("SIG{signal}{}", if group { " to the group" } else { "" });
        assert_eq!(out.status.code(), Some(130), "{case}: {:?} {}", out.status, text(&out.stderr));
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["loop.xlat"], "{case}");
        let info = info_json(dir.path(), "loop.xlat");
        assert!(info["references"].as_u64().unwrap() > 0, "{info}");
        assert_eq!(
            (&info["metadata"]["recording"]["stopped"], &info["metadata"]["partial"]),
            (&"interrupted".into(), &true.into())
        );
    }
}

/// The summary line counts the address-space events recorded beside the references, as does
/// the header: a real program (`ls`) has its mappings at the start and the libraries the
/// loader maps.
#[test]
fn the_summary_counts_address_space_events() {
    if !tools_present("the_summary_counts_address_space_events") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = xlat(&["trace", "record", "-o", "ls.xlat", "--", "ls", "/"], dir.path(), None);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let counts = |line: &str| -> Option<[u64; 3]> {
        let (_, rest) = line.split_once(" fetches) and ")?;
        let (events, rest) = rest.split_once(" address-space events (")?;
        let (maps, rest) = rest.split_once(" maps, ")?;
        let (unmaps, _) = rest.split_once(" unmaps) of ")?;
        Some([events.parse().ok()?, maps.parse().ok()?, unmaps.parse().ok()?])
    };
    let [events, maps, unmaps] = err.lines().find_map(counts).unwrap_or_else(|| panic!("no event counts in {err}"));
    assert!(maps >= 10 && events == maps + unmaps, "{err}");
    let recording = &info_json(dir.path(), "ls.xlat")["metadata"]["recording"];
    assert_eq!((&recording["maps"], &recording["unmaps"]), (&maps.into(), &unmaps.into()), "{recording}");
}

/// Usage and lookup errors need no Valgrind: they come before anything runs.
#[test]
fn record_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let missing = xlat(&["trace", "record", "-o", "x.xlat", "--", "no-such-program-xlat"], dir.path(), None);
    assert_eq!(missing.status.code(), Some(1));
    let err = text(&missing.stderr);
    assert!(err.contains("no-such-program-xlat: program not found"), "{err}");
    assert!(!dir.path().join("x.xlat").exists());
    for args in [
        &["trace", "record", "--limit", "0", "--", "true"][..],
        &["trace", "record", "--bogus", "--", "true"],
        &["trace", "record"],
    ] {
        let out = xlat(args, dir.path(), None);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "errors leave no file");
}

/// Compiles the C program `source` into `dir/name`.
fn compile(dir: &Path, name: &str, source: &str) {
    std::fs::write(dir.join(format!("{name}.c")), source).unwrap();
    let cc = Command::new("cc").args(["-O1", "-o", name, &format!("{name}.c")]).current_dir(dir).status().unwrap();
    assert!(cc.success(), "compiling {name}.c");
}

/// A program with a function called three times, each call storing 4096 words.
const PHASES: &str = r#"
#include <stdlib.h>
static volatile long sink;
__attribute__((noinline)) void phase(long *a, long n) { for (long i = 0; i < n; i++) a[i] = i; sink = a[n - 1]; }
int main(void) { long *a = malloc(8 * 4096); for (int r = 0; r < 3; r++) phase(a, 4096); return 0; }
"#;

/// `--start-at phase:2 --stop-at phase:3` records the second call alone, the header giving
/// the region; a name the program lacks, or an entry it never makes, is an error leaving no
/// file.
#[test]
fn start_and_stop_points_cut_the_recording_to_a_region() {
    if !tools_present("start_and_stop_points_cut_the_recording_to_a_region") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    compile(dir.path(), "phases", PHASES);
    let out = xlat(&["trace", "record", "--start-at", "phase:2", "--stop-at", "phase:3", "-o", "roi.xlat", "--", "./phases"], dir.path(), None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("after skipping"), "{}", text(&out.stderr));
    let info = info_json(dir.path(), "roi.xlat");
    let stores = info["stores"].as_u64().unwrap();
    assert!((4096..4110).contains(&stores) && info["loads"].as_u64().unwrap() < 10, "{info}");
    let recording = &info["metadata"]["recording"];
    assert_eq!(recording["stopped"], "stop-at", "{info}");
    let region = &recording["region"];
    assert_eq!((&region["start"], &region["stop"], &region["stop_reached"]), (&"phase:2".into(), &"phase:3".into(), &true.into()), "{info}");
    // Before the second call: the program's start-up and the first call's 4096 stores.
    assert!(region["references_before_start"].as_u64().unwrap() > 4096, "{info}");
    assert!(region["instructions_before_start"].as_u64().unwrap() > 4096 * 2, "{info}");
    for (point, says) in [("nothing_named_so", "has no function `nothing_named_so`"), ("phase:4", "never reached it")] {
        let out = xlat(&["trace", "record", "--start-at", point, "-o", "bad.xlat", "--", "./phases"], dir.path(), None);
        assert_eq!(out.status.code(), Some(1), "{point}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(says), "{point}: {}", text(&out.stderr));
        assert!(!dir.path().join("bad.xlat").exists(), "{point}");
    }
}

/// A program killed from outside (SIGKILL, which Valgrind cannot catch: the tool dies with
/// it, sending no end record) still gives a complete trace of what it did, its status in the
/// header, and exit code 3.
#[test]
fn a_program_killed_by_sigkill_still_gives_a_complete_trace() {
    if !tools_present("a_program_killed_by_sigkill_still_gives_a_complete_trace") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = xlat(&["trace", "record", "-q", "-o", "k.xlat", "--", "sh", "-c", "kill -KILL $$"], dir.path(), None);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("killed by signal 9"), "{err}");
    let info = info_json(dir.path(), "k.xlat");
    assert!(info["references"].as_u64().unwrap() > 1000, "{info}");
    assert_eq!(info["metadata"]["recording"]["exit_status"], "killed by signal 9", "{info}");
    assert_eq!(common::listing(dir.path()), ["k.xlat"]);
}

/// A program whose parent stores 4096 words and whose forked child stores 200,000 before the
/// parent, waiting for it, exits.
const FORKS: &str = r#"
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile long sink;
int main(void) {
    long *a = malloc(8 * 200000);
    pid_t child = fork();
    long n = child == 0 ? 200000 : 4096;
    for (long i = 0; i < n; i++) a[i] = i;
    sink = a[n - 1];
    if (child == 0) _exit(0);
    waitpid(child, 0, 0);
    return 0;
}
"#;

/// A program that forks: the parent is recorded, the child (running on under Valgrind) is
/// not, and the recording ends with the parent, complete.
#[test]
fn a_forking_program_records_the_parent_alone() {
    if !tools_present("a_forking_program_records_the_parent_alone") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    compile(dir.path(), "forks", FORKS);
    let out = xlat(&["trace", "record", "-q", "-o", "f.xlat", "--", "./forks"], dir.path(), None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info = info_json(dir.path(), "f.xlat");
    let stores = info["stores"].as_u64().unwrap();
    // The parent's 4096 and the start-up's few thousand; the child's 200,000 are not there.
    assert!((4096..100_000).contains(&stores), "{stores} stores: {info}");
    assert_eq!((&info["metadata"]["recording"]["stopped"], &info["metadata"]["partial"]), (&"exit".into(), &false.into()), "{info}");
}

/// xlat itself killed (SIGKILL) while recording: no trace appears under the output's name
/// (its temporary file may stay), and the recorded program does not run on for ever: the
/// tool's next write into the closed pipe ends it.
#[test]
fn killing_xlat_while_recording_leaves_no_trace_and_no_program() {
    use std::os::unix::process::CommandExt;
    if !tools_present("killing_xlat_while_recording_leaves_no_trace_and_no_program") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["trace", "record", "-q", "-o", "loop.xlat", "--", "sh", "-c", "while :; do :; done"])
        .current_dir(dir.path())
        .env("XDG_CACHE_HOME", cache_dir())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    // Long enough to build the tool on a cold cache and record for a while.
    std::thread::sleep(std::time::Duration::from_millis(3000));
    let group = child.id().to_string();
    child.kill().unwrap();
    child.wait().unwrap();
    let started = std::time::Instant::now();
    let alive = || Command::new("pgrep").args(["-g", &group]).output().unwrap().status.success();
    while alive() && started.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let survived = alive();
    // Whatever the outcome, nothing of the test keeps running.
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{group}")]).stderr(std::process::Stdio::null()).status();
    assert!(!survived, "the recorded program outlived xlat");
    assert!(!dir.path().join("loop.xlat").exists());
}
