#!/usr/bin/env python3
"""Arize Phoenix, on 127.0.0.1 only, never reaching the internet.

Usage: ``phoenix_local.py WORKING_DIR HTTP_PORT GRPC_PORT``

Runs ``phoenix serve`` (arize-phoenix 20.26.1, from the test venv) with
its database and files under WORKING_DIR, its UI and OTLP/HTTP on
``127.0.0.1:HTTP_PORT``. Its telemetry pixels and external resources
(web fonts, the sandbox's WASM download) are off.

Phoenix binds its OTLP/gRPC receiver to every interface (``[::]:PORT``
in ``phoenix/server/grpc_server.py``, whatever ``PHOENIX_HOST`` says) and
has no switch to turn it off while it ingests spans: the gRPC server's
``add_insecure_port`` is wrapped here to bind 127.0.0.1 instead. envaware
sends over HTTP; the gRPC port only has to be free and local.

Started and stopped by ``xtask::phoenix`` (``cargo xtask phoenix``,
``tests/tests/otel_phoenix.rs``).
"""
import os
import sys


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    working_dir, http_port, grpc_port = argv[1], argv[2], argv[3]
    os.makedirs(working_dir, exist_ok=True)
    os.environ.update(
        {
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": http_port,
            "PHOENIX_GRPC_PORT": grpc_port,
            "PHOENIX_WORKING_DIR": working_dir,
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
            "DO_NOT_TRACK": "1",
        }
    )
    import grpc.aio

    server = grpc.aio.server

    def loopback_server(*args, **kwargs):
        s = server(*args, **kwargs)
        add = s.add_insecure_port
        s.add_insecure_port = lambda address: add(address.replace("[::]:", "127.0.0.1:", 1))
        return s

    grpc.aio.server = loopback_server

    from phoenix.server.main import main as phoenix_main

    sys.argv = ["phoenix", "serve"]
    phoenix_main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
