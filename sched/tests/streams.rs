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
