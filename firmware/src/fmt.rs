//! The one logging shim, as embassy's (`embassy-sync/src/fmt.rs`): `info!`,
//! `warn!` and `error!` go to defmt with the `defmt` feature (the board) and
//! vanish without it (the host tests, where defmt has no logger). The
//! format strings are defmt's (`{=str}`, `{=u8:02X}`); without defmt each
//! argument is still taken by reference, so nothing becomes unused and
//! nothing is formatted.
#![allow(unused_macros)]

macro_rules! info {
    ($s:literal $(, $x:expr)* $(,)?) => {{
        #[cfg(feature = "defmt")]
        ::defmt::info!($s $(, $x)*);
        #[cfg(not(feature = "defmt"))]
        let _ = ($( &$x ),*);
    }};
}

macro_rules! warn {
    ($s:literal $(, $x:expr)* $(,)?) => {{
        #[cfg(feature = "defmt")]
        ::defmt::warn!($s $(, $x)*);
        #[cfg(not(feature = "defmt"))]
        let _ = ($( &$x ),*);
    }};
}

macro_rules! error {
    ($s:literal $(, $x:expr)* $(,)?) => {{
        #[cfg(feature = "defmt")]
        ::defmt::error!($s $(, $x)*);
        #[cfg(not(feature = "defmt"))]
        let _ = ($( &$x ),*);
    }};
}

/// Formats a value with its `Debug` implementation in defmt's output.
#[cfg(feature = "defmt")]
pub(crate) use defmt::Debug2Format;

/// Formats a value with its `Debug` implementation: `defmt::Debug2Format`
/// with the `defmt` feature, this plain wrapper without (never formatted).
#[cfg(not(feature = "defmt"))]
pub(crate) struct Debug2Format<'a, T: core::fmt::Debug + ?Sized>(pub &'a T);
