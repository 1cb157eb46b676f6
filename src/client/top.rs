//! `9agents top [-a ADDR]...`: every agent of every host named, live, the
//! ones waiting for you first (with what they wait for), then the busy,
//! then the rest: state, harness, host, title, cwd, how long in that state,
//! when its transcript was last written, its tokens today (input and output
//! since local midnight: its `usage` file's `today.` lines).
//!
//! A thread a host opens `/active/wait` first, then reads every agent's
//! fields (a snapshot: nothing that changes meanwhile is missed, the wait's
//! cursor is from before it), then reads the wait's lines as they come and
//! reads again the agent each names. The screen is drawn again on each
//! change and each key, never on a timer. `q` quits; `j`/`k` or the arrows
//! move the selection; Enter shows the selected agent's last messages, any
//! key goes back. With standard output not a terminal it prints one
//! snapshot, once every host has answered, and exits.

use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::sync::mpsc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::cli::Failure;
use super::Client;
use crate::proto::OREAD;

const HARNESSES: [&str; 6] = ["claude", "codex", "dsh", "hermes", "omp", "pi"];
/// Messages Enter shows of the selected agent, the last ones.
const LAST_MESSAGES: usize = 6;
/// A snapshot's width: wide enough that no title or cwd is cut.
const SNAPSHOT_WIDTH: usize = 4096;

#[derive(Clone, Debug)]
struct Row {
    host: String,
    addr: String,
    harness: String,
    pid: u32,
    status: String,
    waiting_for: String,
    title: String,
    cwd: String,
    /// Unix seconds: since when in this state (as far as seen), and the
    /// transcript's last write.
    since: u64,
    last: u64,
    tokens: u64,
}

enum Ev {
    Agent(Row),
    Gone(String, String, u32),
    /// A host's snapshot is in.
    Ready,
    Down(String, String),
    Key(u8),
    /// The terminal was resized (SIGWINCH).
    Resize,
}

/// Run top over `hosts` (`(label, address)`).
pub(super) fn run(hosts: &[(String, String)]) -> Result<(), Failure> {
    let (tx, rx) = mpsc::channel();
    for (label, addr) in hosts {
        let (tx, label, addr) = (tx.clone(), label.clone(), addr.clone());
        std::thread::spawn(move || {
            if let Err(e) = watch(&label, &addr, &tx) {
                let _ = tx.send(Ev::Down(label, e.to_string()));
            }
        });
    }
    let tty = rustix::termios::isatty(io::stdout().as_fd()) && rustix::termios::isatty(io::stdin().as_fd());
    if !tty {
        return snapshot(&rx, hosts.len());
    }
    let _raw = Raw::enter().map_err(|e| Failure::At("terminal".into(), e))?;
    on_resize(tx.clone());
    let keys = tx.clone();
    std::thread::spawn(move || {
        let mut b = [0u8; 1];
        while io::stdin().read(&mut b).is_ok_and(|n| n == 1) {
            if keys.send(Ev::Key(b[0])).is_err() {
                break;
            }
        }
    });
    live(&rx)
}

/// One snapshot, printed when every host answered (or failed).
fn snapshot(rx: &mpsc::Receiver<Ev>, hosts: usize) -> Result<(), Failure> {
    let (mut rows, mut answered) = (Vec::new(), 0);
    while answered < hosts {
        match rx.recv() {
            Ok(Ev::Agent(r)) => upsert(&mut rows, r),
            Ok(Ev::Gone(h, harness, pid)) => rows.retain(|r| !(r.host == h && r.harness == harness && r.pid == pid)),
            Ok(Ev::Ready) => answered += 1,
            Ok(Ev::Down(host, why)) => {
                eprintln!("9agents: {host}: {why}");
                answered += 1;
            }
            Ok(Ev::Key(_) | Ev::Resize) => {}
            Err(_) => break,
        }
    }
    sort(&mut rows);
    // Not a terminal: no width to fit, nothing cut short.
    let text = table(&rows, SNAPSHOT_WIDTH, None, now());
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(super::cli::stdout_failed)
}

/// The live view: drawn again on every change and key.
fn live(rx: &mpsc::Receiver<Ev>) -> Result<(), Failure> {
    let (mut rows, mut selected, mut down) = (Vec::<Row>::new(), 0usize, Vec::<String>::new());
    let mut esc = 0u8;
    loop {
        sort(&mut rows);
        draw(&rows, selected, &down);
        let Ok(ev) = rx.recv() else { return Ok(()) };
        match ev {
            Ev::Agent(r) => upsert(&mut rows, r),
            Ev::Gone(h, harness, pid) => rows.retain(|r| !(r.host == h && r.harness == harness && r.pid == pid)),
            Ev::Ready | Ev::Resize => {}
            Ev::Down(host, why) => down.push(format!("{host}: {why}")),
            Ev::Key(b'q') => return Ok(()),
            // Arrows come as ESC [ A / ESC [ B.
            Ev::Key(0x1b) => esc = 1,
            Ev::Key(b'[') if esc == 1 => esc = 2,
            Ev::Key(b'j') | Ev::Key(b'B') if esc != 1 => {
                selected = (selected + 1).min(rows.len().saturating_sub(1));
                esc = 0;
            }
            Ev::Key(b'k') | Ev::Key(b'A') if esc != 1 => {
                selected = selected.saturating_sub(1);
                esc = 0;
            }
            Ev::Key(b'\r' | b'\n') => {
                if let Some(r) = rows.get(selected) {
                    show_last(r);
                    // Any key goes back.
                    while let Ok(ev) = rx.recv() {
                        match ev {
                            Ev::Key(_) => break,
                            Ev::Agent(r) => upsert(&mut rows, r),
                            Ev::Gone(h, harness, pid) => {
                                rows.retain(|r| !(r.host == h && r.harness == harness && r.pid == pid))
                            }
                            Ev::Ready | Ev::Resize => {}
                            Ev::Down(host, why) => down.push(format!("{host}: {why}")),
                        }
                    }
                }
            }
            Ev::Key(_) => esc = 0,
        }
    }
}

/// Follow the host at `addr`: its wait opened, its agents read, then each
/// change read as it comes.
fn watch(label: &str, addr: &str, tx: &mpsc::Sender<Ev>) -> io::Result<()> {
    let mut w = Client::dial(addr)?;
    let wfid = w.walk("/active/wait")?;
    w.open(wfid, OREAD)?;
    let mut c = Client::dial(addr)?;
    for h in HARNESSES {
        let Ok(dir) = c.walk(&format!("/active/{h}")) else { continue };
        let listed = c.open(dir, OREAD).and_then(|_| c.read_dir(dir));
        let _ = c.clunk(dir);
        for e in listed.unwrap_or_default() {
            let Ok(pid) = e.name.parse::<u32>() else { continue };
            if let Some(r) = row(&mut c, label, addr, h, pid) {
                let _ = tx.send(Ev::Agent(r));
            }
        }
    }
    let _ = tx.send(Ev::Ready);
    let mut buf = vec![0u8; w.io_max() as usize];
    loop {
        let n = w.read_at(wfid, 0, &mut buf)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "its /active/wait ended"));
        }
        for line in String::from_utf8_lossy(&buf[..n]).lines() {
            let words: Vec<&str> = line.split(' ').collect();
            let (Some(h), Some(pid)) = (words.get(1), words.get(2).and_then(|p| p.parse::<u32>().ok())) else {
                continue;
            };
            let ev = match words[0] {
                "gone" => Some(Ev::Gone(label.to_owned(), h.to_string(), pid)),
                _ => row(&mut c, label, addr, h, pid).map(Ev::Agent),
            };
            if let Some(ev) = ev {
                if tx.send(ev).is_err() {
                    return Ok(());
                }
            }
        }
    }
}

/// An agent's row, read now; `None` when it has gone meanwhile.
fn row(c: &mut Client, host: &str, addr: &str, h: &str, pid: u32) -> Option<Row> {
    let dir = format!("/active/{h}/{pid}");
    let status = text(c, &format!("{dir}/status"))?;
    let field = |c: &mut Client, f: &str| text(c, &format!("{dir}/{f}")).unwrap_or_default();
    let (waiting_for, title, cwd) = (field(c, "waiting_for"), field(c, "title"), field(c, "cwd"));
    let usage = field(c, "usage");
    // Tokens today: what its replies since local midnight took in and
    // gave out (the file's `today.` lines).
    let tokens = usage
        .lines()
        .filter(|l| l.starts_with("today.input ") || l.starts_with("today.output "))
        .filter_map(|l| l.split(' ').nth(1)?.parse::<u64>().ok())
        .sum();
    let last = c.walk(&format!("{dir}/transcript")).ok().and_then(|fid| {
        let st = c.stat(fid).ok();
        let _ = c.clunk(fid);
        st.map(|s| u64::from(s.mtime))
    });
    let last = last.unwrap_or(0);
    Some(Row {
        host: host.to_owned(),
        addr: addr.to_owned(),
        harness: h.to_owned(),
        pid,
        status,
        waiting_for,
        title,
        cwd,
        since: last.max(1),
        last,
        tokens,
    })
}

/// A small file's text, its last newline dropped; `None` if unreadable.
fn text(c: &mut Client, path: &str) -> Option<String> {
    let fid = c.walk(path).ok()?;
    let data = c.open(fid, OREAD).and_then(|_| c.read_all(fid));
    let _ = c.clunk(fid);
    let s = String::from_utf8_lossy(&data.ok()?).into_owned();
    Some(s.strip_suffix('\n').unwrap_or(&s).to_owned())
}

/// Put `r` in `rows`, over its own: a status new to it starts its time in
/// that state now.
fn upsert(rows: &mut Vec<Row>, mut r: Row) {
    match rows.iter_mut().find(|x| x.host == r.host && x.harness == r.harness && x.pid == r.pid) {
        Some(x) => {
            r.since = if x.status == r.status { x.since } else { now() };
            *x = r;
        }
        None => rows.push(r),
    }
}

/// Waiting first, then busy, then the rest; longest in its state first.
fn sort(rows: &mut [Row]) {
    let rank = |s: &str| match s {
        "waiting" => 0,
        "busy" => 1,
        _ => 2,
    };
    rows.sort_by(|a, b| {
        (rank(&a.status), a.since, &a.host, &a.harness, a.pid).cmp(&(
            rank(&b.status),
            b.since,
            &b.host,
            &b.harness,
            b.pid,
        ))
    });
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `3m`, `2h`, `4d`: how long ago `t` was.
fn ago(now: u64, t: u64) -> String {
    if t == 0 {
        return "-".into();
    }
    let s = now.saturating_sub(t);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// The rows as a table `width` wide at most (title and cwd cut to fit),
/// the selected one marked.
fn table(rows: &[Row], width: usize, selected: Option<usize>, now: u64) -> String {
    let head = ["STATE", "HARNESS", "HOST", "FOR", "LAST", "TODAY", "TITLE", "CWD"];
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            let state =
                if r.waiting_for.is_empty() { r.status.clone() } else { format!("{}: {}", r.status, r.waiting_for) };
            [
                state,
                r.harness.clone(),
                r.host.clone(),
                ago(now, r.since),
                ago(now, r.last),
                r.tokens.to_string(),
                r.title.clone(),
                r.cwd.clone(),
            ]
        })
        .collect();
    let mut w: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for c in &cells {
        for (i, cell) in c.iter().enumerate() {
            w[i] = w[i].max(cell.chars().count());
        }
    }
    w[0] = w[0].min(40);
    let fixed: usize = w[..6].iter().sum::<usize>() + 2 * 7 + 2;
    let room = width.saturating_sub(fixed);
    (w[6], w[7]) = (w[6].min(room * 3 / 5).max(5), w[7].min(room - room * 3 / 5).max(3));
    let line = |mark: &str, c: &[String]| -> String {
        let mut s = String::from(mark);
        for (i, cell) in c.iter().enumerate() {
            let cut: String = cell.chars().take(w[i]).collect();
            s.push_str(&format!("{cut:<width$}  ", width = w[i]));
        }
        let s = s.trim_end().to_owned();
        s.chars().take(width).collect::<String>() + "\n"
    };
    let mut out = line("  ", &head.map(String::from));
    for (i, c) in cells.iter().enumerate() {
        out.push_str(&line(if selected == Some(i) { "> " } else { "  " }, c));
    }
    out
}

/// The screen, drawn whole.
fn draw(rows: &[Row], selected: usize, down: &[String]) {
    let (cols, lines) = size();
    let mut s = String::from("\x1b[H\x1b[2J");
    let waiting = rows.iter().filter(|r| r.status == "waiting").count();
    s.push_str(&format!(
        "9agents top: {} agents, {waiting} waiting. q quits, j/k select, Enter: last messages\r\n",
        rows.len()
    ));
    let body = table(rows, cols, Some(selected), now());
    let room = lines.saturating_sub(2 + down.len().min(3)).max(3);
    for l in visible(&body, selected, room) {
        s.push_str(&l);
        s.push_str("\r\n");
    }
    for d in down.iter().rev().take(3) {
        s.push_str(&format!("down: {d}\r\n"));
    }
    let mut out = io::stdout().lock();
    let _ = out.write_all(s.as_bytes()).and_then(|()| out.flush());
}

/// The table's lines that fit `room` lines: its header, then the rows
/// around the selected one; rows left out are said in a last line, never
/// dropped silently.
fn visible(body: &str, selected: usize, room: usize) -> Vec<String> {
    let mut lines = body.lines();
    let Some(head) = lines.next() else { return Vec::new() };
    let rows: Vec<&str> = lines.collect();
    let mut out = vec![head.to_owned()];
    if rows.len() < room {
        out.extend(rows.iter().map(|r| r.to_string()));
        return out;
    }
    // Header and the "more" line take two.
    let fit = room.saturating_sub(2).max(1);
    let first = selected.saturating_sub(fit - 1).min(rows.len() - fit);
    out.extend(rows[first..first + fit].iter().map(|r| r.to_string()));
    let (above, below) = (first, rows.len() - first - fit);
    out.push(format!("  ({above} more above, {below} more below: a taller window shows them)"));
    out
}

/// The selected agent's last messages, over the screen.
fn show_last(r: &Row) {
    let (cols, lines) = size();
    let mut s = format!("\x1b[H\x1b[2J{} {} on {}: its last messages (any key: back)\r\n", r.harness, r.pid, r.host);
    if let Ok(mut c) = Client::dial(&r.addr) {
        let chat = format!("/active/{}/{}/chat", r.harness, r.pid);
        let names: Vec<String> = c
            .walk(&chat)
            .and_then(|fid| {
                let l = c.open(fid, OREAD).and_then(|_| c.read_dir(fid));
                let _ = c.clunk(fid);
                l
            })
            .map(|es| es.iter().map(|e| e.name.clone()).collect())
            .unwrap_or_default();
        let per = lines.saturating_sub(2) / LAST_MESSAGES.max(1);
        for name in names.iter().rev().take(LAST_MESSAGES).rev() {
            s.push_str(&format!("\x1b[1m{name}\x1b[0m\r\n"));
            let body = text(&mut c, &format!("{chat}/{name}")).unwrap_or_default();
            for l in body.lines().take(per.saturating_sub(1).max(1)) {
                s.push_str(&l.chars().take(cols).collect::<String>());
                s.push_str("\r\n");
            }
        }
    }
    let mut out = io::stdout().lock();
    let _ = out.write_all(s.as_bytes()).and_then(|()| out.flush());
}

/// The write end of the pipe SIGWINCH's handler writes a byte to.
static WINCH: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

extern "C" fn winch(_: libc::c_int) {
    let fd = WINCH.load(std::sync::atomic::Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: write(2) is async-signal-safe; the byte is static.
        unsafe { libc::write(fd, b"w".as_ptr().cast(), 1) };
    }
}

/// Each SIGWINCH becomes an `Ev::Resize`: its handler writes a byte to a
/// pipe, a thread reads it (the self-pipe trick).
fn on_resize(tx: mpsc::Sender<Ev>) {
    let mut fds = [0i32; 2];
    // SAFETY: pipe(2) fills the two fds it is given.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return;
    }
    WINCH.store(fds[1], std::sync::atomic::Ordering::Relaxed);
    // SAFETY: the handler only loads an atomic and calls write(2).
    unsafe { libc::signal(libc::SIGWINCH, winch as *const () as libc::sighandler_t) };
    // SAFETY: fds[0] is the pipe's read end, owned from here on.
    let mut r = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fds[0]) };
    std::thread::spawn(move || {
        let mut b = [0u8; 64];
        while r.read(&mut b).is_ok_and(|n| n > 0) {
            if tx.send(Ev::Resize).is_err() {
                break;
            }
        }
    });
}

/// The terminal's columns and lines (80×24 when it will not say).
fn size() -> (usize, usize) {
    rustix::termios::tcgetwinsize(io::stdout().as_fd())
        .map_or((80, 24), |w| (usize::from(w.ws_col).max(20), usize::from(w.ws_row).max(5)))
}

/// The terminal in raw mode on the alternate screen, put back when dropped.
struct Raw(rustix::termios::Termios);

impl Raw {
    fn enter() -> io::Result<Raw> {
        let stdin = io::stdin();
        let was = rustix::termios::tcgetattr(stdin.as_fd())?;
        let mut raw = was.clone();
        raw.make_raw();
        rustix::termios::tcsetattr(stdin.as_fd(), rustix::termios::OptionalActions::Now, &raw)?;
        let mut out = io::stdout().lock();
        out.write_all(b"\x1b[?1049h\x1b[?25l")?;
        out.flush()?;
        Ok(Raw(was))
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let mut out = io::stdout().lock();
        let _ = out.write_all(b"\x1b[?25h\x1b[?1049l").and_then(|()| out.flush());
        let _ = rustix::termios::tcsetattr(io::stdin().as_fd(), rustix::termios::OptionalActions::Now, &self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(status: &str, since: u64, title: &str) -> Row {
        Row {
            host: "h".into(),
            addr: "agents".into(),
            harness: "claude".into(),
            pid: since as u32,
            status: status.into(),
            waiting_for: if status == "waiting" { "approve Bash".into() } else { String::new() },
            title: title.into(),
            cwd: "/home/u/src/a-rather-long-project-directory".into(),
            since,
            last: since,
            tokens: 1234,
        }
    }

    #[test]
    fn the_waiting_come_first_then_the_busy_each_longest_in_its_state_first() {
        let mut rows = vec![r("idle", 10, "a"), r("busy", 30, "b"), r("waiting", 50, "c"), r("waiting", 20, "d")];
        sort(&mut rows);
        let order: Vec<&str> = rows.iter().map(|r| r.title.as_str()).collect();
        assert_eq!(order, ["d", "c", "b", "a"]);
    }

    #[test]
    fn the_table_fits_the_width_and_says_what_a_waiting_agent_waits_for() {
        let rows = vec![r("waiting", 20, &"a very long title ".repeat(10))];
        let t = table(&rows, 80, Some(0), 80);
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        assert!(t.lines().nth(1).unwrap().starts_with("> waiting: approve Bash"), "{t}");
        assert!(t.contains("1m"), "a minute in that state: {t}");
    }

    #[test]
    fn rows_that_do_not_fit_are_said_and_the_selected_one_is_shown() {
        let body: String = std::iter::once("head\n".to_string()).chain((0..10).map(|i| format!("row{i}\n"))).collect();
        let v = visible(&body, 7, 5);
        assert_eq!(v.len(), 5, "{v:?}");
        assert_eq!(v[0], "head");
        assert!(v[1..4].contains(&"row7".to_string()), "the selected row is on screen: {v:?}");
        assert!(v[4].contains("more above") && v[4].contains("more below"), "{v:?}");
        assert_eq!(visible(&body, 0, 20).len(), 11, "all fit: no line about more");
    }

    #[test]
    fn a_status_new_to_an_agent_starts_its_time_in_that_state() {
        let mut rows = vec![r("idle", 10, "a")];
        upsert(&mut rows, r("idle", 99, "a2").with_pid(10));
        assert_eq!(rows[0].since, 10, "same state: its time goes on");
        upsert(&mut rows, r("waiting", 99, "a3").with_pid(10));
        assert!(rows[0].since > 1_000_000, "a new state: now");
    }

    impl Row {
        fn with_pid(mut self, pid: u32) -> Row {
            self.pid = pid;
            self
        }
    }
}
