//! The client subcommands of the `9agents` binary, so a user needs nothing
//! but the daemon itself to look at its tree:
//!
//! ```text
//! 9agents ls [-l] [-a ADDR] PATH     a directory's entries, or a file's name
//! 9agents cat [-a ADDR] PATH         a file, streamed to stdout
//! 9agents stat [-a ADDR] PATH        every field of a stat
//! 9agents write [-a ADDR] PATH       stdin, in Twrites of up to msize
//! 9agents wait [-a ADDR] [PATH]      a wait file's lines as they come
//! 9agents usage [-a ADDR] [--since DATE] [--until DATE] [REPORT]
//!                                    a /usage report, its rows within the dates
//! 9agents search [-a ADDR] WORD…     the messages that hold the words, as
//!                                    their paths (`--help`: the query syntax)
//! 9agents top [-a ADDR]…             every agent of every host, live
//! ```
//!
//! ADDR defaults to the posted name `agents`. A failure prints
//! `9agents: PATH: <the server's text>` and exits 1; a usage error prints the
//! usage and exits 2. A reader that goes away (`9agents cat f | head`) ends
//! the command quietly, as SIGPIPE would.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use super::format::{self, quote};
use super::Client;
use crate::localtime::Zone;
use crate::proto::{OREAD, OWRITE};
use crate::reports::Report;

pub(super) const USAGE: &str = "\
usage: 9agents ls [-l] [-a ADDR] PATH
       9agents cat [-a ADDR] PATH
       9agents stat [-a ADDR] PATH
       9agents write [-a ADDR] PATH < data
       9agents wait [-a ADDR] [PATH]       (default /active/wait)
       9agents usage [-a ADDR] [--since YYYY-MM-DD] [--until YYYY-MM-DD] [REPORT]
                     REPORT: daily (default), weekly, monthly, sessions, projects, block, prices
       9agents search [-a ADDR] WORD...    (9agents search --help: the query syntax)
       9agents top [-a ADDR]...            every agent, live; the waiting first (q quits)
-a may be given more than once, or name a group of $XDG_CONFIG_HOME/9agents/hosts
(one `name address` a line): each line is then tagged with its host
ADDR: unix!/path/to/socket, tcp!host!port, ssh!host (runs ssh host 9agents --stdio),
      or a posted name (default agents)";

/// The name the daemon posts itself under unless told `--name`.
const DEFAULT_ADDR: &str = "agents";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Command {
    Ls {
        long: bool,
    },
    Cat,
    Stat,
    Write,
    Wait,
    /// `/usage/<report>`, its rows kept within the dates (`reports::filter`).
    Usage(Report),
    /// `/search/query`, written the words as a query and read.
    Search,
    /// Every agent of every host named, live (`top`).
    Top,
}

#[derive(Debug, PartialEq, Eq)]
pub(super) struct Invocation {
    pub(super) command: Command,
    /// Each `-a`: an address, or a name of the hosts file.
    pub(super) addrs: Vec<String>,
    path: String,
    /// `usage`'s `--since` and `--until`.
    since: Option<String>,
    until: Option<String>,
    /// `search`'s query, its words joined (a word with a blank quoted).
    query: String,
}

/// Why a command stopped early.
pub(super) enum Failure {
    /// Print `9agents: <subject>: <error>` and exit 1.
    At(String, io::Error),
    /// Stdout's reader has gone; there is no one to tell.
    ReaderGone,
    /// Said already (a host of several, on stderr): exit 1.
    Reported,
}

pub(super) fn parse(args: Vec<OsString>) -> Result<Invocation, String> {
    let mut args = args.into_iter();
    let name = args.next().ok_or("no subcommand")?;
    let mut rest = pico_args::Arguments::from_vec(args.collect());
    let command = match name.to_str() {
        Some("ls") => Command::Ls { long: rest.contains("-l") },
        Some("cat") => Command::Cat,
        Some("stat") => Command::Stat,
        Some("write") => Command::Write,
        Some("wait") => Command::Wait,
        Some("usage") => Command::Usage(Report::Daily),
        Some("search") => Command::Search,
        Some("top") => Command::Top,
        _ => return Err(format!("unknown subcommand {name:?}")),
    };
    let addrs: Vec<String> = rest.values_from_str("-a").map_err(|e| e.to_string())?;
    let addrs = if addrs.is_empty() { vec![DEFAULT_ADDR.to_owned()] } else { addrs };
    let (since, until) = match command {
        Command::Usage(_) => (
            rest.opt_value_from_str("--since").map_err(|e| e.to_string())?,
            rest.opt_value_from_str("--until").map_err(|e| e.to_string())?,
        ),
        _ => (None, None),
    };
    let mut left = rest.finish();
    if command == Command::Search {
        // Every word is the query's, `-i` and all.
        let words: Vec<String> = left.iter().filter(|a| *a != "--").map(|a| a.to_string_lossy().into_owned()).collect();
        if words.is_empty() {
            return Err("search: no WORD to search for".into());
        }
        let query = words.iter().map(|w| query_word(w)).collect::<Vec<_>>().join(" ");
        return Ok(Invocation { command, addrs, path: "/search/query".into(), since, until, query });
    }
    if command == Command::Top {
        if let Some(extra) = left.first() {
            return Err(format!("top takes no PATH, not {extra:?}"));
        }
        return Ok(Invocation { command, addrs, path: "/active".into(), since, until, query: String::new() });
    }
    if left.first().is_some_and(|a| a == "--") {
        left.remove(0);
    } else if let Some(flag) = left.iter().find(|a| a.to_string_lossy().starts_with('-')) {
        return Err(format!("unknown option {flag:?}"));
    }
    let (command, path) = match (command, <[OsString; 1]>::try_from(left)) {
        (Command::Usage(_), Ok([report])) => {
            let name = report.to_string_lossy().into_owned();
            let r = Report::from_name(name.as_bytes()).ok_or(format!("no report {name:?}"))?;
            (Command::Usage(r), format!("/usage/{name}"))
        }
        (Command::Usage(r), Err(left)) if left.is_empty() => (Command::Usage(r), "/usage/daily".into()),
        (command, left) => (command, path_of(command, left)?),
    };
    Ok(Invocation { command, addrs, path, since, until, query: String::new() })
}

/// A word of `search`'s as a word of the query: one with a blank or a
/// quote in it quoted, so the shell's one argument stays one term.
fn query_word(w: &str) -> String {
    if w.is_empty() || w.contains([' ', '\t', '\n', '"']) {
        format!("\"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        w.to_string()
    }
}

/// The one PATH a command names (`wait`'s default when it names none).
fn path_of(command: Command, left: Result<[OsString; 1], Vec<OsString>>) -> Result<String, String> {
    Ok(match left {
        Ok([path]) => path.into_string().map_err(|p| format!("PATH {p:?} is not UTF-8"))?,
        Err(left) if left.is_empty() && command == Command::Wait => "/active/wait".into(),
        Err(left) if left.is_empty() => return Err("missing PATH".into()),
        Err(left) => return Err(format!("one PATH at a time, not {}", left.len())),
    })
}

/// The command on the host at `addr`, its output to `out`.
pub(super) fn on_host(invocation: &Invocation, addr: &str, out: &mut dyn Write) -> Result<(), Failure> {
    let mut client = Client::dial(addr).map_err(|e| Failure::At(addr.to_owned(), e))?;
    let path = invocation.path.as_str();
    let fid = client.walk(path).map_err(at(path))?;
    let result = match invocation.command {
        Command::Ls { long } => ls(&mut client, fid, long, path, out),
        Command::Cat => cat(&mut client, fid, path, out),
        Command::Wait => wait(&mut client, fid, path, out),
        Command::Stat => stat(&mut client, fid, path, out),
        Command::Write => write(&mut client, fid, path),
        Command::Usage(r) => usage(&mut client, fid, path, r, invocation, out),
        Command::Search => search(&mut client, fid, path, &invocation.query, out),
        Command::Top => Ok(()),
    };
    // The process exits next and the server clunks what a closed connection
    // leaves, so this clunk is tidiness; its failure says nothing about the
    // command's.
    let _ = client.clunk(fid);
    result
}

fn ls(client: &mut Client, fid: u32, long: bool, path: &str, out: &mut dyn Write) -> Result<(), Failure> {
    let stat = client.stat(fid).map_err(at(path))?;
    let entries = match stat.is_dir() {
        true => {
            client.open(fid, OREAD).map_err(at(path))?;
            client.read_dir(fid).map_err(at(path))?
        }
        false => vec![stat],
    };
    let text = match long {
        true => format::long_listing(&entries, unix_now(), &Zone::local()),
        false => entries.iter().map(|e| format!("{}\n", quote(&e.name))).collect(),
    };
    print(out, text.as_bytes())
}

fn cat(client: &mut Client, fid: u32, path: &str, out: &mut dyn Write) -> Result<(), Failure> {
    client.open(fid, OREAD).map_err(at(path))?;
    stream(client, fid, path, out, Reads::Onwards)
}

/// A `wait` file's lines as they come: each read parks in the daemon until
/// something changed and answers whole lines, printed as they arrive. It
/// ends when the file does (the agent gone: a read of 0 bytes).
fn wait(client: &mut Client, fid: u32, path: &str, out: &mut dyn Write) -> Result<(), Failure> {
    client.open(fid, OREAD).map_err(at(path))?;
    stream(client, fid, path, out, Reads::AtZero)
}

/// Where a stream's reads are: each where the last ended (a file, a
/// search), or each at 0 (a `wait` file, whose offset means nothing).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reads {
    Onwards,
    AtZero,
}

/// Read an open fid up to the read that answers nothing, each answer to
/// `out` as it comes.
fn stream(client: &mut Client, fid: u32, path: &str, out: &mut dyn Write, reads: Reads) -> Result<(), Failure> {
    let mut buf = vec![0u8; client.io_max() as usize];
    let mut offset = 0u64;
    loop {
        let n = client.read_at(fid, offset, &mut buf).map_err(at(path))?;
        if n == 0 {
            return out.flush().map_err(stdout_failed);
        }
        out.write_all(&buf[..n]).and_then(|()| out.flush()).map_err(stdout_failed)?;
        if reads == Reads::Onwards {
            offset += n as u64;
        }
    }
}

/// A search: the query written to `/search/query`, and its results printed
/// as they come, up to the read that answers nothing.
fn search(client: &mut Client, fid: u32, path: &str, query: &str, out: &mut dyn Write) -> Result<(), Failure> {
    client.open(fid, crate::proto::ORDWR).map_err(at(path))?;
    let mut buf = vec![0u8; client.io_max() as usize];
    if let Err(e) = client.write(fid, 0, query.as_bytes()) {
        // A query refused: its read says why.
        let n = client.read_at(fid, 0, &mut buf).unwrap_or(0);
        let why = String::from_utf8_lossy(&buf[..n]);
        return Err(match why.strip_prefix("error\t") {
            Some(why) => {
                Failure::At(path.into(), io::Error::new(io::ErrorKind::InvalidInput, why.trim_end().to_string()))
            }
            None => at(path)(e),
        });
    }
    stream(client, fid, path, out, Reads::Onwards)
}

/// A report, its rows kept within `--since` and `--until`, its totals
/// summed again, aligned for a terminal.
fn usage(
    client: &mut Client,
    fid: u32,
    path: &str,
    r: Report,
    inv: &Invocation,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    client.open(fid, OREAD).map_err(at(path))?;
    let text = client.read_all(fid).map_err(at(path))?;
    let kept = crate::reports::filter::filter(r, &text, inv.since.as_deref(), inv.until.as_deref())
        .map_err(|why| Failure::At(path.into(), io::Error::new(io::ErrorKind::InvalidInput, why)))?;
    print(out, &kept)
}

fn stat(client: &mut Client, fid: u32, path: &str, out: &mut dyn Write) -> Result<(), Failure> {
    let stat = client.stat(fid).map_err(at(path))?;
    print(out, format::stat_fields(&stat, client.dialect()).as_bytes())
}

/// Stdin to the file, each Twrite as full as msize allows, so a control
/// file sees a short input as one write.
fn write(client: &mut Client, fid: u32, path: &str) -> Result<(), Failure> {
    client.open(fid, OWRITE).map_err(at(path))?;
    let mut buf = vec![0u8; client.io_max() as usize];
    let mut stdin = io::stdin().lock();
    let mut offset = 0u64;
    loop {
        let n = fill(&mut stdin, &mut buf).map_err(|e| Failure::At("stdin".into(), e))?;
        if n == 0 {
            return Ok(());
        }
        let took = client.write(fid, offset, &buf[..n]).map_err(at(path))?;
        if took < n {
            let why = format!("short write: the server took {took} of {n} bytes");
            return Err(Failure::At(path.into(), io::Error::new(io::ErrorKind::WriteZero, why)));
        }
        offset += n as u64;
    }
}

/// Read until `buf` is full or the input ends: the bytes read.
fn fill(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

fn print(out: &mut dyn Write, bytes: &[u8]) -> Result<(), Failure> {
    out.write_all(bytes).and_then(|()| out.flush()).map_err(stdout_failed)
}

fn at(path: &str) -> impl Fn(io::Error) -> Failure + '_ {
    move |e| Failure::At(path.into(), e)
}

pub(super) fn stdout_failed(e: io::Error) -> Failure {
    match e.kind() {
        io::ErrorKind::BrokenPipe => Failure::ReaderGone,
        _ => Failure::At("stdout".into(), e),
    }
}

fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn ls_takes_a_long_flag_an_address_and_a_path_in_any_order() {
        let want = Invocation {
            command: Command::Ls { long: true },
            addrs: vec!["tcp!h!564".into()],
            path: "/claude".into(),
            since: None,
            until: None,
            query: String::new(),
        };
        assert_eq!(parse(args("ls -l -a tcp!h!564 /claude")), Ok(want));
        let want = Invocation {
            command: Command::Ls { long: true },
            addrs: vec!["tcp!h!564".into()],
            path: "/claude".into(),
            since: None,
            until: None,
            query: String::new(),
        };
        assert_eq!(parse(args("ls /claude -a tcp!h!564 -l")), Ok(want));
    }

    #[test]
    fn usage_names_a_report_and_its_dates() {
        let p = parse(args("usage --since 2026-11-01 weekly")).unwrap();
        assert_eq!((p.command, p.path.as_str()), (Command::Usage(Report::Weekly), "/usage/weekly"));
        assert_eq!((p.since.as_deref(), p.until), (Some("2026-11-01"), None));
        assert_eq!(parse(args("usage")).unwrap().path, "/usage/daily", "daily by default");
        assert!(parse(args("usage hourly")).is_err());
        assert!(parse(args("cat --since 2026-11-01 /README")).is_err(), "dates are usage's alone");
    }

    #[test]
    fn search_takes_every_word_as_the_querys_quoting_one_with_a_blank() {
        let mut a = args("search -a tcp!h!564 -i kind:bash");
        a.push(OsString::from("cargo \"build\""));
        let p = parse(a).unwrap();
        assert_eq!(
            (p.command, p.addrs.as_slice(), p.path.as_str()),
            (Command::Search, &["tcp!h!564".to_string()][..], "/search/query")
        );
        assert_eq!(p.query, r#"-i kind:bash "cargo \"build\"""#);
        assert_eq!(crate::search::Query::parse(p.query.as_bytes()).unwrap().terms, [br#"cargo "build""#.to_vec()]);
        assert!(parse(args("search")).is_err(), "no word");
    }

    #[test]
    fn the_address_defaults_to_the_posted_name_agents() {
        let want = Invocation {
            command: Command::Cat,
            addrs: vec!["agents".into()],
            path: "/README".into(),
            since: None,
            until: None,
            query: String::new(),
        };
        assert_eq!(parse(args("cat /README")), Ok(want));
    }

    #[test]
    fn a_path_that_starts_with_a_dash_follows_a_double_dash() {
        let parsed = parse(args("ls -- -home-ava-proj")).unwrap();
        assert_eq!(parsed.path, "-home-ava-proj");
    }

    #[test]
    fn usage_errors_name_what_is_wrong() {
        assert_eq!(parse(args("cat")), Err("missing PATH".into()));
        assert_eq!(parse(args("stat -l /")), Err("unknown option \"-l\"".into()));
        assert_eq!(parse(args("ls /a /b")), Err("one PATH at a time, not 2".into()));
        assert_eq!(parse(args("frob /")), Err("unknown subcommand \"frob\"".into()));
        assert!(parse(args("ls -a")).is_err());
        assert_eq!(parse(vec![]), Err("no subcommand".into()));
    }

    #[test]
    fn fill_reads_until_the_buffer_is_full_or_the_input_ends() {
        let mut input: &[u8] = b"0123456789";
        let mut buf = [0u8; 4];
        assert_eq!(fill(&mut input, &mut buf).unwrap(), 4);
        assert_eq!(fill(&mut io::Read::chain(&b"ab"[..], &b"c"[..]), &mut buf).unwrap(), 3);
        assert_eq!(&buf[..3], b"abc");
    }
}
