"""Where a run in the history came from: stated by the publishing CI job, never by the result.

A result file is written by whoever ran the job that made it, so the workflow run, commit and
board a history shows next to a run are what the publisher was told on its command line, or
GitHub Actions' own variables of the job that publishes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rtgate.errors import InputError

# The site links to the run: only a web address may become a link, never javascript: or data:.
_URL = r"^https?://[^\s\"'<>\\]+$"


class ProvenanceOption(NamedTuple):
    flag: str
    help: str
    expected: str


OPTIONS = {
    "workflow_run_id": ProvenanceOption(
        "--provenance-run-id", "the CI workflow run that measured", "a workflow run id (digits)"),
    "workflow_run_url": ProvenanceOption(
        "--provenance-run-url", "its web page (default: from the GitHub variables and the id)",
        "an http(s) URL"),
    "commit": ProvenanceOption(
        "--provenance-commit", "the commit the runs were measured and judged at",
        "a commit SHA (hexadecimal)"),
    "board": ProvenanceOption(
        "--provenance-board", "the lab board the measuring job ran on", "a board name"),
}


class Provenance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workflow_run_id: str | None = Field(None, pattern=r"^[0-9]{1,20}$")
    workflow_run_url: str | None = Field(None, pattern=_URL)
    commit: str | None = Field(None, pattern=r"^[0-9a-f]{7,64}$")
    board: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class Publication(Provenance):
    """A run's entry into the history: its place in the publication sequence, when, from where."""

    seq: int = Field(ge=1)
    published_at: str


def stated(options: Mapping[str, str | None], environ: Mapping[str, str]) -> Provenance:
    """The provenance from the options given (by field name), else from GitHub Actions' variables.

    A job started by ``workflow_run`` must pass the triggering run's id and head SHA: its own
    GITHUB_RUN_ID and GITHUB_SHA name the publishing run, not the one that measured.
    """
    given = {field: (value, OPTIONS[field].flag)  # field: (value, the option or variable)
             for field, value in options.items() if value is not None}
    for field, variable in (("workflow_run_id", "GITHUB_RUN_ID"), ("commit", "GITHUB_SHA")):
        if field not in given and environ.get(variable):
            given[field] = (environ[variable], variable)
    server, repository = environ.get("GITHUB_SERVER_URL"), environ.get("GITHUB_REPOSITORY")
    if "workflow_run_url" not in given and "workflow_run_id" in given and server and repository:
        given["workflow_run_url"] = (
            f"{server}/{repository}/actions/runs/{given['workflow_run_id'][0]}",
            "GITHUB_SERVER_URL/GITHUB_REPOSITORY")
    try:
        return Provenance(**{field: value for field, (value, _) in given.items()})
    except ValidationError as exc:
        field = str(exc.errors()[0]["loc"][0])
        value, source = given[field]
        raise InputError(f"{source}: {value!r} is not {OPTIONS[field].expected}") from None
