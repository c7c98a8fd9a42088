# ops/lib/bench-ratios.awk - ops/bench-service's last lines: for each row that notifies, its
# moves/s over those of the row without notifications run in the same turn (-r: the nth of
# each), turn by turn, and their median. Input (-F'|'), a line a row in the order run:
#   the row's other settings|its notify (off, up, down)|its moves/s
# Output, a line for each settings and notify but off, in the order they first came:
#   - moves/s with notify up over off (SETTINGS), turn by turn: 74% 83% 93%; median 83%
# A turn without its off row (or one of 0 moves/s: a failed run) is left out.
{
    turn = ++seen[$1 "|" $2]
    rate[$1 "|" $2 "|" turn] = $3
    if ($2 != "off" && !(($1 "|" $2) in order)) {
        order[$1 "|" $2] = ++n
        key[n] = $1 "|" $2
    }
}
END {
    for (i = 1; i <= n; i++) {
        split(key[i], k, "|")
        m = 0
        text = ""
        for (t = 1; (key[i] "|" t) in rate; t++) {
            off = rate[k[1] "|off|" t]
            if (off > 0) {
                r[++m] = 100 * rate[key[i] "|" t] / off
                text = text sprintf(" %.0f%%", r[m])
            }
        }
        if (m == 0)
            continue
        for (a = 1; a <= m; a++)
            for (b = a + 1; b <= m; b++)
                if (r[b] < r[a]) {
                    x = r[a]; r[a] = r[b]; r[b] = x
                }
        med = m % 2 ? r[(m + 1) / 2] : (r[m / 2] + r[m / 2 + 1]) / 2
        printf "- moves/s with notify %s over off (%s), turn by turn:%s; median %.0f%%\n", k[2],
            k[1], text, med
    }
}
