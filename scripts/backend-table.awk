# W9's table (scripts/bench --full): reads lines "round=R impl=I key=value ..." of
# `taskid-bench backend` runs and prints, per implementation, the median (min-max) over rounds
# of each figure; then the registry with a limit against the best baseline (the lower of
# table-cancellable and registry-semaphore in each round) for the p99 wait and the CPU per
# answer, as the median (min-max) of the round-by-round ratios.
# (Read after scripts/table-lib.awk: the rows, median() and summary().)
function ratio(key, label, goal,    r, n, v, best, a, b) {
    n = 0
    for (r = 1; r <= rounds; r++) {
        if (!((r, "limit", key) in f)) continue
        a = ((r, "table-cancellable", key) in f) ? f[r, "table-cancellable", key] : -1
        b = ((r, "registry-semaphore", key) in f) ? f[r, "registry-semaphore", key] : -1
        best = (a < 0) ? b : (b < 0 ? a : (a < b ? a : b))
        if (best > 0) v[++n] = f[r, "limit", key] / best
    }
    if (n == 0) return
    m = median(v, n)
    printf "W9   %s, registry with a limit / the best baseline: %.2fx (%.2f-%.2f)   (goal %s)\n", label, m, v[1], v[n], goal
}
END {
    printf "  %-20s %16s %16s %22s %22s %16s %18s\n", "impl", "backend calls", "wasted calls", "p50 ms (last key->answer)", "p99 ms", "answers/s", "CPU us per answer"
    for (i = 1; i <= impls; i++) {
        impl = order[i]
        printf "  %-20s %16s %16s %22s %22s %16s %18s\n", impl, summary(impl, "backend_calls", 1), summary(impl, "wasted_calls", 1),
            summary(impl, "answer_p50_us", 1000), summary(impl, "answer_p99_us", 1000), summary(impl, "answers_per_second", 1),
            summary(impl, "cpu_us_per_answer", 1)
    }
    ratio("answer_p99_us", "p99 last keystroke -> answer", "<= 1.0x, aim 0.5x")
    ratio("cpu_us_per_answer", "CPU per answer", "<= 0.5x")
}
