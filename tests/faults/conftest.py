"""The fault suite shares the functional fixtures; it runs alone (after
the rest, one test at a time) because it stops and starts RabbitMQ and
PostgreSQL under everyone's feet."""

from tests.functional.conftest import (  # noqa: F401
    database, ids, pytest_generate_tests, rpc, scratch, service_layer,
    topic, worker_count)
