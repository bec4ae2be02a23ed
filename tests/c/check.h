/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/check.h - tiny check helpers shared by the C test programs.
 *
 * Every check prints one line. A failing check prints file:line, the checked
 * expression, the code it returned, the code expected, and the runtime's
 * aclGetRecentErrMsg() text, and is counted; check_summary() turns the count
 * into the program's exit status.
 *
 *   CHECK(cond)            a plain condition
 *   CHECK_OK(call)         call must return ACL_SUCCESS
 *   CHECK_RET(call, code)  call must return exactly `code`
 *   CHECK_FAIL(call, code) call must return `code` (non-zero) AND leave a
 *                          non-empty aclGetRecentErrMsg() behind
 *
 * All of them evaluate to 1 when the check passed and 0 otherwise, so
 * `if (!CHECK_OK(...)) return check_summary(...)` works.
 */
#ifndef ACLRS_TESTS_C_CHECK_H
#define ACLRS_TESTS_C_CHECK_H

#include <stdio.h>
#include <string.h>

#include "acl/acl.h"

static int check_failures_ = 0;
static int check_count_ = 0;

static inline int check_cond_(const char *file, int line, const char *expr, int ok)
{
    check_count_++;
    if (ok) {
        printf("  ok    %s\n", expr);
        return 1;
    }
    check_failures_++;
    printf("  FAIL  %s:%d: %s\n", file, line, expr);
    return 0;
}

static inline int check_ret_(const char *file, int line, const char *expr, int got, int want,
                             int want_msg)
{
    const char *msg;

    check_count_++;
    if (got == want && !want_msg) {
        printf("  ok    %s == %d\n", expr, want);
        return 1;
    }
    msg = aclGetRecentErrMsg();
    if (got == want) {
        /* An expected failure: the runtime must also have said why. */
        if (msg != NULL && msg[0] != '\0') {
            printf("  ok    %s == %d  [%s]\n", expr, want, msg);
            return 1;
        }
        check_failures_++;
        printf("  FAIL  %s:%d: %s returned %d as expected, but aclGetRecentErrMsg() is %s\n", file,
               line, expr, got, msg == NULL ? "NULL" : "empty");
        return 0;
    }
    check_failures_++;
    printf("  FAIL  %s:%d: %s returned %d, expected %d; aclGetRecentErrMsg: %s\n", file, line, expr,
           got, want, msg != NULL ? msg : "(null)");
    return 0;
}

/* A device-0 stream-ordered pool of at most `max_size` bytes (0: the device's HBM), or NULL
 * when aclrtMemPoolCreate refuses it. */
static inline aclrtMemPool check_new_pool(size_t max_size)
{
    aclrtMemPoolProps props;
    aclrtMemPool pool = NULL;
    memset(&props, 0, sizeof props);
    props.allocType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    props.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    props.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    props.maxSize = max_size;
    if (aclrtMemPoolCreate(&pool, &props) != ACL_SUCCESS) {
        return NULL;
    }
    return pool;
}

#define CHECK(cond) check_cond_(__FILE__, __LINE__, #cond, (cond) ? 1 : 0)
#define CHECK_RET(call, code) check_ret_(__FILE__, __LINE__, #call, (int)(call), (int)(code), 0)
/* Spelled out rather than via CHECK_RET so that #call shows the unexpanded text. */
#define CHECK_OK(call) check_ret_(__FILE__, __LINE__, #call, (int)(call), ACL_SUCCESS, 0)
#define CHECK_FAIL(call, code) check_ret_(__FILE__, __LINE__, #call, (int)(call), (int)(code), 1)

/* Prints a section heading. */
static inline void check_section(const char *title)
{
    printf("-- %s\n", title);
}

/* Prints the verdict and returns the exit status for main(). */
static inline int check_summary(const char *program)
{
    if (check_failures_ == 0) {
        printf("%s: OK (%d checks)\n", program, check_count_);
        return 0;
    }
    printf("%s: FAILED (%d of %d checks failed)\n", program, check_failures_, check_count_);
    return 1;
}

/* Fills buf with a pattern that depends on seed and on the byte index. */
static inline void fill_pattern(void *buf, size_t len, unsigned seed)
{
    unsigned char *p = (unsigned char *)buf;
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = (unsigned char)((i * 131u + seed * 7u + (i >> 8)) & 0xFFu);
    }
}

/* Index of the first byte of buf that differs from fill_pattern(seed), or len. */
static inline size_t first_pattern_mismatch(const void *buf, size_t len, unsigned seed)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t i;

    for (i = 0; i < len; i++) {
        if (p[i] != (unsigned char)((i * 131u + seed * 7u + (i >> 8)) & 0xFFu)) {
            return i;
        }
    }
    return len;
}

/* 1 when buf holds fill_pattern(seed) throughout. */
static inline int has_pattern(const void *buf, size_t len, unsigned seed)
{
    return first_pattern_mismatch(buf, len, seed) == len;
}

/* 1 when every byte of buf equals value. */
static inline int all_bytes(const void *buf, size_t len, unsigned char value)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t i;

    for (i = 0; i < len; i++) {
        if (p[i] != value) {
            return 0;
        }
    }
    return 1;
}

#endif /* ACLRS_TESTS_C_CHECK_H */
