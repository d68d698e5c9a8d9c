//! Tests of the `xlat` binary: help, exit codes, results files, presets.

mod common;

use common::{interrupt, text, wait_at_most, xlat, EXPERIMENT};
use std::path::Path;
use std::process::{Command, Output};

#[test]
fn help_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let commands = [
        &["--help"][..],
        &["run", "--help"],
        &["trace", "--help"],
        &["trace", "record", "--help"],
        &["bench", "--help"],
        &["presets", "--help"],
        &["hash", "vectors", "--help"],
        &["plot", "--help"],
        &["workload", "--help"],
    ];
    for args in commands {
        let out = xlat(args, dir.path());
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("Usage"), "{args:?}");
    }
}

#[test]
fn run_writes_results_and_prints_a_table() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), EXPERIMENT).unwrap();
    let out = xlat(&["run", "exp.toml", "--out", "res"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("workload uniform: 20,000 references"), "{stdout}");
    let csv = std::fs::read_to_string(dir.path().join("res/results.csv")).unwrap();
    assert!(csv.starts_with("workload,config,level,side,tlb,entries,ways,arity,accesses,hits,misses"), "{csv}");
    assert!(csv.lines().nth(1).unwrap().starts_with("uniform,m,TLB,unified,vanilla,64,4,1,20000,"), "{csv}");
    assert!(dir.path().join("res/results.json").exists());
}

/// A timed machine's line says where its cycles went, with what `timing.csv` holds.
#[test]
fn a_timed_machine_prints_its_cycles_and_writes_timing_csv() {
    let dir = tempfile::tempdir().unwrap();
    let timed = EXPERIMENT.to_string() + "os = { memory = \"64MiB\", page_table = \"ecpt\" }\ntiming = {}\n";
    std::fs::write(dir.path().join("exp.toml"), timed).unwrap();
    let out = xlat(&["run", "exp.toml", "--out", "res"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let timing = std::fs::read_to_string(dir.path().join("res/timing.csv")).unwrap();
    let row: Vec<&str> = timing.lines().nth(1).unwrap().split(',').collect();
    let cycles: f64 = row[8].parse().unwrap();
    let line = stdout.lines().find(|l| l.contains("walks of")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.starts_with("  m "), "{line}");
    assert!(line.contains("960 page-table frames"), "ECPT's first tables: {line}");
    let number = |before: &str| -> f64 {
        let head = &line[..line.find(before).unwrap()];
        head.rsplit(' ').next().unwrap().replace(',', "").parse().unwrap()
    };
    assert_eq!(number(" cycles,"), cycles.round(), "{line}");
    assert_eq!(number(" walks of"), row[2].parse::<f64>().unwrap(), "{line}");
}

/// Under transparent huge pages a machine's line says how many of its pages are 2 MiB ones,
/// as `results.json`'s `os.thp` counts them.
#[test]
fn a_thp_machine_prints_its_huge_pages() {
    let dir = tempfile::tempdir().unwrap();
    let thp = EXPERIMENT.to_string() + "os = { memory = \"64MiB\", placement = \"sequential\", thp = \"always\" }\n";
    std::fs::write(dir.path().join("exp.toml"), thp).unwrap();
    let out = xlat(&["run", "exp.toml", "--out", "res"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("res/results.json")).unwrap()).unwrap();
    let huge = json["results"][0]["machines"][0]["os"]["thp"]["huge_pages"].as_u64().unwrap();
    assert!(huge >= 2, "4 MiB of uniform references take at least two huge pages");
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&format!("pages resident at the end ({huge} of them 2 MiB, 0 collapsed by khugepaged)")), "{stdout}");
}

#[test]
fn plots_are_drawn_next_to_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let experiment = format!(
        "{EXPERIMENT}\n[[plot]]\nfile = \"misses.png\"\nkind = \"bars\"\nx = \"workload\"\ny = [\"misses\", \"hits\"]\nseries = \"config\"\n\n\
         [[plot]]\nfile = \"lines.png\"\nkind = \"lines\"\nx = \"ways\"\ny = [\"misses\"]\nx_log2 = true\n"
    );
    std::fs::write(dir.path().join("exp.toml"), experiment).unwrap();
    let out = xlat(&["run", "exp.toml", "--out", "res", "-q"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    for file in ["misses.png", "lines.png"] {
        let png = std::fs::read(dir.path().join("res").join(file)).unwrap();
        assert!(png.starts_with(b"\x89PNG") && png.len() > 5000, "{file}: {} bytes", png.len());
    }
    let leftovers = std::fs::read_dir(dir.path().join("res")).unwrap().count();
    assert_eq!(leftovers, 4, "results.csv, results.json and two plots, no temporary files");
    let bad = EXPERIMENT.to_string() + "\n[[plot]]\nfile = \"p.png\"\nkind = \"lines\"\nx = \"colour\"\ny = [\"misses\"]\n";
    std::fs::write(dir.path().join("bad.toml"), bad).unwrap();
    let out = xlat(&["run", "bad.toml"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("plot[0].x") && text(&out.stderr).contains("`colour` is not a column"), "{}", text(&out.stderr));
}

#[test]
fn hash_vectors_are_written_and_bad_geometry_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let out = xlat(&["hash", "vectors", "--out", "v", "--keys", "100"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let vectors = std::fs::read_to_string(dir.path().join("v/hash_vectors.txt")).unwrap();
    assert!(vectors.lines().count() > 100);
    let out = xlat(&["hash", "vectors", "--out", "w", "--front", "60"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("exceeds 64 frames"), "{}", text(&out.stderr));
    // A count beyond the limit is a usage error, not an attempt to allocate it.
    let out = xlat(&["hash", "vectors", "--out", "w", "--keys", "100000000000"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--keys"), "{}", text(&out.stderr));
    std::fs::write(dir.path().join("afile"), b"").unwrap();
    let out = xlat(&["hash", "vectors", "--out", "afile"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("afile: is not a directory"), "{}", text(&out.stderr));
}

#[test]
fn bad_configuration_exits_1_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.toml"), EXPERIMENT.replace("ways = 4", "ways = 5")).unwrap();
    let out = xlat(&["run", "bad.toml"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("bad.toml") && err.contains("machine[0].ways") && err.contains("preset"), "{err}");
    let missing = xlat(&["run", "missing.toml"], dir.path());
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("missing.toml"));
}

#[test]
fn syntax_errors_give_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.toml"), "[[workload]\nname = 1\n").unwrap();
    let out = xlat(&["run", "broken.toml"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("broken.toml") && err.contains("line 1"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(xlat(&["frobnicate"], dir.path()).status.code(), Some(2));
    assert_eq!(xlat(&["run", "--no-such-flag"], dir.path()).status.code(), Some(2));
}

#[test]
fn printed_presets_are_valid_configurations() {
    let dir = tempfile::tempdir().unwrap();
    let list = text(&xlat(&["presets"], dir.path()).stdout);
    for name in list.lines() {
        let out = xlat(&["presets", name], dir.path());
        assert!(out.status.success());
        let machine = text(&out.stdout);
        let workload = "[[workload]]\nname = \"w\"\ntype = \"sequential\"\nfootprint = \"64KiB\"\nrefs = 100\n";
        std::fs::write(dir.path().join("p.toml"), format!("{workload}\n{machine}")).unwrap();
        let run = xlat(&["run", "p.toml", "--quiet"], dir.path());
        assert!(run.status.success(), "preset {name}: {}\n{machine}", text(&run.stderr));
    }
}

#[test]
fn ctrl_c_writes_partial_results_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let long = EXPERIMENT.replace("refs = 20000", "refs = 100_000_000_000");
    std::fs::write(dir.path().join("long.toml"), long).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["run", "long.toml", "--out", "res", "--quiet"])
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("res/results.json")).unwrap()).unwrap();
    assert_eq!(json["partial"], true);
    let refs = json["results"][0]["refs"].as_u64().unwrap();
    assert!(refs > 0 && refs < 100_000_000_000, "{refs}");
    let csv = std::fs::read_to_string(dir.path().join("res/results.csv")).unwrap();
    assert!(csv.lines().nth(1).unwrap().ends_with(",true"), "{csv}");
}

#[test]
fn ctrl_c_stops_a_run_waiting_for_its_input() {
    let dir = tempfile::tempdir().unwrap();
    // A FIFO nobody writes to: opening it blocks for ever.
    assert!(Command::new("mkfifo").arg(dir.path().join("t.lackey")).status().unwrap().success());
    let experiment = EXPERIMENT.replace("type = \"uniform\"\nfootprint = \"4MiB\"\nrefs = 20000", "type = \"trace\"\npath = \"t.lackey\"");
    std::fs::write(dir.path().join("fifo.toml"), experiment).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["run", "fifo.toml", "--out", "res", "--quiet"])
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let status = wait_at_most(&mut child, std::time::Duration::from_secs(10));
    assert_eq!(status.code(), Some(130));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("res/results.json")).unwrap()).unwrap();
    assert_eq!((&json["partial"], &json["results"][0]["refs"]), (&true.into(), &0.into()), "{json}");
    assert!(json["results"][0]["input"]["path"].as_str().unwrap().ends_with("t.lackey"), "{json}");
}

#[test]
fn ctrl_c_stops_bench_after_the_current_benchmark() {
    use std::io::{BufRead, Read};
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["bench", "--filter", "tlb1024x4-uniform", "--refs", "20000000"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = String::new();
    stdout.read_line(&mut lines).unwrap();
    // The second of three benchmarks is running: it is measured, the third is not run.
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    stdout.read_to_string(&mut lines).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("stopping after the current benchmark") && err.contains("2 benchmarks measured"), "{err}");
    let names: Vec<_> = lines.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(names, ["tlb1024x4-uniform-256MiB", "tlb1024x4-uniform-16MiB"], "{lines}");
}

#[test]
fn bench_repeats_rounds_and_reports_medians() {
    let dir = tempfile::tempdir().unwrap();
    let out = xlat(&["bench", "--json", "--filter", "uniform-2MiB", "--refs", "50000", "--repeat", "3"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let [bench] = json.as_array().unwrap().as_slice() else { panic!("one benchmark: {json}") };
    let mut runs: Vec<f64> = bench["runs_refs_per_second"].as_array().unwrap().iter().map(|r| r.as_f64().unwrap()).collect();
    runs.sort_by(f64::total_cmp);
    assert_eq!((runs.len(), bench["refs_per_second"].as_f64()), (3, Some(runs[1])), "{json}");
    assert_eq!(bench["refs"], 50000, "{json}");
    let out = xlat(&["bench", "--filter", "uniform-2MiB", "--refs", "50000", "--repeat", "2"], dir.path());
    let table = text(&out.stdout);
    assert_eq!(table.lines().count(), 1, "{table}");
    assert!(table.starts_with("tlb1024x4-uniform-2MiB") && table.contains("M refs/s  (median of 2 runs, "), "{table}");
}

#[test]
fn ctrl_c_in_a_round_prints_the_medians_measured_once_each() {
    let dir = tempfile::tempdir().unwrap();
    // A round of the three benchmarks takes over a second: this comes in the first.
    let out = interrupted_after(&["bench", "--filter", "tlb1024x4-uniform", "--refs", "50000000", "--repeat", "3"], dir.path(), std::time::Duration::from_millis(300));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let stdout = text(&out.stdout);
    let names: Vec<_> = stdout.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    let all = ["tlb1024x4-uniform-256MiB", "tlb1024x4-uniform-16MiB", "tlb1024x4-uniform-2MiB"];
    assert!(!names.is_empty() && names[..] == all[..names.len()], "each measured benchmark once, in order: {stdout}");
    assert!(err.contains("interrupted in round 1 of 3"), "{err}");
    assert_eq!(err.contains(&format!("{} benchmarks were not run", 3 - names.len())), names.len() < 3, "{err}");
}

#[test]
fn ctrl_c_stops_a_command_that_does_not_poll_at_once_without_partial_files() {
    let dir = tempfile::tempdir().unwrap();
    // Writing a million keys' vectors takes about a second.
    let out = interrupted_after(&["hash", "vectors", "--keys", "1000000", "--out", "v"], dir.path(), std::time::Duration::from_millis(100));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted: exiting at once; outputs not complete were not written"), "{err}");
    let partial: Vec<_> = std::fs::read_dir(dir.path().join("v")).into_iter().flatten().flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("partial")).collect();
    assert!(partial.is_empty(), "{partial:?}");
}

#[test]
fn a_second_interrupt_removes_the_scratch_directory_of_bench() {
    let (dir, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // native-read writes its trace (here for ever) into a directory of its own under TMPDIR.
    let child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["bench", "--filter", "native-read", "--refs", "1000000000000"])
        .env("TMPDIR", tmp.path())
        .current_dir(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1, "the scratch directory is there");
    interrupt(&child);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Runs xlat with `args` in `dir`, sends it SIGINT after `after`, and waits for it.
fn interrupted_after(args: &[&str], dir: &Path, after: std::time::Duration) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    interrupt(&child);
    child.wait_with_output().unwrap()
}

#[test]
fn a_second_interrupt_soon_after_the_first_is_the_same_one() {
    let dir = tempfile::tempdir().unwrap();
    // bench finishes the benchmark it is in (here some seconds), so it is still running when
    // the second signal comes.
    let child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["bench", "--filter", "tlb1024x4-uniform-2MiB", "--refs", "100000000"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // As `timeout -s INT` does: to xlat, then to its process group.
    interrupt(&child);
    std::thread::sleep(std::time::Duration::from_millis(100));
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(!err.contains("interrupted again"), "{err}");
    assert!(text(&out.stdout).starts_with("tlb1024x4-uniform-2MiB "), "measured all the same: {}", text(&out.stdout));
}

#[test]
fn a_later_second_interrupt_exits_at_once_saying_nothing_was_written() {
    let dir = tempfile::tempdir().unwrap();
    // bench finishes the benchmark it is in, which here lasts for ever.
    let child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["bench", "--json", "--filter", "tlb1024x4-uniform-2MiB", "--refs", "1000000000000"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    interrupt(&child);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted again: exiting at once; no results were written"), "{err}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

/// `xlat trace convert - out.xlat` in `dir`, reading Lackey text from the pipe returned.
fn convert_from_stdin(dir: &Path) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["trace", "convert", "-", "out.xlat"])
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    (child, stdin)
}

#[test]
fn a_conversion_waiting_on_its_input_stops_at_the_first_interrupt_leaving_no_temporary_file() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    // The converter waits on a standard input that stays open, its output's temporary file
    // created: the input is read on a helper thread, so the first interrupt ends it. (The
    // forced exit of a command that does not stop, which deletes such files itself, is
    // tested with `hash vectors` and `bench` above.)
    let (child, mut stdin) = convert_from_stdin(dir.path());
    stdin.write_all(b"I  0400d7d4,8\n L 7ff000398,8\n").unwrap();
    let listing = || std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect::<Vec<_>>();
    let started = std::time::Instant::now();
    while !listing().iter().any(|name| name.starts_with(".xlat-partial-")) {
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "no temporary file appeared: {:?}", listing());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted: nothing was written"), "{err}");
    assert!(listing().is_empty(), "left behind: {:?}", listing());
}

#[test]
fn an_interrupted_run_warns_of_plots_it_cannot_draw_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let long = EXPERIMENT.replace("name = \"uniform\"", "name = \"a\"").replace("refs = 20000", "refs = 100_000_000_000");
    let b = "[[workload]]\nname = \"b\"\ntype = \"uniform\"\nfootprint = \"4MiB\"\nrefs = 1000\n";
    let plot = "[[plot]]\nfile = \"b.png\"\nkind = \"bars\"\nx = \"workload\"\ny = [\"misses\"]\nonly = { workload = \"b\" }\n";
    // The interrupt comes during `a`: `b`, after it, is not run, and its plot has no rows.
    std::fs::write(dir.path().join("ab.toml"), format!("{long}\n{b}\n{plot}")).unwrap();
    // An earlier run's drawing must not pass for this run's.
    std::fs::create_dir(dir.path().join("res")).unwrap();
    std::fs::write(dir.path().join("res/b.png"), b"old").unwrap();
    let out = interrupted_after(&["run", "ab.toml", "--out", "res", "--quiet"], dir.path(), std::time::Duration::from_millis(1500));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("warning: drawing b.png: no row of results.csv matches `only`"), "{err}");
    assert!(!dir.path().join("res/b.png").exists());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("res/results.json")).unwrap()).unwrap();
    assert_eq!(json["partial"], true);
}

/// Records `/bin/true` with Valgrind Lackey (Valgrind is on every machine of this project's
/// kind), so the trace tests run on the references of a real program.
fn lackey_trace(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("true.lackey");
    let status = Command::new("valgrind")
        .args(["--tool=lackey", "--trace-mem=yes", &format!("--log-file={}", path.display()), "/bin/true"])
        .status()
        .expect("valgrind is required for the trace tests (apt-get install valgrind)");
    assert!(status.success());
    path
}

#[test]
fn real_program_trace_converts_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    lackey_trace(dir.path());
    let info = xlat(&["trace", "info", "true.lackey", "--json"], dir.path());
    assert!(info.status.success(), "{}", text(&info.stderr));
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    let references = info["references"].as_u64().unwrap();
    let instructions = info["instructions"].as_u64().unwrap();
    assert!(references > 10_000 && instructions > 10_000 && info["pages"].as_u64().unwrap() > 10, "{info}");

    let convert = xlat(&["trace", "convert", "true.lackey", "true.xlat"], dir.path());
    assert!(convert.status.success(), "{}", text(&convert.stderr));
    let mut native: serde_json::Value =
        serde_json::from_slice(&xlat(&["trace", "info", "true.xlat", "--json"], dir.path()).stdout).unwrap();
    let metadata = native.as_object_mut().unwrap().remove("metadata").expect("a native trace shows its header");
    assert!(metadata["created_by"].as_str().unwrap().contains("trace convert"), "{metadata}");
    assert_eq!(native, info, "native conversion preserves the summary");

    let champsim = xlat(&["trace", "convert", "true.xlat", "true.champsim.xz", "--lossy"], dir.path());
    assert!(champsim.status.success(), "{}", text(&champsim.stderr));
    let strict = xlat(&["trace", "convert", "true.xlat", "strict.champsim"], dir.path());
    assert_eq!(strict.status.code(), Some(1));
    assert!(text(&strict.stderr).contains("reference"), "{}", text(&strict.stderr));
    assert!(!dir.path().join("strict.champsim").exists(), "a failed conversion leaves no file");

    let experiment = "[[workload]]\nname = \"true\"\ntype = \"trace\"\npath = \"true.xlat\"\n\n\
                      [[machine]]\nname = \"sky\"\npreset = \"skylake-like\"\n";
    std::fs::write(dir.path().join("replay.toml"), experiment).unwrap();
    let run = xlat(&["run", "replay.toml", "--out", "res", "--quiet"], dir.path());
    assert!(run.status.success(), "{}", text(&run.stderr));
    let csv = std::fs::read_to_string(dir.path().join("res/results.csv")).unwrap();
    let instr_row = csv.lines().find(|l| l.starts_with("true,sky,L1,instr,")).expect("an instruction-side row");
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let fields: Vec<&str> = instr_row.split(',').collect();
    let field = |name: &str| fields[header.iter().position(|h| *h == name).unwrap()];
    // One I-TLB access per fetch, plus one for each fetch that straddles a page boundary.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("res/results.json")).unwrap()).unwrap();
    let straddles = json["results"][0]["machines"][0]["straddles"].as_u64().unwrap();
    // The trace is named absolutely, so the results still point at it when read elsewhere.
    let recorded = json["results"][0]["input"]["path"].as_str().unwrap();
    assert!(Path::new(recorded).is_absolute(), "{json}");
    assert_eq!(Path::new(recorded).canonicalize().unwrap(), dir.path().join("true.xlat").canonicalize().unwrap());
    // The format was detected; the resolved experiment records it, so that it replays alike.
    assert_eq!(json["experiment"]["workloads"][0]["source"]["format"], "native", "{json}");
    let accesses = field("accesses").parse::<u64>().unwrap();
    assert!(accesses >= instructions && accesses - instructions <= straddles, "{instr_row}, {straddles} straddles");
    assert!(!field("mpki").is_empty(), "MPKI is known for a Lackey trace: {instr_row}");
}

#[test]
fn trace_errors_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.lackey"), "I  0400000,3\n L 0x1000,8\n S zz12,4\n").unwrap();
    let out = xlat(&["trace", "info", "bad.lackey", "--format", "lackey"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("bad.lackey:3"), "{err}");
    let unknown = xlat(&["trace", "info", "bad.lackey", "--format", "pin"], dir.path());
    assert_eq!(unknown.status.code(), Some(2), "a bad flag value is a usage error");
    assert!(text(&unknown.stderr).contains("unknown format"));
}

#[test]
fn trace_convert_refuses_outputs_it_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.lackey"), "I  0400000,4\n L 7ff000398,8\n").unwrap();
    // A native trace is compressed inside: `.xlat.zst` must not silently become ChampSim.
    for args in [&["trace", "convert", "in.lackey", "out.xlat.zst", "--lossy"][..], &["trace", "convert", "in.lackey", "out.xlat.gz"]] {
        let (out, ext) = (args[3], &args[3][9..]);
        let got = xlat(args, dir.path());
        assert_eq!(got.status.code(), Some(1), "{args:?}");
        let want = format!("{out}: native traces are already compressed inside; name the file without .{ext}");
        assert!(text(&got.stderr).contains(&want), "{}", text(&got.stderr));
        assert!(!dir.path().join(out).exists());
    }
    // `-` is not standard output, and must not become a file named `-`.
    for args in [&["trace", "convert", "in.lackey", "-", "--to", "lackey"][..], &["trace", "convert", "in.lackey", "-"]] {
        let got = xlat(args, dir.path());
        assert_eq!(got.status.code(), Some(1), "{args:?}");
        assert!(text(&got.stderr).contains("cannot be written to standard output"), "{}", text(&got.stderr));
        assert!(!dir.path().join("-").exists(), "{args:?}");
    }
}

#[test]
fn ctrl_c_stops_a_trace_command() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["trace", "info", "-"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // An endless Lackey stream until the reader goes away (the write then fails).
    let feeder = std::thread::spawn(move || {
        let chunk = "I  0400000,4\n L 1ffefff000,8\n".repeat(4096);
        while stdin.write_all(chunk.as_bytes()).is_ok() {}
    });
    std::thread::sleep(std::time::Duration::from_millis(1000));
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("interrupted"));
}

/// Runs xlat with `args` in `dir`, where `p` is a FIFO, sends it SIGTERM after half a second
/// and expects it to stop at that first signal, with exit code 130, leaving only `p`.
fn stops_at_the_first_sigterm(args: &[&str], dir: &Path) {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let status = wait_at_most(&mut child, std::time::Duration::from_secs(10));
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{args:?}: {err}");
    assert!(err.contains("interrupted: nothing was written"), "{args:?}: {err}");
    let left: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["p"], "{args:?} left files behind");
}

#[test]
fn a_signal_stops_trace_commands_waiting_for_their_input() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("p");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // Nobody writes to the FIFO: opening it blocks.
    for args in [
        &["trace", "info", "p"][..],
        &["trace", "info", "p", "--format", "lackey"],
        &["trace", "convert", "p", "out.xlat"],
        &["trace", "convert", "p", "out.lackey", "--from", "lackey"],
    ] {
        stops_at_the_first_sigterm(args, dir.path());
    }
    // A writer sends one record and falls silent: reading blocks, the conversion's output
    // already being written to a temporary file.
    let mut writer = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).unwrap();
    std::io::Write::write_all(&mut writer, b"I  0400000,4\n").unwrap();
    for args in [&["trace", "info", "p", "--format", "lackey"][..], &["trace", "convert", "p", "out.xlat", "--from", "lackey"]] {
        stops_at_the_first_sigterm(args, dir.path());
    }
}

/// A FIFO can be read once: format detection must not consume what the reader needs. Both
/// without a telling name (taken as Lackey, as standard input is) and with one.
#[test]
fn a_fifo_is_read_whole_without_a_format_given() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["p", "p.lackey"] {
        let fifo = dir.path().join(name);
        assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        // 3,000 references: far more than the 4 KiB a content check would read.
        // The writer's error is not checked: a reader that closes early breaks its pipe.
        std::thread::spawn(move || std::fs::write(&fifo, "I  0400000,4\n L 1ffefff000,8\n S 1ffefff008,8\n".repeat(1000)));
        let mut child = Command::new(env!("CARGO_BIN_EXE_xlat"))
            .args(["trace", "info", name, "--json"])
            .current_dir(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A reader that reopens the FIFO after the writer left would wait for ever.
        let status = wait_at_most(&mut child, std::time::Duration::from_secs(20));
        let out = child.wait_with_output().unwrap();
        assert!(status.success(), "{name}: {}", text(&out.stderr));
        let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(info["references"], 3000, "{name}: {info}");
    }
}

#[test]
fn sigterm_and_sighup_stop_a_conversion_leaving_no_temporary_file() {
    use std::io::Write;
    // Under `nohup` the tests' own SIGHUP is ignored, xlat inherits that and keeps it so by
    // design (`sighup_stays_ignored_under_nohup`): SIGHUP is then not for this test.
    let hup = if sighup_ignored_here() {
        eprintln!("SIGHUP is ignored in this test process (run under nohup?): its case is skipped");
        None
    } else {
        Some("HUP")
    };
    for signal in std::iter::once("TERM").chain(hup) {
        let dir = tempfile::tempdir().unwrap();
        let (child, mut stdin) = convert_from_stdin(dir.path());
        let feeder = std::thread::spawn(move || {
            let chunk = "I  0400000,4\n L 1ffefff000,8\n".repeat(4096);
            while stdin.write_all(chunk.as_bytes()).is_ok() {}
        });
        std::thread::sleep(std::time::Duration::from_millis(1000));
        assert!(Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap().success());
        let out = child.wait_with_output().unwrap();
        feeder.join().unwrap();
        assert_eq!(out.status.code(), Some(130), "SIG{signal}: {:?} {}", out.status, text(&out.stderr));
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "SIG{signal} left {left:?}");
    }
}

/// True when this process ignores SIGHUP (its `SigIgn` mask in /proc/self/status).
fn sighup_ignored_here() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:")).and_then(|m| u64::from_str_radix(m.trim(), 16).ok());
    mask.is_some_and(|m| m & 1 == 1)
}

#[test]
fn sighup_stays_ignored_under_nohup() {
    let dir = tempfile::tempdir().unwrap();
    let long = EXPERIMENT.replace("refs = 20000", "refs = 100_000_000_000");
    std::fs::write(dir.path().join("long.toml"), long).unwrap();
    let mut child = Command::new("nohup")
        .arg(env!("CARGO_BIN_EXE_xlat"))
        .args(["run", "long.toml", "--out", "res", "--quiet"])
        .current_dir(dir.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1000));
    // nohup runs xlat in its own process: the pid is xlat's.
    assert!(Command::new("kill").args(["-HUP", &child.id().to_string()]).status().unwrap().success());
    std::thread::sleep(std::time::Duration::from_millis(1000));
    assert!(child.try_wait().unwrap().is_none(), "SIGHUP stopped a run under nohup");
    interrupt(&child);
    assert_eq!(wait_at_most(&mut child, std::time::Duration::from_secs(10)).code(), Some(130));
    assert!(dir.path().join("res/results.json").exists());
}

#[test]
fn workload_list_info_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let list = text(&xlat(&["workload", "list"], dir.path()).stdout);
    for name in ["gups", "btree", "xsbench", "graph500", "gap", "memcached", "redis", "sysbench-memory"] {
        assert!(list.contains(name), "{list}");
    }
    let info = xlat(&["workload", "info", "gups", "--scale", "paper"], dir.path());
    assert!(info.status.success(), "{}", text(&info.stderr));
    let stdout = text(&info.stdout);
    assert!(stdout.contains("table_log2 = 30") && stdout.contains("expected footprint: 8.00GiB"), "{stdout}");
    // The process's start-up is one line before the workload's own allocations.
    assert!(stdout.contains("startup") && stdout.contains("process start-up: 376KiB in 19 places"), "{stdout}");
    assert!(stdout.contains("mmap            8GiB touched"), "{stdout}");
    let check = xlat(&["workload", "check", "btree", "--scale", "tiny", "--set", "lookups=500"], dir.path());
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(text(&check.stdout).contains("all 500 lookups found their key's value"), "{}", text(&check.stdout));
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    // The reader is gone before xlat prints, as when `head` has already exited.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["workload", "info", "gap", "--scale", "tiny"])
        .stdout(writer)
        .output()
        .expect("xlat runs");
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(13), "killed by SIGPIPE, like other Unix tools: {:?}", out.status);
}

#[test]
fn bad_flag_values_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (args, wanted) in [
        (&["workload", "info", "gups", "--scale", "huge"][..], "unknown scale"),
        (&["workload", "info", "gups", "--scale", "tiny", "--set", "oops"], "expected KEY=VALUE"),
        // Values the workload rejects, whatever the reason, are usage errors too.
        (&["workload", "info", "gups", "--scale", "tiny", "--set", "table_log2=99"], "--set table_log2"),
        (&["workload", "info", "gups", "--scale", "tiny", "--set", "table_log2=abc"], "--set table_log2"),
        (&["workload", "check", "gups", "--scale", "tiny", "--set", "colour=red"], "no parameter `colour`"),
        (&["workload", "info", "btree", "--scale", "tiny", "--set", "keys=18446744073709551615"], "out of range: integers are 64-bit signed"),
        (&["workload", "info", "btree", "--scale", "tiny", "--set", "keys=-1_000_000_000_000_000_000_000_000_000_000_000_000_000"], "out of range"),
        (&["trace", "convert", "a.lackey", "b.out", "--to", "bogus"], "unknown format"),
        (&["trace", "convert", "a.lackey", "b.xlat", "--from", "bogus"], "unknown format"),
        (&["bench", "--refs", "0"], "--refs"),
        (&["bench", "--filter", "zzz"], "no benchmark name contains it"),
        (&["bench", "--repeat", "0"], "--repeat"),
        (&["presets", "nope"], "possible values: skylake-like"),
        (&["workload", "info", "nbody", "--scale", "tiny"], "possible values: gups"),
    ] {
        let out = xlat(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(wanted), "{args:?}: {}", text(&out.stderr));
    }
}

#[test]
fn a_bad_output_directory_is_reported_before_simulating() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), EXPERIMENT).unwrap();
    std::fs::write(dir.path().join("afile"), "").unwrap();
    let out = xlat(&["run", "exp.toml", "--out", "afile"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("afile: is not a directory"), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "nothing was simulated: {}", text(&out.stdout));
}

#[test]
fn outputs_that_cannot_be_written_are_reported_before_simulating() {
    let plot = "\n[[plot]]\nfile = \"misses.png\"\nkind = \"bars\"\nx = \"workload\"\ny = [\"misses\"]\n";
    for (file, make) in [("results.json", "mkfifo"), ("results.csv", "mkdir"), ("eviction_age.csv", "mkdir"), ("misses.png", "mkdir")] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("exp.toml"), format!("{EXPERIMENT}{plot}")).unwrap();
        std::fs::create_dir(dir.path().join("res")).unwrap();
        assert!(Command::new(make).arg(dir.path().join("res").join(file)).status().unwrap().success());
        let out = xlat(&["run", "exp.toml", "--out", "res"], dir.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{file}: {err}");
        assert!(err.contains(&format!("res/{file}: exists and is not a regular file")), "{file}: {err}");
        assert!(out.stdout.is_empty(), "{file}: nothing was simulated: {}", text(&out.stdout));
        let written: Vec<_> = std::fs::read_dir(dir.path().join("res")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(written, [file], "{file}: nothing was written");
    }
}

#[test]
fn results_are_written_when_the_table_has_no_reader() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), EXPERIMENT).unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["run", "exp.toml", "--out", "res"])
        .current_dir(dir.path())
        .stdout(writer)
        .output()
        .expect("xlat runs");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(13), "{}", text(&out.stderr));
    let csv = std::fs::read_to_string(dir.path().join("res/results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
}

#[test]
fn recording_refuses_an_output_named_for_another_format() {
    let dir = tempfile::tempdir().unwrap();
    let out = xlat(&["trace", "record", "-o", "x.lackey", "--", "true"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("recording writes a native trace, not lackey"), "{}", text(&out.stderr));
    assert!(!dir.path().join("x.lackey").exists());
}

#[test]
fn a_full_standard_output_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), EXPERIMENT).unwrap();
    for args in [&["presets"][..], &["run", "exp.toml", "--out", "res"]] {
        let full = std::fs::File::create("/dev/full").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_xlat")).args(args).current_dir(dir.path()).stdout(full).output().expect("xlat runs");
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("writing to standard output") && !err.contains("panicked"), "{args:?}: {err}");
    }
    assert!(dir.path().join("res/results.csv").exists(), "results are written before the table");
}

#[test]
fn plot_errors_give_their_cause() {
    let dir = tempfile::tempdir().unwrap();
    let plot = |only: &str, y: &str| {
        format!("{EXPERIMENT}\n[[plot]]\nfile = \"a.png\"\nkind = \"bars\"\nx = \"workload\"\ny = [\"{y}\"]\n{only}\n")
    };
    std::fs::write(dir.path().join("exp.toml"), plot("", "misses")).unwrap();
    let out = xlat(&["plot", "exp.toml", "--dir", "missing"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("drawing a.png: reading missing/results.csv: No such file"), "{err}");
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    std::fs::write(dir.path().join("empty/results.csv"), format!("{}\n", xlat::config::plot::RESULT_COLUMNS.join(","))).unwrap();
    let out = xlat(&["plot", "exp.toml", "--dir", "empty"], dir.path());
    assert!(text(&out.stderr).contains("drawing a.png: results.csv has no rows"), "{}", text(&out.stderr));
    for (only, y, wanted) in [
        ("only = { config = \"zzz\" }", "misses", "no row of results.csv matches `only` (config = \"zzz\")"),
        ("", "mpki", "column `mpki` of results.csv has no numbers"),
    ] {
        std::fs::write(dir.path().join("exp.toml"), plot(only, y)).unwrap();
        let out = xlat(&["run", "exp.toml", "--out", "res", "-q"], dir.path());
        assert_eq!(out.status.code(), Some(1));
        let err = text(&out.stderr);
        assert!(err.contains("drawing a.png: ") && err.contains(wanted), "{err}");
    }
    // Eviction ages are tracked, but the 4 MiB footprint fits the 64 MiB memory.
    let ages = format!(
        "{EXPERIMENT}[machine.os]\nmemory = \"64MiB\"\nplacement = \"iceberg\"\neviction = \"horizon-lru\"\nage_window = 100\n\n\
         [[plot]]\nfile = \"a.png\"\nkind = \"lines\"\ndata = \"eviction-age\"\nx = \"window\"\ny = [\"mean_age\"]\n"
    );
    std::fs::write(dir.path().join("exp.toml"), ages).unwrap();
    let out = xlat(&["run", "exp.toml", "--out", "res", "-q"], dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("drawing a.png: no machine completed a window of `age_window` evictions in this run, so there is no eviction_age.csv to plot"), "{err}");
}

/// A plot that cannot be drawn fails the run after the others are drawn, and leaves neither
/// its temporary file nor a drawing of an earlier run, which would not show these results.
/// Two machines at one bar without `series` disagree: one bar would hide the other.
#[test]
fn a_plot_that_fails_leaves_no_temporary_file_and_no_old_drawing() {
    let dir = tempfile::tempdir().unwrap();
    let plots = "[[plot]]\nfile = \"log.png\"\nkind = \"lines\"\nx = \"entries\"\ny = [\"swap_io_bytes\"]\ny_log = true\n\n\
                 [[plot]]\nfile = \"both.png\"\nkind = \"bars\"\nx = \"workload\"\ny = [\"misses\"]\n\n\
                 [[plot]]\nfile = \"good.png\"\nkind = \"bars\"\nx = \"config\"\ny = [\"misses\"]\n";
    let machine = "[[machine]]\nname = \"m2\"\npreset = \"single-tlb\"\nentries = 128\nways = 4\n";
    std::fs::write(dir.path().join("exp.toml"), format!("{EXPERIMENT}\n{machine}\n{plots}")).unwrap();
    std::fs::create_dir(dir.path().join("res")).unwrap();
    for old in ["log.png", "both.png"] {
        std::fs::write(dir.path().join("res").join(old), "an earlier run's").unwrap();
    }
    let out = xlat(&["run", "exp.toml", "--out", "res", "-q"], dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("drawing log.png: no point of `swap_io_bytes` against `entries` can be drawn (a log axis shows positive values only)"), "{err}");
    assert!(err.contains("drawing both.png: rows disagree at workload = uniform: "), "{err}");
    assert_eq!(common::listing(&dir.path().join("res")), ["good.png", "results.csv", "results.json"]);
}

/// A log axis leaves out the points it cannot show, saying so, and draws the others.
#[test]
fn a_log_axis_leaves_out_values_of_0_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let machine = "[[machine]]\nname = \"m2\"\npreset = \"single-tlb\"\nentries = 128\nways = 4\n";
    let plot = "[[plot]]\nfile = \"log.png\"\nkind = \"lines\"\nx = \"entries\"\ny = [\"misses\", \"swap_ins\"]\ny_log = true\n";
    std::fs::write(dir.path().join("exp.toml"), format!("{EXPERIMENT}\n{machine}\n{plot}")).unwrap();
    let out = xlat(&["run", "exp.toml", "--out", "res", "-q"], dir.path());
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("warning: log.png: 2 points left out"), "{err}");
    assert!(dir.path().join("res/log.png").exists());
}

/// `xlat run FILE -q` in `dir` under `ulimit -v 4000000` (3.81 GiB of address space).
fn run_in_4gb(dir: &Path, file: &str) -> Output {
    common::xlat_in_kib(4_000_000, &["run", file, "-q"], dir)
}

#[test]
fn memory_beyond_an_address_space_limit_is_a_clear_error() {
    // 1 TiB of frames under eviction needs 5.78 GiB of host memory, more than `ulimit -v`
    // leaves; without eviction, a bit per frame (32 MiB).
    let dir = tempfile::tempdir().unwrap();
    let evicting = EXPERIMENT.to_string() + "[machine.os]\nmemory = \"1TiB\"\neviction = \"lru\"\n";
    std::fs::write(dir.path().join("big.toml"), evicting).unwrap();
    let out = run_in_4gb(dir.path(), "big.toml");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("machine[0].os.memory: cannot allocate 5.78GiB of host memory for the 1TiB of simulated memory (this process may use 3.81GiB)"), "{err}");
    std::fs::write(dir.path().join("never-evicts.toml"), EXPERIMENT.to_string() + "[machine.os]\nmemory = \"1TiB\"\n").unwrap();
    let out = run_in_4gb(dir.path(), "never-evicts.toml");
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_lackey_line_that_never_ends_is_an_error_not_an_abort() {
    // /dev/zero holds no newline: buffered whole, its one line would take all the memory
    // `ulimit -v` leaves (976 MiB) within a second and abort.
    let dir = tempfile::tempdir().unwrap();
    let out = common::xlat_in_kib(1_000_000, &["trace", "info", "/dev/zero", "--format", "lackey"], dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {err}", out.status);
    assert!(err.contains("/dev/zero:1: line longer than 1024 KiB, the most a Lackey line may hold"), "{err}");
}

/// Writes at `path` a sparse file of `len` bytes (a hole but for `parts`, each an offset and
/// its bytes), so that a test can make a file of gigabytes that takes no room.
fn sparse_file(path: &Path, len: u64, parts: &[(u64, Vec<u8>)]) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::File::create(path).unwrap();
    f.set_len(len).unwrap();
    for (at, bytes) in parts {
        f.seek(SeekFrom::Start(*at)).unwrap();
        f.write_all(bytes).unwrap();
    }
}

/// The little-endian bytes of each of `values`.
fn le(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn native_sizes_are_checked_before_allocating() {
    // Sparse files whose header, index or block sizes ask for gigabytes: each must be an
    // error naming the file and offset, not an abort under a 976 MiB address-space limit.
    let dir = tempfile::tempdir().unwrap();
    let gib = 1u64 << 30;
    let header = |meta_len: u32| [&b"XLATTRC\0\x01\0\0\0"[..], &meta_len.to_le_bytes(), b"{}"].concat();
    let footer = |len: u64, index_offset: u64| (len - 16, [&index_offset.to_le_bytes()[..], b"XLATEND\0"].concat());
    // An index of 20 GiB (a hole: no magic).
    sparse_file(&dir.path().join("index.xlat"), 20 * gib, &[(0, header(2)), footer(20 * gib, 18)]);
    // Metadata of 4 GiB.
    sparse_file(&dir.path().join("meta.xlat"), 5 * gib, &[(0, header(u32::MAX)), footer(5 * gib, 18)]);
    // A proper index head over 2 GiB of empty entries, after 8 GiB of body.
    let (index_at, count) = (18 + 8 * gib, 1u64 << 26);
    let len = index_at + 32 + 32 * count + 16;
    let head = [&b"XLATIDX\0"[..], &le(&[count, count, 0])].concat();
    sparse_file(&dir.path().join("entries.xlat"), len, &[(0, header(2)), (index_at, head), footer(len, index_at)]);
    // One block of one record whose frame is said to be 4 GiB long.
    let zlen = u64::from(u32::MAX);
    let block = [le(&[1 | 2 << 32, zlen]), vec![0; 4]].concat();
    let index_at = 18 + 20 + zlen;
    let index = [&b"XLATIDX\0"[..], &le(&[1, 1, 0, 18, 0, 1, 0])].concat();
    let len = index_at + index.len() as u64 + 16;
    sparse_file(&dir.path().join("frame.xlat"), len, &[(0, header(2)), (18, block), (index_at, index), footer(len, index_at)]);
    for (file, want) in [
        ("index.xlat", "index.xlat: at byte offset 18: corrupt block index (bad magic)"),
        ("meta.xlat", "meta.xlat: at byte offset 12: metadata length 4294967295 is more than the 16 MiB"),
        ("entries.xlat", "entries.xlat: at byte offset 8589934610: index entry 0: block offset 0 is out of place"),
        ("frame.xlat", "frame.xlat: at byte offset 18: block 0: compressed length 4294967295 is more than zstd needs for 2 bytes"),
    ] {
        let out = common::xlat_in_kib(1_000_000, &["trace", "info", file], dir.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{file}: {:?}: {err}", out.status);
        assert!(err.contains(want), "{file}: {err}");
    }
}

#[test]
fn the_machines_of_a_workload_must_fit_together() {
    // 512 GiB of frames under eviction need 2.89 GiB: one machine fits the address space
    // left, two do not.
    let dir = tempfile::tempdir().unwrap();
    let machine = |name: &str| format!("[[machine]]\nname = \"{name}\"\npreset = \"single-tlb\"\nos = {{ memory = \"512GiB\", eviction = \"lru\" }}\n");
    let workload = "[[workload]]\nname = \"u\"\ntype = \"uniform\"\nfootprint = \"1MiB\"\nrefs = 1000\n";
    std::fs::write(dir.path().join("both.toml"), format!("{workload}{}{}", machine("a"), machine("b"))).unwrap();
    let out = run_in_4gb(dir.path(), "both.toml");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("workload[0]: cannot allocate 5.78GiB of host memory for the 2 machines it runs on at once"), "{err}");
    let one_each = format!("{workload}machines = [\"a\"]\n{}", workload.replace("\"u\"", "\"v\"") + "machines = [\"b\"]\n");
    std::fs::write(dir.path().join("apart.toml"), format!("{one_each}{}{}", machine("a"), machine("b"))).unwrap();
    let out = run_in_4gb(dir.path(), "apart.toml");
    assert!(out.status.success(), "one machine per workload fits: {}", text(&out.stderr));
}

#[test]
fn memory_beyond_the_host_is_a_clear_error() {
    // 15 TiB of 4 KiB frames passes the frame-count limit, but their state under eviction
    // needs 86.72 GiB of host memory: an error naming the field where the host has less,
    // never an abort.
    let dir = tempfile::tempdir().unwrap();
    let big = EXPERIMENT.to_string() + "[machine.os]\nmemory = \"15TiB\"\neviction = \"lru\"\n";
    std::fs::write(dir.path().join("big.toml"), big).unwrap();
    let out = xlat(&["run", "big.toml", "-q"], dir.path());
    let err = text(&out.stderr);
    assert!(out.status.success() || (out.status.code() == Some(1) && err.contains("machine[0].os.memory: cannot allocate 86.72GiB of host memory")), "{:?}: {err}", out.status);
}

#[test]
fn schema_prints_the_committed_schema() {
    let out = xlat(&["schema"], Path::new("."));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let committed = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/experiment.schema.json")).unwrap();
    assert_eq!(text(&out.stdout), committed);
}

/// The same experiment gives byte-identical `results.csv` and `timing.csv` run twice, with
/// another batch size, and confined to one core (`taskset -c 0`: machines then run in
/// sequence and no lone machine replays its hierarchy on a second core), end to end through
/// the binary.
#[test]
fn results_are_identical_across_runs_batch_sizes_and_core_counts() {
    let dir = tempfile::tempdir().unwrap();
    let experiment = "seed = 11\n[[workload]]\nname = \"z\"\ntype = \"zipf\"\nfootprint = \"32MiB\"\nexponent = 0.9\nrefs = 300_000\n\n\
                      [[machine]]\nname = \"sky\"\npreset = \"skylake-like\"\n\n\
                      [[machine]]\nname = \"mosaic\"\npreset = \"mosaic-paper\"\nos = { memory = \"64MiB\", page_table = \"radix\" }\ntiming = {}\n";
    std::fs::write(dir.path().join("a.toml"), experiment).unwrap();
    std::fs::write(dir.path().join("b.toml"), experiment.replace("seed = 11\n", "seed = 11\nbatch = 777\n")).unwrap();
    let run = |program: &str, args: &[&str], out: &str| {
        let status = Command::new(program).args(args).args(["--out", out, "-q"]).current_dir(dir.path()).status().unwrap();
        assert!(status.success(), "{out}");
        ["results.csv", "timing.csv"].map(|f| std::fs::read(dir.path().join(out).join(f)).unwrap())
    };
    let xlat = env!("CARGO_BIN_EXE_xlat");
    let first = run(xlat, &["run", "a.toml"], "first");
    assert_eq!(run(xlat, &["run", "a.toml"], "again"), first, "run twice");
    assert_eq!(run(xlat, &["run", "b.toml"], "batch"), first, "batches of 777 references");
    assert_eq!(run("taskset", &["-c", "0", xlat, "run", "a.toml"], "one-core"), first, "on one core");
}

/// `xlat run` refuses a `gpu` workload whose traced application's trace has a bad line, with
/// exit code 1 and an error naming the application's field and the trace's file and line.
#[test]
fn a_malformed_traced_application_is_refused_by_run() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("myapp");
    std::fs::create_dir(&trace).unwrap();
    std::fs::write(trace.join("kernelslist.g"), "MemcpyHtoD,0x7f2000000000,1024\nkernel-1.traceg\n").unwrap();
    std::fs::write(trace.join("kernel-1.traceg"), "-accelsim tracer version = 4\n#BEGIN_TB\nwarp = 0\ninsts = 1\n0010 zz 0 LDG.E 0 4 0 0x10\n#END_TB\n").unwrap();
    let experiment = "[[workload]]\nname = \"w\"\ntype = \"gpu\"\napps = [\"bfs\", { trace = \"myapp\" }]\n[[machine]]\nname = \"g\"\nkind = \"gpu\"\n";
    std::fs::write(dir.path().join("gpu.toml"), experiment).unwrap();
    let out = xlat(&["run", "gpu.toml", "--out", "res"], dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("workload[0].apps[1].trace") && stderr.contains("kernel-1.traceg:5") && stderr.contains("mask"), "{stderr}");
    assert!(!dir.path().join("res").exists(), "refused before running");
}
