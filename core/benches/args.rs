//! Tool-argument equality: how fast `argument_key` reads arguments of each
//! shape, in bytes per second.
//!
//! It measures `HostCapacity` (so the deep input is compared as the
//! reference compares it); `cargo xtask bench-args` runs it, then Python's
//! `json.dumps(json.loads(raw), sort_keys=True)` on the same texts, which
//! this benchmark writes to `target/bench-args/`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use envaware::args::{Canonical, Capacity, HostCapacity, Sink};
use std::hint::black_box;
use std::path::PathBuf;

/// A small deterministic generator (xorshift), so every run reads the
/// same texts.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const WORDS: &[&str] =
    &["alpha", "sensor", "vent", "north", "reading", "café", "zone", "log", "path", "value"];

fn sentence(rng: &mut Rng, words: usize) -> String {
    (0..words).map(|_| WORDS[rng.next() as usize % WORDS.len()]).collect::<Vec<_>>().join(" ")
}

/// A flat object of `members` members in shuffled key order: strings,
/// integers, booleans and now and then a float.
fn flat(members: usize) -> String {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut order: Vec<usize> = (0..members).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.next() as usize % (i + 1));
    }
    let parts: Vec<String> = order
        .iter()
        .map(|&i| {
            let value = match i % 8 {
                0 => format!("{}", rng.next() % 100_000),
                1 => String::from(if rng.next().is_multiple_of(2) { "true" } else { "false" }),
                2 => format!("{}.5", rng.next() % 1000),
                _ => format!("\"{}\"", sentence(&mut rng, 3)),
            };
            format!("\"field_{i:05}\": {value}")
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// A file-writing call: a path and `len` bytes of text with escaped newlines.
fn file_text(len: usize) -> String {
    let mut rng = Rng(42);
    let mut content = String::new();
    while content.len() < len {
        content.push_str(&sentence(&mut rng, 8));
        content.push_str("\\n");
    }
    format!("{{\"path\": \"src/main.rs\", \"mode\": \"overwrite\", \"content\": \"{content}\"}}")
}

/// `depth` levels, objects and arrays in turn, each with a sibling.
fn deep(depth: usize) -> String {
    let mut open = String::new();
    let mut close = String::new();
    for level in 0..depth {
        if level % 2 == 0 {
            open.push_str(&format!("{{\"z\": {level}, \"a\": "));
            close.insert(0, '}');
        } else {
            open.push('[');
            close.insert_str(0, &format!(", \"{}\"]", WORDS[level % WORDS.len()]));
        }
    }
    format!("{open}1{close}")
}

/// The inputs, by name. The deep one beyond 32 levels only where the
/// capacity allows it.
fn inputs() -> Vec<(&'static str, String)> {
    let mut v = vec![
        (
            "small_118",
            String::from(
                r#"{"vent": 2, "percent": 40.5, "zones": ["north", "south"], "note": "caf\u00e9", "retry": {"max": 3, "backoff": 1.5e-3}}"#,
            ),
        ),
        (
            "small_100_no_floats",
            String::from(
                r#"{"command": "ls -la /var/log", "timeout": 30, "env": {"LANG": "C"}, "dry": false}"#,
            ),
        ),
        ("flat_64k", flat(1800)),
        ("flat_125k", flat(3500)),
        ("file_125k", file_text(125_000)),
        ("deep_32", deep(32)),
    ];
    if HostCapacity::MAX_DEPTH >= 900 {
        v.push(("deep_900", deep(900)));
    }
    v
}

struct Discard;

impl Sink for Discard {
    fn write(&mut self, _bytes: &[u8]) {}
}

fn arguments(c: &mut Criterion) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-args");
    std::fs::create_dir_all(&dir).expect("create target/bench-args");
    let mut group = c.benchmark_group("args");
    for (name, raw) in inputs() {
        // Only a canonicalized input measures the canonicalizer.
        assert_eq!(HostCapacity::write_canonical(&raw, &mut Discard), Canonical::Json, "{name}");
        std::fs::write(dir.join(format!("{name}.json")), &raw).expect("write the input for Python");
        group.throughput(Throughput::Bytes(raw.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &raw, |b, raw| {
            b.iter(|| HostCapacity::argument_key(black_box(raw)))
        });
    }
    group.finish();
}

criterion_group!(benches, arguments);
criterion_main!(benches);
