"""No shell, ever: hostile values stay single inert arguments of real programs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gridbench.jobflow.backends.base import JobRequest, JobState
from gridbench.jobflow.backends.command.backend import CommandBackend
from gridbench.jobflow.backends.command.process import ProcessRunner
from gridbench.jobflow.backends.command.template import ArgvTemplate

PRINTF = "/usr/bin/printf"
ECHO = "/bin/echo"


def hostile(d: Path) -> list[str]:
    """Values that would each create a file under ``d`` if any shell ever saw them."""
    return [
        f"x; touch {d}/PWNED",
        f"$(touch {d}/PWNED2)",
        f"`touch {d}/PWNED3`",
        f"x | touch {d}/PWNED4",
        f"x && touch {d}/PWNED5",
        f"x\ntouch {d}/PWNED6",
        f"x > {d}/PWNED7",
        f"a b 'c' \"d\" $HOME * ~ {d}/PWNED8",
    ]


def assert_untouched(d: Path) -> None:
    assert sorted(p.name for p in d.iterdir()) == []


@pytest.mark.parametrize("i", range(8))
def test_each_value_is_one_literal_argument(tmp_path: Path, i: int) -> None:
    value = hostile(tmp_path)[i]
    t = ArgvTemplate.parse([PRINTF, "[%s]\\n", "{id}"], {"id"}, set())
    argv = t.render({"id": value})
    assert argv == [PRINTF, "[%s]\\n", value]

    async def main() -> bytes:
        return (await ProcessRunner().run("status", argv, timeout_s=10)).stdout

    assert asyncio.run(main()) == f"[{value}]\n".encode()  # printf saw exactly one argument
    assert_untouched(tmp_path)


def test_embedded_and_list_values_stay_inert(tmp_path: Path) -> None:
    values = hostile(tmp_path)
    t = ArgvTemplate.parse(
        [PRINTF, "<%s>", "--name={name}", "{ids}"], {"name", "ids"}, {"ids"}, {"ids": ","}
    )
    argv = t.render({"name": values[0]}, {"ids": values[1:3]})
    assert len(argv) == 4

    async def main() -> bytes:
        return (await ProcessRunner().run("status", argv, timeout_s=10)).stdout

    out = asyncio.run(main()).decode()
    assert out == f"<--name={values[0]}><{values[1]},{values[2]}>"
    assert_untouched(tmp_path)


def test_hostile_ids_names_and_commands_through_the_backend(tmp_path: Path) -> None:
    """A CLI that echoes ids back: every hostile id is submitted, listed and cancelled."""
    marks = tmp_path / "marks"
    marks.mkdir()
    values = hostile(marks)
    options = {
        # submit prints the job name back as the id
        "submit": {"argv": [PRINTF, "%s\\n", "{name}"], "pattern": r"\A(?P<id>[^\n]+)"},
        # status lists every id it was given with a state, one per line
        "status": {
            "argv": [PRINTF, "%s\\tRUNNING\\n", "{ids}"],
            "pattern": r"^(?P<id>[^\t]+)\t(?P<state>[A-Z]+)$",
        },
        "cancel": [ECHO, "cancel", "{ids}"],
        "output": [PRINTF, "%s|%s", "{id}", "{name}"],
        "states": {"RUNNING": "running"},
    }
    single = [v for v in values if "\n" not in v]

    async def main() -> tuple[list[str], dict[str, object], bytes, bytes]:
        b = CommandBackend.from_options(options)
        await b.open()
        try:
            ids = [await b.submit(JobRequest(v, ("/bin/true", v))) for v in single]
            st = await b.status(ids)
            await b.cancel(ids)
            out = await b.fetch_output(ids[0])
            # a job command full of metacharacters, given to a program as its argv
            echo = CommandBackend.from_options(
                {**options, "submit": {"argv": [ECHO, "{command}"], "pattern": r"(?P<id>.+)"}}
            )
            await echo.open()
            cmd_id = await echo.submit(JobRequest("j", tuple(values)))
            await echo.close()
            return ids, {k: v.state for k, v in st.items()}, out, cmd_id.encode()
        finally:
            await b.close()

    ids, states, out, cmd_id = asyncio.run(main())
    assert ids == single  # each id came back exactly as given
    assert states == dict.fromkeys(single, JobState.RUNNING)
    assert out == f"{single[0]}|{single[0]}".encode()
    assert cmd_id == " ".join(values).split("\n")[0].encode()  # echo printed the literal args
    assert_untouched(marks)
