//! Builds the one C file of the software NPU: `csrc/fault.c`, the trampoline that calls a sim
//! kernel under `sigsetjmp` and the SIGSEGV/SIGBUS handler that turns a kernel's fault into a
//! failed launch (`src/fault.rs`). Its symbols are hidden.

fn main() {
    println!("cargo:rerun-if-changed=csrc/fault.c");
    cc::Build::new()
        .file("csrc/fault.c")
        .flag("-fvisibility=hidden")
        .flag_if_supported("-std=gnu11")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("aclrs_sim_fault");
}
