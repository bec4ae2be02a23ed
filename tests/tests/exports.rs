//! The headers and the library agree: the dynamic symbols `libascendcl.so` defines (`nm -D`)
//! are exactly the functions `acl-shim/include` declares, so that no declared call fails to
//! link and nothing is exported that a program cannot call by its declaration.
//!
//! The declarations come from the C compiler itself (`-aux-info` lists every function a
//! translation unit declares, with the header it comes from), compiling one file that includes
//! every header under `acl-shim/include/acl`; `static` (inline) functions are not exports.
//! Each header also compiles on its own, as C11 and as C++11, so that a program may include
//! any one of them first (CANN's programs include `acl/acl.h`, `acl/acl_rt.h`,
//! `acl/acl_base.h` or `acl/acl_base_rt.h`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every `.h` file under `dir`, recursively, sorted.
fn headers(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read the include directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            out.extend(headers(&path));
        } else if path.extension().is_some_and(|e| e == "h") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The name a line of `-aux-info` output declares, when the declaration comes from a file under
/// `include` and is not `static`. A line reads `/* FILE:LINE:FLAGS */ DECLARATION`, for example
/// `/* .../acl_rt.h:731:NC */ extern aclError aclrtSetDevice (int32_t);`.
fn declared_name(line: &str, include: &str) -> Option<String> {
    let rest = line.strip_prefix("/* ")?;
    let (origin, decl) = rest.split_once(" */ ")?;
    if !origin.starts_with(include) || decl.trim_start().starts_with("static") {
        return None;
    }
    let head = &decl[..decl.find(" (")?];
    let start = head.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    let name = &head[start..];
    (!name.is_empty()).then(|| name.to_owned())
}

/// The functions the public headers declare.
fn declared() -> BTreeSet<String> {
    let include = aclrs_tests::workspace().join("acl-shim/include");
    let dir = aclrs_tests::scratch_dir("exports");
    let src = dir.join("all_headers.c");
    let aux = dir.join("aux-info.txt");
    let mut text = String::new();
    for h in headers(&include.join("acl")) {
        let rel = h.strip_prefix(&include).expect("a header under include");
        text.push_str(&format!("#include \"{}\"\n", rel.display()));
    }
    std::fs::write(&src, text).expect("write the translation unit");
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-fsyntax-only", "-aux-info"])
        .arg(&aux)
        .arg("-I")
        .arg(&include)
        .arg(&src)
        .output()
        .expect("run the C compiler");
    assert!(out.status.success(), "compiling every header failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let listing = std::fs::read_to_string(&aux).expect("read the -aux-info output");
    let prefix = include.display().to_string();
    let names: BTreeSet<String> = listing.lines().filter_map(|l| declared_name(l, &prefix)).collect();
    assert!(names.contains("aclrtMalloc"), "no declarations found in:\n{listing}");
    names
}

/// The symbols `libascendcl.so` defines in its dynamic symbol table.
fn exported() -> BTreeSet<String> {
    let lib = aclrs_tests::lib_dir().join("libascendcl.so");
    let out = Command::new("nm").args(["-D", "--defined-only"]).arg(&lib).output().expect("run nm");
    assert!(
        out.status.success(),
        "nm -D {} failed:\n{}",
        lib.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("nm prints text");
    // Lines read `ADDRESS TYPE NAME`.
    let names: BTreeSet<String> =
        text.lines().filter_map(|l| l.split_whitespace().nth(2)).map(str::to_owned).collect();
    assert!(names.contains("aclrtMalloc"), "no exports found in:\n{text}");
    names
}

#[test]
fn the_library_exports_exactly_what_the_headers_declare() {
    let declared = declared();
    let exported = exported();
    let not_exported: Vec<&String> = declared.difference(&exported).collect();
    let not_declared: Vec<&String> = exported.difference(&declared).collect();
    assert!(
        not_exported.is_empty() && not_declared.is_empty(),
        "declared in acl-shim/include but not exported by libascendcl: {not_exported:?}\n\
         exported by libascendcl but declared in no header: {not_declared:?}"
    );
}

#[test]
fn every_header_compiles_on_its_own_as_c_and_cpp() {
    let include = aclrs_tests::workspace().join("acl-shim/include");
    let dir = aclrs_tests::scratch_dir("exports");
    let mut failures = Vec::new();
    for h in headers(&include.join("acl")) {
        let rel = h.strip_prefix(&include).expect("a header under include").display().to_string();
        let src = dir.join(format!("{}.c", rel.replace('/', "_")));
        std::fs::write(&src, format!("#include \"{rel}\"\nint main(void) {{ return 0; }}\n")).expect("write");
        for (compiler, std, lang) in [("CC", "-std=c11", "c"), ("CXX", "-std=c++11", "c++")] {
            let default = if lang == "c" { "cc" } else { "c++" };
            let out = Command::new(std::env::var(compiler).unwrap_or_else(|_| default.into()))
                .args([std, "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-x", lang, "-I"])
                .arg(&include)
                .arg(&src)
                .output()
                .expect("run the compiler");
            if !out.status.success() {
                failures.push(format!("{rel} as {lang}:\n{}", String::from_utf8_lossy(&out.stderr)));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn aux_info_lines_are_read_as_declarations() {
    let inc = "/x/include";
    let line = |s: &str| declared_name(s, inc);
    assert_eq!(
        line("/* /x/include/acl/acl_rt.h:1:NC */ extern aclError aclrtSetDevice (int32_t);"),
        Some("aclrtSetDevice".into())
    );
    assert_eq!(
        line("/* /x/include/acl/acl_base_rt.h:9:OC */ extern const char *aclGetRecentErrMsg (/* ??? */);"),
        Some("aclGetRecentErrMsg".into())
    );
    assert_eq!(line("/* /usr/include/stdio.h:9:NC */ extern int printf (const char *, ...);"), None);
    assert_eq!(line("/* /x/include/acl/a.h:9:NF */ static int helper (void); /* (x) int x; */"), None);
}
