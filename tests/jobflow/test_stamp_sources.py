"""Server stamp sources as data (gridbench.jobflow.events.stamps): declarations, the
parsers on real captured records, the incremental readers and the id join across tiers.

tests/stamp_data/ holds what a live ARC 6.17 A-REX over Slurm 22.05 wrote for one job
(tests/arc_site.py with lrms=slurm): the accounting database (``.dump``), the control
directory's ``job.<id>.local`` and the slurmctld log; and A-REX's database with the fork
LRMS.
"""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from gridbench.errors import SpecError
from gridbench.jobflow.backends.command.serverside import chain
from gridbench.jobflow.events.stamps.collector import StampCollector
from gridbench.jobflow.events.stamps.declare import TimeFormat
from gridbench.jobflow.events.stamps.kind import parse_plan
from gridbench.jobflow.events.stamps.kinds.log import LogReader, LogSource
from gridbench.jobflow.events.stamps.parse import lines_frame, parse_times

DATA = Path(__file__).parents[1] / "stamp_data"
AREX_ID = "d0EODmsY2qAoOSAtDmABFKDmABFKDmABFKDmw0MKDmABFKDm4PT3gm"
BACKEND_ID = f"https://localhost:54689/arex/rest/1.0/jobs/{AREX_ID}"


def ns(text: str) -> int:
    """Epoch ns of an ISO time in UTC (ms allowed)."""
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000) * 1_000_000


def load_db(sql: str, path: Path) -> Path:
    con = sqlite3.connect(path)
    con.executescript((DATA / sql).read_text())
    con.close()
    return path


def arc_slurm_site(tmp_path: Path) -> list[str]:
    """The captured A-REX-over-Slurm files laid out as the site had them."""
    control = tmp_path / "control"
    (control / "accounting").mkdir(parents=True)
    load_db("arex-slurm-accounting.sql", control / "accounting" / "accounting.db")
    for f in (DATA / "arex-control").iterdir():
        shutil.copy(f, control / f.name)
    log = tmp_path / "slurmctld.log"
    shutil.copy(DATA / "arex-slurm-slurmctld.log", log)
    return [str(control / "accounting" / "accounting.db"), f"{control}/job.*.local", str(log)]


def test_arc_over_slurm_two_tiers_join_with_their_own_precision(tmp_path: Path) -> None:
    plan = parse_plan({"use": "arc-slurm"}, "stamps")
    c = StampCollector(plan, arc_slurm_site(tmp_path))
    events = {e.stage: e for e in c.collect([BACKEND_ID, "https://elsewhere/jobs/other"])}
    assert {e.job for e in events.values()} == {BACKEND_ID}
    assert [n for n, _, _ in plan.stages()] == [
        "arex_accepted", "arex_preparing", "arex_submit", "slurm_submit", "slurm_start",
        "slurm_end", "arex_finishing", "arex_finished",
    ]  # fmt: skip
    assert set(events) == {n for n, _, _ in plan.stages()}
    assert events["arex_accepted"].t_ns == ns("2026-11-27T04:16:18")
    assert events["arex_finished"].t_ns == ns("2026-11-27T04:16:30")
    assert events["arex_accepted"].precision_ns == 1_000_000_000
    assert events["slurm_submit"].t_ns == ns("2026-11-27T04:16:21.467")  # Slurm job 1
    assert events["slurm_end"].t_ns == ns("2026-11-27T04:16:24.175")
    assert events["slurm_start"].precision_ns == 1_000_000
    assert events["slurm_start"].source == "slurm"
    assert c.unjoined([BACKEND_ID]) == {"arex": 0, "slurm": 0}
    assert c.collect([BACKEND_ID]) == []  # nothing new: nothing twice
    assert c.report()["reads"] == 6  # one read of each of the three sources per sweep


def test_lower_tier_stamps_wait_for_the_local_id(tmp_path: Path) -> None:
    """Slurm logs the submission before A-REX writes the id it got back: the stamp waits."""
    locs = arc_slurm_site(tmp_path)
    local = Path(locs[1].replace("*", AREX_ID))
    saved = local.read_bytes()
    local.unlink()
    with sqlite3.connect(locs[0]) as con:  # as during the run: A-REX fills it at the end
        con.execute("UPDATE AAR SET LocalJobID = NULL")
    plan = parse_plan({"use": "arc-slurm"}, "stamps")
    c = StampCollector(plan, locs)
    first = c.collect([BACKEND_ID])
    assert {e.source for e in first} == {"arex"}
    assert c.report()["waiting_unjoined"] > 0
    local.write_bytes(saved)
    second = {e.stage for e in c.collect([BACKEND_ID])}
    assert second == {"slurm_submit", "slurm_start", "slurm_end"}


def test_arc_fork_reads_the_lrms_times_a_rex_recorded(tmp_path: Path) -> None:
    db = load_db("arex-fork-accounting.sql", tmp_path / "accounting.db")
    plan = parse_plan({"use": "arc-fork"}, "stamps")
    c = StampCollector(plan, [str(db)])
    bid = "https://localhost:41235/arex/rest/1.0/jobs/neeLDm5S2qAoOSAtDmABFKDmABFKDmABFKDms9HKDmABFKDmY9sAUn"
    got = {e.stage: e.t_ns for e in c.collect([bid])}
    assert got["arex_lrms_start"] == ns("2026-11-27T04:10:20")
    assert got["arex_lrms_end"] == ns("2026-11-27T04:10:21")
    assert got["arex_finished"] == ns("2026-11-27T04:10:33")
    assert len(got) == 7


def test_log_reader_is_incremental_and_survives_partial_lines_and_rotation(
    tmp_path: Path,
) -> None:
    src = parse_plan({"use": "arc-slurm"}, "s").sources[2]
    assert isinstance(src, LogSource)
    log = tmp_path / "ctld.log"
    log.write_text("[2026-11-27T04:16:21.467] _slurm_rpc_submit_batch_job: JobId=7 Init")
    r = LogReader(src, src.lines, str(log))
    assert r.read().frame.height == 0  # no newline yet: the line may still be written
    with log.open("a") as fh:
        fh.write("Prio=1\n[2026-11-27T04:16:22.000] sched: Allocate JobId=7 NodeList=x\n")
    f = r.read().frame
    assert f["stage"].to_list() == ["slurm_submit", "slurm_start"]
    assert r.read().frame.height == 0
    log.write_text("[2026-11-27T04:17:00.000] _job_complete: JobId=8 done\n")  # rotated
    assert r.read().frame["id"].to_list() == ["8"]


def test_unparsable_times_and_foreign_lines_are_dropped_and_counted() -> None:
    src = parse_plan({"use": "arc-slurm"}, "s").sources[2]
    assert isinstance(src, LogSource)
    frame, dropped = lines_frame(
        [
            "[2026-13-45T99:00:00.000] _slurm_rpc_submit_batch_job: JobId=1 x",
            "[2026-11-27T04:16:21.467] _slurm_rpc_submit_batch_job: JobId=2 x",
            "no stamp here JobId=3",
        ],
        src.lines,
        src,
    )
    assert frame["id"].to_list() == ["2"] and dropped == 1


def test_epoch_and_offset_time_formats() -> None:
    s = pl.DataFrame({"t": ["1795752619.25", "x"]})
    got = s.select(parse_times(pl.col("t"), TimeFormat(format="epoch")).alias("t"))["t"].to_list()
    assert got == [1_795_752_619_250_000_000, None]
    s = pl.DataFrame({"t": ["1795752619123", "1795752619123.5"]})
    got = s.select(parse_times(pl.col("t"), TimeFormat(format="epoch_ms")).alias("t"))[
        "t"
    ].to_list()
    assert got == [1_795_752_619_123_000_000, 1_795_752_619_123_500_000]
    s = pl.DataFrame({"t": ["2026-11-27T05:10:19+01:00"]})
    got = s.select(parse_times(pl.col("t"), TimeFormat(format="%Y-%m-%dT%H:%M:%S%:z")))
    assert got["t"][0] == ns("2026-11-27T04:10:19")


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"sources": []}, "at least 1"),
        ({"use": "no-such"}, "unknown stamp declaration"),
        (
            {"sources": [{"tier": "x", "kind": "log", "path": "p",
                          "lines": [{"stage": "a", "pattern": "(?P<id>x)"}]}]},
            "time",
        ),
        (
            {"sources": [{"tier": "x", "kind": "log", "path": "p", "key": "y.local_id",
                          "lines": [{"stage": "a", "pattern": "(?P<id>x)(?P<time>y)"}]}]},
            "joins through tier 'y'",
        ),
        (
            {"sources": [{"tier": "x", "kind": "sqlite", "path": "p", "query": "DELETE FROM t",
                          "stages": {}}]},
            "SELECT using :after",
        ),
        (
            {"sources": [{"tier": "x", "kind": "log", "path": "p",
                          "lines": [{"stage": "a", "pattern": "(?P<id>x)(?=y)(?P<time>y)"}]}]},
            "not supported by the matcher",
        ),
        (
            {"sources": [{"tier": "x", "kind": "log", "path": "p", "key": "job",
                          "lines": [{"stage": "a", "pattern": "(?P<id>x)(?P<time>y)"}]}]},
            "give 'backend', 'name' or '<tier>.local_id'",
        ),
        ({"use": ["gram", "no-such"]}, "unknown stamp declaration"),
    ],
)  # fmt: skip
def test_bad_declarations_say_where_and_how_to_fix(data: object, words: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_plan(data, "backend.options.stamps")
    assert words in str(info.value)
    assert "backend.options.stamps" in str(info.value)


def test_combined_declarations_place_the_file_servers_stamps_inside_the_transfers() -> None:
    """``use: [gram, gridftp]``: both tiers' sources, the longest settle, and GridFTP's
    order anchors its stamps inside the client's upload and download."""
    plan = parse_plan({"use": ["gram", "gridftp"]}, "stamps")
    assert {s.tier for s in plan.sources} == {"gram", "gatekeeper", "gridftp"}
    assert plan.settle_s == 5 and plan.stages()[-1][0] == "gridftp_stage_out_end"
    both = [s.name for s in chain(plan, download=True, upload=True).stages]
    assert both == [
        "submit", "upload_start", "gridftp_stage_in_start", "gridftp_stage_in_end", "uploaded",
        "gram_lrm_submitted", "gatekeeper_lrm_id", "gram_end", "client_done",
        "download_start", "gridftp_stage_out_start", "gridftp_stage_out_end", "downloaded",
    ]  # fmt: skip
    # without the client's transfers the server's stamps follow submit in their order
    alone = [s.name for s in chain(plan, download=False).stages]
    assert alone[0] == "submit" and alone[-1] == "client_done"
    assert alone[1:4] == ["gram_lrm_submitted", "gatekeeper_lrm_id", "gram_end"]
    assert parse_plan({"use": ["gram", "gridftp"], "settle_s": 1}, "stamps").settle_s == 1


def test_gram_joins_the_gatekeeper_through_the_lrm_id() -> None:
    """Three jobs captured from tests/gram_site.py (GCT 6.2): the gatekeeper's lines name
    one job manager id for all three, so only its per-job line (the LRM id) is joined."""
    plan = parse_plan({"use": "gram"}, "stamps")
    c = StampCollector(
        plan, [str(DATA / "gram-job-manager.log"), str(DATA / "gram-gatekeeper.log")]
    )
    bids = [
        f"https://localhost:41991/{x}/72057598265980800/"
        for x in ("17370695930565556866", "17370695930329909891", "17370695929986721411")
    ]
    ev = c.collect(bids)
    got = {(e.job, e.stage): e for e in ev}
    assert len(got) == len(ev) == 9  # three stages of three jobs, each once
    first = bids[0]
    assert got[first, "gram_lrm_submitted"].t_ns == ns("2026-11-27T04:32:11.003") + 986_000
    assert got[first, "gram_lrm_submitted"].precision_ns == 1_000  # µs kept exactly
    assert got[first, "gram_end"].t_ns == ns("2026-11-27T04:32:13.788") + 37_000
    assert got[bids[2], "gatekeeper_lrm_id"].t_ns == ns("2026-11-27T04:32:12")
    assert got[first, "gatekeeper_lrm_id"].source == "gatekeeper"
    assert c.unjoined(bids) == {"gram": 0, "gatekeeper": 0}


def test_a_local_id_naming_two_jobs_joins_neither(tmp_path: Path) -> None:
    top = tmp_path / "top.log"
    low = tmp_path / "low.log"
    top.write_text("1 a L7\n1 b L7\n2 c L8\n")
    low.write_text("5 L7 end\n6 L8 end\n")
    tf = {"format": "epoch"}
    plan = parse_plan(
        {"sources": [
            {"tier": "top", "kind": "log", "path": "p", "time": tf, "lines": [
                {"stage": "top_in", "pattern": "^(?P<time>\\d+) (?P<id>\\w) (?P<local_id>\\w+)$"}]},
            {"tier": "low", "kind": "log", "path": "p", "key": "top.local_id", "time": tf,
             "lines": [{"stage": "low_end", "pattern": "^(?P<time>\\d+) (?P<id>\\w+) end$"}]},
        ]},
        "stamps",
    )  # fmt: skip
    c = StampCollector(plan, [str(top), str(low)])
    got = {(e.job, e.stage) for e in c.collect(["a", "b", "c"])}
    assert got == {("a", "top_in"), ("b", "top_in"), ("c", "top_in"), ("c", "low_end")}
    assert c.unjoined(["a", "b", "c"]) == {"top": 0, "low": 2}


# Sample lines as the vendors document them (never run against a live service here).
HTCONDOR_LOG = """\
000 (1234.000.000) 2024-03-05 10:11:12 Job submitted from host: <10.0.0.1:9618?addrs=10.0.0.1-9618>
...
001 (1234.000.000) 2024-03-05 10:11:20 Job executing on host: <10.0.0.2:9618?addrs=10.0.0.2-9618>
...
006 (1234.000.000) 2024-03-05 10:11:25 Image size of job updated: 2500
\t1  -  MemoryUsage of job (MB)
...
005 (1234.000.000) 2024-03-05 10:12:20 Job terminated.
\t(1) Normal termination (return value 0)
...
"""
PBS_LOG = """\
03/05/2024 10:11:12;Q;1234.pbsserver;queue=workq
03/05/2024 10:11:13;S;1234.pbsserver;user=alice group=users jobname=gb queue=workq ctime=1709633472
03/05/2024 10:12:20;E;1234.pbsserver;user=alice Exit_status=0 resources_used.walltime=00:01:07
"""


@pytest.mark.parametrize(
    ("use", "var_text", "bid", "expect"),
    [
        ("htcondor-userlog", HTCONDOR_LOG, "1234.0",
         {"condor_submitted": "2024-03-05T10:11:12", "condor_executing": "2024-03-05T10:11:20",
          "condor_terminated": "2024-03-05T10:12:20"}),
        ("pbs-accounting", PBS_LOG, "1234.pbsserver",
         {"pbs_queued": "2024-03-05T10:11:12", "pbs_started": "2024-03-05T10:11:13",
          "pbs_ended": "2024-03-05T10:12:20"}),
    ],
)  # fmt: skip
def test_declarations_for_systems_not_run_here_parse_their_documented_lines(
    tmp_path: Path, use: str, var_text: str, bid: str, expect: dict[str, str]
) -> None:
    log = tmp_path / "log"
    log.write_text(var_text)
    plan = parse_plan({"use": use}, "stamps")
    c = StampCollector(plan, [str(log)])
    got = {e.stage: e.t_ns for e in c.collect([bid])}
    assert got == {k: ns(v) for k, v in expect.items()}


def test_every_shipped_declaration_loads_and_says_whether_it_ran() -> None:
    from gridbench.jobflow.events.stamps import library

    for name in library.names():
        raw = library.load(name, "stamps.use")
        assert isinstance(raw["tested"], bool) and raw["written_for"], name
        if not raw["tested"]:
            assert "NEVER RUN" in raw["description"], name
        parse_plan({"use": name}, "stamps")


def test_a_bad_stamps_block_fails_the_backend_options_with_the_place() -> None:
    from gridbench.jobflow.backends.command.backend import CommandBackend

    base = {"preset": "arc", "vars": {"url": "u", "app": "a"}}
    with pytest.raises(SpecError) as info:
        CommandBackend.from_options({**base, "stamps": {"use": "arc-slurm"}})
    assert "{arc_controldir}" in str(info.value)  # the declaration's variable is not set
    assert "stamps.sources.0" in str(info.value)


def test_demo_cli_start_stamps_through_the_runner(tmp_path: Path) -> None:
    """A files source end to end: the demo CLI's per-job ``started`` files (epoch ns)."""
    from test_command_runner import demo, spec
    from test_runner import events, run_spec

    state = tmp_path / "state"
    opts = demo(state, stamps={"use": "demo"})
    body = """
job: {command: [/bin/true]}
load: {model: open, rate: 20/s}
trial: {jobs: 3}
timeouts: {status_interval: 0.2s, drain: 30s}
"""
    out = run_spec(spec("demo-stamps", opts, body), tmp_path / "results")
    ev = events(out)
    started = ev.filter(pl.col("stage") == "demo_started")
    assert started.height == 3 and set(started["source"]) == {"demo"}
    wide = ev.pivot(on="stage", index="job", values="t_ns", aggregate_function="min")
    assert (wide["submit"] < wide["demo_started"]).all()
    assert (wide["demo_started"] < wide["client_done"]).all()


def test_gridftp_transfer_stats_give_start_and_end_to_the_microsecond() -> None:
    """A RETR captured from a live globus-gridftp-server (13.24, GCT 6.2) here: 1 MB of
    /tmp/gftp-try/src.bin, so the job named gftp-try (the directory, keyed by name)."""
    plan = parse_plan({"use": "gridftp"}, "stamps")
    log = str(DATA / "gridftp-server.log")
    c = StampCollector(plan, [log, log])
    assert c.collect(["https://ce/16/1/"]) == []  # no name: the directory meets no job
    c = StampCollector(plan, [log, log])
    got = {e.stage: e for e in c.collect(["https://ce/16/1/"], {"https://ce/16/1/": "gftp-try"})}
    assert set(got) == {"gridftp_stage_out_start", "gridftp_stage_out_end"}
    assert got["gridftp_stage_out_start"].t_ns == ns("2026-11-27T04:45:06.648") + 225_000
    assert got["gridftp_stage_out_end"].t_ns == ns("2026-11-27T04:45:06.650") + 40_000
    assert got["gridftp_stage_out_end"].precision_ns == 1_000


# BLAH accounting records as documented (https://github.com/prelz/BLAH/wiki/Accounting);
# the lines are taken from the samples APEL's BLAH parser is tested on (apel/apel,
# test/test_blah.py): the second keeps two of its four FQANs, the third is APEL's invalid
# timestamp (an 'A' between date and time) given a job id and lrmsID of its own.
BLAH_LOG = """\
"timestamp=2012-05-20 23:59:47" "userDN=/O=GermanGrid/OU=UniWuppertal/CN=Torsten Harenberg" \
"userFQAN=/atlas/Role=production/Capability=NULL" \
"ceID=cream-2-fzk.gridka.de:8443/cream-pbs-atlasXL" "jobID=CREAM410741480" \
"lrmsID=9575064.lrms1" "localUser=11999"
"timestamp=2014-05-18 00:00:58" "userDN=/C=CA/O=Grid/OU=triumf.ca/CN=Asoka De Silva GC1" \
"userFQAN=/atlas/Role=pilot/Capability=NULL" "userFQAN=/atlas/Role=NULL/Capability=NULL" \
"ceID=ce1.triumf.ca:8443/cream-pbs-atlas" "jobID=CREAM663276716" \
"lrmsID=15876368.ce1.triumf.ca" "localUser=41200" "clientID=cream_663276716"
"timestamp=2012-05-20A23:59:47" "userDN=/O=GermanGrid/OU=UniWuppertal/CN=Torsten Harenberg" \
"userFQAN=/atlas/Role=production/Capability=NULL" \
"ceID=cream-2-fzk.gridka.de:8443/cream-pbs-atlasXL" "jobID=CREAM410741481" \
"lrmsID=9575065.lrms1" "localUser=11999"
"""


def test_cream_blah_accounting_stamps_the_lrms_submission_and_records_the_lrms_id(
    tmp_path: Path,
) -> None:
    """Never run against a live CREAM CE: documented BLAH records, and a PBS accounting
    line (the documented format) joined through the lrmsID BLAH recorded."""
    from gridbench.jobflow.events.stamps import library

    log = tmp_path / "blahp.log-20120520"
    log.write_text(BLAH_LOG)
    pbs = tmp_path / "20120521"
    pbs.write_text("05/21/2012 00:00:05;S;9575064.lrms1;user=u queue=atlasXL\n")
    pbs_src = {**library.load("pbs-accounting", "t")["sources"][0], "key": "blah.local_id"}
    plan = parse_plan({"use": "cream-blah", "sources": [pbs_src]}, "stamps")
    c = StampCollector(plan, [str(log), str(pbs)])
    bids = [
        "https://cream-2-fzk.gridka.de:8443/CREAM410741480",
        "https://ce1.triumf.ca:8443/CREAM663276716",
        "https://cream-2-fzk.gridka.de:8443/CREAM410741481",
    ]
    got = {(e.job, e.stage, e.t_ns, e.precision_ns, e.source) for e in c.collect(bids)}
    assert got == {
        (bids[0], "blah_lrms_submitted", ns("2012-05-20T23:59:47"), 1_000_000_000, "blah"),
        (bids[1], "blah_lrms_submitted", ns("2014-05-18T00:00:58"), 1_000_000_000, "blah"),
        (bids[0], "pbs_started", ns("2012-05-21T00:00:05"), 1_000_000_000, "pbs"),
    }
    assert c.report()["dropped_unparsable"] == 1  # the 'A' timestamp: dropped, not guessed
    assert c.unjoined(bids) == {"blah": 1, "pbs": 2}


# A UNICORE/X job resource (GET .../rest/core/jobs/<uuid>) as recorded in the BlueBrain
# bcsb service's tests (bcsb.unicore job_service tests, MOCK_JOB_RESPONSE), pretty-printed;
# the second file's submissionTime lacks the offset UNICORE/X writes.
UNICORE_JOB = "fb82eb95-04eb-4fca-9b7e-2650c499ca45"
UNICORE_PROPS = """\
{
    "log": [
        "Mon Jan 24 16:07:26 CET 2022: Created with ID fb82eb95-04eb-4fca-9b7e-2650c499ca45",
        "Mon Jan 24 16:07:27 CET 2022: Status set to READY.",
        "Mon Jan 24 16:07:27 CET 2022: Status set to DONE."
    ],
    "submissionTime": "2022-01-24T16:07:27+0100",
    "statusMessage": "",
    "currentTime": "2022-01-24T16:07:48+0100",
    "resourceStatus": "READY",
    "terminationTime": "2022-02-23T16:07:26+0100",
    "name": "UNICORE_Job",
    "queue": "N/A",
    "status": "SUCCESSFUL"
}
"""


def test_unicore_rest_properties_stamp_the_submission_with_its_offset(tmp_path: Path) -> None:
    """Never run against a live UNICORE/X: one saved properties file per job."""
    other = "31a580c5-7d48-41d6-bcd2-3cc3dcef330b"
    (tmp_path / f"{UNICORE_JOB}.json").write_text(UNICORE_PROPS)
    (tmp_path / f"{other}.json").write_text('{\n  "submissionTime": "2022-01-24T16:07:27"\n}\n')
    plan = parse_plan({"use": "unicore-rest"}, "stamps")
    c = StampCollector(plan, [f"{tmp_path}/*.json"])
    base = "https://bbpunicore.epfl.ch:8080/BB5-CSCS/rest/core/jobs/"
    bids = [base + UNICORE_JOB, base + other]
    got = [(e.job, e.stage, e.t_ns, e.precision_ns, e.source) for e in c.collect(bids)]
    assert got == [
        (bids[0], "unicore_submitted", ns("2022-01-24T15:07:27"), 1_000_000_000, "unicorex")
    ]
    assert c.report()["dropped_unparsable"] == 1  # no offset: dropped, not read as UTC
    assert c.unjoined(bids) == {"unicorex": 1}
