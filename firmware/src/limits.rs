//! What the session accepts from the host, in one place: the number of
//! scripted steps and the TMP105's range. Plain constants with no
//! dependency, so that `cargo xtask demo` (which includes this file with
//! `#[path]`) checks its options against the very numbers the firmware
//! uses: `agent::SCRIPT` has [`STEPS`] steps (a compile-time assertion
//! says so) and the driver refuses a reading outside [`SENSOR_SIXTEENTHS`].

/// The scripted steps, numbered `0..STEPS` in the log (`=== step 6: ...`).
pub const STEPS: usize = 10;

/// The TMP105's specified range, -55 °C to +125 °C, in its 12-bit
/// resolution's steps of 1/16 °C (0.0625 °C). A reading outside it is
/// `Error::Implausible`, and the hint then says `unavailable`.
pub const SENSOR_SIXTEENTHS: core::ops::RangeInclusive<i16> = -55 * 16..=125 * 16;
