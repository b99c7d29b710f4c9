"""The submission time-out of the open loop (``within``): same outcomes as
``asyncio.timeout`` whether the call answers at once or waits."""

from __future__ import annotations

import asyncio

import pytest

from gridbench.jobflow.run.open_loop import within


async def _at_once() -> str:
    return "id-1"


async def _waits(s: float) -> str:
    await asyncio.sleep(0)  # a bare yield first, then a future
    await asyncio.sleep(s)
    return "id-2"


async def _raises_at_once() -> str:
    raise ValueError("refused")


async def _raises_later() -> str:
    await asyncio.sleep(0.001)
    raise ValueError("refused later")


def test_answer_without_waiting() -> None:
    assert asyncio.run(within(_at_once(), 1.0)) == "id-1"


def test_answer_after_waiting() -> None:
    assert asyncio.run(within(_waits(0.01), 5.0)) == "id-2"


def test_time_out_while_waiting() -> None:
    with pytest.raises(TimeoutError):
        asyncio.run(within(_waits(10.0), 0.02))


def test_errors_pass_through() -> None:
    with pytest.raises(ValueError, match="refused"):
        asyncio.run(within(_raises_at_once(), 1.0))
    with pytest.raises(ValueError, match="refused later"):
        asyncio.run(within(_raises_later(), 1.0))


def test_other_awaitables() -> None:
    async def main() -> str:
        fut = asyncio.get_running_loop().create_future()
        fut.set_result("id-3")
        return await within(fut, 1.0)

    assert asyncio.run(main()) == "id-3"


def test_outside_cancel_is_a_cancel_not_a_time_out() -> None:
    async def main() -> None:
        task = asyncio.create_task(within(_waits(10.0), 5.0))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_inner_cleanup_runs_on_time_out() -> None:
    cleaned: list[bool] = []

    async def slow() -> str:
        try:
            await asyncio.sleep(10.0)
        finally:
            cleaned.append(True)
        return "never"

    with pytest.raises(TimeoutError):
        asyncio.run(within(slow(), 0.01))
    assert cleaned == [True]
