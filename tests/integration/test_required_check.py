"""The required "latency gate" check is one no workflow token can post (issue 31, item 3).

GitHub's rules, from its documentation:
- "Update branch protection" (docs.github.com/en/rest/branches/branch-protection
  #update-branch-protection): `required_status_checks.checks[]` is `{context, app_id}`,
  `app_id` "the ID of the GitHub App that must provide this check. Omit this field to
  automatically select the GitHub App that has recently provided this check, or any app if it
  was not set by a GitHub App. Pass -1 to explicitly allow any app to set the status."
- "Automatic token authentication" (docs.github.com/en/actions/security-for-github-actions/
  security-guides/automatic-token-authentication): "When you enable GitHub Actions, GitHub
  installs a GitHub App on your repository. The GITHUB_TOKEN secret is a GitHub App
  installation access token." Every workflow's check run therefore carries that one App, GitHub
  Actions (`app.id` 15368, slug `github-actions`, in every check run the API returns for it),
  whichever workflow file — a pull request's own included — created it.
- A check run's `app` is the App whose installation token created it ("REST API endpoints for
  check runs": "Check runs ... created by GitHub Apps", the response's `app`).

The guide's command (docs/lab.md, "The publisher App") is run up to the API call; the payload
is judged with that rule against the check run a workflow token would create and the one the
publisher creates with the App's installation token.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "lab.md"
REPORT = ROOT / ".github" / "workflows" / "latency-report.yml"
GITHUB_ACTIONS_APP_ID = 15368
CHECK = "latency gate"


def protection_payload() -> tuple[dict[str, Any], int]:
    """The guide's branch protection block, run with jq up to `gh api`; the App ID it sets."""
    blocks = re.findall(r"^( *)```sh\n(.*?)^\1```", GUIDE.read_text(), re.M | re.S)
    found = [b for _, b in blocks if "branches/main/protection" in b]
    assert len(found) == 1, "docs/lab.md: one branch protection block"
    script = found[0]
    assert script.count("| gh api") + script.count("|\n") >= 1
    before = script.split("gh api")[0].rstrip().rstrip("|")
    app = int(re.search(r"^\s*app_id=(\d+)", script, re.M).group(1))  # type: ignore[union-attr]
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", before],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), app


def satisfies(required: dict[str, Any], check_run: dict[str, Any]) -> bool:
    """GitHub's rule for one entry of `checks` (module docstring)."""
    if check_run["name"] != required["context"] or check_run["conclusion"] != "success":
        return False
    app_id = required.get("app_id")
    if app_id is None or app_id == -1:  # any App (whichever posted it recently)
        return True
    return bool(check_run["app"]["id"] == app_id)


def test_a_workflow_tokens_check_run_is_not_the_required_one() -> None:
    payload, app = protection_payload()
    checks = payload["required_status_checks"]["checks"]
    assert checks == [{"context": CHECK, "app_id": app}]
    assert "contexts" not in payload["required_status_checks"], "contexts takes any app"
    assert app not in (GITHUB_ACTIONS_APP_ID, -1)
    forged = {"name": CHECK, "conclusion": "success",
              "app": {"id": GITHUB_ACTIONS_APP_ID, "slug": "github-actions"}}
    published = {"name": CHECK, "conclusion": "success", "app": {"id": app}}
    assert not satisfies(checks[0], forged)
    assert satisfies(checks[0], published)
    # Without app_id (what the guide asked before) the forged one passed.
    assert satisfies({"context": CHECK}, forged)
    # The guide also asks for the code owners' review the gate inputs rely on.
    assert payload["required_pull_request_reviews"]["require_code_owner_reviews"] is True


def test_the_publisher_posts_the_check_as_the_lab_app_only() -> None:
    job = yaml.safe_load(REPORT.read_text())["jobs"]["publish"]
    assert job["environment"] == "publish"
    assert "checks" not in job["permissions"], "the workflow token needs no checks: write"
    steps = {s.get("name"): s for s in job["steps"]}
    token = next(s for s in job["steps"] if s.get("id") == "app")
    assert token["uses"].startswith("actions/create-github-app-token@")
    assert token["with"]["private-key"] == "${{ secrets.RTGATE_APP_PRIVATE_KEY }}"
    assert token["with"]["permission-checks"] == "write"
    assert len([k for k in token["with"] if k.startswith("permission-")]) == 1
    check = steps["Check run"]
    assert check["env"]["GH_TOKEN"] == "${{ steps.app.outputs.token }}"
    assert f'name: "{CHECK}"' in steps["The check's conclusion"]["run"]
    assert "check-run.json" in check["run"]


def test_no_workflow_token_may_write_checks_or_statuses() -> None:
    """The default branch's workflows leave checks and statuses to the App: a check run one of
    them posted would not count anyway (above), and none needs to."""
    for path in sorted((ROOT / ".github" / "workflows").glob("*.yml")):
        data = yaml.safe_load(path.read_text())
        scopes = [data.get("permissions") or {}] + [
            j.get("permissions") or {} for j in data["jobs"].values()]
        for scope in scopes:
            if isinstance(scope, str):
                assert scope not in ("write-all",), path.name
                continue
            for name in ("checks", "statuses"):
                assert scope.get(name) in (None, "none", "read"), f"{path.name}: {name}"
