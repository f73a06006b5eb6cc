# scripts/bench's table of one workload's times. Input: one line per run, "round=R label=L
# row=IMPL" followed by the driver's key=value fields. Output: a row per implementation with the
# median (min-max) of changes/s and of changes per CPU-second, and the first row's ratio against
# each row after it (its baselines), as the median (min-max) of the ratios taken round by round:
# the runs of one round compare like with like, where the machine's speed drifts between rounds.
# Variables: runs (the number of rounds).

function field(name,   i, kv) {
    for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] }
    return ""
}

# Median of a space-separated list; sets lo and hi to its min and max.
function median(list,   n, i, j, t, a) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    lo = a[1]; hi = a[n]
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

function spread(list, fmt,   m) {
    if (list == "") return "-"
    m = median(list)
    return sprintf(fmt " (" fmt "-" fmt ")", m, lo, hi)
}

# Ratio of row a to row b, round by round, of figure `what` ("rate" or "percpu").
function ratio(a, b, what,   r, list, x, y) {
    list = ""
    for (r = 1; r <= runs; r++) {
        x = value[a, r, what]; y = value[b, r, what]
        if (x == "" || y == "" || y == 0) continue
        list = list " " x / y
    }
    return list == "" ? "" : spread(substr(list, 2), "%.2f")
}

{
    m = field("row"); r = field("round")
    if (!(m in seen)) { seen[m] = 1; order[++n] = m; label = field("label") }
    rate = field("changes_per_s"); cpu = field("cpu_s")
    value[m, r, "rate"] = rate
    rates[m] = rates[m] " " rate
    if (cpu > 0) {
        value[m, r, "percpu"] = rate * field("seconds") / cpu
        percpu[m] = percpu[m] " " value[m, r, "percpu"]
    }
    if (field("stale") + 0 > 0 && m != "naive-tasks") bad[m] += field("stale")
    if (field("missing_final") + 0 > 0) bad[m] += field("missing_final")
}

END {
    subject = order[1]
    printf "%-4s %-19s %-28s %-28s %s\n", "run", "impl", "changes/s", "changes per CPU-s", subject " against it, per s [per CPU-s]"
    for (i = 1; i <= n; i++) {
        m = order[i]
        against = ""
        if (i > 1) {
            per_cpu = ratio(subject, m, "percpu")
            against = sprintf("%s [%s]", ratio(subject, m, "rate"), per_cpu == "" ? "-" : per_cpu)
        }
        printf "%-4s %-19s %-28s %-28s %s%s\n", label, m, spread(substr(rates[m], 2), "%.0f"), \
            (percpu[m] == "" ? "-" : spread(substr(percpu[m], 2), "%.0f")), against, \
            (bad[m] ? "  CORRECTNESS FAILED" : "")
    }
}
