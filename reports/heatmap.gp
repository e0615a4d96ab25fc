# Latency over time, OSADL-style: x the run date, y latency (log), colour the number of
# samples (log). Each cell is one log-spaced latency bin of one time slice (one run, or the
# runs of a slice when there are more runs than columns).
#   call 'heatmap.gp' DATA OUTPUT-STEM FORMATS ORIGIN
# DATA: "x-low x-high y-low y-high count" per non-empty cell: x in hours after ORIGIN (epoch
# seconds), y in µs.
# One gnuplot draws a batch of plots of every kind: nothing carries over from the last.
reset
data = ARG1
stem = ARG2
formats = ARG3
origin = real(ARG4)
x(h) = origin + h * 3600

dir = ARG0[1:strstrt(ARG0, 'heatmap.gp') - 1]
do for [fmt in formats] {
    call dir.'terminals.gp' fmt stem
    set xdata time
    set timefmt '%s'
    set format x "%Y-%m-%d\n%H:%M"
    set xtics rotate by 30 right
    set logscale y 10
    set format y '%.0s%c'
    set ylabel 'Latency (µs, log)'
    set logscale cb 10
    set format cb '%.0s%c'
    set cblabel 'Samples (log)'
    set palette defined (0 '#f7fbff', 1 '#6baed6', 2 '#fd8d3c', 3 '#a50f15')
    set grid front
    unset key
    plot data using (x(($1 + $2) / 2)):(sqrt($3 * $4)):(x($1)):(x($2)):3:4:5 \
         with boxxyerror fs solid 1.0 noborder lc palette
    unset output
}
