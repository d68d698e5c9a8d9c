//! Atomic file output: everything xlat writes (traces, results) goes to a temporary file in the
//! destination directory and is renamed into place once complete, so an interrupted or failed
//! write never leaves a half-written file behind.

use crate::{Error, Result};
use std::io::Write;
use std::path::Path;
use tempfile::NamedTempFile;

/// Creates the temporary file that will become `path` (in the same directory, so the final
/// rename is atomic). Dropping it without [`persist`] deletes it.
pub fn temp_for(path: &Path) -> Result<NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    tempfile::Builder::new().prefix(".xlat-partial-").tempfile_in(dir).map_err(|e| Error::io(path, e))
}

/// Flushes `tmp` to disk, gives it ordinary permissions (temporary files are created
/// owner-only) and renames it to `path`.
pub fn persist(tmp: NamedTempFile, path: &Path) -> Result<()> {
    tmp.as_file().sync_all().map_err(|e| Error::io(path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::Permissions::from_mode(0o644);
        tmp.as_file().set_permissions(mode).map_err(|e| Error::io(path, e))?;
    }
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// Writes `path` atomically with `write`.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<&mut std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let mut tmp = temp_for(path)?;
    {
        let mut out = std::io::BufWriter::new(tmp.as_file_mut());
        write(&mut out).and_then(|()| out.flush()).map_err(|e| Error::io(path, e))?;
    }
    persist(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
        }
    }
}
