/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The variadic half of aclAppLog: formats the message (at most 1024 bytes with
 * the NUL; a longer one is cut and ends with "...[truncated]", as CANN's
 * header says) and hands the text to aclrsAppLogWrite, which writes the line.
 *
 * The exported aclAppLog is a Rust trampoline that jumps here with the
 * caller's registers and stack untouched, so this function receives the
 * original variadic call. Its own symbol is hidden (built with
 * -fvisibility=hidden).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Rust, declared in acl/acl_sim.h. */
void aclrsAppLogWrite(int level, const char *func, const char *file, uint32_t line, const char *text);

void aclrs_app_log_format(int level, const char *func, const char *file, uint32_t line, const char *fmt, ...);

#define ACLRS_APP_LOG_MAX 1024

void aclrs_app_log_format(int level, const char *func, const char *file, uint32_t line, const char *fmt, ...)
{
    static const char cut[] = "...[truncated]";
    char text[ACLRS_APP_LOG_MAX];
    va_list ap;
    int n;

    if (fmt == NULL) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0) {
        text[0] = '\0';
    } else if ((size_t)n >= sizeof text) {
        memcpy(text + sizeof text - sizeof cut, cut, sizeof cut);
    }
    aclrsAppLogWrite(level, func, file, line, text);
}
