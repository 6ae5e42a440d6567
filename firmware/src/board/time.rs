//! The board's time: the `embassy-time` driver on SysTick (1 kHz ticks of
//! the core clock, one timer queue), the millisecond counter
//! ([`uptime_ms`]) and the wall clock at boot ([`wall_clock`]).

use core::cell::{Cell, RefCell};
use core::task::Waker;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use cortex_m_rt::exception;
use critical_section::Mutex;
use embassy_time_driver::Driver;
use embassy_time_queue_utils::Queue;
use envaware::{EpochTickClock, Timestamp};
use envaware_firmware::clock;

use super::argument;
#[cfg(doc)]
use super::Uart0Pacer;

/// The core clock at reset as QEMU models the board: 12.5 MHz. SysTick
/// counts it (the external reference clock is not modelled).
const CORE_HZ: u32 = 12_500_000;

/// Milliseconds since boot, counted by SysTick's interrupt (the only
/// writer, besides the restore after a reset).
pub(super) static TICKS: Mutex<Cell<u64>> = Mutex::new(Cell::new(0));

/// The `embassy-time` driver: 1 kHz ticks from SysTick, one timer queue.
/// SysTick is stopped while the board waits for the host ([`Uart0Pacer`]),
/// so the board's time, and every timer, waits too.
struct SysTickDriver {
    queue: Mutex<RefCell<Queue>>,
    /// The tick at which the queue is next due (`u64::MAX`: none).
    alarm: Mutex<Cell<u64>>,
}

impl Driver for SysTickDriver {
    fn now(&self) -> u64 {
        critical_section::with(|cs| TICKS.borrow(cs).get())
    }

    fn schedule_wake(&self, at: u64, waker: &Waker) {
        critical_section::with(|cs| {
            let mut queue = self.queue.borrow(cs).borrow_mut();
            if queue.schedule_wake(at, waker) {
                // Wakes what is due already; the tick handler the rest.
                self.alarm.borrow(cs).set(queue.next_expiration(TICKS.borrow(cs).get()));
            }
        })
    }
}

embassy_time_driver::time_driver_impl!(static DRIVER: SysTickDriver = SysTickDriver {
    queue: Mutex::new(RefCell::new(Queue::new())),
    alarm: Mutex::new(Cell::new(u64::MAX)),
});

#[exception]
fn SysTick() {
    critical_section::with(|cs| {
        let ticks = TICKS.borrow(cs);
        let now = ticks.get() + 1;
        ticks.set(now);
        let alarm = DRIVER.alarm.borrow(cs);
        if now >= alarm.get() {
            alarm.set(DRIVER.queue.borrow(cs).borrow_mut().next_expiration(now));
        }
    });
}

/// Milliseconds of board time since boot (paused while waiting for the
/// host, see [`Uart0Pacer`]), wrapping as a `u32`.
pub fn uptime_ms() -> u32 {
    critical_section::with(|cs| TICKS.borrow(cs).get()) as u32
}

fn ticks() -> u64 {
    u64::from(uptime_ms())
}

/// The board's wall clock: the host's time read once at boot through
/// semihosting, then advanced by the SysTick counter across its wrap
/// ([`envaware_firmware::clock`]).
pub type Clock = EpochTickClock<fn() -> u64>;

/// Reads the wall time at boot and returns a clock running from it: the
/// `epoch=SECONDS` argument on the semihosting command line when the host
/// gives one (QEMU's `-semihosting-config …,arg=epoch=…`, see
/// `xtask/src/qemu.rs`), else the host's time over semihosting (`SYS_TIME`,
/// whole Unix seconds). Unset when the host does not answer.
///
/// A fixed start time is what makes two runs identical: rendering and
/// parsing a different date takes a different number of instructions, and
/// under `-icount` instructions are the board's time, so a run started at
/// another second can end a step a few microseconds earlier or later and
/// move a later uptime by a millisecond.
pub fn wall_clock(epoch: Option<i64>) -> Clock {
    let mut clock: Clock = clock::wall_clock(ticks as fn() -> u64);
    // The epoch is the time at the counter's 0 (the boot), not at this
    // read: the wall time is then always epoch + counter, also after a
    // reset puts the counter back, however long the boot took.
    let since_boot = |secs: i64| {
        Timestamp::from_unix_micros(
            secs.saturating_mul(1_000_000).saturating_add(i64::from(uptime_ms()) * 1000),
        )
    };
    if let Some(secs) = epoch {
        defmt::info!("wall clock: epoch {=i64} from the command line", secs);
        clock.set(since_boot(secs));
        return clock;
    }
    match semihosting::sys::arm_compat::sys_time() {
        Ok(secs) => clock.set(since_boot(secs as i64)),
        Err(_) => defmt::warn!("SYS_TIME failed: the wall time stays unknown"),
    }
    clock
}

/// The `epoch=SECONDS` argument of the semihosting command line, if any:
/// read before the tick starts ([`super::Board::take`]), as every
/// argument is (reading a longer command line takes longer, and under
/// `-icount` that is board time).
pub(super) fn epoch_argument() -> Option<i64> {
    argument(b"epoch=")
}

pub(super) fn systick_start(syst: &mut SYST) {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(CORE_HZ / 1000 - 1);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
}
