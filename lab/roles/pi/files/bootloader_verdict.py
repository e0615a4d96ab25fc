"""Judge a Pi's `vcgencmd bootloader_version` answer with rtgate's own list
(bench/firmware/KIND.yml, the doctor's `bootloader` row): prints one JSON line
{"state": "ok"|"warn"|"fail", "found": ..., "todo": ...}. Run on the Ansible control node with the
checkout's rtgate (RTGATE_ROOT: the checkout)."""

import json
import sys

from rtgate.board.doctor import judge_version, known_versions

kind, said = sys.argv[1], sys.argv[2]
finding = judge_version("bootloader", said, known_versions(kind))
print(json.dumps({"state": finding.state, "found": finding.found, "todo": finding.todo}))
