//! Which hosts a command talks to: each `-a` is an address, or a name of
//! the hosts file, `$XDG_CONFIG_HOME/9agents/hosts` (else
//! `~/.config/9agents/hosts`): one `name address` a line, `#` comments. A
//! name on several lines is a group: `-a work` is each of its addresses.
//!
//! ```text
//! laptop  agents
//! box     ssh!dev-box
//! work    ssh!dev-box
//! work    ssh!ci-1
//! ```
//!
//! Each host has a label its lines are tagged with: the name, for a name
//! of one address; else the address (an `ssh!` one as its host alone).

use std::io;
use std::path::PathBuf;

/// The hosts `addrs` name, each `(label, address)`, each address once.
pub(super) fn resolve(addrs: &[String]) -> io::Result<Vec<(String, String)>> {
    let table = match file() {
        Some(path) => match std::fs::read_to_string(&path) {
            Ok(text) => parse(&text)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        },
        None => Vec::new(),
    };
    Ok(resolve_in(&table, addrs))
}

fn resolve_in(table: &[(String, String)], addrs: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for a in addrs {
        let named: Vec<&String> = table.iter().filter(|(n, _)| n == a).map(|(_, addr)| addr).collect();
        let hosts: Vec<(String, String)> = match named[..] {
            [] => vec![(label(a), a.clone())],
            [one] => vec![(a.clone(), one.clone())],
            _ => named.iter().map(|addr| (label(addr), (*addr).clone())).collect(),
        };
        for h in hosts {
            if !out.iter().any(|(_, addr)| *addr == h.1) {
                out.push(h);
            }
        }
    }
    out
}

/// An address as a label: an `ssh!` host alone, anything else as it is.
fn label(addr: &str) -> String {
    addr.strip_prefix("ssh!").unwrap_or(addr).to_owned()
}

fn file() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config.join("9agents").join("hosts"))
}

/// The file's `(name, address)` lines; a line that is not two words is
/// refused, by its number.
fn parse(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let [name, addr] = words[..] else {
            return Err(format!("line {}: want `name address`, got {line:?}", i + 1));
        };
        out.push((name.to_owned(), addr.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Vec<(String, String)> {
        parse("laptop agents\nbox ssh!dev-box # the big one\n\nwork ssh!dev-box\nwork ssh!ci-1\n").unwrap()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_name_is_its_address_a_group_each_of_its_addresses_anything_else_itself() {
        let t = table();
        let got = resolve_in(&t, &strings(&["box", "tcp!h!564"]));
        assert_eq!(got, [("box".into(), "ssh!dev-box".into()), ("tcp!h!564".into(), "tcp!h!564".into())]);
        let got = resolve_in(&t, &strings(&["work"]));
        assert_eq!(got, [("dev-box".into(), "ssh!dev-box".into()), ("ci-1".into(), "ssh!ci-1".into())]);
        let got = resolve_in(&t, &strings(&["box", "work"]));
        assert_eq!(got.len(), 2, "an address once: {got:?}");
    }

    #[test]
    fn a_line_that_is_not_a_name_and_an_address_is_refused_by_number() {
        assert!(parse("a b c\n").unwrap_err().contains("line 1"));
        assert!(parse("ok agents\nlonely\n").unwrap_err().contains("line 2"));
    }
}
