/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/peer.h - a second process for the multi-process C programs: the
 * program starts itself again (posix_spawn of /proc/self/exe with a role
 * argument) on the same simulated machine (the child inherits
 * ACLRS_SIM_INSTANCE), and the two talk in lines over a pair of pipes.
 * Every read is bounded by poll() with a generous timeout, so a dead peer
 * fails the test instead of hanging it.
 */
#ifndef ACLRS_TESTS_C_PEER_H
#define ACLRS_TESTS_C_PEER_H

#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct {
    pid_t pid;
    int to;   /* write end: our lines to the peer */
    int from; /* read end: the peer's lines to us */
} Peer;

/* Starts this program again as `role`; the child finds its pipe ends in argv[2], argv[3]. */
static inline int peer_start(Peer *p, const char *role)
{
    int down[2], up[2];
    char a[16], b[16];
    char *argv[5];

    if (pipe(down) != 0 || pipe(up) != 0) {
        return 0;
    }
    snprintf(a, sizeof a, "%d", down[0]);
    snprintf(b, sizeof b, "%d", up[1]);
    argv[0] = (char *)"peer";
    argv[1] = (char *)role;
    argv[2] = a;
    argv[3] = b;
    argv[4] = NULL;
    if (posix_spawn(&p->pid, "/proc/self/exe", NULL, NULL, argv, environ) != 0) {
        return 0;
    }
    close(down[0]);
    close(up[1]);
    p->to = down[1];
    p->from = up[0];
    return 1;
}

/* The child's side: the pipe ends from argv. */
static inline void peer_attach(Peer *p, char **argv)
{
    p->pid = 0;
    p->from = atoi(argv[2]);
    p->to = atoi(argv[3]);
}

static inline void peer_send(Peer *p, const char *line)
{
    size_t n = strlen(line);
    if (write(p->to, line, n) != (ssize_t)n || write(p->to, "\n", 1) != 1) {
        printf("  peer: write failed\n");
    }
}

/* Reads one line (without its newline) into buf; 0 on EOF or after 60 s. */
static inline int peer_recv(Peer *p, char *buf, size_t len)
{
    size_t n = 0;
    while (n + 1 < len) {
        struct pollfd fd;
        char c;
        fd.fd = p->from;
        fd.events = POLLIN;
        fd.revents = 0;
        if (poll(&fd, 1, 60000) != 1 || read(p->from, &c, 1) != 1) {
            buf[n] = '\0';
            return 0;
        }
        if (c == '\n') {
            break;
        }
        buf[n++] = c;
    }
    buf[n] = '\0';
    return 1;
}

/* Waits for the child and returns its exit status (-1 when it did not exit normally). */
static inline int peer_wait(Peer *p)
{
    int status = 0;
    close(p->to);
    close(p->from);
    if (waitpid(p->pid, &status, 0) != p->pid || !WIFEXITED(status)) {
        return -1;
    }
    return WEXITSTATUS(status);
}

/* Kills the child with SIGKILL and reaps it. */
static inline void peer_kill(Peer *p)
{
    int status = 0;
    kill(p->pid, SIGKILL);
    close(p->to);
    close(p->from);
    waitpid(p->pid, &status, 0);
}

#endif /* ACLRS_TESTS_C_PEER_H */
