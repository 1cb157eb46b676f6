//! What the guest is made of, from Debian's packages: the kernel of
//! `linux-image-amd64` and the modules the 9p client needs, and
//! `busybox-static` as the whole userland. Fetched with `apt-get download`
//! and unpacked with `dpkg -x` (no root, nothing installed), once: the
//! pieces are kept in `target/kernel-guest/kit/` and every later run uses
//! them without asking apt anything. Remove that directory to fetch the
//! current packages again.
//!
//! The image package ships no `modules.dep` (depmod writes it when the
//! package is installed), so the modules' order comes from their own
//! `depends=` field in `.modinfo`, the list the kernel build records from
//! the symbols each module uses. A compressed module (`.ko.xz`, `.ko.zst`,
//! `.ko.gz`) is decompressed here, so busybox's `insmod` never has to.
//!
//! Every missing piece is an `Err` saying what is missing and how to get
//! it: the test skips with it, or fails on CI.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The modules the test mounts with; their dependencies are added. The
/// virtio serial port (`virtio_pci`, `virtio_console`) carries a socket
/// the host forwards over ssh (`kernel/forward.rs`).
const WANTED_MODULES: [&str; 7] = ["9pnet", "9pnet_fd", "netfs", "fscache", "9p", "virtio_pci", "virtio_console"];
/// The metapackage whose dependency is the current kernel image.
const IMAGE_META: &str = "linux-image-amd64";
const BUSYBOX: &str = "busybox-static";

/// The cached pieces.
pub(crate) struct Kit {
    pub vmlinuz: PathBuf,
    pub busybox: PathBuf,
    /// Module files, in the order they must be loaded.
    pub modules: Vec<PathBuf>,
    /// The kernel's release (`6.1.0-57-amd64`).
    pub release: String,
}

/// The kit under `cache`, fetched first if it is not there.
pub(crate) fn get(cache: &Path) -> Result<Kit, String> {
    let dir = cache.join("kit");
    // A kit of other modules (an older test's) is fetched again.
    let ready = fs::read_to_string(dir.join("READY")).unwrap_or_default();
    if !ready.contains(&modules_line()) {
        fetch(cache, &dir)?;
    }
    let order = fs::read_to_string(dir.join("modules/order")).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(Kit {
        vmlinuz: dir.join("vmlinuz"),
        busybox: dir.join("busybox"),
        modules: order.lines().map(|m| dir.join("modules").join(m)).collect(),
        release: fs::read_to_string(dir.join("release")).map_err(|e| e.to_string())?.trim().to_string(),
    })
}

/// Download, unpack and pick the pieces into `dir`, atomically (a fetch
/// cut short leaves no `READY`).
fn fetch(cache: &Path, dir: &Path) -> Result<(), String> {
    let work = cache.join("download");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| format!("mkdir {}: {e}", work.display()))?;
    let line =
        format!("kernel test: fetching {IMAGE_META} and {BUSYBOX} with apt-get download into {}\n", work.display());
    // Straight to fd 2: a first run is slower, and says why.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    download(&work, &[IMAGE_META, BUSYBOX])?;
    let meta = only_file(&work, &format!("{IMAGE_META}_"))?;
    let depends = run(Command::new("dpkg-deb").arg("-f").arg(&meta).arg("Depends"))?;
    let image = depends
        .split([' ', ',', '|'])
        .next()
        .filter(|s| s.starts_with("linux-image-"))
        .ok_or(format!("{IMAGE_META} depends on {depends:?}, not a linux-image package"))?;
    download(&work, &[image])?;
    let root = work.join("x");
    for deb in [only_file(&work, &format!("{image}_"))?, only_file(&work, &format!("{BUSYBOX}_"))?] {
        run(Command::new("dpkg").arg("-x").arg(&deb).arg(&root))?;
    }
    let staging = cache.join("kit.new");
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(staging.join("modules")).map_err(|e| e.to_string())?;
    let vmlinuz = only_file(&root.join("boot"), "vmlinuz-")?;
    let release = vmlinuz.file_name().unwrap().to_str().unwrap()["vmlinuz-".len()..].to_string();
    copy(&vmlinuz, &staging.join("vmlinuz"))?;
    copy(&root.join("bin/busybox"), &staging.join("busybox"))?;
    let moddir = [root.join("lib/modules").join(&release), root.join("usr/lib/modules").join(&release)]
        .into_iter()
        .find(|p| p.is_dir())
        .ok_or(format!("{image} holds no lib/modules/{release}"))?;
    let mut order = String::new();
    for (name, bytes) in load_order(&moddir)? {
        fs::write(staging.join("modules").join(format!("{name}.ko")), bytes).map_err(|e| e.to_string())?;
        order.push_str(&format!("{name}.ko\n"));
    }
    fs::write(staging.join("modules/order"), order).map_err(|e| e.to_string())?;
    fs::write(staging.join("release"), &release).map_err(|e| e.to_string())?;
    fs::write(staging.join("READY"), format!("{image} + {BUSYBOX}\n{}\n", modules_line()))
        .map_err(|e| e.to_string())?;
    let _ = fs::remove_dir_all(dir);
    fs::rename(&staging, dir).map_err(|e| format!("rename {} to {}: {e}", staging.display(), dir.display()))?;
    let _ = fs::remove_dir_all(&work);
    Ok(())
}

/// What `READY` says of the modules a kit was made with.
fn modules_line() -> String {
    format!("modules: {}", WANTED_MODULES.join(" "))
}

/// `apt-get download PKGS` in `dir`.
fn download(dir: &Path, pkgs: &[&str]) -> Result<(), String> {
    if Command::new("apt-get").arg("--version").output().is_err() {
        return Err("apt-get is missing: the guest is made of Debian packages".into());
    }
    let out = Command::new("apt-get")
        .arg("download")
        .args(pkgs)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("apt-get download: {e}"))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "apt-get download {} failed (no network, or run apt-get update?): {}",
            pkgs.join(" "),
            why.trim()
        ));
    }
    Ok(())
}

/// The one file in `dir` whose name starts with `prefix`.
fn only_file(dir: &Path, prefix: &str) -> Result<PathBuf, String> {
    let found: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix)))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!("expected one {prefix}* in {}, found {found:?}", dir.display())),
    }
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    fs::copy(from, to).map(|_| ()).map_err(|e| format!("copy {} to {}: {e}", from.display(), to.display()))
}

/// Run `cmd` to success; its stdout, trimmed.
pub(crate) fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?}: {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `WANTED_MODULES` and everything they depend on, each once, every
/// module after its dependencies: (name, uncompressed bytes).
fn load_order(moddir: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut files = HashMap::new();
    index(&moddir.join("kernel"), &mut files)?;
    let mut order = Vec::new();
    for m in WANTED_MODULES {
        visit(m, &files, &mut order, 0)?;
    }
    Ok(order)
}

/// How deep a dependency chain may go before it is called a cycle.
const DEPENDS_DEPTH_MAX: usize = 32;

fn visit(
    name: &str,
    files: &HashMap<String, PathBuf>,
    order: &mut Vec<(String, Vec<u8>)>,
    depth: usize,
) -> Result<(), String> {
    if order.iter().any(|(n, _)| n == name) {
        return Ok(());
    }
    if depth > DEPENDS_DEPTH_MAX {
        return Err(format!("module dependencies deeper than {DEPENDS_DEPTH_MAX} at {name}: a cycle?"));
    }
    let path = files.get(name).ok_or(format!("the kernel package has no module {name}"))?;
    let bytes = uncompressed(path)?;
    for dep in depends(&bytes) {
        visit(&dep, files, order, depth + 1)?;
    }
    order.push((name.to_string(), bytes));
    Ok(())
}

/// Every module file below `dir`, by module name (`-` read as `_`, as
/// the kernel does).
fn index(dir: &Path, out: &mut HashMap<String, PathBuf>) -> Result<(), String> {
    for e in fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = e.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            index(&path, out)?;
            continue;
        }
        let file = path.file_name().unwrap().to_str().unwrap_or("");
        if let Some(i) = file.find(".ko") {
            if matches!(&file[i..], ".ko" | ".ko.xz" | ".ko.zst" | ".ko.gz") {
                out.insert(file[..i].replace('-', "_"), path.clone());
            }
        }
    }
    Ok(())
}

/// A module's bytes, decompressed with the host's tool if it is compressed.
fn uncompressed(path: &Path) -> Result<Vec<u8>, String> {
    let name = path.to_str().unwrap();
    let tool = if name.ends_with(".xz") {
        "xz"
    } else if name.ends_with(".zst") {
        "zstd"
    } else if name.ends_with(".gz") {
        "gzip"
    } else {
        return fs::read(path).map_err(|e| format!("{name}: {e}"));
    };
    let out = Command::new(tool).arg("-dc").arg(path).output().map_err(|e| format!("{tool} -dc {name}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{tool} -dc {name}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(out.stdout)
}

/// The names in a module's `.modinfo` `depends=` field: a NUL-terminated
/// `depends=a,b` string in the section every module carries.
fn depends(module: &[u8]) -> Vec<String> {
    let Some(at) = memchr::memmem::find(module, b"\0depends=") else { return Vec::new() };
    let rest = &module[at + b"\0depends=".len()..];
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end]).split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect()
}
