"""The graph `long_run`: a run that works for a set time and records each execution of its work.

Input {"seconds": N} (0 to 3600): the one node waits N seconds and returns
{"seconds": N, "run_id": …, "attempt": …, "pod": …}. Each execution of the node writes a row of
`long_run_executions` in the deployment's own PostgreSQL (the server's `DATABASE_URI`): on entry
`started_at`, on its end `finished_at`, and `cut_at` when the server cancels it (a stop that does
not wait for its runs). A row with neither end was killed with its process. So, per run id:
one row finished — completed once; a cut or killed row then a finished one — cut and retried;
two finished rows — executed twice.

The run id is the API's (`GET /threads/{thread}/runs/{run}`), the same on every attempt: the run
the server holds `running` on the node's thread (a thread runs one run at a time). Give each
long_run a thread of its own.
"""

import asyncio
import os
import re
from typing import TypedDict

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

MAX_SECONDS = 3600
# The record of an execution outlives a database that restarts meanwhile: its writes are retried.
WRITE_ATTEMPTS = 30
WRITE_BACKOFF_SECS = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS long_run_executions (
  id bigserial PRIMARY KEY,
  run_id text NOT NULL,
  thread_id text,
  attempt int,
  pod text,
  seconds int NOT NULL,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  finished_at timestamptz,
  cut_at timestamptz
)
"""


class State(TypedDict, total=False):
    seconds: int
    run_id: str
    attempt: int
    pod: str


def _conninfo() -> str:
    uri = os.environ.get("DATABASE_URI") or os.environ.get("POSTGRES_URI")
    if not uri:
        raise RuntimeError("long_run needs DATABASE_URI (or POSTGRES_URI)")
    # SQLAlchemy-style driver suffixes (`postgresql+asyncpg://`) are the server's; libpq takes none.
    return re.sub(r"^postgres(ql)?\+\w+://", "postgresql://", uri)


async def _write(query: str, params: tuple) -> list[tuple]:
    """One statement in its own connection (none held while the run works), retried a while."""
    for attempt in range(WRITE_ATTEMPTS):
        try:
            async with await psycopg.AsyncConnection.connect(_conninfo(), autocommit=True) as conn:
                try:
                    await conn.execute(SCHEMA)
                except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
                    pass  # another execution created it at the same moment
                cursor = await conn.execute(query, params)
                return await cursor.fetchall() if cursor.description else []
        except psycopg.OperationalError:
            if attempt == WRITE_ATTEMPTS - 1:
                raise
            await asyncio.sleep(WRITE_BACKOFF_SECS)
    return []


async def _running_run(thread_id: str) -> str | None:
    """The run the server holds `running` on the thread: the MIT runtime's `runs` table."""
    if not thread_id:
        return None
    try:
        rows = await _write(
            "SELECT run_id::text FROM runs WHERE thread_id::text = %s AND status = 'running'",
            (thread_id,),
        )
    except psycopg.errors.UndefinedTable:
        return None
    return rows[0][0] if rows else None


async def work(state: State, config: RunnableConfig) -> State:
    seconds = state.get("seconds", 0)
    if not isinstance(seconds, int) or not 0 <= seconds <= MAX_SECONDS:
        raise ValueError(f"seconds must be a whole number from 0 to {MAX_SECONDS}")
    thread_id = str(config.get("configurable", {}).get("thread_id") or "")
    attempt = config.get("metadata", {}).get("run_attempt")
    pod = os.environ.get("HOSTNAME", "")
    run_id = await _running_run(thread_id) or str(config.get("run_id") or "")
    [(row,)] = await _write(
        "INSERT INTO long_run_executions (run_id, thread_id, attempt, pod, seconds)"
        " VALUES (%s, %s, %s, %s, %s) RETURNING id",
        (run_id, thread_id, attempt, pod, seconds),
    )
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        # Cut by the server (its stop cancels the runs it holds): recorded if the database answers
        # at once; the cancellation goes on whatever happens to the record.
        try:
            await asyncio.shield(
                asyncio.wait_for(
                    _write("UPDATE long_run_executions SET cut_at = clock_timestamp() WHERE id = %s", (row,)),
                    timeout=3,
                )
            )
        except (Exception, asyncio.CancelledError):
            pass
        raise
    await _write("UPDATE long_run_executions SET finished_at = clock_timestamp() WHERE id = %s", (row,))
    return {"seconds": seconds, "run_id": run_id, "attempt": attempt, "pod": pod}


builder = StateGraph(State)
builder.add_node("work", work)
builder.add_edge(START, "work")
builder.add_edge("work", END)
graph = builder.compile()
