#!/bin/sh
# The API server: stock langgraph-api's ASGI app under uvicorn, on every IPv4 address, port $PORT.
# Its log configuration is the one the langgraph-api wheel ships (site-packages/logging.json).
set -eu
exec uvicorn langgraph_api.server:app \
  --host 0.0.0.0 --port "${PORT:-8000}" \
  --log-config /opt/langgraph/lib/python3.11/site-packages/logging.json \
  --no-access-log --timeout-graceful-shutdown "${GRACEFUL_SHUTDOWN_SECS:-30}" \
  "$@"
