//! `/health`: whether the harnesses still write what the rules read.
//!
//! Every chat index counts what it met that no rule knows (`chat::drift`);
//! each refresh adds what its index counted since the last one to its
//! harness's tally here. `/health` says, per harness, how many transcripts
//! were read since the daemon started, the lines a strict parser would not
//! take and the lines of glued objects, the newest harness version the
//! records named against the newest the rules were established for
//! (`RULES`), and each record type no rule knows: how many, how many held
//! text, and the first transcript it was met in.
//!
//! ```text
//! harness claude read 52 bad_lines 0 glued_lines 0 newest 2.1.170 rules 2.1.339
//! harness codex read 3 bad_lines 0 glued_lines 0 newest 0.180.1 rules 0.179.0 newer
//! unknown codex brand_new_record count 2 with_text 2 first sessions/2026/11/02/rollout-….jsonl
//! ```
//!
//! Memory is bounded: at most `FILES_MAX` transcripts are told apart a
//! harness (past it the count says `+`), and `chat::drift::TYPES_MAX`
//! record types.

use std::collections::HashSet;

use crate::chat::drift::{Drift, Version};
use crate::harness::Harness;

/// Transcripts one harness's count tells apart.
pub(crate) const FILES_MAX: usize = 1 << 16;

/// The newest version of each harness the rules of docs/CHAT.md were
/// established for: Claude Code's `version`, codex's `cli_version`, pi's
/// and omp's session format (`session`.`version`), dsh's session format.
pub(crate) const RULES: [(Harness, Version); 5] = [
    (Harness::Claude, Version([2, 1, 339])),
    (Harness::Codex, Version([0, 179, 0])),
    (Harness::Omp, Version([3, 0, 0])),
    (Harness::Pi, Version([3, 0, 0])),
    (Harness::Dsh, Version([0, 0, 0])),
];

#[derive(Default)]
struct Tally {
    /// The transcripts read (their dev and inode, hashed).
    read: HashSet<u64>,
    more: bool,
    drift: Drift,
    /// The first transcript each unknown type was met in, as named in
    /// `drift.unknown`; and the first with a bad or a glued line.
    first: Vec<(Vec<u8>, Vec<u8>)>,
    first_bad: Option<Vec<u8>>,
    first_glued: Option<Vec<u8>>,
}

/// The tallies of every harness.
#[derive(Default)]
pub(crate) struct Health {
    per: [Tally; Harness::COUNT],
}

impl Health {
    /// A refresh of harness `h`'s transcript `rel` (file `id`: its dev and
    /// inode) indexed, since the last one, what `d` says.
    pub(crate) fn add(&mut self, h: Harness, rel: &[u8], id: (u64, u64), d: &Drift) {
        let t = &mut self.per[h.index()];
        let key = wyhash::wyhash(&[id.0.to_le_bytes(), id.1.to_le_bytes()].concat(), 0x4ea1_7400);
        if t.read.len() < FILES_MAX {
            t.read.insert(key);
        } else if !t.read.contains(&key) {
            t.more = true;
        }
        t.drift.add(d);
        for u in &d.unknown {
            // (`Drift::add` may have counted it under `(other)`: the name
            // it has there is the one kept.)
            let name =
                if t.drift.unknown.iter().any(|m| m.name == u.name) { &u.name[..] } else { crate::chat::drift::OTHER };
            if !t.first.iter().any(|(n, _)| n == name) {
                t.first.push((name.to_vec(), rel.to_vec()));
            }
        }
        if d.bad_lines > 0 && t.first_bad.is_none() {
            t.first_bad = Some(rel.to_vec());
        }
        if d.glued_lines > 0 && t.first_glued.is_none() {
            t.first_glued = Some(rel.to_vec());
        }
    }

    /// The text of `/health`.
    pub(crate) fn render(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        for h in Harness::ALL {
            let t = &self.per[h.index()];
            let rules = RULES.iter().find(|(r, _)| *r == h).map(|(_, v)| *v);
            let newest = t.drift.version;
            let _ = write!(
                out,
                "harness {} read {}{} bad_lines {} glued_lines {} newest {} rules {}",
                h.name(),
                t.read.len(),
                if t.more { "+" } else { "" },
                t.drift.bad_lines,
                t.drift.glued_lines,
                newest.map_or("-".into(), |v| v.to_string()),
                rules.map_or("-".into(), |v| v.to_string()),
            );
            if newest.is_some_and(|n| rules.is_some_and(|r| n > r)) {
                out.push_str(" newer");
            }
            out.push('\n');
        }
        for h in Harness::ALL {
            let t = &self.per[h.index()];
            for u in &t.drift.unknown {
                let first = t.first.iter().find(|(n, _)| *n == u.name).map_or(&b""[..], |(_, r)| r);
                let _ = writeln!(
                    out,
                    "unknown {} {} count {} with_text {} first {}",
                    h.name(),
                    String::from_utf8_lossy(&u.name),
                    u.count,
                    u.with_text,
                    shown(first)
                );
            }
            for (what, first) in [("bad_line", &t.first_bad), ("glued_line", &t.first_glued)] {
                if let Some(rel) = first {
                    let _ = writeln!(out, "{what} {} first {}", h.name(), shown(rel));
                }
            }
        }
        out
    }
}

/// A path as one word of a line: printable ASCII, anything else `?`.
fn shown(rel: &[u8]) -> String {
    if rel.is_empty() {
        return "-".into();
    }
    rel.iter().map(|&c| if c.is_ascii_graphic() { c as char } else { '?' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_harness_says_what_was_read_and_what_no_rule_knows() {
        let mut h = Health::default();
        let mut d = Drift::default();
        d.unknown(b"brand-new", true);
        d.unknown(b"brand-new", false);
        d.bad_lines = 1;
        d.version(b"2.1.340");
        h.add(Harness::Claude, b"projects/-p/s.jsonl", (1, 7), &d);
        h.add(Harness::Claude, b"projects/-p/s.jsonl", (1, 7), &Drift::default());
        h.add(Harness::Claude, b"projects/-p/t.jsonl", (1, 8), &d);
        let text = h.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "harness claude read 2 bad_lines 2 glued_lines 0 newest 2.1.340 rules 2.1.339 newer");
        assert_eq!(lines[1], "harness codex read 0 bad_lines 0 glued_lines 0 newest - rules 0.179.0");
        assert!(lines.contains(&"harness hermes read 0 bad_lines 0 glued_lines 0 newest - rules -"));
        assert!(lines.contains(&"unknown claude brand-new count 4 with_text 2 first projects/-p/s.jsonl"));
        assert!(lines.contains(&"bad_line claude first projects/-p/s.jsonl"));
        assert_eq!(lines.iter().filter(|l| l.starts_with("harness ")).count(), Harness::COUNT);
    }
}
