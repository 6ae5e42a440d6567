//! UART2: the uplink's link to the MQTT broker (issue 37). QEMU connects it
//! to the broker's TCP port on 127.0.0.1 (`-chardev socket,…,reconnect=1`,
//! the third `-serial`), as a modem's transparent socket would: bytes in,
//! bytes out, the connection made (and made again after the broker went
//! away) by the modem, not the board.
//!
//! The UART is read and written without blocking the executor: an empty
//! receive FIFO (or a full transmit one) yields to the other tasks, so the
//! agent's steps go on whatever the broker does. The board cannot see the
//! TCP connection: after a silence ([`TIMING`]'s `answer_ms`) the uplink
//! takes it as gone and sends a new CONNECT, which reaches the broker
//! once QEMU has connected again.
//!
//! The board's time under `-icount` counts the instructions it runs: while
//! the uplink waits for an answer it polls, so the board's time passes at
//! the pace of its instructions, not the host's clock.

use core::convert::Infallible;
use core::ptr::{read_volatile, write_volatile};

use embassy_futures::yield_now;
use embassy_time::Timer;
use envaware_uplink::{Link, Timing};

use super::argument;

use super::uart::{CTL_ENABLE, FR_RXFE, FR_TXFF, UART_CTL, UART_DR, UART_FR};

const UART2: usize = 0x4000_E000;

/// The uplink's waits on the board: 30 s of the board's time for the
/// broker's answer (its polling runs instructions: about 4 M a second
/// under `-icount shift=7`, a second or so of the host's time), 1 s before
/// connecting again, 200 ms between looks at a delivered log.
pub const TIMING: Timing = Timing { answer_ms: 30_000, retry_ms: 1_000, idle_ms: 200 };

/// The broker's link: UART2, when the command line says `mqtt=1`.
#[derive(Debug)]
pub struct Uart2Link(());

/// UART2 as a byte stream.
#[derive(Debug)]
pub struct Uart2(());

impl Uart2Link {
    /// UART2 enabled, when `mqtt=1` is on the command line.
    pub fn from_arguments() -> Option<Uart2Link> {
        if argument::<u8>(b"mqtt=") != Some(1) {
            return None;
        }
        unsafe { write_volatile((UART2 + UART_CTL) as *mut u32, CTL_ENABLE) };
        Some(Uart2Link(()))
    }
}

fn flags() -> u32 {
    unsafe { read_volatile((UART2 + UART_FR) as *const u32) }
}

impl Link for Uart2Link {
    type Transport = Uart2;

    async fn connect(&mut self) -> Option<Uart2> {
        // What an earlier connection left (an answer that came too late).
        while flags() & FR_RXFE == 0 {
            let _ = unsafe { read_volatile((UART2 + UART_DR) as *const u32) };
        }
        Some(Uart2(()))
    }

    async fn sleep_ms(&mut self, ms: u32) {
        Timer::after_millis(u64::from(ms)).await;
    }
}

/// UART2 fails no read or write: a dead link is a silent one.
impl embedded_io_async::ErrorType for Uart2 {
    type Error = Infallible;
}

impl embedded_io_async::Read for Uart2 {
    /// At least one byte (yielding until it comes), then what else the
    /// FIFO holds.
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, Infallible> {
        if buf.is_empty() {
            return Ok(0);
        }
        while flags() & FR_RXFE != 0 {
            yield_now().await;
        }
        let mut n = 0;
        for slot in buf {
            if flags() & FR_RXFE != 0 {
                break;
            }
            *slot = unsafe { read_volatile((UART2 + UART_DR) as *const u32) } as u8;
            n += 1;
        }
        Ok(n)
    }
}

impl embedded_io_async::Write for Uart2 {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        for &byte in buf {
            while flags() & FR_TXFF != 0 {
                yield_now().await;
            }
            unsafe { write_volatile((UART2 + UART_DR) as *mut u32, u32::from(byte)) };
        }
        Ok(buf.len())
    }

    async fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}
