# W12's table (scripts/bench --full): reads lines "round=R impl=I key=value ..." of
# `taskid-bench fairness` runs and prints, per implementation, the median (min-max) over rounds
# of the quiet tenants' worst and median p99 and the busy tenant's p99; then round-robin against
# arrival order for the quiet tenants' worst p99, as the median (min-max) of the round-by-round
# ratios.
# (Read after scripts/table-lib.awk: the rows, median() and summary().)
END {
    printf "  %-14s %26s %26s %22s\n", "impl", "quiet tenants' worst p99 ms", "quiet tenants' median p99", "busy tenant's p99 ms"
    for (i = 1; i <= impls; i++) {
        impl = order[i]
        printf "  %-14s %26s %26s %22s\n", impl, summary(impl, "quiet_p99_max_us", 1000),
            summary(impl, "quiet_p99_median_us", 1000), summary(impl, "busy_p99_us", 1000)
    }
    n = 0
    for (r = 1; r <= rounds; r++) {
        if (((r, "round-robin", "quiet_p99_max_us") in f) && f[r, "arrival", "quiet_p99_max_us"] > 0) {
            v[++n] = f[r, "round-robin", "quiet_p99_max_us"] / f[r, "arrival", "quiet_p99_max_us"]
        }
    }
    if (n > 0) {
        m = median(v, n)
        printf "W12  quiet tenants' worst p99, round-robin / arrival order: %.3fx (%.3f-%.3f)   (goal <= 0.25x)\n", m, v[1], v[n]
    }
}
