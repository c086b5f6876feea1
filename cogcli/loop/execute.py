"""Running the calls the gate let through (:mod:`cogcli.gate`): concurrently, calls on one path in call
order, each concluded as it ends through the run's :class:`~cogcli.loop.conclude.Conclude`."""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from cogcli.contract.prepare import PreparedCall
from cogcli.loop.conclude import Conclude, Slots
from cogcli.contract.context import AbortSignal, UpdateCallback
from cogcli.contract.invoke import run_prepared


async def run_calls(
    calls: Sequence[PreparedCall],
    slots: Slots,
    *,
    conclude: Conclude,
    on_update: UpdateCallback,
    signal: AbortSignal,
) -> None:
    """Run the calls not yet concluded, concurrently; each is concluded as it ends. Calls with the
    same :meth:`~PreparedCall.order_key` run one after another in call order: the second sees what
    the first did (two edits of one file in one turn)."""
    todo = slots.open()
    done = {i: anyio.Event() for i in todo}
    after: dict[int, anyio.Event] = {}
    last: dict[str, int] = {}
    for i in todo:
        key = calls[i].order_key()
        if key is not None:
            if key in last:
                after[i] = done[last[key]]
            last[key] = i

    async def run_one(i: int) -> None:
        try:
            if i in after:
                await after[i].wait()
            await conclude(slots, i, await run_prepared(calls[i], on_update=on_update, signal=signal))
        finally:
            done[i].set()

    async with anyio.create_task_group() as tg:
        for i in todo:
            tg.start_soon(run_one, i)
