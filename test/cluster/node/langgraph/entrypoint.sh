#!/bin/sh
# The API server: stock langgraph-api's ASGI app under uvicorn, on every IPv4 address, port $PORT.
# Its log configuration is the one the langgraph-api wheel ships (site-packages/logging.json).
set -eu
# Switches for the tests of a failing server (test/integration/node/failure-evidence.test.ts), one
# image for all: TEST_PRINT_ENV names variables to print at start (NAME=value), TEST_ALLOCATE_MB
# fills that much memory first, TEST_EXIT_CODE exits with it before the server starts. The graph's
# own switch, TEST_FAIL_AT_IMPORT, is in counter.py.
for name in ${TEST_PRINT_ENV:-}; do
  eval "printf '%s=%s\\n' \"\$name\" \"\${$name:-}\""
done
if [ -n "${TEST_ALLOCATE_MB:-}" ]; then
  python -c 'import os, time; b = b"x" * (int(os.environ["TEST_ALLOCATE_MB"]) << 20); time.sleep(1)'
fi
if [ -n "${TEST_EXIT_CODE:-}" ]; then exit "$TEST_EXIT_CODE"; fi
exec uvicorn langgraph_api.server:app \
  --host 0.0.0.0 --port "${PORT:-8000}" \
  --log-config /opt/langgraph/lib/python3.11/site-packages/logging.json \
  --no-access-log --timeout-graceful-shutdown "${GRACEFUL_SHUTDOWN_SECS:-30}" \
  "$@"
