//! The per-device state the runtime embeds ([`crate::device::Device`] holds one of each), and
//! its logic taking parameters: memory tables ([`memory`]), pools ([`pool`]), VMM and IPC
//! ([`vmm`]), streams and events ([`stream`]), and the memory history ([`obs`]).
//!
//! Nothing here knows [`crate::runtime::Runtime`] or calls into [`crate::api`]: a function here
//! takes the state (and the backend, when it needs one) as parameters.

pub mod kernel_args;
pub mod kernels;
pub mod managed;
pub mod memory;
pub mod notify;
pub mod obs;
pub mod pool;
pub mod res_limit;
pub mod stream;
pub mod stream_ctl;
pub mod task_fault;
pub mod vmm;
