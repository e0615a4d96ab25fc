"""cyclictest: what the installed version accepts, the command lines rtgate builds, and parsing
its output into the normalized result."""
