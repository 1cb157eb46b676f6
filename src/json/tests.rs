use super::*;

#[test]
fn a_top_level_key_answers_its_raw_value() {
    let doc = br#" {"a": 1, "b" : "two", "c":[1,{"d":2}], "e":{"f":null}} "#;
    assert_eq!(field(doc, b"a"), Some(&b"1"[..]));
    assert_eq!(field(doc, b"b"), Some(&br#""two""#[..]));
    assert_eq!(field(doc, b"c"), Some(&br#"[1,{"d":2}]"#[..]));
    assert_eq!(field(doc, b"e"), Some(&br#"{"f":null}"#[..]));
    assert_eq!(field(doc, b"missing"), None);
}

#[test]
fn a_nested_key_is_not_mistaken_for_a_top_level_one() {
    let doc = br#"{"message":{"cwd":"/inner"},"x":"{\"cwd\":\"/in-a-string\"}"}"#;
    assert_eq!(field(doc, b"cwd"), None);
    assert_eq!(path_str(doc, &[b"message", b"cwd"]).unwrap(), b"/inner");
}

#[test]
fn a_key_written_with_escapes_still_matches() {
    let doc = br#"{"\u0063wd":"/x"}"#;
    assert_eq!(path_str(doc, &[b"cwd"]).unwrap(), b"/x");
}

#[test]
fn a_record_cut_short_still_answers_the_keys_before_the_cut() {
    let doc = br#"{"type":"session_meta","payload":{"id":"abc","cwd":"/home/u","base_instructions":{"text":"You are"#;
    assert_eq!(path_str(doc, &[b"payload", b"cwd"]).unwrap(), b"/home/u");
    assert_eq!(path(doc, &[b"payload", b"base_instructions"]), None);
    assert_eq!(path(doc, &[b"payload", b"model"]), None);
}

#[test]
fn a_number_at_the_very_end_counts_as_cut() {
    assert_eq!(field(br#"{"pid":12"#, b"pid"), None);
    assert_eq!(field(br#"{"pid":12}"#, b"pid"), Some(&b"12"[..]));
}

#[test]
fn every_escape_unescapes() {
    let raw = br#""q\" b\\ s\/ \b\f\n\r\t \u00e9 \u4e2d \ud83d\ude00""#;
    let want = "q\" b\\ s/ \u{8}\u{c}\n\r\t é 中 😀".as_bytes();
    assert_eq!(string(raw).unwrap(), want);
}

#[test]
fn invalid_strings_answer_a_clear_error() {
    assert_eq!(string(b"42"), Err(JsonError::NotString));
    assert_eq!(string(b"\""), Err(JsonError::NotString));
    assert_eq!(string(br#""\x""#), Err(JsonError::BadEscape { at: 1 }));
    assert_eq!(string(br#""ab\"#), Err(JsonError::NotString));
    assert_eq!(string(br#""\u12""#), Err(JsonError::BadUnicode { at: 1 }));
    assert_eq!(string(br#""\uzzzz""#), Err(JsonError::BadUnicode { at: 1 }));
    assert_eq!(string(br#""\ud83d""#), Err(JsonError::LoneSurrogate { at: 1 }));
    assert_eq!(string(br#""\ud83d\u0041""#), Err(JsonError::LoneSurrogate { at: 1 }));
    assert_eq!(string(br#""\ude00""#), Err(JsonError::LoneSurrogate { at: 1 }));
    assert_eq!(string(b"\"a\nb\""), Err(JsonError::ControlInString { at: 2 }));
    assert!(JsonError::LoneSurrogate { at: 1 }.to_string().contains("surrogate"));
}

#[test]
fn bytes_that_are_not_utf8_pass_through_a_string() {
    assert_eq!(string(b"\"a\xff\xfeb\"").unwrap(), b"a\xff\xfeb");
    assert_eq!(path_str(b"{\"k\":\"\xc3(\"}", &[b"k"]).unwrap(), b"\xc3(");
}

#[test]
fn numbers_are_read_as_unsigned_integers_only() {
    assert_eq!(u64_of(b"0"), Some(0));
    assert_eq!(u64_of(b"18446744073709551615"), Some(u64::MAX));
    assert_eq!(u64_of(b"18446744073709551616"), None);
    assert_eq!(u64_of(b"99999999999999999999999999"), None);
    assert_eq!(u64_of(b"-1"), None);
    assert_eq!(u64_of(b"1.5"), None);
    assert_eq!(u64_of(b"1e3"), None);
    assert_eq!(u64_of(b""), None);
    assert_eq!(u64_of(br#""12""#), None);
}

#[test]
fn mismatched_brackets_are_refused_not_miscounted() {
    assert_eq!(value_end(b"[}", 0), Err(JsonError::Unexpected { at: 1 }));
    assert_eq!(field(br#"{"a":[1},"b":2}"#, b"b"), None);
    assert_eq!(value_end(b"{\"a\":\"]}\"}", 0), Ok(10));
}

#[test]
fn nesting_past_the_cap_is_refused() {
    let deep = [vec![b'['; DEPTH_MAX + 1], vec![b']'; DEPTH_MAX + 1]].concat();
    assert_eq!(value_end(&deep, 0), Err(JsonError::TooDeep { at: DEPTH_MAX }));
    let ok = [vec![b'['; DEPTH_MAX], vec![b']'; DEPTH_MAX]].concat();
    assert_eq!(value_end(&ok, 0), Ok(ok.len()));
}

#[test]
fn a_whole_document_is_one_value_and_nothing_else() {
    assert!(is_whole_value(b" {\"a\":[true,false,null,-1.5e3]}\n"));
    assert!(is_whole_value(b"\xEF\xBB\xBF{}"));
    assert!(!is_whole_value(b"{} {}"));
    assert!(!is_whole_value(b"{\"a\":"));
    assert!(!is_whole_value(b""));
    assert!(!is_whole_value(b"tru"));
    assert!(!is_whole_value(b"not json"));
}

#[test]
fn str_eq_compares_after_unescaping() {
    assert!(str_eq(br#""ai-title""#, b"ai-title"));
    assert!(str_eq(br#""ai\u002dtitle""#, b"ai-title"));
    assert!(!str_eq(br#""ai-title""#, b"ai"));
    assert!(!str_eq(b"1", b"1"));
    assert!(path_is(br#"{"type":"summary"}"#, &[b"type"], b"summary"));
}

/// A deterministic xorshift64 generator, so a failure replays.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const SEEDS: [&[u8]; 5] = [
    br#"{"type":"assistant","message":{"model":"m","content":[{"type":"text","text":"a\"b\\c\u00e9"}]},"cwd":"/x"}"#,
    br#"{"timestamp":"t","type":"session_meta","payload":{"id":"019c","cwd":"/h","source":{"subagent":"review"},"thread_source":"user"}}"#,
    br#"{"pid":1,"sessionId":"a-b","procStart":"123","status":"busy","name":"\ud83d\ude00"}"#,
    br#"[1,-2.5e-3,true,false,null,"\u12","x"]"#,
    b"{\"\xff\":\"\xfe\",\"a\":{\"b\":{\"c\":[[[[]]]]}}}",
];

const SPICE: &[u8] = b"{}[]\":,\\u0123456789abcdefABCDEF-+.eE tnrfl\x00\x1f\x7f\xc3\xff\xd8\xdc";

fn mangle(rng: &mut XorShift, seed: &[u8]) -> Vec<u8> {
    let mut doc = seed.to_vec();
    for _ in 0..rng.below(6) {
        let at = rng.below(doc.len() + 1);
        match rng.below(4) {
            0 if !doc.is_empty() => {
                let at = at.min(doc.len() - 1);
                doc[at] = SPICE[rng.below(SPICE.len())];
            }
            1 => doc.insert(at, SPICE[rng.below(SPICE.len())]),
            2 => doc.truncate(at),
            _ if at < doc.len() => {
                doc.remove(at);
            }
            _ => {}
        }
    }
    doc
}

fn exercise(doc: &[u8]) {
    for keys in [&[][..], &[&b"type"[..]], &[b"message", b"model"], &[b"payload", b"cwd"], &[b"a", b"b", b"c"]] {
        if let Some(raw) = path(doc, keys) {
            let start = raw.as_ptr() as usize - doc.as_ptr() as usize;
            assert!(start + raw.len() <= doc.len());
            assert_eq!(value_end(doc, start), Ok(start + raw.len()));
            let _ = string(raw);
            let _ = u64_of(raw);
            let _ = str_eq(raw, b"x");
        }
    }
    let _ = string(doc);
    let _ = is_whole_value(doc);
    let _ = field(doc, b"\xff");
    for at in 0..doc.len().min(8) {
        let _ = value_end(doc, at);
    }
}

#[test]
fn fuzz_mangled_records_never_panic() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for round in 0..40_000 {
        let doc = mangle(&mut rng, SEEDS[round % SEEDS.len()]);
        exercise(&doc);
    }
}

#[test]
fn fuzz_random_bytes_never_panic() {
    let mut rng = XorShift(0xdead_beef_cafe_f00d);
    for _ in 0..20_000 {
        let len = rng.below(64);
        let doc: Vec<u8> = (0..len).map(|_| SPICE[rng.below(SPICE.len())]).collect();
        exercise(&doc);
        let raw: Vec<u8> = [&b"\""[..], &doc, b"\""].concat();
        let _ = string(&raw);
    }
}

#[test]
fn the_module_example_reads_a_nested_string_without_parsing_the_rest() {
    let line = br#"{"type":"assistant","message":{"model":"claude-opus-4-8","content":[]}}"#;
    let raw = crate::json::path(line, &[b"message", b"model"]).unwrap();
    assert_eq!(raw, br#""claude-opus-4-8""#);
    assert_eq!(crate::json::string(raw).unwrap(), b"claude-opus-4-8");
}
