# W11's table (scripts/bench --full): reads lines "round=R impl=I key=value ..." of
# `taskid-bench backend --seconds 30 --search-ms 50` runs (twice what the backend serves) and
# prints, per implementation, the median (min-max) over rounds of each figure; then the bounded
# queue that sheds (limit-shed) against the unbounded limit for the answered queries' p99, as
# the median (min-max) of the round-by-round ratios.
function median(values, n,    i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (values[j] < values[i]) { t = values[i]; values[i] = values[j]; values[j] = t }
    return n % 2 ? values[(n + 1) / 2] : (values[n / 2] + values[n / 2 + 1]) / 2
}
function summary(impl, key, scale,    r, n, v, m) {
    n = 0
    for (r = 1; r <= rounds; r++) if ((r, impl, key) in f) v[++n] = f[r, impl, key] / scale
    if (n == 0) return "-"
    m = median(v, n)
    return sprintf(m >= 100 ? "%.0f (%.0f-%.0f)" : "%.1f (%.1f-%.1f)", m, v[1], v[n])
}
{
    for (i = 1; i <= NF; i++) { split($i, kv, "="); row[kv[1]] = kv[2] }
    r = row["round"]; impl = row["impl"]
    if (r > rounds) rounds = r
    if (!(impl in seen)) { seen[impl] = 1; order[++impls] = impl }
    for (k in row) f[r, impl, k] = row[k]
    delete row
}
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
