//! What `cargo xtask` shares with the workspace's tests: the QEMU runner
//! that drives the firmware ([`qemu`]) and its model server ([`model`]), used by `cargo xtask demo`/`size`
//! and by `tests/tests/firmware.rs`; the boards the core's stack and
//! instruction-count programs run on ([`boards`]); the fleet's MQTT broker,
//! Mosquitto, installed ([`apt`]), started and stopped ([`mqtt`]); the
//! fleet run of `cargo xtask fleet` and its test ([`fleet`]); the OpenTelemetry
//! export's Phoenix and live exporter ([`otel`]); headless Chromium for the
//! pictures' checks ([`chromium`]); and where
//! the tests find the tools they need beyond Rust, skipping without them
//! except under `cargo xtask test` and CI ([`needs`], from
//! `envaware-test-support`).
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    rustdoc::broken_intra_doc_links
)]

pub mod apt;
pub mod boards;
pub mod chromium;
pub mod fleet;
pub use envaware_test_support::needs;
pub mod model;
pub mod mqtt;
pub mod otel;
pub mod qemu;

/// Runs `cmd` to its end and gives its output; an error naming `what`
/// when it cannot start or exits with a failure (its status and standard
/// error). For the programs whose output the caller reads.
pub fn checked_output(
    what: &str,
    cmd: &mut std::process::Command,
) -> Result<std::process::Output, String> {
    let out = cmd.output().map_err(|e| format!("{what}: cannot start: {e}"))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
