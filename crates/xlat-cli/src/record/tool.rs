//! Building the Valgrind recording tool on first use.
//!
//! A Valgrind tool is a static executable linked with the core's libraries, which Debian's
//! `valgrind` package ships together with the headers. xlat compiles its tool
//! (`valgrind/xlat_record.c`) with the system C compiler into a cache directory keyed by a
//! hash of the source, the Valgrind version and the build command, and runs Valgrind with
//! `VALGRIND_LIB` pointing at a directory that holds the tool next to links to the system's
//! own Valgrind files (the preloaded core library, default suppressions, ...).

use anyhow::{anyhow, bail, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tool's C source, compiled on first use.
const SOURCE: &str = include_str!("../../valgrind/xlat_record.c");
/// The name given to `valgrind --tool=`.
pub const TOOL_NAME: &str = "xlatrec";
/// Valgrind's name for the platform; tools are found as `$VALGRIND_LIB/NAME-PLATFORM`.
const PLATFORM: &str = "amd64-linux";
/// Valgrind loads tools at this address, clear of where it places the client program.
const LOAD_ADDRESS: &str = "0x58000000";

/// What it takes to run `valgrind --tool=xlatrec`.
pub struct Tool {
    /// The directory to pass as `VALGRIND_LIB`.
    pub lib_dir: PathBuf,
    /// `valgrind --version`, e.g. `valgrind-3.19.0`.
    pub valgrind_version: String,
}

/// Finds Valgrind and returns the tool, building it if the user's cache does not hold it yet.
pub fn prepare() -> Result<Tool> {
    prepare_in(&cache_root())
}

/// [`prepare`] with the cache in `root` (tests keep theirs apart from the user's).
pub fn prepare_in(root: &Path) -> Result<Tool> {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        bail!("xlat trace record supports x86-64 Linux only (the Valgrind tool is built for amd64-linux)");
    }
    let version = valgrind_version()?;
    let system = Installation::find()?;
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let (compile, link) = build_args(&system);
    let key = {
        let mut h = xxhash_rust::xxh64::Xxh64::new(0);
        for part in
            [SOURCE, &version, &compiler, &compile.join(" "), &link.join(" "), &system.lib.display().to_string()]
        {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        h.digest()
    };
    let dir = root.join(format!("valgrind-tool-{key:016x}"));
    if !dir.join(tool_file()).is_file() {
        build(&dir, &system, &compiler, &compile, &link)
            .map_err(|e| anyhow!("building the Valgrind recording tool: {e}"))?;
    }
    Ok(Tool { lib_dir: dir, valgrind_version: version })
}

fn tool_file() -> String {
    format!("{TOOL_NAME}-{PLATFORM}")
}

/// `valgrind --version`, or an error saying how to install Valgrind.
fn valgrind_version() -> Result<String> {
    let out = match Command::new("valgrind").arg("--version").output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("valgrind is not installed; install it with: apt-get install valgrind")
        }
        Err(e) => return Err(anyhow!("running valgrind --version: {e}")),
    };
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || !version.starts_with("valgrind-") {
        bail!("valgrind --version failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(version)
}

/// Where the system's Valgrind keeps its headers, static libraries and run-time files.
struct Installation {
    /// Holds `pub_tool_basics.h`.
    include: PathBuf,
    /// Holds `libcoregrind-amd64-linux.a` and the other libraries a tool links with.
    lib: PathBuf,
    /// The system's `VALGRIND_LIB`: holds `vgpreload_core-amd64-linux.so` and the tools.
    runtime: PathBuf,
}

impl Installation {
    /// Looks in the places distributions put Valgrind (Debian first); `VALGRIND_LIB`, if
    /// set, names the run-time directory.
    fn find() -> Result<Installation> {
        let env_lib = std::env::var_os("VALGRIND_LIB").map(PathBuf::from);
        let libdirs =
            ["/usr/lib/x86_64-linux-gnu/valgrind", "/usr/lib64/valgrind", "/usr/lib/valgrind", "/usr/libexec/valgrind"];
        let candidates = |extra: &[&str]| -> Vec<PathBuf> {
            env_lib.iter().cloned().chain(extra.iter().chain(&libdirs).map(PathBuf::from)).collect()
        };
        let find = |dirs: Vec<PathBuf>, file: &str, what: &str| {
            dirs.iter().find(|d| d.join(file).is_file()).cloned().ok_or_else(|| {
                let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
                anyhow!(
                    "{what} not found: no {file} in {} (Debian's valgrind package ships it: apt-get install valgrind)",
                    looked.join(", ")
                )
            })
        };
        let include = ["/usr/include/valgrind", "/usr/local/include/valgrind"].map(PathBuf::from).to_vec();
        Ok(Installation {
            include: find(include, "pub_tool_basics.h", "Valgrind's tool headers")?,
            lib: find(candidates(&[]), &format!("libcoregrind-{PLATFORM}.a"), "Valgrind's static libraries")?,
            runtime: find(
                candidates(&["/usr/local/libexec/valgrind"]),
                &format!("vgpreload_core-{PLATFORM}.so"),
                "Valgrind's run-time files",
            )?,
        })
    }
}

/// The compiler's arguments for compiling and for linking, following how Valgrind builds its
/// own tools: no C library, no start files, static, at Valgrind's tool load address.
fn build_args(system: &Installation) -> (Vec<String>, Vec<String>) {
    let compile = [
        "-O2",
        "-g",
        "-std=gnu99",
        "-Wall",
        "-DVGA_amd64=1",
        "-DVGO_linux=1",
        "-DVGP_amd64_linux=1",
        "-DVGPV_amd64_linux_vanilla=1",
        // The core has its own libc replacements and no stack-protector or PIE support.
        "-fno-strict-aliasing",
        "-fno-builtin",
        "-fno-stack-protector",
        "-fno-pie",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("-I{}", system.include.display())])
    .collect();
    let link = ["-static", "-nodefaultlibs", "-nostartfiles", "-u", "_start", "-no-pie", "-Wl,--build-id=none"]
        .iter()
        .map(|s| s.to_string())
        .chain([
            format!("-Wl,-Ttext-segment={LOAD_ADDRESS}"),
            format!("-L{}", system.lib.display()),
            // Order matters for static archives: the core uses VEX, both use the support code.
            format!("-lcoregrind-{PLATFORM}"),
            format!("-lvex-{PLATFORM}"),
            format!("-lgcc-sup-{PLATFORM}"),
            "-lgcc".to_string(),
        ])
        .collect();
    (compile, link)
}

/// The cache directory: `$XDG_CACHE_HOME/xlat`, else `~/.cache/xlat`, else the temporary
/// directory.
fn cache_root() -> PathBuf {
    let base = match (std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME")) {
        (Some(x), _) if !x.is_empty() => PathBuf::from(x),
        (_, Some(h)) if !h.is_empty() => Path::new(&h).join(".cache"),
        _ => std::env::temp_dir(),
    };
    base.join("xlat")
}

/// Compiles and links the tool in a fresh directory, adds links to the system's run-time
/// files, then renames the directory to `dir`. Concurrent builds are harmless: the first
/// rename wins and the others use its result.
fn build(dir: &Path, system: &Installation, compiler: &str, compile: &[String], link: &[String]) -> Result<()> {
    let parent = dir.parent().expect("the cache directory has a parent");
    std::fs::create_dir_all(parent).map_err(|e| anyhow!("creating {}: {e}", parent.display()))?;
    let work = tempfile::Builder::new()
        .prefix(".building-")
        .tempdir_in(parent)
        .map_err(|e| anyhow!("creating a directory in {}: {e}", parent.display()))?;
    let source = work.path().join("xlat_record.c");
    std::fs::write(&source, SOURCE).map_err(|e| anyhow!("writing {}: {e}", source.display()))?;
    let object = work.path().join("xlat_record.o");
    run_compiler(
        compiler,
        compile.iter().map(String::as_str).chain(["-c", path_str(&source)?, "-o", path_str(&object)?]),
    )?;
    let exe = work.path().join(tool_file());
    run_compiler(
        compiler,
        [path_str(&object)?, "-o", path_str(&exe)?].into_iter().chain(link.iter().map(String::as_str)),
    )?;
    std::fs::remove_file(&source)
        .and_then(|()| std::fs::remove_file(&object))
        .map_err(|e| anyhow!("removing build files: {e}"))?;
    link_runtime(&system.runtime, work.path())?;
    let built = work.keep();
    if let Err(e) = std::fs::rename(&built, dir) {
        let _ = std::fs::remove_dir_all(&built);
        if !dir.join(tool_file()).is_file() {
            return Err(anyhow!("moving the tool into {}: {e}", dir.display()));
        }
    }
    Ok(())
}

fn path_str(p: &Path) -> Result<&str> {
    p.to_str().ok_or_else(|| anyhow!("{}: the path is not UTF-8", p.display()))
}

/// Runs the C compiler, turning its failure into an error that shows its messages.
fn run_compiler<'a>(compiler: &str, args: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let args: Vec<&str> = args.into_iter().collect();
    let out = match Command::new(compiler).args(&args).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("no C compiler: `{compiler}` was not found (install one with: apt-get install gcc, or set CC)")
        }
        Err(e) => return Err(anyhow!("running {compiler}: {e}")),
    };
    if !out.status.success() {
        bail!(
            "{compiler} {} failed ({}):\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    Ok(())
}

/// Links every file of the system's Valgrind run-time directory into `dir`, so Valgrind finds
/// its core files there next to the tool.
fn link_runtime(runtime: &Path, dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(runtime).map_err(|e| anyhow!("listing {}: {e}", runtime.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| anyhow!("listing {}: {e}", runtime.display()))?;
        let target = dir.join(entry.file_name());
        std::os::unix::fs::symlink(entry.path(), &target).map_err(|e| anyhow!("linking {}: {e}", target.display()))?;
    }
    Ok(())
}
