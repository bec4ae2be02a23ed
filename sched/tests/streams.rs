//! Public-API tests of the executor: many streams, interleaved submission and completion.

use hal::{ErrorKind, TaskStatus};
use sched::{Error, Executor, FailureMode, StreamId, TaskRunner};

/// Fails every task whose value is a multiple of 7 and records the order tasks ran in.
struct Runner {
    ran: Vec<(StreamId, u64, u32)>,
}

impl TaskRunner<u32> for Runner {
    fn run(&mut self, stream: StreamId, seq: u64, task: &u32) -> Result<(), ErrorKind> {
        self.ran.push((stream, seq, *task));
        if task % 7 == 0 {
            Err(ErrorKind::DeviceFault)
        } else {
            Ok(())
        }
    }
}

#[test]
fn interleaved_streams_keep_order_and_bounds() {
    const STREAMS: u32 = 3;
    const CAPACITY: usize = 3;
    let mut ex = Executor::new(STREAMS as usize);
    let ids: Vec<StreamId> = (0..STREAMS).map(|_| ex.create_stream(CAPACITY).unwrap()).collect();
    ex.set_failure_mode(ids[2], FailureMode::StopOnFailure).unwrap();
    let mut runner = Runner { ran: Vec::new() };
    let mut next_task = 1u32;
    let mut full = 0;
    // Submit in bursts larger than the rings, draining a little between bursts.
    for round in 0..20 {
        for &id in &ids {
            for _ in 0..(round % 4 + 1) {
                match ex.submit(id, next_task) {
                    Ok(seq) => assert_eq!(seq, ex.submitted_seq(id).unwrap()),
                    Err(e) => {
                        assert_eq!(e, Error::Full);
                        full += 1;
                    }
                }
                next_task += 1;
            }
        }
        // Run one task by hand, then let the loop drain the rest every other round.
        if let Some((id, seq, task)) = ex.take_ready() {
            let status =
                if task % 7 == 0 { TaskStatus::Failed(ErrorKind::DeviceFault) } else { TaskStatus::Ok };
            runner.ran.push((id, seq, task));
            ex.finish(id, seq, status).unwrap();
        }
        if round % 2 == 1 {
            ex.run_once(&mut runner);
        }
    }
    ex.run_once(&mut runner);
    assert!(ex.is_idle());
    assert!(full > 0, "the bursts should have hit back-pressure");
    for &id in &ids {
        let seqs: Vec<u64> = runner.ran.iter().filter(|r| r.0 == id).map(|r| r.1).collect();
        // Sequence numbers run in order; Continue streams run every task.
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{id:?}: {seqs:?}");
        assert_eq!(ex.completed_seq(id), ex.submitted_seq(id));
        if id != ids[2] {
            assert_eq!(seqs.len() as u64, ex.submitted_seq(id).unwrap());
        }
        let tasks: Vec<u32> = runner.ran.iter().filter(|r| r.0 == id).map(|r| r.2).collect();
        let failed = tasks.iter().any(|t| t % 7 == 0);
        let expected = failed.then_some(ErrorKind::DeviceFault);
        assert_eq!(ex.take_error(id).unwrap(), expected);
    }
}

#[test]
fn round_robin_is_fair_under_load() {
    let mut ex = Executor::new(4);
    let ids: Vec<StreamId> = (0..4).map(|_| ex.create_stream(16).unwrap()).collect();
    for &id in &ids {
        for t in 0..10 {
            ex.submit(id, t + 1).unwrap();
        }
    }
    let mut order = Vec::new();
    while let Some((id, seq, _)) = ex.take_ready() {
        order.push(id);
        ex.finish(id, seq, TaskStatus::Ok).unwrap();
    }
    // Every window of four consecutive tasks covers all four streams.
    assert_eq!(order.len(), 40);
    for chunk in order.chunks(4) {
        let mut c = chunk.to_vec();
        c.sort();
        assert_eq!(c, ids);
    }
}

mod run_once_matches_take_ready {
    //! `run_once` runs lone streams in bursts and several streams in rounds, deferring the
    //! bookkeeping; whatever it defers, it must run exactly what a take/finish loop runs, in
    //! the same order, and leave the same state behind.

    use proptest::prelude::*;
    use sched::{EventId, EventStatus, StreamPoint};

    use super::*;

    /// Streams named by the ops; a side of fewer streams takes them modulo its count. (Up to
    /// 8 ready streams a round holds on to them, more it looks up per task: both are run.)
    const STREAMS: usize = 10;

    #[derive(Clone, Debug)]
    enum Op {
        /// A task on a stream; it fails when the flag is set.
        Task(usize, bool),
        /// A task on every stream, in order (so that several streams have several tasks
        /// queued, as round-robin submission leaves them); the one on stream `.0` fails when
        /// the flag is set.
        TaskEach(usize, bool),
        /// Stream `.0` waits for the latest item submitted so far to stream `.1`.
        Wait(usize, usize),
        /// Record event `.1` on stream `.0`.
        Record(usize, usize),
        /// Stream `.0` waits on event `.1`.
        WaitEvent(usize, usize),
        /// Drain the executor (the two ways being compared).
        Drain,
        /// Run a single task by hand (take, finish), in both executors alike.
        TakeOne,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            8 => (0..STREAMS, proptest::bool::weighted(0.1)).prop_map(|(s, f)| Op::Task(s, f)),
            3 => (0..STREAMS, proptest::bool::weighted(0.2)).prop_map(|(s, f)| Op::TaskEach(s, f)),
            1 => (0..STREAMS, 0..STREAMS).prop_map(|(a, b)| Op::Wait(a, b)),
            1 => (0..STREAMS, 0..2usize).prop_map(|(s, e)| Op::Record(s, e)),
            1 => (0..STREAMS, 0..2usize).prop_map(|(s, e)| Op::WaitEvent(s, e)),
            1 => Just(Op::Drain),
            1 => Just(Op::TakeOne),
        ]
    }

    /// Fails the tasks whose value is odd; records what ran.
    struct Log(Vec<(StreamId, u64, u32)>);

    impl TaskRunner<u32> for Log {
        fn run(&mut self, stream: StreamId, seq: u64, task: &u32) -> Result<(), ErrorKind> {
            self.0.push((stream, seq, *task));
            if task % 2 == 1 {
                Err(ErrorKind::DeviceFault)
            } else {
                Ok(())
            }
        }
    }

    fn status(task: u32) -> TaskStatus {
        if task % 2 == 1 {
            TaskStatus::Failed(ErrorKind::DeviceFault)
        } else {
            TaskStatus::Ok
        }
    }

    /// The reference drain: one take and one finish per task.
    fn drain_by_hand(ex: &mut Executor<u32>, log: &mut Log) -> usize {
        let mut ran = 0;
        while let Some((id, seq, task)) = ex.take_ready() {
            log.0.push((id, seq, task));
            ex.finish(id, seq, status(task)).unwrap();
            ran += 1;
        }
        ran
    }

    struct Side {
        ex: Executor<u32>,
        ids: Vec<StreamId>,
        events: Vec<EventId>,
        log: Log,
    }

    impl Side {
        fn new(streams: usize) -> Self {
            let mut ex = Executor::new(streams);
            let ids: Vec<StreamId> = (0..streams).map(|_| ex.create_stream(6).unwrap()).collect();
            ex.set_failure_mode(ids[3 % streams], FailureMode::StopOnFailure).unwrap();
            let events = (0..2).map(|_| ex.create_event().unwrap()).collect();
            Self { ex, ids, events, log: Log(Vec::new()) }
        }

        /// Applies `op`; answers what the executor answered, to compare.
        fn apply(&mut self, op: &Op, next: u32, by_hand: bool) -> String {
            let ex = &mut self.ex;
            let n = self.ids.len();
            match *op {
                Op::Task(s, fails) => {
                    format!("{:?}", ex.submit(self.ids[s % n], next * 2 + u32::from(fails)))
                }
                Op::TaskEach(s, fails) => {
                    let answers: Vec<_> = (0..n)
                        .map(|t| {
                            // CAST: fewer than 2^24 ops and a handful of streams.
                            let task =
                                (next * STREAMS as u32 + t as u32) * 2 + u32::from(fails && s % n == t);
                            ex.submit(self.ids[t], task)
                        })
                        .collect();
                    format!("{answers:?}")
                }
                Op::Wait(a, b) => {
                    let target = StreamPoint {
                        stream: self.ids[b % n].0,
                        seq: ex.submitted_seq(self.ids[b % n]).unwrap(),
                    };
                    format!("{:?}", ex.submit_wait(self.ids[a % n], target))
                }
                Op::Record(s, e) => format!("{:?}", ex.record_event(self.events[e], self.ids[s % n])),
                Op::WaitEvent(s, e) => format!("{:?}", ex.wait_event(self.ids[s % n], self.events[e])),
                Op::Drain => {
                    let ran =
                        if by_hand { drain_by_hand(ex, &mut self.log) } else { ex.run_once(&mut self.log) };
                    format!("ran {ran}")
                }
                Op::TakeOne => match ex.take_ready() {
                    Some((id, seq, task)) => {
                        self.log.0.push((id, seq, task));
                        format!("{:?}", ex.finish(id, seq, status(task)))
                    }
                    None => "none".to_owned(),
                },
            }
        }

        /// Everything observable about the streams and events.
        fn state(&mut self) -> Vec<String> {
            let mut out = Vec::new();
            for &id in &self.ids {
                out.push(format!(
                    "{id:?}: done {:?} published {} submitted {:?} room {:?} error {:?}",
                    self.ex.completed_seq(id),
                    self.ex.progress(id).unwrap().completed(),
                    self.ex.submitted_seq(id),
                    self.ex.has_room(id),
                    self.ex.take_error(id),
                ));
            }
            for &ev in &self.events {
                let st: Result<EventStatus, _> = self.ex.event_status(ev);
                out.push(format!("{ev:?}: {st:?}"));
            }
            out.push(format!(
                "idle {} ready {} parked {} finished {}",
                self.ex.is_idle(),
                self.ex.has_ready(),
                self.ex.has_parked(),
                self.ex.finished_items()
            ));
            out
        }
    }

    /// The most operations of a case: fewer under Miri, which interprets the same code some
    /// thousand times slower (every kind of operation still comes up).
    const OPS: usize = if cfg!(miri) { 40 } else { 80 };

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: if cfg!(miri) { 2 } else { 512 },
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn same_runs_same_order_same_state(ops in proptest::collection::vec(op(), 1..OPS)) {
            compare(4, &ops)?;
        }

        #[test]
        fn same_with_more_streams_than_a_round_holds(ops in proptest::collection::vec(op(), 1..OPS)) {
            compare(STREAMS, &ops)?;
        }
    }

    /// Rounds of every size a round holds (2 to 8 streams, and more), over rings that wrap at
    /// different laps on each stream, with a failure and an event record in the middle of the
    /// laps: the cases of the slices the rounds walk, each one surely met.
    #[test]
    #[cfg_attr(miri, ignore = "safe code only, run natively; minutes under Miri")]
    fn rounds_over_wrapping_rings_with_a_failure_or_record_mid_lap() {
        for streams in (2..=8).chain([STREAMS]) {
            let mut ops = Vec::new();
            for round in 0..12 {
                // Shift each stream's ring by a different amount, so that the rings wrap at
                // different laps of the next drain.
                for s in 0..streams {
                    for _ in 0..(s * 5 + round) % 4 {
                        ops.push(Op::Task(s, false));
                    }
                }
                ops.push(Op::Drain);
                ops.push(Op::TaskEach(0, false));
                ops.push(Op::TaskEach(0, false));
                if round % 3 == 1 {
                    ops.push(Op::Record(round % streams, round % 2));
                }
                ops.push(Op::TaskEach(round % streams, round % 3 == 0));
                ops.push(Op::TaskEach(0, false));
                ops.push(Op::Drain);
            }
            compare(streams, &ops).unwrap();
        }
    }

    /// Applies `ops` (then a drain) to two executors of `streams` streams, draining one with
    /// `run_once` and the other by hand, and compares every answer, the runs and the state.
    fn compare(streams: usize, ops: &[Op]) -> Result<(), TestCaseError> {
        let (mut fast, mut slow) = (Side::new(streams), Side::new(streams));
        for (i, op) in ops.iter().chain(core::iter::once(&Op::Drain)).enumerate() {
            // CAST: fewer than 2^31 ops.
            let next = i as u32;
            let a = fast.apply(op, next, false);
            let b = slow.apply(op, next, true);
            prop_assert_eq!(a, b, "answer to {:?}", op);
            prop_assert_eq!(&fast.log.0, &slow.log.0, "after {:?}", op);
            prop_assert_eq!(fast.state(), slow.state(), "after {:?}", op);
        }
        Ok(())
    }
}
