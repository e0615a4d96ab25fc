# Block maxima from cyclictest's verbose stream (-v), reduced while it is read: the per-sample
# text (10^8 lines an hour at -i100 on 4 CPUs) is never stored. rtgate's one reducer for every
# board: POSIX awk, run by mawk/gawk on hosts and by busybox awk in the guest, which has no
# Python. Read by rtgate/cyclictest/formats/maxima.py.
#
#   cyclictest -v ... | awk -v block=N -v out=FILE [-v ns=1] -f blockmaxima.awk >REST
#
# Each sample line "thread: cycle: latency" counts toward its thread's current block of N
# cycles; every other line (cyclictest's header and messages) passes through to REST. FILE gets
# one "b THREAD MAX" line per finished block as it finishes (a short last block at the end),
# then per thread the histogram of the samples seen ("h THREAD LATENCY COUNT"), how many were
# seen ("n THREAD COUNT") and the first skipped cycle number if any ("g THREAD EXPECTED GOT"),
# and "end": a file without it was cut. The histogram is what lets the controller check the
# stream against cyclictest's own -h histogram (lost samples) and place the samples cyclictest
# measured but never printed before it exited. With ns=1 (cyclictest -N) the header ends in
# " ns", maxima stay exact ns and the histogram counts HdrHistogram's log-linear bins at 3
# significant digits (rtgate.stats.histogram.log_linear: 1 ns below 2048 ns, then 1024 bins a
# doubling), so it holds some 1000 lines per doubling of the range, not one per ns value.
BEGIN {
    if (block !~ /^[1-9][0-9]*$/ || out == "") {
        # Not "/dev/stderr": a guest's devtmpfs has no such link, busybox awk would create a file.
        print "blockmaxima.awk: usage: awk -v block=N -v out=FILE -f blockmaxima.awk" \
            | "cat 1>&2"
        failed = 1
        exit 2
    }
    block += 0
    ns += 0
    FS = ":"
    print "rtgate-blocks 1 block_cycles " block (ns ? " ns" : "") > out
}
/^ *[0-9]+: *[0-9]+: *[0-9]+$/ {
    t = $1 + 0
    v = $3 + 0
    if (!(t in n)) {
        n[t] = 0
        k[t] = 0
        m[t] = 0
    }
    if ($2 + 0 != n[t] && !(t in gap))
        gap[t] = sprintf("%.0f %.0f", n[t], $2 + 0)
    n[t]++
    h[t, sprintf("%.0f", ns ? edge(v) : v)]++
    if (v > m[t] || k[t] == 0)
        m[t] = v
    if (++k[t] == block) {
        printf "b %d %.0f\n", t, m[t] > out
        k[t] = 0
    }
    next
}
{ print }
# Numbers are printed, and made keys, with %.0f: mawk turns a number over 2^31 into the text
# 4.64309e+09 (CONVFMT) and prints it with %d as 2147483647 (2^31 ns is 2.1 s).
# The lower edge of v's log-linear bin: v with its bits below the top 11 cleared. Exact in
# awk's doubles up to 2^53 ns.
function edge(v,    s, b) {
    s = 1
    for (b = v; b >= 2048; b = int(b / 2))
        s *= 2
    return int(v / s) * s
}
END {
    if (failed)
        exit 2
    for (t in n)
        if (k[t] > 0)
            printf "b %d %.0f\n", t, m[t] > out
    for (key in h) {
        split(key, p, SUBSEP)
        printf "h %d %s %.0f\n", p[1], p[2], h[key] > out
    }
    for (t in n) {
        printf "n %d %.0f\n", t, n[t] > out
        if (t in gap)
            printf "g %d %s\n", t, gap[t] > out
    }
    print "end" > out
}
