//! The task scheduler of one device: per-queue submission lanes, `sched`'s executor behind a
//! mutex, and the threads that drain them.
//!
//! It owns the executor's lock, the queues' [lanes](crate::lane), the device's inbox of posted
//! lanes, the worker threads, the tickets of work too large for a task descriptor (kernel
//! arguments, batch-copy entries) and the device's event clock. It must not decide memory
//! layout, and it never holds its lock while a task runs.
//!
//! # Submission
//!
//! A plain task (no ticket) takes no device-wide lock: the submitter takes its queue's submit lock
//! (one submitter of a queue at a time), publishes the encoded descriptor in the queue's
//! [`sched::Ring`] and sets the lane's posted mark, which is kept under that lock
//! ([`Producer::posted`](crate::lane::Producer::posted)). While a worker owns the lane (it took the
//! lane's post, and the queue has something unfinished or is one of the few idle lanes kept while a
//! worker is awake, [`KEEP_IDLE`]) that is all: the submitter writes the descriptor's slot and the
//! ring's tail, nothing a worker writes. Only a push that finds the lane given back posts it in the
//! device's [`Inbox`] (the protocol is [`sched::inbox`]'s). A post wakes anyone only when the queue
//! was idle (the completed word, read after the post, shows no earlier task unfinished: otherwise
//! the worker that finishes that task looks at the inbox afterwards). Then the submitter kicks the
//! work word (ending a spinner's spin), and takes the device lock to notify a parked worker only
//! when one is parked and none is looking or spinning on its core ([`Sleepers`]; a worker spinning
//! by yielding its core does not count: on a loaded machine it may wait long for a core, and the
//! launch with it), and only when a parked worker is not notified already ([`Idle::claim_wake`]).
//! Workers take posted lanes into the device's owned set and, on every look, move the owned lanes'
//! descriptors into the executor under the device lock (the rings' one consumer), in order, but
//! for the lanes of busy queues: such a lane waits for the look that follows its queue's
//! unfinished work, so that the looks of the other workers do not read the lines its submitter
//! writes ([`poll_lane`]); a lane
//! whose ring is empty and whose queue has nothing unfinished is kept while a worker is awake (at
//! most [`KEEP_IDLE`]; the spinner watches their rings) and given back before a worker parks: under
//! its submit lock, taken with a try-lock (the device lock is held), with the ring empty (else it
//! drains again; a lock held by a submitter makes the worker let go of the device lock and look
//! again). A worker looks after every finish and before it spins or parks, so an owned lane is
//! always looked at again once what it has unfinished finishes. A lane the executor has no room for
//! stays in a backlog until its queue finishes something. Items that need the executor at once
//! (event records and waits, cross-queue waits, ticketed tasks) take the queue's submit lock and
//! the device lock, move the lane's descriptors first, then queue the item, so a queue's sequence
//! numbers stay in submission order whichever path an item took. A queue's submitted and completed
//! sequences are words readable without any lock.
//!
//! # Threads
//!
//! [`WORKERS`] identical threads each loop: take the next ready task under the lock, with the
//! plain tasks queued behind it as a run ([`MAX_RUN`]), run them without the lock (copies and
//! fills on the DMA path, kernels on AI-core worker threads, host functions through the
//! runtime's hook), publishing each but the last as it finishes ([`Run`]), then finish the run
//! under the lock. The executor never
//! hands out two tasks of one stream at once, so each stream stays in order while different
//! streams run concurrently, as on the real task scheduler with several engines. A value-wait
//! task starts only once its word in memory satisfies it (a gate checked under the lock); while
//! any stream is refused by such a gate, idle workers re-check every [`POLL`].
//!
//! # Waking workers and waiters
//!
//! No futex call per task in steady state:
//!
//! The rules are [`sched::wake`]'s (model-checked there with loom):
//!
//! - A worker is *looking* in [`Sleepers`] while it is awake between tasks; it leaves that
//!   state (to run a task, spin or park) with a read-modify-write and then looks at the inbox
//!   once more, so a submitter that saw it looking and did not notify is covered.
//! - An idle worker first *spins* (at most one per device, counted in the state's `idle`)
//!   watching the work word, which every locked submission that may create work moves and a
//!   lane submitter kicks for an idle queue; only when the spin runs out does it *park* on its
//!   own `work` condition variable (counted in [`Sleepers`] and in the state's `idle`), after
//!   announcing itself and looking once more. A notification goes to the worker that parked
//!   last, whose caches are warm ([`Wake`]); which one is chosen never changes whether one is.
//! - A lane submitter notifies as said above; a locked submitter follows [`sched::wake`]'s
//!   `signal` under the lock, and leaves the wake-up to a looking worker when there is one.
//! - A locked submitter notifies a parked worker only when the executor's ready queue goes
//!   from empty to non-empty; a worker that takes a task while more streams are
//!   ready passes the wake-up on the same way. A ready queue that is already non-empty always
//!   has an awake worker on its way to it, so no wake-up is lost and none is wasted. Every such
//!   decision is taken under the lock, and a worker parks only right after finding nothing to
//!   take under that same lock.
//! - Host threads waiting for a queue's synchronisation first spin on the queue's
//!   [`Progress`](sched::Progress) word (published by the executor on every finish, read
//!   without any lock), then park on `done` (counted in `waiters`) with their target set on
//!   the lane ([`Lane::wake_me_at`]); a submitter out of room parks at once until half the
//!   depth is free ([`Lane::room_target`], a low watermark). A finishing worker notifies
//!   `done` only when its queue reached a parked waiter's target, or on every finish while a
//!   waiter without a target (stop, a locked submission's back-pressure) is parked.
//!
//! Lock order: a lane's submit lock, then the scheduler's `state` lock, which is a leaf (no
//! other lock is taken under it, and no task runs under it).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};

use arc_swap::ArcSwapOption;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hal::{
    AbortHead, Error, ErrorKind, EventId, EventInfo, EventWait, QueueId, QueueProgress, Result, TaskDesc,
    TaskStatus,
};
use sched::inbox::Inbox;
use sched::wake::{self, Idle, Parked, Sleepers, WorkWord};
use sched::{CachePadded, EventStatus, Executor, FailureMode, StreamId, StreamOrder, StreamPoint};

use crate::dma::{status_of, RunPin};
use crate::lane::{decode, encode, encode_fill, encode_host_fn, Lane};
use crate::sys::SpanCache;
use crate::Fabric;

/// The most queues (streams) one device runs, as on the real task scheduler (a power of two:
/// a queue's lane is at `id % MAX_QUEUES`, the executor's slot).
pub(crate) const MAX_QUEUES: usize = 2048;
/// Threads that run tasks, per device.
pub(crate) const WORKERS: usize = 4;
/// The most idle lanes (ring empty, queue with nothing unfinished) the workers keep owned
/// while one of them is awake, instead of giving them back at once. A submitter to a lane kept
/// posts nothing and wakes nobody, so a stream that a worker keeps up with costs its submitter
/// one push per task, not a post, a kick and the give-back's write on the ring's tail line.
/// The awake workers look after the idle lanes kept: the spinner watches their rings, a worker
/// that runs a task looks again when it finishes, and a worker gives every idle lane back
/// before it parks (whose give-back fails, and drains, when a push came first).
const KEEP_IDLE: usize = 4;
/// The most tasks of one stream a worker takes at once, as a *run*
/// ([`sched::Executor::take_run_if`]): it runs them in order without taking the device lock
/// between them, publishing each through the queue's lane ([`Lane::step`]) and taking
/// the lock again only when someone waits for one of them, and at the run's end. A run stops
/// before an internal item (event record, wait), a value wait, a ticketed task, and on a
/// stream that stops on failure.
const MAX_RUN: usize = 64;
/// How often idle workers re-check value waits.
const POLL: Duration = Duration::from_micros(200);
/// Rounds of a spin before a thread parks: the first [`SPIN_PAUSES`] pause the core, the rest
/// yield it (about 20–50 µs in all on an idle machine).
const SPIN_ROUNDS: u32 = 160;
/// Rounds of a spin that pause instead of yielding.
const SPIN_PAUSES: u32 = 96;

/// Spins until `done` holds (true) or the spin runs out (false): pauses, then yields.
fn spin_until(mut done: impl FnMut() -> bool) -> bool {
    spin_pausing(&mut done) || spin_yielding(&mut done)
}

/// The first part of [`spin_until`]: [`SPIN_PAUSES`] rounds that pause the core.
fn spin_pausing(done: &mut impl FnMut() -> bool) -> bool {
    for round in 0..SPIN_PAUSES {
        if done() {
            return true;
        }
        for _ in 0..(1u32 << (round / 16)) {
            std::hint::spin_loop();
        }
    }
    done()
}

/// The rest of [`spin_until`]: rounds that yield the core.
fn spin_yielding(done: &mut impl FnMut() -> bool) -> bool {
    for _ in SPIN_PAUSES..SPIN_ROUNDS {
        if done() {
            return true;
        }
        std::thread::yield_now();
    }
    done()
}

/// Work too large for a descriptor, named by a ticket.
#[derive(Debug)]
pub(crate) enum Ticket {
    /// A kernel launch's argument bytes.
    Args(Vec<u8>),
    /// A batch copy's (destination, source, length) entries.
    Batch(Vec<(u64, u64, u64)>),
}

/// The queue of a staged ticket: held for a task not submitted yet.
const STAGED: u32 = u32::MAX;

/// A ticket and the task that owns it.
#[derive(Debug)]
struct Held {
    queue: u32,
    seq: u64,
    ticket: Option<Ticket>,
}

#[derive(Debug)]
struct State {
    exec: Executor<TaskDesc>,
    stop: bool,
    /// The first device error code per queue since `completed` last reported it.
    faults: BTreeMap<u32, i32>,
    /// Tickets of submitted tasks, by ticket number.
    tickets: BTreeMap<u64, Held>,
    next_ticket: u64,
    /// Workers asleep on `work`, and the one spinning on [`Shared::work_word`].
    idle: Idle,
    /// The parked workers nobody chose to notify yet: a notification goes to the one that
    /// parked last (see [`Wake`]).
    parked: Parked<WORKERS>,
    /// Host threads asleep on `done`.
    waiters: usize,
    /// Those of `waiters` that wait for no particular completion (stop, a locked submission's
    /// back-pressure): every finish notifies `done` while there is one. The others set their
    /// queue's [`Lane::wake_me_at`], and a finish notifies only when it reaches that.
    blind: usize,
    /// Every live queue's lane, by slot (the workers' view; submitters use [`Shared::lanes`]).
    lanes: Vec<Option<Arc<Lane>>>,
    /// Lanes whose descriptors the executor had no room for, by slot.
    backlog: Vec<bool>,
    /// Lanes of queues an abort is dropping while it waits, without this lock, for the run
    /// under way to end (see [`Scheduler::abort_queue`]), by slot: nobody else moves their
    /// descriptors into the executor meanwhile, since they are to be dropped, not run.
    aborting: Vec<bool>,
    /// The lanes the workers own (taken from the inbox and not given back: posted, so their
    /// submitters post nothing), by slot index, and whether each slot is among them.
    owned: Vec<usize>,
    /// Whether each slot's lane is in `owned`.
    is_owned: Vec<bool>,
    /// Descriptors moved from lanes into the executor so far (a worker about to park learns
    /// from it whether giving its idle lanes back found work).
    drained: u64,
    /// Head tasks a forced abort started ([`Scheduler::abort_queue`] with [`AbortHead::Runs`]):
    /// taken for running by the executor, waiting for a worker to run them.
    started: Vec<(StreamId, u64, TaskDesc)>,
}

/// What a device's submitters and workers share. The words each side writes often sit on
/// lines of their own, apart from the words the other side only reads (the lane table read
/// on every submission is not on a line that workers write on every task).
#[derive(Debug)]
struct Shared {
    state: CachePadded<Mutex<State>>,
    /// Moved (under the lock) whenever work may have appeared; a spinning worker watches it.
    work_word: CachePadded<WorkWord>,
    /// One per worker, which parks on its own: signalled when work is submitted for it or the
    /// threads must stop.
    work: [Condvar; WORKERS],
    /// Signalled when a task finishes.
    done: Condvar,
    /// Every live queue's lane, by slot, for submitters (no lock).
    lanes: CachePadded<Box<[ArcSwapOption<Lane>]>>,
    /// The lanes submitters posted since a worker last looked.
    inbox: CachePadded<Inbox>,
    /// Parked workers and the spinner, as lane submitters see them.
    sleepers: CachePadded<Sleepers>,
    /// How the host runs the workers (see [`Cores`]).
    cores: Cores,
}

/// How the host runs the worker threads, so that a launch on an idle stream starts at once.
///
/// When a kernel wakes a thread it may queue it on the waker's own CPU (on a virtual machine it
/// does so whenever the thread's last CPU is an idle virtual CPU its host took away), and a
/// worker that spun before it parked has used its share: it then waits there for the waker's
/// slice to end (milliseconds), and nothing moves it to an idle CPU in that time on a machine
/// whose CPUs share no cache, while the waker (spinning on the result, or going on with its work)
/// keeps the CPU. A device's cores are not the host's, so the software NPU keeps a woken worker
/// from waiting behind its waker:
///
/// - Each worker asks for [`WORKER_SLICE_NS`] time slices (`sched_setattr`, Linux 6.12 on): a
///   woken worker's early deadline lets it preempt its waker at once, wherever it is queued.
/// - Where the kernel does not take custom slices, a waker instead restricts a parked worker it
///   wakes to the other CPUs the process may use. The restriction stays until a waker on another
///   CPU wakes the worker, so a launching thread that stays on its CPU makes no system call for
///   this: one `sched_setaffinity` only when a parked worker is woken from a CPU it may run on.
#[derive(Debug)]
struct Cores {
    /// The CPUs the device's creator could use (the workers' set), when there are several.
    all: Option<crate::sys::cpu::CpuSet>,
    workers: [CachePadded<WorkerCpu>; WORKERS],
}

/// A worker's time slice: the kernel's shortest (0.1 ms).
const WORKER_SLICE_NS: u64 = 100_000;

#[derive(Debug, Default)]
struct WorkerCpu {
    /// The worker's thread id (0 until it starts and once it stops).
    tid: AtomicI32,
    /// Whether its wakers steer it (the kernel did not take its slice).
    steered: AtomicBool,
    /// The one CPU of `all` it may not run on (`usize::MAX`: none).
    excluded: AtomicUsize,
}

impl Cores {
    fn new() -> Self {
        let all = crate::sys::cpu::CpuSet::of_current_thread().filter(|s| s.count() > 1);
        Self {
            all,
            workers: std::array::from_fn(|_| {
                CachePadded(WorkerCpu { excluded: AtomicUsize::new(usize::MAX), ..WorkerCpu::default() })
            }),
        }
    }

    /// Worker `w` starts on the calling thread: asks for its slice, and is steered without it.
    fn started(&self, w: usize) {
        self.start(w, !crate::sys::cpu::request_slice(WORKER_SLICE_NS));
    }

    /// Worker `w` runs on the calling thread, and its wakers steer it when `steered`.
    fn start(&self, w: usize, steered: bool) {
        self.workers[w].steered.store(steered, Ordering::Relaxed);
        // Release: a waker that reads the id reads the steering decision too.
        self.workers[w].tid.store(crate::sys::cpu::thread_id(), Ordering::Release);
    }

    /// Worker `w` stopped: no waker may steer its thread id (which the kernel may reuse).
    fn stopped(&self, w: usize) {
        self.workers[w].tid.store(0, Ordering::Relaxed);
    }

    /// About to wake parked worker `w`: restricts it to the CPUs but the calling thread's when
    /// it is steered and not restricted so already (best effort: a refusal leaves it as it was).
    /// Wakers of one worker are serialised by its claim (see [`Idle::claim_wake`]), so
    /// `excluded` has one writer at a time.
    fn steer_off_current_cpu(&self, w: usize) {
        let Some(all) = &self.all else { return };
        let worker = &self.workers[w];
        // Acquire: pairs with `started`.
        let tid = worker.tid.load(Ordering::Acquire);
        if tid == 0 || !worker.steered.load(Ordering::Relaxed) {
            return;
        }
        let Some(cpu) = crate::sys::cpu::current_cpu() else { return };
        if worker.excluded.load(Ordering::Relaxed) == cpu {
            return;
        }
        if let Some(rest) = all.without(cpu) {
            if rest.apply_to(tid) {
                worker.excluded.store(cpu, Ordering::Relaxed);
            }
        }
    }
}

/// A device's task scheduler: its executor and the threads that drain it.
#[derive(Debug)]
pub(crate) struct Scheduler {
    /// The device's index (what its workers' [`crate::fault::running`] answers).
    device: u32,
    shared: Arc<Shared>,
    /// The device's memory, for the gates of value waits.
    fabric: Weak<Fabric>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Submits the encoded plain task `words` (no ticket) through `lane`, the lane path of
    /// [`Scheduler::submit`] and of a [`Port`].
    fn submit_plain(&self, lane: &Lane, words: &crate::lane::Words) -> Result<u64> {
        let mut p = lane.producer();
        Lane::check_open(&p)?;
        // Back pressure: the queue's depth bounds its unfinished tasks, ring and executor
        // together (the ring alone could hold another `depth` behind a full executor).
        loop {
            if lane.has_room_for(&mut p) && lane.ring.try_push(words).is_ok() {
                break;
            }
            self.wait_for_room(lane, p.submitted());
        }
        let seq = p.submitted() + 1;
        lane.note_submitted(&mut p, seq);
        // Cleared only under this lock (`Producer::posted`).
        let must_post = !p.replace_posted(true);
        drop(p);
        if !must_post {
            // Posted already (a worker owns the lane): it drains this descriptor too.
            return Ok(seq);
        }
        self.inbox.post(lane.index);
        // Read after the post (a read-modify-write; see `Inbox::take`): a queue with an
        // earlier task unfinished needs no wake-up, since the worker that finishes that
        // task looks at the inbox afterwards and drains this post (or this read sees the
        // finish, and the queue counts as idle).
        if lane.progress.completed() + 1 >= seq {
            self.wake_for_idle_queue();
        }
        Ok(seq)
    }

    /// [`Scheduler::wake_if_newly_ready`]: signals the workers only when the ready queue just
    /// went from empty to non-empty.
    fn wake_if_newly_ready(&self, st: &mut State, had_ready: bool) {
        if !had_ready && st.exec.has_ready() {
            signal_work(self, st);
        }
    }

    /// An idle queue became busy: stops a spinning worker's spin, and wakes a parked one.
    fn wake_for_idle_queue(&self) {
        self.work_word.kick();
        if self.sleepers.should_notify() {
            // The lock orders this notify after a parking worker's last look (see
            // `Sleepers`); the notify itself comes after the unlock so the woken worker
            // does not block on the lock we hold.
            // Every parked worker notified already looks after this section (see
            // `Idle::claim_wake`), and sees the post.
            let wake = self.lock().claim_wake();
            wake.send(self);
        }
    }

    /// Waits until `lane`'s queue has half its depth free after `submitted` (its
    /// [`room_target`](Lane::room_target)), or something else woke waiters (an abort): parks
    /// on `done` with the target set, so that the workers notify once per half a depth of
    /// tasks. The submitter holds the lane's submit lock; the lane is posted (its descriptors
    /// reach the executor through the worker that finishes the queue's tasks).
    fn wait_for_room(&self, lane: &Lane, submitted: u64) {
        let target = lane.room_target(submitted);
        // No spin: half a depth of tasks takes longer than a spin lasts, and a spinning
        // submitter takes a core from the workers it waits for.
        // Lock order: the lane's submit lock (held), then state.
        let mut st = self.lock();
        // Under the lock this thread is the ring's consumer too: move what fits.
        let had_ready = st.exec.has_ready();
        drain_lane(&mut st, lane);
        self.wake_if_newly_ready(&mut st, had_ready);
        if lane.wake_me_at(target) {
            return;
        }
        st.waiters += 1;
        st = self.done.wait(st).unwrap_or_else(|p| p.into_inner());
        st.waiters -= 1;
    }
}

/// A queue's submission port ([`hal::Queues::port`]): its lane and the device's shared
/// scheduler state, so a submit finds neither the device nor the lane again. It keeps only
/// memory alive (no worker, no device window): a port of a destroyed queue finds its lane
/// closed.
#[derive(Debug)]
pub(crate) struct Port {
    shared: Arc<Shared>,
    lane: Arc<Lane>,
}

impl hal::QueuePort for Port {
    fn submit(&self, task: &TaskDesc) -> Result<u64> {
        if task.ticket().is_some() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "a task that names a staged ticket goes through Queues::submit",
            ));
        }
        self.shared.submit_plain(&self.lane, &encode(task))
    }

    fn submit_host_fn(&self, func: u64, data: u64) -> Result<u64> {
        self.shared.submit_plain(&self.lane, &encode_host_fn(func, data))
    }

    fn submit_fill(&self, dst: hal::DeviceAddr, value: u8, len_bytes: u64) -> Result<u64> {
        self.shared.submit_plain(&self.lane, &encode_fill(dst, value, len_bytes))
    }

    fn submitted(&self) -> u64 {
        self.lane.submitted()
    }
}

fn sched_err(e: sched::Error) -> Error {
    match e {
        sched::Error::NoSuchStream => Error::new(ErrorKind::InvalidHandle, "unknown queue"),
        sched::Error::NoSuchEvent => Error::new(ErrorKind::InvalidHandle, "unknown event"),
        sched::Error::TooManyStreams => {
            Error::new(ErrorKind::OutOfMemory, "no queue or event left on the device")
        }
        sched::Error::Full => Error::new(ErrorKind::QueueFull, "queue full"),
        _ => Error::new(ErrorKind::InvalidArgument, "bad queue request"),
    }
}

/// The device clock: nanoseconds since the first reading in this process (monotonic).
pub(crate) fn clock_ns() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    // CAST: u64 nanoseconds cover 584 years of uptime.
    start.elapsed().as_nanos() as u64
}

impl Scheduler {
    /// Starts the worker threads of device `index`.
    pub(crate) fn start(index: u32, fabric: Weak<Fabric>) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: CachePadded(Mutex::new(State {
                exec: Executor::with_clock(MAX_QUEUES, clock_ns),
                stop: false,
                faults: BTreeMap::new(),
                tickets: BTreeMap::new(),
                next_ticket: 1,
                idle: Idle::new(),
                parked: Parked::new(),
                waiters: 0,
                blind: 0,
                lanes: (0..MAX_QUEUES).map(|_| None).collect(),
                backlog: vec![false; MAX_QUEUES],
                aborting: vec![false; MAX_QUEUES],
                owned: Vec::with_capacity(MAX_QUEUES),
                is_owned: vec![false; MAX_QUEUES],
                drained: 0,
                started: Vec::new(),
            })),
            work_word: CachePadded(WorkWord::new()),
            work: std::array::from_fn(|_| Condvar::new()),
            done: Condvar::new(),
            lanes: CachePadded((0..MAX_QUEUES).map(|_| ArcSwapOption::empty()).collect()),
            inbox: CachePadded(Inbox::new(MAX_QUEUES).map_err(|_| std::io::Error::other("inbox too large"))?),
            sleepers: CachePadded(Sleepers::new()),
            cores: Cores::new(),
        });
        let sched = Self { device: index, shared, fabric: fabric.clone(), threads: Mutex::new(Vec::new()) };
        for w in 0..WORKERS {
            let worker = Arc::clone(&sched.shared);
            let fabric = fabric.clone();
            let handle =
                std::thread::Builder::new().name(format!("aclrs-sim-ts{index}.{w}")).spawn(move || {
                    crate::fault::set_device(index);
                    run(&worker, &fabric, w);
                    worker.cores.stopped(w);
                });
            match handle {
                Ok(h) => sched.threads.lock().unwrap_or_else(|p| p.into_inner()).push(h),
                Err(e) => {
                    sched.stop();
                    return Err(e);
                }
            }
        }
        Ok(sched)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.lock()
    }

    /// The submission port of queue `q`, if the queue is live.
    pub(crate) fn port(&self, q: QueueId) -> Option<Port> {
        self.lane_arc(q).map(|lane| Port { shared: Arc::clone(&self.shared), lane })
    }

    /// The lane of queue `q` if the queue is live (an `Arc`: for the locked paths).
    fn lane_arc(&self, q: QueueId) -> Option<Arc<Lane>> {
        self.shared.lanes[lane_index(q)].load_full().filter(|l| l.queue == q)
    }

    /// Runs `f` on the lane of queue `q` (no lock, no reference count taken); `None` when the
    /// queue is not live.
    #[inline]
    fn with_lane<R>(&self, q: QueueId, f: impl FnOnce(&Lane) -> R) -> Option<R> {
        let guard = self.shared.lanes[lane_index(q)].load();
        guard.as_ref().filter(|l| l.queue == q).map(|l| f(l))
    }

    /// Like [`Self::wake_worker`], but only when the ready queue just went from empty to
    /// non-empty (`had_ready` is whether it was non-empty before the change): otherwise a
    /// worker is already on its way to it.
    fn wake_if_newly_ready(&self, st: &mut State, had_ready: bool) {
        self.shared.wake_if_newly_ready(st, had_ready);
    }

    /// Tells the workers that work may have appeared (after `st` changed under the lock):
    /// wakes the spinner, or one parked worker when none spins.
    fn wake_worker(&self, st: &mut State) {
        signal_work(&self.shared, st);
    }

    pub(crate) fn create_queue(&self, depth: u32) -> Result<QueueId> {
        let depth = usize::try_from(depth.max(1)).unwrap_or(usize::MAX);
        let mut st = self.lock();
        let id = st.exec.create_stream(depth).map_err(sched_err)?;
        let q = QueueId(id.0);
        let index = lane_index(q);
        let lane =
            st.exec.progress(id).and_then(|progress| Lane::new(q, index, depth, progress)).map(Arc::new);
        let lane = match lane {
            Ok(l) => l,
            Err(e) => {
                let _ = st.exec.destroy_stream(id);
                return Err(sched_err(e));
            }
        };
        st.lanes[index] = Some(Arc::clone(&lane));
        st.backlog[index] = false;
        self.shared.lanes[index].store(Some(lane));
        Ok(q)
    }

    /// Destroys `q` once everything submitted to it has finished. The lane closes first, so
    /// a submission racing the destroy either got in before (and is waited for) or fails
    /// with [`ErrorKind::InvalidHandle`]; none lands in a lane nobody drains.
    pub(crate) fn destroy_queue(&self, q: QueueId) -> Result<()> {
        let lane = self.lane_arc(q).ok_or_else(|| sched_err(sched::Error::NoSuchStream))?;
        // Lock order: the lane's submit lock (alone).
        lane.set_closed(true);
        if let Err(e) = self.wait_idle_queue(q, None) {
            lane.set_closed(false);
            return Err(e);
        }
        let mut st = self.lock();
        st.exec.destroy_stream(StreamId(q.0)).map_err(sched_err)?;
        let index = lane_index(q);
        st.lanes[index] = None;
        st.backlog[index] = false;
        if std::mem::take(&mut st.is_owned[index]) {
            st.owned.retain(|&i| i != index);
        }
        self.shared.lanes[index].store(None);
        st.faults.remove(&q.0);
        // Waits on the destroyed queue are satisfied now.
        self.wake_worker(&mut st);
        Ok(())
    }

    /// Drops the queued tasks of `q`; with [`AbortHead::Runs`] the head task whose
    /// dependencies are met now counts as on the device: the executor starts it here and a
    /// worker runs it (see [`sched::Executor::abort_keep_head`]). Descriptors still in the
    /// lane are queued tasks like the others (behind the executor's). It waits for nothing but,
    /// when the executor has no room for the lane's descriptors, the end of the task of `q`
    /// running now (the run it belongs to keeps the room until then; see the loop below).
    pub(crate) fn abort_queue(&self, q: QueueId, head: AbortHead) -> Result<usize> {
        let lane = self.lane_arc(q);
        // Lock order: the lane's submit lock, then state.
        let _producer = lane.as_ref().map(|l| l.producer());
        let mut st = self.lock();
        // A run of the queue under way starts nothing more (its task running now is the head
        // on the device); the tasks it cancels count as dropped.
        let mut dropped = lane.as_ref().map_or(0, |l| l.cancel_run());
        let mut first = true;
        loop {
            let drained = lane.as_ref().is_none_or(|l| drain_lane(&mut st, l));
            let d = if first && head == AbortHead::Runs {
                let fabric = &self.fabric;
                let (d, started) =
                    st.exec.abort_keep_head(StreamId(q.0), |t| gate(fabric, t)).map_err(sched_err)?;
                if let Some((seq, task)) = started {
                    st.started.push((StreamId(q.0), seq, task));
                }
                d
            } else {
                st.exec.abort(StreamId(q.0)).map_err(sched_err)?
            };
            first = false;
            dropped += d;
            let Some(l) = lane.as_ref().filter(|l| !l.ring.is_empty()) else { break };
            if drained {
                continue;
            }
            // The executor has no room for the lane's descriptors: the queue's run under way
            // (cancelled above: it starts nothing after its task running now) still counts all
            // its tasks, and only its worker's finish, under this lock, lets them go. Looping
            // here with the lock held would keep that worker from ever finishing (and a
            // run's published completions let the submitters fill the lane past the executor's
            // room, so this happens). Wait for the finish without the lock, the lane held
            // back from everyone else's drains, then drain and drop again.
            if crate::fault::running() == Some((self.device, q.0)) {
                // Called from the run's own task, which cannot end first: what the lane
                // holds runs after it, as submitted.
                break;
            }
            st.aborting[l.index] = true;
            st.waiters += 1;
            st.blind += 1;
            // TIMEOUT: re-check now and then, in case the finish raced the count.
            st = self.shared.done.wait_timeout(st, POLL).unwrap_or_else(|p| p.into_inner()).0;
            st.waiters -= 1;
            st.blind -= 1;
            st.aborting[l.index] = false;
        }
        Self::sweep_tickets(&mut st, q.0);
        if st.waiters > 0 {
            self.shared.done.notify_all();
        }
        self.wake_worker(&mut st);
        Ok(dropped)
    }

    /// Queues `task` on `q` in the executor behind the lane's descriptors, waiting while the
    /// queue is full; `then` runs under the lock with the task's sequence number.
    fn push(&self, q: QueueId, task: TaskDesc, then: impl FnOnce(&mut State, u64)) -> Result<u64> {
        let lane = self.lane_arc(q);
        // Lock order: the lane's submit lock, then state.
        let mut producer = lane.as_ref().map(|l| l.producer());
        if let Some(p) = &producer {
            Lane::check_open(p)?;
        }
        let mut st = self.lock();
        loop {
            let had_ready = st.exec.has_ready();
            let drained = lane.as_ref().is_none_or(|l| drain_lane(&mut st, l));
            let pushed = if drained { st.exec.submit(StreamId(q.0), task) } else { Err(sched::Error::Full) };
            match pushed {
                Ok(seq) => {
                    if let (Some(l), Some(p)) = (&lane, producer.as_mut()) {
                        l.note_submitted(p, seq);
                    }
                    then(&mut st, seq);
                    // Notified after the unlock (see `claim_signal`).
                    let wake = if !had_ready && st.exec.has_ready() {
                        claim_signal(&self.shared, &mut st)
                    } else {
                        Wake::NONE
                    };
                    drop(st);
                    drop(producer);
                    wake.send(&self.shared);
                    return Ok(seq);
                }
                // Back-pressure: wait for the device to finish something, then retry. Spin on
                // the queue's progress word without the lock first, then park.
                Err(sched::Error::Full) => {
                    self.wake_if_newly_ready(&mut st, had_ready);
                    let word = st.exec.progress(StreamId(q.0)).map_err(sched_err)?;
                    let seen = word.completed();
                    drop(st);
                    let moved = spin_until(|| word.completed() != seen);
                    // Lock order: state (leaf).
                    st = self.lock();
                    if !moved && word.completed() == seen {
                        st.waiters += 1;
                        st.blind += 1;
                        st = self.shared.done.wait(st).unwrap_or_else(|p| p.into_inner());
                        st.waiters -= 1;
                        st.blind -= 1;
                    }
                }
                Err(e) => return Err(sched_err(e)),
            }
        }
    }

    /// Queues one internal item on `q` with `op` (under the lock, behind the lane's
    /// descriptors) and notes the new submitted sequence. A lane the executor has no room for
    /// answers [`ErrorKind::QueueFull`], as the executor does.
    fn locked<R>(&self, q: QueueId, op: impl FnOnce(&mut State) -> sched::Result<R>) -> Result<R> {
        let lane = self.lane_arc(q);
        // Lock order: the lane's submit lock, then state.
        let mut producer = lane.as_ref().map(|l| l.producer());
        if let Some(p) = &producer {
            Lane::check_open(p)?;
        }
        let mut st = self.lock();
        let had_ready = st.exec.has_ready();
        if let Some(l) = &lane {
            if !drain_lane(&mut st, l) {
                self.wake_if_newly_ready(&mut st, had_ready);
                return Err(sched_err(sched::Error::Full));
            }
        }
        let r = op(&mut st).map_err(sched_err);
        if let (Some(l), Some(p)) = (&lane, producer.as_mut()) {
            if let Ok(seq) = st.exec.submitted_seq(StreamId(q.0)) {
                l.note_submitted(p, seq);
            }
        }
        self.wake_if_newly_ready(&mut st, had_ready);
        r
    }

    /// Submits `task`. A task without a ticket goes through the queue's lane (no device lock
    /// in steady state, see the module documentation); a ticketed one through the executor.
    pub(crate) fn submit(&self, q: QueueId, task: TaskDesc) -> Result<u64> {
        if let Some(t) = task.ticket() {
            // A task that names a ticket must name one staged for it, and takes it over.
            if self.lock().tickets.get(&t).is_none_or(|h| h.queue != STAGED) {
                return Err(Error::new(ErrorKind::InvalidHandle, "the task's ticket was not staged"));
            }
            return self.push(q, task, |st, seq| {
                if let Some(h) = st.tickets.get_mut(&t) {
                    h.queue = q.0;
                    h.seq = seq;
                }
            });
        }
        let words = encode(&task);
        self.with_lane(q, |lane| self.shared.submit_plain(lane, &words))
            .unwrap_or_else(|| Err(sched_err(sched::Error::NoSuchStream)))
    }

    /// Holds `ticket` until a task naming it is submitted ([`Self::submit`]) or it is
    /// [unstaged](Self::unstage); returns its number.
    pub(crate) fn stage(&self, ticket: Ticket) -> u64 {
        let mut st = self.lock();
        let id = st.next_ticket;
        st.next_ticket += 1;
        st.tickets.insert(id, Held { queue: STAGED, seq: u64::MAX, ticket: Some(ticket) });
        id
    }

    /// Drops a staged ticket no task took over; `false` when `id` is not staged.
    pub(crate) fn unstage(&self, id: u64) -> bool {
        let mut st = self.lock();
        if st.tickets.get(&id).is_some_and(|h| h.queue == STAGED) {
            st.tickets.remove(&id);
            return true;
        }
        false
    }

    /// Submits the task `make(ticket)` that owns `ticket`; the ticket is dropped when the task
    /// runs, is skipped or is aborted.
    pub(crate) fn submit_with(
        &self,
        q: QueueId,
        ticket: Ticket,
        make: impl FnOnce(u64) -> TaskDesc,
    ) -> Result<u64> {
        let id = {
            let mut st = self.lock();
            let id = st.next_ticket;
            st.next_ticket += 1;
            st.tickets.insert(id, Held { queue: q.0, seq: u64::MAX, ticket: Some(ticket) });
            id
        };
        let r = self.push(q, make(id), |st, seq| {
            if let Some(h) = st.tickets.get_mut(&id) {
                h.seq = seq;
            }
        });
        if r.is_err() {
            self.lock().tickets.remove(&id);
        }
        r
    }

    /// Drops the tickets of queue `q` whose tasks have finished (ran, skipped or aborted).
    fn sweep_tickets(st: &mut State, q: u32) {
        let done = st.exec.completed_seq(StreamId(q)).unwrap_or(u64::MAX);
        st.tickets.retain(|_, h| !(h.queue == q && h.seq <= done));
    }

    /// The queue's submitted and completed sequences, from its words (no lock); an error
    /// stays for [`Self::take_error`].
    pub(crate) fn progress(&self, q: QueueId) -> Result<QueueProgress> {
        self.with_lane(q, |l| QueueProgress { submitted: l.submitted(), completed: l.progress.completed() })
            .ok_or_else(|| sched_err(sched::Error::NoSuchStream))
    }

    /// Takes the first failure of queue `q` since the last call: a device fault code wins
    /// over the driver error kind the executor kept.
    pub(crate) fn take_error(&self, q: QueueId) -> Result<Option<TaskStatus>> {
        let mut st = self.lock();
        let kind = st.exec.take_error(StreamId(q.0)).map_err(sched_err)?;
        let code = st.faults.remove(&q.0);
        Ok(match (code, kind) {
            (Some(c), _) => Some(TaskStatus::Fault(c)),
            (None, Some(k)) => Some(TaskStatus::Failed(k)),
            (None, None) => None,
        })
    }

    /// [`Self::take_error`]'s answer, left in place: a queue a failure stopped stays stopped.
    pub(crate) fn pending_error(&self, q: QueueId) -> Result<Option<TaskStatus>> {
        let st = self.lock();
        let kind = st.exec.error(StreamId(q.0)).map_err(sched_err)?;
        Ok(match (st.faults.get(&q.0), kind) {
            (Some(&c), _) => Some(TaskStatus::Fault(c)),
            (None, Some(k)) => Some(TaskStatus::Failed(k)),
            (None, None) => None,
        })
    }

    /// Whether a submission to `q` would not wait for room now.
    pub(crate) fn has_room(&self, q: QueueId) -> Result<bool> {
        self.with_lane(q, |l| l.has_room(l.submitted())).ok_or_else(|| sched_err(sched::Error::NoSuchStream))
    }

    pub(crate) fn set_stop_on_failure(&self, q: QueueId, stop: bool) -> Result<()> {
        let mode = if stop { FailureMode::StopOnFailure } else { FailureMode::Continue };
        self.lock().exec.set_failure_mode(StreamId(q.0), mode).map_err(sched_err)
    }

    /// Waits until `q` completed `seq`: spins on the queue's progress word without any lock,
    /// then parks on `done` (a finishing worker notifies it when someone is parked).
    pub(crate) fn wait(&self, q: QueueId, seq: u64, timeout_ms: Option<u32>) -> Result<()> {
        // TIMEOUT: `timeout_ms` bounds the wait; `None` waits for the device forever.
        let deadline = timeout_ms.map(|ms| Instant::now() + Duration::from_millis(u64::from(ms)));
        let lane = self.lane_arc(q).ok_or_else(|| sched_err(sched::Error::NoSuchStream))?;
        let word = &lane.progress;
        // Not for a poll: a zero timeout answers at once.
        if word.is_complete(seq) || (timeout_ms != Some(0) && spin_until(|| word.is_complete(seq))) {
            return Ok(());
        }
        // Lock order: state (leaf).
        let mut st = self.lock();
        loop {
            // A finish notifies `done` once the queue reaches `seq` (or an abort does), and so
            // does a worker running a run of the queue's tasks (it reads the target after
            // publishing each task; this reads the word after setting the target).
            if lane.wake_me_at(seq) {
                return Ok(());
            }
            st.waiters += 1;
            st = match deadline {
                None => self.shared.done.wait(st).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        st.waiters -= 1;
                        return Err(Error::new(
                            ErrorKind::Timeout,
                            "queue did not reach the sequence in time",
                        ));
                    }
                    self.shared.done.wait_timeout(st, d - now).unwrap_or_else(|p| p.into_inner()).0
                }
            };
            st.waiters -= 1;
        }
    }

    fn wait_idle_queue(&self, q: QueueId, timeout_ms: Option<u32>) -> Result<()> {
        let last = self.progress(q)?.submitted;
        self.wait(q, last, timeout_ms)
    }

    pub(crate) fn create_event(&self) -> Result<EventId> {
        self.lock().exec.create_event().map(|e| EventId(e.0)).map_err(sched_err)
    }

    pub(crate) fn destroy_event(&self, ev: EventId) -> Result<()> {
        self.lock().exec.destroy_event(sched::EventId(ev.0)).map_err(sched_err)
    }

    pub(crate) fn record_event(&self, q: QueueId, ev: EventId) -> Result<u64> {
        self.locked(q, |st| st.exec.record_event(sched::EventId(ev.0), StreamId(q.0)))
    }

    pub(crate) fn wait_event(&self, q: QueueId, ev: EventId) -> Result<EventWait> {
        self.locked(q, |st| {
            let target = st.exec.event_point(sched::EventId(ev.0))?;
            let seq = st.exec.wait_event(StreamId(q.0), sched::EventId(ev.0))?;
            Ok(EventWait { seq, target: target.map(|p| (QueueId(p.stream), p.seq)) })
        })
    }

    pub(crate) fn wait_point(&self, q: QueueId, target: QueueId, seq: u64) -> Result<u64> {
        self.locked(q, |st| st.exec.submit_wait(StreamId(q.0), StreamPoint { stream: target.0, seq }))
    }

    pub(crate) fn reset_event(&self, q: QueueId, ev: EventId) -> Result<()> {
        self.locked(q, |st| st.exec.reset_event(sched::EventId(ev.0), StreamId(q.0)).map(|_| ()))
    }

    pub(crate) fn event_info(&self, ev: EventId) -> Result<EventInfo> {
        let st = self.lock();
        let e = sched::EventId(ev.0);
        let status = st.exec.event_status(e).map_err(sched_err)?;
        let point = st.exec.event_point(e).map_err(sched_err)?;
        Ok(EventInfo {
            point: point.map(|p| (QueueId(p.stream), p.seq)),
            is_complete: status == EventStatus::Complete,
            timestamp_ns: st.exec.event_timestamp(e).map_err(sched_err)?,
        })
    }

    pub(crate) fn is_ordered_before(&self, q: QueueId, seq: u64, later: QueueId) -> bool {
        let mut st = self.lock();
        // The executor answers for what it holds: move the lanes' descriptors in first.
        for lane in [self.lane_arc(q), self.lane_arc(later)].into_iter().flatten() {
            drain_lane(&mut st, &lane);
        }
        st.exec.is_ordered_before(StreamPoint { stream: q.0, seq }, later.0)
    }

    /// Waits for every queue to drain (lanes included), then stops and joins the threads.
    pub(crate) fn stop(&self) {
        {
            let mut st = self.lock();
            loop {
                let lanes: Vec<Arc<Lane>> = st.lanes.iter().flatten().cloned().collect();
                let mut rings_empty = true;
                for lane in &lanes {
                    drain_lane(&mut st, lane);
                    rings_empty &= lane.ring.is_empty();
                }
                if rings_empty && st.exec.is_idle() {
                    break;
                }
                self.wake_worker(&mut st);
                st.waiters += 1;
                st.blind += 1;
                // TIMEOUT: re-check now and then, in case the last finish raced the count.
                st = self.shared.done.wait_timeout(st, POLL).unwrap_or_else(|p| p.into_inner()).0;
                st.waiters -= 1;
                st.blind -= 1;
            }
            st.stop = true;
        }
        for work in &self.shared.work {
            work.notify_all();
        }
        let handles: Vec<_> = self.threads.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect();
        for h in handles {
            let _ = h.join();
        }
    }
}

/// The lane slot (and executor slot) of queue `q`.
#[inline]
fn lane_index(q: QueueId) -> usize {
    // CAST: u32 to usize; MAX_QUEUES is a power of two at least the executor's slot count.
    q.0 as usize % MAX_QUEUES
}

/// Moves `lane`'s descriptors into the executor in order (under the lock: the ring's one
/// consumer); `false` when the executor had no room for all of them (the lane is then in the
/// backlog until its queue finishes something).
fn drain_lane(st: &mut State, lane: &Lane) -> bool {
    if st.aborting[lane.index] {
        // An abort drops these descriptors (it drains them itself once it holds the lock).
        return false;
    }
    let q = StreamId(lane.queue.0);
    while let Some((_, words)) = lane.ring.peek() {
        if let Some(task) = decode(&words) {
            // Ok, or the queue is gone (its descriptors go with it), or full.
            if st.exec.submit(q, task) == Err(sched::Error::Full) {
                st.backlog[lane.index] = true;
                return false;
            }
        }
        lane.ring.release();
        st.drained += 1;
    }
    st.backlog[lane.index] = false;
    true
}

/// A worker's look at the lanes (under the lock): takes the lanes posted since the last look
/// into the owned set, drains every owned lane, and keeps at most [`KEEP_IDLE`] of those whose
/// ring is empty and whose queue has nothing unfinished; it gives back (unposts) the others
/// (see [`sched::inbox`]). A busy lane kept has something unfinished, and the worker that
/// finishes it looks again; an idle lane kept is looked after by the awake workers (see
/// [`KEEP_IDLE`]); a backlogged lane is drained by the finish of its queue's next task.
fn drain_posted(shared: &Shared, st: &mut State) {
    take_posted(shared, st, 0, KEEP_IDLE);
}

/// Takes the lanes posted since the last look into the owned set and drains the owned lanes
/// from position `from` of the set on (0: all of them; the set's length: only those just
/// taken, for a worker's second look before it runs a task, which must see new posts but
/// need not look at lanes whose unfinished work another finish will look after), keeping at
/// most `keep_idle` idle lanes among those it looks at and giving back the other idle ones.
fn take_posted(shared: &Shared, st: &mut State, from: usize, keep_idle: usize) -> bool {
    shared.inbox.take(|index| {
        if st.lanes[index].is_some() && !st.is_owned[index] {
            st.is_owned[index] = true;
            st.owned.push(index);
        }
    });
    let mut kept_idle = 0;
    let mut contended = false;
    let mut i = from;
    while let Some(&index) = st.owned.get(i) {
        let poll = if st.backlog[index] { Poll::Busy } else { poll_lane(st, index, kept_idle < keep_idle) };
        match poll {
            Poll::Busy => i += 1,
            Poll::Idle => {
                kept_idle += 1;
                i += 1;
            }
            Poll::GivenBack => {
                st.owned.swap_remove(i);
                st.is_owned[index] = false;
            }
            Poll::Contended => {
                contended = true;
                i += 1;
            }
        }
    }
    !contended
}

/// What [`poll_lane`] did with an owned lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Poll {
    /// Kept: its queue has something unfinished (or it is backlogged).
    Busy,
    /// Kept although its ring is empty and its queue idle (within [`KEEP_IDLE`]).
    Idle,
    /// Given back (unposted) or gone.
    GivenBack,
    /// Idle, to be given back, but a submitter holds its submit lock: kept for now.
    Contended,
}

/// Drains the owned lane at slot `index` when its queue has nothing unfinished; when its ring
/// is then empty, keeps it if `keep_idle`, else gives it back.
///
/// The lane of a busy queue (something of it queued in the executor or running) is left as it
/// is, its ring not even read: the worker that finishes the queue's unfinished work looks
/// afterwards (every finish is followed by a look of the worker that made it, see [`run`]), and
/// the descriptors behind that work could not start sooner anyway. So in a flood the lines a
/// queue's submitter writes (the ring's tail, the descriptors) are read by one worker, once the
/// queue's work so far is done, not by every look of every worker. Measured on four queues
/// flooded from one thread (two cores): the rounds in which every task cost twice as much
/// (about 190 against 90 ns, in up to a third of the processes) are gone; leaving only the
/// lanes of queues with a run under way alone did not remove them. (The paths that need a
/// queue's descriptors in the executor at once, such as an event record, an abort, a
/// back-pressured submitter or a stop, drain the lane themselves.)
fn poll_lane(st: &mut State, index: usize, keep_idle: bool) -> Poll {
    let Some(lane) = st.lanes[index].as_ref() else { return Poll::GivenBack };
    let q = StreamId(lane.queue.0);
    if !queue_idle(st, q) {
        return Poll::Busy;
    }
    if keep_idle && lane.ring.is_empty() {
        return Poll::Idle;
    }
    // Moved out and back, not cloned: no reference-count write on the lane (a line its
    // submitter reads) per look. `drain_lane` touches only the executor and the backlog.
    let Some(lane) = st.lanes[index].take() else { return Poll::GivenBack };
    let poll = loop {
        if !drain_lane(st, &lane) {
            break Poll::Busy;
        }
        if !queue_idle(st, q) {
            break Poll::Busy;
        }
        if keep_idle {
            break Poll::Idle;
        }
        // An idle queue is given back with its submit lock held and its ring empty, so no
        // push is under way or lands unseen (else drain again). A submitter holding the lock
        // is on its way to push or to take the scheduler's lock: the caller must let go of
        // the scheduler's lock before it tries again.
        let Some(mut p) = lane.try_producer() else { break Poll::Contended };
        if lane.ring.is_empty() {
            p.replace_posted(false);
            break Poll::GivenBack;
        }
    };
    st.lanes[index] = Some(lane);
    poll
}

/// Whether queue `q` has nothing unfinished in the executor (or is gone).
#[inline]
fn queue_idle(st: &State, q: StreamId) -> bool {
    match (st.exec.submitted_seq(q), st.exec.completed_seq(q)) {
        (Ok(s), Ok(c)) => s <= c,
        _ => true,
    }
}

/// Whether a value-wait task may start: its word holds the awaited value.
fn gate(fabric: &Weak<Fabric>, task: &TaskDesc) -> bool {
    match *task {
        TaskDesc::ValueWait { addr, value, compare } => {
            let Some(f) = fabric.upgrade() else { return true };
            let mut word = [0u8; 8];
            match f.read(&mut word, addr) {
                Ok(()) => compare.holds(u64::from_le_bytes(word), value),
                // A wait on unmapped memory starts and fails.
                Err(_) => true,
            }
        }
        _ => true,
    }
}

/// Moves the work word a spinning worker watches, and wakes one parked worker when none
/// spins ([`sched::wake`]'s rules). Called under the lock (`st`).
fn signal_work(shared: &Shared, st: &mut State) {
    claim_signal(shared, st).send(shared);
}

/// [`signal_work`]'s decision without its notify: the parked worker the caller must notify
/// (claimed, see [`Idle::claim_wake`]), which it does after releasing the lock, so the woken
/// worker does not block on the lock the caller still holds (a second hand-off, through the
/// mutex's futex, on the way to the task). Called under the lock (`st`).
fn claim_signal(shared: &Shared, st: &mut State) -> Wake {
    // A looking worker takes the lock and looks after this (it left looking only under the
    // lock), so it takes the work: no need to wake a parked one.
    if shared.sleepers.someone_looks() {
        shared.work_word.kick();
        Wake::NONE
    } else if wake::signal(&mut st.idle, &shared.work_word) {
        st.choose()
    } else if shared.sleepers.should_notify() {
        // A spinner that yields its core does not count, as for a lane submitter (`Sleepers`):
        // on a loaded machine it may wait long for a core, and the work with it.
        st.claim_wake()
    } else {
        Wake::NONE
    }
}

/// The parked worker a claimed notification goes to, notified by [`Wake::send`] (after the
/// unlock, where the caller can).
///
/// Each worker parks on its own condition variable, and a notification goes to the worker
/// that parked last ([`Parked::choose`], whose rules say why nothing is lost): its caches,
/// and its core's, still hold the scheduler and the runtime from the task it ran last, so a
/// launch on an idle device starts sooner than on a worker woken in turn after every other (a
/// shared condition variable wakes its longest sleeper first).
#[must_use]
struct Wake(Option<usize>);

impl Wake {
    const NONE: Self = Self(None);

    fn send(self, shared: &Shared) {
        if let Some(w) = self.0 {
            shared.cores.steer_off_current_cpu(w);
            shared.work[w].notify_one();
        }
    }
}

impl State {
    /// The last parked worker not chosen yet, now chosen (after a claim).
    fn choose(&mut self) -> Wake {
        Wake(self.parked.choose())
    }

    /// [`Idle::claim_wake`], and the worker the claim goes to.
    fn claim_wake(&mut self) -> Wake {
        if self.idle.claim_wake() {
            self.choose()
        } else {
            Wake::NONE
        }
    }
}

/// Whether a task may join a run behind its stream's head (see [`MAX_RUN`]): not a value
/// wait (its gate is looked at when it heads its stream) and no ticket (tickets are taken
/// under the lock).
fn joins_run(t: &TaskDesc) -> bool {
    t.ticket().is_none() && !matches!(t, TaskDesc::ValueWait { .. })
}

/// A run of one stream's tasks that a worker took (see [`MAX_RUN`]).
struct Run<'a> {
    stream: StreamId,
    /// The first task's sequence number; the others follow it.
    first: u64,
    /// The queue's lane, when the run has more than one task: each task after the first
    /// starts only if no abort cancelled it ([`Lane::step`]), and each but the last is
    /// published through it.
    lane: Option<&'a Lane>,
}

impl Run<'_> {
    /// Runs `tasks` in order without the lock (`ticket` is the first one's; `spans` is the
    /// worker's [`SpanCache`]) and answers the
    /// run's status (its first failure, if any) and the last task counted finished in the
    /// executor ([`sched::Executor::complete_run_to`]; `first - 1` when none): the caller
    /// ends the run with the finish of the task after it.
    ///
    /// After each task but the last the lane publishes it (until a task fails: the rest is
    /// published at the run's end, with the error), and when someone waits for it (a host
    /// thread parked on `done`, a stream parked in the executor) the worker takes the lock to
    /// count the run so far and notify. An abort of the queue ends the run before
    /// the next task starts ([`Lane::cancel_run`] counts the tasks left as dropped).
    fn execute(
        &self,
        shared: &Shared,
        fabric: Option<&Fabric>,
        tasks: &mut Vec<TaskDesc>,
        ticket: Option<Ticket>,
        spans: &mut SpanCache,
    ) -> (TaskStatus, u64) {
        // CAST: at most `MAX_RUN` tasks.
        let last = self.first + tasks.len() as u64 - 1;
        let mut status = TaskStatus::Ok;
        let mut counted = self.first - 1;
        let mut ticket = ticket;
        // The run's fills keep their device pinned and its window's map held between them
        // (`Fabric::fill_in_run`); the hold goes before any other task and before the lock.
        let pin = RunPin::new();
        let mut hold = None;
        // Whether the next task may start: the first always (under the lock it was taken
        // with), each later one as the step after its predecessor found it ([`Lane::step`]).
        let mut start = true;
        for (seq, task) in (self.first..).zip(tasks.drain(..)) {
            if !start {
                break;
            }
            let done = match (fabric, task) {
                (Some(f), TaskDesc::Memset { dst, value, len_bytes }) => {
                    status_of(f.fill_in_run(&pin, &mut hold, spans, dst, value, len_bytes))
                }
                (Some(f), task) => {
                    hold = None;
                    f.execute(&task, ticket.take(), spans)
                }
                (None, _) => TaskStatus::Failed(ErrorKind::NoDevice),
            };
            if matches!(status, TaskStatus::Ok) {
                status = done;
            }
            let Some(lane) = self.lane.filter(|_| seq < last) else {
                continue;
            };
            // After a failure nothing more is published until the run's end, where the finish
            // records the error first: nobody sees a failed task complete before its error.
            let step = lane.step(seq, matches!(status, TaskStatus::Ok));
            start = step.start;
            if step.watched {
                // Lock order: a window's map, then state (leaf); none held here.
                hold = None;
                let mut st = shared.lock();
                let had_ready = st.exec.has_ready();
                if st.exec.complete_run_to(self.stream, seq).is_ok() {
                    counted = seq;
                }
                if st.waiters > 0 && (st.blind > 0 || lane.take_due()) {
                    shared.done.notify_all();
                }
                // Streams parked on this one may be ready now: a worker for them (notified
                // after the unlock, see `claim_signal`).
                let wake = if !had_ready && st.exec.has_ready() {
                    claim_signal(shared, &mut st)
                } else {
                    Wake::NONE
                };
                drop(st);
                wake.send(shared);
            }
        }
        (status, counted)
    }
}

/// The idle lanes kept (see [`KEEP_IDLE`]) for a spin to watch (under the lock), or `None`
/// when more are kept than a spin watches (then the worker parks, giving them all back).
fn watch_idle(st: &State) -> Option<[Option<Arc<Lane>>; KEEP_IDLE]> {
    let mut watch: [Option<Arc<Lane>>; KEEP_IDLE] = Default::default();
    let mut n = 0;
    for &index in &st.owned {
        let Some(lane) = st.lanes[index].as_ref() else { continue };
        if st.backlog[index] || !queue_idle(st, StreamId(lane.queue.0)) {
            continue;
        }
        *watch.get_mut(n)? = Some(Arc::clone(lane));
        n += 1;
    }
    Some(watch)
}

/// A worker's loop: move posted lanes into the executor, take the next ready task, run it
/// without the lock, finish it; when there is nothing to take, spin briefly (one worker at a
/// time), then announce itself, look once more and park.
fn run(shared: &Shared, fabric: &Weak<Fabric>, me: usize) {
    shared.cores.started(me);
    // Looking (see `Sleepers`) from its first look on.
    shared.sleepers.looks();
    let mut st = shared.state.lock().unwrap_or_else(|p| p.into_inner());
    // Whether this worker spun since it last found work (then it parks instead).
    let mut spun = false;
    // The fabric, upgraded at the first task after an idle spell and let go before the worker
    // spins or parks: one update of its reference count (a line every worker of every device
    // writes) per streak of tasks, not two per task. A device's close stops its workers, and
    // so drops these, before the fabric can go.
    let mut held: Option<Arc<Fabric>> = None;
    // The tasks of the run taken (see `MAX_RUN`), allocated once.
    let mut tasks: Vec<TaskDesc> = Vec::with_capacity(MAX_RUN);
    // The last span of mapped memory this worker's fills found (see `SpanCache`).
    let mut spans = SpanCache::default();
    loop {
        // Taken before this look, so that a kick after it ends the spin below.
        let seen = shared.work_word.seen();
        drain_posted(shared, &mut st);
        let before = st.exec.finished_items();
        let taken = match st.started.pop() {
            Some((stream, seq, task)) => {
                tasks.clear();
                tasks.push(task);
                Some((stream, seq))
            }
            None => st.exec.take_run_if(|t| gate(fabric, t), joins_run, MAX_RUN, &mut tasks),
        };
        if st.exec.finished_items() != before && st.waiters > 0 {
            // Internal items (event records, satisfied waits) finished while taking.
            shared.done.notify_all();
        }
        if let Some((stream, seq)) = taken {
            spun = false;
            let ticket = tasks
                .first()
                .and_then(TaskDesc::ticket)
                .and_then(|t| st.tickets.remove(&t))
                .and_then(|h| h.ticket);
            let index = lane_index(QueueId(stream.0));
            // A run's tasks after the first are published one by one through the lane (one
            // reference count per run, not per task), and stop at an abort.
            let run_lane = if tasks.len() > 1 { st.lanes[index].clone() } else { None };
            if let Some(l) = &run_lane {
                // CAST: at most `MAX_RUN` tasks.
                l.begin_run(seq, seq + tasks.len() as u64 - 1);
            }
            // No longer looking: look once more (`Sleepers`), since a submitter that saw this
            // worker looking left its post to it.
            shared.sleepers.executes();
            let owned = st.owned.len();
            take_posted(shared, &mut st, owned, KEEP_IDLE);
            // The idle lanes kept (`KEEP_IDLE`) need a worker that looks, and this one will
            // not until its task ends, which may be never: a task may wait for one that a
            // kept lane holds (a host function waiting for a later task of another stream).
            // With no other worker looking or spinning, give them all back first, so that a
            // push to one posts it and wakes a worker (as before parking). The lane of this
            // run's own stream is busy (its run is unfinished) and stays: a stream that is the
            // only one owned, a flood's steady state, costs no extra look.
            while st.owned.iter().any(|&i| i != index)
                && !shared.sleepers.someone_looks_or_spins()
                && !take_posted(shared, &mut st, 0, 0)
            {
                // A submitter holds a lane's submit lock: let it have the scheduler's lock if
                // it waits for it, then look again.
                drop(st);
                std::thread::yield_now();
                // Lock order: state (leaf).
                st = shared.state.lock().unwrap_or_else(|p| p.into_inner());
            }
            // More work: let another worker take some. (Posted lanes need no wake-up of
            // their own: a post to a busy queue is drained by the worker that finishes
            // that queue's task, and one to an idle queue woke a worker itself, or left
            // it to a looking one, which passes it on here.) A stream refused by its gate
            // needs a worker that re-checks it every `POLL`: the others may have parked
            // before it was refused (without a timeout), and this task may run for long
            // (a timed wait on that very stream), so wake one, which parks with the poll
            // timeout.
            let more = st.exec.has_ready() || !st.started.is_empty() || st.exec.has_gated();
            // Notified after the unlock (see `claim_signal`).
            let wake = if more { claim_signal(shared, &mut st) } else { Wake::NONE };
            drop(st);
            wake.send(shared);
            crate::fault::set_queue(stream.0);
            if held.is_none() {
                held = fabric.upgrade();
            }
            let run = Run { stream, first: seq, lane: run_lane.as_deref() };
            let (status, counted) = run.execute(shared, held.as_deref(), &mut tasks, ticket, &mut spans);
            shared.sleepers.looks();
            // Lock order: state (leaf).
            st = shared.state.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(l) = run_lane {
                l.end_run();
            }
            if let TaskStatus::Fault(code) = status {
                st.faults.entry(stream.0).or_insert(code);
            }
            let exec_status = match status {
                TaskStatus::Fault(_) => TaskStatus::Failed(ErrorKind::DeviceFault),
                s => s,
            };
            // The stream cannot vanish while a task of it runs: destroy waits for idle. The
            // finish of the first task not counted yet ends the run.
            let _ = st.exec.finish(stream, counted + 1, exec_status);
            if !matches!(exec_status, TaskStatus::Ok) {
                Scheduler::sweep_tickets(&mut st, stream.0);
            }
            if st.backlog[index] {
                // The queue has room again: move what its lane still holds.
                if let Some(lane) = st.lanes[index].take() {
                    drain_lane(&mut st, &lane);
                    st.lanes[index] = Some(lane);
                }
            }
            // Host threads waiting for this queue's completions wake only once it reached
            // what they wait for (one wake-up per synchronisation, per half a depth of a
            // flooding submitter), blind waiters on every finish.
            let due = st.lanes[index].as_ref().is_some_and(|l| l.take_due());
            if st.waiters > 0 && (st.blind > 0 || due) {
                shared.done.notify_all();
            }
            continue;
        }
        if st.exec.finished_items() != before {
            // Internal items finished while taking: a queue may have gone idle, and its lane
            // must be given back before this worker spins or parks (look again).
            continue;
        }
        if st.stop {
            return;
        }
        let watch = if spun { None } else { watch_idle(&st) };
        if let Some(watch) = watch.filter(|_| st.idle.try_spin()) {
            // Spin without the lock until the work word moves (a signal under the lock, or a
            // submitter's kick for a queue that was idle), or a kept idle lane's ring shows a
            // push (its submitter posts nothing: see `KEEP_IDLE`), or the spin runs out; then
            // look again under the lock before deciding to park.
            drop(st);
            held = None;
            // While it pauses on its core, submitters leave the wake-up to it (`Sleepers`);
            // once it yields the core, they wake a parked worker again (on a loaded machine a
            // yielding thread may wait long for a core). It looks under the lock afterwards,
            // as `Sleepers::spin_ends` requires.
            let mut moved =
                || shared.work_word.moved(seen) || watch.iter().flatten().any(|l| !l.ring.is_empty());
            shared.sleepers.spin_begins();
            let found = spin_pausing(&mut moved);
            shared.sleepers.spin_ends();
            spun = !(found || spin_yielding(&mut moved));
            shared.sleepers.looks();
            // Lock order: state (leaf).
            st = shared.state.lock().unwrap_or_else(|p| p.into_inner());
            st.idle.end_spin();
            continue;
        }
        // Give back every idle lane kept (`KEEP_IDLE`): a push to a lane given back posts it
        // and wakes a worker. A push that came first fails the give-back and is drained here:
        // then there is work, look again.
        let drained = st.drained;
        let given_back = take_posted(shared, &mut st, 0, 0);
        if st.drained != drained {
            continue;
        }
        if !given_back {
            // A submitter holds a lane's submit lock: let it have the scheduler's lock if it
            // waits for it, then look again.
            drop(st);
            std::thread::yield_now();
            // Lock order: state (leaf).
            st = shared.state.lock().unwrap_or_else(|p| p.into_inner());
            continue;
        }
        // Announce, then look once more (see `Sleepers`): a lane posted after this look
        // notifies us.
        shared.sleepers.announce();
        if !shared.inbox.is_empty() {
            shared.sleepers.withdraw();
            spun = false;
            continue;
        }
        held = None;
        st.idle.park();
        st.parked.push(me);
        let work = &shared.work[me];
        st = if st.exec.has_gated() {
            // TIMEOUT: a value wait refused by its gate is re-checked every POLL.
            let (mut g, _) = work.wait_timeout(st, POLL).unwrap_or_else(|p| p.into_inner());
            g.exec.recheck();
            g
        } else {
            work.wait(st).unwrap_or_else(|p| p.into_inner())
        };
        // Chosen or not (a timeout, a spurious wake-up), nobody may choose it now.
        st.parked.back(me);
        st.idle.unpark();
        shared.sleepers.withdraw();
        spun = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::cpu::{current_cpu, thread_id, CpuSet};

    /// The steering fallback as wakers apply it: a waker on a CPU restricts a steered worker to
    /// the other CPUs, and leaves a worker that got its slice alone.
    #[test]
    fn a_steered_worker_is_restricted_off_its_wakers_cpu() {
        let Some(all) = CpuSet::of_current_thread().filter(|s| s.count() > 1) else { return };
        let cores = Arc::new(Cores::new());
        // Pin the waker (this test's own thread) so that its CPU is known.
        let here = current_cpu().expect("sched_getcpu");
        let mut only_here = all;
        for c in 0..1024 {
            if c != here {
                only_here = only_here.without(c).unwrap_or(only_here);
            }
        }
        assert!(only_here.apply_to(thread_id()));
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (back, answers) = std::sync::mpsc::channel::<Option<CpuSet>>();
        let worker = {
            let cores = Arc::clone(&cores);
            std::thread::spawn(move || {
                cores.start(0, true);
                cores.start(1, false);
                while rx.recv().is_ok() {
                    back.send(CpuSet::of_current_thread()).expect("answer");
                }
            })
        };
        // Both "workers" are the one thread (which started pinned to `here`, as its creator
        // was): worker 1 (sliced) is never steered. Worker 1 starts second.
        while cores.workers[1].tid.load(Ordering::Acquire) == 0 {
            std::thread::yield_now();
        }
        cores.steer_off_current_cpu(1);
        tx.send(()).expect("ask");
        let mask = answers.recv().expect("mask").expect("sched_getaffinity");
        assert!(mask.contains(here), "a worker with its slice is never restricted");
        cores.steer_off_current_cpu(0);
        tx.send(()).expect("ask");
        let mask = answers.recv().expect("mask").expect("sched_getaffinity");
        assert!(!mask.contains(here), "the steered worker may still run on its waker's CPU {here}");
        assert_eq!(mask.count(), all.count() - 1);
        assert_eq!(cores.workers[0].excluded.load(Ordering::Relaxed), here);
        cores.stopped(0);
        cores.stopped(1);
        drop(tx);
        worker.join().expect("worker");
        assert!(all.apply_to(thread_id()));
    }
}
