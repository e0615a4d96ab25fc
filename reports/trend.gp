# Trend across runs of one board × flavor × scenario: max, avg and p99.99 per run (log scale)
# with the budgets as horizontal lines.
#   call 'trend.gp' DATA OUTPUT-STEM NRUNS LABEL-EVERY BUDGETS BUDGET-LABELS
# DATA: first row quoted titles, then "index max avg p99.99 bounded label" per run, oldest first;
# bounded is 1 when p99.99 is only known as "≥" (samples overflowed the histogram).
# BUDGETS: space-separated budget values in µs ('' for none); BUDGET-LABELS: one word each.
data = ARG1
stem = ARG2
nruns = int(ARG3)
every_n = int(ARG4)
budgets = ARG5
blabels = ARG6
nbudgets = words(budgets)
max(a, b) = a > b ? a : b
dir = ARG0[1:strstrt(ARG0, 'trend.gp') - 1]

budget_title(k) = sprintf('budget %s %s µs', word(blabels, k), word(budgets, k))
# Each budget line takes the colour of the series it bounds.
colour(k) = word(blabels, k) eq 'max' ? '#d62728' : word(blabels, k) eq 'avg' ? '#1f77b4' : '#2ca02c'

do for [fmt in 'svg png'] {
    call dir.'terminals.gp' fmt stem
    set logscale y 10
    set format y '%.0s%c'
    set xrange [-0.5:nruns - 0.5]
    set xlabel 'Run (oldest → newest)'
    set ylabel 'Latency (µs, log)'
    set xtics rotate by 30 right
    set key outside top center horizontal
    # Budgets are constant functions, not arrows, so that the y range always takes them in.
    plot data using 1:2:xtic(int($1) % every_n == 0 ? stringcolumn(6) : '') \
             with linespoints pt 7 ps 0.6 lt 2 title columnhead(2), \
         '' using 1:3 with linespoints pt 7 ps 0.6 lt 1 title columnhead(3), \
         '' using 1:4 with linespoints pt 7 ps 0.6 lt 3 title columnhead(4), \
         '' using 1:($5 > 0 ? $4 : NaN) with points pt 6 ps 1.4 lc rgb '#333333' \
             title columnhead(5), \
         for [k = 1:max(nbudgets, 1)] (nbudgets ? real(word(budgets, k)) : NaN) \
             with lines lw 2 dt (8, 4) lc rgb (nbudgets ? colour(k) : '#000000') \
             title (nbudgets ? budget_title(k) : '')
    unset output
}
