//! The TMP105's transfers as embedded-hal-mock expects them, shared by the
//! driver's and the agent's host tests.

use embedded_hal_mock::eh1::i2c::Transaction;
use envaware_firmware::tmp105::DEFAULT_ADDRESS;

/// Setting 12-bit mode: the configuration register (pointer 0x01), R1 = R0 = 1.
pub fn configure() -> Transaction {
    Transaction::write(DEFAULT_ADDRESS, vec![0x01, 0x60])
}

/// Selecting the temperature register (pointer 0x00).
pub fn select() -> Transaction {
    Transaction::write(DEFAULT_ADDRESS, vec![0x00])
}

/// The temperature register's two bytes.
pub fn data(bytes: [u8; 2]) -> Transaction {
    Transaction::read(DEFAULT_ADDRESS, bytes.to_vec())
}
