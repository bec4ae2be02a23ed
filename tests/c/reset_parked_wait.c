/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reset_parked_wait.c - a stream parked on an aclrtValueWait that nothing
 * will satisfy cannot hang a forced reset or aclFinalize, and a plain reset
 * waits for it and says so.
 *
 *   1. aclrtResetDeviceForce drops the queued waits (an explicit stream and
 *      the default stream, with work queued behind them) and returns.
 *   2. aclFinalize resets every device the forced way and returns.
 *   3. aclrtResetDevice keeps waiting: a helper thread reads the runtime's
 *      stderr (redirected to a pipe) until the reset names the stream it waits
 *      for, and only then writes the awaited word; the reset must return after
 *      that write, never before.
 *
 * A watchdog alarm fails the program instead of letting it hang.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl.h"
#include "check.h"

#define SZ ((size_t)4096)

static void on_alarm(int sig)
{
    static const char msg[] = "reset_parked_wait: FAILED: watchdog: a reset or aclFinalize hung\n";

    (void)sig;
    if (write(1, msg, sizeof msg - 1) < 0) {
        _exit(4);
    }
    _exit(3);
}

/* Parks stream `s` (and the default stream) on words of a fresh allocation nobody writes, with
 * more work queued behind; returns the allocation. */
static void *park(aclrtStream s)
{
    void *dev = NULL;
    aclrtStreamStatus status = ACL_STREAM_STATUS_COMPLETE;

    CHECK_OK(aclrtMalloc(&dev, SZ, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemset(dev, SZ, 0, SZ));
    CHECK_OK(aclrtValueWait(dev, 1, ACL_STREAM_WAIT_VALUE_EQ, s));
    CHECK_OK(aclrtMemsetAsync((char *)dev + 64, 64, 0xAB, 64, s));
    CHECK_OK(aclrtValueWait((char *)dev + 8, 1, ACL_STREAM_WAIT_VALUE_EQ, NULL));
    CHECK_OK(aclrtStreamQuery(s, &status));
    CHECK(status != ACL_STREAM_STATUS_COMPLETE); /* parked */
    return dev;
}

struct helper {
    int fd;
    void *word;
    volatile int released;
    char seen[4096];
};

static void *release_when_named(void *arg)
{
    struct helper *h = (struct helper *)arg;
    size_t n = 0;
    char c;

    while (n + 1 < sizeof h->seen && read(h->fd, &c, 1) == 1) {
        h->seen[n++] = c;
        h->seen[n] = '\0';
        if (c == '\n' && strstr(h->seen, "is waiting for stream") != NULL) {
            break;
        }
    }
    h->released = 1;
    /* Device memory of the software NPU is mapped in this process: a plain store satisfies
     * the wait (parked waits are re-checked by the device). */
    *(volatile uint64_t *)h->word = 1;
    return NULL;
}

int main(void)
{
    aclrtStream s = NULL;
    const char *backend = getenv("ACLRS_BACKEND");
    int davinci = backend != NULL && strncmp(backend, "davinci", 7) == 0;
    struct helper h;
    pthread_t t;
    int fds[2], saved;

    signal(SIGALRM, on_alarm);
    alarm(60);
    if (!CHECK_OK(aclInit(NULL))) {
        return check_summary("reset_parked_wait");
    }

    check_section("aclrtResetDeviceForce drops parked waits");
    if (davinci) {
        printf("  SKIPPED: the davinci driver ABI has no call that drops a queue's tasks, so a forced reset waits there like a plain one\n");
    } else {
        CHECK_OK(aclrtSetDevice(0));
        CHECK_OK(aclrtSetDevice(0));
        CHECK_OK(aclrtCreateStream(&s));
        (void)park(s);
        CHECK_OK(aclrtResetDeviceForce(0));
        CHECK_FAIL(aclrtResetDevice(0), ACL_ERROR_RT_CONTEXT_NULL);
        CHECK_OK(aclrtSetDevice(0));
        CHECK_OK(aclrtCreateStream(&s));
        CHECK_OK(aclrtSynchronizeStream(s));
        CHECK_OK(aclrtDestroyStream(s));
        CHECK_OK(aclrtResetDevice(0));
    }

    check_section("aclFinalize resets the forced way");
    if (davinci) {
        printf("  SKIPPED: as above\n");
    } else {
        CHECK_OK(aclrtSetDevice(0));
        CHECK_OK(aclrtCreateStream(&s));
        (void)park(s);
        CHECK_OK(aclFinalize());
        CHECK_OK(aclInit(NULL));
    }

    check_section("aclrtResetDevice waits, and says what for");
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&s));
    memset(&h, 0, sizeof h);
    h.word = NULL;
    CHECK_OK(aclrtMalloc(&h.word, SZ, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemset(h.word, SZ, 0, SZ));
    CHECK_OK(aclrtValueWait(h.word, 1, ACL_STREAM_WAIT_VALUE_EQ, s));
    fflush(stderr);
    saved = dup(2);
    if (!CHECK(saved >= 0 && pipe(fds) == 0 && dup2(fds[1], 2) == 2)) {
        return check_summary("reset_parked_wait");
    }
    h.fd = fds[0];
    CHECK(pthread_create(&t, NULL, release_when_named, &h) == 0);
    CHECK_OK(aclrtResetDevice(0));
    CHECK(h.released == 1);
    fflush(stderr);
    dup2(saved, 2);
    close(fds[1]);
    pthread_join(t, NULL);
    close(fds[0]);
    printf("  the reset said: %s", h.seen);
    CHECK(strstr(h.seen, "aclrtResetDevice(0) is waiting for stream") != NULL);
    CHECK(strstr(h.seen, "aclrtValueWait") != NULL);

    CHECK_OK(aclFinalize());
    alarm(0);
    return check_summary("reset_parked_wait");
}
