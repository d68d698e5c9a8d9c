//! Atomic file output: everything xlat writes (traces, results) goes to a temporary file in the
//! destination directory and is renamed into place once complete, so an interrupted or failed
//! write never leaves a half-written file behind. Scratch directories a command makes for its
//! own files are removed with the temporaries when the process exits at once.

use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tempfile::NamedTempFile;

/// Temporary files [`temp_for`] created and [`persist`] has not renamed yet, and the
/// directories [`scratch_dir`] made. They delete themselves when dropped, but a process that
/// exits at once (a second Ctrl-C) drops nothing: [`remove_temporaries`] then deletes what is
/// listed here.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The list of pending temporary files, even if a thread panicked while holding it (a path
/// list cannot be left inconsistent).
fn pending() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Lists `path` for [`remove_temporaries`].
fn register(path: &Path) {
    let mut list = pending();
    // Entries of temporaries dropped since are stale: keep the list as short as the files
    // and directories actually there.
    list.retain(|p| p.exists());
    list.push(path.to_path_buf());
}

/// Deletes every temporary file of an output not yet renamed into place and every scratch
/// directory, for a process about to exit without unwinding. Those already dropped are gone
/// and are skipped.
pub fn remove_temporaries() {
    for path in pending().drain(..) {
        let _ = if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    }
}

/// A temporary directory for a command's own files (the trace `xlat bench` writes and reads),
/// deleted when dropped or by [`remove_temporaries`].
pub fn scratch_dir() -> Result<tempfile::TempDir> {
    let dir = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    register(dir.path());
    Ok(dir)
}

/// Checks that `path` can take an atomic output: it is not `-` (standard output cannot be
/// renamed into place; the file would silently be named `-`), and if it exists it is a
/// regular file (the rename would replace a symbolic link, a device such as `/dev/stdout` or
/// a pipe with a file instead of writing through it). [`temp_for`] applies it; callers with
/// long work before writing call it first.
pub fn check_output(path: &Path) -> Result<()> {
    if path == Path::new("-") {
        return Err(Error::config("-", "outputs cannot be written to standard output (each is written to a temporary file renamed into place); name an output file"));
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_file() {
            let why = "exists and is not a regular file; xlat writes a new file and renames it into place, which would replace it";
            return Err(Error::io(path, std::io::Error::other(why)));
        }
    }
    Ok(())
}

/// Creates the temporary file that will become `path` (in the same directory, so the final
/// rename is atomic), after [`check_output`]. Dropping it without [`persist`] deletes it.
pub fn temp_for(path: &Path) -> Result<NamedTempFile> {
    check_output(path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    temp_in(dir, path)
}

/// A temporary file in `dir`; an error names `output`, what the file was for.
fn temp_in(dir: &Path, output: &Path) -> Result<NamedTempFile> {
    let tmp = tempfile::Builder::new().prefix(".xlat-partial-").tempfile_in(dir).map_err(|e| Error::io(output, without_temp_name(e)))?;
    register(tmp.path());
    Ok(tmp)
}

/// A temporary file's creation error without the name tempfile appends to its message (`at
/// path "…/.xlat-partial-r98LsA"`): a name the user never gave, of a file that does not exist.
/// tempfile keeps the original error only inside its message, so the suffix is cut there.
fn without_temp_name(e: std::io::Error) -> std::io::Error {
    let message = e.to_string();
    match message.rsplit_once(" at path ") {
        Some((cause, _)) => std::io::Error::new(e.kind(), cause.to_string()),
        None => e,
    }
}

/// Checks that files can be written to `dir`, creating it if missing, by creating (and
/// removing) a temporary file there: called before long work, a bad output directory is then
/// an error at once (naming it, "is not a directory" for a file) instead of after the work.
pub fn check_output_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::io(dir, std::io::Error::other("is not a directory")));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    temp_in(dir, dir).map(drop)
}

/// Removes the output `path` if an earlier run left one, so that it is not taken for this
/// run's; refuses, as writing it would, what is not a regular file.
pub fn remove_stale(path: &Path) -> Result<()> {
    check_output(path)?;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path, e)),
        _ => Ok(()),
    }
}

/// Flushes `tmp` to disk, gives it ordinary permissions (temporary files are created
/// owner-only) and renames it to `path`.
pub fn persist(tmp: NamedTempFile, path: &Path) -> Result<()> {
    make_durable(&tmp, path)?;
    rename_into_place(tmp, path)
}

/// Flushes `tmp`, which will become `path`, to disk and gives it ordinary permissions
/// (temporary files are created owner-only): all that can fail before the rename but the
/// rename itself.
fn make_durable(tmp: &NamedTempFile, path: &Path) -> Result<()> {
    tmp.as_file().sync_all().map_err(|e| Error::io(path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::Permissions::from_mode(0o644);
        tmp.as_file().set_permissions(mode).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

/// Renames `tmp` to `path` and takes it off the list of pending temporaries.
fn rename_into_place(tmp: NamedTempFile, path: &Path) -> Result<()> {
    let name = tmp.path().to_path_buf();
    let result = tmp.persist(path);
    pending().retain(|p| *p != name);
    result.map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// Writes `path` atomically with `write`.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<&mut std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let mut set = Staged::default();
    set.write(path, write)?;
    set.persist()
}

/// A set of outputs that belong together (a run's result files), each written whole to its
/// temporary file first and all renamed into place by [`Staged::persist`] only once every one
/// is written: a failure writing any of them (a full disk) leaves every file of the set as an
/// earlier run left it, rather than new files beside old ones. Dropped without `persist`, it
/// deletes its temporaries and changes nothing.
#[derive(Default)]
pub struct Staged {
    /// Temporaries written, with the paths they become.
    written: Vec<(NamedTempFile, PathBuf)>,
    /// Outputs of an earlier run to remove (see [`remove_stale`]).
    stale: Vec<PathBuf>,
}

impl Staged {
    /// Writes the file that will become `path` with `write`, flushed to disk.
    pub fn write(
        &mut self,
        path: &Path,
        write: impl FnOnce(&mut std::io::BufWriter<&mut std::fs::File>) -> std::io::Result<()>,
    ) -> Result<()> {
        let mut tmp = temp_for(path)?;
        {
            let mut out = std::io::BufWriter::new(tmp.as_file_mut());
            write(&mut out).and_then(|()| out.flush()).map_err(|e| Error::io(path, e))?;
        }
        make_durable(&tmp, path)?;
        self.written.push((tmp, path.to_path_buf()));
        Ok(())
    }

    /// Removes, when the set is persisted, the output `path` if an earlier run left one
    /// ([`remove_stale`]); refuses now what is not a regular file.
    pub fn remove(&mut self, path: &Path) -> Result<()> {
        check_output(path)?;
        self.stale.push(path.to_path_buf());
        Ok(())
    }

    /// Renames every file written into place, then removes the stale ones.
    pub fn persist(self) -> Result<()> {
        for (tmp, path) in self.written {
            rename_into_place(tmp, &path)?;
        }
        self.stale.iter().try_for_each(|path| remove_stale(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn links_devices_and_directories_are_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        std::fs::write(&target, b"kept").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for path in [link.as_path(), Path::new("/dev/null"), dir.path()] {
            let e = write_atomically(path, |w| w.write_all(b"x")).unwrap_err().to_string();
            assert!(e.contains("not a regular file"), "{e}");
        }
        let e = write_atomically(Path::new("-"), |w| w.write_all(b"x")).unwrap_err().to_string();
        assert!(e.contains("standard output"), "{e}");
        assert!(!Path::new("-").exists());
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"kept");
    }

    /// An output that cannot be created is named as the user gave it, never by the name of
    /// the temporary file that failed (`/proc` takes no new files, even from root).
    #[test]
    #[cfg(target_os = "linux")]
    fn unwritable_outputs_are_named_as_given() {
        let e = check_output_dir(Path::new("/proc/self")).unwrap_err().to_string();
        assert!(e.starts_with("/proc/self: ") && !e.contains(".xlat-partial"), "{e}");
        let e = write_atomically(Path::new("/proc/out.txt"), |w| w.write_all(b"x")).unwrap_err().to_string();
        assert!(e.starts_with("/proc/out.txt: ") && !e.contains(".xlat-partial"), "{e}");
    }

    #[test]
    fn failed_write_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        let err = write_atomically(&path, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(err.is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        write_atomically(&path, |w| w.write_all(b"whole")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"whole");
        write_atomically(&path, |w| w.write_all(b"again")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"again", "a regular file is replaced");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
        }
    }

    /// A set whose last file fails changes none of its files: the first, written whole, is
    /// not renamed, and the stale file is not removed.
    #[test]
    fn a_staged_set_is_persisted_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, old) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("old"));
        for path in [&a, &b, &old] {
            std::fs::write(path, b"before").unwrap();
        }
        let mut set = Staged::default();
        set.write(&a, |w| w.write_all(b"after")).unwrap();
        set.remove(&old).unwrap();
        let failed = set.write(&b, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(failed.unwrap_err().to_string().contains("disk full"));
        drop(set);
        for path in [&a, &b, &old] {
            assert_eq!(std::fs::read(path).unwrap(), b"before", "{}", path.display());
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3, "no temporary left");
        let mut set = Staged::default();
        set.write(&a, |w| w.write_all(b"after")).unwrap();
        set.remove(&old).unwrap();
        set.persist().unwrap();
        assert_eq!((std::fs::read(&a).unwrap(), old.exists()), (b"after".to_vec(), false));
    }
}
