//! Submissions racing the destruction of their own queue on the software NPU: each one is
//! either ordered before the destroy (accepted; then a plain destroy waits for it, so it
//! ran, and a forced one lets it run or drops it) or refused with `InvalidHandle`. None is
//! accepted and then lost, and nothing of the queue runs after its destroy returned. Shallow
//! queues keep the submitters in back-pressure, where the destroy's wait and their pushes
//! overlap. Every other submitter goes through the queue's port instead of `Queues::submit`.
//! A test binary of its own: one `Sim` per process.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hal::{AbortHead, ErrorKind, HostCall, QueueId, Queues, TaskDesc};

mod common;
use common::{small_sim, D0};

const SUBMITTERS: usize = 3;
const ROUNDS: u64 = 150;
const DEPTH: u32 = 4;

/// What one round counts.
#[derive(Default)]
struct Round {
    accepted: AtomicU64,
    refused: AtomicU64,
    /// Refusals of any other kind (printed).
    odd: Mutex<Vec<String>>,
}

#[test]
fn a_submission_racing_its_queues_destroy_runs_or_is_refused() {
    let sim = Arc::new(small_sim(format!("simdestroyrace-{}", std::process::id())));
    // `data` names the round: a host call counts into it.
    let ran: Arc<Vec<AtomicU64>> = Arc::new((0..ROUNDS).map(|_| AtomicU64::new(0)).collect());
    let seen = Arc::clone(&ran);
    sim.set_host_hook(Arc::new(move |call: HostCall| {
        seen[usize::try_from(call.data).expect("round")].fetch_add(1, Ordering::Relaxed);
        0
    }));
    let rounds: Arc<Vec<Round>> = Arc::new((0..ROUNDS).map(|_| Round::default()).collect());
    // The round in flight (`u64::MAX`: none yet) and its queue, published together.
    let target: Arc<Mutex<(u64, QueueId)>> = Arc::new(Mutex::new((u64::MAX, QueueId(0))));
    let done = Arc::new(AtomicUsize::new(0));
    let over = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..SUBMITTERS)
        .map(|i| {
            let (sim, rounds, target, done, over) = (
                Arc::clone(&sim),
                Arc::clone(&rounds),
                Arc::clone(&target),
                Arc::clone(&done),
                Arc::clone(&over),
            );
            std::thread::spawn(move || {
                let mut last = u64::MAX;
                while !over.load(Ordering::Acquire) {
                    let (r, q) = *target.lock().expect("target");
                    if r == last || r == u64::MAX {
                        std::thread::yield_now();
                        continue;
                    }
                    last = r;
                    let round = &rounds[usize::try_from(r).expect("round")];
                    // Every other submitter goes through the queue's port (`Queues::port`),
                    // taken once per round as the runtime does; a queue already gone has none.
                    let port = if i % 2 == 1 {
                        match sim.port(D0, q) {
                            Some(p) => Some(p),
                            None => {
                                round.refused.fetch_add(1, Ordering::AcqRel);
                                done.fetch_add(1, Ordering::AcqRel);
                                continue;
                            }
                        }
                    } else {
                        None
                    };
                    loop {
                        let call = HostCall { func: 0, data: r, report: None };
                        let task = TaskDesc::HostFunc { call };
                        let submitted = match &port {
                            Some(p) => p.submit(&task),
                            None => sim.submit(D0, q, task),
                        };
                        match submitted {
                            Ok(_) => {
                                round.accepted.fetch_add(1, Ordering::AcqRel);
                            }
                            Err(e) if e.kind() == ErrorKind::InvalidHandle => {
                                round.refused.fetch_add(1, Ordering::AcqRel);
                                break;
                            }
                            Err(e) => {
                                round.odd.lock().expect("odd").push(format!("{e:?}"));
                                break;
                            }
                        }
                    }
                    done.fetch_add(1, Ordering::AcqRel);
                }
            })
        })
        .collect();
    let mut cancelled = 0;
    for r in 0..ROUNDS {
        let round = &rounds[usize::try_from(r).expect("round")];
        let q = sim.create_queue(D0, DEPTH).expect("queue");
        done.store(0, Ordering::Release);
        *target.lock().expect("target") = (r, q);
        // Destroy while the submitters are in full flight.
        while round.accepted.load(Ordering::Acquire) < 4 * (r % 4 + 1)
            && done.load(Ordering::Acquire) < SUBMITTERS
        {
            std::thread::yield_now();
        }
        let forced = r % 2 == 1;
        if forced {
            sim.abort_queue(D0, q, AbortHead::Runs).expect("abort");
        }
        sim.destroy_queue(D0, q).expect("destroy");
        let ran_at_destroy = ran[usize::try_from(r).expect("round")].load(Ordering::Acquire);
        // Each submitter ends the round with a refusal.
        while done.load(Ordering::Acquire) < SUBMITTERS {
            std::thread::yield_now();
        }
        let odd = round.odd.lock().expect("odd").clone();
        assert!(odd.is_empty(), "round {r}: refusals of another kind: {odd:?}");
        let accepted = round.accepted.load(Ordering::Acquire);
        let now = ran[usize::try_from(r).expect("round")].load(Ordering::Acquire);
        assert_eq!(now, ran_at_destroy, "round {r}: a task of the queue ran after its destroy returned");
        if forced {
            assert!(now <= accepted, "round {r}: more ran than was accepted");
            cancelled += accepted - now;
        } else {
            assert_eq!(now, accepted, "round {r}: every accepted task ran before the plain destroy returned");
        }
        assert_eq!(round.refused.load(Ordering::Acquire), SUBMITTERS as u64, "round {r}");
    }
    over.store(true, Ordering::Release);
    for t in threads {
        t.join().expect("submitter");
    }
    eprintln!("destroy_race: {ROUNDS} rounds, {cancelled} accepted tasks dropped by forced destroys");
}
