//! The live fields the hints carry: the TMP105's temperature (awaited
//! before deciding, as it is watched) and the board's uptime.

use core::fmt::Write as _;

use envaware::LiveFields;

use crate::fmt::Debug2Format;
use crate::tmp105::{self, Temperature};

/// What the temperature field says when the sensor cannot be read: the
/// core's word for a live field that could not be read.
pub use envaware::UNAVAILABLE;

/// The live fields: the TMP105's temperature, awaited from the [`Sensor`](super::Sensor)
/// and recorded here before deciding (it is watched), and the board's
/// uptime, read when an injection fires.
#[derive(Debug)]
pub struct SensorFields<U> {
    uptime_ms: U,
    temperature: heapless::String<24>,
    uptime: heapless::String<24>,
    /// Successful sensor reads.
    pub reads: u32,
    /// Failed sensor reads.
    pub failures: u32,
    /// Reads of the fields that are read only for a hint (the uptime).
    pub refreshes: u32,
}

impl<U: Fn() -> u32> SensorFields<U> {
    /// Fields with `uptime_ms` reading the board's uptime.
    pub fn new(uptime_ms: U) -> Self {
        let (temperature, uptime) = (heapless::String::new(), heapless::String::new());
        SensorFields { uptime_ms, temperature, uptime, reads: 0, failures: 0, refreshes: 0 }
    }

    /// The temperature as the hint writes it.
    pub fn temperature(&self) -> &str {
        &self.temperature
    }

    /// Records a reading of the sensor (logged), or why there is none.
    pub fn record<E: embedded_hal::i2c::Error>(
        &mut self,
        reading: Result<Temperature, tmp105::Error<E>>,
    ) {
        self.temperature.clear();
        // Both strings have room for their longest value: the writes cannot fail.
        match reading {
            Ok(t) => {
                self.reads += 1;
                let _ = write!(self.temperature, "{t}");
                info!("TMP105 read: {=str}", self.temperature);
            }
            Err(e) => {
                self.failures += 1;
                match e {
                    tmp105::Error::Configure(_) => {
                        warn!("TMP105 unavailable (configure): {}", Debug2Format(&e.kind()))
                    }
                    tmp105::Error::Read(_) => {
                        warn!("TMP105 unavailable (read): {}", Debug2Format(&e.kind()))
                    }
                    tmp105::Error::Implausible([hi, lo]) => warn!(
                        "TMP105 unavailable (implausible reading {=u8:02X} {=u8:02X})",
                        hi, lo
                    ),
                }
                let _ = self.temperature.push_str(UNAVAILABLE);
            }
        }
    }
}

impl<U: Fn() -> u32> LiveFields for SensorFields<U> {
    fn refresh_watched(&mut self) {
        // The temperature was awaited and recorded before deciding.
    }

    fn refresh_unwatched(&mut self) {
        // The uptime, on a step that read the temperature before deciding.
        self.refresh();
    }

    fn refresh(&mut self) {
        self.refreshes += 1;
        let ms = (self.uptime_ms)();
        self.uptime.clear();
        let _ = write!(self.uptime, "{}.{:03} s", ms / 1000, ms % 1000);
    }

    fn len(&self) -> usize {
        2
    }

    fn field(&self, i: usize) -> Option<(&str, &str)> {
        match i {
            0 => Some(("temperature", &self.temperature)),
            1 => Some(("uptime", &self.uptime)),
            _ => None,
        }
    }
}
