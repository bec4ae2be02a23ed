//! Builds the one C file of libascendcl: `src/ffi/app_log.c`, the variadic half of `aclAppLog`
//! (stable Rust cannot define a C variadic function). Its symbol is hidden; the exported
//! `aclAppLog` is a Rust trampoline that jumps to it (`src/ffi/base.rs`).

fn main() {
    println!("cargo:rerun-if-changed=src/ffi/app_log.c");
    cc::Build::new()
        .file("src/ffi/app_log.c")
        .flag("-fvisibility=hidden")
        .flag_if_supported("-std=c11")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("aclrs_app_log");
}
