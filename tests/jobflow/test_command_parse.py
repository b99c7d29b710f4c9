"""Reading client output: ids, per-job and batched states, the state map."""

from __future__ import annotations

import re

import pytest

from gridbench.jobflow.backends.base import JobState
from gridbench.jobflow.backends.command.parse import (
    NoMatch,
    extract_id,
    key_of,
    map_state,
    parse_many,
    parse_one,
    snippet,
)

SLURM = {
    "PENDING": JobState.QUEUED,
    "RUNNING": JobState.RUNNING,
    "COMPLETED": JobState.DONE,
    "FAILED": JobState.FAILED,
    "CANCELLED": JobState.CANCELLED,
}


def test_extract_id_by_named_group_first_group_or_match() -> None:
    assert extract_id(
        re.compile(r"jobid: (?P<id>\S+)"), "Job submitted with jobid: gsiftp://x/1\n"
    ) == ("gsiftp://x/1")
    assert extract_id(re.compile(r"^(\d+)", re.M), "Submitted\n4711;cluster\n") == "4711"
    assert extract_id(re.compile(r"\d+\.\d+"), "1 job(s) submitted to cluster 12.0") == "12.0"


def test_extract_id_without_a_match_names_pattern_and_output() -> None:
    with pytest.raises(NoMatch) as exc:
        extract_id(re.compile(r"^(?P<id>\d+)$"), "sbatch: error: invalid partition specified\n")
    msg = str(exc.value)
    assert "'^(?P<id>\\\\d+)$'" in msg or r"^(?P<id>\d+)$" in msg
    assert "invalid partition specified" in msg


def test_an_id_with_a_nul_byte_is_refused() -> None:
    with pytest.raises(NoMatch):
        extract_id(re.compile(r"(?P<id>\S+)"), "12\x0034\n")


def test_map_state_exact_case_insensitive_and_unknown() -> None:
    assert map_state("RUNNING", SLURM).state is JobState.RUNNING
    assert map_state("completed", SLURM).state is JobState.DONE
    st = map_state("BOOT_FAIL", SLURM)
    assert st.state is JobState.UNKNOWN
    assert "'BOOT_FAIL'" in st.message and "not in the state map" in st.message


def test_done_with_nonzero_exit_code_is_failed() -> None:
    st = map_state("COMPLETED", SLURM, exit_code=3)
    assert st.state is JobState.FAILED and st.exit_code == 3
    assert st.message == "COMPLETED, exit code 3"
    st = map_state("COMPLETED", SLURM, exit_code=0)
    assert st.state is JobState.DONE and st.message == "COMPLETED"


def test_parse_many_per_line_skips_ignored_and_foreign_lines() -> None:
    out = "JOBID STATE\n---\n101 RUNNING\nsome warning\n102 COMPLETED\n\n103 WEIRD\n"
    pat = re.compile(r"^(?P<id>\d+)\s+(?P<state>[A-Z]+)$")
    got = parse_many(pat, out, SLURM, ignore=re.compile(r"^(JOBID|---)"))
    assert {k: v.state for k, v in got.items()} == {
        "101": JobState.RUNNING,
        "102": JobState.DONE,
        "103": JobState.UNKNOWN,
    }
    assert "WEIRD" in got["103"].message


def test_parse_many_with_optional_exit_code_group() -> None:
    pat = re.compile(r"^(?P<id>\w+) (?P<state>[A-Z]+) (?P<exit_code>\S+)$")
    got = parse_many(pat, "a1 COMPLETED 0\na2 FAILED 2\na3 RUNNING -\n", SLURM)
    assert (got["a1"].state, got["a1"].exit_code) == (JobState.DONE, 0)
    assert (got["a2"].state, got["a2"].exit_code) == (JobState.FAILED, 2)
    assert (got["a3"].state, got["a3"].exit_code) == (JobState.RUNNING, None)


def test_parse_many_over_the_whole_output_for_multiline_records() -> None:
    cream = (
        "******  JobID=[https://ce:8443/CREAM111]\n"
        "        Status        = [DONE-OK]\n"
        "        ExitCode      = [0]\n"
        "******  JobID=[https://ce:8443/CREAM222]\n"
        "        Status        = [REALLY-RUNNING]\n"
    )
    pat = re.compile(
        r"JobID=\[(?P<id>[^\]]+)\]\s*\n\s*Status\s*=\s*\[(?P<state>[A-Z-]+)\]"
        r"(?:\s*\n\s*ExitCode\s*=\s*\[(?P<exit_code>-?\d*)\])?"
    )
    states = {"DONE-OK": JobState.DONE, "REALLY-RUNNING": JobState.RUNNING}
    got = parse_many(pat, cream, states, scope="output")
    assert got["https://ce:8443/CREAM111"].state is JobState.DONE
    assert got["https://ce:8443/CREAM111"].exit_code == 0
    assert got["https://ce:8443/CREAM222"].state is JobState.RUNNING


def test_parse_many_raises_when_nothing_matched_but_empty_output_is_fine() -> None:
    pat = re.compile(r"^(?P<id>\d+) (?P<state>\w+)$")
    assert parse_many(pat, "", SLURM) == {}
    assert parse_many(pat, "HEADER\n", SLURM, ignore=re.compile("HEADER")) == {}
    with pytest.raises(NoMatch, match="slurm_load_jobs error"):
        parse_many(pat, "slurm_load_jobs error: Unable to contact slurm controller\n", SLURM)


def test_parse_one_state_group_whole_match_or_exit_code() -> None:
    arc = {"State: Finished": JobState.DONE}
    assert parse_one(re.compile(r"State: \w+[-]*\w+"), "Job: x\n State: Finished\n", arc).state is (
        JobState.DONE
    )  # the seed's ARC pattern has no group: the whole match is the native state
    qacct = re.compile(r"^exit_status\s+(?P<exit_code>\d+)", re.M)
    st = parse_one(qacct, "qname all.q\nexit_status  1\n", {})
    assert (st.state, st.exit_code) == (JobState.FAILED, 1)
    assert parse_one(qacct, "exit_status 0\n", {}).state is JobState.DONE
    with pytest.raises(NoMatch):
        parse_one(re.compile(r"State: (?P<state>\w+)"), "error: no such job\n", arc)


def test_key_of_and_snippet() -> None:
    k = re.compile(r"^\d+")
    assert key_of(k, "123.server.example.org") == key_of(k, "123.serve*") == "123"
    assert key_of(None, "123.server") == "123.server"
    assert snippet("") == "(empty output)"
    long = snippet("x" * 1000, limit=10)
    assert long.startswith("'xxxxxxxxxx'") and "1000 characters" in long
