# Shared by every rtgate plot: the two outputs and the look. Called as
#   call 'terminals.gp' FORMAT OUTPUT-STEM
# before a plot. No enhanced text: legend titles come from results and are printed as they are.
if (ARG1 eq 'svg') {
    set terminal svg size 960,540 dynamic font 'DejaVu Sans,15' background '#ffffff' noenhanced
} else {
    set terminal pngcairo size 960,540 font 'DejaVu Sans,10' background '#ffffff' noenhanced
}
set output ARG2.'.'.ARG1
set border 3 lc rgb '#555555'
set tics nomirror
set grid xtics ytics mxtics mytics lc rgb '#dddddd' lw 0.5, lc rgb '#eeeeee' lw 0.5
set key top right opaque box lc rgb '#cccccc' samplen 2
set linetype 1 lc rgb '#1f77b4' lw 1.5
set linetype 2 lc rgb '#d62728' lw 1.5
set linetype 3 lc rgb '#2ca02c' lw 1.5
set linetype 4 lc rgb '#9467bd' lw 1.5
set linetype 5 lc rgb '#ff7f0e' lw 1.5
set linetype 6 lc rgb '#8c564b' lw 1.5
set linetype 7 lc rgb '#e377c2' lw 1.5
set linetype 8 lc rgb '#17becf' lw 1.5
set linetype cycle 8
