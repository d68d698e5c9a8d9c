//! Scratch directories a command makes for its own use (the trace `bench` writes and reads):
//! removed when dropped, or by [`remove_all`] when the process exits at once on a second
//! Ctrl-C, which drops nothing.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The list of scratch directories, even if a thread panicked while holding it.
fn dirs() -> MutexGuard<'static, Vec<PathBuf>> {
    DIRS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A new temporary directory.
pub fn dir() -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    let mut list = dirs();
    // Directories dropped since are gone: keep the list to those still there.
    list.retain(|p| p.exists());
    list.push(dir.path().to_path_buf());
    Ok(dir)
}

/// Removes every scratch directory still there, for a process about to exit without
/// unwinding.
pub fn remove_all() {
    for path in dirs().drain(..) {
        let _ = std::fs::remove_dir_all(path);
    }
}
