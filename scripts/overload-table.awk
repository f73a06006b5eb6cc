# W11's table (scripts/bench --full): reads lines "round=R impl=I key=value ..." of
# `taskid-bench backend --seconds 30 --search-ms 50` runs (twice what the backend serves) and
# prints, per implementation, the median (min-max) over rounds of each figure; then the bounded
# queue that sheds (limit-shed) against the unbounded limit for the answered queries' p99, as
# the median (min-max) of the round-by-round ratios.
# (Read after scripts/table-lib.awk: the rows, median() and summary().)
END {
    printf "  %-20s %18s %18s %14s %14s %16s %16s %14s\n", "impl", "p50 ms (answered)", "p99 ms", "queue peak", "shed", "RSS 1/3 MiB", "RSS end MiB", "wasted calls"
    for (i = 1; i <= impls; i++) {
        impl = order[i]
        printf "  %-20s %18s %18s %14s %14s %16s %16s %14s\n", impl, summary(impl, "answer_p50_us", 1000),
            summary(impl, "answer_p99_us", 1000), summary(impl, "queue_peak", 1), summary(impl, "shed", 1),
            summary(impl, "rss_third_mib", 1), summary(impl, "rss_end_mib", 1), summary(impl, "wasted_calls", 1)
    }
    n = 0
    for (r = 1; r <= rounds; r++) {
        if (((r, "limit-shed", "answer_p99_us") in f) && f[r, "limit", "answer_p99_us"] > 0) {
            v[++n] = f[r, "limit-shed", "answer_p99_us"] / f[r, "limit", "answer_p99_us"]
        }
    }
    if (n > 0) {
        m = median(v, n)
        printf "W11  answered p99, limit-shed / the unbounded limit: %.3fx (%.3f-%.3f)   (goal <= 0.5x; memory flat: RSS end against 1/3)\n", m, v[1], v[n]
    }
}
