//! The I2C0 master ([`I2c0`]), implementing
//! [`embedded_hal_async::i2c::I2c`] for the sensor task.

use core::ptr::{read_volatile, write_volatile};

use embedded_hal::i2c::{ErrorKind, ErrorType, NoAcknowledgeSource, Operation, SevenBitAddress};

const I2C0: usize = 0x4002_0000;
const MSA: usize = 0x00;
const MCS: usize = 0x04;
const MDR: usize = 0x08;
const MTPR: usize = 0x0C;
const MCR: usize = 0x20;

const MCS_RUN: u32 = 0x01;
const MCS_START: u32 = 0x02;
const MCS_STOP: u32 = 0x04;
const MCS_ACK: u32 = 0x08;
const MCS_BUSY: u32 = 0x01;
const MCS_ERROR: u32 = 0x02;
const MCS_ADRACK: u32 = 0x04;
const MCS_DATACK: u32 = 0x08;
const MCS_ARBLST: u32 = 0x10;
const MCR_MFE: u32 = 0x10;

/// Polls of the BUSY bit before a transfer counts as hung.
const BUSY_POLLS: u32 = 100_000;

/// An I2C0 bus error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum I2cError {
    /// Another master won the bus; QEMU reports a missing device this way.
    ArbitrationLoss,
    /// The address was not acknowledged.
    AddressNack,
    /// A data byte was not acknowledged.
    DataNack,
    /// The controller stayed busy.
    Timeout,
}

impl embedded_hal::i2c::Error for I2cError {
    fn kind(&self) -> ErrorKind {
        match self {
            I2cError::ArbitrationLoss => ErrorKind::ArbitrationLoss,
            I2cError::AddressNack => ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address),
            I2cError::DataNack => ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data),
            I2cError::Timeout => ErrorKind::Other,
        }
    }
}

/// The Stellaris I2C0 controller in master mode, at 100 kHz, async (the
/// sensor task awaits it).
///
/// Each [`Operation`] of a transaction is its own START…STOP transfer:
/// QEMU's model ignores a repeated START. Empty operations are skipped.
#[derive(Debug)]
pub struct I2c0 {
    _private: (),
}

impl I2c0 {
    pub(super) fn new() -> Self {
        // SAFETY (all register accesses below): I2C0's registers, owned by
        // the one `I2c0`, created once in `Board::take`.
        unsafe {
            // Master function enable: without it QEMU ignores every command.
            write_volatile((I2C0 + MCR) as *mut u32, MCR_MFE);
            // SCL period for 100 kHz from 12.5 MHz: TPR = 12.5M / (20 * 100k) - 1.
            write_volatile((I2C0 + MTPR) as *mut u32, 5);
        }
        I2c0 { _private: () }
    }

    fn reg(offset: usize) -> *mut u32 {
        (I2C0 + offset) as *mut u32
    }

    /// Issues one command and awaits its end, yielding to the other tasks
    /// while the controller is busy (QEMU's model finishes at once).
    async fn command(&mut self, cmd: u32) -> Result<(), I2cError> {
        unsafe { write_volatile(Self::reg(MCS), cmd) };
        let mut polls = 0;
        let status = loop {
            let status = unsafe { read_volatile(Self::reg(MCS)) };
            if status & MCS_BUSY == 0 {
                break status;
            }
            polls += 1;
            if polls == BUSY_POLLS {
                return Err(I2cError::Timeout);
            }
            embassy_futures::yield_now().await;
        };
        let error = if status & MCS_ARBLST != 0 {
            Some(I2cError::ArbitrationLoss)
        } else if status & MCS_ERROR != 0 && status & MCS_ADRACK != 0 {
            Some(I2cError::AddressNack)
        } else if status & MCS_ERROR != 0 && status & MCS_DATACK != 0 {
            Some(I2cError::DataNack)
        } else {
            None
        };
        match error {
            None => Ok(()),
            Some(e) => {
                // Release the bus: QEMU keeps it busy after a failed START
                // and would ignore the next one.
                unsafe { write_volatile(Self::reg(MCS), MCS_STOP) };
                Err(e)
            }
        }
    }

    async fn write_bytes(&mut self, address: u8, bytes: &[u8]) -> Result<(), I2cError> {
        unsafe { write_volatile(Self::reg(MSA), u32::from(address) << 1) };
        let last = bytes.len().saturating_sub(1);
        for (i, &byte) in bytes.iter().enumerate() {
            unsafe { write_volatile(Self::reg(MDR), u32::from(byte)) };
            let mut cmd = MCS_RUN;
            if i == 0 {
                cmd |= MCS_START;
            }
            if i == last {
                cmd |= MCS_STOP;
            }
            self.command(cmd).await?;
        }
        Ok(())
    }

    async fn read_bytes(&mut self, address: u8, buffer: &mut [u8]) -> Result<(), I2cError> {
        unsafe { write_volatile(Self::reg(MSA), u32::from(address) << 1 | 1) };
        let last = buffer.len().saturating_sub(1);
        for (i, byte) in buffer.iter_mut().enumerate() {
            let mut cmd = MCS_RUN;
            if i == 0 {
                cmd |= MCS_START;
            }
            // ACK every byte but the last, which ends with STOP.
            cmd |= if i == last { MCS_STOP } else { MCS_ACK };
            self.command(cmd).await?;
            *byte = unsafe { read_volatile(Self::reg(MDR)) } as u8;
        }
        Ok(())
    }
}

impl ErrorType for I2c0 {
    type Error = I2cError;
}

impl embedded_hal_async::i2c::I2c<SevenBitAddress> for I2c0 {
    async fn transaction(
        &mut self,
        address: u8,
        operations: &mut [Operation<'_>],
    ) -> Result<(), Self::Error> {
        for op in operations {
            match op {
                Operation::Write(bytes) => self.write_bytes(address, bytes).await?,
                Operation::Read(buffer) => self.read_bytes(address, buffer).await?,
            }
        }
        Ok(())
    }
}
