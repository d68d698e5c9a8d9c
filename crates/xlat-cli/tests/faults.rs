//! Fault injection on the `xlat` binary (docs/reliability.md): outputs on a full disk, in a
//! read-only or vanished directory, the process killed while writing; input traces cut at
//! every block boundary, corrupted at random bytes, or growing while read.
//!
//! Mounting a small tmpfs (a real full disk) needs root; where it is refused, those tests say
//! so and return. The others (`/dev/full`, a file-size limit standing in for a full disk)
//! always run.

mod common;

use common::{listing, text, wait_at_most, xlat, EXPERIMENT};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A tmpfs of a given size mounted on a fresh directory, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`mount -o size=`), or prints why `test` is skipped and
    /// returns `None` where mounting is not permitted (not root, a container without the
    /// capability).
    fn mount(size: &str, test: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(dir.path()).output();
        match mounted {
            Ok(out) if out.status.success() => Some(Tmpfs { dir }),
            Ok(out) => skip(test, &format!("mounting a tmpfs was refused ({})", text(&out.stderr).trim())),
            Err(e) => skip(test, &format!("mount could not run ({e})")),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the file system: a file grows until the disk is full.
    fn fill(&self) {
        use std::io::Write;
        let mut filler = std::fs::File::create(self.path().join("filler")).unwrap();
        while filler.write_all(&[0xaa; 4096]).is_ok() {}
    }

    /// Makes the file system read-only, files and all.
    fn remount_read_only(&self) {
        let status = Command::new("mount").args(["-o", "remount,ro"]).arg(self.path()).status().unwrap();
        assert!(status.success(), "remounting read-only");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: a killed child's leftovers must not keep the mount (and the test) alive.
        let _ = Command::new("umount").arg("-l").arg(self.path()).status();
    }
}

/// Prints that `test` is skipped and why, for a test that cannot run here.
fn skip<T>(test: &str, why: &str) -> Option<T> {
    eprintln!("note: {test} skipped: {why}");
    None
}

/// `EXPERIMENT` with another seed, whose results differ from its.
fn reseeded(seed: u64) -> String {
    format!("seed = {seed}\n{EXPERIMENT}")
}

/// A Lackey trace of `lines` loads spread over 64 MiB, each line 16 bytes, in `dir/name`.
fn lackey_loads(dir: &Path, name: &str, lines: u64) -> PathBuf {
    let path = dir.join(name);
    let text: String = (0..lines).map(|i| format!(" L {:010x},8\n", 0x10_0000_0000u64 + (splitmix(i) >> 38 & !7))).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// Writes `small.lackey` and `big.lackey` of `small` and `big` loads into `dir`, and the
/// conversion of the small one to `earlier`: an earlier output for a later one to replace.
fn small_big_and_earlier(dir: &Path, small: u64, big: u64, earlier: &str) {
    lackey_loads(dir, "small.lackey", small);
    lackey_loads(dir, "big.lackey", big);
    assert!(xlat(&["trace", "convert", "small.lackey", earlier], dir).status.success());
}

/// SplitMix64's finalizer: a hash of `i` whose successive values do not compress (as a
/// multiple of `i` would, to almost nothing), so that traces take some room.
fn splitmix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ z >> 30).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ z >> 27).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ z >> 31
}

/// Asserts that `out` is the failure of a write to `path` with `cause`: exit code 1, a message
/// naming the file, no panic.
fn assert_write_failed(out: &Output, path: &str, cause: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("{path}: ")) && err.contains(cause) && !err.contains("panicked"), "{err}");
}

/// Results on a full disk: exit code 1 naming the file, and the earlier run's results stay as
/// they were, all of them (none replaced before the failing one), with no temporary file left.
#[test]
fn results_on_a_full_disk_keep_the_earlier_ones() {
    let Some(disk) = Tmpfs::mount("256k", "results_on_a_full_disk_keep_the_earlier_ones") else { return };
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.toml"), reseeded(1)).unwrap();
    std::fs::write(work.path().join("b.toml"), reseeded(2)).unwrap();
    let res = disk.path().join("res");
    let res_arg = res.to_str().unwrap();
    assert!(xlat(&["run", "a.toml", "--out", res_arg, "-q"], work.path()).status.success());
    let before = [std::fs::read(res.join("results.csv")).unwrap(), std::fs::read(res.join("results.json")).unwrap()];
    disk.fill();
    let out = xlat(&["run", "b.toml", "--out", res_arg, "-q"], work.path());
    assert_write_failed(&out, &format!("{res_arg}/results.csv"), "No space left on device");
    let after = [std::fs::read(res.join("results.csv")).unwrap(), std::fs::read(res.join("results.json")).unwrap()];
    assert!(before == after, "the earlier results changed");
    assert_eq!(listing(&res), ["results.csv", "results.json"]);
}

/// A trace converted onto a full disk: exit code 1 naming the output, nothing left, in the
/// native and Lackey formats (ChampSim's writer shares Lackey's path, `trace::io`).
#[test]
fn traces_on_a_full_disk_leave_nothing() {
    let Some(disk) = Tmpfs::mount("128k", "traces_on_a_full_disk_leave_nothing") else { return };
    let work = tempfile::tempdir().unwrap();
    lackey_loads(work.path(), "in.lackey", 100_000);
    disk.fill();
    for name in ["out.xlat", "out.lackey"] {
        let target = disk.path().join(name);
        let out = xlat(&["trace", "convert", "in.lackey", target.to_str().unwrap()], work.path());
        assert_write_failed(&out, target.to_str().unwrap(), "No space left on device");
        assert_eq!(listing(disk.path()), ["filler"], "{name}");
    }
}

/// `/dev/full` named as an output: refused before anything is written (renaming a file over
/// it would replace the device, as root), exit code 1 naming it; it stays a device.
#[test]
fn dev_full_as_an_output_is_refused_and_left_alone() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), EXPERIMENT).unwrap();
    lackey_loads(dir.path(), "in.lackey", 100);
    for (args, wanted) in [
        (&["trace", "convert", "in.lackey", "/dev/full"][..], "/dev/full: exists and is not a regular file"),
        (&["trace", "convert", "in.lackey", "/dev/full", "--to", "lackey"], "/dev/full: exists and is not a regular file"),
        (&["trace", "record", "-o", "/dev/full", "--", "true"], "/dev/full: exists and is not a regular file"),
        (&["run", "exp.toml", "--out", "/dev/full"], "/dev/full: is not a directory"),
        (&["hash", "vectors", "--out", "/dev/full", "--keys", "10"], "/dev/full: is not a directory"),
    ] {
        let out = xlat(args, dir.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(wanted), "{args:?}: {err}");
        assert!(std::fs::metadata("/dev/full").unwrap().file_type().is_char_device());
    }
}

/// Every command that prints, its standard output `/dev/full`: exit code 1 with `writing to
/// standard output`, never a panic.
#[test]
fn every_printing_command_reports_a_full_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), EXPERIMENT).unwrap();
    lackey_loads(dir.path(), "in.lackey", 100);
    for args in [
        &["presets"][..],
        &["presets", "skylake-like"],
        &["schema"],
        &["workload", "list"],
        &["workload", "info", "gups", "--scale", "tiny"],
        &["workload", "check", "btree", "--scale", "tiny", "--set", "lookups=100", "--json"],
        &["trace", "info", "in.lackey"],
        &["trace", "info", "in.lackey", "--json"],
        &["run", "exp.toml"],
        &["bench", "--filter", "tlb1024x4-uniform-2MiB", "--refs", "1000", "--json"],
    ] {
        let full = std::fs::File::create("/dev/full").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_xlat")).args(args).current_dir(dir.path()).stdout(full).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("writing to standard output: No space left on device") && !err.contains("panicked"), "{args:?}: {err}");
    }
}

/// Runs `args` in `dir` under a file-size limit of 8 KiB (`ulimit -f 16` in 512-byte blocks)
/// with SIGXFSZ ignored: a write past it fails with EFBIG, as one on a full disk fails with
/// ENOSPC, without needing a disk to fill.
fn with_file_size_limit(args: &[&str], dir: &Path) -> Output {
    let script = format!("trap '' XFSZ; ulimit -f 16 && exec '{}' \"$@\"", env!("CARGO_BIN_EXE_xlat"));
    Command::new("sh").args(["-c", &script, "xlat"]).args(args).current_dir(dir).output().unwrap()
}

/// A write that fails part way (here at a file-size limit, wherever tmpfs cannot be mounted):
/// the earlier trace and results stay whole, nothing is left beside them.
#[test]
fn a_write_failing_part_way_keeps_earlier_outputs_whole() {
    let dir = tempfile::tempdir().unwrap();
    small_big_and_earlier(dir.path(), 10, 20_000, "out.xlat");
    let before = std::fs::read(dir.path().join("out.xlat")).unwrap();
    let out = with_file_size_limit(&["trace", "convert", "big.lackey", "out.xlat"], dir.path());
    assert_write_failed(&out, "out.xlat", "File too large");
    assert_eq!(std::fs::read(dir.path().join("out.xlat")).unwrap(), before);
    // results.csv (a few hundred bytes) fits under the limit, results.json does not: neither
    // is replaced.
    std::fs::write(dir.path().join("a.toml"), reseeded(1)).unwrap();
    std::fs::write(dir.path().join("b.toml"), reseeded(2).replace("\n[[machine]]", "\n[[machine]]\nname = \"m2\"\npreset = \"skylake-like\"\n\n[[machine]]")).unwrap();
    assert!(xlat(&["run", "a.toml", "--out", "res", "-q"], dir.path()).status.success());
    let results = || ["results.csv", "results.json"].map(|f| std::fs::read(dir.path().join("res").join(f)).unwrap());
    let before = results();
    let out = with_file_size_limit(&["run", "b.toml", "--out", "res", "-q"], dir.path());
    assert_write_failed(&out, "res/results.json", "File too large");
    assert!(results() == before, "results.csv was replaced beside the old results.json");
    assert_eq!(listing(dir.path()), ["a.toml", "b.toml", "big.lackey", "out.xlat", "res", "small.lackey"]);
    assert_eq!(listing(&dir.path().join("res")), ["results.csv", "results.json"]);
}

/// A read-only directory: as root (whom permissions do not stop) a tmpfs remounted read-only,
/// otherwise a directory of mode 0555. Outputs there are refused before any work, naming the
/// directory, and what was there stays.
#[test]
fn a_read_only_directory_is_refused_before_any_work() {
    let test = "a_read_only_directory_is_refused_before_any_work";
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("exp.toml"), EXPERIMENT).unwrap();
    lackey_loads(work.path(), "in.lackey", 100);
    let root = text(&Command::new("id").arg("-u").output().unwrap().stdout).trim() == "0";
    let disk = if root { Tmpfs::mount("1m", test) } else { None };
    if root && disk.is_none() {
        return;
    }
    let ro = disk.as_ref().map_or_else(|| work.path().join("ro"), |d| d.path().to_path_buf());
    let res = ro.join("res");
    std::fs::create_dir_all(&res).unwrap();
    assert!(xlat(&["run", "exp.toml", "--out", res.to_str().unwrap(), "-q"], work.path()).status.success());
    let before = std::fs::read(res.join("results.csv")).unwrap();
    make_read_only(disk.as_ref(), &[&ro, &res]);
    let cause = if root { "Read-only file system" } else { "Permission denied" };
    let out = xlat(&["run", "exp.toml", "--out", res.to_str().unwrap()], work.path());
    assert_write_failed(&out, res.to_str().unwrap(), cause);
    assert!(out.stdout.is_empty(), "nothing was simulated: {}", text(&out.stdout));
    let fresh = ro.join("new");
    let out = xlat(&["run", "exp.toml", "--out", fresh.to_str().unwrap()], work.path());
    assert_write_failed(&out, fresh.to_str().unwrap(), cause);
    let trace = ro.join("out.xlat");
    let out = xlat(&["trace", "convert", "in.lackey", trace.to_str().unwrap()], work.path());
    assert_write_failed(&out, trace.to_str().unwrap(), cause);
    assert_eq!(std::fs::read(res.join("results.csv")).unwrap(), before);
    assert_eq!((listing(&ro), listing(&res)), (vec!["res".to_string()], vec!["results.csv".to_string(), "results.json".to_string()]));
    make_writable(disk.is_none(), &[&ro, &res]);
}

/// Makes `dirs` read-only: the whole tmpfs `disk` if there is one, else each directory's mode.
fn make_read_only(disk: Option<&Tmpfs>, dirs: &[&Path]) {
    use std::os::unix::fs::PermissionsExt;
    match disk {
        Some(disk) => disk.remount_read_only(),
        None => dirs.iter().for_each(|d| std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o555)).unwrap()),
    }
}

/// Undoes [`make_read_only`]'s modes so that the temporary directory can be removed.
fn make_writable(modes: bool, dirs: &[&Path]) {
    use std::os::unix::fs::PermissionsExt;
    if modes {
        dirs.iter().for_each(|d| std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap());
    }
}

/// Waits until `path` exists, at most 20 s.
fn wait_for(path: &Path) {
    let started = std::time::Instant::now();
    while !path.exists() {
        assert!(started.elapsed() < Duration::from_secs(20), "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The output directory deleted while the run simulates: the results are written all the
/// same, into the directory made again (a run of hours is not thrown away for it).
#[test]
fn an_output_directory_deleted_mid_run_is_made_again() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("long.toml"), EXPERIMENT.replace("refs = 20000", "refs = 100_000_000_000")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["run", "long.toml", "--out", "res", "--quiet"])
        .current_dir(dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `res` is made (and checked) before simulating.
    wait_for(&dir.path().join("res"));
    std::fs::remove_dir_all(dir.path().join("res")).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    common::interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("res/results.json")).unwrap()).unwrap();
    assert_eq!(json["partial"], true);
    assert_eq!(listing(&dir.path().join("res")), ["results.csv", "results.json"]);
}

/// The output's directory deleted while a conversion writes into it: exit code 1 naming the
/// output, and no file anywhere (the temporary file went with the directory).
#[test]
fn a_trace_output_directory_deleted_mid_conversion_is_an_error() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xlat"))
        .args(["trace", "convert", "-", "out/t.xlat"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"I  0400d7d4,8\n L 7ff000398,8\n").unwrap();
    let started = std::time::Instant::now();
    while listing(&dir.path().join("out")).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(20), "no temporary file appeared");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    stdin.write_all(b" S 7ff0003a0,8\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_write_failed(&out, "out/t.xlat", "No such file or directory");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

/// Delays after start at which the SIGKILL tests kill xlat: from before it reads its input to
/// after it has written everything, the writing itself in between.
const KILL_DELAYS_MS: [u64; 12] = [0, 2, 5, 10, 15, 20, 30, 45, 60, 80, 120, 250];

/// Runs `args` in `dir` and kills it with SIGKILL `delay_ms` after it starts, or, when
/// `delay_ms` is `None`, as soon as a temporary output file appears in `watch` (mid-write).
/// Returns where it was killed, for the test's log: `exited` when it had finished, `writing`
/// when it left a temporary file in `watch`, else `working`.
fn killed(args: &[&str], dir: &Path, delay_ms: Option<u64>, watch: &Path) -> &'static str {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xlat")).args(args).current_dir(dir).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    match delay_ms {
        Some(ms) => std::thread::sleep(Duration::from_millis(ms)),
        None => {
            while !has_temporary(watch) && child.try_wait().unwrap().is_none() {
                std::thread::yield_now();
            }
        }
    }
    let done = child.try_wait().unwrap().is_some();
    let _ = child.kill();
    wait_at_most(&mut child, Duration::from_secs(10));
    match (done, has_temporary(watch)) {
        (true, _) => "exited",
        (false, true) => "writing",
        (false, false) => "working",
    }
}

/// Whether `dir` exists and holds a temporary output file.
fn has_temporary(dir: &Path) -> bool {
    std::fs::read_dir(dir).into_iter().flatten().flatten().any(|e| e.file_name().to_string_lossy().starts_with(".xlat-partial-"))
}

/// `xlat run --out` killed (SIGKILL) at points from start to end, over an earlier run's
/// results: each result file is always either the earlier run's, whole, or this run's, whole
/// (never cut), and a directory without results gets none or whole ones.
#[test]
fn results_killed_at_any_point_are_old_or_new_never_cut() {
    let dir = tempfile::tempdir().unwrap();
    // Many machines make result files of some size, so that killing lands mid-write too.
    let machines: String = (0..40).map(|i| format!("[[machine]]\nname = \"m{i}\"\npreset = \"single-tlb\"\nentries = {}\nways = 4\n", 16 << (i % 8))).collect();
    let workload = EXPERIMENT.split("[[machine]]").next().unwrap();
    for (name, seed) in [("old.toml", 1), ("new.toml", 2)] {
        std::fs::write(dir.path().join(name), format!("seed = {seed}\n{workload}{machines}")).unwrap();
    }
    assert!(xlat(&["run", "old.toml", "--out", "old", "-q"], dir.path()).status.success());
    assert!(xlat(&["run", "new.toml", "--out", "new", "-q"], dir.path()).status.success());
    let whole = |run: &str| std::fs::read(dir.path().join(run).join("results.csv")).unwrap();
    let (old_csv, new_csv) = (whole("old"), whole("new"));
    assert_ne!(old_csv, new_csv);
    let points = KILL_DELAYS_MS.iter().map(|&ms| Some(ms)).chain([None, None, None]);
    for (i, delay) in points.enumerate() {
        let res = dir.path().join(format!("res{i}"));
        let fresh = i % 2 == 1;
        if !fresh {
            copy_dir(&dir.path().join("old"), &res);
        }
        let at = killed(&["run", "new.toml", "--out", res.file_name().unwrap().to_str().unwrap(), "-q"], dir.path(), delay, &res);
        let case = format!("killed after {delay:?} ms ({at}), {}", if fresh { "no earlier results" } else { "over earlier results" });
        eprintln!("{case}");
        let csv = std::fs::read(res.join("results.csv")).ok();
        assert!(csv.as_ref().is_none_or(|c| *c == new_csv || (!fresh && *c == old_csv)), "{case}: results.csv cut");
        if let Ok(json) = std::fs::read(res.join("results.json")) {
            let json: serde_json::Value = serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{case}: results.json cut: {e}"));
            assert_eq!(json["results"][0]["machines"].as_array().map(Vec::len), Some(40), "{case}");
            assert!(json["seed"] == 2 || (!fresh && json["seed"] == 1), "{case}");
        }
    }
}

/// Copies the files of `from` into a new directory `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    for name in listing(from) {
        std::fs::copy(from.join(&name), to.join(&name)).unwrap();
    }
}

/// `xlat trace convert` killed (SIGKILL) at points from start to end: the output is absent,
/// the earlier trace whole, or the new one whole; every file there reads to its end.
#[test]
fn a_conversion_killed_at_any_point_leaves_old_or_new_never_cut() {
    let dir = tempfile::tempdir().unwrap();
    small_big_and_earlier(dir.path(), 1000, 300_000, "old.xlat");
    let points = KILL_DELAYS_MS.iter().map(|&ms| Some(ms)).chain([None, None, None]);
    for (i, delay) in points.enumerate() {
        let sub = dir.path().join(format!("k{i}"));
        std::fs::create_dir(&sub).unwrap();
        let fresh = i % 2 == 1;
        if !fresh {
            std::fs::copy(dir.path().join("old.xlat"), sub.join("out.xlat")).unwrap();
        }
        let out = format!("k{i}/out.xlat");
        let at = killed(&["trace", "convert", "big.lackey", &out], dir.path(), delay, &sub);
        let case = format!("killed after {delay:?} ms ({at}), {}", if fresh { "no earlier trace" } else { "over an earlier trace" });
        eprintln!("{case}");
        if sub.join("out.xlat").exists() {
            let info = xlat(&["trace", "info", &out, "--json"], dir.path());
            assert!(info.status.success(), "{case}: {}", text(&info.stderr));
            let refs = serde_json::from_slice::<serde_json::Value>(&info.stdout).unwrap()["references"].as_u64();
            assert!(refs == Some(300_000) || (!fresh && refs == Some(1000)), "{case}: {refs:?} references");
        } else {
            assert!(fresh, "{case}: the earlier trace is gone");
        }
    }
}

/// A native trace of 5 blocks and a bit (65,536 references each) converted from Lackey, with
/// its bytes and the file offsets of its blocks, index and footer.
fn native_with_blocks(dir: &Path) -> (Vec<u8>, Vec<u64>) {
    lackey_loads(dir, "blocks.lackey", 5 * 65_536 + 100);
    assert!(xlat(&["trace", "convert", "blocks.lackey", "blocks.xlat"], dir).status.success());
    let bytes = std::fs::read(dir.join("blocks.xlat")).unwrap();
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let footer = bytes.len() - 16;
    let index = u64_at(footer) as usize;
    let blocks = u64_at(index + 8) as usize;
    assert_eq!(blocks, 6, "five blocks of 65,536 references and one of 100");
    // Index entries (32 bytes) follow the index's magic and three counts; each starts with
    // its block's offset.
    let offsets = (0..blocks).map(|b| u64_at(index + 32 + 32 * b));
    (bytes.clone(), offsets.chain([index as u64, footer as u64]).collect())
}

/// Runs `args` in `dir`, failing the test if it takes over 20 s (a hang).
fn bounded(args: &[&str], dir: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xlat")).args(args).current_dir(dir).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_at_most(&mut child, Duration::from_secs(20));
    child.wait_with_output().unwrap()
}

/// A native trace cut at every block boundary (and a byte either side), at the index and in
/// the footer: `trace info` and `run` exit with code 1 naming the file and the byte offset.
#[test]
fn a_native_trace_cut_at_every_block_boundary_is_an_error_naming_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, boundaries) = native_with_blocks(dir.path());
    std::fs::write(dir.path().join("exp.toml"), EXPERIMENT.replace("type = \"uniform\"\nfootprint = \"4MiB\"\nrefs = 20000", "type = \"trace\"\npath = \"cut.xlat\"")).unwrap();
    let cuts = boundaries.iter().flat_map(|&b| [b - 1, b, b + 1]).chain([bytes.len() as u64 - 1]);
    for cut in cuts {
        std::fs::write(dir.path().join("cut.xlat"), &bytes[..cut as usize]).unwrap();
        for args in [&["trace", "info", "cut.xlat"][..], &["run", "exp.toml", "-q"]] {
            let out = bounded(args, dir.path());
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "cut at {cut}, {args:?}: {err}");
            assert!(err.contains("cut.xlat: at byte offset ") && !err.contains("panicked"), "cut at {cut}, {args:?}: {err}");
        }
    }
}

/// A small deterministic generator (xorshift64*), so that the corrupted bytes are the same on
/// every run.
struct Xorshift(u64);

impl Xorshift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// A native trace corrupted at random bytes (seeded): `trace info` either exits with code 1
/// naming the file and offset, or, where the byte holds nothing checked (the metadata's text),
/// reports the same references; never a panic, a hang or other counts.
#[test]
fn a_native_trace_corrupted_at_random_bytes_is_an_error_or_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = native_with_blocks(dir.path());
    let whole = xlat(&["trace", "info", "blocks.xlat", "--json"], dir.path());
    let summary = |json: &[u8]| {
        let v: serde_json::Value = serde_json::from_slice(json).unwrap();
        [&v["references"], &v["loads"], &v["stores"], &v["pages"], &v["instructions"]].map(ToString::to_string)
    };
    let expected = summary(&whole.stdout);
    let mut random = Xorshift(0x5eed_1234_abcd_0001);
    let mut errors = 0;
    for round in 0..120 {
        let mut bad = bytes.clone();
        let at = random.below(bad.len() as u64) as usize;
        bad[at] ^= 1 + random.below(255) as u8;
        std::fs::write(dir.path().join("bad.xlat"), &bad).unwrap();
        let out = bounded(&["trace", "info", "bad.xlat", "--json"], dir.path());
        let err = text(&out.stderr);
        match out.status.code() {
            Some(0) => assert_eq!(summary(&out.stdout), expected, "round {round}, byte {at}: a different answer"),
            Some(1) => {
                assert!(err.contains("bad.xlat: at byte offset ") && !err.contains("panicked"), "round {round}, byte {at}: {err}");
                errors += 1;
            }
            _ => panic!("round {round}, byte {at}: {:?} {err}", out.status),
        }
    }
    assert!(errors > 100, "only {errors} of 120 corruptions were found");
}

/// A Lackey trace growing while read (a program still writing it): xlat reads to the end it
/// finds and stops there, counting the whole lines written by then; it does not wait for more.
#[test]
fn a_lackey_trace_growing_while_read_is_read_to_the_end_found() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    // 256 lines of 16 bytes: each append is one whole page, so a reader sees whole lines.
    let chunk: String = (0..256u64).map(|i| format!(" L {:010x},8\n", 0x10_0000_0000u64 + 8 * i)).collect();
    assert_eq!(chunk.len(), 4096);
    let path = dir.path().join("growing.lackey");
    std::fs::write(&path, chunk.repeat(64)).unwrap();
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = std::sync::Arc::clone(&stop);
    let writer = std::thread::spawn(move || {
        // At most 20 MB/s, slower than xlat reads, so that it reaches the end while the file
        // still grows; 80 MB at most.
        let mut chunks = 64u64;
        while !stopped.load(std::sync::atomic::Ordering::Relaxed) && chunks < 20_000 {
            file.write_all(chunk.as_bytes()).unwrap();
            chunks += 1;
            std::thread::sleep(Duration::from_micros(200));
        }
        chunks
    });
    let out = bounded(&["trace", "info", "growing.lackey", "--json"], dir.path());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written = writer.join().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let refs = serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["references"].as_u64().unwrap();
    eprintln!("read {refs} references of {} written, {} there at the start", written * 256, 64 * 256);
    assert!(refs % 256 == 0 && (64 * 256..=written * 256).contains(&refs), "{refs} references of {} written", written * 256);
}
