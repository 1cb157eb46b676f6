//! The guest: its initramfs, assembled in a staging directory and written
//! as one newc archive, and its run under `qemu-system-x86_64`.
//!
//! The initramfs holds an `/init` (the kernel test's is `init.sh`, the diod
//! bench's `bench/diod/init.sh`), busybox, the binaries the run names with
//! the shared libraries `ldd` names for them (the 9agents binary; the
//! probe, `probe.c`, compiled `gcc -static`; diod's), the 9p modules and
//! whatever the run staged: the fixture worlds. Both the kernel test and
//! the bench include this file (and `kit.rs`, `cpio.rs`) with `#[path]`.
//! The guest has no network device, its kernel console is the serial port
//! on qemu's stdio, and it powers itself off: qemu runs with `-no-reboot`,
//! so a kernel panic ends the run as well.
//!
//! KVM is used when `/dev/kvm` opens and works. "Works" is not something
//! an open can tell (on our CI machine the device exists and a KVM guest
//! never runs; on another, qemu aborts setting up the vCPU), so a KVM boot
//! that has not reached `/init` within `KVM_INIT_DEADLINE`, or whose qemu
//! exited before it did, is given up, remembered in the cache, and the run
//! starts over under TCG. `NINEAGENTS_GUEST_ACCEL=tcg|kvm` decides
//! instead.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::cpio;
use crate::kit::{run, Kit};

/// The guest's memory: the initramfs (~40 MB) unpacks into it, and the
/// kernel's caches of 40,000 dentries live there.
const GUEST_MEMORY_MIB: u32 = 1024;
/// One vCPU: under TCG a second one makes every 9P round trip a
/// cross-CPU wake-up, and an `ls -l` of 2,000 entries 1.5 times slower.
/// The parallel readers still interleave on it.
const GUEST_CPUS: u32 = 1;
/// A KVM guest reaches `/init` in about a second; past this it is hung.
const KVM_INIT_DEADLINE: Duration = Duration::from_secs(20);
/// How long the kernel test's run may take before the guest is called
/// stuck: its checks take about 6 minutes under TCG on a 2-core machine,
/// and twice that when the machine is busy.
pub(crate) const RUN_DEADLINE: Duration = Duration::from_secs(1200);
/// The line `/init` prints first.
const INIT_LINE: &str = "9agents-guest: init at";
/// The line `/init` prints last, before powering off.
pub(crate) const DONE_LINE: &str = "9agents-guest: done";

/// What the guest does after setting up (`/fx/mode`).
pub(crate) enum Mode {
    Checks,
    Shell,
    Cmd(String),
}

impl Mode {
    /// Tell the guest: `/fx/mode` holds `checks`, `shell` or `cmd`, and
    /// `/fx/cmd` the command.
    pub(crate) fn stage(&self, stage: &Stage) {
        let (word, cmd) = match self {
            Mode::Checks => ("checks", ""),
            Mode::Shell => ("shell", ""),
            Mode::Cmd(c) => ("cmd", c.as_str()),
        };
        stage.write("/fx/mode", word.as_bytes());
        stage.write("/fx/cmd", cmd.as_bytes());
    }
}

/// The initramfs's root on the host.
pub(crate) struct Stage {
    pub root: PathBuf,
}

impl Stage {
    /// The host path of the guest path `guest`.
    pub(crate) fn host(&self, guest: &str) -> PathBuf {
        self.root.join(guest.trim_start_matches('/'))
    }

    pub(crate) fn write(&self, guest: &str, data: &[u8]) -> PathBuf {
        let path = self.host(guest);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, data).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path
    }

    pub(crate) fn mkdir(&self, guest: &str) -> PathBuf {
        let path = self.host(guest);
        fs::create_dir_all(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        path
    }
}

/// Build the initramfs from `stage` (what the run needs already in it)
/// into `out`: `init` as `/init`, the kit's busybox and modules, and each
/// `(host path, guest path)` of `bins` with the shared libraries `ldd`
/// names for it (none for a static one).
pub(crate) fn initramfs(
    stage: &Stage,
    kit: &Kit,
    init: &[u8],
    bins: &[(&Path, &str)],
    out: &Path,
) -> Result<(), String> {
    stage.write("/init", init);
    set_mode(&stage.host("/init"), 0o755);
    install(stage, &kit.busybox, "/bin/busybox")?;
    for (host, guest) in bins {
        install(stage, host, guest)?;
        for lib in shared_libraries(host)? {
            install(stage, Path::new(&lib), &lib)?;
        }
    }
    let mut order = String::new();
    for m in &kit.modules {
        let name = m.file_name().unwrap().to_str().unwrap();
        install(stage, m, &format!("/lib/modules/guest/{name}"))?;
        order.push_str(name);
        order.push('\n');
    }
    stage.write("/lib/modules/guest/order", order.as_bytes());
    for dir in ["/proc", "/sys", "/dev", "/run", "/tmp", "/mnt"] {
        stage.mkdir(dir);
    }
    let file = fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = cpio::Writer::new(std::io::BufWriter::new(file));
    w.tree(&stage.root).map_err(|e| format!("cpio: {e}"))?;
    // The console the kernel opens for /init before devtmpfs is mounted.
    w.char_device("dev/console", 0o600, 5, 1).map_err(|e| format!("cpio: {e}"))?;
    w.finish().map_err(|e| format!("cpio: {e}"))?;
    Ok(())
}

fn install(stage: &Stage, from: &Path, guest: &str) -> Result<(), String> {
    let to = stage.host(guest);
    fs::create_dir_all(to.parent().unwrap()).map_err(|e| e.to_string())?;
    fs::copy(from, &to).map_err(|e| format!("copy {} into the guest: {e}", from.display()))?;
    set_mode(&to, 0o755);
    Ok(())
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// The absolute paths `ldd` says `bin` loads (the loader included); none
/// for a statically linked one.
fn shared_libraries(bin: &Path) -> Result<Vec<String>, String> {
    let out = match run(Command::new("ldd").arg(bin)) {
        Ok(out) => out,
        Err(e) if e.contains("not a dynamic executable") => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let libs: Vec<String> = out
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = l.split_once("=> ").map_or(l, |(_, p)| p);
            path.split_whitespace().next().filter(|p| p.starts_with('/')).map(str::to_owned)
        })
        .collect();
    if libs.is_empty() {
        return Err(format!("ldd {} named no library: {out}", bin.display()));
    }
    Ok(libs)
}

/// `gcc -static` the probe into `out`.
pub(crate) fn compile_probe(out: &Path) -> Result<(), String> {
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernel/probe.c");
    run(Command::new("gcc").args(["-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o"]).arg(out).arg(src))
        .map_err(|e| format!("gcc -static of tests/kernel/probe.c failed (is libc6-dev installed?): {e}"))?;
    Ok(())
}

/// The daemon the guest runs: a release build of this source, made with
/// its own target directory under `cache` (the outer `cargo test` may hold
/// the lock of its own). Under TCG an unoptimized daemon is what an
/// `ls -l` of a large chat waits for: 2,000 chat entries take 18 s with
/// the test profile's binary and 6 s with this one.
pub(crate) fn release_binary(cache: &Path) -> Result<PathBuf, String> {
    let target = cache.join("cargo");
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let status = Command::new(cargo)
        .args(["build", "--release", "--quiet", "--bin", "9agents", "--manifest-path"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .status()
        .map_err(|e| format!("{cargo} build --release: {e}"))?;
    if !status.success() {
        return Err(format!("{cargo} build --release of 9agents: {status}"));
    }
    Ok(target.join("release/9agents"))
}

/// `qemu-system-x86_64`, if it runs.
pub(crate) fn qemu_present() -> Result<(), String> {
    run(Command::new("qemu-system-x86_64").arg("--version"))
        .map(|_| ())
        .map_err(|e| format!("qemu-system-x86_64 is missing (apt-get install qemu-system-x86): {e}"))
}

/// One finished run: every console line, and when `/init` started.
pub(crate) struct Run {
    pub lines: Vec<String>,
    pub accel: &'static str,
    /// From qemu's start to `/init`'s first line.
    pub boot: Duration,
    pub total: Duration,
}

/// Boot the guest on `initrd` and collect its console until it powers off.
/// `echo` gets each line as it arrives. In `Mode::Shell` the console is
/// the test's own terminal and nothing is collected.
/// The guest is killed if it has not powered off `deadline` after qemu
/// started.
/// `extra` is more of qemu's arguments (a device).
pub(crate) fn boot(
    kit: &Kit,
    initrd: &Path,
    cache: &Path,
    mode: &Mode,
    deadline: Duration,
    extra: &[String],
    echo: &dyn Fn(&str),
) -> Result<Run, String> {
    let hangs = cache.join("kvm-hangs");
    let kvm = match std::env::var("NINEAGENTS_GUEST_ACCEL").as_deref() {
        Ok("kvm") => true,
        Ok("tcg") => false,
        Ok(other) => return Err(format!("NINEAGENTS_GUEST_ACCEL={other}: expected kvm or tcg")),
        Err(_) => !hangs.exists() && fs::OpenOptions::new().read(true).write(true).open("/dev/kvm").is_ok(),
    };
    if let Mode::Shell = mode {
        let status = qemu(kit, initrd, accel(kvm), extra).status().map_err(|e| format!("qemu: {e}"))?;
        let lines = vec![format!("qemu exited: {status}")];
        return Ok(Run { lines, accel: accel(kvm), boot: Duration::ZERO, total: Duration::ZERO });
    }
    if kvm {
        match collect(kit, initrd, "kvm", Some(KVM_INIT_DEADLINE), deadline, extra, echo)? {
            Some(run) => return Ok(run),
            None => {
                eprintln!("kernel test: a KVM guest did not reach /init (hung for {KVM_INIT_DEADLINE:?}, or qemu exited): using TCG (remembered in {})", hangs.display());
                let _ =
                    fs::write(&hangs, "a KVM guest hung or failed before /init; remove this file to try KVM again\n");
            }
        }
    }
    collect(kit, initrd, "tcg", None, deadline, extra, echo)?
        .ok_or_else(|| "the TCG guest never reached /init".to_string())
}

fn accel(kvm: bool) -> &'static str {
    if kvm {
        "kvm"
    } else {
        "tcg"
    }
}

fn qemu(kit: &Kit, initrd: &Path, accel: &str, extra: &[String]) -> Command {
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.args(["-accel", accel, "-m", &GUEST_MEMORY_MIB.to_string(), "-smp", &GUEST_CPUS.to_string()])
        .arg("-kernel")
        .arg(&kit.vmlinuz)
        .arg("-initrd")
        .arg(initrd)
        .args(["-append", "console=ttyS0 panic=-1 quiet loglevel=4"])
        .args(["-nic", "none", "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot"])
        .args(extra);
    if accel == "kvm" {
        cmd.args(["-cpu", "host"]);
    }
    if let (Ok(shift), "tcg") = (std::env::var("NINEAGENTS_GUEST_ICOUNT"), accel) {
        cmd.args(["-icount", &format!("shift={shift},sleep=off")]);
    }
    cmd
}

/// Run qemu, reading its console into lines. `None` when `init_deadline`
/// is given (a KVM try) and passed, or qemu exited, before `/init` spoke
/// (the guest is killed; what qemu said is printed).
fn collect(
    kit: &Kit,
    initrd: &Path,
    accel: &'static str,
    init_deadline: Option<Duration>,
    deadline: Duration,
    extra: &[String],
    echo: &dyn Fn(&str),
) -> Result<Option<Run>, String> {
    let start = Instant::now();
    let mut cmd = qemu(kit, initrd, accel, extra);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = Guard(cmd.spawn().map_err(|e| format!("qemu: {e}"))?);
    let (tx, rx) = mpsc::channel();
    for pipe in [
        child.0.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        child.0.stderr.take().map(|p| Box::new(p) as _),
    ] {
        let tx = tx.clone();
        let pipe = pipe.unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).split(b'\n') {
                let Ok(line) = line else { break };
                let text = String::from_utf8_lossy(&line).trim_end_matches('\r').to_string();
                if tx.send(text).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    let (mut lines, mut boot) = (Vec::new(), None);
    loop {
        let limit = match (boot, init_deadline) {
            (None, Some(d)) => d,
            _ => deadline,
        };
        let left = limit.checked_sub(start.elapsed()).unwrap_or_default();
        match rx.recv_timeout(left) {
            Ok(line) => {
                if boot.is_none() && line.contains(INIT_LINE) {
                    boot = Some(start.elapsed());
                }
                echo(&line);
                lines.push(line);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) if boot.is_none() && init_deadline.is_some() => return Ok(None),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let tail = lines[lines.len().saturating_sub(30)..].join("\n");
                return Err(format!("the guest ran past {deadline:?} and was killed; its last lines:\n{tail}"));
            }
        }
    }
    let status = child.0.wait().map_err(|e| e.to_string())?;
    if boot.is_none() && init_deadline.is_some() {
        eprintln!("kernel test: qemu -accel {accel} ({status}) never reached /init:\n{}", lines.join("\n"));
        return Ok(None);
    }
    let boot = boot.ok_or_else(|| format!("qemu ({status}) never reached /init:\n{}", lines.join("\n")))?;
    Ok(Some(Run { lines, accel, boot, total: start.elapsed() }))
}

/// qemu, killed and reaped if the run is abandoned.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Keep the last run's initramfs and console beside the kit, with the
/// command that boots it again by hand.
pub(crate) fn keep_last(cache: &Path, kit: &Kit, initrd: &Path, console: &[String]) -> PathBuf {
    let dir = cache.join("last");
    let _ = fs::create_dir_all(&dir);
    let kept = dir.join("initramfs.cpio");
    let _ = fs::rename(initrd, &kept).or_else(|_| fs::copy(initrd, &kept).map(|_| ()));
    let _ = fs::write(dir.join("console.log"), console.join("\n") + "\n");
    let script = format!(
        "#!/bin/sh\n# Boot the kernel test's last guest again (its /fx/mode is the one that run had).\n\
         exec qemu-system-x86_64 -accel ${{ACCEL:-tcg}} -m {GUEST_MEMORY_MIB} -smp {GUEST_CPUS} -kernel {} -initrd {} \\\n  \
         -append 'console=ttyS0 panic=-1 quiet loglevel=4' -nic none -display none -serial stdio -monitor none -no-reboot\n",
        kit.vmlinuz.display(),
        kept.display()
    );
    let run = dir.join("run.sh");
    let _ = fs::File::create(&run).and_then(|mut f| f.write_all(script.as_bytes()));
    set_mode(&run, 0o755);
    dir
}
