"""What rtgate's reports look like: the gnuplot plots (``*.gp``), the site's page templates
(``templates/``) and its stylesheet. Data, not code: the code that fills them is rtgate/report/.

This directory installs as the package ``rtgate.reports`` (pyproject.toml), so a plain
``pip install .`` carries it; rtgate/paths.py (``REPORTS``) finds it either way.
"""
