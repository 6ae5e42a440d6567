//! Everything specific to the board: the TI Stellaris LM3S6965 evaluation
//! board (Cortex-M3) as QEMU's `lm3s6965evb` machine emulates it.
//!
//! One module per peripheral, as embassy's HALs are laid out:
//!
//! - `time`: the `embassy-time` driver: SysTick's 1 kHz interrupt counts
//!   the board's milliseconds and wakes the timers that are due (the
//!   counter stops while the board waits for the host); [`Clock`](time::Clock): wall
//!   time at boot (an `epoch=` argument from the host, else semihosting
//!   `SYS_TIME`) plus the millisecond counter ([`uptime_ms`]);
//! - `i2c`: [`I2c0`], the I2C0 master, implementing
//!   [`embedded_hal_async::i2c::I2c`];
//! - `uart`: [`Uart0Pacer`], the step and environment handshakes with the
//!   host over UART0, the idle time between steps and the model's
//!   (simulated) reply;
//! - `retained`: the RAM that survives a reset (the session log's "flash");
//! - `uplink`: [`Uart2Link`], UART2 as the uplink's byte stream to the
//!   MQTT broker (`mqtt=1`);
//! - `sensor`: [`sensor_task`] samples the TMP105 on its own period,
//!   answers the agent's requests ([`SensorLink`]) and wakes the agent when
//!   a reading would fire its watch;
//! - here: [`Board`], [`exit`], [`dump_log`], [`stack_high_water`]:
//!   semihosting exit and the painted-stack measurement.
//!
//! To move the agent to another board, replace this module: provide an
//! [`agent::Sensor`](envaware_firmware::agent::Sensor) (a sensor task over
//! the board's async I2C), a [`envaware::Clock`], and an
//! [`agent::Pacer`](envaware_firmware::agent::Pacer), then await
//! [`agent::run`](envaware_firmware::agent::run) with them (see the README).

use core::mem::MaybeUninit;
use core::ptr::read_volatile;

use cortex_m_rt::exception;

mod i2c;
mod retained;
mod sensor;
mod time;
mod uart;
mod uplink;

pub use self::i2c::I2c0;
pub use self::sensor::{sensor_task, SensorLink};
pub use self::time::{uptime_ms, wall_clock};
pub use self::uart::Uart0Pacer;
pub use self::uplink::{Uart2Link, TIMING};

use self::retained::log_region;
use self::time::systick_start;

/// The number after `key` (`epoch=`, `reset-after=`) on the semihosting
/// command line, if any (arguments are separated by spaces).
fn argument<T: core::str::FromStr>(key: &[u8]) -> Option<T> {
    let mut buf = [MaybeUninit::<u8>::uninit(); 256];
    // Fails when there is no command line or it does not fit: no value then.
    let line = semihosting::sys::arm_compat::sys_get_cmdline_uninit(&mut buf).ok()?;
    line.split(|&b| b == b' ')
        .find_map(|arg| core::str::from_utf8(arg.strip_prefix(key)?).ok()?.parse().ok())
}

/// The board's parts the agent uses.
#[derive(Debug)]
pub struct Board {
    /// The sensor's bus.
    pub i2c: I2c0,
    /// The step handshake and the passing of time.
    pub pacer: Uart0Pacer,
    /// The session log's "flash" (RAM that survives a reset: `retained`).
    pub log: envaware_firmware::log::RamFlash<&'static mut [u8]>,
    /// The uplink's link to the broker (`mqtt=1`: UART2), or none.
    pub uplink: Option<Uart2Link>,
    /// The device's id (`device=ID`, else `qemu`): its MQTT client id and
    /// topic level.
    pub device: heapless::String<{ envaware_uplink::MAX_DEVICE_ID }>,
    /// The steps to run (`steps=N`, else the script's).
    pub steps: usize,
    /// The wall time at boot (`epoch=SECONDS`), for [`wall_clock`].
    pub epoch: Option<i64>,
}

impl Board {
    /// Takes the peripherals and starts the millisecond tick.
    ///
    /// # Panics
    ///
    /// When called twice.
    pub fn take() -> Board {
        let core = cortex_m::Peripherals::take().expect("Board::take is called once");
        let mut syst = core.SYST;
        let arguments = Uart0Pacer::arguments();
        let uplink = Uart2Link::from_arguments();
        let device = argument(b"device=").unwrap_or_else(|| "qemu".try_into().unwrap_or_default());
        let steps = argument(b"steps=").unwrap_or(envaware_firmware::limits::STEPS);
        let epoch = time::epoch_argument();
        systick_start(&mut syst);
        Board {
            i2c: I2c0::new(),
            pacer: Uart0Pacer::new(syst, arguments),
            log: envaware_firmware::log::RamFlash(log_region()),
            uplink,
            device,
            steps,
            epoch,
        }
    }
}

/// The host file the log's region is dumped to when the command line
/// says `dump-log=1` (QEMU's working directory; `cargo xtask demo` and the
/// tests read it: `envaware-sim replay --flash` reads such an image).
const LOG_DUMP: &core::ffi::CStr = c"envaware-flash-log.bin";

/// Writes `region`, the log's "flash" byte for byte, to the host over
/// semihosting, when the command line asks for it.
pub fn dump_log(region: &[u8]) {
    if argument::<u8>(b"dump-log=") != Some(1) {
        return;
    }
    match semihosting::fs::write(LOG_DUMP, region) {
        Ok(()) => defmt::info!(
            "the log's region ({=usize} bytes) is saved to {=str}",
            region.len(),
            LOG_DUMP.to_str().unwrap_or("?")
        ),
        Err(_) => defmt::warn!("the log's region could not be saved to the host"),
    }
}

/// Ends the QEMU run with `code` (semihosting `SYS_EXIT_EXTENDED`).
pub fn exit(code: i32) -> ! {
    semihosting::process::exit(code)
}

/// The deepest the stack has been, in bytes: cortex-m-rt's `paint-stack`
/// fills it with `0xCCCC_CCCC` at reset; the first word from the bottom
/// that lost the paint marks the high-water line.
pub fn stack_high_water() -> u32 {
    extern "C" {
        static mut _stack_end: u32;
        static mut _stack_start: u32;
    }
    let bottom = &raw const _stack_end as usize;
    let top = &raw const _stack_start as usize;
    let mut addr = bottom;
    // SAFETY: every word between the linker's `_stack_end` and
    // `_stack_start` is RAM; reading it races with nothing (one core, and
    // the words below the stack pointer are not in use).
    while addr < top
        && unsafe { read_volatile(addr as *const u32) } == cortex_m_rt::STACK_PAINT_VALUE
    {
        addr += 4;
    }
    (top - addr) as u32
}

#[exception]
unsafe fn HardFault(frame: &cortex_m_rt::ExceptionFrame) -> ! {
    defmt::error!("hard fault at pc {=u32:#x}", frame.pc());
    exit(2)
}
