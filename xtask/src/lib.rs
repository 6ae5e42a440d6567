//! What `cargo xtask` shares with the workspace's tests: the QEMU runner
//! that drives the firmware ([`qemu`]), used by `cargo xtask demo`/`size`
//! and by `tests/tests/firmware.rs`.
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations, unused_qualifications, rustdoc::broken_intra_doc_links)]

pub mod qemu;
