"""Reports: gnuplot plots, the run history store, the static results site and PR comparisons."""
