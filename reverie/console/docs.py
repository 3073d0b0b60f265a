"""``/docs`` offline: Swagger UI from the ``swagger-ui-bundle`` package, never a CDN.

The bundled Swagger UI (4.x) reads OpenAPI 3.0 documents, while FastAPI writes 3.1.
The page therefore loads ``/docs/openapi.json``: the same document written the 3.0 way
(a nullable type instead of ``anyOf [..., null]``, ``enum`` instead of ``const``...);
``/openapi.json`` itself stays 3.1 for every other tool.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]  # ships no type information

ASSETS = "/docs/assets"
SPEC = "/docs/openapi.json"


def mount_docs(app: FastAPI) -> None:
    """Serve Swagger UI at /docs from local files (the app must be made with ``docs_url=None``)."""
    app.mount(ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui")

    @app.get(SPEC, include_in_schema=False)
    def spec() -> JSONResponse:
        return JSONResponse(openapi_30(app.openapi()))

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=SPEC, title=f"{app.title} - API", swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css", swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
        )


def openapi_30(spec: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI 3.1 document written the 3.0 way, for a reader that knows only 3.0."""
    out = _schema_30(spec)
    out["openapi"] = "3.0.3"
    return out  # type: ignore[no-any-return]


def _schema_30(node: Any) -> Any:
    if isinstance(node, list):
        return [_schema_30(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _schema_30(value) for key, value in node.items()}
    for key in ("anyOf", "oneOf"):
        options = node.get(key)
        if isinstance(options, list) and {"type": "null"} in options:
            rest = [o for o in options if o != {"type": "null"}]
            del node[key]
            node["nullable"] = True
            if len(rest) == 1 and isinstance(rest[0], dict):
                node = {**rest[0], **node}
            elif rest:
                node[key] = rest
    kind = node.get("type")
    if isinstance(kind, list):
        types = [t for t in kind if t != "null"]
        if "null" in kind:
            node["nullable"] = True
        if len(types) == 1:
            node["type"] = types[0]
        else:
            del node["type"]
    if "const" in node:
        node["enum"] = [node.pop("const")]
    if isinstance(node.get("examples"), list):  # a schema's examples (a media type's are a map)
        examples = node.pop("examples")
        if examples:
            node["example"] = examples[0]
    for bound, plain in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(node.get(bound), (int, float)) and not isinstance(node.get(bound), bool):
            node[plain], node[bound] = node[bound], True
    return node
