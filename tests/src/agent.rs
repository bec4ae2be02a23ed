//! A process of one of the line-protocol C agents (`tests/c/*_agent.c`) driven from a test: one
//! command per line on its standard input, one answer per line on its standard output, every
//! answer bounded by a timeout (a test fails, it never hangs CI), and the child killed and reaped
//! when the value is dropped. The tests that share a software NPU between real processes
//! (`ipc`, `sim_memory`, `observability`) all drive their agents through this one type.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// One running agent.
#[derive(Debug)]
pub struct Agent {
    /// The name the test gave it (in every failure message and in the command log).
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    answer: Duration,
}

/// A command that runs `exe` (prefixed by `wrapper`, for example `unshare --pid --fork`) on the
/// simulated machine `instance` with a small device (1 GiB of HBM, 512 MiB of 2 MiB pages, no
/// 1 GiB pages) and none of the caller's device-selection settings; the log goes to a private
/// folder. The backend is left as the caller's environment has it: set or remove
/// `ACLRS_BACKEND` on the result.
pub fn command(exe: &Path, wrapper: &[&str], instance: &str) -> Command {
    let mut cmd = match wrapper.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    crate::quiet_log(&mut cmd);
    cmd.env("ACLRS_SIM_INSTANCE", instance)
        .env("ACLRS_SIM_HBM", "1G")
        .env("ACLRS_SIM_HUGE2M", "512M")
        .env("ACLRS_SIM_HUGE1G", "0")
        .env_remove("ASCEND_RT_VISIBLE_DEVICES")
        .env_remove("ACLRS_SIM_DEVICES")
        .env_remove("ACLRS_SIM_SOC");
    cmd
}

impl Agent {
    /// Starts `cmd` and waits for its `ready` line; each later answer may take `answer`.
    ///
    /// # Panics
    ///
    /// When the agent cannot start or does not say `ready` in time.
    pub fn spawn(mut cmd: Command, name: &str, answer: Duration) -> Self {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: cannot start the agent: {e}"));
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(std::result::Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut a = Self { name: name.to_owned(), child, stdin, lines: rx, answer };
        let first = a.read();
        assert_eq!(first, "ready", "{name} did not start");
        a
    }

    /// The agent's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The next line the agent printed.
    ///
    /// # Panics
    ///
    /// When no line comes within the answer timeout (or the agent died).
    pub fn read(&mut self) -> String {
        match self.lines.recv_timeout(self.answer) {
            Ok(l) => l,
            Err(e) => panic!("{}: no answer within {:?} ({e})", self.name, self.answer),
        }
    }

    /// Sends one command line without waiting for an answer.
    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open until quit");
        writeln!(stdin, "{line}").expect("write command");
        stdin.flush().expect("flush");
    }

    /// Sends one command and returns its answer (both logged on standard error).
    pub fn cmd(&mut self, line: &str) -> String {
        self.send(line);
        let answer = self.read();
        eprintln!("{} <- {line:<40} -> {answer}", self.name);
        answer
    }

    /// Sends one command whose answer must start with `prefix`, and returns the rest.
    ///
    /// # Panics
    ///
    /// When the answer does not start with `prefix`.
    pub fn expect(&mut self, line: &str, prefix: &str) -> String {
        let a = self.cmd(line);
        match a.strip_prefix(prefix) {
            Some(rest) => rest.to_owned(),
            None => panic!("{}: {line}: expected '{prefix}…', got '{a}'", self.name),
        }
    }

    /// Sends `quit` and waits (bounded) for the agent to exit successfully.
    ///
    /// # Panics
    ///
    /// When the agent exits with a failure or does not exit in time.
    pub fn quit(mut self) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = writeln!(stdin, "quit");
            let _ = stdin.flush();
        }
        drop(self.stdin.take());
        let deadline = Instant::now() + self.answer;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(status.success(), "{} exited with {status}", self.name);
                return;
            }
            assert!(Instant::now() < deadline, "{} did not exit", self.name);
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the agent with `SIGKILL` and reaps it.
    pub fn kill9(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
