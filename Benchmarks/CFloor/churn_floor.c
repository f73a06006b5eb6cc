/*
 * The C floor of docs/BENCHMARKS.md: the churn workloads (W1, W2) on raw libuv, no Swift.
 *
 * Each slot owns one libuv timer. An identity change bumps the slot's declared generation and
 * (re-)arms its timer for the debounce window (0: the next loop turn); the timer's callback is
 * the action, and it completes the slot's declared generation. Changes are issued in batches,
 * one batch per loop turn, as the Swift driver does. Nothing is allocated per change. This is what one loop thread can do at best on this machine; the
 * registry's figures are judged against it.
 *
 * The producer is an idle handle: it runs once per loop turn and keeps the loop polling without
 * blocking, so every batch gets its own turn (a timer re-armed for 0 ms inside libuv's timer
 * phase would fire again in the same phase, and the loop would never turn).
 *
 *   churn-floor SLOTS CHANGES DEBOUNCE_MS BATCH
 *
 * Prints one key=value line in the driver's format (impl=c-floor ...). Exit status 1 when a
 * correctness field is not 0, 2 on bad arguments.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <uv.h>

struct slot_state {
    uv_timer_t timer; /* first member: the callback's handle pointer is the slot's address */
    uint64_t declared;
    uint64_t completed;
};

struct churn_run {
    struct slot_state *slots;
    long slot_count, change_count, debounce_ms, batch;
    long issued;
    uint64_t stream; /* the identity stream's xorshift state */
    uint64_t actions, stale, double_runs;
    uv_idle_t producer;
};

static struct churn_run run;

static uint64_t next_slot(void) {
    run.stream ^= run.stream << 13;
    run.stream ^= run.stream >> 7;
    run.stream ^= run.stream << 17;
    return run.stream % (uint64_t)run.slot_count;
}

static void action(uv_timer_t *timer) {
    struct slot_state *slot = (struct slot_state *)timer;
    run.actions++;
    /* A timer only fires for its latest arming, so a stale run would be a libuv bug; the
     * check is kept so the floor pays what the Swift drivers pay. */
    if (slot->completed == slot->declared) run.double_runs++;
    if (slot->completed > slot->declared) run.stale++;
    slot->completed = slot->declared;
}

static void produce_batch(uv_idle_t *producer) {
    long end = run.issued + run.batch;
    if (end > run.change_count) end = run.change_count;
    while (run.issued < end) {
        struct slot_state *slot = &run.slots[next_slot()];
        run.issued++;
        slot->declared++;
        uv_timer_start(&slot->timer, action, (uint64_t)run.debounce_ms, 0);
    }
    if (run.issued >= run.change_count) uv_close((uv_handle_t *)producer, NULL);
}

static void close_slot(uv_handle_t *handle, void *unused) {
    (void)unused;
    if (!uv_is_closing(handle)) uv_close(handle, NULL);
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + (double)usage.ru_stime.tv_sec
        + usage.ru_stime.tv_usec / 1e6;
}

static long positive_argument(const char *text, const char *name, int allow_zero) {
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE || value < 0 || (!allow_zero && value == 0)) {
        fprintf(stderr, "churn-floor: %s must be a %s integer, got '%s'\n", name,
                allow_zero ? "non-negative" : "positive", text);
        exit(2);
    }
    return value;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: churn-floor SLOTS CHANGES DEBOUNCE_MS BATCH\n");
        return 2;
    }
    run.slot_count = positive_argument(argv[1], "SLOTS", 0);
    run.change_count = positive_argument(argv[2], "CHANGES", 0);
    run.debounce_ms = positive_argument(argv[3], "DEBOUNCE_MS", 1);
    run.batch = positive_argument(argv[4], "BATCH", 0);
    run.stream = 88172645463325252ULL;

    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0) return 3;
    run.slots = calloc((size_t)run.slot_count, sizeof *run.slots);
    if (run.slots == NULL) return 3;
    for (long index = 0; index < run.slot_count; index++) uv_timer_init(&loop, &run.slots[index].timer);
    uv_idle_init(&loop, &run.producer);

    double cpu_start = cpu_seconds();
    uint64_t start = uv_hrtime();
    uv_idle_start(&run.producer, produce_batch);
    /* The run ends when the producer is closed and every armed slot timer has fired: then only
     * idle (unarmed) timers remain, which do not keep uv_run going. */
    uv_run(&loop, UV_RUN_DEFAULT);
    double seconds = (double)(uv_hrtime() - start) / 1e9;
    double cpu = cpu_seconds() - cpu_start;

    long missing = (long)run.double_runs;
    for (long index = 0; index < run.slot_count; index++) {
        if (run.slots[index].declared > 0 && run.slots[index].completed != run.slots[index].declared) missing++;
    }
    uv_walk(&loop, close_slot, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    int closed = uv_loop_close(&loop);
    free(run.slots);

    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("impl=c-floor workload=churn slots=%ld changes=%ld debounce_ms=%ld batch=%ld loops=1 seconds=%.4f "
           "changes_per_s=%.0f actions=%llu stale=%llu missing_final=%ld cpu_s=%.3f rss_mib=%.1f\n",
           run.slot_count, run.change_count, run.debounce_ms, run.batch, seconds, run.change_count / seconds,
           (unsigned long long)run.actions, (unsigned long long)run.stale, missing, cpu,
           usage.ru_maxrss / 1024.0);
    return (missing != 0 || run.stale != 0 || closed != 0) ? 1 : 0;
}
