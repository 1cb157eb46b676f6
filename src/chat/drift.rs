//! What an index met that its rules do not know, so that a harness that
//! starts writing something new is seen rather than silently misread:
//! record types no rule names (how many, and whether they held text a
//! reader might want), lines a strict parser would not take, lines of
//! objects glued together, and the newest harness version the records
//! named. The server adds every index's up under `/health`.
//!
//! Memory is fixed: at most `TYPES_MAX` names (the rest counted under
//! `OTHER`), each cut at `NAME_MAX` bytes.

/// Record types one index names apart.
pub const TYPES_MAX: usize = 16;
/// Longest type name kept, in bytes.
pub const NAME_MAX: usize = 48;
/// Where the types past `TYPES_MAX` are counted.
pub const OTHER: &[u8] = b"(other)";

/// A record type no rule knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    /// As the record writes it: printable ASCII, anything else `-`.
    pub name: Vec<u8>,
    pub count: u64,
    /// How many of them held conversation text (a `message`, `content` or
    /// `text`): words nobody sees until a rule says what they are.
    pub with_text: u64,
}

/// A harness version, as numbers: `2.1.170`, `0.126.0-alpha.8` (0.126.0),
/// pi's session format `3` (3.0.0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub [u32; 3]);

impl Version {
    /// The version `text` names: up to three dot-separated numbers, then
    /// anything (a pre-release) ignored. `None` when it starts with no
    /// number.
    pub fn parse(text: &[u8]) -> Option<Version> {
        let mut v = [0u32; 3];
        let mut rest = text;
        for (i, part) in v.iter_mut().enumerate() {
            let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 || digits > 9 {
                return (i > 0).then_some(Version(v));
            }
            *part = rest[..digits].iter().fold(0, |n, &d| n * 10 + u32::from(d - b'0'));
            rest = &rest[digits..];
            match rest.first() {
                Some(b'.') => rest = &rest[1..],
                _ => return Some(Version(v)),
            }
        }
        Some(Version(v))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b, c] = self.0;
        write!(f, "{a}.{b}.{c}")
    }
}

/// One index's drift.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drift {
    pub unknown: Vec<Unknown>,
    /// Lines a strict parser would not take (still read for what they
    /// say before they stop making sense: docs/CHAT.md).
    pub bad_lines: u64,
    /// Lines holding several objects glued together.
    pub glued_lines: u64,
    /// The newest version the records named.
    pub version: Option<Version>,
}

impl Drift {
    /// A record of type `name` that no rule knows; `text` when it held
    /// conversation text.
    pub fn unknown(&mut self, name: &[u8], text: bool) {
        self.note(name, 1, u64::from(text));
    }

    /// `count` records of type `name`, `with_text` of them holding text.
    fn note(&mut self, name: &[u8], count: u64, with_text: u64) {
        let name: Vec<u8> =
            name[..name.len().min(NAME_MAX)].iter().map(|&c| if c.is_ascii_graphic() { c } else { b'-' }).collect();
        let at = match self.unknown.iter().position(|u| u.name == name) {
            Some(i) => i,
            None if self.unknown.len() < TYPES_MAX - 1 || name == OTHER => {
                self.unknown.push(Unknown { name, count: 0, with_text: 0 });
                self.unknown.len() - 1
            }
            None => return self.note(OTHER, count, with_text),
        };
        let u = &mut self.unknown[at];
        u.count += count;
        u.with_text += with_text;
    }

    /// A record named version `text` (ignored unless it reads as one).
    pub fn version(&mut self, text: &[u8]) {
        if let Some(v) = Version::parse(text) {
            self.version = self.version.max(Some(v));
        }
    }

    /// Adds another index's drift.
    pub fn add(&mut self, other: &Drift) {
        for u in &other.unknown {
            self.note(&u.name, u.count, u.with_text);
        }
        self.bad_lines += other.bad_lines;
        self.glued_lines += other.glued_lines;
        self.version = self.version.max(other.version);
    }

    /// What `self` has that `before` (an earlier copy of it) had not: the
    /// counts since, for adding once.
    pub fn since(&self, before: &Drift) -> Drift {
        let unknown = self
            .unknown
            .iter()
            .filter_map(|u| {
                let (c, t) =
                    before.unknown.iter().find(|b| b.name == u.name).map_or((0, 0), |b| (b.count, b.with_text));
                (u.count > c).then(|| Unknown { name: u.name.clone(), count: u.count - c, with_text: u.with_text - t })
            })
            .collect();
        Drift {
            unknown,
            bad_lines: self.bad_lines - before.bad_lines.min(self.bad_lines),
            glued_lines: self.glued_lines - before.glued_lines.min(self.glued_lines),
            version: self.version,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_numbers_and_compare_so() {
        assert_eq!(Version::parse(b"2.1.170"), Some(Version([2, 1, 170])));
        assert_eq!(Version::parse(b"0.126.0-alpha.8"), Some(Version([0, 126, 0])));
        assert_eq!(Version::parse(b"3"), Some(Version([3, 0, 0])));
        assert_eq!(Version::parse(b"v2"), None);
        assert_eq!(Version::parse(b""), None);
        assert!(Version::parse(b"2.1.99") < Version::parse(b"2.1.170"));
        assert_eq!(Version([2, 1, 339]).to_string(), "2.1.339");
        let mut d = Drift::default();
        d.version(b"2.1.170");
        d.version(b"2.1.99");
        d.version(b"junk");
        assert_eq!(d.version, Some(Version([2, 1, 170])), "the newest");
    }

    #[test]
    fn unknown_types_are_counted_by_name_and_past_the_cap_as_other() {
        let mut d = Drift::default();
        d.unknown(b"new-thing", true);
        d.unknown(b"new-thing", false);
        for i in 0..TYPES_MAX + 3 {
            d.unknown(format!("t{i}").as_bytes(), false);
        }
        assert_eq!(d.unknown[0], Unknown { name: b"new-thing".to_vec(), count: 2, with_text: 1 });
        assert_eq!(d.unknown.len(), TYPES_MAX);
        let other = d.unknown.iter().find(|u| u.name == OTHER).unwrap();
        assert_eq!(other.count, 5, "the types past the cap, all counted");
        d.unknown(b"bad\nname", false);
        assert!(d.unknown.iter().all(|u| !u.name.contains(&b'\n')));
    }

    #[test]
    fn since_is_what_grew_and_add_sums() {
        let mut a = Drift::default();
        a.unknown(b"x", true);
        a.bad_lines = 2;
        let before = a.clone();
        a.unknown(b"x", false);
        a.unknown(b"y", false);
        a.bad_lines = 3;
        let d = a.since(&before);
        assert_eq!(d.unknown.len(), 2);
        assert_eq!((d.unknown[0].count, d.unknown[0].with_text), (1, 0));
        assert_eq!(d.bad_lines, 1);
        let mut sum = before.clone();
        sum.add(&d);
        assert_eq!(sum.unknown, a.unknown);
        assert_eq!(sum.bad_lines, a.bad_lines);
    }
}
