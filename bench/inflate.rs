//! `cargo bench --bench inflate -- [--file PATH] [--level N] [--runs N] [--slice BYTES]`:
//! how fast a compressed transcript is decoded, the way the daemon decodes
//! one (`nineagents::zst::Inflater`, libzstd, `--slice` bytes of output a
//! step into one buffer), against the pure-Rust decoder `ruzstd` reading
//! the same stream in the same slices, in one run, and against the time
//! the indexer takes to index what they decode.
//!
//! The input is the ~228 MB synthetic rollout of `bench/gen_rollout.rs`
//! (generated on first use), compressed here at `--level` (3, zstd's and
//! codex's default) unless `--file` names a `.zst` to read. This is the
//! measurement that chose libzstd (docs/DESIGN.md, "Dependencies").

#[path = "gen_rollout.rs"]
mod gen_rollout;
mod harness;

use std::hint::black_box;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use harness::Row;

const USAGE: &str = "\
usage: cargo bench --bench inflate -- [--file PATH] [--level N] [--runs N] [--slice BYTES]

  --file PATH     a zstd-compressed transcript to decode (default: the
                  generated rollout, compressed at --level)
  --level N       the zstd level to compress the generated rollout at (3)
  --runs N        best of N (default 5)
  --slice BYTES   bytes of output a decoding step writes (default 131072,
                  the daemon's INFLATE_SLICE)
";

struct Opts {
    file: Option<PathBuf>,
    level: i32,
    runs: usize,
    slice: usize,
}

fn parse(mut p: pico_args::Arguments) -> Result<Opts, String> {
    let e = |e: pico_args::Error| e.to_string();
    let o = Opts {
        file: p.opt_value_from_str("--file").map_err(e)?,
        level: p.opt_value_from_str("--level").map_err(e)?.unwrap_or(3),
        runs: p.opt_value_from_str("--runs").map_err(e)?.unwrap_or(5),
        slice: p.opt_value_from_str("--slice").map_err(e)?.unwrap_or(128 << 10),
    };
    harness::finish(p)?;
    if o.runs == 0 || o.slice == 0 {
        return Err("--runs and --slice must be positive".into());
    }
    Ok(o)
}

fn main() -> ExitCode {
    harness::main("inflate", USAGE, parse, run)
}

/// The best of `runs` timings of `f`, and what it returned.
fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut out = None;
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        out = Some(r);
    }
    (best, out.expect("runs > 0"))
}

/// libzstd through the daemon's own `Inflater`: `slice` bytes a step, each
/// into the same buffer, frames and all.
fn libzstd(input: &[u8], slice: usize) -> usize {
    let mut z = nineagents::zst::Inflater::new().expect("a decoder");
    let (mut at, mut total, mut buf) = (0, 0, vec![0u8; slice]);
    loop {
        let s = z.step(&input[at..], &mut buf).expect("a valid stream");
        at += s.read;
        total += s.wrote;
        black_box(&buf[..s.wrote]);
        if s.read == 0 && s.wrote == 0 {
            return total;
        }
    }
}

/// ruzstd's streaming decoder, read `slice` bytes at a time.
fn ruzstd(input: &[u8], slice: usize) -> usize {
    let mut d = ruzstd::decoding::StreamingDecoder::new(input).expect("a valid stream");
    let (mut total, mut buf) = (0, vec![0u8; slice]);
    loop {
        let n = d.read(&mut buf).expect("a valid stream");
        if n == 0 {
            return total;
        }
        black_box(&buf[..n]);
        total += n;
    }
}

fn run(o: &Opts) -> Result<(), String> {
    harness::print_cpu_and_load("unknown");
    let input = match &o.file {
        Some(f) => std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?,
        None => {
            let path = gen_rollout::default_path(gen_rollout::SEED, gen_rollout::TARGET_BYTES);
            gen_rollout::ensure(&path, gen_rollout::SEED, gen_rollout::TARGET_BYTES, false)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            let plain = std::fs::read(&path).map_err(|e| e.to_string())?;
            let t = Instant::now();
            let z = zstd::bulk::compress(&plain, o.level).map_err(|e| e.to_string())?;
            println!(
                "inflate: compressed {} MB at level {} to {} MB ({:.1}x) in {:.1} s",
                plain.len() / 1_000_000,
                o.level,
                z.len() / 1_000_000,
                plain.len() as f64 / z.len() as f64,
                t.elapsed().as_secs_f64()
            );
            z
        }
    };
    let (t_lib, n_lib) = best(o.runs, || libzstd(&input, o.slice));
    let (t_rust, n_rust) = best(o.runs, || ruzstd(&input, o.slice));
    if n_lib != n_rust {
        return Err(format!("the decoders disagree: libzstd {n_lib} bytes, ruzstd {n_rust}"));
    }
    // What the indexer takes for the same bytes, for scale: decoding is the
    // step before it.
    let plain = zstd::stream::decode_all(&input[..]).map_err(|e| e.to_string())?;
    let (t_ix, _) = best(o.runs, || {
        let ix = nineagents::chat::Index::new(nineagents::chat::Format::Codex, 1 << 24);
        harness::index_in_windows(&plain, 1 << 20, ix).1
    });
    let gbps = |t: Duration| n_lib as f64 / t.as_secs_f64() / 1e9;
    let slice_us = t_lib.as_secs_f64() * 1e6 / (n_lib as f64 / o.slice as f64);
    harness::print_table(&[
        Row::new("libzstd (Inflater)", "GB/s of output", format!("{:.2}", gbps(t_lib)), "", None),
        Row::new("ruzstd", "GB/s of output", format!("{:.2}", gbps(t_rust)), "", None),
        Row::new("libzstd / ruzstd", "speed ratio", format!("{:.2}x", gbps(t_lib) / gbps(t_rust)), "", None),
        Row::new("indexer (windows)", "GB/s", format!("{:.2}", gbps(t_ix)), "", None),
        Row::new("a slice", "µs of the loop", format!("{slice_us:.0}"), "", None),
    ]);
    Ok(())
}
