//! The `stack` program runs on QEMU's lm3s6965evb (cortex-m-rt's linker
//! script with this board's memory) or on QEMU's rv32 `virt` (riscv-rt's,
//! with the layout `tests/bench-target` runs in). The size programs need no
//! script.
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    if std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "riscv32") {
        std::fs::write(
            out.join("memory-riscv.x"),
            include_bytes!("../bench-target/memory-riscv.x"),
        )
        .unwrap();
        println!("cargo:rustc-link-arg-bin=stack=-Tmemory-riscv.x");
        println!("cargo:rerun-if-changed=../bench-target/memory-riscv.x");
    } else {
        std::fs::write(
            out.join("memory.x"),
            "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 256K\n  RAM : ORIGIN = 0x20000000, LENGTH = 64K\n}\n",
        )
        .unwrap();
    }
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg-bin=stack=-Tlink.x");
    println!("cargo:rerun-if-changed=build.rs");
}
