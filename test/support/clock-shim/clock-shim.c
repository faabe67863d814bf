/*
 * clock-shim: an LD_PRELOAD library that adds an offset, in milliseconds, to CLOCK_REALTIME as a
 * process reads it through clock_gettime, gettimeofday and time: an NTP step of one process's wall
 * clock, at any moment, while CLOCK_MONOTONIC (and every other clock) is untouched.
 *
 * The offset is a little-endian int64 at the start of the file named by CLOCK_SHIM_FILE, mapped
 * shared, so another process (the test) steps the clock by writing the file. A missing variable or
 * file means offset 0. A second int64 after it, when not 0, freezes the wall clock at that many
 * microseconds since the epoch (the offset then does not count): the differential test of the
 * in-memory scripts runs each case at one instant on both sides. Nothing here allocates: Debian's libfaketime makes redis-server fail at
 * start because jemalloc reads the clock while libfaketime initialises (and allocates). Before the
 * real functions are resolved (a call from another library's constructor), the syscall answers.
 *
 * Built by test/support/clock-shim.ts: gcc -shared -fPIC -O2 -o clock-shim.so clock-shim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
static clock_gettime_fn real_clock_gettime;
static volatile int64_t *offset_ms; /* the mapped file ([0] offset ms, [1] frozen us), or NULL */
static int mapped;                  /* tried to map (0: not yet) */

static void map_offset(void) {
  mapped = 1;
  const char *path = getenv("CLOCK_SHIM_FILE");
  if (!path || !*path) return;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  void *p = mmap(NULL, 2 * sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p != MAP_FAILED) offset_ms = (volatile int64_t *)p;
}

__attribute__((constructor)) static void init(void) {
  real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
  if (!mapped) map_offset();
}

static int64_t offset_ns(void) {
  if (!mapped) map_offset();
  return offset_ms ? __atomic_load_n(offset_ms, __ATOMIC_RELAXED) * 1000000LL : 0;
}

static int raw_clock_gettime(clockid_t clock, struct timespec *ts) {
  if (real_clock_gettime) return real_clock_gettime(clock, ts);
  return (int)syscall(SYS_clock_gettime, clock, ts);
}

static void shift(struct timespec *ts) {
  int64_t frozen_us = offset_ms ? __atomic_load_n(&offset_ms[1], __ATOMIC_RELAXED) : 0;
  if (frozen_us != 0) {
    ts->tv_sec = (time_t)(frozen_us / 1000000LL);
    ts->tv_nsec = (long)(frozen_us % 1000000LL) * 1000L;
    return;
  }
  int64_t ns = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns();
  ts->tv_sec = (time_t)(ns / 1000000000LL);
  ts->tv_nsec = (long)(ns % 1000000000LL);
  if (ts->tv_nsec < 0) {
    ts->tv_nsec += 1000000000L;
    ts->tv_sec -= 1;
  }
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
  int rc = raw_clock_gettime(clock, ts);
  if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) shift(ts);
  return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
  (void)tz;
  struct timespec ts;
  int rc = raw_clock_gettime(CLOCK_REALTIME, &ts);
  if (rc != 0) return rc;
  shift(&ts);
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}

time_t time(time_t *out) {
  struct timespec ts;
  if (raw_clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
  shift(&ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
