#!/bin/sh
# The sha256 of the tools a board measures with, printed as the `tools:` block of its board file.
# rtgate's SSH driver sends this script to the board before every deploy and every run and refuses
# a tool whose digest differs from the pinned one; people run the same script to pin them:
#
#   ssh rtgate@rpi5-lab sh -s -- rtgate < rtgate/board/rpi5/tooldigest.sh
#
# usage: sh tooldigest.sh PROGRAM [NAME...]
#   PROGRAM  the first word of bench_command. `rtgate:` is the digest of the Python virtual
#            environment it runs from (every file and link in it, and the interpreter the venv
#            links to): a console script or an interpreter alone says nothing of the code they
#            import, and neither does a package directory next to a site-packages a .pth can
#            redirect.
#   NAME     a command as this shell's PATH resolves it (default: cyclictest stress-ng iperf3):
#            the sha256 of the file it finally points to.
# A tool that cannot be digested is a comment saying why; a pinned one then fails the check.
set -u
LC_ALL=C
export LC_ALL

file_sha() { sha256sum <"$1" | cut -c1-64; }

rtgate_line() {
    if ! prog=$(command -v "$1") || [ "${prog#/}" = "$prog" ]; then
        echo "  # rtgate: $1 is not a program on PATH"
        return
    fi
    interp=$prog
    # A console script: its interpreter is on the #! line (pip writes an absolute path there).
    if [ "$(head -c 2 "$prog")" = "#!" ]; then
        interp=$(head -n 1 "$prog" | sed 's/^#![[:space:]]*//; s/[[:space:]].*$//')
    fi
    venv=$(dirname "$(dirname "$interp")")
    if [ ! -f "$venv/pyvenv.cfg" ]; then
        echo "  # rtgate: $interp is not in a virtual environment ($venv has no pyvenv.cfg)"
        return
    fi
    real=$(readlink -f "$interp")
    sha=$({
        file_sha "$real"
        cd "$venv" || exit 1
        find . -type f -print0 | sort -z | xargs -0r sha256sum
        find . -type l -printf '%p -> %l\n' | sort
    } | sha256sum | cut -c1-64)
    echo "  rtgate: $sha  # $venv (interpreter $real)"
}

program=${1:?usage: tooldigest.sh PROGRAM [NAME...]}
shift
[ $# -gt 0 ] || set -- cyclictest stress-ng iperf3
echo "tools:"
rtgate_line "$program"
for name in "$@"; do
    if ! path=$(command -v "$name") || [ "${path#/}" = "$path" ]; then
        echo "  # $name: not a program on PATH"
        continue
    fi
    real=$(readlink -f "$path")
    echo "  $name: $(file_sha "$real")  # $real"
done
