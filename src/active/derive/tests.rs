//! Tests of the /active derivations against fixture process trees.
//!
//! Each test builds a world in a scratch directory — a fixture `<proc>`
//! (`<pid>/{stat,cmdline,environ,cwd,fd/}`, `stat` with `btime`, `locks`)
//! and a fixture home with the five harness bases — and runs `scan`,
//! `resolve` or `fields` to completion with `run`, a synchronous executor
//! that answers each `Want` from the disk with `std::fs` the way the
//! server's gatherer does through the ring: a path beneath its root with
//! no symlink at any depth, a file read only when it is regular, an
//! excluded name under a harness refused before the disk is asked.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirEntryExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use super::*;
use crate::exclude;
use crate::facts::Fact;
use crate::meta::Meta;

// ---------------------------------------------------------------------------
// The executor.

/// Rounds `run` allows one derivation before calling it a loop. The
/// server gives up at `GATHER_ROUNDS_MAX` (32); a derivation that needs
/// more than that fails there, so it fails here too.
const ROUNDS_MAX: usize = 32;

/// Every want a run fetched, with its answer, in order.
type Log = Vec<(Want, Result<Fact, i32>)>;

/// Run a derivation to its answer, fetching what it wants from the disk.
fn run<T>(
    proc_dir: &Path,
    harness_bases: &[PathBuf; Harness::COUNT],
    f: impl FnMut(&Facts, &mut Vec<Want>) -> Option<T>,
) -> T {
    run_logged(proc_dir, harness_bases, f).0
}

/// `run`, and every want it fetched with its answer, in order.
fn run_logged<T>(
    proc_dir: &Path,
    harness_bases: &[PathBuf; Harness::COUNT],
    mut f: impl FnMut(&Facts, &mut Vec<Want>) -> Option<T>,
) -> (T, Log) {
    let mut facts = Facts::default();
    let mut log = Vec::new();
    for _ in 0..ROUNDS_MAX {
        let mut needs = Vec::new();
        if let Some(answer) = f(&facts, &mut needs) {
            return (answer, log);
        }
        assert!(!needs.is_empty(), "a derivation that did not answer must want something");
        for want in needs {
            let fact = fetch(proc_dir, harness_bases, &want);
            log.push((want.clone(), fact.clone()));
            facts.insert(want, fact);
        }
    }
    panic!("the derivation wanted more than {ROUNDS_MAX} rounds of reads");
}

/// One want answered from the disk, as the server's gatherer would.
fn fetch(proc_dir: &Path, harness_bases: &[PathBuf; Harness::COUNT], want: &Want) -> Result<Fact, i32> {
    let (Want::Bytes { root, rel, .. }
    | Want::Tail { root, rel, .. }
    | Want::List { root, rel }
    | Want::Link { root, rel }
    | Want::Meta { root, rel }) = want;
    let (base, harness) = match root {
        Root::Proc => (proc_dir, false),
        Root::Harness(h) => (harness_bases[*h as usize].as_path(), true),
    };
    let path = beneath(base, rel, harness, matches!(want, Want::Link { .. }))?;
    match want {
        Want::Bytes { max, .. } => slurp(&path, *max, false),
        Want::Tail { max, .. } => slurp(&path, *max, true),
        Want::List { .. } => list(&path),
        Want::Link { .. } => {
            fs::read_link(&path).map(|t| Fact::Link(t.into_os_string().into_encoded_bytes())).map_err(errno)
        }
        Want::Meta { .. } => fs::symlink_metadata(&path).map_err(errno).and_then(|m| meta(&m)).map(Fact::Meta),
    }
}

/// `base/rel`, refused as the server refuses it: a component that is
/// empty, `.`, `..` or (under a harness) excluded answers EACCES; a
/// symlink at any depth answers ELOOP (`RESOLVE_NO_SYMLINKS`), except the
/// last component of a readlink, which is the link being read.
fn beneath(base: &Path, rel: &[u8], harness: bool, readlink: bool) -> Result<PathBuf, i32> {
    let mut path = base.to_path_buf();
    if rel.is_empty() {
        return Ok(path);
    }
    let parts: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty()
            || *part == b"."
            || *part == b".."
            || part.contains(&0)
            || (harness && exclude::excluded(part))
        {
            return Err(libc::EACCES);
        }
        path.push(std::ffi::OsStr::from_bytes(part));
        let last = i + 1 == parts.len();
        if last && readlink {
            break;
        }
        if fs::symlink_metadata(&path).map_err(errno)?.file_type().is_symlink() {
            return Err(libc::ELOOP);
        }
    }
    Ok(path)
}

/// The first (or last) `max` bytes of a regular file; anything else is
/// never opened (a FIFO would block), as the server's slurp refuses it.
fn slurp(path: &Path, max: u32, tail: bool) -> Result<Fact, i32> {
    let m = fs::symlink_metadata(path).map_err(errno)?;
    if !m.file_type().is_file() {
        return Err(libc::EINVAL);
    }
    let mut file = fs::File::open(path).map_err(errno)?;
    if tail {
        file.seek(SeekFrom::Start(m.len().saturating_sub(u64::from(max)))).map_err(errno)?;
    }
    let mut data = Vec::new();
    file.take(u64::from(max)).read_to_end(&mut data).map_err(errno)?;
    Ok(Fact::Bytes(data))
}

fn list(path: &Path) -> Result<Fact, i32> {
    let mut names = Vec::new();
    for entry in fs::read_dir(path).map_err(errno)? {
        let entry = entry.map_err(errno)?;
        let ft = entry.file_type().map_err(errno)?;
        let d_type = if ft.is_dir() {
            libc::DT_DIR
        } else if ft.is_symlink() {
            libc::DT_LNK
        } else if ft.is_fifo() {
            libc::DT_FIFO
        } else if ft.is_file() {
            libc::DT_REG
        } else {
            libc::DT_UNKNOWN
        };
        names.push(Name { name: entry.file_name().into_encoded_bytes(), ino: entry.ino(), d_type });
    }
    Ok(Fact::Names(std::rc::Rc::new(names)))
}

/// A statx of the path itself; a symlink is never served (ELOOP).
fn meta(m: &fs::Metadata) -> Result<Meta, i32> {
    if m.file_type().is_symlink() {
        return Err(libc::ELOOP);
    }
    Ok(Meta {
        dev: m.dev(),
        ino: m.ino(),
        mode: m.mode() as u16,
        nlink: m.nlink() as u32,
        size: m.size(),
        mtime: m.mtime(),
        uid: m.uid(),
        gid: m.gid(),
        btime: 0,
        ..Meta::default()
    })
}

fn errno(e: std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

// ---------------------------------------------------------------------------
// Fixture worlds.

/// The boot time every fixture `<proc>/stat` carries.
const BTIME: u64 = 1_795_800_000;
/// The pid fixture processes descend from, and the daemon's by default.
const INIT: u32 = 1;
/// The daemon's pid in a fixture: present in `<proc>`, not an agent.
const DAEMON: u32 = 900;

/// A scratch world: `proc/`, `home/` with the five harness bases, and a
/// `work/` and `tmp/` for cwds. Removed when dropped.
struct World {
    root: PathBuf,
    proc: PathBuf,
    home: PathBuf,
    bases: [PathBuf; Harness::COUNT],
}

impl World {
    fn new() -> World {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let name = format!("9a-derive-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let root = std::env::temp_dir().join(name);
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        // Readlink targets are canonical, and so must the bases be.
        let root = fs::canonicalize(&root).unwrap();
        let (proc, home) = (root.join("proc"), root.join("home"));
        let bases = Harness::ALL.map(|h| home.join(h.home_dir()));
        for dir in [&proc, &home, &root.join("work"), &root.join("tmp")].into_iter().chain(&bases) {
            fs::create_dir_all(dir).unwrap();
        }
        fs::write(proc.join("stat"), format!("cpu  1 2 3 4\nintr 5\nbtime {BTIME}\nprocesses 6\n")).unwrap();
        fs::write(proc.join("locks"), b"").unwrap();
        std::os::unix::fs::symlink(DAEMON.to_string(), proc.join("self")).unwrap();
        let w = World { root, proc, home, bases };
        w.add(&Proc::new(INIT, &["/sbin/init"]).ppid(0));
        w.add(&Proc::new(DAEMON, &["9agents"]));
        w
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            own_pid: DAEMON,
            real_bases: self.bases.clone().map(|b| Some(b.into_os_string().into_encoded_bytes())),
            home: self.home.as_os_str().as_bytes().to_vec(),
            tmp: self.root.join("tmp").into_os_string().into_encoded_bytes(),
            resolved: Vec::new(),
            known: Default::default(),
        }
    }

    fn base(&self, h: Harness) -> &Path {
        &self.bases[h.index()]
    }

    /// Write `data` at `rel` under harness `h`'s base, making directories.
    fn file(&self, h: Harness, rel: &str, data: &[u8]) -> PathBuf {
        let path = self.base(h).join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, data).unwrap();
        path
    }

    /// A directory `rel` under the world's root (a cwd), made.
    fn dir(&self, rel: &str) -> PathBuf {
        let path = self.root.join(rel);
        fs::create_dir_all(&path).unwrap();
        path
    }

    /// Write a fixture process into `<proc>/<pid>/`.
    fn add(&self, p: &Proc) {
        let dir = self.proc.join(p.pid.to_string());
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("fd")).unwrap();
        fs::write(dir.join("stat"), p.stat()).unwrap();
        fs::write(dir.join("cmdline"), &p.cmdline).unwrap();
        fs::write(dir.join("environ"), &p.environ).unwrap();
        let cwd = p.cwd.clone().unwrap_or_else(|| self.root.join("work"));
        std::os::unix::fs::symlink(cwd, dir.join("cwd")).unwrap();
        let dev_null = PathBuf::from("/dev/null");
        let fds = [&dev_null, &dev_null, &dev_null].into_iter().chain(&p.fds);
        for (n, target) in fds.enumerate() {
            std::os::unix::fs::symlink(target, dir.join("fd").join(n.to_string())).unwrap();
        }
    }

    fn append_locks(&self, lines: &str) {
        let mut all = fs::read_to_string(self.proc.join("locks")).unwrap();
        all.push_str(lines);
        fs::write(self.proc.join("locks"), all).unwrap();
    }

    fn scan(&self, ctx: &Ctx) -> Vec<Scanned> {
        run(&self.proc, &self.bases, |facts, needs| scan(ctx, facts, needs))
    }

    /// The one agent the scan found at `pid`.
    fn scanned(&self, pid: u32) -> Scanned {
        let all = self.scan(&self.ctx());
        all.into_iter().find(|s| s.found.pid == pid).unwrap_or_else(|| panic!("the scan did not find {pid}"))
    }

    /// The session the scan resolved for `pid` (`None`: no route answered).
    fn session(&self, pid: u32) -> Option<Session> {
        self.scanned(pid).session
    }

    fn fields(&self, found: &Found, session: Option<&Session>) -> Option<BTreeMap<Field, Vec<u8>>> {
        run(&self.proc, &self.bases, |facts, needs| super::fields(found, session, facts, needs))
    }

    /// Scan, then the fields of `pid` as text, `None` for an absent one.
    fn fields_of(&self, pid: u32) -> BTreeMap<&'static str, String> {
        let s = self.scanned(pid);
        let fields = self.fields(&s.found, s.session.as_ref()).expect("a live agent has fields");
        fields.into_iter().map(|(f, v)| (f.name(), String::from_utf8(v).unwrap())).collect()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// A fixture process: what `<proc>/<pid>/` will hold.
#[derive(Clone)]
struct Proc {
    pid: u32,
    ppid: u32,
    state: char,
    start: u64,
    cmdline: Vec<u8>,
    environ: Vec<u8>,
    cwd: Option<PathBuf>,
    /// fd 3 on; 0-2 are `/dev/null`.
    fds: Vec<PathBuf>,
}

impl Proc {
    fn new(pid: u32, argv: &[&str]) -> Proc {
        let cmdline = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
        Proc {
            pid,
            ppid: INIT,
            state: 'S',
            start: start_of(pid),
            cmdline,
            environ: Vec::new(),
            cwd: None,
            fds: Vec::new(),
        }
    }

    fn ppid(mut self, ppid: u32) -> Proc {
        self.ppid = ppid;
        self
    }

    fn state(mut self, state: char) -> Proc {
        self.state = state;
        self
    }

    fn start(mut self, start: u64) -> Proc {
        self.start = start;
        self
    }

    fn environ(mut self, environ: &[u8]) -> Proc {
        self.environ = environ.to_vec();
        self
    }

    fn cwd(mut self, cwd: &Path) -> Proc {
        self.cwd = Some(cwd.to_path_buf());
        self
    }

    fn fd(mut self, target: &Path) -> Proc {
        self.fds.push(target.to_path_buf());
        self
    }

    /// `<pid>/stat`: fields 5 to 21 between ppid and starttime (22).
    fn stat(&self) -> String {
        let comm =
            String::from_utf8_lossy(crate::active::paths::file_name(self.cmdline.split(|&b| b == 0).next().unwrap()))
                .chars()
                .take(15)
                .collect::<String>();
        let middle = vec!["0"; 17].join(" ");
        format!("{} ({comm}) {} {} {middle} {} 5000 300\n", self.pid, self.state, self.ppid, self.start)
    }
}

/// A fixture process's starttime: distinct per pid.
fn start_of(pid: u32) -> u64 {
    1_000_000 + u64::from(pid) * 7
}

fn found(h: Harness, pid: u32) -> Found {
    Found { harness: h, pid, starttime: start_of(pid) }
}

/// A UUIDv7 minted at `ms`, told apart from its siblings by `n`.
fn v7(ms: u64, n: u16) -> String {
    format!("{:08x}-{:04x}-7{:03x}-8{:03x}-{:012x}", ms >> 16, ms & 0xffff, n & 0xfff, n & 0xfff, n)
}

fn set_mtime(path: &Path, secs: u64) {
    let f = fs::File::options().append(true).open(path).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)).unwrap();
}

/// The rels a run wanted, as text.
fn wanted(log: &Log) -> Vec<String> {
    log.iter()
        .map(|(w, _)| {
            let (Want::Bytes { rel, .. }
            | Want::Tail { rel, .. }
            | Want::List { rel, .. }
            | Want::Link { rel, .. }
            | Want::Meta { rel, .. }) = w;
            String::from_utf8_lossy(rel).into_owned()
        })
        .collect()
}

fn pids(scanned: &[Scanned]) -> Vec<(u32, &'static str)> {
    let mut out: Vec<_> = scanned.iter().map(|s| (s.found.pid, s.found.harness.name())).collect();
    out.sort_unstable();
    out
}

// ---------------------------------------------------------------------------
// Claude Code fixtures.

const SID: &str = "4462ebfc-5f91-4ef0-9cfb-ac6e7687a66e";

/// A Claude Code transcript recording `cwd`, with a model and a title.
fn claude_transcript(cwd: &Path) -> String {
    let cwd = cwd.display();
    [
        format!(r#"{{"type":"user","cwd":"{cwd}","sessionId":"{SID}","message":{{"role":"user","content":"hi"}}}}"#),
        format!(r#"{{"type":"assistant","cwd":"{cwd}","message":{{"model":"claude-opus-4-5","content":[]}}}}"#),
        r#"{"type":"ai-title","aiTitle":"Fix the flaky test"}"#.to_string(),
        String::new(),
    ]
    .join("\n")
}

/// A registry record for `pid` (extra fields as real ones carry).
fn registry(pid: u32, sid: &str, cwd: &Path, proc_start: Option<u64>) -> String {
    let start = proc_start.map_or(String::new(), |s| format!(r#","procStart":"{s}""#));
    format!(
        r#"{{"pid":{pid},"sessionId":"{sid}","cwd":"{}","startedAt":1778572448459{start},"version":"2.1.139","kind":"interactive","status":"busy","name":"reviewer"}}"#,
        cwd.display()
    )
}

/// Claude Code's project directory for an ASCII cwd.
fn project_dir(cwd: &Path) -> String {
    cwd.as_os_str().as_bytes().iter().map(|&b| if b.is_ascii_alphanumeric() { b as char } else { '-' }).collect()
}

/// A claude process at `pid` in `cwd` with its record and transcript.
fn claude_agent(w: &World, pid: u32, cwd: &Path) -> PathBuf {
    w.add(&Proc::new(pid, &["claude"]).cwd(cwd));
    w.file(Harness::Claude, &format!("sessions/{pid}.json"), registry(pid, SID, cwd, Some(start_of(pid))).as_bytes());
    w.file(Harness::Claude, &format!("projects/{}/{SID}.jsonl", project_dir(cwd)), claude_transcript(cwd).as_bytes())
}

// ---------------------------------------------------------------------------
// Finding the agents.

#[test]
fn the_scan_lists_each_harness_by_argv0_and_never_a_helper_or_another_program() {
    let w = World::new();
    let cases: [(u32, &[&str]); 16] = [
        (10, &["claude"]),
        (11, &["claude", "mcp", "serve"]),
        (12, &["/usr/local/bin/codex", "--full-auto"]),
        (13, &["codex", "app-server"]),
        (14, &["omp"]),
        (15, &["omp", "__omp_worker_daemon_broker"]),
        (16, &["dsh"]),
        (17, &["python3", "-m", "hermes_cli.main"]),
        (18, &["python3", "-m", "hermes_cli.main", "gateway", "run"]),
        (19, &["/usr/bin/python3.11", "/home/u/.local/bin/hermes"]),
        (20, &["python3", "-c", "import hermes_cli.main"]),
        (21, &["node", "/usr/lib/node_modules/claude/cli.js"]),
        (22, &["bash"]),
        (23, &["/srv/serve/bin/claude"]),
        (24, &["hermes", "dashboard"]),
        (25, &["claude-helper"]),
    ];
    for (pid, argv) in cases {
        w.add(&Proc::new(pid, argv));
    }
    assert_eq!(
        pids(&w.scan(&w.ctx())),
        [(10, "claude"), (12, "codex"), (14, "omp"), (16, "dsh"), (17, "hermes"), (19, "hermes"), (23, "claude")]
    );
}

#[test]
fn the_daemons_own_pid_and_its_ancestors_are_never_listed() {
    let w = World::new();
    w.add(&Proc::new(300, &["codex"]));
    w.add(&Proc::new(400, &["claude"]).ppid(300));
    w.add(&Proc::new(401, &["claude"]).ppid(300));
    w.add(&Proc::new(DAEMON, &["claude"]).ppid(400));
    assert_eq!(pids(&w.scan(&w.ctx())), [(401, "claude")]);
}

#[test]
fn an_ancestry_that_loops_ends_and_still_excludes_the_loop() {
    let w = World::new();
    w.add(&Proc::new(400, &["claude"]).ppid(401));
    w.add(&Proc::new(401, &["claude"]).ppid(400));
    w.add(&Proc::new(402, &["claude"]));
    w.add(&Proc::new(DAEMON, &["9agents"]).ppid(400));
    assert_eq!(pids(&w.scan(&w.ctx())), [(402, "claude")]);
}

#[test]
fn zombies_and_dead_processes_are_not_listed() {
    let w = World::new();
    w.add(&Proc::new(30, &["claude"]).state('Z'));
    w.add(&Proc::new(31, &["codex"]).state('X'));
    w.add(&Proc::new(32, &["omp"]).state('R'));
    w.add(&Proc::new(33, &["dsh"]).state('D'));
    assert_eq!(pids(&w.scan(&w.ctx())), [(32, "omp"), (33, "dsh")]);
}

#[test]
fn a_pid_directory_with_nothing_readable_in_it_is_not_an_agent() {
    let w = World::new();
    fs::create_dir_all(w.proc.join("40")).unwrap();
    w.add(&Proc::new(41, &["claude"]));
    fs::remove_file(w.proc.join("41/stat")).unwrap();
    assert_eq!(pids(&w.scan(&w.ctx())), []);
}

#[test]
fn names_in_proc_that_are_not_pids_are_not_read_as_processes() {
    let w = World::new();
    w.add(&Proc::new(50, &["claude"]));
    for name in ["0", "050", "sys", "12a"] {
        let dir = w.proc.join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("cmdline"), b"claude\0").unwrap();
        fs::write(dir.join("stat"), Proc::new(51, &["claude"]).stat()).unwrap();
    }
    let (scanned, log) = run_logged(&w.proc, &w.bases, |facts, needs| scan(&w.ctx(), facts, needs));
    assert_eq!(pids(&scanned), [(50, "claude")]);
    assert!(
        !wanted(&log).iter().any(|r| r.starts_with("050/") || r.starts_with("0/") || r.starts_with("sys/")),
        "{log:?}"
    );
}

// ---------------------------------------------------------------------------
// Liveness and pid reuse.

#[test]
fn fields_answer_gone_when_the_pid_now_runs_a_process_with_another_starttime() {
    let w = World::new();
    w.add(&Proc::new(60, &["claude"]).start(111));
    let old = Found { harness: Harness::Claude, pid: 60, starttime: 111 };
    assert!(w.fields(&old, None).is_some());
    w.add(&Proc::new(60, &["claude"]).start(222));
    assert_eq!(w.fields(&old, None), None);
}

#[test]
fn fields_answer_gone_for_a_vanished_pid_and_for_a_corpse() {
    let w = World::new();
    w.add(&Proc::new(61, &["codex"]).state('Z'));
    assert_eq!(w.fields(&found(Harness::Codex, 61), None), None);
    assert_eq!(w.fields(&found(Harness::Codex, 62), None), None);
}

#[test]
fn a_reused_pid_is_resolved_again_and_a_resolved_agent_is_not_asked_again() {
    let w = World::new();
    claude_agent(&w, 63, &w.dir("work/a"));
    let mut ctx = w.ctx();
    ctx.resolved = vec![(63, start_of(63))];
    let (scanned, log) = run_logged(&w.proc, &w.bases, |facts, needs| scan(&ctx, facts, needs));
    assert_eq!(scanned[0].session, None, "a resolved agent is not resolved again");
    assert!(!wanted(&log).contains(&"sessions/63.json".to_string()), "{:?}", wanted(&log));
    ctx.resolved = vec![(63, start_of(63) - 1)];
    let scanned = w.scan(&ctx);
    assert_eq!(
        scanned[0].session.as_ref().map(|s| s.via),
        Some("registry"),
        "the new process at that pid is its own agent"
    );
}

/// The inode of `<proc>/<pid>`, as the listing of `<proc>` reports it.
fn proc_ino(w: &World, pid: u32) -> u64 {
    fs::metadata(w.proc.join(pid.to_string())).unwrap().ino()
}

/// Issue 21, defect 8: every rescan read every process's command line.
#[test]
fn a_process_whose_verdict_is_known_is_not_read_again_and_the_verdicts_come_back() {
    let w = World::new();
    w.add(&Proc::new(80, &["claude"]));
    w.add(&Proc::new(81, &["bash", "-l"]));
    w.add(&Proc::new(82, &["bash", "-l"]));
    let mut ctx = w.ctx();
    let (scanned, log) = run_logged(&w.proc, &w.bases, |facts, needs| scan(&ctx, facts, needs));
    assert_eq!(pids(&scanned), [(80, "claude")]);
    assert!(wanted(&log).contains(&"81/cmdline".to_string()), "{:?}", wanted(&log));
    // What the scan came to, as the job keeps it.
    let mut facts = Facts::default();
    for (want, fact) in log {
        facts.insert(want, fact);
    }
    let mut judged = super::judged(&ctx, &facts);
    judged.sort();
    let of = |pid| judged.iter().find(|j| j.0 == pid).map(|j| (j.1, j.2));
    assert_eq!(of(80), Some((proc_ino(&w, 80), Some(Harness::Claude))));
    assert_eq!(of(81), Some((proc_ino(&w, 81), None)));

    // Known: not read. 82 is another process now (another inode): read.
    let known = [(80, (proc_ino(&w, 80), Some(Harness::Claude))), (81, (proc_ino(&w, 81), None)), (82, (1, None))];
    ctx.known = std::rc::Rc::new(known.into_iter().collect());
    let (scanned, log) = run_logged(&w.proc, &w.bases, |facts, needs| scan(&ctx, facts, needs));
    assert_eq!(pids(&scanned), [(80, "claude")], "an agent known is still listed");
    let read = wanted(&log);
    assert!(!read.contains(&"80/cmdline".to_string()) && !read.contains(&"81/cmdline".to_string()), "{read:?}");
    assert!(read.contains(&"82/cmdline".to_string()), "{read:?}");
    assert!(read.contains(&"80/stat".to_string()), "an agent's stat is read every scan: {read:?}");
}

/// procfs lists an entry it could not make an inode for with inode 1: a
/// verdict kept under that inode names no process, and is not trusted.
#[test]
fn a_verdict_known_by_procfs_fallback_inode_is_not_trusted() {
    let mut facts = Facts::default();
    let listing = vec![crate::facts::Name { name: b"90".to_vec(), ino: 1, d_type: libc::DT_DIR }];
    facts.insert(Want::List { root: Root::Proc, rel: Vec::new() }, Ok(crate::facts::Fact::Names(listing.into())));
    let ctx = Ctx { known: std::rc::Rc::new([(90, (1, None))].into_iter().collect()), ..Ctx::default() };
    let mut needs = Vec::new();
    assert!(scan(&ctx, &facts, &mut needs).is_none());
    let wanted: Vec<String> = needs
        .iter()
        .filter_map(|w| match w {
            Want::Bytes { rel, .. } => Some(String::from_utf8_lossy(rel).into_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(wanted, ["90/cmdline"], "its command line is read again");
}

/// An exec keeps the pid and the inode: the verdict known says what the
/// process was, until it is judged again.
#[test]
fn a_verdict_known_stands_for_the_process_until_it_is_judged_again() {
    let w = World::new();
    w.add(&Proc::new(83, &["claude"]));
    let mut ctx = w.ctx();
    ctx.known = std::rc::Rc::new([(83, (proc_ino(&w, 83), None))].into_iter().collect());
    assert_eq!(pids(&w.scan(&ctx)), [], "known as no agent (a shell, before its exec)");
    ctx.known = Default::default();
    assert_eq!(pids(&w.scan(&ctx)), [(83, "claude")], "judged again");
}

// ---------------------------------------------------------------------------
// claude: the registry.

#[test]
fn claude_resolves_by_its_registry_record_and_serves_every_field() {
    let w = World::new();
    let cwd = w.dir("work/proj-1");
    w.add(
        &Proc::new(70, &["claude", "--resume"]).ppid(DAEMON + 1).cwd(&cwd).environ(b"TERM=xterm\0ZMX_SESSION=build\0"),
    );
    w.add(&Proc::new(DAEMON + 1, &["zsh"]));
    w.file(Harness::Claude, "sessions/70.json", registry(70, SID, &cwd, Some(start_of(70))).as_bytes());
    let rel = format!("projects/{}/{SID}.jsonl", project_dir(&cwd));
    w.file(Harness::Claude, &rel, claude_transcript(&cwd).as_bytes());
    let s = w.session(70).expect("the registry route answers");
    assert_eq!(s, Session { id: SID.as_bytes().to_vec(), via: "registry", transcript: Some(rel.into_bytes()) });
    let f = w.fields_of(70);
    let expect = |field: &str, text: String| assert_eq!(f.get(field), Some(&text), "{field} in {f:?}");
    expect("pid", "70\n".into());
    expect("ppid", format!("{}\n", DAEMON + 1));
    expect("started", format!("{}\n", BTIME + start_of(70) / 100));
    expect("cwd", format!("{}\n", cwd.display()));
    expect("name", "reviewer\n".into());
    expect("title", "Fix the flaky test\n".into());
    expect("session", format!("{SID}\n"));
    expect("model", "claude-opus-4-5\n".into());
    expect("via", "registry\n".into());
    expect("zmx", "build\n".into());
    expect("status", "busy\n".into());
    expect("kind", "interactive\n".into());
    assert!(!f.contains_key("waiting_for"), "busy: it waits for nothing");
    assert_eq!(f.len(), 12, "{f:?}");
}

/// Claude Code 2.1.33x says what a waiting session waits for: served as
/// `waiting_for` exactly while the registry says `waiting`, one line.
#[test]
fn a_waiting_claude_says_what_it_waits_for_and_only_then() {
    let w = World::new();
    let cwd = w.dir("work/proj-w");
    w.add(&Proc::new(75, &["claude"]).cwd(&cwd));
    let record = |status: &str, waiting: &str| {
        registry(75, SID, &cwd, Some(start_of(75)))
            .replace(r#""status":"busy""#, &format!(r#""status":"{status}","waitingFor":{waiting}"#))
            .replace(r#""kind":"interactive""#, r#""kind":"daemon-worker""#)
    };
    w.file(Harness::Claude, "sessions/75.json", record("waiting", r#""dialog open""#).as_bytes());
    let f = w.fields_of(75);
    assert_eq!((f["status"].as_str(), f["waiting_for"].as_str()), ("waiting\n", "dialog open\n"));
    assert_eq!(f["kind"], "daemon-worker\n");
    w.file(Harness::Claude, "sessions/75.json", record("waiting", r#""Allow edits to\nsrc/main.rs?""#).as_bytes());
    assert_eq!(w.fields_of(75)["waiting_for"], "Allow edits to src/main.rs?\n", "one line");
    w.file(Harness::Claude, "sessions/75.json", record("idle", r#""input needed""#).as_bytes());
    assert!(!w.fields_of(75).contains_key("waiting_for"), "no longer waiting: no file");
}

#[test]
fn claude_record_of_a_process_that_started_at_another_time_is_refused() {
    let w = World::new();
    let cwd = w.dir("work/p");
    claude_agent(&w, 71, &cwd);
    w.file(Harness::Claude, "sessions/71.json", registry(71, SID, &cwd, Some(start_of(71) + 1)).as_bytes());
    assert_eq!(w.session(71), None);
    let f = w.fields_of(71);
    assert_eq!(f["via"], "none\n");
    assert!(!f.contains_key("session") && !f.contains_key("name"), "what is not known is absent: {f:?}");
    assert!(!f.contains_key("status"), "a refused record's status is not served: {f:?}");
}

#[test]
fn claude_record_without_procstart_is_believed() {
    let w = World::new();
    let cwd = w.dir("work/p");
    claude_agent(&w, 72, &cwd);
    w.file(Harness::Claude, "sessions/72.json", registry(72, SID, &cwd, None).as_bytes());
    assert_eq!(w.session(72).map(|s| s.via), Some("registry"));
    assert_eq!(w.fields_of(72)["status"], "busy\n");
}

#[test]
fn claude_record_whose_session_id_could_climb_out_is_refused_and_never_becomes_a_path() {
    for sid in ["../../../outside/x", "a/b", "..", "x\\u002f.."] {
        let w = World::new();
        let cwd = w.dir("work/p");
        claude_agent(&w, 73, &cwd);
        w.file(Harness::Claude, "sessions/73.json", registry(73, sid, &cwd, Some(start_of(73))).as_bytes());
        let (scanned, log) = run_logged(&w.proc, &w.bases, |facts, needs| scan(&w.ctx(), facts, needs));
        assert_eq!(scanned[0].session, None, "{sid}");
        let rels = wanted(&log);
        assert!(rels.iter().all(|r| !r.split('/').any(|c| c == "..")), "{sid}: {rels:?}");
        assert!(!rels.iter().any(|r| r.starts_with("projects/")), "{sid}: {rels:?}");
    }
}

#[test]
fn claude_record_that_is_a_fifo_is_never_opened_and_the_agent_still_lists() {
    let w = World::new();
    let cwd = w.dir("work/p");
    claude_agent(&w, 74, &cwd);
    let record = w.base(Harness::Claude).join("sessions/74.json");
    fs::remove_file(&record).unwrap();
    use rustix::fs::{FileType, Mode, CWD};
    rustix::fs::mknodat(CWD, &record, FileType::Fifo, Mode::from_raw_mode(0o644), 0).unwrap();
    assert_eq!(w.session(74), None);
    let f = w.fields_of(74);
    assert_eq!((f["via"].as_str(), f["pid"].as_str()), ("none\n", "74\n"));
    assert!(!f.contains_key("status"));
}

#[test]
fn claude_records_that_are_not_json_or_lack_fields_are_refused_without_a_crash() {
    let records: [&[u8]; 6] = [
        b"",
        b"{\"sessionId\":\"abc\"",
        b"[1,2]",
        b"{\"cwd\":\"/x\"}",
        b"\xff\xfe{}",
        b"{\"sessionId\":\"abc\",\"cwd\":\"\"}",
    ];
    for record in records {
        let w = World::new();
        claude_agent(&w, 75, &w.dir("work/p"));
        w.file(Harness::Claude, "sessions/75.json", record);
        assert_eq!(w.session(75), None, "{}", String::from_utf8_lossy(record));
    }
}

#[test]
fn claude_long_cwd_finds_its_project_dir_by_the_session_id_not_the_hash() {
    let w = World::new();
    let cwd = w.root.join("work").join("deep-directory-name-".repeat(12));
    fs::create_dir_all(&cwd).unwrap();
    let full = project_dir(&cwd);
    assert!(full.len() > claude::PROJECT_DIR_UNITS_MAX);
    let prefix = &full[..claude::PROJECT_DIR_UNITS_MAX];
    w.add(&Proc::new(76, &["claude"]).cwd(&cwd));
    w.file(Harness::Claude, "sessions/76.json", registry(76, SID, &cwd, Some(start_of(76))).as_bytes());
    w.file(Harness::Claude, &format!("projects/{prefix}-zz9/other.jsonl"), b"{}\n");
    w.file(Harness::Claude, &format!("projects/{prefix}-x_y/{SID}.jsonl"), claude_transcript(&cwd).as_bytes());
    let rel = format!("projects/{prefix}-1k3j9a/{SID}.jsonl");
    w.file(Harness::Claude, &rel, claude_transcript(&cwd).as_bytes());
    let s = w.session(76).expect("the long dir is found");
    assert_eq!(String::from_utf8(s.transcript.unwrap()).unwrap(), rel);
    assert_eq!(w.fields_of(76)["title"], "Fix the flaky test\n");
}

#[test]
fn claude_project_dir_that_is_a_symlink_is_never_read_through() {
    let w = World::new();
    let cwd = w.dir("work/p");
    w.add(&Proc::new(77, &["claude"]).cwd(&cwd));
    w.file(Harness::Claude, "sessions/77.json", registry(77, SID, &cwd, Some(start_of(77))).as_bytes());
    let outside = w.dir("outside");
    let planted = claude_transcript(&cwd).replace("Fix the flaky test", "planted outside");
    fs::write(outside.join(format!("{SID}.jsonl")), planted).unwrap();
    fs::create_dir_all(w.base(Harness::Claude).join("projects")).unwrap();
    std::os::unix::fs::symlink(&outside, w.base(Harness::Claude).join("projects").join(project_dir(&cwd))).unwrap();
    let f = w.fields_of(77);
    assert!(!f.contains_key("title") && !f.contains_key("model"), "nothing is read through the link: {f:?}");
}

#[test]
fn claude_transcript_recording_another_cwd_is_not_believed() {
    let w = World::new();
    let cwd = w.dir("work/p");
    let rel = claude_agent(&w, 78, &cwd);
    fs::write(rel, claude_transcript(Path::new("/somewhere/else"))).unwrap();
    assert_eq!(w.session(78), None);
}

#[test]
fn claude_transcript_that_records_no_cwd_yet_is_believed() {
    let w = World::new();
    let cwd = w.dir("work/p");
    let rel = claude_agent(&w, 79, &cwd);
    fs::write(rel, b"{\"type\":\"summary\",\"summary\":\"Earlier work\"}\n").unwrap();
    assert_eq!(w.session(79).map(|s| s.via), Some("registry"));
    assert_eq!(w.fields_of(79)["title"], "Earlier work\n");
}

#[test]
fn claude_record_without_a_transcript_yet_resolves_and_serves_no_title() {
    let w = World::new();
    let cwd = w.dir("work/p");
    let rel = claude_agent(&w, 80, &cwd);
    fs::remove_file(rel).unwrap();
    assert_eq!(w.session(80).map(|s| s.via), Some("registry"));
    let f = w.fields_of(80);
    assert_eq!(f["name"], "reviewer\n");
    assert!(!f.contains_key("title") && !f.contains_key("model"), "{f:?}");
}

#[test]
fn a_custom_title_in_the_tail_of_a_transcript_longer_than_the_head_wins() {
    let w = World::new();
    let cwd = w.dir("work/p");
    let rel = claude_agent(&w, 81, &cwd);
    let mut t = claude_transcript(&cwd);
    let filler = format!(
        r#"{{"type":"user","cwd":"{}","message":{{"role":"user","content":"{}"}}}}"#,
        cwd.display(),
        "x".repeat(1000)
    );
    while t.len() < HEAD_BYTES_MAX as usize + 32 * 1024 {
        t.push_str(&filler);
        t.push('\n');
    }
    t.push_str(r#"{"type":"custom-title","customTitle":"Renamed by the user"}"#);
    t.push('\n');
    t.push_str(r#"{"type":"assistant","message":{"model":"claude-sonnet-4-5","content":[]}}"#);
    t.push('\n');
    for _ in 0..8 {
        t.push_str(&filler);
        t.push('\n');
    }
    assert!(t.len() > 128 * 1024);
    fs::write(rel, t).unwrap();
    let f = w.fields_of(81);
    assert_eq!((f["title"].as_str(), f["model"].as_str()), ("Renamed by the user\n", "claude-sonnet-4-5\n"));
}

#[test]
fn an_agent_no_route_answers_lists_with_via_none_and_an_empty_session() {
    let w = World::new();
    w.add(&Proc::new(82, &["claude"]));
    assert_eq!(w.session(82), None);
    let f = w.fields_of(82);
    assert_eq!(f["via"], "none\n");
    assert!(!f.contains_key("session") && !f.contains_key("title"), "what is not known is absent: {f:?}");
    assert!(!f.contains_key("status"));
}

// ---------------------------------------------------------------------------
// The environment.

#[test]
fn zmx_is_the_value_of_the_whole_key_zmx_session() {
    let w = World::new();
    w.add(
        &Proc::new(90, &["omp"]).environ(b"ZMX_SESSION_OLD=old\0XZMX_SESSION=x\0ZMX_SESSION=work\0ZMX_SESSION=later\0"),
    );
    w.add(&Proc::new(91, &["omp"]).environ(b"ZMX_SESSION_OLD=old\0XZMX_SESSION=x\0ZMX_SESSIO=y\0"));
    w.add(&Proc::new(92, &["omp"]).environ(b"ZMX_SESSION=\0"));
    assert_eq!(w.fields_of(90)["zmx"], "work\n");
    assert_eq!(w.fields_of(91)["zmx"], "");
    assert_eq!(w.fields_of(92)["zmx"], "\n");
}

// ---------------------------------------------------------------------------
// codex: fd, then lock.

/// 2026-11-28 10:00:00.412 UTC, in ms.
const DAY_MS: u64 = 1_795_860_000_412;
const HOUR_MS: u64 = 3_600_000;

fn codex_meta(id: &str, cwd: &Path, source: &str) -> String {
    format!(
        r#"{{"timestamp":"2026-11-28T10:00:00.000Z","type":"session_meta","payload":{{"id":"{id}","cwd":"{}","thread_source":"{source}","instructions":"be brief"}}}}"#,
        cwd.display()
    )
}

fn codex_rollout(id: &str, cwd: &Path, source: &str, model: &str) -> String {
    let turn = format!(r#"{{"type":"turn_context","payload":{{"cwd":"{}","model":"{model}"}}}}"#, cwd.display());
    format!("{}\n{turn}\n", codex_meta(id, cwd, source))
}

/// Write a rollout for `id` in `sessions/<day>`; its path.
fn rollout(w: &World, day: &str, id: &str, body: &str) -> PathBuf {
    w.file(Harness::Codex, &format!("sessions/{day}/rollout-2026-11-28T10-00-00-{id}.jsonl"), body.as_bytes())
}

#[test]
fn codex_resolves_by_the_rollout_it_holds_open_and_skips_a_subagents() {
    let w = World::new();
    let cwd = w.dir("work/cx");
    let (own, sub) = (v7(DAY_MS, 1), v7(DAY_MS + HOUR_MS, 2));
    let own_path = rollout(&w, "2026/11/28", &own, &codex_rollout(&own, &cwd, "user", "gpt-5.1-codex"));
    let sub_path = rollout(&w, "2026/11/28", &sub, &codex_rollout(&sub, &cwd, "subagent", "gpt-5-mini"));
    let history = w.file(Harness::Codex, "history.jsonl", b"{}\n");
    w.add(&Proc::new(100, &["codex"]).cwd(&cwd).fd(&history).fd(&sub_path).fd(&own_path));
    let s = w.session(100).expect("the fd route answers");
    assert_eq!((s.id.as_slice(), s.via), (own.as_bytes(), "fd"));
    let rel = own_path.strip_prefix(w.base(Harness::Codex)).unwrap();
    assert_eq!(s.transcript.as_deref(), Some(rel.as_os_str().as_bytes()));
    let f = w.fields_of(100);
    assert_eq!((f["via"].as_str(), f["model"].as_str()), ("fd\n", "gpt-5.1-codex\n"));
}

#[test]
fn codex_takes_the_older_subagent_era_source_field_as_a_subagent_too() {
    let w = World::new();
    let cwd = w.dir("work/cx");
    let (own, sub) = (v7(DAY_MS, 1), v7(DAY_MS + HOUR_MS, 2));
    let own_path = rollout(&w, "2026/11/28", &own, &codex_rollout(&own, &cwd, "user", "m"));
    let sub_body = format!(
        "{{\"type\":\"session_meta\",\"payload\":{{\"id\":\"{sub}\",\"cwd\":\"{}\",\"source\":{{\"subagent\":\"review\"}}}}}}\n",
        cwd.display()
    );
    let sub_path = rollout(&w, "2026/11/28", &sub, &sub_body);
    w.add(&Proc::new(101, &["codex"]).cwd(&cwd).fd(&own_path).fd(&sub_path));
    assert_eq!(w.session(101).map(|s| s.id), Some(own.into_bytes()));
}

#[test]
fn codex_rollout_held_open_that_records_another_cwd_is_not_believed() {
    let w = World::new();
    let cwd = w.dir("work/cx");
    let id = v7(DAY_MS, 1);
    let path = rollout(&w, "2026/11/28", &id, &codex_rollout(&id, Path::new("/elsewhere"), "user", "m"));
    w.add(&Proc::new(102, &["codex"]).cwd(&cwd).fd(&path));
    assert_eq!(w.session(102), None);
}

#[test]
fn codex_rollout_outside_its_root_or_deleted_is_not_taken() {
    let w = World::new();
    let cwd = w.dir("work/cx");
    let id = v7(DAY_MS, 1);
    let body = codex_rollout(&id, &cwd, "user", "m");
    let outside = w.dir("outside/.codex/sessions/2026/11/28").join(format!("rollout-2026-11-28T10-00-00-{id}.jsonl"));
    fs::write(&outside, &body).unwrap();
    let inside = rollout(&w, "2026/11/28", &id, &body);
    let mut deleted = inside.into_os_string();
    deleted.push(" (deleted)");
    w.add(&Proc::new(103, &["codex"]).cwd(&cwd).fd(&outside).fd(Path::new(&deleted)));
    assert_eq!(w.session(103), None);
}

/// A lock file for thread `id`, and the `<proc>/locks` line for `pid`
/// holding it (`->`: waiting for it instead).
fn lock(w: &World, id: &str, pid: u32, waiting: bool) {
    let path = w.file(Harness::Codex, &format!("thread-writer-locks/{id}.lock"), b"");
    let ino = fs::metadata(&path).unwrap().ino();
    let arrow = if waiting { "-> " } else { "" };
    w.append_locks(&format!("1: {arrow}FLOCK  ADVISORY  WRITE {pid} 00:37:{ino} 0 EOF\n"));
}

#[test]
fn codex_lock_finds_the_thread_in_its_uuidv7_day_or_one_either_side() {
    let w = World::new();
    let cwd = w.dir("work/cx");
    // Each process writes one thread whose rollout sits in another day
    // directory than the UTC day of its id; two days off is not looked for.
    let cases = [
        (110, "2026/11/28", true),
        (111, "2026/11/27", true),
        (112, "2026/11/29", true),
        (113, "2026/11/26", false),
        (114, "2026/11/30", false),
    ];
    for (i, (pid, day, _)) in cases.iter().enumerate() {
        let id = v7(DAY_MS, i as u16 + 1);
        rollout(&w, day, &id, &codex_rollout(&id, &cwd, "user", "gpt-5"));
        lock(&w, &id, *pid, false);
        w.add(&Proc::new(*pid, &["codex"]).cwd(&cwd));
    }
    for (i, (pid, day, found)) in cases.iter().enumerate() {
        let s = w.session(*pid);
        let want = found.then(|| v7(DAY_MS, i as u16 + 1).into_bytes());
        assert_eq!(s.as_ref().map(|s| s.id.clone()), want, "{pid} in {day}");
        if *found {
            assert_eq!(s.unwrap().via, "lock");
        }
    }
}

#[test]
fn codex_lock_skips_subagent_threads_waiters_and_other_pids_and_the_newest_wins() {
    let w = World::new();
    let cwd = w.dir("work/cx");
    let older = v7(DAY_MS, 1);
    let newer = v7(DAY_MS + HOUR_MS, 2);
    let sub = v7(DAY_MS + 2 * HOUR_MS, 3);
    let waited = v7(DAY_MS + 3 * HOUR_MS, 4);
    let others = v7(DAY_MS + 4 * HOUR_MS, 5);
    for (id, source) in [(&older, "user"), (&newer, "user"), (&sub, "subagent"), (&waited, "user"), (&others, "user")] {
        rollout(&w, "2026/11/28", id, &codex_rollout(id, &cwd, source, id));
    }
    lock(&w, &older, 120, false);
    lock(&w, &sub, 120, false);
    lock(&w, &newer, 120, false);
    lock(&w, &waited, 120, true);
    lock(&w, &others, 121, false);
    w.append_locks("9: POSIX  ADVISORY  WRITE 120 00:37:1 0 EOF\n");
    w.add(&Proc::new(120, &["codex"]).cwd(&cwd));
    let s = w.session(120).expect("the lock route answers");
    assert_eq!((String::from_utf8(s.id).unwrap(), s.via), (newer.clone(), "lock"));
    assert_eq!(w.fields_of(120)["model"], format!("{newer}\n"));
}

/// Two of a codex's own threads: the one minted first (its id and
/// rollout) written at `minted_first_at`, the one minted an hour later at
/// `minted_last_at`.
fn codex_two_threads(w: &World, cwd: &Path, minted_first_at: u64, minted_last_at: u64) -> [(String, PathBuf); 2] {
    [(v7(DAY_MS, 1), minted_first_at), (v7(DAY_MS + HOUR_MS, 2), minted_last_at)].map(|(id, mtime)| {
        let path = rollout(w, "2026/11/28", &id, &codex_rollout(&id, cwd, "user", &id));
        set_mtime(&path, mtime);
        (id, path)
    })
}

#[test]
fn codex_lock_picks_the_rollout_written_last_not_the_id_minted_last() {
    // After `/new` and back (`codex resume`), the thread being written is
    // the older one: its rollout's mtime says so, its id does not.
    let w = World::new();
    let cwd = w.dir("work/cx");
    let [(minted_first, _), (minted_last, _)] = codex_two_threads(&w, &cwd, 2_000, 1_000);
    lock(&w, &minted_last, 120, false);
    lock(&w, &minted_first, 120, false);
    w.add(&Proc::new(120, &["codex"]).cwd(&cwd));
    let s = w.session(120).expect("the lock route answers");
    assert_eq!((String::from_utf8(s.id).unwrap(), s.via), (minted_first.clone(), "lock"));
    assert_eq!(w.fields_of(120)["model"], format!("{minted_first}\n"));
}

#[test]
fn codex_lock_breaks_an_mtime_tie_by_the_newest_id() {
    let w = World::new();
    let cwd = w.dir("work/cx");
    let [(minted_first, _), (minted_last, _)] = codex_two_threads(&w, &cwd, 1_000, 1_000);
    lock(&w, &minted_last, 120, false);
    lock(&w, &minted_first, 120, false);
    w.add(&Proc::new(120, &["codex"]).cwd(&cwd));
    assert_eq!(String::from_utf8(w.session(120).expect("resolved").id).unwrap(), minted_last);
}

#[test]
fn codex_fd_picks_the_rollout_written_last_of_those_it_holds_open() {
    let w = World::new();
    let cwd = w.dir("work/cx");
    let [(minted_first, first_path), (_, last_path)] = codex_two_threads(&w, &cwd, 2_000, 1_000);
    w.add(&Proc::new(120, &["codex"]).cwd(&cwd).fd(&last_path).fd(&first_path));
    let s = w.session(120).expect("the fd route answers");
    assert_eq!((String::from_utf8(s.id).unwrap(), s.via), (minted_first, "fd"));
}

#[test]
fn codex_holding_no_rollout_and_no_lock_is_unresolved() {
    let w = World::new();
    w.add(&Proc::new(122, &["codex"]));
    w.append_locks("1: FLOCK  ADVISORY  WRITE 999 00:37:5 0 EOF\n");
    assert_eq!(w.session(122), None);
    assert_eq!(w.fields_of(122)["via"], "none\n");
}

#[test]
fn codex_title_is_the_last_thread_name_the_session_index_gives_its_id() {
    let w = World::new();
    let cwd = w.dir("work/cx");
    let id = v7(DAY_MS, 1);
    let path = rollout(&w, "2026/11/28", &id, &codex_rollout(&id, &cwd, "user", "gpt-5"));
    let other = v7(DAY_MS, 9);
    let index = format!(
        "{{\"id\":\"{id}\",\"thread_name\":\"first name\",\"updated_at\":\"2026-11-28T10:01:00Z\"}}\n\
         {{\"id\":\"{other}\",\"thread_name\":\"another thread\"}}\n\
         {{\"id\":\"{id}\",\"thread_name\":\"renamed\",\"updated_at\":\"2026-11-28T11:00:00Z\"}}\n\
         {{\"id\":\"{other}\",\"thread_name\":\"another again\"}}\n"
    );
    w.file(Harness::Codex, "session_index.jsonl", index.as_bytes());
    w.add(&Proc::new(130, &["codex"]).cwd(&cwd).fd(&path));
    assert_eq!(w.fields_of(130)["title"], "renamed\n");
}

#[test]
fn codex_title_comes_from_the_end_of_a_session_index_larger_than_one_read() {
    // docs/ACTIVE.md: the server reads the whole index when it is small,
    // else its tail — a thread named today is at the end of a long index.
    let w = World::new();
    let cwd = w.dir("work/cx");
    let id = v7(DAY_MS, 1);
    let path = rollout(&w, "2026/11/28", &id, &codex_rollout(&id, &cwd, "user", "gpt-5"));
    let mut index = String::new();
    for n in 0..2000u16 {
        index.push_str(&format!(
            "{{\"id\":\"{}\",\"thread_name\":\"old thread number {n}\"}}\n",
            v7(DAY_MS - 100 * HOUR_MS, n)
        ));
    }
    assert!(index.len() > crate::facts::SLURP_BYTES_MAX as usize);
    index.push_str(&format!("{{\"id\":\"{id}\",\"thread_name\":\"named today\"}}\n"));
    w.file(Harness::Codex, "session_index.jsonl", index.as_bytes());
    w.add(&Proc::new(131, &["codex"]).cwd(&cwd).fd(&path));
    assert_eq!(w.fields_of(131)["title"], "named today\n");
}

// ---------------------------------------------------------------------------
// omp: fd, then dir.

fn omp_transcript(id: &str, cwd: &Path, title: &str) -> String {
    format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"cwd\":\"{}\",\"title\":\"{title}\"}}\n\
         {{\"type\":\"model_change\",\"model\":\"anthropic/claude-opus-4-5\"}}\n\
         {{\"type\":\"model_change\",\"role\":\"smol\",\"model\":\"anthropic/claude-haiku\"}}\n",
        cwd.display()
    )
}

fn omp_file(w: &World, store: &str, ts: &str, id: &str, body: &str, mtime: u64) -> PathBuf {
    let path = w.file(Harness::Omp, &format!("agent/sessions/{store}/{ts}_{id}.jsonl"), body.as_bytes());
    set_mtime(&path, mtime);
    path
}

#[test]
fn omp_resolves_by_the_newest_transcript_it_holds_open_and_not_a_subagents() {
    let w = World::new();
    let cwd = w.dir("home/src/app");
    let (a, b) = (v7(DAY_MS, 1), v7(DAY_MS, 2));
    let older = omp_file(&w, "-src-app", "2026-11-28T10-00-00-000Z", &a, &omp_transcript(&a, &cwd, "older"), 2_000);
    let newer = omp_file(&w, "-src-app", "2026-11-27T10-00-00-000Z", &b, &omp_transcript(&b, &cwd, "newer"), 3_000);
    let sub = w.file(
        Harness::Omp,
        &format!("agent/sessions/-src-app/2026-11-28T10-00-00-000Z_{a}/0-scout_{}.jsonl", v7(DAY_MS, 3)),
        b"{}\n",
    );
    set_mtime(&sub, 9_000);
    w.add(&Proc::new(140, &["omp"]).cwd(&cwd).fd(&older).fd(&sub).fd(&newer));
    let s = w.session(140).expect("the fd route answers");
    assert_eq!((String::from_utf8(s.id).unwrap(), s.via), (b.clone(), "fd"));
    let f = w.fields_of(140);
    assert_eq!((f["title"].as_str(), f["model"].as_str(), f["via"].as_str()), ("newer\n", "claude-opus-4-5\n", "fd\n"));
}

#[test]
fn omp_resolves_by_its_home_relative_store_dir_when_it_holds_nothing_open() {
    let w = World::new();
    let cwd = w.dir("home/src/app");
    let (a, b) = (v7(DAY_MS, 1), v7(DAY_MS, 2));
    omp_file(&w, "-src-app", "2026-11-28T10-00-00-000Z", &a, &omp_transcript(&a, &cwd, "older"), 2_000);
    omp_file(&w, "-src-app", "2026-11-28T11-00-00-000Z", &b, &omp_transcript(&b, &cwd, "newer"), 3_000);
    w.file(Harness::Omp, "agent/sessions/-src-app/notes.txt", b"x");
    w.add(&Proc::new(141, &["omp"]).cwd(&cwd));
    let s = w.session(141).expect("the dir route answers");
    assert_eq!((String::from_utf8(s.id).unwrap(), s.via), (b, "dir"));
    assert_eq!(w.fields_of(141)["via"], "dir\n");
}

#[test]
fn omp_resolves_by_the_legacy_absolute_store_dir_outside_home() {
    let w = World::new();
    let cwd = w.dir("work/app");
    let legacy = format!("--{}--", cwd.as_os_str().to_str().unwrap()[1..].replace('/', "-"));
    let a = v7(DAY_MS, 1);
    omp_file(&w, &legacy, "2026-11-28T10-00-00-000Z", &a, &omp_transcript(&a, &cwd, "legacy"), 2_000);
    w.add(&Proc::new(142, &["omp"]).cwd(&cwd));
    let s = w.session(142).expect("the dir route answers");
    assert_eq!((String::from_utf8(s.id).unwrap(), s.via), (a, "dir"));
    assert_eq!(w.fields_of(142)["title"], "legacy\n");
}

#[test]
fn omp_prefers_the_current_store_name_to_the_legacy_one() {
    let w = World::new();
    let cwd = w.dir("home/src/app");
    let legacy = format!("--{}--", cwd.as_os_str().to_str().unwrap()[1..].replace('/', "-"));
    let (a, b) = (v7(DAY_MS, 1), v7(DAY_MS, 2));
    omp_file(&w, "-src-app", "2026-11-28T10-00-00-000Z", &a, &omp_transcript(&a, &cwd, "current"), 2_000);
    omp_file(&w, &legacy, "2026-11-28T11-00-00-000Z", &b, &omp_transcript(&b, &cwd, "legacy"), 3_000);
    w.add(&Proc::new(143, &["omp"]).cwd(&cwd));
    assert_eq!(w.session(143).map(|s| s.id), Some(a.into_bytes()));
}

#[test]
fn omp_store_transcript_recording_another_cwd_is_not_believed() {
    let w = World::new();
    let cwd = w.dir("home/src/app");
    let a = v7(DAY_MS, 1);
    omp_file(&w, "-src-app", "2026-11-28T10-00-00-000Z", &a, &omp_transcript(&a, Path::new("/elsewhere"), "t"), 2_000);
    w.add(&Proc::new(144, &["omp"]).cwd(&cwd));
    assert_eq!(w.session(144), None);
}

// ---------------------------------------------------------------------------
// dsh and hermes.

#[test]
fn dsh_resolves_by_the_session_file_it_holds_open() {
    let w = World::new();
    let id = "d22520b1-9324-4d3d-a9a4-26c53c6108af";
    let rel = format!("sessions/session-{id}/session.jsonl.zstd");
    let path = w.file(Harness::Dsh, &rel, b"\x28\xb5\x2f\xfd binary");
    let other = w.file(Harness::Dsh, "sessions/notes.jsonl", b"{}\n");
    w.add(&Proc::new(150, &["dsh"]).fd(&other).fd(&path));
    let s = w.session(150).expect("the fd route answers");
    assert_eq!(s, Session { id: id.as_bytes().to_vec(), via: "fd", transcript: Some(rel.into_bytes()) });
    let f = w.fields_of(150);
    assert_eq!(f["via"], "fd\n");
    assert!(!f.contains_key("title") && !f.contains_key("model"), "{f:?}");
}

#[test]
fn hermes_has_nothing_to_resolve_and_says_so() {
    let w = World::new();
    w.add(&Proc::new(160, &["python3", "-m", "hermes_cli.main"]));
    let s = w.session(160).expect("hermes answers at once");
    assert_eq!(s, Session { id: Vec::new(), via: "none", transcript: None });
    let f = w.fields_of(160);
    assert_eq!(f["via"], "none\n");
    assert!(!f.contains_key("session") && !f.contains_key("title"), "{f:?}");
    assert!(!f.contains_key("status"));
}

#[test]
fn via_names_the_route_that_answered_for_every_route() {
    let w = World::new();
    let cwd = w.dir("home/src/app");
    claude_agent(&w, 170, &cwd);
    let id = v7(DAY_MS, 1);
    let held = rollout(&w, "2026/11/28", &id, &codex_rollout(&id, &cwd, "user", "m"));
    w.add(&Proc::new(171, &["codex"]).cwd(&cwd).fd(&held));
    let locked = v7(DAY_MS, 2);
    rollout(&w, "2026/11/28", &locked, &codex_rollout(&locked, &cwd, "user", "m"));
    lock(&w, &locked, 172, false);
    w.add(&Proc::new(172, &["codex"]).cwd(&cwd));
    let a = v7(DAY_MS, 3);
    omp_file(&w, "-src-app", "2026-11-28T10-00-00-000Z", &a, &omp_transcript(&a, &cwd, "t"), 2_000);
    w.add(&Proc::new(173, &["omp"]).cwd(&cwd));
    let b = v7(DAY_MS, 4);
    let open = omp_file(&w, "-src-other", "2026-11-28T10-00-00-000Z", &b, &omp_transcript(&b, &cwd, "t"), 1_000);
    w.add(&Proc::new(174, &["omp"]).cwd(&cwd).fd(&open));
    w.add(&Proc::new(175, &["hermes"]));
    w.add(&Proc::new(176, &["dsh"]));
    let via: Vec<(u32, String)> = (170..=176).map(|pid| (pid, w.fields_of(pid)["via"].clone())).collect();
    let want = [(170, "registry"), (171, "fd"), (172, "lock"), (173, "dir"), (174, "fd"), (175, "none"), (176, "none")];
    assert_eq!(via, want.map(|(p, v)| (p, format!("{v}\n"))));
}
