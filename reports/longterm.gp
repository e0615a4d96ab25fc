# Long-term view of one board × flavor × scenario: max, p99.99 and avg of every run over time
# (log scale), each with the budget in force at that run as a step line, kernel changes as
# dotted vertical lines named by release and commit, and (on the short range) each run's commit.
#   call 'longterm.gp' DATA OUTPUT-STEM MARKS FORMATS COMMITS
# DATA: "epoch max p99.99 bounded avg budget-max budget-p99.99 budget-avg" per run, oldest
# first, NaN where there is none; bounded is 1 when p99.99 is only known as "≥".
# MARKS: "epoch kind label": kind 1 a kernel change (line and label), 0 a run's commit.
# FORMATS: 'png' or 'svg png'. COMMITS: 1 when MARKS
# holds commits (gnuplot 5.4 crashes on a labels plot with no point at all).
# One gnuplot draws a batch of plots of every kind: nothing carries over from the last.
reset
data = ARG1
stem = ARG2
marks = ARG3
formats = ARG4
commits = int(ARG5)
dir = ARG0[1:strstrt(ARG0, 'longterm.gp') - 1]

do for [fmt in formats] {
    call dir.'terminals.gp' fmt stem
    set xdata time
    set timefmt '%s'
    set format x "%Y-%m-%d\n%H:%M"
    set xtics rotate by 30 right
    set logscale y 10
    set format y '%.0s%c'
    set ylabel 'Latency (µs, log)'
    set y2range [0:1]
    unset y2tics
    set key outside top center horizontal
    set offsets graph 0.02, graph 0.02, 0, 0
    plot data using 1:2 with linespoints pt 7 ps 0.4 lt 2 title 'max', \
         '' using 1:3 with linespoints pt 7 ps 0.4 lt 3 title 'p99.99', \
         '' using 1:($4 > 0 ? $3 : NaN) with points pt 6 ps 1.2 lc rgb '#333333' \
             title 'p99.99 ≥ (overflow)', \
         '' using 1:5 with linespoints pt 7 ps 0.4 lt 1 title 'avg', \
         '' using 1:6 with steps lw 2 dt (8, 4) lc rgb '#d62728' title 'budget max', \
         '' using 1:7 with steps lw 2 dt (8, 4) lc rgb '#2ca02c' title 'budget p99.99', \
         '' using 1:8 with steps lw 2 dt (8, 4) lc rgb '#1f77b4' title 'budget avg', \
         marks using 1:($2 == 1 ? 1 : NaN) axes x1y2 with impulses dt 3 lc rgb '#666666' \
             title 'kernel change', \
         marks using 1:($2 == 1 ? 0.99 : NaN):3 axes x1y2 with labels rotate by 90 right \
             font ',8' tc rgb '#444444' notitle, \
         for [c = 1:commits] marks using 1:($2 == 0 ? 0.01 : NaN):3 axes x1y2 with labels \
             rotate by 90 left font ',7' tc rgb '#777777' notitle
    unset output
}
