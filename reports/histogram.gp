# Latency histogram in the style of OSADL's mklatencyplot: log-scale counts, one line per
# column, latency budgets as vertical lines. rtgate uses it per core (one column per cyclictest
# thread) and for the stock-vs-RT overlay (one column per kernel flavor).
#   call 'histogram.gp' DATA OUTPUT-STEM NCOLUMNS XMAX BUDGETS BUDGET-LABELS LOG XMIN
# DATA: first row quoted column titles, then "latency count count ..." for every non-empty bin
# (its lower edge), each followed by a row of zeros where the next bin is empty.
# BUDGETS: space-separated budget values in µs ('' for none); BUDGET-LABELS: one word each.
# LOG: 1 for log-spaced bins on a log latency axis (a range of decades), 0 for 1 µs bins;
# XMIN: where a log axis starts.
# One gnuplot draws a batch of plots of every kind: nothing carries over from the last.
reset
data = ARG1
stem = ARG2
ncols = int(ARG3)
xmax = real(ARG4)
budgets = ARG5
blabels = ARG6
logx = int(ARG7)
xmin = real(ARG8)
nbudgets = words(budgets)
max(a, b) = a > b ? a : b
dir = ARG0[1:strstrt(ARG0, 'histogram.gp') - 1]

unset arrow
do for [k = 1:words(budgets)] {
    b = real(word(budgets, k))
    if (b <= xmax) {
        set arrow k from b, graph 0 to b, graph 1 nohead lw 2 dt (8, 4) lc rgb '#444444' front
    }
}
# A budget beyond the histogram's range is still named in the legend, marked off scale.
budget_title(k) = sprintf('budget %s %s µs%s', word(blabels, k), word(budgets, k), \
                          real(word(budgets, k)) > xmax ? ' (off scale)' : '')

do for [fmt in 'svg png'] {
    call dir.'terminals.gp' fmt stem
    set logscale y 10
    set format y '%.0s%c'
    set yrange [0.8:*]
    if (logx) {
        set logscale x 10
        set xrange [xmin:xmax]
        set xlabel 'Latency (µs, log), log-spaced bins (20 a decade; counts per bin)'
    } else {
        unset logscale x
        set xrange [0:xmax]
        set xlabel 'Latency (µs), 1 µs bins'
    }
    set mxtics
    set ylabel 'Number of samples (log)'
    # Empty bins drop to the floor of the log axis instead of breaking the line.
    plot for [i = 2:ncols + 1] data using 1:(column(i) > 0 ? column(i) : 0.1) \
             with steps title columnhead(i), \
         for [k = 1:max(nbudgets, 1)] NaN with lines lw 2 dt (8, 4) lc rgb '#444444' \
             \
             title (nbudgets ? budget_title(k) : '')
    unset output
}
