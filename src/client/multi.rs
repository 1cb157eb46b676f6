//! One command on several hosts at once (`-a` more than once, or a group
//! of the hosts file): a thread a host, each line it prints tagged with
//! the host's label and a tab, printed as it comes, so a slow host never
//! holds back another's lines. A host that fails (cannot be reached, hangs
//! up mid-`wait`) is said on standard error, with its label; the others go
//! on, and the exit status says one failed. `usage` is one table, a `host`
//! column first, once every host has answered.

use std::io::{self, Write};
use std::sync::mpsc;

use super::cli::{on_host, Command, Failure, Invocation};

enum Msg {
    Line(Vec<u8>),
    /// A host's whole output (`usage`).
    Whole(String, Vec<u8>),
    Done(String, Result<(), Failure>),
}

/// Run `inv` on every host of `hosts` (`(label, address)`).
pub(super) fn run(inv: &Invocation, hosts: &[(String, String)]) -> Result<(), Failure> {
    if inv.command == Command::Write {
        let why = "write goes to one host: name one with -a";
        return Err(Failure::At("write".into(), io::Error::new(io::ErrorKind::InvalidInput, why)));
    }
    let whole = matches!(inv.command, Command::Usage(_));
    let (tx, rx) = mpsc::channel::<Msg>();
    std::thread::scope(|scope| {
        for (label, addr) in hosts {
            let tx = tx.clone();
            scope.spawn(move || {
                let result = if whole {
                    let mut out = Vec::new();
                    let r = on_host(inv, addr, &mut out);
                    let _ = tx.send(Msg::Whole(label.clone(), out));
                    r
                } else {
                    let mut out = Tagged { label, tx: tx.clone(), partial: Vec::new() };
                    let r = on_host(inv, addr, &mut out);
                    out.end();
                    r
                };
                let _ = tx.send(Msg::Done(label.clone(), result));
            });
        }
        drop(tx);
        print_all(rx, hosts.len())
    })
}

/// Print what the hosts send as it comes; `usage`'s tables at the end.
fn print_all(rx: mpsc::Receiver<Msg>, hosts: usize) -> Result<(), Failure> {
    let mut stdout = io::stdout().lock();
    let (mut done, mut failed, mut tables) = (0, false, Vec::new());
    while done < hosts {
        let Ok(msg) = rx.recv() else { break };
        match msg {
            Msg::Line(line) => {
                if let Err(e) = stdout.write_all(&line).and_then(|()| stdout.flush()) {
                    return Err(super::cli::stdout_failed(e));
                }
            }
            Msg::Whole(label, text) => tables.push((label, text)),
            Msg::Done(_, Ok(()) | Err(Failure::ReaderGone)) => done += 1,
            Msg::Done(label, Err(Failure::At(subject, e))) => {
                // (A dial's failure names the address already.)
                match subject.starts_with('/') {
                    true => eprintln!("9agents: {label}: {subject}: {e}"),
                    false => eprintln!("9agents: {label}: {e}"),
                }
                (done, failed) = (done + 1, true);
            }
            Msg::Done(_, Err(Failure::Reported)) => (done, failed) = (done + 1, true),
        }
    }
    if !tables.is_empty() {
        tables.sort_by(|a, b| a.0.cmp(&b.0));
        let table = with_host_column(&tables);
        stdout.write_all(&table).and_then(|()| stdout.flush()).map_err(super::cli::stdout_failed)?;
    }
    if failed {
        return Err(Failure::Reported);
    }
    Ok(())
}

/// Each host's report as one table: a `host` column first, each host's
/// rows (its totals lines among them) after the one header.
fn with_host_column(tables: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut header: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    for (label, text) in tables {
        let text = String::from_utf8_lossy(text);
        let mut lines = text.lines();
        let Some(head) = lines.next() else { continue };
        let cols: Vec<String> = head.split_whitespace().map(str::to_owned).collect();
        let n = cols.len().max(1);
        header.get_or_insert(cols);
        for line in lines {
            // The last column takes the rest: a cwd may hold blanks.
            let mut row = vec![label.clone()];
            let mut rest = line.trim_start();
            for _ in 0..n - 1 {
                let Some((cell, after)) = rest.split_once(char::is_whitespace) else { break };
                row.push(cell.to_owned());
                rest = after.trim_start();
            }
            row.push(rest.trim_end().to_owned());
            rows.push(row);
        }
    }
    let Some(header) = header else { return Vec::new() };
    if let Some(all) = grand_total(&header, &rows) {
        rows.push(all);
    }
    let header: Vec<&str> = std::iter::once("host").chain(header.iter().map(String::as_str)).collect();
    crate::reports::table::render(&header, &rows)
}

/// Every host's grand total (its row whose harness column says `total` and
/// whose first column says `all`, or a `total` row where there is no
/// `all`) summed into one more row, its host `all`: tokens added, costs
/// added to the cent's hundredth, an unknown cost anywhere marked `+?`.
/// `None` for a report with no such rows (`block`, `prices`).
fn grand_total(header: &[String], rows: &[Vec<String>]) -> Option<Vec<String>> {
    let harness = header.iter().position(|h| h == "harness")?;
    let cost = header.iter().position(|h| h == "cost")?;
    // Row cells are one to the right of the header's: the host is first.
    let grand: Vec<&Vec<String>> = rows
        .iter()
        .filter(|r| r.get(harness + 1).is_some_and(|c| c == "total") && (harness == 0 || r[1] == "all"))
        .collect();
    if grand.is_empty() {
        return None;
    }
    let mut out: Vec<String> = vec!["all".into()];
    for (i, h) in header.iter().enumerate() {
        let cells = grand.iter().filter_map(|r| r.get(i + 1));
        out.push(match h.as_str() {
            _ if i == cost => sum_costs(cells),
            "input" | "output" | "cache_read" | "cache_write" | "reasoning" | "sessions" | "session" => {
                cells.filter_map(|c| c.parse::<u64>().ok()).sum::<u64>().to_string()
            }
            _ if i == harness => "total".into(),
            _ => grand[0].get(i + 1).cloned().unwrap_or_default(),
        });
    }
    Some(out)
}

/// Costs as the reports write them (`12.3456`, `?`, `0.61+?`), added.
fn sum_costs<'a>(cells: impl Iterator<Item = &'a String>) -> String {
    let (mut ten_thousandths, mut unknown) = (0u64, false);
    for c in cells {
        let known = c.strip_suffix("+?").unwrap_or(c);
        unknown |= known.len() != c.len() || known == "?";
        let (whole, frac) = known.split_once('.').unwrap_or((known, "0"));
        let frac: String = frac.chars().chain(std::iter::repeat('0')).take(4).collect();
        if let (Ok(w), Ok(f)) = (whole.parse::<u64>(), frac.parse::<u64>()) {
            ten_thousandths += w * 10_000 + f;
        }
    }
    let sum = format!("{}.{:04}", ten_thousandths / 10_000, ten_thousandths % 10_000);
    if unknown {
        format!("{sum}+?")
    } else {
        sum
    }
}

/// A host's output, a whole line at a time, tagged with its label.
struct Tagged<'a> {
    label: &'a str,
    tx: mpsc::Sender<Msg>,
    partial: Vec<u8>,
}

impl Tagged<'_> {
    fn send(&mut self, line: &[u8]) {
        let mut out = Vec::with_capacity(self.label.len() + 1 + line.len() + 1);
        out.extend_from_slice(self.label.as_bytes());
        out.push(b'\t');
        out.extend_from_slice(line);
        if !line.ends_with(b"\n") {
            out.push(b'\n');
        }
        let _ = self.tx.send(Msg::Line(out));
    }

    /// What is left of a last line without its newline.
    fn end(&mut self) {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.send(&rest);
        }
    }
}

impl Write for Tagged<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(nl) = memchr::memchr(b'\n', &self.partial) {
            let line: Vec<u8> = self.partial.drain(..=nl).collect();
            self.send(&line);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_grand_totals_add_up_in_one_more_row() {
        let a =
            b"day harness model input output cost\n2026-11-01 claude m 1 2 0.5000\nall total - 1 2 0.5000\n".to_vec();
        let b =
            b"day harness model input output cost\n2026-11-01 codex g 10 20 ?\nall total - 10 20 1.2500+?\n".to_vec();
        let t = String::from_utf8(with_host_column(&[("a".into(), a), ("b".into(), b)])).unwrap();
        let last: Vec<&str> = t.lines().last().unwrap().split_whitespace().collect();
        assert_eq!(last, ["all", "all", "total", "-", "11", "22", "1.7500+?"], "{t}");
        assert!(t.starts_with("host "), "{t}");
    }

    #[test]
    fn a_report_without_totals_gets_no_grand_total() {
        let p = b"model prompt input\nx - 1\n".to_vec();
        let t = String::from_utf8(with_host_column(&[("a".into(), p)])).unwrap();
        assert_eq!(t.lines().count(), 2, "{t}");
    }
}
