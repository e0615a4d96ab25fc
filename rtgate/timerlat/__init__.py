"""rtla timerlat as a measurement tool: the scenario's ``timerlat:`` block, the ``rtla timerlat
hist`` command line, and its output parsed into the normalized result."""
