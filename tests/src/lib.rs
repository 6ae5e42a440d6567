//! Integration tests live in `tests/`. This crate also runs the README's
//! Rust examples as doc tests, so the documentation cannot drift.
#![doc = include_str!("../../README.md")]
