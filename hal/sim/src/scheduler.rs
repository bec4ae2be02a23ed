//! The task-scheduler thread of one device: it runs `sched`'s executor over the device's
//! queues, and the DMA engine for each copy or memset task.
//!
//! It owns the thread and the executor's lock; it must not decide memory layout.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hal::{Error, ErrorKind, QueueId, Result, TaskDesc, TaskStatus};
use sched::{Executor, StreamId};

use crate::Fabric;

/// The most queues (streams) one device runs, as on the real task scheduler.
pub(crate) const MAX_QUEUES: usize = 2048;

#[derive(Debug)]
struct State {
    exec: Executor<TaskDesc>,
    stop: bool,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Signalled when work is submitted or the thread must stop.
    work: Condvar,
    /// Signalled when a task finishes.
    done: Condvar,
}

/// A device's task scheduler: its executor and the thread that drains it.
#[derive(Debug)]
pub(crate) struct Scheduler {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

fn sched_err(e: sched::Error) -> Error {
    match e {
        sched::Error::NoSuchStream => Error::new(ErrorKind::InvalidHandle, "unknown queue"),
        sched::Error::TooManyStreams => Error::new(ErrorKind::OutOfMemory, "no queue left on the device"),
        sched::Error::Full => Error::new(ErrorKind::QueueFull, "queue full"),
        _ => Error::new(ErrorKind::InvalidArgument, "bad queue request"),
    }
}

impl Scheduler {
    /// Starts the scheduler thread of device `index`.
    pub(crate) fn start(index: u32, fabric: Weak<Fabric>) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State { exec: Executor::new(MAX_QUEUES), stop: false }),
            work: Condvar::new(),
            done: Condvar::new(),
        });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("aclrs-sim-ts{index}"))
            .spawn(move || run(&worker, &fabric))?;
        Ok(Self { shared, thread: Mutex::new(Some(thread)) })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn create_queue(&self, depth: u32) -> Result<QueueId> {
        let depth = usize::try_from(depth.max(1)).unwrap_or(usize::MAX);
        let id = self.lock().exec.create_stream(depth).map_err(sched_err)?;
        Ok(QueueId(id.0))
    }

    pub(crate) fn destroy_queue(&self, q: QueueId) -> Result<()> {
        self.wait_idle_queue(q, None)?;
        self.lock().exec.destroy_stream(StreamId(q.0)).map_err(sched_err)
    }

    pub(crate) fn submit(&self, q: QueueId, task: TaskDesc) -> Result<u64> {
        let mut st = self.lock();
        loop {
            match st.exec.submit(StreamId(q.0), task) {
                Ok(seq) => {
                    self.shared.work.notify_one();
                    return Ok(seq);
                }
                // Back-pressure: wait for the device to finish something, then retry.
                Err(sched::Error::Full) => {
                    st = self.shared.done.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                Err(e) => return Err(sched_err(e)),
            }
        }
    }

    pub(crate) fn completed(&self, q: QueueId) -> Result<(u64, TaskStatus)> {
        let mut st = self.lock();
        let seq = st.exec.completed_seq(StreamId(q.0)).map_err(sched_err)?;
        let status = match st.exec.take_error(StreamId(q.0)).map_err(sched_err)? {
            Some(kind) => TaskStatus::Failed(kind),
            None => TaskStatus::Ok,
        };
        Ok((seq, status))
    }

    pub(crate) fn wait(&self, q: QueueId, seq: u64, timeout_ms: Option<u32>) -> Result<()> {
        let deadline = timeout_ms.map(|ms| Instant::now() + Duration::from_millis(u64::from(ms)));
        let mut st = self.lock();
        loop {
            if st.exec.completed_seq(StreamId(q.0)).map_err(sched_err)? >= seq {
                return Ok(());
            }
            st = match deadline {
                None => self.shared.done.wait(st).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(Error::new(
                            ErrorKind::Timeout,
                            "queue did not reach the sequence in time",
                        ));
                    }
                    self.shared.done.wait_timeout(st, d - now).unwrap_or_else(|p| p.into_inner()).0
                }
            };
        }
    }

    fn wait_idle_queue(&self, q: QueueId, timeout_ms: Option<u32>) -> Result<()> {
        let last = self.lock().exec.submitted_seq(StreamId(q.0)).map_err(sched_err)?;
        self.wait(q, last, timeout_ms)
    }

    /// Waits for every queue to drain, then stops and joins the thread.
    pub(crate) fn stop(&self) {
        {
            let mut st = self.lock();
            while !st.exec.is_idle() {
                st = self.shared.done.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            st.stop = true;
        }
        self.shared.work.notify_all();
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

/// The scheduler thread's loop: take the next ready task, run it without the lock, finish it.
fn run(shared: &Shared, fabric: &Weak<Fabric>) {
    let mut st = shared.state.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if let Some((stream, seq, task)) = st.exec.take_ready() {
            drop(st);
            let status = match fabric.upgrade() {
                Some(f) => match f.execute(&task) {
                    Ok(()) => TaskStatus::Ok,
                    Err(e) => TaskStatus::Failed(e.kind()),
                },
                None => TaskStatus::Failed(ErrorKind::NoDevice),
            };
            st = shared.state.lock().unwrap_or_else(|p| p.into_inner());
            // The stream cannot vanish while a task of it runs: destroy waits for idle.
            let _ = st.exec.finish(stream, seq, status);
            shared.done.notify_all();
            continue;
        }
        if st.stop {
            return;
        }
        st = shared.work.wait(st).unwrap_or_else(|p| p.into_inner());
    }
}
