/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_sim.h - extensions for kernels that run on the aclrs software NPU.
 *
 * Not part of CANN. On the software NPU a kernel binary is a host shared
 * object and a kernel is an exported function with the signature
 *
 *     void NAME(uint32_t block_idx, uint32_t block_dim, void *args);
 *
 * called once per block (blocks may run concurrently). `args` points to a copy
 * of the launch's argument bytes; device pointers inside it can be
 * dereferenced directly.
 */
#ifndef ACLRS_ACL_ACL_SIM_H
#define ACLRS_ACL_ACL_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Reports a fault from inside a kernel running on the software NPU. The kernel
 * should return right after calling it. The launch then fails with `code`, or
 * with ACL_ERROR_RT_AICORE_EXCEPTION (507015) when `code` is 0, and the error
 * surfaces at the next synchronisation of the stream, as on real hardware.
 * Only meaningful when called from a kernel body during a launch.
 */
ACL_FUNC_VISIBILITY void aclrsKernelFail(int32_t code);

/*
 * Memory observability (not part of CANN).
 *
 * aclrsMemSummary writes a readable summary of this process's device memory,
 * one table per open device (allocated, active, reserved, per component, per
 * stream-ordered pool, peaks), like torch.cuda.memory_summary(). It returns
 * the length of the whole summary without the terminating NUL, and writes at
 * most len - 1 bytes of it plus a NUL when len > 0 (like snprintf: a return
 * value >= len means the text was truncated; call with buf = NULL, len = 0 to
 * size the buffer). It returns 0 on error (before aclInit, or buf NULL with
 * len > 0), with the reason in aclGetRecentErrMsg.
 */
ACL_FUNC_VISIBILITY size_t aclrsMemSummary(char *buf, size_t len);

/*
 * aclrsMemRecordHistory(1, maxEntries) starts recording allocation events
 * (alloc, free_requested, free_completed, segment_alloc, segment_free, oom)
 * with their host stack frames, keeping the newest maxEntries (0: 100000),
 * and clears what was recorded before. aclrsMemRecordHistory(0, 0) stops
 * recording and keeps the events for later snapshots. Recording is per
 * process and may be switched before aclInit. ACL_ERROR_INVALID_PARAM for an
 * enable other than 0 or 1. Off, it costs one atomic load per allocation.
 */
ACL_FUNC_VISIBILITY aclError aclrsMemRecordHistory(int enable, size_t maxEntries);

/*
 * aclrsMemSnapshot writes a memory snapshot to path (replacing it): the
 * pickle torch.cuda.memory._dump_snapshot writes, a dict with `segments`
 * (every direct allocation, slab chunk and pool region of this process with
 * its blocks) and `device_traces` (the recorded events, one list per device),
 * which pytorch.org/memory_viz opens. Setting ACLRS_MEM_SNAPSHOT=PATH writes
 * one at aclFinalize and after every out-of-memory failure.
 * ACL_ERROR_INVALID_PARAM for a NULL or empty path or a file that cannot be
 * written; ACL_ERROR_UNINITIALIZE before aclInit.
 */
ACL_FUNC_VISIBILITY aclError aclrsMemSnapshot(const char *path);

/*
 * Writes one application log line, "[file:line] func: text", at level,
 * without formatting: what aclAppLog does once it has formatted its message.
 * Another level than ACL_DEBUG..ACL_ERROR is written at ERROR and named; NULL
 * text writes nothing.
 */
ACL_FUNC_VISIBILITY void aclrsAppLogWrite(aclLogLevel level, const char *func, const char *file, uint32_t line,
                                          const char *text);

/*
 * The sanitizer (not part of CANN). ACLRS_SANITIZE=memcheck,leak,race (any
 * subset, or all; off by default) checks device memory use on the software NPU:
 * memcheck puts a redzone and a guard page after every aclrtMalloc allocation
 * and keeps freed memory inaccessible in a quarantine (ACLRS_SANITIZE_QUARANTINE
 * bytes); leak reports what is still allocated at aclrtResetDevice(Force) and
 * aclFinalize; race reports pool blocks used on a stream not ordered after their
 * aclrtMemPoolMallocAsync, or after their aclrtMemPoolFreeAsync. Each finding is one JSON line plus a readable line in
 * ACLRS_SANITIZE_LOG (default standard error). aclrsSanitizerFindings returns
 * how many findings this process reported.
 */
ACL_FUNC_VISIBILITY uint64_t aclrsSanitizerFindings(void);

#ifdef __cplusplus
}
#endif

#endif /* ACLRS_ACL_ACL_SIM_H */
