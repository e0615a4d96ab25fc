"""Statistics over measurements: pure functions over numpy arrays, scipy and statsmodels inside.

``histogram``: merging, mean, standard deviation and percentiles of 1 µs latency histograms
(cyclictest's and rtla timerlat's); ``tail`` estimates how high latency gets once in a long
while (pWCET) from block maxima; ``ab`` decides whether a candidate's rounds are the same as
the base's, worse or better.
"""
