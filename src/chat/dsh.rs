//! dsh transcripts (`~/.dsh/sessions/session-<id>/session.jsonl.zstd`,
//! read through their inflated copy: `zst`), as far as this project has
//! seen one: the demo home's, whose shapes follow what dsh writes (session
//! format `version` 0). A `session` header (the session's id, cwd and
//! start), `step/start` and `step/end` around each step, and `message`
//! records: `{seq, time, role, text}`, `time` in milliseconds since the
//! epoch.
//!
//! `message` is the conversation: role `user`, `assistant` and `system` as
//! the kinds of that name, any other role the harness speaking (its
//! JSON, and counted under `/health`). The header and the steps are
//! bookkeeping; a record of any other type is counted under `/health`,
//! with whether it held text. No record of the specimen counts tokens, so
//! a dsh session's `usage` is all zeros until one is known.

use super::conv::{self, Conv, PartKeys};
use super::store::{Full, Store};
use super::walk::{any_nested, Node, Rec, Schema, Val, LEAF};
use super::Kind;

const ROOT: u8 = 1;
const TYPE: u8 = 2;
const TIME: u8 = 3;
const ROLE: u8 = 4;
const TEXT: u8 = 5;
const CONTENT: u8 = 6;
const VERSION: u8 = 7;
const PART: u8 = 8;
const PART_TYPE: u8 = 9;
const PART_TEXT: u8 = 10;
/// The session header's working directory.
const CWD: u8 = 11;

/// The schema of a dsh record.
pub(crate) static SCHEMA: Schema = Schema::new(&NODES, TYPE, walked, any_nested);

/// Every record but the steps' marks is walked: the header for its
/// version, a message for its text, an unknown type for whether it held
/// any.
fn walked(ty: &[u8]) -> bool {
    !matches!(ty, b"step/start" | b"step/end")
}

static NODES: [Node; 12] = {
    let mut s = [LEAF; 12];
    s[ROOT as usize] = Node {
        keys: &[
            (b"type", TYPE),
            (b"time", TIME),
            (b"role", ROLE),
            (b"text", TEXT),
            (b"content", CONTENT),
            (b"version", VERSION),
            (b"cwd", CWD),
        ],
        elem: 0,
    };
    s[CONTENT as usize] = Node { keys: &[], elem: PART };
    s[PART as usize] = Node { keys: &[(b"type", PART_TYPE), (b"text", PART_TEXT)], elem: 0 };
    s
};

const PARTS: PartKeys = PartKeys { ty: PART_TYPE, text: PART_TEXT };

/// The messages of one record.
pub(crate) fn line(rec: &Rec, store: &mut Store, conv: &mut Conv) -> Result<(), Full> {
    let Some(root) = rec.root() else { return Ok(()) };
    if let Some(ms) = rec.uint(root, TIME) {
        conv.at_unix(ms / 1000);
    }
    let ty = rec.word(root, TYPE);
    if rec.glued {
        return Ok(());
    }
    let time = conv.time();
    match ty {
        b"session" => {
            if let Some(v) = rec.uint(root, VERSION) {
                conv.drift.version(v.to_string().as_bytes());
            }
            conv.cwd(rec.word(root, CWD));
            Ok(())
        }
        b"step/start" | b"step/end" => Ok(()),
        b"message" => {
            let kind = match rec.word(root, ROLE) {
                b"user" => Kind::User,
                b"assistant" => Kind::Assistant,
                b"system" => Kind::System,
                role => {
                    conv.drift.unknown(&[b"message/", role].concat(), true);
                    return store.one(Kind::System, time, rec.raw_span(root));
                }
            };
            store.open(kind, time, 0)?;
            let said = rec.child(root, TEXT).filter(|&t| rec.val(t) == Val::Str).or(rec.child(root, CONTENT));
            conv::parts(rec, said, PARTS, store)?;
            store.close();
            Ok(())
        }
        t => {
            let text = rec.child(root, TEXT).is_some() || rec.child(root, CONTENT).is_some();
            conv.drift.unknown(t, text);
            Ok(())
        }
    }
}
