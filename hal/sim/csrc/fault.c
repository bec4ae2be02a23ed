/*
 * Fault containment for sim kernels: the trampoline that calls a kernel under sigsetjmp, and
 * the SIGSEGV/SIGBUS handler that jumps back to it when the fault happened on this thread
 * inside the trampoline (else the previous handler runs, as if this one were not there).
 *
 * Only C frames lie between the sigsetjmp and the faulting instruction: the trampoline calls
 * the kernel itself, so a jump never skips a Rust frame.
 *
 * Every symbol is hidden: libascendcl exports none of them.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

typedef void (*aclrs_kernel_fn)(uint32_t block_idx, uint32_t block_dim, void *args);

/* The jump target of the kernel call running on this thread. */
struct frame {
    sigjmp_buf env;
    uintptr_t addr;
    int signo;
    int code;
};

static __thread struct frame *volatile current;
/* This thread's alternate signal stack: 0 unknown, 1 present (ours or another's). */
static __thread int altstack_ready;

static struct sigaction prev_segv;
static struct sigaction prev_bus;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_result = -1;
static pthread_key_t altstack_key;

/* Runs the handler that was installed before ours (or the default action). */
static void chain(int sig, siginfo_t *info, void *uc) {
    const struct sigaction *prev = sig == SIGSEGV ? &prev_segv : &prev_bus;
    if (prev->sa_flags & SA_SIGINFO) {
        prev->sa_sigaction(sig, info, uc);
        return;
    }
    if (prev->sa_handler == SIG_IGN) {
        return;
    }
    if (prev->sa_handler == SIG_DFL) {
        /* Restore the default action; returning re-runs the faulting instruction (a
         * synchronous fault) or the signal is raised again, and the default action applies. */
        signal(sig, SIG_DFL);
        if (info == NULL || info->si_code <= 0) {
            raise(sig);
        }
        return;
    }
    prev->sa_handler(sig);
}

static void on_fault(int sig, siginfo_t *info, void *uc) {
    struct frame *f = current;
    /* Only a fault the hardware raised (si_code > 0), on a thread inside the trampoline. */
    if (f != NULL && info != NULL && info->si_code > 0) {
        current = NULL;
        f->addr = (uintptr_t)info->si_addr;
        f->signo = sig;
        f->code = info->si_code;
        /* The mask was not changed on entry (SA_NODEFER, empty sa_mask), so no mask to
         * restore: siglongjmp to a sigsetjmp(.., 0) frame. */
        siglongjmp(f->env, 1);
    }
    chain(sig, info, uc);
}

static void free_altstack(void *mem) {
    stack_t off;
    memset(&off, 0, sizeof off);
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, NULL);
    free(mem);
}

static void install(void) {
    if (pthread_key_create(&altstack_key, free_altstack) != 0) {
        install_result = -1;
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &prev_segv) != 0 || sigaction(SIGBUS, &sa, &prev_bus) != 0) {
        install_result = -1;
        return;
    }
    install_result = 0;
}

/* Installs the handler once per process; 0 on success. */
__attribute__((visibility("hidden"))) int aclrs_sim_fault_install(void) {
    pthread_once(&install_once, install);
    return install_result;
}

/* Gives this thread an alternate signal stack unless it has one (once per thread). */
static void ensure_altstack(void) {
    if (altstack_ready) {
        return;
    }
    stack_t old;
    if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE)) {
        altstack_ready = 1;
        return;
    }
    size_t size = 64 * 1024;
    if (size < (size_t)SIGSTKSZ) {
        size = (size_t)SIGSTKSZ;
    }
    void *mem = malloc(size);
    if (mem == NULL) {
        return; /* the handler then runs on the thread's own stack */
    }
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = mem;
    ss.ss_size = size;
    if (sigaltstack(&ss, NULL) != 0) {
        free(mem);
        return;
    }
    pthread_setspecific(altstack_key, mem);
    altstack_ready = 1;
}

/*
 * Calls kernel `f` for one block. Returns 0 when it returned, or the signal number of the
 * fault that stopped it, with the faulting address in *addr and the si_code in *code.
 */
__attribute__((visibility("hidden"))) int aclrs_sim_call_kernel(aclrs_kernel_fn f, uint32_t block_idx,
                                                                uint32_t block_dim, void *args,
                                                                uintptr_t *addr, int *code) {
    struct frame fr;
    ensure_altstack();
    if (sigsetjmp(fr.env, 0) != 0) {
        *addr = fr.addr;
        *code = fr.code;
        return fr.signo;
    }
    current = &fr;
    f(block_idx, block_dim, args);
    current = NULL;
    return 0;
}
