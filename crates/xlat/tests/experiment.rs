//! End-to-end tests of experiments: configuration errors, one read per workload, results files,
//! interruption.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use xlat::config::parse_experiment;
use xlat::memref::Batch;
use xlat::sim::experiment::feed;
use xlat::sim::{run_experiment, write_results, Machine, MachineSpec};
use xlat::source::RefSource;
use xlat::{MemRef, Result};

const SMALL: &str = r#"
schema = 1
seed = 9

[[workload]]
name = "seq"
type = "sequential"
footprint = "1MiB"
refs = 50_000

[[workload]]
name = "zipf"
type = "zipf"
footprint = "8MiB"
refs = 50_000
store_fraction = 0.5

[[machine]]
name = "sky"
preset = "skylake-like"

[[machine]]
name = "tiny"
[machine.os]
memory = "64MiB"
placement = "sequential"
[[machine.tlb]]
name = "L1"
arrays = [{ entries = 8, ways = 2 }]
"#;

fn config_error(text: &str) -> String {
    parse_experiment(text, Path::new(".")).unwrap_err().to_string()
}

/// Checks that each experiment text of `cases` is an error naming its field and saying its
/// message.
fn assert_config_errors(cases: impl IntoIterator<Item = (String, &'static str, &'static str)>) {
    for (text, path, message) in cases {
        let e = config_error(&text);
        assert!(e.contains(path) && e.contains(message), "expected `{path}` and `{message}` in: {e}");
    }
}

/// Runs the experiment `text`, whose relative paths start at `base_dir`, to its end.
fn run_text(text: &str, base_dir: &Path) -> (xlat::config::ExperimentSpec, Result<xlat::sim::ExperimentResult>) {
    let spec = parse_experiment(text, base_dir).unwrap();
    let result = run_experiment(&spec, &AtomicBool::new(false), &mut |_| {});
    (spec, result)
}

/// Runs the experiment `text` and writes its results: the directory they are in, its
/// results.csv, and its results.json parsed.
fn written_results(text: &str) -> (tempfile::TempDir, String, serde_json::Value) {
    let spec = parse_experiment(text, Path::new(".")).unwrap();
    let result = run_experiment(&spec, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_results(dir.path(), &spec, &result).unwrap();
    let csv = std::fs::read_to_string(dir.path().join("results.csv")).unwrap();
    let json = serde_json::from_str(&std::fs::read_to_string(dir.path().join("results.json")).unwrap()).unwrap();
    (dir, csv, json)
}

#[test]
fn runs_every_workload_on_every_machine() {
    let spec = parse_experiment(SMALL, Path::new(".")).unwrap();
    let result = run_experiment(&spec, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(!result.partial);
    let rows = result.rows();
    // skylake-like: L1 data + L1 instr + L2; tiny: one unified level.
    assert_eq!(rows.len(), 2 * (3 + 1));
    for row in &rows {
        assert_eq!(row.refs, 50_000);
        if row.level == "L1" && row.side != "instr" {
            assert_eq!(row.accesses, 50_000, "{row:?}");
            assert_eq!(row.hits + row.misses, row.accesses);
        }
        // The instruction side of a data-only stream saw nothing: its miss rate is empty.
        let rate = (row.accesses > 0).then(|| row.misses as f64 / row.accesses as f64);
        assert_eq!(row.miss_rate, rate, "{row:?}");
    }
    assert!(rows.iter().any(|r| r.side == "instr" && r.miss_rate.is_none()));
    // 50,000 sequential 8-byte loads cover 400,000 bytes: 98 pages, one miss each.
    let seq_tiny = rows.iter().find(|r| r.workload == "seq" && r.config == "tiny").unwrap();
    assert_eq!(seq_tiny.misses, 98);
    assert_eq!(seq_tiny.page_faults, 98);
    assert_eq!(seq_tiny.footprint_bytes, 98 * 4096);
}

/// A source that counts how often it is asked for references.
struct Counting {
    inner: xlat::source::VecSource,
    produced: Arc<std::sync::atomic::AtomicU64>,
}

impl RefSource for Counting {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        let n = self.inner.fill(batch, max)?;
        self.produced.fetch_add(n as u64, Ordering::SeqCst);
        Ok(n)
    }
    fn identity(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

#[test]
fn a_workload_is_read_once_for_all_machines() {
    let spec = parse_experiment(SMALL, Path::new(".")).unwrap();
    let refs: Vec<MemRef> = (0..10_000u64).map(|i| MemRef::load(i * 4096 * 7 % (1 << 24), 8)).collect();
    let produced = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let source = Box::new(Counting { inner: xlat::source::VecSource::new(refs), produced: Arc::clone(&produced) });
    let mut machines: Vec<Box<dyn Machine>> = spec.machines.iter().map(|m| m.build().expect("a cpu machine")).collect();
    let (done, partial) = feed(source, &mut machines, 1000, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!((done, partial), (10_000, false));
    assert_eq!(produced.load(Ordering::SeqCst), 10_000);
    for m in &machines {
        assert_eq!(m.stats().counters.refs, 10_000);
    }
}

#[test]
fn interruption_yields_partial_results() {
    let spec = parse_experiment(SMALL, Path::new(".")).unwrap();
    let result = run_experiment(&spec, &AtomicBool::new(true), &mut |_| {}).unwrap();
    assert!(result.partial);
    assert_eq!(result.workloads.len(), 1, "later workloads do not start once interrupted");
    assert!(result.rows().iter().all(|r| r.partial));
}

/// A source that yields nothing until its sender goes, like a built-in workload deep in its
/// set-up.
struct Stalled(std::sync::mpsc::Receiver<()>);

impl RefSource for Stalled {
    fn fill(&mut self, _: &mut Batch, _: usize) -> Result<usize> {
        let _ = self.0.recv();
        Ok(0)
    }
    fn identity(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

#[test]
fn an_interrupt_stops_a_source_that_yields_nothing() {
    let spec = parse_experiment(SMALL, Path::new(".")).unwrap();
    let mut machines: Vec<Box<dyn Machine>> = spec.machines.iter().map(|m| m.build().expect("a cpu machine")).collect();
    let (_stall, stalled) = std::sync::mpsc::channel();
    let interrupt = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&interrupt);
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let fed = feed(Box::new(Stalled(stalled)), &mut machines, 1000, &flag, &mut |_| {});
        let _ = done_tx.send(fed.map_err(|e| e.to_string()));
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    interrupt.store(true, Ordering::Relaxed);
    let fed = done.recv_timeout(std::time::Duration::from_secs(10)).expect("the run stops soon after the interrupt");
    assert_eq!(fed.unwrap(), (0, true), "nothing simulated, flagged partial");
}

#[test]
fn results_are_written_with_identity_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let spec = parse_experiment(SMALL, Path::new(".")).unwrap();
    let result = run_experiment(&spec, &AtomicBool::new(false), &mut |_| {}).unwrap();
    write_results(dir.path(), &spec, &result).unwrap();
    let csv = std::fs::read_to_string(dir.path().join("results.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    for column in ["workload", "config", "level", "side", "accesses", "misses", "mpki", "shootdowns", "partial"] {
        assert!(header.split(',').any(|c| c == column), "missing column {column} in {header}");
    }
    // Plots may draw every column and no other, listed in the file's order (as a plot's
    // error lists them).
    let columns: Vec<&str> = header.split(',').collect();
    assert_eq!(columns, xlat::config::plot::RESULT_COLUMNS);
    assert_eq!(csv.lines().count(), 1 + result.rows().len());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("results.json")).unwrap()).unwrap();
    assert_eq!(json["xlat_version"], xlat::VERSION);
    assert_eq!(json["seed"], 9);
    assert_eq!(json["partial"], false);
    assert_eq!(json["experiment"]["machines"][0]["tlb"][1]["arrays"][0]["entries"], 1536);
    assert_eq!(json["results"][0]["input"]["spec"]["pattern"], "sequential");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 2, "only the two result files remain: {leftovers:?}");
}

#[test]
fn an_earlier_runs_eviction_ages_and_timing_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("eviction_age.csv"), "workload,config,window,mean_age,max_age\nold,m,0,1.0,2.0\n").unwrap();
    std::fs::write(dir.path().join("timing.csv"), "workload,config\nold,m\n").unwrap();
    let spec = parse_experiment(SMALL, Path::new(".")).unwrap();
    let result = run_experiment(&spec, &AtomicBool::new(false), &mut |_| {}).unwrap();
    write_results(dir.path(), &spec, &result).unwrap();
    assert!(!dir.path().join("eviction_age.csv").exists(), "no machine tracks eviction ages: no table of them");
    assert!(!dir.path().join("timing.csv").exists(), "no machine is timed: no table of cycles");
}

#[test]
fn configuration_errors_name_the_field() {
    let cases = [
        (SMALL.replace("ways = 2", "ways = 3"), "machine[1].tlb[0].arrays[0].ways", "not divisible by 3 ways"),
        (SMALL.replace("ways = 2", "ways = 0"), "machine[1].tlb[0].arrays[0].ways", "at least one way"),
        (SMALL.replace("entries = 8,", "entries = 8_000_000_000,"), "machine[1].tlb[0].arrays[0].entries", "exceed the 16777216"),
        (SMALL.replace("ways = 2", "ways = \"most\""), "ways", "neither a way count nor"),
        (SMALL.replace("preset = \"skylake-like\"", "preset = \"skylake\""), "machine[0].preset", "unknown preset"),
        (SMALL.replace("preset = \"skylake-like\"", "preset = \"skylake-like\"\nways = 4"), "machine[0].preset", "takes no"),
        (SMALL.replace("memory = \"64MiB\"", "memory = \"5000\""), "machine[1].os.memory", "5000B is not a positive multiple of the 4KiB"),
        // Sizes in messages are exact: a rounded "4.00KiB" would hide the stray byte.
        (SMALL.replace("memory = \"64MiB\"", "memory = 4097"), "machine[1].os.memory", "4097B is not"),
        (SMALL.replace("memory = \"64MiB\"", "memory = \"64XB\""), "", "unknown size suffix"),
        (SMALL.replace("refs = 50_000\n\n[[workload]]", "refs = 50_000\nstride = 64\n\n[[workload]]"), "workload[0].stride", "only strided"),
        (SMALL.replace("type = \"sequential\"", "type = \"trace\""), "workload[0].footprint", "only synthetic"),
        (SMALL.replace("refs = 50_000\n\n[[workload]]", "refs = 50_000\nstartup = true\n\n[[workload]]"), "workload[0].startup", "only built-in"),
        (SMALL.replace("type = \"sequential\"\nfootprint = \"1MiB\"\nrefs = 50_000", "type = \"trace\"\npath = \"\""), "workload[0].path", "the trace path is empty"),
        (SMALL.replace("name = \"zipf\"", "name = \"seq\""), "workload[1].name", "already named"),
        (SMALL.replace("schema = 1", "schema = 2"), "schema", "not supported"),
        (SMALL.replace("placement = \"sequential\"", "placement = \"sequential\"\ncolour = 1"), "", "unknown field `colour`"),
        (SMALL.replace("footprint = \"1MiB\"", "footprint = \"1MiB\"\nsize = 12"), "workload[0].size", "power of two"),
        // Preset parameters next to levels that replace the preset's would be ignored.
        (SMALL.replace("name = \"tiny\"", "name = \"tiny\"\npreset = \"single-tlb\"\nreplacement = \"fifo\""), "machine[1].replacement", "levels replace"),
        (SMALL.replace("name = \"tiny\"", "name = \"tiny\"\nentries = 512"), "machine[1].entries", "preset parameters"),
        // Settings that leave a workload or a machine with no result row.
        (SMALL.replace("name = \"seq\"", "name = \"seq\"\nmachines = []"), "workload[0].machines", "on no machine"),
        (SMALL.replace("preset = \"skylake-like\"", "preset = \"skylake-like\"\ntlb = []"), "machine[0].tlb", "without a TLB"),
        (SMALL.to_string() + "\n[[machine]]\nname = \"none\"\ntlb = []\n", "machine[2].tlb", "without a TLB"),
        (SMALL.to_string() + "\n[[machine]]\nname = \"none\"\nmosaic = []\n", "machine[2].mosaic", "without a TLB"),
        (SMALL.replace("seed = 9", "seed = 9\nbatch = 10_000_000_000_000"), "batch", "exceed the 4194304"),
        (SMALL.to_string() + "[[machine.tlb]]\nname = \"L1\"\narrays = [{ entries = 8, ways = 2 }]\n", "machine[1].tlb[1].name", "another level is already named `L1`"),
        (SMALL.replace("placement = \"sequential\"", "placement = \"sequential\"\neviction = \"horizon-lru\""), "machine[1].os.eviction", "`horizon-lru` eviction needs iceberg"),
    ];
    assert_config_errors(cases);
}

/// A built-in workload starts as a process does when it runs from the program's start, and
/// `startup` says otherwise either way.
#[test]
fn builtin_workloads_start_with_the_process_start_up_by_default() {
    let startup = |params: &str, field: &str| {
        let text = format!("schema = 1\n[[workload]]\nname = \"g\"\ntype = \"gups\"\nscale = \"tiny\"\nparams = {{ {params} }}\n{field}\n[[machine]]\nname = \"m\"\npreset = \"single-tlb\"\n");
        match parse_experiment(&text, Path::new(".")).unwrap().workloads.remove(0).source {
            xlat::source::SourceSpec::Builtin(b) => (b.startup, b.expected().phases[0].name),
            other => panic!("not a built-in: {other:?}"),
        }
    };
    assert_eq!(startup("", ""), (true, "startup"));
    assert_eq!(startup("init = false", ""), (false, "init"));
    assert_eq!(startup("", "startup = false"), (false, "init"));
    assert_eq!(startup("init = false", "startup = true"), (true, "startup"));
}

#[test]
fn exhausted_memory_names_workload_and_machine() {
    let text = SMALL.replace("memory = \"64MiB\"", "memory = \"64KiB\"");
    let spec = parse_experiment(&text, Path::new(".")).unwrap();
    let e = run_experiment(&spec, &AtomicBool::new(false), &mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("workload `seq`") && e.contains("machine `tiny`") && e.contains("out of physical memory"), "{e}");
}

/// A machine with an iceberg memory and Mosaic TLBs, to break field by field.
const MOSAIC: &str = r#"
[[workload]]
name = "seq"
type = "sequential"
footprint = "1MiB"
refs = 50_000

[[machine]]
name = "m"
preset = "single-tlb"
os = { memory = "64MiB", placement = "iceberg", eviction = "horizon-lru", iceberg = { front = 56, back = 8 } }
mosaic = [{ arity = [4, 8], ways = [1, "full"] }]
"#;

#[test]
fn mosaic_configuration_errors_name_the_field() {
    let cases = [
        (MOSAIC.replace("arity = [4, 8]", "arity = [4, 6]"), "machine[0].mosaic[0]", "arity = 6 is not a power of two"),
        (MOSAIC.replace("arity = [4, 8]", "arity = 128"), "machine[0].mosaic[0]", "arity = 128"),
        (MOSAIC.replace("front = 56", "front = 60"), "machine[0].os.iceberg", "exceeds 64 frames"),
        (MOSAIC.replace("front = 56, back = 8", "front = 56, back = 8, cpfn_bits = 6"), "machine[0].os.iceberg", "need a 7-bit CPFN"),
        (MOSAIC.replace("memory = \"64MiB\"", "memory = \"128KiB\""), "machine[0].os.iceberg", "smaller than one bucket"),
        (MOSAIC.replace("placement = \"iceberg\", eviction = \"horizon-lru\", iceberg = { front = 56, back = 8 }", "placement = \"random\""), "machine[0].mosaic", "need `os.placement = \"iceberg\"`"),
        (MOSAIC.replace("placement = \"iceberg\"", "placement = \"random\""), "machine[0].os.iceberg", "apply to `placement = \"iceberg\"` only"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"linux\""), "machine[0].os.eviction", "needs fully associative"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", delta = 0.1"), "machine[0].os.delta", "write it in the policy's table, `eviction = { kind = \"horizon-lru\", delta = 0.1 }`"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = { kind = \"horizon-lru\", delta = 0.1 }"), "line 11", "unknown field `delta`"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = { kind = \"horizon\" }"), "line 11", "unknown variant `horizon`"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", page_table = { kind = \"radix\", levels = 3 }"), "machine[0].os.page_table.levels", "4 or 5 levels, not 3"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", page_table = \"radx\""), "line 11", "unknown variant `radx`, expected one of `map`, `radix`, `fpt`, `ecpt`"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", page_table = { kind = \"map\", levels = 4 }"), "line 11", "unknown field `levels`"),
        (MOSAIC.replace("name = \"m\"", "name = \"m\"\npwc = {}"), "machine[0].pwc", "set `os.page_table` to a driver that keeps them"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", page_table = \"ecpt\"").replace("name = \"m\"", "name = \"m\"\npwc = {}"), "machine[0].pwc", "ECPT has no page walk cache"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", page_table = { kind = \"ecpt\", resize_threshold = 1.5 }"), "machine[0].os.page_table.resize_threshold", "an occupancy in (0, 1)"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", page_table = { kind = \"ecpt\", ways = 0 }"), "machine[0].os.page_table.ways", "0 ways per page size"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", page_table = { kind = \"fpt\", mode = \"l2l1\" }"), "line 11", "unknown variant `l2l1`"),
        (MOSAIC.to_string() + "[[plot]]\nfile = \"t.png\"\nkind = \"bars\"\ndata = \"timing\"\nx = \"workload\"\ny = [\"ipc\"]\n", "plot[0].data", "no machine sets `[machine.timing]`"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", page_table = \"radix\"").replace("name = \"m\"", "name = \"m\"\npwc = { entries = [2, 4, 8, 32], ways = [1, 4, 4, 4] }"), "machine[0].pwc.entries", "4-level tables have 1 to 3 levels above the PT"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", page_table = \"radix\"").replace("name = \"m\"", "name = \"m\"\npwc = { entries = [4, 32] }"), "machine[0].pwc.ways", "3 ways for 2 levels"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", page_table = \"radix\"").replace("name = \"m\"", "name = \"m\"\npwc = { entries = [4, 30], ways = [4, 4] }"), "machine[0].pwc.ways[1]", "4 ways do not divide 30 entries"),
        (MOSAIC.replace("name = \"m\"", "name = \"m\"\ntiming = { line = 48 }"), "machine[0].timing.line", "a power of two from 8 to 4096"),
        (MOSAIC.replace("name = \"m\"", "name = \"m\"\ntiming = { walk_level = \"L3\" }"), "machine[0].timing.walk_level", "`L3` names no cache level"),
        (MOSAIC.replace("name = \"m\"", "name = \"m\"\ntiming = { caches = [{ name = \"L1\", size = \"32KiB\", ways = 7, latency = 2 }] }"), "machine[0].timing.caches[0].ways", "7 ways do not divide the 512 lines"),
        (MOSAIC.replace("name = \"m\"", "name = \"m\"\ntiming = { caches = [] }"), "machine[0].timing.caches", "at least one cache level"),
        (MOSAIC.replace("name = \"m\"", "name = \"m\"\ntiming = { data_parallelism = 0.5 }"), "machine[0].timing.data_parallelism", "1 or more"),
        (MOSAIC.replace("name = \"m\"", "name = \"m\"\ntiming = { tlb = -1 }"), "machine[0].timing.tlb", "0 or more"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon\""), "line 11", "expected one of `none`, `lru`, `linux`, `horizon-lru`"),
        (MOSAIC.replace("placement = \"iceberg\", eviction = \"horizon-lru\", iceberg = { front = 56, back = 8 }", "placement = \"random\", eviction = { kind = \"iceberg-lru\" }"), "machine[0].os.eviction", "`iceberg-lru` eviction needs iceberg placement"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = { kind = \"lazy-iceberg-lru\", delta = 0.0 }"), "machine[0].os.eviction.delta", "delta must be above 0"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = { kind = \"iceberg-lru\", delta = 1.5 }"), "machine[0].os.eviction.delta", "must be a fraction in [0, 1), not 1.5"),
        (MOSAIC.replace("name = \"seq\"", "name = \"seq\"\nmachines = [\"x*\"]"), "workload[0].machines[0]", "names no machine"),
        (MOSAIC.replace("back = 8 }", "back = 8, hash = { kind = \"xxhash64\", seed = 5 } }"), "", "unknown field `seed`"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", recency = \"scan\", scan_history = 9"), "machine[0].os.scan_history", "1 to 8 scans"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", scan_history = 4"), "machine[0].os.scan_history", "applies to `recency = \"scan\"` only"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", inactive_ratio = 3"), "machine[0].os.inactive_ratio", "a parameter of the eviction policy now"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", workingset = false"), "machine[0].os.workingset", "a parameter of the eviction policy now"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", look_twice = false"), "machine[0].os.look_twice", "a parameter of the eviction policy now"),
        (MOSAIC.replace("placement = \"iceberg\", eviction = \"horizon-lru\", iceberg = { front = 56, back = 8 }", "placement = \"random\", eviction = { kind = \"linux\", reserve = 1.0 }"), "machine[0].os.eviction.reserve", "must be a fraction in [0, 1)"),
        (MOSAIC.replace("eviction = \"horizon-lru\", ", "swap_cache = false, "), "machine[0].os.swap_cache", "nothing is swapped without an `os.eviction` policy"),
        (MOSAIC.replace("eviction = \"horizon-lru\", ", "page_cluster = 3, "), "machine[0].os.page_cluster", "nothing is swapped without an `os.eviction` policy"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", page_cluster = 6"), "machine[0].os.page_cluster", "6 is above 5"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", swap_cache = false, page_cluster = 1"), "machine[0].os.page_cluster", "set `swap_cache = true`, or `page_cluster = 0`"),
        (MOSAIC.replace("eviction = \"horizon-lru\", ", "swap = \"1GiB\", "), "machine[0].os.swap", "nothing is swapped without an `os.eviction` policy"),
        (MOSAIC.replace("eviction = \"horizon-lru\"", "eviction = \"horizon-lru\", swap = \"6000B\""), "machine[0].os.swap", "6000B is not a positive multiple of the 4KiB page size"),
        (MOSAIC.replace("placement = \"iceberg\", eviction = \"horizon-lru\", iceberg = { front = 56, back = 8 }", "placement = \"random\", eviction = { kind = \"linux\", workingset = 1 }"), "line 11", "invalid type"),
        (MOSAIC.replace("eviction = \"horizon-lru\", ", "recency = \"scan\", "), "machine[0].os.recency", "set an `os.eviction` policy"),
        (MOSAIC.replace("eviction = \"horizon-lru\", ", "age_window = 100, "), "machine[0].os.age_window", "needs an `os.eviction` policy"),
        (MOSAIC.replace("placement = \"iceberg\", eviction = \"horizon-lru\", iceberg = { front = 56, back = 8 }", "placement = \"random\", eviction = { kind = \"linux\", inactive_ratio = 0 }"), "machine[0].os.eviction.inactive_ratio", "outside 1..=1000"),
        (MOSAIC.replace("placement = \"iceberg\", eviction = \"horizon-lru\", iceberg = { front = 56, back = 8 }", "placement = \"random\", eviction = { kind = \"linux\", inactive_ratio = \"sqrt\" }"), "line 11", "neither a ratio nor \"kernel\""),
        (MOSAIC.replace("arity = [4, 8]", "arity = [4, 8], entries = 1_099_511_627_776"), "machine[0].mosaic[0].entries", "exceed the 16777216"),
        (MOSAIC.replace("arity = [4, 8], ways = [1, \"full\"]", "name = \"TLB\""), "machine[0].mosaic[0].name", "`TLB` already names a TLB level"),
        (MOSAIC.replace("arity = [4, 8], ways = [1, \"full\"]", "name = \" \""), "machine[0].mosaic[0].name", "must not be empty"),
        (MOSAIC.replace("arity = [4, 8], ways = [1, \"full\"]", "name = \"a\\tb\""), "machine[0].mosaic[0].name", "control characters (found '\\t')"),
        (MOSAIC.replace("name = \"m\"", "name = \"m\\nn\""), "machine[0].name", "control characters (found '\\n')"),
        (MOSAIC.replace("name = \"seq\"", "name = \"  \""), "workload[0].name", "must not be empty"),
        (MOSAIC.replace("preset = \"single-tlb\"", "preset = \"single-tlb\"\nentries = 0"), "machine[0].entries", "`single-tlb` preset"),
        (MOSAIC.replace("preset = \"single-tlb\"", "preset = \"single-tlb\"\nways = 3"), "machine[0].ways", "not divisible by 3 ways"),
        // A value or a list: a bad value gets its own type's message, alone or in a list.
        (MOSAIC.replace("ways = [1, \"full\"]", "ways = \"ful\""), "line 12", "`ful` is neither a way count nor \"full\""),
        (MOSAIC.replace("ways = [1, \"full\"]", "ways = [1, \"ful\"]"), "line 12", "`ful` is neither a way count nor \"full\""),
        (MOSAIC.replace("arity = [4, 8]", "arity = -4"), "line 12", "invalid value: integer `-4`, expected u32"),
        (MOSAIC.replace("arity = [4, 8]", "arity = 4.0"), "line 12", "invalid type: floating point `4.0`, expected u32"),
        (MOSAIC.replace("arity = [4, 8]", "arity = { a = 4 }"), "line 12", "expected a value or a list of values"),
    ];
    assert_config_errors(cases);
    let spec = parse_experiment(MOSAIC, Path::new(".")).unwrap();
    let MachineSpec::Cpu(cpu) = &spec.machines[0] else { panic!("a cpu machine") };
    let names: Vec<_> = cpu.mosaic.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["mosaic-4-1w", "mosaic-8-1w", "mosaic-4-full", "mosaic-8-full"]);
}

/// Transparent huge pages' configuration errors: every combination THP cannot work with is
/// refused naming the field, and a THP machine runs.
#[test]
fn thp_configuration_errors_name_the_field() {
    let thp = MOSAIC.replace("mosaic = [{ arity = [4, 8], ways = [1, \"full\"] }]\n", "").replace(
        "placement = \"iceberg\", eviction = \"horizon-lru\", iceberg = { front = 56, back = 8 }",
        "placement = \"sequential\", page_table = \"radix\", thp = \"always\"",
    );
    let cases = [
        (thp.replace("thp = \"always\"", "thp = \"sometimes\""), "line 11", "unknown variant `sometimes`, expected `never` or `always`"),
        (thp.replace("placement = \"sequential\"", "placement = \"iceberg\""), "machine[0].os.thp", "which set-associative and iceberg placement hash apart"),
        (thp.replace("placement = \"sequential\"", "placement = \"set-associative\""), "machine[0].os.thp", "which set-associative and iceberg placement hash apart"),
        (thp.replace("thp = \"always\"", "thp = \"always\", page_size = \"2MiB\""), "machine[0].os.thp", "set `page_size = \"4KiB\"`"),
        (thp.replace("\"radix\"", "\"fpt\""), "machine[0].os.page_table.mode", "cannot hold the 2 MiB pages of os.thp"),
        (thp.replace("thp = \"always\"", "khugepaged = { period = 5 }"), "machine[0].os.khugepaged", "set `thp = \"always\"`"),
        (thp.replace("thp = \"always\"", "thp = \"always\", khugepaged = { max_ptes_none = 512 }"), "machine[0].os.khugepaged.max_ptes_none", "at most 511"),
        (thp.replace("thp = \"always\"", "thp = \"always\", khugepaged = { pages_to_scan = 0 }"), "machine[0].os.khugepaged.pages_to_scan", "at least one page"),
        (thp.replace("thp = \"always\"", "thp = \"always\", khugepaged = { scan_sleep = 5 }"), "line 11", "unknown field `scan_sleep`"),
    ];
    assert_config_errors(cases);
    let fine = thp.replace("\"radix\"", "{ kind = \"fpt\", mode = \"l3l2\" }");
    assert!(parse_experiment(&fine, Path::new(".")).is_ok());
    let evicting = thp.replace("thp = \"always\"", "thp = \"always\", eviction = \"linux\"");
    assert!(parse_experiment(&evicting, Path::new(".")).is_ok());
}

#[test]
fn mosaic_rows_are_written() {
    let (_dir, csv, json) = written_results(MOSAIC);
    let header = csv.lines().next().unwrap();
    assert!(header.contains("sub_page_misses") && header.contains("first_conflict_utilization"), "{header}");
    let mosaic_rows: Vec<_> = csv.lines().filter(|l| l.contains(",mosaic-8-full,")).collect();
    assert_eq!(mosaic_rows.len(), 1, "{csv}");
    // 50,000 sequential 8-byte loads touch 98 pages, each faulting after its Mosaic-8 entry
    // was filled: 13 tag misses and 85 sub-page misses.
    assert!(mosaic_rows[0].contains(",mosaic-8,1024,1024,8,50000,49902,98,85,"), "{}", mosaic_rows[0]);
    // results.json counts them the same way, and the two kinds apart.
    let tlbs = json["results"][0]["machines"][0]["mosaic"].as_array().unwrap();
    let c = tlbs.iter().find(|t| t["name"] == "mosaic-8-full").unwrap();
    let counts = ["accesses", "hits", "misses", "tag_misses", "sub_misses"].map(|k| c[k].as_u64().unwrap());
    assert_eq!(counts, [50_000, 49_902, 98, 13, 85], "{c}");
}

/// results.json carries Linux-like reclaim's counters for a `linux` machine, and none for
/// another policy; and the machine tells the swap cache its stores. On a loop of 40 pages
/// over 32 frames no page is used while resident: under the look-twice rule each is rotated
/// once on its fault and evicted at its second look, never promoted or demoted, and every
/// swap-in finds its shadow entry but comes back from further than the (empty) active list.
/// Readahead is off: a sweep would read pages ahead of their faults, and this is about the
/// lists.
#[test]
fn results_json_counts_what_linux_reclaim_did() {
    let text = r#"
[[workload]]
name = "loop"
type = "strided"
footprint = "160KiB"
stride = 4096
refs = 200

[[workload]]
name = "stores"
type = "strided"
footprint = "160KiB"
stride = 4096
refs = 200
store_fraction = 1.0

[[machine]]
name = "linux"
preset = "single-tlb"
os = { memory = "128KiB", placement = "random", eviction = { kind = "linux", reserve = 0.0 }, page_cluster = 0 }

[[machine]]
name = "lru"
preset = "single-tlb"
os = { memory = "128KiB", placement = "random", eviction = "lru" }
"#;
    let (_dir, _csv, json) = written_results(text);
    let machines = json["results"][0]["machines"].as_array().unwrap();
    let os = &machines[0]["os"];
    let count = |k: &str| os["reclaim"][k].as_u64().unwrap_or_else(|| panic!("no reclaim.{k} in {os}"));
    let [faults, swap_ins, evictions, swap_outs] = ["page_faults", "swap_ins", "evictions", "swap_outs"].map(|k| os[k].as_u64().unwrap());
    // Under the swap cache (the default) each page is written once, at its first eviction:
    // read back by loads only, its copy in swap stays good.
    assert_eq!([faults, swap_ins, evictions, swap_outs], [200, 160, 168, 40], "{os}");
    assert_eq!([count("activations"), count("deactivations"), count("refault_activations")], [0, 0, 0], "{os}");
    assert_eq!(count("refaults"), swap_ins, "{os}");
    // Each time the inactive list has turned over, its 32 pages are young from their faults
    // and all rotated at once: 6 × 32 rotations for 168 evictions.
    assert_eq!(count("rotations"), 192, "{os}");
    assert!(machines[1]["os"]["reclaim"].is_null(), "{}", machines[1]["os"]);
    // The same loop of stores: every page is dirty when evicted, so every eviction writes.
    let os = &json["results"][1]["machines"][0]["os"];
    assert_eq!(["evictions", "swap_outs"].map(|k| os[k].as_u64().unwrap()), [168, 168], "{os}");
}

/// Swap readahead is on by default under eviction: on a forward loop of 40 pages over 32
/// frames, faults read pages ahead that later faults find, and results.json and results.csv
/// count them consistently (each page read is a swap-in; a fault finds its page on disk, read
/// ahead, or nowhere before its first touch).
#[test]
fn readahead_is_counted_in_results() {
    let text = r#"
[[workload]]
name = "loop"
type = "strided"
footprint = "160KiB"
stride = 4096
refs = 400

[[machine]]
name = "lru"
preset = "single-tlb"
os = { memory = "128KiB", placement = "random", eviction = "lru" }
"#;
    let (_dir, csv, json) = written_results(text);
    let machine = &json["results"][0]["machines"][0];
    assert_eq!(json["experiment"]["machines"][0]["os"]["page_cluster"], 3, "{}", json["experiment"]);
    let os = &machine["os"];
    let [faults, swap_ins, ahead, hits] = ["page_faults", "swap_ins", "readahead_pages", "readahead_hits"].map(|k| os[k].as_u64().unwrap());
    assert!(hits > 100 && ahead >= hits, "{os}");
    let majors = faults - 40 - hits;
    assert_eq!(swap_ins, majors + ahead, "{os}");
    assert!(majors < 160, "without readahead every one of the 360 later references faults, 160 of them reading from swap: {os}");
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let column = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(column("swap_ins"), swap_ins.to_string());
}

#[test]
fn plot_errors_are_found_before_simulating() {
    let plot = |fields: &str| format!("{SMALL}\n[[plot]]\nfile = \"a.png\"\nkind = \"lines\"\nx = \"entries\"\ny = [\"misses\"]\n{fields}\n");
    let cases = [
        (plot("y_range = [0, 1, 2]"), "plot[0].y_range", "3 values given"),
        (plot("y_range = [1]"), "plot[0].y_range", "1 values given"),
        (plot("[[plot]]\nfile = \"a.png\"\nkind = \"bars\"\nx = \"workload\"\ny = [\"hits\"]"), "plot[1].file", "already drawn to `a.png`"),
        (plot("data = \"eviction-age\"").replace("x = \"entries\"\ny = [\"misses\"]", "x = \"window\"\ny = [\"mean_age\"]"), "plot[0].data", "no machine sets `os.age_window`"),
        (plot("").replace("x = \"entries\"", "x = \"workload\""), "plot[0].x", "`workload` holds text"),
        (plot("").replace("kind = \"lines\"\nx = \"entries\"\ny = [\"misses\"]", "kind = \"bars\"\nx = \"workload\"\ny = [\"config\"]"), "plot[0].y", "`config` holds text"),
        (plot("").replace("x = \"entries\"", "x = \"colour\""), "plot[0].x", "not a column of results.csv"),
        (plot("y_log = true").replace("kind = \"lines\"\nx = \"entries\"", "kind = \"bars\"\nx = \"workload\""), "plot[0].y_log", "`lines` plots only"),
    ];
    assert_config_errors(cases);
}

/// Whether the caret of syntax error `e` (its fourth line) stands under `c` in the quoted line.
fn caret_under(e: &str, c: char) -> bool {
    let lines: Vec<&str> = e.lines().collect();
    lines[2].chars().position(|x| x == c) == lines[3].chars().position(|x| x == '^')
}

#[test]
fn a_syntax_error_in_a_long_line_quotes_only_its_surroundings() {
    let long = format!("[[workload]]\nname = \"u\"\nskip = [{}, x]\n", vec!["1"; 20_000].join(", "));
    let e = config_error(&long);
    assert!(e.len() < 400, "{e}");
    assert!(e.contains("line 3, column 60009") && e.contains("1, 1, x]") && e.contains("string values must be quoted"), "{e}");
    assert!(caret_under(&e, 'x'), "{e}");
    // A short line is quoted whole, as toml quotes it.
    let short = config_error("[[workload]]\nname = x\n");
    assert!(short.contains("2 | name = x\n  |        ^"), "{short}");
    // An unclosed array on a long last line: the error is at the end of the file, just past
    // the end of that line, not on a line after it.
    let unclosed = config_error(&format!("[[workload]]\nname = \"u\"\nskip = [{}\n", vec!["1"; 20_000].join(", ")));
    assert!(unclosed.len() < 400, "{unclosed}");
    assert!(unclosed.contains("line 3, column 60007") && unclosed.contains(", 1, 1\n  |") && unclosed.contains("unclosed array"), "{unclosed}");
    // Columns count characters, as toml's do, however many bytes they take.
    let wide = config_error(&format!("[[workload]]\nname = \"{}\" x\n", "é".repeat(300)));
    assert!(wide.contains("line 2, column 311") && wide.contains("ééé\" x\n") && caret_under(&wide, 'x'), "{wide}");
}

/// Machines of every simulation loop: the express path (`sky`), a single level with Mosaic
/// TLBs over an iceberg memory under Horizon LRU with scanned recency (`mosaic`), Linux-like
/// reclaim with recency on every access (`linux`) and a general hierarchy (`odd`, 3 ways).
const EVERY_LOOP: &str = r#"
seed = 3

[[workload]]
name = "zipf"
type = "zipf"
footprint = "24MiB"
refs = 40_000
size = 64
store_fraction = 0.3

[[workload]]
name = "strided"
type = "strided"
footprint = "20MiB"
stride = 4100
size = 16
refs = 10_000

[[machine]]
name = "sky"
preset = "skylake-like"

[[machine]]
name = "mosaic"
preset = "mosaic-paper"
os = { memory = "16MiB", placement = "iceberg", eviction = "horizon-lru", recency = "scan", scan_period = 5000, age_window = 100 }
mosaic = [{ arity = [4, 16] }]

[[machine]]
name = "linux"
preset = "single-tlb"
os = { memory = "12MiB", eviction = "linux", recency = "access" }

[[machine]]
name = "odd"
os = { memory = "64MiB" }
[[machine.tlb]]
name = "L1"
arrays = [{ entries = 12, ways = 3 }]
[[machine.tlb]]
name = "L2"
arrays = [{ entries = 96, ways = 6, replacement = "tree-plru" }]
"#;

#[test]
fn results_do_not_depend_on_the_batch_size() {
    let results = |batch: usize| {
        let text = EVERY_LOOP.replace("seed = 3", &format!("seed = 3\nbatch = {batch}"));
        let (spec, result) = run_text(&text, Path::new("."));
        let dir = tempfile::tempdir().unwrap();
        write_results(dir.path(), &spec, &result.unwrap()).unwrap();
        let read = |file: &str| std::fs::read_to_string(dir.path().join(file)).unwrap();
        (read("results.csv"), read("eviction_age.csv"))
    };
    let (csv, ages) = results(65_536);
    // Every machine simulated something, and the memories were short enough to evict.
    assert!(csv.lines().count() > 10, "{csv}");
    assert!(ages.lines().count() > 2, "{ages}");
    // Batches of 1 and 7 run the machines in sequence, larger ones on two threads (on a
    // host with two cores); prefetching and the loop's shape are chosen per batch.
    for batch in [1, 7, 4096] {
        assert_eq!(results(batch), (csv.clone(), ages.clone()), "batch = {batch}");
    }
}

/// Two copies of one sequential stream (20 pages), alone and as a mix.
const MIX: &str = r#"
seed = 5

[[workload]]
name = "alone"
type = "sequential"
footprint = "1MiB"
refs = 10_000

[[workload]]
name = "two"
type = "mix"
quantum = 300
[[workload.parts]]
name = "a"
type = "sequential"
footprint = "1MiB"
refs = 10_000
[[workload.parts]]
name = "b"
type = "sequential"
footprint = "1MiB"
refs = 10_000

[[machine]]
name = "m"
preset = "single-tlb"
"#;

/// (references, page faults, TLB misses) of each workload of `text` on its one machine.
fn faults_and_misses(text: &str) -> Vec<(u64, u64, u64)> {
    let result = run_text(text, Path::new(".")).1.unwrap();
    let misses = |w: &xlat::sim::WorkloadResult| w.machines[0].rows(&w.workload, false).iter().map(|r| r.misses).sum::<u64>();
    result.workloads.iter().map(|w| (w.refs, w.machines[0].os.page_faults, misses(w))).collect()
}

#[test]
fn a_mix_runs_its_parts_in_address_spaces_of_their_own() {
    // By default each part has its own ASID: the same addresses are other pages.
    assert_eq!(faults_and_misses(MIX), [(10_000, 20, 20), (20_000, 40, 40)]);
    // Parts given one ASID share their pages, as threads of one process would.
    let shared = MIX.replace("name = \"a\"\n", "name = \"a\"\nasid = 0\n").replace("name = \"b\"\n", "name = \"b\"\nasid = 0\n");
    assert_eq!(faults_and_misses(&shared), [(10_000, 20, 20), (20_000, 20, 20)]);
}

#[test]
fn mix_configuration_errors_name_the_field() {
    let part = "[[workload.parts]]\nname = \"a\"\ntype = \"sequential\"";
    let cases = [
        (MIX.replace("quantum = 300", "quantum = 0"), "workload[1].quantum", "at least one reference"),
        (MIX.replace("quantum = 300", "quantum = 300\nfootprint = \"1MiB\""), "workload[1].footprint", "belongs in a part"),
        (MIX.replace("name = \"alone\"\n", "name = \"alone\"\nquantum = 5\n"), "workload[0].quantum", "only `type = \"mix\"`"),
        (MIX.replace("name = \"b\"", "name = \"a\""), "workload[1].parts[1].name", "another part is already named `a`"),
        (MIX.replace("name = \"b\"\ntype = \"sequential\"", "name = \"b\"\ntype = \"mix\""), "workload[1].parts[1].type", "cannot be a part of a mix"),
        (MIX.replace("name = \"b\"\n", "name = \"b\"\nmachines = [\"m\"]\n"), "workload[1].parts[1].machines", "set `machines` on the mix"),
        (MIX.replace("name = \"b\"\n", "name = \"b\"\nstride = 64\n"), "workload[1].parts[1].stride", "only strided workloads"),
        (MIX.replace(&format!("{part}\nfootprint"), "[[workload.parts]]\nname = \"a\"\ntype = \"trace\"\nfootprint"), "workload[1].parts[0].footprint", "only synthetic workloads"),
        (MIX[..MIX.find("[[workload.parts]]").unwrap()].to_string() + "[[machine]]\nname = \"m\"\npreset = \"single-tlb\"\n", "workload[1].parts", "at least one part"),
    ];
    assert_config_errors(cases);
}

/// Writes a native trace of one load from each of `asids`, all at the same address.
fn trace_of_asids(path: &Path, asids: &[u16]) {
    let mut w = xlat::trace::NativeWriter::create(path, &serde_json::json!({})).unwrap();
    for &asid in asids {
        w.write(&MemRef { asid, ..MemRef::load(0x1000, 8) }, 1).unwrap();
    }
    w.finish().unwrap();
}

/// A mix of the trace `t.xlat` and a sequential stream, on the machine of [`MIX`].
const TRACE_MIX: &str = r#"
[[workload]]
name = "mix"
type = "mix"
[[workload.parts]]
name = "trace"
type = "trace"
path = "t.xlat"
[[workload.parts]]
name = "seq"
type = "sequential"
footprint = "1MiB"
refs = 100

[[machine]]
name = "m"
preset = "single-tlb"
"#;

#[test]
fn a_trace_of_several_address_spaces_is_not_merged_into_one_part() {
    let dir = tempfile::tempdir().unwrap();
    let run = |asids: &[u16]| {
        trace_of_asids(&dir.path().join("t.xlat"), asids);
        run_text(TRACE_MIX, dir.path()).1.map(|r| r.workloads[0].machines[0].os.page_faults)
    };
    // One address space, whatever its number: the part's ASID replaces it.
    assert_eq!(run(&[7, 7, 7]).unwrap(), 1 + 1);
    // Two processes' pages at one address are two pages, which one part's ASID would merge.
    let e = run(&[0, 1, 0]).unwrap_err().to_string();
    assert!(e.contains("`trace`") && e.contains("ASIDs 0 and 1"), "{e}");
}

#[test]
fn a_parts_asid_must_not_be_another_parts_by_position() {
    // `b` is part 1, so ASID 1 by default: an explicit `asid = 1` on `a` would share its
    // pages without either part saying so.
    let text = MIX.replace("name = \"a\"\n", "name = \"a\"\nasid = 1\n");
    let e = config_error(&text);
    assert!(e.contains("workload[1].parts[0].asid") && e.contains("`b`"), "{e}");
    // Sharing stays possible when both say so.
    let both = text.replace("name = \"b\"\n", "name = \"b\"\nasid = 1\n");
    assert_eq!(faults_and_misses(&both), [(10_000, 20, 20), (20_000, 20, 20)]);
}

#[test]
fn results_json_records_the_format_of_a_mixs_trace() {
    let dir = tempfile::tempdir().unwrap();
    trace_of_asids(&dir.path().join("t.xlat"), &[3, 3]);
    let (spec, result) = run_text(TRACE_MIX, dir.path());
    write_results(&dir.path().join("res"), &spec, &result.unwrap()).unwrap();
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("res/results.json")).unwrap()).unwrap();
    // The resolved experiment replays the trace in the format it was read in.
    let parts = &json["experiment"]["workloads"][0]["source"]["parts"];
    assert_eq!(parts[0]["workload"]["source"]["format"], "native", "{json:#}");
    let input = &json["results"][0]["input"]["parts"];
    assert_eq!((&input[0]["name"], &input[0]["asid"], &input[0]["input"]["format"]), (&"trace".into(), &0.into(), &"native".into()), "{json:#}");
}

/// A lone machine of each kind that uses the second core (Mosaic TLBs beside a conventional
/// one under Horizon LRU; `skylake-like`), over streams that walk often: batches of 65,536
/// references take that path on a host of two cores, batches of 1,000 the sequential one.
const LONE: [&str; 2] = [
    r#"
[[machine]]
name = "mosaic"
preset = "single-tlb"
entries = 64
os = { memory = "4MiB", placement = "iceberg", eviction = "horizon-lru" }
mosaic = [{ arity = 4, ways = 4 }]
"#,
    r#"
[[machine]]
name = "skylake"
preset = "skylake-like"
"#,
];

#[test]
fn a_lone_machine_on_two_cores_gives_the_results_in_sequence() {
    for machine in LONE {
        let workloads = r#"
seed = 9
[[workload]]
name = "zipf"
type = "zipf"
footprint = "8MiB"
exponent = 0.9
refs = 300_000
[[workload]]
name = "uniform"
type = "uniform"
footprint = "16MiB"
refs = 300_000
"#;
        let results = |batch: usize| {
            let text = workloads.replace("seed = 9\n", &format!("seed = 9\nbatch = {batch}\n")) + machine;
            let (spec, result) = run_text(&text, Path::new("."));
            let dir = tempfile::tempdir().unwrap();
            write_results(dir.path(), &spec, &result.unwrap()).unwrap();
            std::fs::read_to_string(dir.path().join("results.csv")).unwrap()
        };
        let csv = results(65_536);
        assert!(csv.lines().count() >= 3, "{csv}");
        assert_eq!(results(1000), csv, "{machine}");
    }
}

/// 100,000 uniform references over 64 MiB: a workload for the machines of a test to add.
const UNIFORM_64MIB: &str = r#"
[[workload]]
name = "u"
type = "uniform"
footprint = "64MiB"
refs = 100_000
"#;

/// A machine over radix tables with EMT's walk caches reports what its walks read, what the
/// caches served and the frames its tables take, in `results.json`; `results.csv` keeps its
/// columns.
#[test]
fn a_radix_machine_reports_its_walks() {
    let text = UNIFORM_64MIB.to_string() + r#"
[[machine]]
name = "radix-pwc"
preset = "single-tlb"
os = { memory = "1GiB", page_table = { kind = "radix", levels = 5 } }
pwc = {}
"#;
    let (_dir, csv, json) = written_results(&text);
    assert!(csv.lines().next().unwrap().ends_with(",partial"), "{csv}");
    let m = &json["results"][0]["machines"][0];
    let walks = m["os"]["walks"].as_u64().unwrap();
    let entries: Vec<u64> = m["walker"]["entries"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(entries, [walks; 5], "a read per level of 5-level tables");
    let memory: Vec<u64> = m["walker"]["memory_reads"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    // The PT entry always goes to memory; the PML5's, which no cache holds, only when every
    // cache missed, as the PML4's does.
    assert_eq!((memory[0], memory[4]), (walks, memory[3]), "{memory:?}");
    assert!(memory[1] < walks, "the PD entries' cache serves some walks: {memory:?}");
    assert_eq!(m["walker"]["pwc"].as_array().unwrap().len(), 3);
    // 16384 pages of 64 MiB: 32 PTs, a PD, a PDPT, a PML4 and a PML5.
    assert_eq!(m["os"]["page_table_frames"], 36);
    assert_eq!(json["experiment"]["machines"][0]["os"]["page_table"], serde_json::json!({ "kind": "radix", "levels": 5 }));
    assert!(m["timing"].is_null(), "not timed");
}

/// A timed machine (EMT's cycle model, every parameter at its default) reports its cycles
/// and caches; an untimed one beside it, the same TLB results.
#[test]
fn a_timed_machine_reports_its_cycles() {
    let text = UNIFORM_64MIB.to_string() + r#"
[[machine]]
name = "timed"
preset = "single-tlb"
os = { memory = "1GiB", page_table = "radix" }
pwc = {}
timing = {}

[[machine]]
name = "untimed"
preset = "single-tlb"
os = { memory = "1GiB", page_table = "radix" }
pwc = {}
"#;
    let (dir, csv, json) = written_results(&text);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows[0].replacen(",timed,", ",", 1), rows[1].replacen(",untimed,", ",", 1), "the same TLB results");
    let timing = std::fs::read_to_string(dir.path().join("timing.csv")).unwrap();
    let lines: Vec<&str> = timing.lines().collect();
    assert_eq!(lines[0], xlat::config::plot::TIMING_COLUMNS.join(","));
    assert_eq!(lines.len(), 2, "a row for the timed machine only: {timing}");
    let total = json["results"][0]["machines"][0]["timing"]["total_cycles"].as_f64().unwrap();
    assert_eq!(lines[1].split(',').nth(8).unwrap().parse::<f64>().unwrap(), total);
    let t = &json["results"][0]["machines"][0]["timing"];
    let cycles = ["tlb_cycles", "walk_cycles", "data_cycles", "instruction_cycles"].map(|k| t[k].as_f64().unwrap());
    assert!((cycles.iter().sum::<f64>() - t["total_cycles"].as_f64().unwrap()).abs() < 1e-6, "{t}");
    assert_eq!(t["tlb_cycles"], 100_000.0);
    assert!(t["ipc"].is_null(), "a synthetic stream counts no instructions");
    assert_eq!(t["caches"].as_array().unwrap().len(), 3);
    assert_eq!(json["experiment"]["machines"][0]["timing"]["walk_level"], 1);
}

/// An Accel-Sim GPU trace (a directory with `kernelslist.g`) runs as a trace workload, its
/// format detected: one warp's load of 32 consecutive 4-byte words (one 128-byte request)
/// and its store of 32 consecutive 8-byte words (two), in two kernels.
#[test]
fn an_accelsim_trace_directory_runs_as_a_trace_workload() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = |inst: &str| format!("-accelsim tracer version = 4\n#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 2\n0000 ffffffff 1 R1 IMAD 0 0\n{inst}\n#END_TB\n");
    std::fs::write(dir.path().join("kernel-1.traceg"), kernel("0010 ffffffff 1 R2 LDG.E 1 R4 4 1 0x7f1000000000 4")).unwrap();
    std::fs::write(dir.path().join("kernel-2.traceg"), kernel("0020 ffffffff 0 STG.E.64 2 R4 R5 8 1 0x7f1000200000 8")).unwrap();
    std::fs::write(dir.path().join("kernelslist.g"), "MemcpyHtoD,0x7f1000000000,128\nkernel-1.traceg\nkernel-2.traceg\n").unwrap();
    let text = format!(
        "schema = 1\n[[workload]]\nname = \"gpu\"\ntype = \"trace\"\npath = {:?}\n[[machine]]\nname = \"tlb\"\npreset = \"single-tlb\"\n",
        dir.path().display().to_string()
    );
    let (_, result) = run_text(&text, Path::new("."));
    let rows = result.unwrap().rows();
    let row = rows.iter().find(|r| r.side != "instr").unwrap();
    assert_eq!((row.refs, row.accesses, row.misses, row.page_faults), (3, 3, 2, 2), "{row:?}");
}

/// The example of a traced application (examples/accelsim-vecadd.toml) runs beside a
/// built-in one: every warp instruction and request of its trace, its footprint the three
/// 2 MiB chunks its buffers touch, in `gpu.csv` under its name.
#[test]
fn the_traced_application_example_runs_beside_a_built_in_one() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let text = std::fs::read_to_string(examples.join("accelsim-vecadd.toml")).unwrap();
    let (spec, result) = run_text(&text, &examples);
    let xlat::source::SourceSpec::Gpu { apps } = &spec.workloads[0].source else { panic!("a gpu workload") };
    assert_eq!(apps[1].footprint(), 6 << 20);
    let result = result.unwrap();
    let rows = result.workloads[0].gpu[0].rows("bfs-and-vecadd");
    let vecadd = &rows[1];
    // Eight warps of seven instructions, three of them global accesses of one line each.
    assert_eq!((vecadd.app.as_str(), vecadd.instructions, vecadd.requests), ("vecadd", 56, 24));
    assert!(vecadd.ipc > 0.0 && rows[0].requests > 0 && !vecadd.partial);
}

/// A missing or malformed trace in a `gpu` workload's applications is refused before
/// running, naming the application's field and the reader's file and line.
#[test]
fn a_bad_traced_application_names_its_field_and_the_traces_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kernelslist.g"), "kernel-1.traceg\n").unwrap();
    std::fs::write(dir.path().join("kernel-1.traceg"), "-accelsim tracer version = 4\n#BEGIN_TB\nwarp = 0\ninsts = 1\n0010 1 0 LDG.E 0 4 9 0x10\n#END_TB\n").unwrap();
    let experiment = |trace: &str| format!("[[workload]]\nname = \"w\"\ntype = \"gpu\"\napps = [\"bfs\", {{ trace = {trace:?} }}]\n[[machine]]\nname = \"g\"\nkind = \"gpu\"\n");
    let e = parse_experiment(&experiment(dir.path().to_str().unwrap()), Path::new(".")).unwrap_err().to_string();
    assert!(e.contains("workload[0].apps[1].trace") && e.contains("kernel-1.traceg:5") && e.contains("address mode"), "{e}");
    let e = parse_experiment(&experiment("no/such/trace"), dir.path()).unwrap_err().to_string();
    assert!(e.contains("workload[0].apps[1].trace") && e.contains("no/such/trace"), "{e}");
    let e = parse_experiment(&experiment("").replace("trace = \"\"", "trace = \"\", app = \"bfs\""), Path::new(".")).unwrap_err().to_string();
    assert!(e.contains("apps") && e.contains("line 4"), "a table with both `app` and `trace` is refused: {e}");
}
