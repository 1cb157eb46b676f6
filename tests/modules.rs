//! The module graph has no cycles (issue "The server core": `tree` ↔
//! `active::derive` ↔ `facts` and `server::job` ↔ `chat` ↔ `moves` were
//! tied in knots). Every `crate::…` and `super::…` path in `src/` is
//! resolved to the module it names, and the graph of "this module uses
//! that one" is searched for a cycle. Unit-test modules are left out: a
//! test may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, with its module path (`server::jobs::walk`).
fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path: PathBuf = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            let mut p = prefix.to_vec();
            p.push(stem.clone());
            if stem != "tests" {
                modules(&path, &p, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && stem != "tests" {
            let mut p = prefix.to_vec();
            if stem != "mod" {
                p.push(stem);
            }
            if p != ["lib"] && p != ["main"] {
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
                // ASCII only, so every byte offset is a place to slice.
                let code: String = code.chars().map(|c| if c.is_ascii() { c } else { ' ' }).collect();
                out.insert(p.join("::"), code);
            }
        }
    }
}

/// The paths a file's code names: `crate::a::b`, `super::super::c`, and
/// each name of a `{…}` list after one.
fn paths(me: &[&str], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &code[i..];
        let (mut base, mut at) = if rest.starts_with("crate::") {
            (Vec::new(), 7)
        } else if rest.starts_with("super::") && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) {
            let mut ups = 0;
            while code[i + ups * 7..].starts_with("super::") {
                ups += 1;
            }
            (me[..me.len().saturating_sub(ups)].iter().map(|s| s.to_string()).collect(), ups * 7)
        } else {
            i += 1;
            continue;
        };
        let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
        loop {
            let name = ident(&rest[at..]);
            if name.is_empty() {
                if rest[at..].starts_with('{') {
                    let end = rest[at..].find('}').map_or(rest.len(), |e| at + e);
                    for item in rest[at + 1..end].split(',') {
                        let mut p = base.clone();
                        p.extend(item.trim().split("::").map(ident).filter(|s| !s.is_empty()));
                        out.push(p);
                    }
                } else {
                    out.push(base.clone());
                }
                break;
            }
            base.push(name.clone());
            at += name.len();
            if !rest[at..].starts_with("::") {
                out.push(base.clone());
                break;
            }
            at += 2;
        }
        i += at.max(1);
    }
    out
}

#[test]
fn no_module_uses_one_that_uses_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut mods = BTreeMap::new();
    modules(&src, &[], &mut mods);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, code) in &mods {
        let me: Vec<&str> = m.split("::").collect();
        for mut p in paths(&me, code) {
            while !p.is_empty() && !mods.contains_key(&p.join("::")) {
                p.pop();
            }
            let target = p.join("::");
            // A module's own descendants and its ancestors are not edges.
            if p.is_empty() || target == *m || m.starts_with(&format!("{target}::")) {
                continue;
            }
            graph.entry(m.clone()).or_default().insert(target);
        }
    }
    assert!(graph.contains_key("server::park"), "the scan found the server's modules: {:?}", graph.keys());
    for start in graph.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((node, trail)) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                assert!(next != start, "an import cycle: {} -> {start}", trail.join(" -> "));
                if seen.insert(next.clone()) {
                    let mut t = trail.clone();
                    t.push(next.clone());
                    stack.push((next.clone(), t));
                }
            }
        }
    }
}
