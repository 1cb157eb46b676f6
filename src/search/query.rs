//! A search's query, as written to `/search/query` or named by the element
//! of `/search/<query>`: words separated by blanks.
//!
//! ```text
//! cargo build failed              three terms, all in one message
//! "cargo build" -i                one term with a blank in it; any case
//! kind:bash since:2026-11-01 rm   a bash call or result since that day
//! harness:codex cwd:/src/app max:20 panic
//! ```
//!
//! - a word is a term: a message matches when its text (as its `chat/`
//!   file reads) holds every term, byte for byte;
//! - `"…"` is one term, blanks and all (`\"` and `\\` inside it for a
//!   quote and a backslash); a quoted word is always a term, so
//!   `"kind:bash"` searches for that text;
//! - `-i`: ASCII letters match in either case;
//! - `harness:NAME`: only that harness's sessions (repeat for several);
//! - `kind:NAME`: only messages whose name (after its number) is `NAME` or
//!   has it as a dash-separated part: `kind:user`, `kind:assistant`,
//!   `kind:bash` (calls and results), `kind:result` (repeat for several);
//! - `since:DATE`, `until:DATE`: the message's own time, on or after /
//!   on or before that local day (`YYYY-MM-DD`, the daemon's zone);
//! - `cwd:PATH`: sessions whose working directory is PATH or below it;
//! - `max:N`: at most N results (default `RESULTS_DEFAULT`, at most
//!   `RESULTS_MAX`); past it the last line says there were more.
//!
//! Any other `word:…` is a term. A query with no term, an empty term, a
//! bad date or harness or number is refused with what was wrong.

use crate::harness::Harness;

/// The query syntax, as `9agents search --help` prints it and the served
/// README says it (a test holds them together).
pub const HELP: &str = "\
A query is words separated by blanks. A message matches when its text, as
its chat/ file reads, holds every term.
  WORD          a term, byte for byte
  \"TWO WORDS\"   one term, blanks and all (\\\" and \\\\ inside for \" and \\)
  -i            ASCII letters match in either case
  harness:NAME  only that harness's sessions (claude, codex, dsh, omp, pi)
  kind:NAME     only messages named NAME after their number, or with NAME
                as a dash-separated part: user, assistant, bash, result, ...
  since:DATE    messages written on or after that day (YYYY-MM-DD, local)
  until:DATE    messages written on or before that day
  cwd:PATH      sessions whose working directory is PATH or below it
  max:N         at most N results (default 1000, at most 100000)
Any other word with a colon is a term. A result is a line: the message's
path under /sessions, a tab, and the text around the match. Newest sessions
first. Past max, the last line begins `more`; a session that could not be
searched is a line beginning `error`.
";

/// Results a query lists unless it says `max:`.
pub const RESULTS_DEFAULT: usize = 1000;
/// The most a query may ask for.
pub const RESULTS_MAX: usize = 100_000;
/// Terms one query may hold, and the longest query.
pub const TERMS_MAX: usize = 16;
pub const QUERY_BYTES_MAX: usize = 4096;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    pub terms: Vec<Vec<u8>>,
    /// `-i`: ASCII case folded.
    pub fold: bool,
    /// Empty: every harness.
    pub harnesses: Vec<Harness>,
    pub kinds: Vec<Vec<u8>>,
    /// Local days since 1970-01-01, inclusive.
    pub since: Option<i64>,
    pub until: Option<i64>,
    pub cwd: Option<Vec<u8>>,
    pub max: usize,
}

impl Query {
    /// Parse `text` (a write, or a path element).
    pub fn parse(text: &[u8]) -> Result<Query, String> {
        if text.len() > QUERY_BYTES_MAX {
            return Err(format!("query: longer than {QUERY_BYTES_MAX} bytes"));
        }
        let mut q = Query { max: RESULTS_DEFAULT, ..Query::default() };
        for (word, quoted) in words(text)? {
            if quoted {
                q.term(word)?;
                continue;
            }
            let Some(colon) = word.iter().position(|&b| b == b':') else {
                if word == b"-i" {
                    q.fold = true;
                } else {
                    q.term(word)?;
                }
                continue;
            };
            let (key, value) = (&word[..colon], &word[colon + 1..]);
            let text = String::from_utf8_lossy(value);
            match key {
                b"harness" => q
                    .harnesses
                    .push(Harness::from_name(value).ok_or_else(|| format!("query: no harness is called {text:?}"))?),
                b"kind" if !value.is_empty() => q.kinds.push(value.to_vec()),
                b"since" => q.since = Some(day(value).ok_or_else(|| format!("query: since: {text:?} is not a date"))?),
                b"until" => q.until = Some(day(value).ok_or_else(|| format!("query: until: {text:?} is not a date"))?),
                b"cwd" if !value.is_empty() => q.cwd = Some(value.strip_suffix(b"/").unwrap_or(value).to_vec()),
                b"max" => {
                    q.max = text
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=RESULTS_MAX).contains(n))
                        .ok_or_else(|| format!("query: max: {text:?} is not a number from 1 to {RESULTS_MAX}"))?;
                }
                b"kind" | b"cwd" => return Err(format!("query: {} needs a value", String::from_utf8_lossy(key))),
                _ => q.term(word)?,
            }
        }
        if q.terms.is_empty() {
            return Err("query: no term to search for".into());
        }
        Ok(q)
    }

    fn term(&mut self, t: Vec<u8>) -> Result<(), String> {
        if t.is_empty() {
            return Err("query: an empty term".into());
        }
        if self.terms.len() == TERMS_MAX {
            return Err(format!("query: more than {TERMS_MAX} terms"));
        }
        self.terms.push(t);
        Ok(())
    }

    /// Whether a message named `kind` (its name after the number) passes
    /// the `kind:` filter.
    pub fn kind_ok(&self, kind: &[u8]) -> bool {
        self.kinds.is_empty() || self.kinds.iter().any(|k| k == kind || kind.split(|&b| b == b'-').any(|p| p == k))
    }

    /// Whether a message of local day `day` passes `since:` and `until:`.
    pub fn day_ok(&self, day: i64) -> bool {
        self.since.is_none_or(|s| day >= s) && self.until.is_none_or(|u| day <= u)
    }

    /// Whether a session whose working directory is `dir` passes `cwd:`.
    pub fn cwd_ok(&self, dir: &[u8]) -> bool {
        self.cwd
            .as_ref()
            .is_none_or(|c| dir.strip_prefix(&c[..]).is_some_and(|rest| rest.is_empty() || rest[0] == b'/'))
    }

    pub fn harness_ok(&self, h: Harness) -> bool {
        self.harnesses.is_empty() || self.harnesses.contains(&h)
    }
}

/// The words of `text`, each with whether it was quoted.
fn words(text: &[u8]) -> Result<Vec<(Vec<u8>, bool)>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'"' => {
                let mut w = Vec::new();
                i += 1;
                loop {
                    match text.get(i) {
                        None => return Err("query: a quote is not closed".into()),
                        Some(b'"') => break,
                        Some(b'\\') if matches!(text.get(i + 1), Some(b'"' | b'\\')) => {
                            w.push(text[i + 1]);
                            i += 2;
                        }
                        Some(&b) => {
                            w.push(b);
                            i += 1;
                        }
                    }
                }
                i += 1;
                out.push((w, true));
            }
            _ => {
                let end = text[i..].iter().position(|b| b" \t\n\r".contains(b)).map_or(text.len(), |n| i + n);
                out.push((text[i..end].to_vec(), false));
                i = end;
            }
        }
    }
    Ok(out)
}

/// `YYYY-MM-DD` as days since 1970-01-01.
fn day(s: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(s).ok()?;
    let mut parts = s.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d): (i64, u32, u32) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let days = crate::localtime::days_from_civil(y, m, d);
    // (February 30th and the like come back as another day.)
    (crate::localtime::civil_from_days(days) == (y, m, d)).then_some(days)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_terms_and_known_keys_are_filters() {
        let q = Query::parse(br#"cargo "build failed" -i kind:bash since:2026-11-01 harness:claude max:20 http://x"#)
            .unwrap();
        assert_eq!(q.terms, [b"cargo".to_vec(), b"build failed".to_vec(), b"http://x".to_vec()]);
        assert!(q.fold);
        assert_eq!(q.kinds, [b"bash".to_vec()]);
        assert_eq!(q.harnesses, [Harness::Claude]);
        assert_eq!(q.max, 20);
        assert_eq!(q.since, Some(crate::localtime::days_from_civil(2026, 11, 1)));
    }

    #[test]
    fn a_quoted_word_is_a_term_whatever_it_looks_like() {
        let q = Query::parse(br#""kind:bash" "-i" "say \"hi\" \\o""#).unwrap();
        assert_eq!(q.terms, [b"kind:bash".to_vec(), b"-i".to_vec(), br#"say "hi" \o"#.to_vec()]);
        assert!(!q.fold && q.kinds.is_empty());
    }

    #[test]
    fn bad_queries_are_refused_with_what_was_wrong() {
        for (q, why) in [
            (&b""[..], "no term"),
            (b"kind:bash", "no term"),
            (b"\"open", "not closed"),
            (b"\"\"", "empty term"),
            (b"x since:2026-02-30", "not a date"),
            (b"x until:yesterday", "not a date"),
            (b"x harness:vim", "no harness"),
            (b"x max:0", "max"),
            (b"x max:100001", "max"),
            (b"x cwd:", "needs a value"),
        ] {
            let e = Query::parse(q).unwrap_err();
            assert!(e.contains(why), "{:?}: {e}", String::from_utf8_lossy(q));
        }
        let many = vec!["t"; TERMS_MAX + 1].join(" ");
        assert!(Query::parse(many.as_bytes()).unwrap_err().contains("terms"));
    }

    #[test]
    fn the_served_readme_says_the_syntax_search_help_prints() {
        for line in HELP.lines().filter(|l| !l.is_empty()) {
            assert!(crate::tree::README.contains(line), "README lacks {line:?}");
        }
    }

    #[test]
    fn filters_pass_what_they_name() {
        let q = Query::parse(b"x kind:bash cwd:/src/app/").unwrap();
        assert!(q.kind_ok(b"bash") && q.kind_ok(b"bash-result") && !q.kind_ok(b"user") && !q.kind_ok(b"bashful"));
        assert!(q.cwd_ok(b"/src/app") && q.cwd_ok(b"/src/app/web") && !q.cwd_ok(b"/src/apple") && !q.cwd_ok(b""));
        let q = Query::parse(b"x since:2026-11-01 until:2026-11-02").unwrap();
        let d = crate::localtime::days_from_civil(2026, 11, 1);
        assert!(!q.day_ok(d - 1) && q.day_ok(d) && q.day_ok(d + 1) && !q.day_ok(d + 2));
    }
}
