/*
 * Which part of a futex mutex's code makes its waiter sleep: two threads pinned to
 * CPUs 0 and 1 take and release one mutex back to back (the critical section a
 * store to a data line of its own, as `validation.lab`'s `none`), for a given
 * time, with the mutex in one of these variants:
 *
 *   0  Drepper's mutex2 as glibc's lll_lock / lll_unlock: compare-and-swap 0 -> 1;
 *      on failure, if the word is 2 wait, else swap 2 in until it was 0, waiting
 *      on the futex (value 2) between swaps; unlock swaps 0 in, wakes one if it was 2
 *   1  0 and glibc's accesses to the mutex's line (pthread_mutex_lock.c and
 *      pthread_mutex_unlock.c of glibc 2.36): __kind read before the lock and the
 *      unlock, __owner checked and set, __nusers incremented, __owner cleared and
 *      __nusers decremented before the unlock's swap
 *   2  Rust std's futex mutex: up to 100 loads (with the spin-wait hint) while the
 *      word is 1 before swapping 2 in and after each wait, and a load before each
 *      futex_wait that skips the call if the word is no longer 2
 *   3  2 without that load before the call
 *   4  0 with that load before the call
 *   5  the real pthread_mutex_t
 *
 * It prints CPU time per acquisition, the share of the window the threads were
 * off their CPUs, and per 1000 acquisitions the futex_wait calls (not counted for
 * the real mutex, variant 5) and the voluntary context switches (sleeps). docs/validation.md, "When the kernel reads the word", has what it
 * measured on the Intel Xeon guest.
 *
 *   cc -O2 -o futex_variants futex_variants.c -lpthread
 *   for v in 5 0 1 2 3 4; do chrt -f 1 ./futex_variants $v 1; done
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

/* The futex word and glibc's other fields, on one line. */
static struct {
    _Alignas(64) _Atomic int lock;
    int count;
    int owner;
    unsigned nusers;
    int kind;
} M;
static struct {
    _Alignas(64) volatile long v;
} D;
static pthread_mutex_t P = PTHREAD_MUTEX_INITIALIZER;
static int variant;
static volatile int stop;

/* Each thread's futex_wait calls. */
static __thread long waits_called;

static void futex_wait(_Atomic int *w, int v) {
    waits_called++;
    syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, 0, 0, 0);
}
static void futex_wake(_Atomic int *w) { syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0); }
static int relaxed(void) { return atomic_load_explicit(&M.lock, memory_order_relaxed); }

/* std's spin: up to 100 loads while the word is 1. */
static int spin(void) {
    for (int i = 100;; i--) {
        int s = relaxed();
        if (s != 1 || i == 0)
            return s;
        _mm_pause();
    }
}

static void lock(void) {
    if (variant == 5) {
        pthread_mutex_lock(&P);
        return;
    }
    int fields = variant == 1, z = 0;
    if (fields)
        (void)*(volatile int *)&M.kind;
    if (atomic_compare_exchange_strong(&M.lock, &z, 1))
        goto taken;
    if (variant == 2 || variant == 3) {
        int s = spin();
        if (s == 0) {
            z = 0;
            if (atomic_compare_exchange_strong(&M.lock, &z, 1))
                goto taken;
            s = z;
        }
        for (;;) {
            if (s != 2 && atomic_exchange(&M.lock, 2) == 0)
                break;
            if (variant == 2 && relaxed() != 2) {
                s = spin();
                continue;
            }
            futex_wait(&M.lock, 2);
            s = spin();
        }
    } else {
        if (relaxed() == 2)
            goto wait;
        while (atomic_exchange(&M.lock, 2) != 0) {
        wait:
            if (variant == 4 && relaxed() != 2)
                continue;
            futex_wait(&M.lock, 2);
        }
    }
taken:
    if (fields) {
        (void)*(volatile int *)&M.owner;
        *(volatile int *)&M.owner = 1;
        (*(volatile unsigned *)&M.nusers)++;
    }
}

static void unlock(void) {
    if (variant == 5) {
        pthread_mutex_unlock(&P);
        return;
    }
    if (variant == 1) {
        (void)*(volatile int *)&M.kind;
        *(volatile int *)&M.owner = 0;
        (*(volatile unsigned *)&M.nusers)--;
    }
    if (atomic_exchange(&M.lock, 0) == 2)
        futex_wake(&M.lock);
}

struct result {
    long acquisitions;
    double cpu_ns;
    long sleeps;
    long waits_called;
};

static void *run(void *arg) {
    long cpu = (long)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    struct result *r = calloc(1, sizeof *r);
    struct rusage u0, u1;
    struct timespec c0, c1;
    getrusage(RUSAGE_THREAD, &u0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    while (!stop) {
        lock();
        D.v++;
        unlock();
        r->acquisitions++;
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    getrusage(RUSAGE_THREAD, &u1);
    r->cpu_ns = (c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec);
    r->sleeps = u1.ru_nvcsw - u0.ru_nvcsw;
    r->waits_called = waits_called;
    return r;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s VARIANT [SECONDS]\n", argv[0]);
        return 2;
    }
    variant = atoi(argv[1]);
    double secs = argc > 2 ? atof(argv[2]) : 1.0;
    pthread_t t[2];
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], 0, run, (void *)i);
    usleep((useconds_t)(secs * 1e6));
    stop = 1;
    struct result *r[2];
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], (void **)&r[i]);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    double wall = (w1.tv_sec - w0.tv_sec) * 1e9 + (w1.tv_nsec - w0.tv_nsec);
    long acq = r[0]->acquisitions + r[1]->acquisitions;
    double cpu = r[0]->cpu_ns + r[1]->cpu_ns;
    long sleeps = r[0]->sleeps + r[1]->sleeps;
    long calls = r[0]->waits_called + r[1]->waits_called;
    printf("variant %d: %.1f ns CPU per acquisition, off their CPUs %.3f; per 1000 acquisitions "
           "%.2f futex_wait calls, %.2f sleeps (%ld acquisitions)\n",
           variant, cpu / acq, 1 - cpu / (2 * wall), 1000.0 * calls / acq, 1000.0 * sleeps / acq, acq);
    return 0;
}
