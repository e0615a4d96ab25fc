"""Statistics over measurements: pure functions over numpy arrays, scipy and statsmodels inside.

``tail`` estimates how high latency gets once in a long while (pWCET) from block maxima.
"""
