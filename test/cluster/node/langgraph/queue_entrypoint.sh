#!/bin/sh
# A queue-only worker: takes background runs from the queue (N_JOBS_PER_WORKER at a time, 10 by
# default) and serves GET /ok and GET /metrics on port $PORT (8000 as the image sets it; the
# module's own default is 8080) for its probes.
set -eu
exec python -m langgraph_api.queue_entrypoint
