//! The reference Python for the core's unit tests that compare with CPython
//! itself (`zoneinfo`, `strptime`), found as every test finds it
//! (`envaware_test_support::needs`): the `.venv` that `cargo xtask test`
//! creates, or `ENVAWARE_REF_PYTHON` (cargo-mutants tests a copy of the
//! tree, which has none). Without it a plain `cargo test` skips those
//! checks.
//!
//! A `#[path]` module of the library's tests (it checks private functions),
//! kept out of `src/`: it needs `std` and starts processes.

use std::io::{BufRead, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::string::String;
use std::vec::Vec;

/// A small seeded generator (SplitMix64), so every run checks the same cases.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo) as u64) as i64
    }
}

/// Runs `script` on the reference Python with `input` on its standard
/// input; its output, one line per line of `input`. `None`: the check
/// skips (no reference Python, and skipping allowed).
pub fn answers(script: &str, input: &str) -> Option<Vec<String>> {
    let python =
        envaware_test_support::needs::or_skip(envaware_test_support::needs::reference_python())?;
    let mut child = Command::new(python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the reference Python starts");
    let mut stdin = child.stdin.take().unwrap();
    let input_owned = String::from(input);
    let writer = std::thread::spawn(move || stdin.write_all(input_owned.as_bytes()));
    let lines: Vec<String> =
        BufReader::new(child.stdout.take().unwrap()).lines().map(Result::unwrap).collect();
    writer.join().unwrap().unwrap();
    assert!(child.wait().unwrap().success(), "the reference script failed");
    assert_eq!(lines.len(), input.lines().count(), "one answer per line");
    Some(lines)
}
