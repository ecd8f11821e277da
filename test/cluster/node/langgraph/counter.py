"""The graph the test LangGraph server serves: a counter kept per thread.

No model and no outside service: each run adds 1 to `count` in the thread's state (0 on a new
thread) and the run's result is that state, so a thread's first run returns {"count": 1}, its
second {"count": 2}. The count lives in the checkpointer, i.e. in the server's database.
"""

import os
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


# A graph that fails at import, for the tests of a failing server: the server cannot start.
if os.environ.get("TEST_FAIL_AT_IMPORT"):
    raise RuntimeError(os.environ["TEST_FAIL_AT_IMPORT"])


class State(TypedDict, total=False):
    count: int


def increment(state: State) -> State:
    return {"count": state.get("count", 0) + 1}


builder = StateGraph(State)
builder.add_node("increment", increment)
builder.add_edge(START, "increment")
builder.add_edge("increment", END)
graph = builder.compile()
