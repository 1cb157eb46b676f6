//! `cargo bench --bench gen_rollout -- [--out PATH] [--size BYTES] [--seed N] [--force]`:
//! writes a synthetic codex rollout for the index bench (`bench/index.rs`,
//! which includes this file as a module and calls `ensure` itself).
//!
//! The file is shaped like the real rollouts of Codex 0.40 to 0.146: one
//! JSON record a line, `{"timestamp","type","payload"}`, with a
//! `session_meta` first, then turns of `turn_context`, `response_item`s
//! (`message` of role user, assistant and developer with content arrays,
//! `reasoning` with a long base64 `encrypted_content` and sometimes a
//! summary, `function_call` whose `arguments` are JSON inside a JSON
//! string, `function_call_output` whose `output` is the `shell` tool's
//! `{"output":…,"metadata":…}` JSON inside a JSON string — and whose tool
//! output is itself often JSON (`rg --json`, `gh api`, `cargo metadata`),
//! so escapes nest as `\\\"` — `custom_tool_call` apply_patch and its
//! output) and the `event_msg` copies codex writes of most of them
//! (`user_message`, `agent_message`, `agent_reasoning`, `exec_command_end`,
//! `token_count`, `task_started`, `task_complete`).
//!
//! What matters for the bench is the byte mix, which is the real files'
//! taken to the heavy end: most bytes are inside escaped strings, about a
//! quarter is base64, and backslashes are about 9% of all bytes (the
//! generator prints the fraction it measured). Timestamps increase. No
//! line is longer than `MAX_LINE` so any window the server reads in holds
//! a whole line.
//!
//! Everything comes from one xorshift64* stream seeded with `SEED` (no
//! network, no real transcript): the same seed, size and `VERSION` give
//! the same bytes. `ensure` skips the work when the file is already there
//! with the size and the seed its sidecar (`<file>.meta`) records. The
//! default place is `target/bench-data/`, which is never committed.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Bumped whenever the bytes a seed produces change, so an old file is
/// regenerated rather than measured under the new name.
pub(crate) const VERSION: u32 = 1;
/// The fixed seed.
pub(crate) const SEED: u64 = 0x9A6E_0228_C0DE_5EED;
/// About the size of the real 228 MB rollout the issue names. The file
/// ends at the first line boundary at or past it.
pub(crate) const TARGET_BYTES: u64 = 228_000_000;
/// Of the shell calls, how many use the `shell` tool (output wrapped in
/// JSON, escaped twice) rather than `exec_command` (text, escaped once).
/// With `EXEC_END_PCT` and the reasoning lengths, this is what sets the
/// backslash fraction.
const SHELL_LEGACY_PCT: usize = 35;
/// Of the `exec_command` calls, how many codex copies into an
/// `exec_command_end` event (newer versions: every one).
const EXEC_END_PCT: usize = 60;
/// Longest line written: well under the server's 1 MiB window.
pub(crate) const MAX_LINE: usize = 512 * 1024;

/// The default file: `<crate>/target/bench-data/codex-rollout-<MB>M-<seed>.jsonl`.
pub(crate) fn default_path(seed: u64, target: u64) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target").join("bench-data").join(format!(
        "codex-rollout-{}M-{:016x}.jsonl",
        target / 1_000_000,
        seed
    ))
}

/// What `ensure` found or wrote.
pub(crate) struct Summary {
    pub path: PathBuf,
    pub bytes: u64,
    pub lines: u64,
    /// Backslashes per byte of the file.
    pub backslash_fraction: f64,
    /// Bytes inside JSON strings (between the quotes) per byte.
    pub in_string_fraction: f64,
    /// `Some(seconds)` when the file was written now, `None` when reused.
    pub generated_secs: Option<f64>,
    /// Records written, by `type/payload.type`, as the sidecar says.
    pub records: Vec<(String, u64)>,
}

/// Makes sure `path` holds the rollout of `seed` and `target`, writing it
/// when it is missing, of another size, seed or version, or `force`.
pub(crate) fn ensure(path: &Path, seed: u64, target: u64, force: bool) -> io::Result<Summary> {
    let meta = sidecar(path);
    if !force {
        if let (Ok(st), Ok(text)) = (fs::metadata(path), fs::read_to_string(&meta)) {
            if let Some(s) = Sidecar::parse(&text) {
                if s.version == VERSION && s.seed == seed && s.target == target && s.bytes == st.len() {
                    return Ok(Summary {
                        path: path.to_path_buf(),
                        bytes: s.bytes,
                        lines: s.lines,
                        backslash_fraction: s.backslash_fraction,
                        in_string_fraction: s.in_string_fraction,
                        generated_secs: None,
                        records: s.records,
                    });
                }
            }
        }
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let t0 = Instant::now();
    let tmp = path.with_extension("jsonl.tmp");
    let _ = fs::remove_file(&meta);
    let stats = {
        let file = fs::File::create(&tmp)?;
        let mut out = io::BufWriter::with_capacity(4 << 20, file);
        let stats = generate(seed, target, &mut out)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        stats
    };
    fs::rename(&tmp, path)?;
    let secs = t0.elapsed().as_secs_f64();
    let s = Sidecar {
        version: VERSION,
        seed,
        target,
        bytes: stats.bytes,
        lines: stats.lines,
        backslash_fraction: stats.backslashes as f64 / stats.bytes as f64,
        in_string_fraction: stats.in_string as f64 / stats.bytes as f64,
        records: stats.records,
    };
    fs::write(&meta, s.render())?;
    Ok(Summary {
        path: path.to_path_buf(),
        bytes: s.bytes,
        lines: s.lines,
        backslash_fraction: s.backslash_fraction,
        in_string_fraction: s.in_string_fraction,
        generated_secs: Some(secs),
        records: s.records,
    })
}

fn sidecar(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".meta");
    PathBuf::from(p)
}

/// `<file>.meta`: `key value` lines, then `record <type> <count>` lines.
struct Sidecar {
    version: u32,
    seed: u64,
    target: u64,
    bytes: u64,
    lines: u64,
    backslash_fraction: f64,
    in_string_fraction: f64,
    records: Vec<(String, u64)>,
}

impl Sidecar {
    fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "generator gen_rollout");
        let _ = writeln!(s, "version {}", self.version);
        let _ = writeln!(s, "seed {:#018x}", self.seed);
        let _ = writeln!(s, "target {}", self.target);
        let _ = writeln!(s, "bytes {}", self.bytes);
        let _ = writeln!(s, "lines {}", self.lines);
        let _ = writeln!(s, "backslash_fraction {:.6}", self.backslash_fraction);
        let _ = writeln!(s, "in_string_fraction {:.6}", self.in_string_fraction);
        for (k, n) in &self.records {
            let _ = writeln!(s, "record {k} {n}");
        }
        s
    }

    fn parse(text: &str) -> Option<Sidecar> {
        let mut s = Sidecar {
            version: 0,
            seed: 0,
            target: 0,
            bytes: 0,
            lines: 0,
            backslash_fraction: 0.0,
            in_string_fraction: 0.0,
            records: Vec::new(),
        };
        let mut seen = 0;
        for line in text.lines() {
            let mut w = line.split(' ');
            let (k, v) = (w.next()?, w.next()?);
            match k {
                "version" => s.version = v.parse().ok()?,
                "seed" => s.seed = u64::from_str_radix(v.strip_prefix("0x")?, 16).ok()?,
                "target" => s.target = v.parse().ok()?,
                "bytes" => s.bytes = v.parse().ok()?,
                "lines" => s.lines = v.parse().ok()?,
                "backslash_fraction" => s.backslash_fraction = v.parse().ok()?,
                "in_string_fraction" => s.in_string_fraction = v.parse().ok()?,
                "record" => s.records.push((v.to_string(), w.next()?.parse().ok()?)),
                _ => continue,
            }
            seen += 1;
        }
        (seen >= 7).then_some(s)
    }
}

// ---------------------------------------------------------------------------
// The random stream.

/// xorshift64* (Vigna): small, fast, and the same everywhere.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        // Never zero, and a seed of a few bits still starts well mixed.
        let mut r = Rng((seed ^ 0x9E37_79B9_7F4A_7C15) | 1);
        for _ in 0..8 {
            r.next_u64();
        }
        r
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n` at most 2^32).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }

    /// Uniform in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True `pct` times in a hundred.
    pub(crate) fn chance(&mut self, pct: usize) -> bool {
        self.below(100) < pct
    }

    pub(crate) fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    /// Roughly log-uniform in `lo..=hi`: many short, a few long, as tool
    /// outputs and messages are.
    pub(crate) fn skewed(&mut self, lo: usize, hi: usize) -> usize {
        let a = self.range(lo, hi);
        let b = self.range(lo, hi);
        let c = self.range(lo, hi);
        a.min(b).min(c)
    }
}

// ---------------------------------------------------------------------------
// Vocabulary. Invented, but with the characters real sessions have: code
// with quotes and backslashes, paths, markdown, some non-ASCII.

const WORDS: &[&str] = &[
    "the",
    "index",
    "file",
    "message",
    "server",
    "request",
    "window",
    "line",
    "offset",
    "string",
    "escape",
    "parser",
    "walk",
    "test",
    "fails",
    "because",
    "when",
    "buffer",
    "read",
    "write",
    "client",
    "returns",
    "error",
    "value",
    "config",
    "module",
    "function",
    "call",
    "output",
    "handler",
    "queue",
    "cache",
    "session",
    "record",
    "field",
    "schema",
    "we",
    "should",
    "now",
    "then",
    "check",
    "that",
    "this",
    "it",
    "is",
    "a",
    "of",
    "to",
    "in",
    "and",
    "for",
    "with",
    "on",
    "not",
    "before",
    "after",
    "every",
    "each",
    "length",
    "span",
    "byte",
    "newline",
    "quote",
    "backslash",
    "block",
    "mask",
    "path",
    "directory",
    "tree",
    "version",
    "update",
    "patch",
    "build",
    "release",
    "debug",
    "timeout",
    "retry",
    "socket",
    "stream",
    "commit",
    "branch",
    "diff",
    "latency",
    "throughput",
    "memory",
    "allocation",
    "lock",
    "thread",
    "loop",
];

const IDENTS: &[&str] = &[
    "offset",
    "buf",
    "line",
    "idx",
    "bytes",
    "len",
    "pos",
    "state",
    "cfg",
    "path",
    "name",
    "result",
    "msg",
    "spans",
    "window",
    "reader",
    "writer",
    "conn",
    "req",
    "resp",
    "items",
    "count",
    "start",
    "end",
    "key",
    "value",
    "entry",
    "node",
    "parent",
    "child",
    "depth",
    "cursor",
    "token",
    "record",
    "payload",
    "schema",
    "handler",
    "timeout",
    "retries",
    "session",
    "user_id",
    "created_at",
    "file_name",
    "out",
    "err",
    "ctx",
];

const TYPES: &[&str] = &[
    "Index", "Span", "Window", "Request", "Response", "Config", "Session", "Record", "Walker", "Store", "Error",
    "Handler", "Cursor", "Parser", "Token", "Message", "Client", "Server", "Queue", "Entry",
];

const DIRS: &[&str] = &[
    "src",
    "src/chat",
    "src/server",
    "src/api",
    "src/lib",
    "tests",
    "tests/fixtures",
    "scripts",
    "docs",
    "web/src/components",
    "web/src/hooks",
    "pkg/store",
    "internal/http",
    "app/models",
    "app/views",
];

const EXTS: &[&str] = &["rs", "rs", "rs", "py", "py", "ts", "tsx", "go", "md", "json", "toml", "yaml"];

const NON_ASCII: &[&str] = &["é", "—", "’", "…", "→", "✓", "中文", "日本語", "ü", "ñ", "“", "”", "🎨", "≥", "×"];

const PROMPTS: &[&str] = &[
    "The index is slow on a 200 MB rollout, can you profile it and make it faster?",
    "Please add a test for the window edge where an escape straddles it.",
    "Why does `cargo test` fail on CI but not locally? Here is the log:",
    "Refactor the parser so it never allocates per line, and keep the behaviour identical.",
    "Can you check whether the listing is stable when the file grows?",
    "Fix the bug where a half-written line gets an id.",
    "Write the docs for the new flag and update the README.",
    "Run the benchmarks and tell me the numbers before and after.",
];

// ---------------------------------------------------------------------------
// JSON writing.

/// Appends `s` as the body of a JSON string (no quotes around it).
fn esc(out: &mut Vec<u8>, s: &[u8]) {
    let mut from = 0;
    for (i, &b) in s.iter().enumerate() {
        let rep: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\t' => b"\\t",
            b'\r' => b"\\r",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&s[from..i]);
        if rep.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.extend_from_slice(rep);
        }
        from = i + 1;
    }
    out.extend_from_slice(&s[from..]);
}

/// Appends `"s"`, escaped.
fn jstr(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    esc(out, s);
    out.push(b'"');
}

/// Appends `"key":"value"`.
fn kv(out: &mut Vec<u8>, key: &str, value: &[u8]) {
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
    jstr(out, value);
}

// ---------------------------------------------------------------------------
// Text: prose, code, tool outputs. Each appends plain (unescaped) text.

fn word(r: &mut Rng, out: &mut Vec<u8>) {
    out.extend_from_slice(r.pick(WORDS).as_bytes());
}

fn ident(r: &mut Rng, out: &mut Vec<u8>) {
    out.extend_from_slice(r.pick(IDENTS).as_bytes());
}

fn path(r: &mut Rng, out: &mut Vec<u8>) {
    out.extend_from_slice(r.pick(DIRS).as_bytes());
    out.push(b'/');
    ident(r, out);
    out.push(b'.');
    out.extend_from_slice(r.pick(EXTS).as_bytes());
}

fn hex(r: &mut Rng, out: &mut Vec<u8>, n: usize) {
    const H: &[u8] = b"0123456789abcdef";
    for _ in 0..n {
        out.push(H[r.below(16)]);
    }
}

fn alnum(r: &mut Rng, out: &mut Vec<u8>, n: usize) {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    for _ in 0..n {
        out.push(A[r.below(A.len())]);
    }
}

/// A UUIDv7-looking id.
fn uuid(r: &mut Rng, out: &mut Vec<u8>) {
    for (i, n) in [8, 4, 4, 4, 12].into_iter().enumerate() {
        if i > 0 {
            out.push(b'-');
        }
        hex(r, out, n);
    }
}

/// One sentence of prose, sometimes with `code`, "quotes" or non-ASCII.
fn sentence(r: &mut Rng, out: &mut Vec<u8>) {
    let n = r.range(5, 18);
    for i in 0..n {
        if i > 0 {
            out.push(b' ');
        }
        match r.below(40) {
            0..=2 => {
                out.push(b'`');
                ident(r, out);
                if r.chance(40) {
                    out.extend_from_slice(b"()");
                }
                out.push(b'`');
            }
            3 => {
                out.push(b'"');
                word(r, out);
                out.push(b' ');
                word(r, out);
                out.push(b'"');
            }
            4 => out.extend_from_slice(r.pick(NON_ASCII).as_bytes()),
            5 => {
                out.push(b'`');
                path(r, out);
                out.push(b'`');
            }
            _ => word(r, out),
        }
    }
    out.extend_from_slice(if r.chance(85) { b"." } else { b":" });
}

/// Markdown-ish prose: paragraphs, bullets, now and then a code fence.
fn prose(r: &mut Rng, out: &mut Vec<u8>, paragraphs: usize) {
    for p in 0..paragraphs {
        if p > 0 {
            out.extend_from_slice(b"\n\n");
        }
        match r.below(10) {
            0..=1 => {
                for _ in 0..r.range(2, 6) {
                    out.extend_from_slice(b"- ");
                    sentence(r, out);
                    out.push(b'\n');
                }
            }
            2 => {
                out.extend_from_slice(b"```rust\n");
                for _ in 0..r.range(3, 12) {
                    code_line(r, out, 0);
                    out.push(b'\n');
                }
                out.extend_from_slice(b"```");
            }
            _ => {
                for s in 0..r.range(1, 5) {
                    if s > 0 {
                        out.push(b' ');
                    }
                    sentence(r, out);
                }
            }
        }
    }
}

/// One line of source code in language `lang` (0 Rust, 1 Python, 2 TS),
/// with the string literals, escapes and regexes real code has.
fn code_line(r: &mut Rng, out: &mut Vec<u8>, lang: usize) {
    let indent = 4 * r.below(4);
    out.extend(std::iter::repeat_n(b' ', indent));
    let mut ids: [&str; 3] = [""; 3];
    for id in &mut ids {
        *id = *r.pick(IDENTS);
    }
    let ty = r.pick(TYPES);
    let w = r.pick(WORDS);
    let [a, b, c] = ids;
    let _ = match (lang, r.below(12)) {
        (0, 0) => write!(out, "let {a} = {b}.{c}(&{a})?;"),
        (0, 1) => write!(out, "return Err(format!(\"{w} {{}} failed: {{:?}}\", {a}, e).into());"),
        (0, 2) => write!(out, "println!(\"{w}: {{}}\\t{{:?}}\", {a}, {b});"),
        (0, 3) => write!(out, "// The {w} {a} is kept so the {b} never {c}s twice."),
        (0, 4) => write!(out, "if {a}.starts_with(b\"\\x1b[\") || {b} == b'\\\\' {{"),
        (0, 5) => write!(out, "let re = Regex::new(r\"^(\\d+)\\s+(\\w+)=\\\"([^\\\"]*)\\\"$\")?;"),
        (0, 6) => write!(out, "assert_eq!({a}, \"{w}\\n\", \"{b} of {{:?}}\", {c});"),
        (0, 7) => write!(out, "fn {a}(&mut self, {b}: &[u8]) -> Result<{ty}, Error> {{"),
        (0, 8) => write!(out, "{a}.push_str(\"\\\"{w}\\\": \");"),
        (0, 9) => write!(out, "#[derive(Debug, Clone, PartialEq)]"),
        (0, 10) => write!(out, "}}"),
        (0, _) => write!(out, "let {a}: Vec<{ty}> = {b}.iter().map(|x| x.{c}).collect();"),
        (1, 0) => write!(out, "{a} = {b}.get(\"{w}\", {{}})"),
        (1, 1) => write!(out, "raise ValueError(f\"{w} {{{a}!r}} not found in {{{b}}}\")"),
        (1, 2) => write!(out, "with open({a}, \"r\", encoding=\"utf-8\") as f:"),
        (1, 3) => write!(out, "print(\"{w}\\t{a}\", {b}, sep=\"\\n\")"),
        (1, 4) => write!(out, "m = re.match(r\"\\s*(\\w+)=\\\"(.*)\\\"\", {a})"),
        (1, 5) => write!(out, "# {w} the {a} before {b} is called"),
        (1, 6) => write!(out, "def {a}(self, {b}: str, {c}: int = 0) -> \"{ty}\":"),
        (1, 7) => write!(out, "return json.dumps({{\"{a}\": {b}, \"{c}\": \"{w}\"}})"),
        (1, 8) => write!(out, "path = os.path.join({a}, \"{w}\", f\"{{{b}}}.json\")"),
        (1, 9) => write!(out, "for {a} in {b}:"),
        (1, 10) => write!(out, "{a}.append({b}.strip().split(\"\\\\\"))"),
        (1, _) => write!(out, "logger.info(\"{w} %s -> %s\", {a}, {b})"),
        (_, 0) => write!(out, "const {a} = await fetch(`/api/${{{b}}}/{w}`);"),
        (_, 1) => write!(out, "if (!{a}) throw new Error(\"{w} missing: \" + {b});"),
        (_, 2) => write!(out, "return {{ ...{a}, {b}: \"{w}\" }};"),
        (_, 3) => write!(out, "import {{ {ty} }} from \"./{a}\";"),
        (_, 4) => write!(out, "export function {a}({b}: {ty}): string {{"),
        (_, 5) => write!(out, "// TODO: {w} {a} when {b} changes"),
        (_, 6) => write!(out, "const re = /^\\s*\"(\\w+)\":\\s*\"([^\"\\\\]*)\"/;"),
        (_, 7) => write!(out, "console.log(`{w}: ${{JSON.stringify({a})}}`);"),
        (_, 8) => write!(out, "{a}.set(\"{w}\", {b}.replace(/\\n/g, \"\\\\n\"));"),
        (_, 9) => write!(out, "}});"),
        (_, 10) => write!(out, "<div className=\"{w}-{a}\">{{{b}}}</div>"),
        (_, _) => write!(out, "let {a}: {ty}[] = [];"),
    };
}

/// A source file's lines, as `sed -n` or `cat -n` show them.
fn source(r: &mut Rng, out: &mut Vec<u8>, lines: usize, numbered: bool) {
    let lang = r.below(3);
    let first = r.range(1, 900);
    for i in 0..lines {
        if numbered {
            let _ = write!(out, "{:>6}\t", first + i);
        }
        code_line(r, out, lang);
        out.push(b'\n');
    }
}

/// `rg -n` output: `path:line:code`.
fn grep_lines(r: &mut Rng, out: &mut Vec<u8>, lines: usize) {
    for _ in 0..lines {
        path(r, out);
        let _ = write!(out, ":{}:", r.range(1, 2000));
        {
            let n = r.below(3);
            code_line(r, out, n)
        };
        out.push(b'\n');
    }
}

/// `cargo test` / `pytest` output, with the colours left in.
fn test_log(r: &mut Rng, out: &mut Vec<u8>, lines: usize) {
    for i in 0..lines {
        match r.below(8) {
            0 => {
                out.extend_from_slice(b"\x1b[1m\x1b[31merror\x1b[0m: ");
                sentence(r, out);
            }
            1 => {
                out.extend_from_slice(b"thread 'chat::tests::");
                ident(r, out);
                out.extend_from_slice(b"' panicked at ");
                path(r, out);
                let _ = write!(
                    out,
                    ":{}:{}:\nassertion `left == right` failed\n  left: \"",
                    r.range(1, 900),
                    r.range(1, 80)
                );
                word(r, out);
                out.extend_from_slice(b"\\n\"\n right: \"");
                word(r, out);
                out.push(b'"');
            }
            2 => {
                path(r, out);
                let _ = write!(out, ":{}: in {}", r.range(1, 900), r.pick(IDENTS));
            }
            _ => {
                out.extend_from_slice(b"test ");
                ident(r, out);
                out.extend_from_slice(b"::");
                ident(r, out);
                out.extend_from_slice(if r.chance(90) {
                    b" ... \x1b[32mok\x1b[0m"
                } else {
                    b" ... \x1b[31mFAILED\x1b[0m"
                });
            }
        }
        if i + 1 < lines {
            out.push(b'\n');
        }
    }
    let _ = write!(
        out,
        "\n\ntest result: ok. {} passed; 0 failed; finished in {}.{:02}s\n",
        lines,
        r.below(9),
        r.below(100)
    );
}

/// A unified diff.
fn diff(r: &mut Rng, out: &mut Vec<u8>, hunks: usize) {
    let mut p = Vec::new();
    path(r, &mut p);
    let p = String::from_utf8(p).unwrap();
    let _ = write!(out, "diff --git a/{p} b/{p}\nindex ");
    hex(r, out, 7);
    out.extend_from_slice(b"..");
    hex(r, out, 7);
    let _ = write!(out, " 100644\n--- a/{p}\n+++ b/{p}\n");
    for _ in 0..hunks {
        let at = r.range(1, 800);
        let _ = writeln!(out, "@@ -{at},7 +{at},8 @@");
        let lang = r.below(3);
        for _ in 0..r.range(4, 12) {
            out.push(*r.pick(b"   +-"));
            code_line(r, out, lang);
            out.push(b'\n');
        }
    }
}

// JSON documents a tool prints: written with their own escaping, so that
// when they are then put inside a JSON string they nest.

/// `rg --json` lines.
fn rg_json(r: &mut Rng, out: &mut Vec<u8>, matches: usize) {
    let mut line = Vec::new();
    for _ in 0..matches {
        let mut p = Vec::new();
        path(r, &mut p);
        line.clear();
        {
            let n = r.below(3);
            code_line(r, &mut line, n)
        };
        line.push(b'\n');
        out.extend_from_slice(b"{\"type\":\"match\",\"data\":{\"path\":{\"text\":");
        jstr(out, &p);
        out.extend_from_slice(b"},\"lines\":{\"text\":");
        jstr(out, &line);
        let (s, e) = (r.below(20), r.range(20, 40));
        let _ = writeln!(
            out,
            "}},\"line_number\":{},\"absolute_offset\":{},\"submatches\":[{{\"match\":{{\"text\":\"{}\"}},\"start\":{s},\"end\":{e}}}]}}}}",
            r.range(1, 3000),
            r.below(1 << 20),
            r.pick(IDENTS)
        );
    }
}

/// Pretty-printed JSON (`gh api`, `jq .`, `cargo metadata | jq`): nested
/// objects whose strings hold markdown and code.
fn pretty_json(r: &mut Rng, out: &mut Vec<u8>, items: usize) {
    let mut text = Vec::new();
    out.extend_from_slice(b"[\n");
    for i in 0..items {
        out.extend_from_slice(b"  {\n    \"number\": ");
        let _ = write!(out, "{},\n    \"title\": ", r.range(1, 9000));
        text.clear();
        sentence(r, &mut text);
        jstr(out, &text);
        out.extend_from_slice(b",\n    \"state\": \"open\",\n    \"user\": {\n      \"login\": ");
        text.clear();
        ident(r, &mut text);
        jstr(out, &text);
        out.extend_from_slice(b",\n      \"id\": ");
        let _ = write!(
            out,
            "{}\n    }},\n    \"labels\": [\"bug\", \"{}\"],\n    \"body\": ",
            r.below(1 << 24),
            r.pick(WORDS)
        );
        text.clear();
        {
            let n = r.range(1, 4);
            prose(r, &mut text, n)
        };
        text.extend_from_slice(b"\n\n```\n");
        {
            let n = r.range(2, 8);
            source(r, &mut text, n, false)
        };
        text.extend_from_slice(b"```\n");
        jstr(out, &text);
        out.extend_from_slice(b",\n    \"created_at\": \"2026-02-1");
        let _ = write!(out, "{}T{:02}:{:02}:{:02}Z\"\n  }}", r.below(10), r.below(24), r.below(60), r.below(60));
        out.extend_from_slice(if i + 1 < items { b",\n" } else { b"\n" });
    }
    out.extend_from_slice(b"]\n");
}

/// What a `shell` call printed: one of the kinds above.
fn tool_output(r: &mut Rng, out: &mut Vec<u8>) {
    match r.below(20) {
        0..=3 => {
            let n = r.skewed(3, 160);
            rg_json(r, out, n)
        }
        4..=7 => {
            let n = r.skewed(1, 24);
            pretty_json(r, out, n)
        }
        8..=11 => {
            let n = r.skewed(10, 400);
            source(r, out, n, true)
        }
        12..=13 => {
            let n = r.skewed(3, 200);
            grep_lines(r, out, n)
        }
        14..=15 => {
            let n = r.skewed(5, 150);
            test_log(r, out, n)
        }
        16..=17 => {
            let hunks = r.skewed(1, 12);
            diff(r, out, hunks)
        }
        _ => {
            for _ in 0..r.skewed(3, 80) {
                path(r, out);
                out.push(b'\n');
            }
        }
    }
}

/// A shell command the model might run, whose output is `kind`.
fn command(r: &mut Rng, out: &mut Vec<u8>) {
    let _ = match r.below(8) {
        0 => write!(out, "rg --json -n \"{}\\(\" src tests", r.pick(IDENTS)),
        1 => write!(out, "gh api repos/acme/app/issues --jq '.[] | {{number, title, body}}'"),
        2 => write!(out, "sed -n '1,200p' src/chat/{}.rs", r.pick(IDENTS)),
        3 => write!(out, "rg -n \"fn {}|\\\"{}\\\"\" -S .", r.pick(IDENTS), r.pick(WORDS)),
        4 => write!(out, "cargo test -q {} 2>&1 | tail -n 80", r.pick(IDENTS)),
        5 => write!(out, "git diff -- src/{}.rs", r.pick(IDENTS)),
        6 => write!(
            out,
            "python3 -c \"import json,sys; print(json.dumps(json.load(open('{}.json')), indent=2))\"",
            r.pick(IDENTS)
        ),
        _ => write!(out, "ls -R {} | head -n 200", r.pick(DIRS)),
    };
}

/// Base64 the way `encrypted_content` is: `gAAAAAB` and URL-safe.
fn base64ish(r: &mut Rng, out: &mut Vec<u8>, n: usize) {
    const B: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    out.extend_from_slice(b"gAAAAAB");
    let mut left = n.saturating_sub(9);
    while left > 0 {
        let mut x = r.next_u64();
        for _ in 0..10.min(left) {
            out.push(B[(x & 63) as usize]);
            x >>= 6;
        }
        left -= 10.min(left);
    }
    out.extend_from_slice(b"==");
}

// ---------------------------------------------------------------------------
// Records.

/// Counts of what was written.
struct Stats {
    bytes: u64,
    lines: u64,
    backslashes: u64,
    in_string: u64,
    records: Vec<(String, u64)>,
}

struct Gen<'w, W: Write> {
    r: Rng,
    w: &'w mut W,
    /// Milliseconds since the epoch of the next record.
    now_ms: u64,
    line: Vec<u8>,
    /// Scratch for text that is escaped once more before it is written.
    a: Vec<u8>,
    b: Vec<u8>,
    c: Vec<u8>,
    cwd: String,
    turn_id: Vec<u8>,
    stats: Stats,
}

impl<W: Write> Gen<'_, W> {
    /// Starts a line: `{"timestamp":"…","type":"<ty>","payload":{`.
    fn open(&mut self, ty: &str) {
        self.now_ms += self.r.range(1, 2500) as u64;
        self.line.clear();
        self.line.extend_from_slice(b"{\"timestamp\":\"");
        iso_ms(&mut self.line, self.now_ms);
        self.line.extend_from_slice(b"\",\"type\":\"");
        self.line.extend_from_slice(ty.as_bytes());
        self.line.extend_from_slice(b"\",\"payload\":{");
    }

    /// Ends the payload and the line, checks it, and writes it.
    fn close(&mut self, kind: &str) -> io::Result<()> {
        self.line.extend_from_slice(b"}}\n");
        let n = self.line.len();
        assert!(n <= MAX_LINE, "a {kind} line of {n} bytes: over MAX_LINE");
        debug_assert!(!self.line[..n - 1].contains(&b'\n'));
        let (bs, ins) = count(&self.line);
        self.stats.bytes += n as u64;
        self.stats.lines += 1;
        self.stats.backslashes += bs;
        self.stats.in_string += ins;
        match self.stats.records.iter_mut().find(|(k, _)| k == kind) {
            Some((_, c)) => *c += 1,
            None => self.stats.records.push((kind.to_string(), 1)),
        }
        self.w.write_all(&self.line)
    }

    fn session_meta(&mut self) -> io::Result<()> {
        self.open("session_meta");
        self.line.extend_from_slice(b"\"id\":\"");
        uuid(&mut self.r, &mut self.line);
        self.line.extend_from_slice(b"\",\"timestamp\":\"");
        iso_ms(&mut self.line, self.now_ms);
        let _ = write!(
            self.line,
            "\",\"cwd\":\"{}\",\"originator\":\"codex_cli_rs\",\"cli_version\":\"0.146.0\",\"source\":\"cli\",\"model_provider\":\"openai\",\"base_instructions\":{{",
            self.cwd
        );
        self.a.clear();
        self.a.extend_from_slice(
            b"You are Codex, a coding agent based on GPT-5. You and the user share one workspace.\n\n# Personality\n\n",
        );
        for _ in 0..40 {
            prose(&mut self.r, &mut self.a, 2);
            self.a.extend_from_slice(b"\n\n## ");
            word(&mut self.r, &mut self.a);
            self.a.extend_from_slice(b"\n\n");
        }
        kv(&mut self.line, "text", &self.a);
        self.line.extend_from_slice(b"},\"git\":{\"commit_hash\":\"");
        hex(&mut self.r, &mut self.line, 40);
        self.line.extend_from_slice(b"\",\"branch\":\"main\",\"repository_url\":\"git@github.com:acme/app.git\"}");
        self.close("session_meta")
    }

    fn turn_context(&mut self) -> io::Result<()> {
        self.open("turn_context");
        self.line.extend_from_slice(b"\"turn_id\":\"");
        self.line.extend_from_slice(&self.turn_id);
        let _ = write!(
            self.line,
            "\",\"cwd\":\"{}\",\"approval_policy\":\"on-request\",\"sandbox_policy\":{{\"type\":\"workspace-write\",\"network_access\":false,\"exclude_tmpdir_env_var\":false,\"exclude_slash_tmp\":false}},\"model\":\"gpt-5.2-codex\",\"effort\":\"high\",\"summary\":\"auto\",",
            self.cwd
        );
        self.a.clear();
        self.a.extend_from_slice(
            b"## Skills\nA skill is a set of local instructions to follow that is stored in a `SKILL.md` file.\n",
        );
        for _ in 0..self.r.range(4, 14) {
            self.a.extend_from_slice(b"- ");
            ident(&mut self.r, &mut self.a);
            self.a.extend_from_slice(b": ");
            sentence(&mut self.r, &mut self.a);
            self.a.extend_from_slice(b" (file: /home/dev/.codex/skills/");
            ident(&mut self.r, &mut self.a);
            self.a.extend_from_slice(b"/SKILL.md)\n");
        }
        kv(&mut self.line, "user_instructions", &self.a);
        self.line.extend_from_slice(b",\"truncation_policy\":{\"mode\":\"tokens\",\"limit\":10000}");
        self.close("turn_context")
    }

    fn event_simple(&mut self, ty: &str) -> io::Result<()> {
        self.open("event_msg");
        let _ = write!(self.line, "\"type\":\"{ty}\",\"turn_id\":\"");
        self.line.extend_from_slice(&self.turn_id);
        self.line.extend_from_slice(b"\",\"model_context_window\":258400");
        self.close(&format!("event_msg/{ty}"))
    }

    /// A `response_item` message whose one content part is `self.a`.
    fn message(&mut self, role: &str, part: &str, phase: Option<&str>) -> io::Result<()> {
        self.open("response_item");
        let _ = write!(self.line, "\"type\":\"message\",\"role\":\"{role}\",\"content\":[{{\"type\":\"{part}\",");
        kv(&mut self.line, "text", &self.a);
        self.line.extend_from_slice(b"}]");
        if let Some(p) = phase {
            let _ = write!(self.line, ",\"phase\":\"{p}\"");
        }
        self.close(&format!("response_item/message/{role}"))
    }

    /// The `event_msg` copy codex writes of a message: `self.a` again.
    fn event_copy(&mut self, ty: &str, field: &str) -> io::Result<()> {
        self.open("event_msg");
        let _ = write!(self.line, "\"type\":\"{ty}\",");
        kv(&mut self.line, field, &self.a);
        if ty == "user_message" {
            self.line.extend_from_slice(b",\"images\":[],\"local_images\":[],\"text_elements\":[]");
        }
        self.close(&format!("event_msg/{ty}"))
    }

    fn reasoning(&mut self) -> io::Result<()> {
        let summary = self.r.chance(60);
        self.a.clear();
        if summary {
            self.a.extend_from_slice(b"**");
            sentence(&mut self.r, &mut self.a);
            self.a.extend_from_slice(b"**\n\n");
            prose(&mut self.r, &mut self.a, 1);
        }
        self.open("response_item");
        self.line.extend_from_slice(b"\"type\":\"reasoning\",\"summary\":[");
        if summary {
            self.line.extend_from_slice(b"{\"type\":\"summary_text\",");
            kv(&mut self.line, "text", &self.a);
            self.line.push(b'}');
        }
        self.line.extend_from_slice(b"],\"content\":null,\"encrypted_content\":\"");
        let n = self.r.skewed(800, 16_000);
        base64ish(&mut self.r, &mut self.line, n);
        self.line.push(b'"');
        self.close("response_item/reasoning")?;
        if summary {
            self.event_copy("agent_reasoning", "text")?;
        }
        Ok(())
    }

    fn call_id(&mut self) -> Vec<u8> {
        let mut id = b"call_".to_vec();
        alnum(&mut self.r, &mut id, 24);
        id
    }

    /// A shell command and its output, in one of codex's two styles: the
    /// `shell` tool, whose output is `{"output":…,"metadata":…}` — JSON
    /// inside the string, so the tool's own output is escaped twice — or
    /// the newer `exec_command`, whose output is text with a header and
    /// which codex also copies into an `exec_command_end` event.
    fn shell(&mut self) -> io::Result<()> {
        let id = self.call_id();
        let legacy = self.r.chance(SHELL_LEGACY_PCT);
        self.b.clear();
        command(&mut self.r, &mut self.b);
        self.a.clear();
        if legacy {
            self.a.extend_from_slice(b"{\"command\":[\"bash\",\"-lc\",");
            jstr(&mut self.a, &self.b);
            let _ = write!(self.a, "],\"workdir\":\"{}\",\"timeout_ms\":120000}}", self.cwd);
        } else {
            self.a.push(b'{');
            kv(&mut self.a, "cmd", &self.b);
            let _ =
                write!(self.a, ",\"workdir\":\"{}\",\"yield_time_ms\":1000,\"max_output_tokens\":10000}}", self.cwd);
        }
        self.open("response_item");
        let name = if legacy { "shell" } else { "exec_command" };
        let _ = write!(self.line, "\"type\":\"function_call\",\"name\":\"{name}\",");
        kv(&mut self.line, "arguments", &self.a);
        self.line.extend_from_slice(b",\"call_id\":\"");
        self.line.extend_from_slice(&id);
        self.line.push(b'"');
        self.close("response_item/function_call")?;

        // What it printed (c), wrapped for the output (a).
        self.c.clear();
        tool_output(&mut self.r, &mut self.c);
        let code = if self.r.chance(85) { 0 } else { 1 };
        let dur = self.r.below(4000);
        self.a.clear();
        if legacy {
            self.a.push(b'{');
            kv(&mut self.a, "output", &self.c);
            let _ = write!(
                self.a,
                ",\"metadata\":{{\"exit_code\":{code},\"duration_seconds\":{}.{}}}}}",
                dur / 1000,
                dur % 1000 / 100
            );
        } else {
            self.a.extend_from_slice(b"Chunk ID: ");
            hex(&mut self.r, &mut self.a, 6);
            let _ = write!(
                self.a,
                "\nWall time: {}.{:04} seconds\nProcess exited with code {code}\nOriginal token count: {}\nOutput:\n",
                dur / 1000,
                dur % 1000 * 10,
                self.c.len() / 4
            );
            self.a.extend_from_slice(&self.c);
        }

        if !legacy && self.r.chance(EXEC_END_PCT) {
            self.open("event_msg");
            self.line.extend_from_slice(b"\"type\":\"exec_command_end\",\"call_id\":\"");
            self.line.extend_from_slice(&id);
            self.line.extend_from_slice(b"\",\"turn_id\":\"");
            self.line.extend_from_slice(&self.turn_id);
            self.line.extend_from_slice(b"\",\"command\":[\"/bin/bash\",\"-lc\",");
            jstr(&mut self.line, &self.b);
            let _ = write!(self.line, "],\"cwd\":\"{}\",\"source\":\"unified_exec_startup\",", self.cwd);
            kv(&mut self.line, "stdout", &self.c);
            self.line.extend_from_slice(b",\"stderr\":\"\",");
            kv(&mut self.line, "aggregated_output", &self.c);
            let _ = write!(self.line, ",\"exit_code\":{code},\"duration\":{{\"secs\":{},\"nanos\":{}}},\"formatted_output\":\"\",\"status\":\"completed\"", dur / 1000, dur % 1000 * 1_000_000);
            self.close("event_msg/exec_command_end")?;
        }

        self.open("response_item");
        self.line.extend_from_slice(b"\"type\":\"function_call_output\",\"call_id\":\"");
        self.line.extend_from_slice(&id);
        self.line.extend_from_slice(b"\",");
        kv(&mut self.line, "output", &self.a);
        self.close("response_item/function_call_output")
    }

    /// An MCP tool whose result text is JSON: three levels of quotes.
    fn mcp(&mut self) -> io::Result<()> {
        let id = self.call_id();
        self.a.clear();
        let _ = write!(
            self.a,
            "{{\"owner\":\"acme\",\"repo\":\"app\",\"query\":\"is:open label:bug {}\"}}",
            self.r.pick(WORDS)
        );
        self.open("response_item");
        self.line.extend_from_slice(b"\"type\":\"function_call\",\"name\":\"mcp__github__search_issues\",");
        kv(&mut self.line, "arguments", &self.a);
        self.line.extend_from_slice(b",\"call_id\":\"");
        self.line.extend_from_slice(&id);
        self.line.push(b'"');
        self.close("response_item/function_call")?;

        self.c.clear();
        {
            let n = self.r.skewed(1, 10);
            pretty_json(&mut self.r, &mut self.c, n)
        };
        self.a.clear();
        self.a.extend_from_slice(b"{\"content\":[{\"type\":\"text\",");
        kv(&mut self.a, "text", &self.c);
        self.a.extend_from_slice(b"}],\"isError\":false}");
        self.open("response_item");
        self.line.extend_from_slice(b"\"type\":\"function_call_output\",\"call_id\":\"");
        self.line.extend_from_slice(&id);
        self.line.extend_from_slice(b"\",");
        kv(&mut self.line, "output", &self.a);
        self.close("response_item/function_call_output")
    }

    fn apply_patch(&mut self) -> io::Result<()> {
        let id = self.call_id();
        self.a.clear();
        self.a.extend_from_slice(b"*** Begin Patch\n");
        let files = self.r.range(1, 3);
        let mut touched = Vec::new();
        for _ in 0..files {
            let mut p = Vec::new();
            path(&mut self.r, &mut p);
            self.a.extend_from_slice(b"*** Update File: ");
            self.a.extend_from_slice(&p);
            self.a.push(b'\n');
            for _ in 0..self.r.skewed(1, 8) {
                self.a.extend_from_slice(b"@@\n");
                let lang = self.r.below(3);
                for _ in 0..self.r.range(3, 20) {
                    self.a.push(*self.r.pick(b"  +-+"));
                    code_line(&mut self.r, &mut self.a, lang);
                    self.a.push(b'\n');
                }
            }
            touched.push(p);
        }
        self.a.extend_from_slice(b"*** End Patch");
        self.open("response_item");
        self.line.extend_from_slice(b"\"type\":\"custom_tool_call\",\"status\":\"completed\",\"call_id\":\"");
        self.line.extend_from_slice(&id);
        self.line.extend_from_slice(b"\",\"name\":\"apply_patch\",");
        kv(&mut self.line, "input", &self.a);
        self.close("response_item/custom_tool_call")?;

        self.c.clear();
        self.c.extend_from_slice(b"Success. Updated the following files:\n");
        for p in &touched {
            self.c.extend_from_slice(b"M ");
            self.c.extend_from_slice(p);
            self.c.push(b'\n');
        }
        self.a.clear();
        self.a.push(b'{');
        kv(&mut self.a, "output", &self.c);
        self.a.extend_from_slice(b",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}");
        self.open("response_item");
        self.line.extend_from_slice(b"\"type\":\"custom_tool_call_output\",\"call_id\":\"");
        self.line.extend_from_slice(&id);
        self.line.extend_from_slice(b"\",");
        kv(&mut self.line, "output", &self.a);
        self.close("response_item/custom_tool_call_output")
    }

    fn token_count(&mut self) -> io::Result<()> {
        let (i, c, o) = (self.r.range(8_000, 250_000), self.r.range(0, 200_000), self.r.range(10, 9_000));
        self.open("event_msg");
        let _ = write!(
            self.line,
            "\"type\":\"token_count\",\"info\":{{\"total_token_usage\":{{\"input_tokens\":{i},\"cached_input_tokens\":{c},\"output_tokens\":{o},\"reasoning_output_tokens\":{},\"total_tokens\":{}}},\"model_context_window\":258400}},\"rate_limits\":{{\"primary\":{{\"used_percent\":{}.0,\"window_minutes\":300}},\"secondary\":{{\"used_percent\":{}.0,\"window_minutes\":10080}}}}",
            o / 2,
            i + o,
            self.r.below(100),
            self.r.below(100)
        );
        self.close("event_msg/token_count")
    }

    fn turn(&mut self) -> io::Result<()> {
        self.turn_id.clear();
        uuid(&mut self.r, &mut self.turn_id);
        self.event_simple("task_started")?;
        self.turn_context()?;
        if self.r.chance(30) {
            self.a.clear();
            self.a.extend_from_slice(b"<permissions instructions>\n");
            prose(&mut self.r, &mut self.a, 4);
            self.a.extend_from_slice(b"\n</permissions instructions>");
            self.message("developer", "input_text", None)?;
        }
        self.a.clear();
        self.a.extend_from_slice(self.r.pick(PROMPTS).as_bytes());
        if self.r.chance(40) {
            self.a.extend_from_slice(b"\n\n```\n");
            {
                let n = self.r.skewed(3, 40);
                test_log(&mut self.r, &mut self.a, n)
            };
            self.a.extend_from_slice(b"```");
        }
        self.message("user", "input_text", None)?;
        self.event_copy("user_message", "message")?;

        for _ in 0..self.r.range(3, 25) {
            self.reasoning()?;
            if self.r.chance(25) {
                self.a.clear();
                prose(&mut self.r, &mut self.a, 1);
                self.event_copy("agent_message", "message")?;
                self.message("assistant", "output_text", Some("commentary"))?;
            }
            match self.r.below(20) {
                0..=15 => self.shell()?,
                16..=18 => self.apply_patch()?,
                _ => self.mcp()?,
            }
            self.token_count()?;
        }
        self.a.clear();
        {
            let n = self.r.range(2, 8);
            prose(&mut self.r, &mut self.a, n)
        };
        self.event_copy("agent_message", "message")?;
        self.message("assistant", "output_text", Some("final_answer"))?;
        self.open("event_msg");
        self.line.extend_from_slice(b"\"type\":\"task_complete\",\"turn_id\":\"");
        self.line.extend_from_slice(&self.turn_id);
        self.line.extend_from_slice(b"\",");
        kv(&mut self.line, "last_agent_message", &self.a);
        self.close("event_msg/task_complete")
    }
}

/// Backslashes in `line`, and bytes between a string's quotes.
fn count(line: &[u8]) -> (u64, u64) {
    let (mut bs, mut ins) = (0u64, 0u64);
    let (mut in_str, mut i) = (false, 0);
    while i < line.len() {
        let b = line[i];
        if in_str {
            if b == b'\\' {
                bs += 1;
                ins += 2;
                if line[i + 1] == b'\\' {
                    bs += 1;
                }
                i += 2;
                continue;
            }
            if b == b'"' {
                in_str = false;
            } else {
                ins += 1;
            }
        } else if b == b'"' {
            in_str = true;
        }
        i += 1;
    }
    (bs, ins)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of milliseconds since the epoch.
fn iso_ms(out: &mut Vec<u8>, ms: u64) {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let _ =
        write!(out, "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000);
}

/// Writes the rollout: a session_meta, then whole turns until `target`
/// bytes are reached (the file ends at that line boundary).
fn generate<W: Write>(seed: u64, target: u64, w: &mut W) -> io::Result<Stats> {
    let mut g = Gen {
        r: Rng::new(seed),
        w,
        // 2026-03-02T08:00:00Z
        now_ms: 1_772_438_400_000,
        line: Vec::with_capacity(MAX_LINE),
        a: Vec::new(),
        b: Vec::new(),
        c: Vec::new(),
        cwd: "/home/dev/src/app".to_string(),
        turn_id: Vec::new(),
        stats: Stats { bytes: 0, lines: 0, backslashes: 0, in_string: 0, records: Vec::new() },
    };
    g.turn_id.extend_from_slice(b"00000000-0000-0000-0000-000000000000");
    g.session_meta()?;
    while g.stats.bytes < target {
        g.turn()?;
    }
    g.stats.records.sort();
    Ok(g.stats)
}

/// Prints what `ensure` did, for both the index bench and this one.
pub(crate) fn report(s: &Summary) {
    match s.generated_secs {
        Some(t) => println!(
            "gen_rollout: wrote {} ({:.1} MB, {} lines) in {:.1}s ({:.0} MB/s)",
            s.path.display(),
            s.bytes as f64 / 1e6,
            s.lines,
            t,
            s.bytes as f64 / 1e6 / t
        ),
        None => println!(
            "gen_rollout: reusing {} ({:.1} MB, {} lines; same seed, size and version)",
            s.path.display(),
            s.bytes as f64 / 1e6,
            s.lines
        ),
    }
    println!(
        "gen_rollout: backslashes {:.2}% of bytes, {:.1}% of bytes inside JSON strings",
        s.backslash_fraction * 100.0,
        s.in_string_fraction * 100.0
    );
}

// ---------------------------------------------------------------------------
// As its own bench target: `cargo bench --bench gen_rollout -- …`.

#[allow(dead_code)]
const USAGE: &str = "\
usage: cargo bench --bench gen_rollout -- [--out PATH] [--size BYTES] [--seed N] [--force] [--records]

  --out PATH     where to write (default target/bench-data/codex-rollout-228M-<seed>.jsonl)
  --size BYTES   stop at the first line boundary past this (default 228000000)
  --seed N       the xorshift seed, decimal or 0x-hex (default the fixed SEED)
  --force        write even if the file and its .meta sidecar already match
  --records      also print how many records of each type were written
";

#[allow(dead_code)]
fn main() -> std::process::ExitCode {
    let mut p = pico_args::Arguments::from_env();
    if p.contains(["-h", "--help"]) {
        print!("{USAGE}");
        return std::process::ExitCode::SUCCESS;
    }
    let _ = p.contains("--bench");
    let parsed = (|| -> Result<_, String> {
        let e = |e: pico_args::Error| e.to_string();
        let seed: Option<String> = p.opt_value_from_str("--seed").map_err(e)?;
        let seed = match seed {
            None => SEED,
            Some(s) => match s.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).map_err(|e| format!("--seed {s}: {e}"))?,
                None => s.parse().map_err(|e| format!("--seed {s}: {e}"))?,
            },
        };
        let size: u64 = p.opt_value_from_str("--size").map_err(e)?.unwrap_or(TARGET_BYTES);
        let out: Option<PathBuf> = p.opt_value_from_str("--out").map_err(e)?;
        let force = p.contains("--force");
        let records = p.contains("--records");
        let rest = p.finish();
        if !rest.is_empty() {
            return Err(format!("unexpected arguments: {rest:?}"));
        }
        Ok((out.unwrap_or_else(|| default_path(seed, size)), seed, size, force, records))
    })();
    let (out, seed, size, force, records) = match parsed {
        Ok(x) => x,
        Err(e) => {
            eprintln!("gen_rollout: {e}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    match ensure(&out, seed, size, force) {
        Ok(s) => {
            report(&s);
            if records {
                for (k, n) in &s.records {
                    println!("  {k:<45} {n:>9}");
                }
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen_rollout: {}: {e}", out.display());
            std::process::ExitCode::FAILURE
        }
    }
}
