/* clock.h: the monotonic clock in seconds (internal to the library). */
#ifndef TRAINBENCH_CLOCK_H
#define TRAINBENCH_CLOCK_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC: differences measure elapsed wall time, immune to clock changes. */
static inline double tb_monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
