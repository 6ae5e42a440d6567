//! A TI TMP105 temperature sensor, over any [`embedded_hal::i2c::I2c`] bus.
//!
//! The driver puts the sensor in 12-bit mode (1/16 °C) and reads the
//! temperature register. It writes the pointer register and reads the value
//! in two separate transfers (`write`, then `read`), not as one `write_read`
//! with a repeated START: the TMP105 keeps its pointer across a STOP, and
//! some controllers (QEMU's Stellaris model among them) do not do repeated
//! STARTs.
//!
//! Both a blocking driver ([`Tmp105::read`], over `embedded_hal::i2c::I2c`)
//! and an async one ([`Tmp105::read_async`], over
//! `embedded_hal_async::i2c::I2c`, which the board's sensor task awaits)
//! make the same transfers and share the checks.

use core::fmt;

use embedded_hal::i2c::I2c;
use embedded_hal_async::i2c::I2c as AsyncI2c;

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

/// The TMP105's specified range, -55 °C to +125 °C, in 1/16 °C.
const PLAUSIBLE: core::ops::RangeInclusive<i16> = crate::limits::SENSOR_SIXTEENTHS;

impl Temperature {
    /// From the two bytes of the temperature register (12 bits, left-justified).
    pub const fn from_register(bytes: [u8; 2]) -> Self {
        // Arithmetic shift keeps the sign.
        Temperature { sixteenths: i16::from_be_bytes(bytes) >> 4 }
    }

    /// The register's value if a TMP105 can have sent it: its four low
    /// bits read as zero, and within the sensor's range. A bus whose data
    /// line is stuck high reads `FF FF`; a glitch can read anything.
    pub fn plausible(bytes: [u8; 2]) -> Option<Self> {
        let t = Temperature::from_register(bytes);
        (bytes[1] & 0x0F == 0 && PLAUSIBLE.contains(&t.sixteenths)).then_some(t)
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
    /// Selecting or reading the temperature register failed. A hung bus
    /// ends here too: the bus implementation bounds its wait (the board's
    /// I2C gives up after `BUSY_POLLS` polls with a timeout error).
    Read(E),
    /// The register read back a value no TMP105 sends (the raw bytes):
    /// outside -55..=125 °C, or with its unused low bits set.
    Implausible([u8; 2]),
}

impl<E: embedded_hal::i2c::Error> Error<E> {
    /// What went wrong on the bus, in embedded-hal's terms.
    pub fn kind(&self) -> embedded_hal::i2c::ErrorKind {
        match self {
            Error::Configure(e) | Error::Read(e) => e.kind(),
            Error::Implausible(_) => embedded_hal::i2c::ErrorKind::Other,
        }
    }
}

impl<E: embedded_hal::i2c::Error> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Error::Configure(_) => "configuring the TMP105",
            Error::Read(_) => "reading the TMP105",
            Error::Implausible([hi, lo]) => {
                return write!(f, "implausible TMP105 reading: {hi:02X} {lo:02X}")
            }
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

impl<I> Tmp105<I> {
    /// A sensor at `address` (7-bit). Nothing is sent until the first read.
    pub const fn new(i2c: I, address: u8) -> Self {
        Tmp105 { i2c, address, configured: false }
    }
}

impl<I: I2c> Tmp105<I> {
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
        self.checked(bytes)
    }
}

impl<I: embedded_hal::i2c::ErrorType> Tmp105<I> {
    /// The register's bytes as a temperature, or why not.
    fn checked(&mut self, bytes: [u8; 2]) -> Result<Temperature, Error<I::Error>> {
        Temperature::plausible(bytes).ok_or_else(|| {
            // The sensor may have been reset (9-bit mode) or swapped: set it up again.
            self.configured = false;
            Error::Implausible(bytes)
        })
    }
}

impl<I: AsyncI2c> Tmp105<I> {
    /// [`Tmp105::configure`], awaiting the bus.
    pub async fn configure_async(&mut self) -> Result<(), Error<I::Error>> {
        self.i2c
            .write(self.address, &[POINTER_CONFIG, CONFIG_12_BIT])
            .await
            .map_err(Error::Configure)?;
        self.configured = true;
        Ok(())
    }

    /// [`Tmp105::read`], awaiting the bus: the same transfers, the same errors.
    pub async fn read_async(&mut self) -> Result<Temperature, Error<I::Error>> {
        if !self.configured {
            self.configure_async().await?;
        }
        let mut bytes = [0u8; 2];
        self.i2c.write(self.address, &[POINTER_TEMPERATURE]).await.map_err(Error::Read)?;
        self.i2c.read(self.address, &mut bytes).await.map_err(Error::Read)?;
        self.checked(bytes)
    }
}
