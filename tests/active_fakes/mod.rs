//! Agents for the /active end-to-end tests, real and fixture.
//!
//! **Real ones** (`Live`): copies of `/bin/sleep` named after a harness,
//! started by the test in a scratch work dir, as the seed's e2e does. A
//! `claude` gets the registry record Claude Code would write for its pid
//! (with its real starttime as `procStart`) and a transcript; a `codex`
//! holds its rollout open as stdin, which is the fd route. The daemon
//! reads the real `/proc`, so other agents on the machine may list too:
//! every check is about the pids the test started. Each agent is killed
//! and reaped when dropped, panic or not.
//!
//! **Fixture ones** (`FakeProc`): a `<proc>` directory built by hand
//! (`<pid>/{stat,cmdline,environ,cwd,fd/}`, `stat` with `btime`, `locks`),
//! served with `--proc`, for the routes a real process cannot show
//! without the real harness (omp's store dir, dsh, hermes).

#![allow(dead_code)]

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;

/// How long a started agent may take to show in `/proc` as itself, and
/// a killed one to become a zombie.
pub(crate) const AGENT_DEADLINE: Duration = Duration::from_secs(10);

/// What the fake claude's registry record and transcript say.
pub(crate) const CLAUDE_SID: &str = "5f1c7a52-3b4e-4d61-9a0b-2c8e7f6d1a90";
pub(crate) const CLAUDE_NAME: &str = "e2e-agent";
pub(crate) const CLAUDE_STATUS: &str = "idle";
pub(crate) const CLAUDE_MODEL: &str = "claude-opus-4-5-20251101";
pub(crate) const CLAUDE_TITLE: &str = "Make the e2e pass";

/// What the fake codex's rollout and the session index say.
pub(crate) const CODEX_ID: &str = "019ac9a0-5653-7cc0-aa36-676f6467a72a";
pub(crate) const CODEX_DAY: &str = "2025/11/28";
pub(crate) const CODEX_MODEL: &str = "gpt-5.1-codex";
pub(crate) const CODEX_TITLE: &str = "Port the scanner";

/// The value the fake claude runs under as `ZMX_SESSION`.
pub(crate) const ZMX: &str = "x";

/// Every field a claude agent's directory lists, in listing order.
pub(crate) const CLAUDE_ENTRIES: [&str; 17] = [
    "agents",
    "chat",
    "cwd",
    "kind",
    "model",
    "name",
    "pid",
    "ppid",
    "session",
    "started",
    "status",
    "title",
    "transcript",
    "usage",
    "via",
    "wait",
    "zmx",
];

/// A world for real agents: a scratch home, a `bin/` of fake harness
/// binaries and a `work/` dir they run in (canonical, as `/proc` spells
/// a cwd).
pub(crate) struct Live {
    pub scratch: Arc<Scratch>,
    pub bin: PathBuf,
    pub work: PathBuf,
}

impl Live {
    pub(crate) fn new() -> Live {
        let scratch = Scratch::new();
        let bin = scratch.root.join("bin");
        let work = scratch.root.join("work");
        fs::create_dir_all(&bin).unwrap();
        fs::create_dir_all(&work).unwrap();
        let work = fs::canonicalize(work).unwrap();
        for h in ["claude", "codex", "omp", "dsh"] {
            fs::copy("/bin/sleep", bin.join(h)).unwrap_or_else(|e| panic!("copy /bin/sleep to {h}: {e}"));
        }
        Live { scratch, bin, work }
    }

    /// The daemon, reading the real `/proc` and this world's home.
    pub(crate) fn daemon(&self) -> Daemon {
        self.daemon_with(&[])
    }

    /// `daemon`, with `extra` flags after `--proc /proc`.
    pub(crate) fn daemon_with(&self, extra: &[&str]) -> Daemon {
        let mut args = vec!["--proc", "/proc"];
        args.extend_from_slice(extra);
        Daemon::start_in(&self.scratch, &args)
    }

    /// `9agents <cmd> -a unix!<sock> <path>` in this world.
    pub(crate) fn client(&self, d: &Daemon, cmd: &str, path: &str) -> Output {
        let addr = format!("unix!{}", arg(d.socket.as_ref().unwrap()));
        run_client(&self.scratch, &[cmd, "-a", &addr, path], b"")
    }

    /// `client`, asserting success: its stdout.
    pub(crate) fn client_ok(&self, d: &Daemon, cmd: &str, path: &str) -> String {
        let out = self.client(d, cmd, path);
        assert!(out.status.success(), "9agents {cmd} {path}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Start `bin/<harness> 600` in `work/` with only `env`.
    pub(crate) fn spawn(&self, harness: &str, env: &[(&str, &str)], stdin: Stdio) -> Agent {
        let mut cmd = Command::new(self.bin.join(harness));
        cmd.arg("600").current_dir(&self.work).env_clear().envs(env.iter().copied());
        cmd.stdin(stdin).stdout(Stdio::null()).stderr(Stdio::null());
        Agent::spawn(cmd)
    }

    /// A claude agent under `ZMX_SESSION=x`, with its registry record and
    /// transcript; the transcript's path.
    pub(crate) fn claude(&self) -> (Agent, PathBuf) {
        let agent = self.spawn("claude", &[("ZMX_SESSION", ZMX), ("ZMX_SESSION_OLD", "not-this")], Stdio::null());
        let record = format!(
            r#"{{"pid":{},"sessionId":"{CLAUDE_SID}","cwd":"{}","startedAt":1778572448459,"procStart":"{}","version":"2.1.139","kind":"interactive","entrypoint":"cli","status":"{CLAUDE_STATUS}","name":"{CLAUDE_NAME}"}}"#,
            agent.pid,
            arg(&self.work),
            agent.starttime(),
        );
        self.scratch.home_file(&format!(".claude/sessions/{}.json", agent.pid), record.as_bytes());
        let rel = format!(".claude/projects/{}/{CLAUDE_SID}.jsonl", claude_project_dir(&self.work));
        let transcript = self.scratch.home_file(&rel, claude_transcript(&self.work).as_bytes());
        (agent, transcript)
    }

    /// A codex agent holding its rollout open as stdin; the rollout's path.
    pub(crate) fn codex(&self) -> (Agent, PathBuf) {
        let rollout = self.codex_rollout(CODEX_ID);
        let index = format!(
            "{{\"id\":\"{CODEX_ID}\",\"thread_name\":\"first try\",\"updated_at\":\"2025-11-28T10:01:00Z\"}}\n\
             {{\"id\":\"{CODEX_ID}\",\"thread_name\":\"{CODEX_TITLE}\",\"updated_at\":\"2025-11-28T10:02:00Z\"}}\n"
        );
        self.scratch.home_file(".codex/session_index.jsonl", index.as_bytes());
        let stdin = fs::File::open(&rollout).unwrap();
        (self.spawn("codex", &[], Stdio::from(stdin)), rollout)
    }

    /// A rollout for thread `id` in `CODEX_DAY`, recording `work/` as its cwd.
    pub(crate) fn codex_rollout(&self, id: &str) -> PathBuf {
        let rel = format!(".codex/sessions/{CODEX_DAY}/rollout-2025-11-28T10-00-00-{id}.jsonl");
        self.scratch.home_file(&rel, codex_rollout(id, &self.work).as_bytes())
    }
}

/// Claude Code's project dir for an ASCII cwd: every byte that is not a
/// letter or digit becomes `-`.
pub(crate) fn claude_project_dir(cwd: &Path) -> String {
    arg(cwd).bytes().map(|b| if b.is_ascii_alphanumeric() { b as char } else { '-' }).collect()
}

pub(crate) fn claude_transcript(cwd: &Path) -> String {
    let cwd = arg(cwd);
    [
        format!(r#"{{"type":"user","cwd":"{cwd}","sessionId":"{CLAUDE_SID}","message":{{"role":"user","content":"list the files"}},"timestamp":"2025-11-28T12:51:26.691Z"}}"#),
        format!(r#"{{"type":"assistant","cwd":"{cwd}","message":{{"model":"{CLAUDE_MODEL}","content":[{{"type":"text","text":"two files"}}]}}}}"#),
        r#"{"type":"ai-title","aiTitle":"Listing files"}"#.to_string(),
        format!(r#"{{"type":"custom-title","customTitle":"{CLAUDE_TITLE}"}}"#),
        String::new(),
    ]
    .join("\n")
}

pub(crate) fn codex_rollout(id: &str, cwd: &Path) -> String {
    let cwd = arg(cwd);
    [
        format!(r#"{{"timestamp":"2025-11-28T10:00:00.000Z","type":"session_meta","payload":{{"id":"{id}","cwd":"{cwd}","thread_source":"user","originator":"codex_cli_rs"}}}}"#),
        format!(r#"{{"timestamp":"2025-11-28T10:00:01.000Z","type":"turn_context","payload":{{"cwd":"{cwd}","model":"{CODEX_MODEL}"}}}}"#),
        r#"{"timestamp":"2025-11-28T10:00:01.000Z","type":"event_msg","payload":{"type":"user_message","message":"hi codex"}}"#.to_string(),
        String::new(),
    ]
    .join("\n")
}

/// A real agent: the test's child, killed and reaped when dropped.
pub(crate) struct Agent {
    child: Child,
    pub pid: u32,
    status: Option<ExitStatus>,
}

impl Agent {
    /// Spawn `cmd`. A binary copied a moment ago may still be open for
    /// writing in a child another test thread is forking (ETXTBSY), so
    /// that error is retried until the deadline.
    pub(crate) fn spawn(mut cmd: Command) -> Agent {
        let child = spawn_fresh(&mut cmd);
        Agent { pid: child.id(), child, status: None }
    }

    /// Field 22 of `/proc/<pid>/stat`: when it started, in clock ticks.
    pub(crate) fn starttime(&self) -> u64 {
        stat_fields(self.pid).expect("the agent's stat")[19].parse().unwrap()
    }

    /// SIGKILL it and reap it: its `/proc/<pid>` is gone on return.
    pub(crate) fn kill(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            self.status = Some(self.child.wait().expect("reap the agent"));
        }
    }

    /// SIGKILL it and leave it unreaped: a zombie, once the kernel is done.
    pub(crate) fn kill_leaving_a_zombie(&mut self) {
        // SAFETY: kill(2) of our own child, not yet reaped (status is None).
        assert_eq!(unsafe { libc::kill(self.pid as i32, libc::SIGKILL) }, 0);
        let zombie = poll(AGENT_DEADLINE, || stat_fields(self.pid).filter(|f| f[0] == "Z"));
        assert!(zombie.is_some(), "pid {} did not become a zombie", self.pid);
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The fields of `/proc/<pid>/stat` after the command (field 3, the
/// state, is index 0).
pub(crate) fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// `started` as the daemon must derive it for `pid`: boot time plus the
/// starttime at 100 ticks a second.
pub(crate) fn started_of(pid: u32) -> u64 {
    let stat = fs::read_to_string("/proc/stat").unwrap();
    let btime: u64 = stat.lines().find_map(|l| l.strip_prefix("btime ")).unwrap().trim().parse().unwrap();
    btime + stat_fields(pid).unwrap()[19].parse::<u64>().unwrap() / 100
}

pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// The names `/active/<harness>` lists, through a raw connection.
pub(crate) fn listed(c: &mut Conn, harness: &str, fid: u32) -> Vec<String> {
    names(&c.list(&format!("/active/{harness}"), fid, c.msize - IOHDRSZ))
}

// ---------------------------------------------------------------------------
// Fixture process trees.

/// The boot time a fixture `<proc>/stat` carries.
pub(crate) const FAKE_BTIME: u64 = 1_764_000_000;

/// A fixture `<proc>` under a scratch world's root.
pub(crate) struct FakeProc {
    pub dir: PathBuf,
}

impl FakeProc {
    pub(crate) fn new(scratch: &Scratch) -> FakeProc {
        FakeProc::at(scratch.root.join("proc"))
    }

    /// A fixture `<proc>` at `dir` (the kernel test builds one at the
    /// path it will have inside its guest).
    pub(crate) fn at(dir: PathBuf) -> FakeProc {
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("stat"), format!("cpu  1 2 3 4\nbtime {FAKE_BTIME}\n")).unwrap();
        fs::write(dir.join("locks"), b"").unwrap();
        FakeProc { dir }
    }

    /// `<proc>/<pid>/`: a process running `argv` in `cwd`, with `env`,
    /// its fds 0-2 on /dev/null and 3 on `fds`.
    pub(crate) fn add(&self, pid: u32, argv: &[&str], cwd: &Path, env: &[u8], fds: &[&Path]) {
        let dir = self.dir.join(pid.to_string());
        fs::create_dir_all(dir.join("fd")).unwrap();
        let middle = vec!["0"; 17].join(" ");
        let stat = format!("{pid} (fake) S 1 {middle} {} 5000 300\n", fake_start(pid));
        fs::write(dir.join("stat"), stat).unwrap();
        let cmdline: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
        fs::write(dir.join("cmdline"), cmdline).unwrap();
        fs::write(dir.join("environ"), env).unwrap();
        std::os::unix::fs::symlink(cwd, dir.join("cwd")).unwrap();
        let null = Path::new("/dev/null");
        for (n, target) in [null, null, null].iter().chain(fds).enumerate() {
            std::os::unix::fs::symlink(target, dir.join("fd").join(n.to_string())).unwrap();
        }
    }

    /// A `<proc>/locks` line: `pid` holds a write flock on `path`.
    pub(crate) fn flock(&self, pid: u32, path: &Path) -> io::Result<()> {
        let ino = fs::metadata(path)?.ino();
        let mut locks = fs::read_to_string(self.dir.join("locks"))?;
        locks.push_str(&format!("1: FLOCK  ADVISORY  WRITE {pid} 00:37:{ino} 0 EOF\n"));
        fs::write(self.dir.join("locks"), locks)
    }
}

/// A fixture process's starttime, in ticks.
pub(crate) fn fake_start(pid: u32) -> u64 {
    500_000 + u64::from(pid)
}

/// A scratch world with a fixture `<proc>` and the daemon serving both.
pub(crate) struct Fixture {
    pub scratch: std::sync::Arc<Scratch>,
    pub proc: FakeProc,
    /// A cwd inside the home (omp names its store after it).
    pub cwd: PathBuf,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let scratch = Scratch::new();
        let proc = FakeProc::new(&scratch);
        let cwd = scratch.home_dir("src/app");
        Fixture { scratch, proc, cwd }
    }

    pub(crate) fn daemon(&self) -> Daemon {
        Daemon::start_in(&self.scratch, &["--proc", arg(&self.proc.dir)])
    }

    pub(crate) fn home(&self) -> &Path {
        &self.scratch.home
    }

    /// A claude at `pid` with its record and transcript.
    pub(crate) fn claude(&self, pid: u32, sid: &str) -> PathBuf {
        self.proc.add(pid, &["claude"], &self.cwd, b"ZMX_SESSION=fx\0", &[]);
        let record = format!(
            r#"{{"pid":{pid},"sessionId":"{sid}","cwd":"{}","procStart":"{}","status":"waiting","name":"fixture"}}"#,
            arg(&self.cwd),
            fake_start(pid)
        );
        self.scratch.home_file(&format!(".claude/sessions/{pid}.json"), record.as_bytes());
        let rel = format!(".claude/projects/{}/{sid}.jsonl", claude_project_dir(&self.cwd));
        self.scratch.home_file(&rel, claude_transcript(&self.cwd).as_bytes())
    }

    /// An omp transcript in store `store`, recording `self.cwd`.
    pub(crate) fn omp_transcript(&self, store: &str, id: &str, title: &str) -> PathBuf {
        let body = format!(
            "{{\"type\":\"session\",\"id\":\"{id}\",\"cwd\":\"{}\",\"title\":\"{title}\"}}\n\
             {{\"type\":\"model_change\",\"model\":\"anthropic/claude-opus-4-5\"}}\n",
            arg(&self.cwd)
        );
        self.scratch
            .home_file(&format!(".omp/agent/sessions/{store}/2025-11-28T10-00-00-000Z_{id}.jsonl"), body.as_bytes())
    }

    /// Every agent of every route but the codex lock: pid → (harness, via).
    pub(crate) fn populate(&self) -> Vec<(u32, &'static str, &'static str)> {
        self.claude(100, CLAUDE_SID);
        self.proc.add(101, &["claude", "mcp", "serve"], &self.cwd, b"", &[]);
        let rollout = self.scratch.home_file(
            &format!(".codex/sessions/{CODEX_DAY}/rollout-2025-11-28T10-00-00-{CODEX_ID}.jsonl"),
            codex_rollout(CODEX_ID, &self.cwd).as_bytes(),
        );
        self.proc.add(200, &["/opt/codex/bin/codex"], &self.cwd, b"", &[&rollout]);
        let held = self.omp_transcript("-elsewhere", "01a22279-b4c7-7a46-a6f6-3babbe5064c9", "held open");
        self.proc.add(300, &["omp"], &self.cwd, b"", &[&held]);
        self.omp_transcript("-src-app", "01a22279-b4c7-7a46-a6f6-3babbe506400", "from the store");
        self.proc.add(301, &["omp"], &self.cwd, b"", &[]);
        let dsh = self.scratch.home_file(
            ".dsh/sessions/session-d22520b1-9324-4d3d-a9a4-26c53c6108af/session.jsonl.zstd",
            b"\x28\xb5\x2f\xfd",
        );
        self.proc.add(400, &["dsh"], &self.cwd, b"", &[&dsh]);
        self.proc.add(500, &["python3", "-m", "hermes_cli.main"], &self.cwd, b"", &[]);
        self.proc.add(501, &["python3", "-m", "hermes_cli.main", "gateway", "run"], &self.cwd, b"", &[]);
        self.proc.add(600, &["bash"], &self.cwd, b"", &[]);
        vec![
            (100, "claude", "registry"),
            (200, "codex", "fd"),
            (300, "omp", "fd"),
            (301, "omp", "dir"),
            (400, "dsh", "fd"),
            (500, "hermes", "none"),
        ]
    }
}

/// Set a live claude's status in its registry record, as Claude Code does:
/// the record rewritten whole, renamed into place.
pub(crate) fn set_status(w: &Live, pid: u32, status: &str) {
    let path = w.scratch.home.join(format!(".claude/sessions/{pid}.json"));
    let record = fs::read_to_string(&path).unwrap();
    let at = record.find(r#""status":""#).unwrap() + r#""status":""#.len();
    let end = at + record[at..].find('"').unwrap();
    let new = format!("{}{status}{}", &record[..at], &record[end..]);
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, new).unwrap();
    fs::rename(&tmp, &path).unwrap();
}
