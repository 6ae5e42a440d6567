//! The board-independent part of the envaware firmware: Sprout, a
//! greenhouse robot, runs a scripted agent session through the envaware
//! core and injects live TMP105 readings into its hints. The binary
//! (`src/main.rs`, `src/board.rs`) runs it on the TI Stellaris LM3S6965 in
//! QEMU; the host tests (`tests/`) run it against embedded-hal-mock.
//!
//! - [`tmp105`]: the sensor driver, generic over `embedded_hal::i2c::I2c`;
//! - [`clock`]: the wall clock over the board's wrapping millisecond counter;
//! - [`limits`]: the number of steps and the sensor's range, which the host's
//!   demo checks its options against;
//! - [`agent`]: the session, generic over the bus, the clock, the pacer and
//!   the output;
//! - [`log`]: the session's log (`envaware::journal`) in sequential-storage's
//!   queue, read back after a reset;
//! - [`stream`]: the session streamed as AgentScope JSON, for replay on a desktop;
//! - [`http`]: the model call, one HTTP/1.1 exchange over any byte stream.
//!
//! With the `defmt` feature (the default, the board) the log and the
//! transcript go out through defmt ([`agent::DefmtOutput`]); without it
//! (`--no-default-features`, the host) the log vanishes (`src/fmt.rs`) and
//! the transcript goes wherever the caller's [`agent::Output`] puts it.
#![no_std]
#![deny(missing_docs, missing_debug_implementations, unused_qualifications, unsafe_code)]

#[macro_use]
mod fmt;

pub mod agent;
pub mod clock;
pub mod http;
pub mod limits;
pub mod stream;
pub mod tmp105;

/// The session's log (issue 21): the items `envaware::journal` writes, in
/// sequential-storage's queue (a CRC per item) over a
/// [`NorFlash`](embedded_storage_async::nor_flash::NorFlash) the board
/// provides. Under QEMU the board's "flash" is [`log::RamFlash`] over a RAM
/// region that survives `SCB::sys_reset` (docs/reboot.md says what that
/// models and what not). The crate is the host workspace's
/// `envaware-flashlog`: the simulator reads a flash image, and the
/// power-cut tests cut this very log.
pub use envaware_flashlog as log;
