//! The `stack` program runs on QEMU's lm3s6965evb: cortex-m-rt's linker
//! script with this board's memory. The size programs need no script.
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    std::fs::write(
        out.join("memory.x"),
        "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 256K\n  RAM : ORIGIN = 0x20000000, LENGTH = 64K\n}\n",
    )
    .unwrap();
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg-bin=stack=-Tlink.x");
    println!("cargo:rerun-if-changed=build.rs");
}
