//! Puts the memory layouts where the linker finds them: `memory.x` (the
//! LM3S6965) for cortex-m-rt's `link.x`, `memory-riscv.x` (QEMU `virt`)
//! for riscv-rt's, named in `.cargo/config.toml`.
use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out.join("memory.x"), include_bytes!("memory.x")).expect("write memory.x");
    fs::write(out.join("memory-riscv.x"), include_bytes!("memory-riscv.x"))
        .expect("write memory-riscv.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=memory-riscv.x");
    println!("cargo:rerun-if-env-changed=CHRONO_TZ_TIMEZONE_FILTER");
}
