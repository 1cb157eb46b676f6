//! The Linux kernel's own 9p client (v9fs) against 9agents: a throwaway
//! qemu guest running Debian's kernel and busybox mounts the daemon with
//! `mount -t 9p -o trans=unix` with its defaults (9P2000.L) and over
//! 9P2000.u and 9P2000, and checks what a person at a shell would see —
//! the dialect the mount speaks, listings, bytes, sizes, mtimes and owners,
//! hidden credentials, refused writes and their errnos, `stat -f`, a
//! transcript growing, parallel readers, a 5,000-file directory and a
//! 40,000-message chat listed whole, thousands of files held open, the
//! same through `cache=loose` and `cache=mmap`; under .L, extended
//! attributes (none) and flocks (a shared one granted, an exclusive one
//! refused); and an agent moved by writing a name into its `zmx`, with
//! `--allow-move` and a fake zmx. docs/KERNEL.md says what it needs and how
//! to run the guest by hand.
//!
//! The guest prints one `PASS <name>` or `FAIL <name>: <why>` line a
//! check (tests/kernel/init.sh); they are written to stderr as they come
//! (past the test harness's capture, so a passing run shows them too), and
//! the test fails listing every FAIL. Without qemu, the packages (no apt,
//! no network) or a static C compiler the test prints `kernel test
//! SKIPPED: <why>` and passes; with `CI` set that is a failure instead,
//! because `.ci/run` installs them.

mod active_fakes;
mod chat_fakes;
mod common;
#[path = "kernel/cpio.rs"]
mod cpio;
#[path = "kernel/fixture.rs"]
mod fixture;
#[path = "kernel/forward.rs"]
mod forward;
#[path = "kernel/guest.rs"]
mod guest;
#[path = "kernel/kit.rs"]
mod kit;
mod sshd;

use std::io::Write;
use std::path::{Path, PathBuf};

use common::{Scratch, BIN};
use guest::{Mode, Stage};

/// Where the packages, the kit and the last run are kept: beside the
/// binary's profile directory, in the target directory Cargo used.
fn cache_dir() -> PathBuf {
    Path::new(BIN).parent().and_then(Path::parent).expect("the binary lives in target/<profile>/").join("kernel-guest")
}

/// Straight to fd 2, past the test harness's capture.
fn say(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// The guest's lines worth showing as they come: checks, timings, the
/// init's own, and kernel messages (only warnings and worse reach the
/// console).
fn shown(line: &str) -> bool {
    ["PASS ", "FAIL ", "INFO ", "TIME ", "9agents-guest:", "["].iter().any(|p| line.starts_with(p))
}

/// `Err(why)` from a missing prerequisite: a skip, or a failure on CI.
fn skip_or_fail(why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "CI is set but the kernel test cannot run: {why}; .ci/run must install it"
    );
    say(&format!("kernel test SKIPPED: {why}"));
}

fn mode() -> Mode {
    if std::env::var_os("NINEAGENTS_GUEST_SHELL").is_some_and(|v| v == "1") {
        Mode::Shell
    } else if let Some(cmd) = std::env::var_os("NINEAGENTS_GUEST_CMD") {
        Mode::Cmd(cmd.into_string().expect("NINEAGENTS_GUEST_CMD is UTF-8"))
    } else {
        Mode::Checks
    }
}

#[test]
fn the_linux_9p_client_sees_the_fixture_exactly_and_is_refused_every_write() {
    let cache = cache_dir();
    std::fs::create_dir_all(&cache).unwrap();
    if let Err(why) = guest::qemu_present() {
        return skip_or_fail(&why);
    }
    let kit = match kit::get(&cache) {
        Ok(k) => k,
        Err(why) => return skip_or_fail(&why),
    };
    let scratch = Scratch::new();
    let probe = scratch.root.join("probe");
    if let Err(why) = guest::compile_probe(&probe) {
        return skip_or_fail(&why);
    }
    let stage = Stage { root: scratch.root.join("initramfs") };
    fixture::build(&stage);
    let initrd = scratch.root.join("initramfs.cpio");
    let mode = mode();
    let bin = match std::env::var_os("NINEAGENTS_GUEST_BIN") {
        Some(path) => PathBuf::from(path),
        None => guest::release_binary(&cache).unwrap_or_else(|e| panic!("{e}")),
    };
    mode.stage(&stage);
    let bins =
        [(bin.as_path(), "/bin/9agents"), (probe.as_path(), "/bin/probe"), (probe.as_path(), fixture::MOVE_AGENT)];
    let init = include_bytes!("kernel/init.sh");
    guest::initramfs(&stage, &kit, init, &bins, &initrd).unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir_all(&stage.root).unwrap();
    say(&format!("kernel test: booting Linux {} with busybox ({} MB initramfs)", kit.release, mb(&initrd)));
    let everything = matches!(mode, Mode::Cmd(_));
    let echo = |line: &str| {
        if everything || shown(line) {
            say(line);
        }
    };
    // The host's forward the guest mounts (`remote/forward`), if this
    // machine has an sshd.
    let forward = forward::start(&scratch);
    if forward.is_none() {
        say("kernel test: no sshd here: the guest's remote/forward check is skipped");
    }
    let extra = forward.as_ref().map(forward::Forward::qemu_args).unwrap_or_default();
    let run =
        guest::boot(&kit, &initrd, &cache, &mode, guest::RUN_DEADLINE, &extra, &echo).unwrap_or_else(|e| panic!("{e}"));
    drop(forward);
    if let Mode::Shell = mode {
        return;
    }
    let kept = guest::keep_last(&cache, &kit, &initrd, &run.lines);
    say(&format!(
        "kernel test: {}: /init after {:.1} s, powered off after {:.1} s; console in {}",
        run.accel,
        run.boot.as_secs_f64(),
        run.total.as_secs_f64(),
        kept.join("console.log").display()
    ));
    if let Mode::Checks = mode {
        judge(&run.lines);
    }
}

/// Fail listing every FAIL; fail too if the guest did not finish or
/// checked nothing.
fn judge(lines: &[String]) {
    let fails: Vec<&String> = lines.iter().filter(|l| l.starts_with("FAIL ")).collect();
    let passes = lines.iter().filter(|l| l.starts_with("PASS ")).count();
    let done = lines.iter().any(|l| l.starts_with(guest::DONE_LINE));
    let tail = lines[lines.len().saturating_sub(20)..].join("\n");
    assert!(
        done,
        "the guest did not finish its checks ({passes} passed, {} failed); its last lines:\n{tail}",
        fails.len()
    );
    assert!(passes > 0 || !fails.is_empty(), "the guest printed no check at all:\n{tail}");
    let list: Vec<&str> = fails.iter().map(|s| s.as_str()).collect();
    assert!(fails.is_empty(), "{} of {} guest checks failed:\n{}", fails.len(), passes + fails.len(), list.join("\n"));
}

fn mb(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len() >> 20)
}
