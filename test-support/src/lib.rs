//! What the workspace's tests share with each other and with `cargo xtask`:
//! where a test finds what it needs beyond Rust, and whether it may skip
//! without it ([`needs`]).
//!
//! A crate of its own, with no dependencies, so that the core's tests (a
//! dev-dependency of `envaware`) need not build `xtask`.
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    rustdoc::broken_intra_doc_links
)]

pub mod needs;
