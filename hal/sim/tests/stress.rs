//! Stress of the software NPU's task scheduler: many submitter threads × many queues, with
//! back-pressure (shallow rings), cross-queue waits and event records (which take the locked
//! path while plain tasks go through the queues' lanes), checking that no task is lost, run
//! twice or run out of its submitter's order on its queue, that each queue runs its tasks in
//! the order of the sequence numbers its submissions returned (whichever path they took), and
//! that every synchronisation returns. A test binary of its own: one `Sim` per process.

use std::collections::HashMap;
use std::sync::{Arc, Barrier, Mutex};

use hal::{Events, QueueId, Queues, TaskDesc};

mod common;
mod record;
use common::{small_sim, D0};
use record::{call, record_host_calls};

const SUBMITTERS: u64 = 4;
const QUEUES: usize = 8;
const TASKS: u64 = 2000;
const DEPTH: u32 = 8;

#[test]
fn many_submitters_many_queues_lose_duplicate_and_reorder_nothing() {
    let sim = Arc::new(small_sim(format!("simstress-{}", std::process::id())));
    let ran = record_host_calls(&sim, QUEUES);
    let queues: Vec<QueueId> = (0..QUEUES).map(|_| sim.create_queue(D0, DEPTH).expect("queue")).collect();
    // Per queue: the sequence number each task's submission returned, by its `data`.
    let seqs: Arc<Vec<Mutex<HashMap<u64, u64>>>> =
        Arc::new((0..QUEUES).map(|_| Mutex::new(HashMap::new())).collect());
    let start = Arc::new(Barrier::new(SUBMITTERS as usize));
    let threads: Vec<_> = (0..SUBMITTERS)
        .map(|s| {
            let (sim, queues, start, seqs) =
                (Arc::clone(&sim), queues.clone(), Arc::clone(&start), Arc::clone(&seqs));
            std::thread::spawn(move || {
                let event = sim.create_event(D0).expect("event");
                start.wait();
                let mut last = vec![0u64; QUEUES];
                for k in 0..TASKS {
                    for j in 0..QUEUES {
                        // Submitters start on different queues so they contend for each one.
                        let i = (j + s as usize) % QUEUES;
                        let q = queues[i];
                        let call = call(i, s, k);
                        last[i] = sim.submit(D0, q, TaskDesc::HostFunc { call }).expect("submit");
                        seqs[i].lock().expect("seqs").insert(call.data, last[i]);
                        if k % 37 == 5 {
                            // An event record takes the locked path behind the lane's tasks.
                            match sim.record_event(D0, q, event) {
                                Ok(seq) => assert!(seq > last[i], "a record numbered after our task"),
                                Err(e) => assert_eq!(e.kind(), hal::ErrorKind::QueueFull, "record: {e:?}"),
                            }
                        }
                        if k % 50 == 49 {
                            // Now and then wait on the next queue's latest task of ours.
                            let j = (i + 1) % QUEUES;
                            if last[j] > 0 {
                                // A wait takes no back-pressure: on a full ring, let it drain
                                // to our latest task and try again.
                                while let Err(e) = sim.wait_point(D0, q, queues[j], last[j]) {
                                    assert_eq!(e.kind(), hal::ErrorKind::QueueFull, "wait point: {e:?}");
                                    sim.wait(D0, q, last[i], None).expect("drain for room");
                                }
                            }
                        }
                    }
                    if k % 200 == 199 {
                        // Synchronise one queue from this thread while the others keep going.
                        let i = (k as usize / 200 + s as usize) % QUEUES;
                        sim.wait(D0, queues[i], last[i], None).expect("synchronise");
                    }
                }
                last
            })
        })
        .collect();
    for t in threads {
        t.join().expect("submitter");
    }
    for &q in &queues {
        let submitted = sim.progress(D0, q).expect("progress").submitted;
        sim.wait(D0, q, submitted, None).expect("drain");
        assert_eq!(sim.progress(D0, q).expect("progress").completed, submitted);
        assert_eq!(sim.take_error(D0, q).expect("error"), None);
    }
    for (i, r) in ran.iter().enumerate() {
        let r = r.lock().expect("records");
        assert_eq!(r.len() as u64, SUBMITTERS * TASKS, "queue {i}: every task ran exactly once");
        for s in 0..SUBMITTERS {
            let mine: Vec<u64> = r.iter().filter(|e| e.0 == s).map(|e| e.1).collect();
            assert_eq!(mine, (0..TASKS).collect::<Vec<_>>(), "queue {i}, submitter {s}: in order, none lost");
        }
        let seqs = seqs[i].lock().expect("seqs");
        let order: Vec<u64> = r.iter().map(|&(s, k)| seqs[&((s << 32) | k)]).collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "queue {i}: tasks ran in sequence order");
    }
    for q in queues {
        sim.destroy_queue(D0, q).expect("destroy");
    }
}
