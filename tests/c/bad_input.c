/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bad_input.c - every documented misuse of the core API returns its exact
 * code, leaves a message in aclGetRecentErrMsg(), and changes nothing: a live
 * allocation survives bad frees and still copies correctly, and the free
 * memory figure is unchanged by failed allocations.
 *
 * Unlike the other programs this one calls a few functions before aclInit,
 * to check ACL_ERROR_UNINITIALIZE.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

#define SZ ((size_t)1 << 20)

static size_t hbm_free(void)
{
    size_t f = 0, t = 0;

    if (aclrtGetMemInfo(ACL_HBM_MEM, &f, &t) != ACL_SUCCESS) {
        return (size_t)-1;
    }
    return f;
}

/* 1 when dev still holds fill_pattern(seed) (read back through malloc'd memory). */
static int dev_has_pattern(const void *dev, size_t len, unsigned seed)
{
    unsigned char *tmp = (unsigned char *)calloc(1, len);
    int ok;

    if (tmp == NULL) {
        return 0;
    }
    ok = aclrtMemcpy(tmp, len, dev, len, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS &&
         has_pattern(tmp, len, seed);
    free(tmp);
    return ok;
}

/* A host function that holds its stream until `gate` opens (so that work queued behind it,
 * such as a stream-ordered free, is still pending). */
static int gate;

static void wait_gate(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&gate, __ATOMIC_ACQUIRE)) {
    }
}

/* 1 when the most recent message exists and mentions `word`; reading it clears it. */
static int msg_mentions(const char *word)
{
    const char *msg = aclGetRecentErrMsg();

    printf("        message: %s\n", msg != NULL ? msg : "(null)");
    return msg != NULL && strstr(msg, word) != NULL;
}

int main(void)
{
    void *dev = NULL, *pinned = NULL, *p = NULL;
    unsigned char *host = (unsigned char *)malloc(SZ);
    unsigned char *buf = (unsigned char *)malloc(SZ);
    uint32_t count = 0;
    int32_t id = -1;
    size_t before, f = 0, t = 0;
    aclrtRunMode mode = ACL_DEVICE;
    int pol;

    printf("bad_input: misuse returns exact codes and changes nothing\n");
    if (host == NULL || buf == NULL) {
        printf("bad_input: host malloc failed\n");
        return 1;
    }

    check_section("before aclInit");
    CHECK_FAIL(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
    CHECK_FAIL(aclrtMalloc(&p, SZ, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_UNINITIALIZE);

    check_section("aclInit twice");
    if (!CHECK_OK(aclInit(NULL))) {
        return check_summary("bad_input");
    }
    CHECK_FAIL(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);

    check_section("no device set on this thread yet");
    CHECK_FAIL(aclrtGetDevice(&id), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_FAIL(aclrtMalloc(&p, SZ, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);

    check_section("device ids and null out-pointers");
    CHECK_OK(aclrtGetDeviceCount(&count));
    printf("        device count %u\n", count);
    CHECK(count >= 1);
    CHECK_FAIL(aclrtSetDevice((int32_t)count), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtSetDevice((int32_t)count + 1), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtSetDevice(INT32_MIN), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtSetDevice(INT32_MAX), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtGetDevice(&id), ACL_ERROR_RT_CONTEXT_NULL); /* failed sets bound nothing */
    CHECK_FAIL(aclrtGetDeviceCount(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetRunMode(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtGetRunMode(&mode));
    CHECK(mode == ACL_HOST);

    if (!CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("bad_input");
    }
    CHECK_OK(aclrtGetDevice(&id));
    CHECK(id == 0);
    CHECK_FAIL(aclrtGetDevice(NULL), ACL_ERROR_INVALID_PARAM);

    check_section("aclGetRecentErrMsg names the argument and clears");
    CHECK_RET(aclrtMalloc(NULL, SZ, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK(msg_mentions("devPtr"));
    CHECK(aclGetRecentErrMsg() == NULL);
    CHECK_RET(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK(msg_mentions("size"));
    CHECK(aclGetRecentErrMsg() == NULL);

    check_section("a live allocation to protect");
    if (!CHECK_OK(aclrtMalloc(&dev, SZ, ACL_MEM_MALLOC_HUGE_FIRST)) ||
        !CHECK_OK(aclrtMallocHost(&pinned, SZ))) {
        return check_summary("bad_input");
    }
    fill_pattern(host, SZ, 1);
    CHECK_OK(aclrtMemcpy(dev, SZ, host, SZ, ACL_MEMCPY_HOST_TO_DEVICE));
    fill_pattern(pinned, SZ, 2);
    before = hbm_free();
    CHECK(before != (size_t)-1);

    check_section("aclrtMalloc misuse");
    p = NULL;
    CHECK_FAIL(aclrtMalloc(NULL, SZ, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMalloc(&p, SIZE_MAX, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMalloc(&p, SIZE_MAX - 16, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    CHECK_FAIL(aclrtMalloc(&p, t + ((size_t)1 << 30), ACL_MEM_MALLOC_HUGE_FIRST),
               ACL_ERROR_RT_MEMORY_ALLOCATION);
    CHECK_FAIL(aclrtMalloc(&p, f + ((size_t)64 << 20), ACL_MEM_MALLOC_NORMAL_ONLY),
               ACL_ERROR_RT_MEMORY_ALLOCATION);
    CHECK(hbm_free() == before);

    check_section("aclrtMalloc accepts every base policy 0..7");
    for (pol = 0; pol <= 7; pol++) {
        aclError rc;

        p = NULL;
        rc = aclrtMalloc(&p, 4096, (aclrtMemMallocPolicy)pol);
        printf("        policy %d -> %d\n", pol, rc);
        if (pol == ACL_MEM_MALLOC_HUGE1G_ONLY || pol == ACL_MEM_MALLOC_HUGE1G_ONLY_P2P) {
            /* valid, but the harness gives no 1 GiB budget */
            CHECK(rc == ACL_SUCCESS || rc == ACL_ERROR_RT_MEMORY_ALLOCATION);
            if (rc != ACL_SUCCESS) {
                CHECK(aclGetRecentErrMsg() != NULL);
            }
        } else {
            CHECK(rc == ACL_SUCCESS);
        }
        if (rc == ACL_SUCCESS) {
            CHECK(p != NULL && ((uintptr_t)p % 64u) == 0);
            CHECK_OK(aclrtFree(p));
        }
    }
    CHECK(hbm_free() == before);

    check_section("aclrtMallocHost misuse");
    CHECK_FAIL(aclrtMallocHost(NULL, SZ), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocHost(&p, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocHost(&p, SIZE_MAX), ACL_ERROR_INVALID_PARAM);

    check_section("aclrtFree of things that are not live device allocations");
    CHECK_FAIL(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtFree((unsigned char *)dev + 64), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtFree((unsigned char *)dev + 1), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtFree(host), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtFree(pinned), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtFree(&count), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(hbm_free() == before);
    CHECK(dev_has_pattern(dev, SZ, 1));
    CHECK(has_pattern(pinned, SZ, 2));
    memset(buf, 0, SZ);
    CHECK_OK(aclrtMemcpy(buf, SZ, dev, SZ, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(has_pattern(buf, SZ, 1));

    check_section("aclrtFreeHost of things that are not pinned allocations");
    CHECK_FAIL(aclrtFreeHost(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtFreeHost(dev), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtFreeHost(host), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtFreeHost((unsigned char *)pinned + 64), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(dev_has_pattern(dev, SZ, 1));
    CHECK(has_pattern(pinned, SZ, 2));
    CHECK_OK(aclrtMemcpy(dev, SZ, pinned, SZ, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(dev_has_pattern(dev, SZ, 2));

    check_section("double free");
    {
        void *d = NULL, *h = NULL;

        if (CHECK_OK(aclrtMalloc(&d, SZ, ACL_MEM_MALLOC_NORMAL_ONLY))) {
            CHECK_OK(aclrtFree(d));
            CHECK(hbm_free() == before);
            CHECK_FAIL(aclrtFree(d), ACL_ERROR_RT_PARAM_INVALID);
            CHECK(hbm_free() == before);
            /* the freed range is no longer copyable */
            CHECK_FAIL(aclrtMemcpy(d, SZ, host, SZ, ACL_MEMCPY_HOST_TO_DEVICE),
                       ACL_ERROR_RT_PARAM_INVALID);
            CHECK_FAIL(aclrtMemcpy(buf, SZ, d, SZ, ACL_MEMCPY_DEVICE_TO_HOST),
                       ACL_ERROR_RT_PARAM_INVALID);
        }
        if (CHECK_OK(aclrtMallocHost(&h, 4096))) {
            CHECK_OK(aclrtFreeHost(h));
            CHECK_FAIL(aclrtFreeHost(h), ACL_ERROR_RT_PARAM_INVALID);
        }
        CHECK(dev_has_pattern(dev, SZ, 2));
    }

    check_section("aclrtMemcpy misuse");
    CHECK_OK(aclrtMemcpy(NULL, 0, NULL, 0, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtMemcpy(NULL, SZ, NULL, 0, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK_OK(aclrtMemcpy(dev, SZ, NULL, 0, ACL_MEMCPY_DEFAULT));
    CHECK_FAIL(aclrtMemcpy(NULL, SZ, host, SZ, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpy(dev, SZ, NULL, SZ, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpy(dev, SZ, host, SZ, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpy(dev, SZ, host, SZ, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpy(dev, SZ, host, SZ, (aclrtMemcpyKind)0x7FFFFFFF), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpy(dev, SZ, host, SZ, (aclrtMemcpyKind)-1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpy(dev, SZ - 1, host, SZ, ACL_MEMCPY_HOST_TO_DEVICE),
               ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemcpy(buf, 100, dev, 101, ACL_MEMCPY_DEVICE_TO_HOST),
               ACL_ERROR_RT_PARAM_INVALID);
    /* device ranges that run past the end of the allocation */
    CHECK_FAIL(aclrtMemcpy((unsigned char *)dev + SZ - 10, SZ, host, SZ, ACL_MEMCPY_HOST_TO_DEVICE),
               ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemcpy(buf, SZ, (unsigned char *)dev + SZ / 2, SZ, ACL_MEMCPY_DEVICE_TO_HOST),
               ACL_ERROR_RT_PARAM_INVALID);
    CHECK(dev_has_pattern(dev, SZ, 2));

    check_section("aclrtMemset misuse and semantics");
    CHECK_OK(aclrtMemset(NULL, 0, 0x11, 0));
    CHECK_OK(aclrtMemset(dev, SZ, 0x11, 0));
    CHECK(dev_has_pattern(dev, SZ, 2));
    CHECK_FAIL(aclrtMemset(NULL, SZ, 0x11, SZ), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemset(dev, SZ - 1, 0x11, SZ), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(dev_has_pattern(dev, SZ, 2));
    CHECK_OK(aclrtMemset(dev, SZ, 0x1234AB, SZ)); /* only the low byte counts */
    memset(buf, 0, SZ);
    CHECK_OK(aclrtMemcpy(buf, SZ, dev, SZ, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(all_bytes(buf, SZ, 0xAB));
    CHECK_OK(aclrtMemset(pinned, SZ, 0x5A, SZ / 2));
    CHECK(all_bytes(pinned, SZ / 2, 0x5A));
    fill_pattern(buf, SZ, 2); /* the second half must still hold the old pattern */
    CHECK(memcmp((unsigned char *)pinned + SZ / 2, buf + SZ / 2, SZ / 2) == 0);

    check_section("aclrtMemsetAsync after a free, past the end, into another allocation");
    {
        /* A thread's async memsets into one buffer skip the device's memory lock once the
         * buffer was found live; the range is still checked, and a free ends it at once. */
        void *a = NULL, *b = NULL;
        aclrtStream s = NULL;
        CHECK_OK(aclrtCreateStream(&s));
        CHECK_OK(aclrtMalloc(&a, SZ, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_OK(aclrtMalloc(&b, SZ, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_OK(aclrtMemsetAsync(a, SZ, 1, SZ, s));
        CHECK_OK(aclrtMemsetAsync((unsigned char *)a + 8, SZ - 8, 2, SZ - 8, s));
        CHECK_FAIL(aclrtMemsetAsync((unsigned char *)a + SZ / 2, SZ, 3, SZ, s), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_OK(aclrtMemsetAsync(b, SZ, 4, SZ, s));
        CHECK_OK(aclrtMemsetAsync(a, SZ, 5, SZ / 2, s));
        CHECK_OK(aclrtSynchronizeStream(s));
        memset(buf, 0, SZ);
        CHECK_OK(aclrtMemcpy(buf, SZ, a, SZ, ACL_MEMCPY_DEVICE_TO_HOST));
        CHECK(all_bytes(buf, SZ / 2, 5) && buf[SZ / 2] == 2 && buf[SZ - 1] == 2);
        CHECK_OK(aclrtFree(a));
        CHECK_FAIL(aclrtMemsetAsync(a, SZ, 6, SZ, s), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemsetAsync((unsigned char *)a + 8, 8, 6, 8, s), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_OK(aclrtMemsetAsync(b, SZ, 7, SZ, s));
        CHECK_OK(aclrtSynchronizeStream(s));
        CHECK_OK(aclrtFree(b));
        CHECK_FAIL(aclrtMemsetAsync(b, SZ, 8, SZ, s), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_OK(aclrtSynchronizeStream(s));
        CHECK_OK(aclrtDestroyStream(s));
    }

    check_section("aclrtFree of small (slab) objects: inside, twice, after a stream-ordered free");
    {
        /* Small allocations share 2 MiB chunks: a free of one is checked by the chunk's slot
         * arithmetic alone; every misuse is still refused and changes nothing. */
        void *a = NULL, *b = NULL, *c = NULL;
        unsigned char small[4096];
        aclrtStream s = NULL;
        size_t f0 = hbm_free();

        CHECK_OK(aclrtCreateStream(&s));
        CHECK_OK(aclrtMalloc(&a, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_OK(aclrtMalloc(&b, 100, ACL_MEM_MALLOC_NORMAL_ONLY));
        CHECK_OK(aclrtMalloc(&c, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
        if (a != NULL && b != NULL && c != NULL) {
            fill_pattern(small, sizeof small, 9);
            CHECK_OK(aclrtMemcpy(c, 4096, small, sizeof small, ACL_MEMCPY_HOST_TO_DEVICE));
            CHECK_RET(aclrtFree((unsigned char *)a + 64), ACL_ERROR_RT_PARAM_INVALID);
            CHECK(msg_mentions("inside"));
            CHECK_FAIL(aclrtFree((unsigned char *)a + 4096 + 1), ACL_ERROR_RT_PARAM_INVALID);
            CHECK_OK(aclrtFree(a));
            CHECK_RET(aclrtFree(a), ACL_ERROR_RT_PARAM_INVALID);
            CHECK(msg_mentions("double free"));
            /* While the stream-ordered free waits behind the held stream, aclrtFree is refused;
             * once it ran, the pointer is freed (a second free is a double free). */
            __atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
            CHECK_OK(aclrtLaunchHostFunc(s, wait_gate, NULL));
            CHECK_OK(aclrtMemPoolFreeAsync(b, s));
            CHECK_RET(aclrtFree(b), ACL_ERROR_RT_PARAM_INVALID);
            CHECK(msg_mentions("pending"));
            __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
            CHECK_OK(aclrtSynchronizeStream(s));
            CHECK_RET(aclrtFree(b), ACL_ERROR_RT_PARAM_INVALID);
            CHECK(msg_mentions("double free"));
            /* The neighbour is live and holds what was written. */
            memset(buf, 0, 4096);
            CHECK_OK(aclrtMemcpy(buf, 4096, c, 4096, ACL_MEMCPY_DEVICE_TO_HOST));
            CHECK(memcmp(buf, small, sizeof small) == 0);
            CHECK_OK(aclrtFree(c));
            CHECK_FAIL(aclrtFree(c), ACL_ERROR_RT_PARAM_INVALID);
        }
        CHECK_OK(aclrtDestroyStream(s));
        CHECK(hbm_free() == f0);
    }

    check_section("aclrtGetMemInfo misuse");
    CHECK_FAIL(aclrtGetMemInfo((aclrtMemAttr)18, &f, &t), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetMemInfo(ACL_HBM_MEM, NULL, &t), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetMemInfo(ACL_HBM_MEM, &f, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(hbm_free() == before);

    check_section("tear down; finalize twice");
    CHECK_OK(aclrtFree(dev));
    CHECK_OK(aclrtFreeHost(pinned));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    CHECK_FAIL(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);

    free(host);
    free(buf);
    return check_summary("bad_input");
}
