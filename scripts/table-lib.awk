# Shared by the --full tables (backend-, overload- and fairness-table.awk, each given after this
# file with a second -f): reads lines "round=R impl=I key=value ..." into f[round, impl, key],
# in the order the implementations first appear (order[1..impls]), and gives median() and
# summary(), the median (min-max) over rounds of one figure.
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
