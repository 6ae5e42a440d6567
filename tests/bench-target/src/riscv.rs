//! rv32imc (QEMU `virt`, `-cpu rv32,a=false,f=false,d=false`): `minstret`
//! counts retired instructions, one to a tick (under `-icount`, QEMU
//! updates it exactly at each read).

use riscv::register::minstret;

/// `minstret` counts each instruction.
pub const INSTRUCTIONS_PER_TICK: u32 = 1;

/// `minstret` runs from reset: nothing to start.
pub fn start_counter() {}

pub fn counter() -> u32 {
    // The low 32 bits: no case comes near 2^32 instructions.
    minstret::read() as u32
}

pub fn ticks_since(start: u32) -> u32 {
    counter().wrapping_sub(start)
}

/// `riscv::asm::delay(n)` runs 1 + n / 2 two-instruction loops.
pub fn delay_100_002() {
    riscv::asm::delay(100_000);
}
