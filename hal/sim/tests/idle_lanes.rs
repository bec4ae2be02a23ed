//! Stress of the give-back of idle lanes (the software NPU's scheduler keeps a few idle
//! lanes owned while a worker is awake and gives them back, under the lane's submit lock, before
//! a worker parks): many submitters launching one task at a time on shared queues, each waited
//! for with a timeout, so that no push stranded by a give-back goes unnoticed. A test binary of
//! its own: one `Sim` per process.

use std::sync::{Arc, Barrier};

use hal::{QueueId, Queues, TaskDesc};

mod common;
mod record;
use common::{small_sim, D0};
use record::{call, record_host_calls};

const SUBMITTERS: u64 = 4;
const DEPTH: u32 = 8;

/// Streams that go idle after every task while other threads push to them: each submitter
/// launches one task at a time on one of more queues than the workers keep idle (so lanes are
/// kept, watched by the spinner, given back when a worker parks, and given back over budget),
/// waits for it, and now and then yields for a while so that the workers park. A push that
/// races a give-back and is stranded never runs: its wait then times out and fails the test.
#[test]
fn pushes_racing_the_give_back_of_idle_lanes_are_never_stranded() {
    const QUEUES: usize = 12;
    const ROUNDS: u64 = 3000;
    let sim = Arc::new(small_sim(format!("simidle-{}", std::process::id())));
    let ran = record_host_calls(&sim, QUEUES);
    let queues: Vec<QueueId> = (0..QUEUES).map(|_| sim.create_queue(D0, DEPTH).expect("queue")).collect();
    let start = Arc::new(Barrier::new(SUBMITTERS as usize));
    let threads: Vec<_> = (0..SUBMITTERS)
        .map(|s| {
            let (sim, queues, start) = (Arc::clone(&sim), queues.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                for k in 0..ROUNDS {
                    // Submitters share queues, so a push often meets another's give-back.
                    let i = (k as usize * 7 + s as usize * 5) % QUEUES;
                    let call = call(i, s, k);
                    let seq = sim.submit(D0, queues[i], TaskDesc::HostFunc { call }).expect("submit");
                    // TIMEOUT: a stranded task never completes; 30 s is far beyond any run.
                    sim.wait(D0, queues[i], seq, Some(30_000)).expect("the task ran");
                    if k % 64 == 63 {
                        // Idle for a while, so that the workers give their lanes back and park.
                        for _ in 0..2000 {
                            std::thread::yield_now();
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("submitter");
    }
    let mut total = 0;
    for (i, r) in ran.iter().enumerate() {
        let r = r.lock().expect("records");
        total += r.len() as u64;
        for s in 0..SUBMITTERS {
            let mine: Vec<u64> = r.iter().filter(|e| e.0 == s).map(|e| e.1).collect();
            let want: Vec<u64> =
                (0..ROUNDS).filter(|&k| (k as usize * 7 + s as usize * 5) % QUEUES == i).collect();
            assert_eq!(mine, want, "queue {i}, submitter {s}: each task once, in order");
        }
    }
    assert_eq!(total, SUBMITTERS * ROUNDS, "every task ran exactly once");
    for q in queues {
        sim.destroy_queue(D0, q).expect("destroy");
    }
}
