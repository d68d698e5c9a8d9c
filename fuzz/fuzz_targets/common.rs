//! What every trace target does: the input written to a file (the readers open paths), then
//! read to its end or its first error. A panic, a hang or an allocation past libFuzzer's limit
//! is a finding; an error is the expected answer to a bad file.

use std::io::Write;
use xlat::source::RefSource;
use xlat::trace::TraceFormat;
use xlat::Batch;

/// The target of one reader: `data` as a file of `format` named with its extension `ext`,
/// read to its end or its first error.
#[allow(dead_code)] // `detect` and `experiment` do not read a given format
pub fn read_as(data: &[u8], ext: &str, format: TraceFormat) {
    let (_dir, path) = file(&format!("input.{ext}"), data);
    if let Ok(source) = xlat::trace::open(&path, Some(format)) {
        drain(source);
    }
}

/// Writes `data` to a temporary file named `name` (its extension may tell the format) in a
/// fresh directory, in memory when the host has /dev/shm.
#[allow(dead_code)] // `convert` writes its own files
pub fn file(name: &str, data: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = scratch_dir();
    let path = dir.path().join(name);
    std::fs::File::create(&path).and_then(|mut f| f.write_all(data)).expect("the input written");
    (dir, path)
}

/// A fresh temporary directory, in memory when the host has /dev/shm.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.expect("a temporary directory")
}

/// Reads `source` to its end or its first error, in batches of varied sizes.
pub fn drain(mut source: Box<dyn RefSource>) {
    let mut batch = Batch::with_capacity(4096);
    for max in [1usize, 7, 4096].into_iter().cycle() {
        batch.clear();
        match source.fill(&mut batch, max) {
            Ok(0) | Err(_) => return,
            Ok(n) => assert!(n <= max && batch.refs.len() == n, "fill returned {n} of at most {max}"),
        }
    }
}
