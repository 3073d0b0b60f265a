"""Schemathesis over the REST door's own OpenAPI spec, against a real uvicorn: no
generated request, valid or not, may get a 500, and every error answer is one the spec
declares for that operation, in the shape it declares."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import response_schema_conformance, status_code_conformance
from schemathesis.core.failures import FailureGroup

from reverie import Memory
from reverie.keys import create_key
from reverie.server import create_app
from tests.live_server import live_server

EXAMPLES = 8  # per operation and mode: about 500 requests in all


def test_no_generated_request_gets_a_500_or_an_error_answer_the_spec_does_not_declare(tmp_path):
    # schemathesis.pytest.from_fixture breaks on pytest 9 (request.node._nodeid),
    # so the operations are walked here, each with its own bounded hypothesis run
    with Memory(tmp_path / "home", background=False) as memory:
        key = create_key(memory.store, user="ana").secret
        memory.remember("Ana prefers short answers", user="ana", category="preference")
        with live_server(create_app(memory, mcp=False)) as url:
            schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
            failures: list[str] = []
            operations = [result.ok() for result in schema.get_all_operations()]
            assert len(operations) > 25
            for operation in operations:
                for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                    failures += _server_errors(operation, mode, key)
    assert not failures, "\n".join(failures)


def _server_errors(operation, mode: GenerationMode, key: str) -> list[str]:
    found: list[str] = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    def probe(case) -> None:
        response = case.call(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        if response.status_code >= 500:
            found.append(f"{case.method} {case.formatted_path} ({mode}) -> {response.status_code}: {response.text[:200]}")
        elif response.status_code >= 400:
            try:
                case.validate_response(response, checks=[status_code_conformance, response_schema_conformance])
            except FailureGroup as failures:
                found.append(f"{case.method} {case.formatted_path} ({mode}) -> {response.status_code} not as "
                             f"declared: {'; '.join(str(f).splitlines()[0] for f in failures.exceptions)}")

    try:
        probe()
    except Unsatisfiable:
        pass  # nothing in this operation can be made invalid (GET /healthz in negative mode)
    return found
