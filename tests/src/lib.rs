//! Integration tests live in `tests/`. (The README's and `docs/`' Rust
//! examples run as the core's doc tests: `mod documentation` in
//! `core/src/lib.rs`.)
