"""Root cause at the breach: rtla built from trusted source, trace runs, their parsed analysis."""
