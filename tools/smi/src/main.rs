//! `aclrs-smi`: what `npu-smi info` shows for a real Ascend machine, for a running software NPU
//! machine — its devices (SoC, HBM, 2 MiB and 1 GiB page budgets) and the processes attached
//! to it (memory, stream-ordered pools, IPC shares).
//!
//! It owns only the presentation (the table and the JSON). The figures come from one read of
//! the machine's shared registry through [`hal_sim::registry::view::inspect`], which never
//! attaches to the machine and holds the registry mutex only for that read, so it is safe to
//! run while processes come, go or are killed.

use std::io::Write as _;
use std::time::Duration;

use clap::{Parser, Subcommand};
use hal_sim::registry::view::{inspect, MachineView};
use serde::Serialize;

/// Command line of `aclrs-smi`.
#[derive(Debug, Parser)]
#[command(
    name = "aclrs-smi",
    version,
    about = "Devices and processes of a running aclrs software NPU machine"
)]
struct Cli {
    /// The machine to read (default: $ACLRS_SIM_INSTANCE, or `default`).
    #[arg(long, global = true)]
    instance: Option<String>,
    /// Print JSON instead of the table (one object per refresh with --loop).
    #[arg(long, global = true)]
    json: bool,
    /// Refresh every SECONDS until interrupted.
    #[arg(short = 'l', long = "loop", value_name = "SECONDS", global = true)]
    refresh: Option<f64>,
    /// With --loop: stop after this many refreshes.
    #[arg(long, value_name = "N", global = true)]
    count: Option<u64>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Devices and processes (the default).
    Info,
}

#[derive(Debug, Serialize)]
struct DeviceJson {
    device: u32,
    soc: String,
    up: bool,
    hbm_used_bytes: u64,
    hbm_total_bytes: u64,
    huge_used_bytes: u64,
    huge_total_bytes: u64,
    giant_used_bytes: u64,
    giant_total_bytes: u64,
}

#[derive(Debug, Serialize)]
struct ProcessDeviceJson {
    device: u32,
    used_bytes: u64,
    imported_bytes: u64,
    pool_reserved_bytes: u64,
    pool_used_bytes: u64,
}

#[derive(Debug, Serialize)]
struct ProcessJson {
    pid: u32,
    alive: bool,
    name: String,
    soc: Option<String>,
    exports: u32,
    imports: u32,
    devices: Vec<ProcessDeviceJson>,
}

#[derive(Debug, Serialize)]
struct MachineJson {
    instance: String,
    running: bool,
    devices: Vec<DeviceJson>,
    processes: Vec<ProcessJson>,
}

fn process_name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map_or_else(|_| "-".to_owned(), |s| s.trim().to_owned())
}

fn to_json(instance: &str, m: Option<&MachineView>) -> MachineJson {
    let Some(m) = m else {
        return MachineJson {
            instance: instance.to_owned(),
            running: false,
            devices: Vec::new(),
            processes: Vec::new(),
        };
    };
    let soc = m
        .processes
        .iter()
        .filter(|p| p.alive)
        .find_map(|p| p.soc)
        .map_or_else(|| "unknown".to_owned(), |s| s.soc_name().to_owned());
    MachineJson {
        instance: m.instance.clone(),
        running: true,
        devices: m
            .device_views
            .iter()
            .map(|d| DeviceJson {
                device: d.device,
                soc: soc.clone(),
                up: d.up,
                hbm_used_bytes: d.used_bytes,
                hbm_total_bytes: m.hbm_bytes,
                huge_used_bytes: d.huge_used_bytes,
                huge_total_bytes: m.huge_budget_bytes,
                giant_used_bytes: d.giant_used_bytes,
                giant_total_bytes: m.giant_budget_bytes,
            })
            .collect(),
        processes: m
            .processes
            .iter()
            .map(|p| ProcessJson {
                pid: p.pid,
                alive: p.alive,
                name: if p.alive { process_name(p.pid) } else { "-".to_owned() },
                soc: p.soc.map(|s| s.soc_name().to_owned()),
                exports: p.exports,
                imports: p.imports,
                devices: p
                    .devices
                    .iter()
                    .map(|d| ProcessDeviceJson {
                        device: d.device,
                        used_bytes: d.used_bytes,
                        imported_bytes: d.imported_bytes,
                        pool_reserved_bytes: d.pool_reserved_bytes,
                        pool_used_bytes: d.pool_used_bytes,
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn mb(bytes: u64) -> u64 {
    bytes.div_ceil(1 << 20)
}

const RULE: &str =
    "+---------------------------+---------------+----------------------------------------------------+";
const DOUBLE: &str =
    "+===========================+===============+====================================================+";

fn table(m: &MachineJson) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    let version = env!("CARGO_PKG_VERSION");
    line(
        "+------------------------------------------------------------------------------------------------+"
            .into(),
    );
    let title = format!("aclrs-smi {version}   Machine: {}   (aclrs software NPU)", m.instance);
    line(format!("| {title:<94} |"));
    if !m.running {
        line("+------------------------------------------------------------------------------------------------+".into());
        let text = format!("No machine named {} is running (no attached process)", m.instance);
        line(format!("| {text:<94} |"));
        line("+------------------------------------------------------------------------------------------------+".into());
        return out;
    }
    line(RULE.into());
    line(format!(
        "| {:<25} | {:<13} | {:<50} |",
        "NPU   Name", "Health", "Huge2M-Usage(MB)       Huge1G-Usage(MB)"
    ));
    line(format!("| {:<25} | {:<13} | {:<50} |", "Chip", "Bus-Id", "HBM-Usage(MB)"));
    line(DOUBLE.into());
    for d in &m.devices {
        let health = if d.up { "OK" } else { "Not used" };
        let huge = format!("{} / {}", mb(d.huge_used_bytes), mb(d.huge_total_bytes));
        let giant = format!("{} / {}", mb(d.giant_used_bytes), mb(d.giant_total_bytes));
        line(format!(
            "| {:<25} | {:<13} | {:<50} |",
            format!("{:<5} {}", d.device, d.soc),
            health,
            format!("{huge:<22} {giant}")
        ));
        let hbm = format!("{} / {}", mb(d.hbm_used_bytes), mb(d.hbm_total_bytes));
        line(format!("| {:<25} | {:<13} | {hbm:<50} |", 0, format!("sim:{}", d.device)));
        line(DOUBLE.into());
    }
    line(RULE.into());
    line(format!(
        "| {:<25} | {:<13} | {:<50} |",
        "NPU     Chip",
        "Process id",
        format!("{:<12} {:<9} {:<14} {}", "Process name", "Mem(MB)", "Pool(MB) r/u", "IPC exp/imp")
    ));
    line(DOUBLE.into());
    for d in &m.devices {
        let mut any = false;
        for p in &m.processes {
            for pd in p.devices.iter().filter(|pd| pd.device == d.device) {
                any = true;
                let name = if p.alive { p.name.clone() } else { "(dead)".to_owned() };
                let mem = if pd.imported_bytes > 0 {
                    format!("{}+{}i", mb(pd.used_bytes), mb(pd.imported_bytes))
                } else {
                    mb(pd.used_bytes).to_string()
                };
                let pools = format!("{} / {}", mb(pd.pool_reserved_bytes), mb(pd.pool_used_bytes));
                let ipc = format!("{} / {}", p.exports, p.imports);
                let name: String = name.chars().take(12).collect();
                line(format!(
                    "| {:<25} | {:<13} | {:<50} |",
                    format!("{:<7} 0", d.device),
                    p.pid,
                    format!("{name:<12} {mem:<9} {pools:<14} {ipc}")
                ));
            }
        }
        if !any {
            let text = format!("No running processes found in NPU {}", d.device);
            line(format!("| {text:<94} |"));
        }
        line(DOUBLE.into());
    }
    let idle: Vec<String> =
        m.processes.iter().filter(|p| p.devices.is_empty()).map(|p| p.pid.to_string()).collect();
    if !idle.is_empty() {
        let text = format!("Attached, holding no device memory: {}", idle.join(", "));
        line(format!("| {text:<94} |"));
        line(RULE.into());
    }
    out
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let Command::Info = cli.command.unwrap_or(Command::Info);
    let given = cli.instance.or_else(|| std::env::var("ACLRS_SIM_INSTANCE").ok().filter(|s| !s.is_empty()));
    // The same rules as the runtime's ACLRS_SIM_INSTANCE (the name is part of a file name).
    let instance = match hal_sim::SimConfig::from_lookup(|k| {
        (k == "ACLRS_SIM_INSTANCE").then(|| given.clone()).flatten()
    }) {
        Ok(c) => c.instance,
        Err(e) => {
            eprintln!("aclrs-smi: --instance {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if let Some(s) = cli.refresh {
        if !(s.is_finite() && s > 0.0) {
            eprintln!("aclrs-smi: --loop {s}: expected a positive number of seconds");
            return std::process::ExitCode::from(2);
        }
    }
    let mut done = 0u64;
    loop {
        let view = match inspect(&instance) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("aclrs-smi: cannot read machine {instance:?}: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        let m = to_json(&instance, view.as_ref());
        let text = if cli.json {
            match serde_json::to_string(&m) {
                Ok(t) => t + "\n",
                Err(e) => {
                    eprintln!("aclrs-smi: {e}");
                    return std::process::ExitCode::FAILURE;
                }
            }
        } else {
            table(&m)
        };
        let mut stdout = std::io::stdout().lock();
        if stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()).is_err() {
            // The reader went away (a closed pipe): nothing more to show.
            return std::process::ExitCode::SUCCESS;
        }
        drop(stdout);
        done += 1;
        let Some(secs) = cli.refresh else { break };
        if cli.count.is_some_and(|n| done >= n) {
            break;
        }
        std::thread::sleep(Duration::from_secs_f64(secs));
        if !cli.json {
            println!();
        }
    }
    std::process::ExitCode::SUCCESS
}
