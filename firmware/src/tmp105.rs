//! A TI TMP105 temperature sensor, over any [`embedded_hal::i2c::I2c`] bus.
//!
//! The driver puts the sensor in 12-bit mode (1/16 °C) and reads the
//! temperature register. It writes the pointer register and reads the value
//! in two separate transfers (`write`, then `read`), not as one `write_read`
//! with a repeated START: the TMP105 keeps its pointer across a STOP, and
//! some controllers (QEMU's Stellaris model among them) do not do repeated
//! STARTs.

use core::fmt;

use embedded_hal::i2c::I2c;

/// The TMP105's address with A0 tied low (QEMU's default for the board).
pub const DEFAULT_ADDRESS: u8 = 0x48;

const POINTER_TEMPERATURE: u8 = 0x00;
const POINTER_CONFIG: u8 = 0x01;
/// Configuration: R1 = R0 = 1, 12-bit resolution (the sensor powers up in 9-bit).
const CONFIG_12_BIT: u8 = 0x60;

/// A temperature in 1/16 °C, the TMP105's 12-bit resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Temperature {
    sixteenths: i16,
}

impl Temperature {
    /// From the two bytes of the temperature register (12 bits, left-justified).
    pub const fn from_register(bytes: [u8; 2]) -> Self {
        // Arithmetic shift keeps the sign.
        Temperature { sixteenths: i16::from_be_bytes(bytes) >> 4 }
    }
}

/// Exact decimal degrees Celsius with the unit: `25.5 °C`, `-4.25 °C`,
/// `30.0 °C`, `0.0625 °C`.
impl fmt::Display for Temperature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let magnitude = self.sixteenths.unsigned_abs();
        let sign = if self.sixteenths < 0 { "-" } else { "" };
        // 1/16 = 0.0625: four decimals are exact.
        let mut fraction = u32::from(magnitude % 16) * 625;
        let mut digits = 4;
        while digits > 1 && fraction % 10 == 0 {
            fraction /= 10;
            digits -= 1;
        }
        write!(f, "{sign}{}.{fraction:0digits$} °C", magnitude / 16)
    }
}

/// Why the sensor could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error<E> {
    /// Setting 12-bit mode failed.
    Configure(E),
    /// Selecting or reading the temperature register failed.
    Read(E),
}

impl<E: embedded_hal::i2c::Error> Error<E> {
    /// What went wrong on the bus, in embedded-hal's terms.
    pub fn kind(&self) -> embedded_hal::i2c::ErrorKind {
        match self {
            Error::Configure(e) | Error::Read(e) => e.kind(),
        }
    }
}

impl<E: embedded_hal::i2c::Error> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Error::Configure(_) => "configuring the TMP105",
            Error::Read(_) => "reading the TMP105",
        };
        write!(f, "{what}: {}", self.kind())
    }
}

impl<E: embedded_hal::i2c::Error + fmt::Debug> core::error::Error for Error<E> {}

/// A TMP105 on an I2C bus.
#[derive(Debug)]
pub struct Tmp105<I> {
    i2c: I,
    address: u8,
    configured: bool,
}

impl<I: I2c> Tmp105<I> {
    /// A sensor at `address` (7-bit). Nothing is sent until the first read.
    pub const fn new(i2c: I, address: u8) -> Self {
        Tmp105 { i2c, address, configured: false }
    }

    /// Puts the sensor in 12-bit mode. [`Tmp105::read`] does it first if it
    /// has not succeeded yet, so a sensor attached late is picked up.
    pub fn configure(&mut self) -> Result<(), Error<I::Error>> {
        self.i2c.write(self.address, &[POINTER_CONFIG, CONFIG_12_BIT]).map_err(Error::Configure)?;
        self.configured = true;
        Ok(())
    }

    /// Reads the temperature.
    pub fn read(&mut self) -> Result<Temperature, Error<I::Error>> {
        if !self.configured {
            self.configure()?;
        }
        let mut bytes = [0u8; 2];
        self.i2c.write(self.address, &[POINTER_TEMPERATURE]).map_err(Error::Read)?;
        self.i2c.read(self.address, &mut bytes).map_err(Error::Read)?;
        Ok(Temperature::from_register(bytes))
    }
}
