//! libascendcl's log, with CANN's variables, levels, line format and `plog` files, built on
//! `tracing`.
//!
//! This module owns reading the log settings, installing the process's `tracing` subscriber
//! (once, on the first C call) and writing its lines. The C edge ([`crate::ffi`]) calls in at
//! its one conversion point: every failed call is logged at ERROR with its code and message, and
//! at DEBUG every call is logged with its arguments and result (the API trace). The software
//! NPU's settings (`hal-sim`) log their problems through the same subscriber as they are read.
//!
//! # Settings (CANN's meanings)
//!
//! - `ASCEND_GLOBAL_LOG_LEVEL`: 0 debug, 1 info, 2 warning, 3 error (default), 4 off.
//! - `ASCEND_SLOG_PRINT_TO_STDOUT`: 1 prints the lines on stdout instead of a file; 0 (default)
//!   writes the file.
//! - `ASCEND_PROCESS_LOG_PATH`: the log root, in place of `$HOME/ascend/log` (then
//!   `$ASCEND_WORK_PATH/log`, as in CANN). The file is `<root>/debug/plog/plog-<pid>_<time>.log`,
//!   `<time>` being the UTC creation time as `yyyymmddhhmmssmmm`.
//!
//! The file is created on the first line written, so a run that logs nothing leaves no file.
//! Lines read `[LEVEL] MODULE(pid,process):yyyy-mm-dd-hh:mm:ss.mmm.uuu [file:line]text` (UTC),
//! `MODULE` being `ASCENDCL` for the ACL layer and `DRV` for the backends.
//!
//! # Cost
//!
//! With the API trace off (level 1 and above) a call pays one `Once` check and one of
//! `tracing`'s level checks (atomic loads), once at its start: no allocation, no formatting, no
//! system call.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Once, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::level_filters::LevelFilter;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

/// The `tracing` target of the per-call lines (API trace and failures).
pub const API_TARGET: &str = "ascendcl::api";

/// Where the lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    /// Standard output (`ASCEND_SLOG_PRINT_TO_STDOUT=1`).
    Stdout,
    /// A `plog` file created in this directory on the first line.
    Dir(PathBuf),
}

/// The log settings of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The most verbose level written; `OFF` writes nothing.
    pub level: LevelFilter,
    /// Where the lines go.
    pub sink: Sink,
    /// Problems with the variables themselves, logged once the subscriber is installed.
    pub problems: Vec<String>,
}

impl Settings {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads the settings through `get` (a stand-in for the environment, for tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let mut problems = Vec::new();
        let level = match get("ASCEND_GLOBAL_LOG_LEVEL").as_deref().map(str::trim) {
            None | Some("") => LevelFilter::ERROR,
            Some("0") => LevelFilter::DEBUG,
            Some("1") => LevelFilter::INFO,
            Some("2") => LevelFilter::WARN,
            Some("3") => LevelFilter::ERROR,
            Some("4") => LevelFilter::OFF,
            Some(other) => {
                problems.push(format!(
                    "ASCEND_GLOBAL_LOG_LEVEL={other:?}: expected 0 (debug), 1 (info), 2 (warning), 3 (error) \
                     or 4 (off); using 3"
                ));
                LevelFilter::ERROR
            }
        };
        let stdout = match get("ASCEND_SLOG_PRINT_TO_STDOUT").as_deref().map(str::trim) {
            None | Some("") | Some("0") => false,
            Some("1") => true,
            Some(other) => {
                problems.push(format!(
                    "ASCEND_SLOG_PRINT_TO_STDOUT={other:?}: expected 0 (log file) or 1 (stdout); using 0"
                ));
                false
            }
        };
        let sink = if stdout { Sink::Stdout } else { Sink::Dir(log_root(&get).join("debug").join("plog")) };
        Self { level, sink, problems }
    }
}

/// CANN's log root: `ASCEND_PROCESS_LOG_PATH`, else `$ASCEND_WORK_PATH/log`, else
/// `$HOME/ascend/log` (the working directory's `ascend/log` without a home).
fn log_root(get: &impl Fn(&str) -> Option<String>) -> PathBuf {
    let set = |k: &str| get(k).filter(|v| !v.trim().is_empty());
    if let Some(p) = set("ASCEND_PROCESS_LOG_PATH") {
        return PathBuf::from(p);
    }
    if let Some(p) = set("ASCEND_WORK_PATH") {
        return Path::new(&p).join("log");
    }
    set("HOME").map(PathBuf::from).unwrap_or_default().join("ascend").join("log")
}

static INIT: Once = Once::new();

/// Installs the log on the first call of the process; later calls cost one atomic load.
#[inline]
pub fn init() {
    INIT.call_once(|| install(Settings::from_env()));
}

fn install(settings: Settings) {
    if settings.level == LevelFilter::OFF {
        return;
    }
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(settings.level)
        .event_format(CannFormat { process: process_name() })
        .with_writer(SinkWriter::new(settings.sink))
        .finish();
    // A host program that installed its own subscriber keeps it; the lines then go there.
    if tracing::subscriber::set_global_default(subscriber).is_ok() {
        for p in &settings.problems {
            tracing::error!(target: "ascendcl::log", "{p}");
        }
    }
}

fn process_name() -> String {
    std::fs::read_to_string("/proc/self/comm")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Whether the per-call API trace (DEBUG) is on. Installs the log first. Off, it costs the
/// `Once` check and `tracing`'s level check (two atomic loads).
#[inline]
pub fn api_trace_enabled() -> bool {
    init();
    tracing::enabled!(target: API_TARGET, Level::DEBUG)
}

thread_local! {
    /// The arguments of the C call in progress on this thread, recorded by `trace_args!`
    /// while the API trace is on.
    /// The flag says whether the current call recorded them; the buffer is kept between calls.
    static ARGS: RefCell<(bool, String)> = const { RefCell::new((false, String::new())) };
}

/// One argument of a C call, as the API trace prints it: integers in decimal, pointers in hex.
pub trait TraceArg {
    /// Writes the value.
    fn trace(&self, out: &mut String);
}

macro_rules! trace_display {
    ($($t:ty),*) => {$(
        impl TraceArg for $t {
            fn trace(&self, out: &mut String) {
                let _ = write!(out, "{self}");
            }
        }
    )*};
}
trace_display!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, bool, f32, f64);

impl<T: ?Sized> TraceArg for *const T {
    fn trace(&self, out: &mut String) {
        let _ = write!(out, "{:p}", self.cast::<()>());
    }
}

impl<T: ?Sized> TraceArg for *mut T {
    fn trace(&self, out: &mut String) {
        let _ = write!(out, "{:p}", self.cast::<()>());
    }
}

impl<T: TraceArg> TraceArg for Option<T> {
    fn trace(&self, out: &mut String) {
        match self {
            Some(v) => v.trace(out),
            None => out.push_str("none"),
        }
    }
}

impl<T: TraceArg, const N: usize> TraceArg for [T; N] {
    fn trace(&self, out: &mut String) {
        out.push('[');
        for (i, v) in self.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            v.trace(out);
        }
        out.push(']');
    }
}

macro_rules! trace_fn_ptr {
    ($($args:ty),*) => {
        impl TraceArg for unsafe extern "C" fn($($args),*) {
            fn trace(&self, out: &mut String) {
                let _ = write!(out, "{:p}", *self as *const ());
            }
        }
    };
}
trace_fn_ptr!(*mut std::ffi::c_void);

/// Records the arguments of the C call in progress (only while the API trace is on).
pub fn set_args(args: &[(&str, &dyn TraceArg)]) {
    ARGS.with(|a| {
        let (recorded, out) = &mut *a.borrow_mut();
        *recorded = true;
        out.clear();
        for (i, (name, value)) in args.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(name);
            out.push('=');
            value.trace(out);
        }
    });
}

/// Records the arguments of the export it stands in, for the DEBUG line its `guard` writes, and
/// says whether the API trace is on (installing the log first, [`api_trace_enabled`]): `let
/// trace = trace_args!(dev_ptr, size, policy);` before the `guard(API, trace, ...)` call. Formats
/// nothing unless the API trace is on. A body may use it again (as a statement) to show other
/// arguments. (Textually scoped: `lib.rs` declares this module first.)
macro_rules! trace_args {
    ($($name:ident),* $(,)?) => {{
        let on = $crate::log::api_trace_enabled();
        if on {
            $crate::log::set_args(&[$((stringify!($name), &$name as &dyn $crate::log::TraceArg)),*]);
        }
        on
    }};
}

/// Logs the end of a C call: at DEBUG `api(args) = code`, the API trace. Called only while the
/// API trace is on (the `trace` that `trace_args!` returned at the call's start).
#[cold]
#[inline(never)]
pub fn api_return(api: &str, code: i32) {
    ARGS.with(|a| {
        let (recorded, args) = &mut *a.borrow_mut();
        // An export without `trace_args!` shows `?` for its arguments.
        let shown = if *recorded { args.as_str() } else { "?" };
        tracing::debug!(target: API_TARGET, "{api}({shown}) = {code}");
        *recorded = false;
    });
}

/// Logs a failed C call at ERROR with its code and message (the message names the call).
pub fn api_error(code: i32, message: &str) {
    tracing::error!(target: API_TARGET, "error code {code}: {message}");
}

/// The file or stdout behind the subscriber. The file is created on the first line.
#[derive(Debug)]
struct SinkWriter {
    sink: Sink,
    file: OnceLock<Option<File>>,
}

impl SinkWriter {
    fn new(sink: Sink) -> Self {
        Self { sink, file: OnceLock::new() }
    }

    fn file(&self, dir: &Path) -> Option<&File> {
        self.file
            .get_or_init(|| {
                let path = dir.join(plog_name(std::process::id(), SystemTime::now()));
                let opened = std::fs::create_dir_all(dir)
                    .and_then(|()| std::fs::OpenOptions::new().create(true).append(true).open(&path));
                match opened {
                    Ok(f) => Some(f),
                    Err(e) => {
                        eprintln!("libascendcl: cannot create the log file {}: {e}", path.display());
                        None
                    }
                }
            })
            .as_ref()
    }
}

/// `plog-<pid>_<yyyymmddhhmmssmmm>.log`, CANN's name of a process's host log.
pub fn plog_name(pid: u32, at: SystemTime) -> String {
    let t = Utc::of(at);
    format!(
        "plog-{pid}_{:04}{:02}{:02}{:02}{:02}{:02}{:03}.log",
        t.year,
        t.month,
        t.day,
        t.hour,
        t.min,
        t.sec,
        t.micros / 1000
    )
}

/// One write handle per line.
#[derive(Debug)]
struct LineWriter<'a>(&'a SinkWriter);

impl Write for LineWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &self.0.sink {
            Sink::Stdout => io::stdout().write(buf),
            // A line that cannot be written is dropped: the log never fails the program.
            Sink::Dir(dir) => match self.0.file(dir) {
                Some(mut f) => f.write(buf).or(Ok(buf.len())),
                None => Ok(buf.len()),
            },
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &self.0.sink {
            Sink::Stdout => io::stdout().flush(),
            Sink::Dir(_) => Ok(()),
        }
    }
}

impl<'a> MakeWriter<'a> for SinkWriter {
    type Writer = LineWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter(self)
    }
}

/// A UTC calendar time.
struct Utc {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    min: u32,
    sec: u32,
    micros: u32,
}

impl Utc {
    fn of(at: SystemTime) -> Self {
        let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = since.as_secs();
        // CAST: days since 1970 fit in i64 for any SystemTime.
        let days = (secs / 86_400) as i64;
        let rem = secs % 86_400;
        // Civil date from days since 1970-01-01 (proleptic Gregorian).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        // CAST: each field is within its calendar range.
        Self {
            year,
            month: month as u32,
            day: day as u32,
            hour: (rem / 3600) as u32,
            min: (rem / 60 % 60) as u32,
            sec: (rem % 60) as u32,
            micros: since.subsec_micros(),
        }
    }
}

/// CANN's line: `[LEVEL] MODULE(pid,process):yyyy-mm-dd-hh:mm:ss.mmm.uuu [file:line]text`.
struct CannFormat {
    process: String,
}

impl<S, N> FormatEvent<S, N> for CannFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        let level = match *meta.level() {
            Level::ERROR => "ERROR",
            Level::WARN => "WARNING",
            Level::INFO => "INFO",
            _ => "DEBUG",
        };
        let module = if meta.target().starts_with("hal") { "DRV" } else { "ASCENDCL" };
        let t = Utc::of(SystemTime::now());
        let file = meta.file().map(|f| f.rsplit('/').next().unwrap_or(f)).unwrap_or("?");
        write!(
            w,
            "[{level}] {module}({},{}):{:04}-{:02}-{:02}-{:02}:{:02}:{:02}.{:03}.{:03} [{file}:{}]",
            std::process::id(),
            self.process,
            t.year,
            t.month,
            t.day,
            t.hour,
            t.min,
            t.sec,
            t.micros / 1000,
            t.micros % 1000,
            meta.line().unwrap_or(0)
        )?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::time::Duration;

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        let map: HashMap<String, String> =
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn levels_follow_cann() {
        assert_eq!(settings(&[]).level, LevelFilter::ERROR);
        let want =
            [LevelFilter::DEBUG, LevelFilter::INFO, LevelFilter::WARN, LevelFilter::ERROR, LevelFilter::OFF];
        for (n, want) in want.into_iter().enumerate() {
            let s = settings(&[("ASCEND_GLOBAL_LOG_LEVEL", &n.to_string())]);
            assert_eq!(s.level, want, "level {n}");
            assert!(s.problems.is_empty());
        }
        let bad = settings(&[("ASCEND_GLOBAL_LOG_LEVEL", "7")]);
        assert_eq!(bad.level, LevelFilter::ERROR);
        assert!(bad.problems[0].contains("ASCEND_GLOBAL_LOG_LEVEL=\"7\""), "{:?}", bad.problems);
    }

    #[test]
    fn sink_follows_cann() {
        assert_eq!(settings(&[("HOME", "/h")]).sink, Sink::Dir(PathBuf::from("/h/ascend/log/debug/plog")));
        assert_eq!(
            settings(&[("HOME", "/h"), ("ASCEND_WORK_PATH", "/w")]).sink,
            Sink::Dir(PathBuf::from("/w/log/debug/plog"))
        );
        assert_eq!(
            settings(&[("HOME", "/h"), ("ASCEND_WORK_PATH", "/w"), ("ASCEND_PROCESS_LOG_PATH", "/p")]).sink,
            Sink::Dir(PathBuf::from("/p/debug/plog"))
        );
        assert_eq!(settings(&[("ASCEND_SLOG_PRINT_TO_STDOUT", "1")]).sink, Sink::Stdout);
        let bad = settings(&[("HOME", "/h"), ("ASCEND_SLOG_PRINT_TO_STDOUT", "yes")]);
        assert_eq!(bad.sink, Sink::Dir(PathBuf::from("/h/ascend/log/debug/plog")));
        assert!(bad.problems[0].contains("ASCEND_SLOG_PRINT_TO_STDOUT"), "{:?}", bad.problems);
    }

    #[test]
    fn plog_names_carry_pid_and_utc_time() {
        // 2021-10-17 05:54:07.599 UTC.
        let at = UNIX_EPOCH + Duration::from_millis(1_634_450_047_599);
        assert_eq!(plog_name(12940, at), "plog-12940_20211017055407599.log");
        assert_eq!(plog_name(1, UNIX_EPOCH), "plog-1_19700101000000000.log");
        // A leap day.
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(plog_name(2, leap), "plog-2_20000229000000000.log");
    }

    #[test]
    fn arguments_print_as_the_trace_shows_them() {
        let p = 0x1000usize as *mut u8;
        let none: Option<*mut usize> = None;
        set_args(&[("devPtr", &p), ("size", &64usize), ("flag", &none), ("ids", &[1u32, 2])]);
        let got = ARGS.with(|a| a.borrow().clone());
        assert_eq!(got, (true, "devPtr=0x1000, size=64, flag=none, ids=[1, 2]".to_owned()));
    }
}
